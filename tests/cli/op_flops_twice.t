# --flops: one kernel's expression given twice is refused
args: op --output out --flops 'mm=2*M*N*K' --flops 'mm=M' -- /bin/true
exit: 2
nothing-written: yes
