# a PATH that does not exist
args: view --port 0 nothing-here.json
exit: 2
nothing-written: yes
