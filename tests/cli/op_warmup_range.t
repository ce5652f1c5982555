# --warm-up takes 0 to 500
args: op --output out --warm-up 501 -- /bin/true
exit: 2
nothing-written: yes
