# --aic-metrics: an empty name between commas
env: KSCOPE_OP_AIC_METRICS=Source,,PMSampling
args: op --simulate -- true
exit: 2
nothing-written: yes
