# inspect runs no program
setup: touch f.bin
args: inspect f.bin -- ls
exit: 2
nothing-written: yes
