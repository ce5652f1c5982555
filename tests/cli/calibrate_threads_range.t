# --threads takes 1 to 4096 threads; nothing is measured or cached
env: XDG_CACHE_HOME=/tmp/kscope-cli-calibrate-unused
args: calibrate --quick --threads 0
exit: 2
nothing-written: yes
post: test ! -e /tmp/kscope-cli-calibrate-unused
