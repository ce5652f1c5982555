# at most four levels
args: op --simulate --output out --cache A=1k:1:64,B=2k:1:64,C=4k:1:64,D=8k:1:64,E=16k:1:64 -- /bin/true
exit: 2
nothing-written: yes
