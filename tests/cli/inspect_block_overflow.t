# --block beyond any integer
setup: touch f.bin
args: inspect --block 99999999999999999999999 f.bin
exit: 2
nothing-written: yes
