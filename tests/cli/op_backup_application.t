# --backup all means nothing in application replay, which backs up nothing
args: op --output out --backup all --replay-mode application -- /bin/true
exit: 2
nothing-written: yes
