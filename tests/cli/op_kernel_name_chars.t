# --kernel-name accepts letters, digits, '_', '*' and '|'
args: op --output out --kernel-name 'mm-tiled' -- /bin/true
exit: 2
nothing-written: yes
