# a level whose number of sets is not a power of two cannot be simulated
args: op --simulate --output out --cache L1=48k:8:64 -- /bin/true
exit: 2
nothing-written: yes
