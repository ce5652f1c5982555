# --mstx-include needs --mstx on
args: op --output out --mstx-include step -- /bin/true
exit: 2
nothing-written: yes
