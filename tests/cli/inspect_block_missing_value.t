# an option at the end without its value
setup: touch f.bin
args: inspect f.bin --block
exit: 2
nothing-written: yes
