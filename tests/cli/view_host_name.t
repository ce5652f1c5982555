# --host takes an IPv4 address, not a name
args: view --host example.com --port 0 .
exit: 2
nothing-written: yes
