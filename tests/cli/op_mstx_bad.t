# --mstx is on or off
args: op --output out --mstx true -- /bin/true
exit: 2
nothing-written: yes
