# --replay-mode range needs --mstx on
args: op --output out --replay-mode range -- /bin/true
exit: 2
nothing-written: yes
