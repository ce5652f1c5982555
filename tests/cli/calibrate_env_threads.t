# a bad --threads from the environment is named as such
env: KSCOPE_CALIBRATE_THREADS=5000
env: XDG_CACHE_HOME=/tmp/kscope-cli-calibrate-unused
args: calibrate
exit: 2
nothing-written: yes
post: test ! -e /tmp/kscope-cli-calibrate-unused
