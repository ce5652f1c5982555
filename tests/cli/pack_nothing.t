# pack with no inputs
args: pack
exit: 2
nothing-written: yes
