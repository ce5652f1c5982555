# --log-level accepts four names
setup: touch f.bin
args: inspect --log-level loud f.bin
exit: 2
nothing-written: yes
