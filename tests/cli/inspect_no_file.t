# the FILE argument is required
args: inspect
exit: 2
nothing-written: yes
