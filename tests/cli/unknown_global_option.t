# an option before the command other than --help/--version
args: --verbose inspect x
exit: 2
nothing-written: yes
