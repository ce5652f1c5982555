# --cache-flush is on or off
args: op --output out --cache-flush yes -- /bin/true
exit: 2
nothing-written: yes
