# valid JSON without the fields its block type requires
setup: echo "{\"rooflines\": []}" > r.json
args: pack --block 0x0d:r.json
exit: 2
nothing-written: yes
