# --launch-skip-before-match takes 0 to 1000
args: op --output out --launch-skip-before-match 1001 -- /bin/true
exit: 2
nothing-written: yes
