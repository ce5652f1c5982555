# kscope alone prints the usage and exits 2
args:
exit: 2
nothing-written: yes
