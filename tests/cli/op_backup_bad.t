# --backup is args or all
args: op --output out --backup some -- /bin/true
exit: 2
nothing-written: yes
