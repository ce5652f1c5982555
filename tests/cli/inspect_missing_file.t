# a file that does not exist
args: inspect nothere.bin
exit: 2
nothing-written: yes
