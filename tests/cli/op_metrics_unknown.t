# --aic-metrics: an unknown set, and what --simulate accepts
args: op --simulate --aic-metrics pipeutilization,Bogus -- true
exit: 2
nothing-written: yes
