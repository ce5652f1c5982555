# memcheck's options are not contention's
args: contention --output out --xml -- /bin/true
exit: 2
nothing-written: yes
