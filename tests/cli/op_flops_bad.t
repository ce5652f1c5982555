# --flops must be an arithmetic expression
args: op --output out --flops '2*M*' -- /bin/true
exit: 2
nothing-written: yes
