# --block with a malformed integer
setup: touch f.bin
args: inspect --block 1x f.bin
exit: 2
nothing-written: yes
