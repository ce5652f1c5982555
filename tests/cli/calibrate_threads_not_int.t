# --threads takes a whole number
env: XDG_CACHE_HOME=/tmp/kscope-cli-calibrate-unused
args: calibrate --threads 2x
exit: 2
nothing-written: yes
post: test ! -e /tmp/kscope-cli-calibrate-unused
