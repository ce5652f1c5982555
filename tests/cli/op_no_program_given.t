# kscope op needs a program
args: op --output out
exit: 2
nothing-written: yes
