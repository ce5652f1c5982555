# --kernel-name has at most 1024 characters
args: op --output out --kernel-name "$(printf 'k%.0s' $(seq 1025))" -- /bin/true
exit: 2
nothing-written: yes
