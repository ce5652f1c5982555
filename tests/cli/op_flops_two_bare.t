# --flops: two expressions for every kernel are refused
args: op --output out --flops '2*N' --flops 'N' -- /bin/true
exit: 2
nothing-written: yes
