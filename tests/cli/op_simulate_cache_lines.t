# a level's lines are at least as long as those of the level above it
args: op --simulate --output out --cache L1=32k:8:128,LL=8M:16:64 -- /bin/true
exit: 2
nothing-written: yes
