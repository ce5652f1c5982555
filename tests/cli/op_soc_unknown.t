# --soc-version: an unknown machine, and the presets accepted
args: op --simulate --soc-version m1 -- true
exit: 2
nothing-written: yes
