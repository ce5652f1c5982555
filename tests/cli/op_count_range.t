# --launch-count takes 1 to 5000
args: op --output out --launch-count 5001 -- /bin/true
exit: 2
nothing-written: yes
