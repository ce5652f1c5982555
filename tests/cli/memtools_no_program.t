# the program must exist and be executable
args: memcheck --output out -- ./no-such-program
exit: 2
nothing-written: yes
