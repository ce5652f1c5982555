# --aic-metrics on-board: a design set other than Default is refused with the reason
args: op --aic-metrics Memory -- true
exit: 2
nothing-written: yes
