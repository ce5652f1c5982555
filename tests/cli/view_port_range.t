# --port takes 0 to 65535
args: view --port 65536 .
exit: 2
nothing-written: yes
