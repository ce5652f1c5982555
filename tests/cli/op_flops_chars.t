# --flops names the character it cannot read
args: op --output out --flops '2*M^2' -- /bin/true
exit: 2
nothing-written: yes
