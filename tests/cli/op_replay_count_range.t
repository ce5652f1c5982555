# --replay-count takes 1 to 1000
args: op --output out --replay-count 1001 -- /bin/true
exit: 2
nothing-written: yes
