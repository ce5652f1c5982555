# the program must exist
args: op --output out -- ./no-such-program
exit: 2
nothing-written: yes
