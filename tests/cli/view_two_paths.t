# view shows one PATH
setup: touch a.json b.json
args: view a.json b.json
exit: 2
nothing-written: yes
