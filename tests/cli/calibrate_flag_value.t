# a flag takes no value on the command line
env: XDG_CACHE_HOME=/tmp/kscope-cli-calibrate-unused
args: calibrate --force=yes
exit: 2
nothing-written: yes
post: test ! -e /tmp/kscope-cli-calibrate-unused
