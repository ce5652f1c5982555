# view needs the PATH to show
args: view
exit: 2
nothing-written: yes
