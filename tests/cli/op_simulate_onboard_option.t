# the on-board options do not apply to --simulate
args: op --simulate --output out --warm-up 3 -- /bin/true
exit: 2
nothing-written: yes
