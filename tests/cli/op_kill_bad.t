# --kill is on or off
args: op --output out --kill 1 -- /bin/true
exit: 2
nothing-written: yes
