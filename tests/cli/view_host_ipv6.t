# --host takes an IPv4 address
args: view --host ::1 --port 0 .
exit: 2
nothing-written: yes
