# --cache applies to --simulate only
args: op --output out --cache L1=32k:8:64 -- /bin/true
exit: 2
nothing-written: yes
