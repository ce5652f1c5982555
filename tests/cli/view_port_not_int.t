# --port takes an integer
args: view --port http .
exit: 2
nothing-written: yes
