# --clock is from 0.01 to 100 GHz
args: op --simulate --output out --clock 0 -- /bin/true
exit: 2
nothing-written: yes
