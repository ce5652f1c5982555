# an unknown block type lists the accepted ones
setup: echo "{}" > x.json
args: pack --block rooflines:x.json
exit: 2
nothing-written: yes
