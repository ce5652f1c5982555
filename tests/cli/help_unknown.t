# help for a command that does not exist
args: help nope
exit: 2
nothing-written: yes
