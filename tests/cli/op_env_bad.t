# a KSCOPE_OP_* variable is checked like its option
env: KSCOPE_OP_WARM_UP=many
args: op --output out -- /bin/true
exit: 2
nothing-written: yes
