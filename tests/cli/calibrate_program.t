# calibrate does not run a program
env: XDG_CACHE_HOME=/tmp/kscope-cli-calibrate-unused
args: calibrate -- /bin/true
exit: 2
nothing-written: yes
post: test ! -e /tmp/kscope-cli-calibrate-unused
