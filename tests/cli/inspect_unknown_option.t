# unknown option with a hint
setup: touch f.bin
args: inspect --blok 1 f.bin
exit: 2
nothing-written: yes
