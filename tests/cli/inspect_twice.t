# the same option twice
setup: touch f.bin
args: inspect --block 1 --block 2 f.bin
exit: 2
nothing-written: yes
