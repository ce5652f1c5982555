# --cache needs NAME=SIZE:WAYS:LINE[:LATENCY] per level
args: op --simulate --output out --cache L1=32k:8 -- /bin/true
exit: 2
nothing-written: yes
