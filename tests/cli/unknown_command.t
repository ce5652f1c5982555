# a misspelt command gets a hint, exit 2, nothing written
args: inspct file.bin
exit: 2
nothing-written: yes
