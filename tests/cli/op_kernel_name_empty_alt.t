# --kernel-name has no empty alternative
args: op --output out --kernel-name 'vadd||mm' -- /bin/true
exit: 2
nothing-written: yes
