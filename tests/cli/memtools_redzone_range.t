# --redzone takes 0 to 4096 bytes
args: memcheck --output out --redzone 5000 -- /bin/true
exit: 2
nothing-written: yes
