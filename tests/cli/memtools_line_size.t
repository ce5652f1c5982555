# --line-size must be a power of two
args: falseshare --output out --line-size 100 -- /bin/true
exit: 2
nothing-written: yes
