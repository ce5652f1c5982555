# the environment's pattern is checked like the option's
env: KSCOPE_OP_KERNEL_NAME=a.b
args: op --output out -- /bin/true
exit: 2
nothing-written: yes
