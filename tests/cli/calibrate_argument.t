# calibrate takes no positional argument
env: XDG_CACHE_HOME=/tmp/kscope-cli-calibrate-unused
args: calibrate now
exit: 2
nothing-written: yes
post: test ! -e /tmp/kscope-cli-calibrate-unused
