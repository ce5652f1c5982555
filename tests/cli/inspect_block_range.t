# --block below its range: names the option, the value and the range
setup: touch f.bin
args: inspect --block -2 f.bin
exit: 2
nothing-written: yes
