# --timeout takes 1 to 2880 minutes
args: op --output out --timeout 0 -- /bin/true
exit: 2
nothing-written: yes
