# --kernel-name keeps its grammar with --simulate
args: op --simulate --output out --kernel-name 'a||b' -- /bin/true
exit: 2
nothing-written: yes
