# --threads is a list of thread numbers
args: op --simulate --output out --threads 1,x -- /bin/true
exit: 2
nothing-written: yes
