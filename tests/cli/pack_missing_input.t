# a --block file that does not exist
args: pack --block trace:none.json
exit: 2
nothing-written: yes
