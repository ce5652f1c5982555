# --aic-metrics: a set of Ascend AI Core units is refused with the reason, in either mode
args: op --simulate --aic-metrics PipeUtilization,ResourceConflictRatio -- true
exit: 2
nothing-written: yes
