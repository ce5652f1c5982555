# --soc-version and --dump apply to --simulate only
args: op --dump off -- true
exit: 2
nothing-written: yes
