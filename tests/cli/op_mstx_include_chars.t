# --mstx-include accepts what --kernel-name accepts
args: op --output out --mstx on --mstx-include 'step 1' -- /bin/true
exit: 2
nothing-written: yes
