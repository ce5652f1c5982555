# a flag from the environment takes yes/no words
env: KSCOPE_CALIBRATE_NO_OPENCL=maybe
env: XDG_CACHE_HOME=/tmp/kscope-cli-calibrate-unused
args: calibrate
exit: 2
nothing-written: yes
post: test ! -e /tmp/kscope-cli-calibrate-unused
