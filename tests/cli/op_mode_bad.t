# --replay-mode is kernel, application or range
args: op --output out --replay-mode pass -- /bin/true
exit: 2
nothing-written: yes
