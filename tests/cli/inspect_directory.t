# a directory where a file is needed
args: inspect .
exit: 2
nothing-written: yes
