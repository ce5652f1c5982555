# --no-cuda's environment variable takes yes/no words, as --no-opencl's
env: KSCOPE_CALIBRATE_NO_CUDA=maybe
env: XDG_CACHE_HOME=/tmp/kscope-cli-calibrate-unused
args: calibrate
exit: 2
nothing-written: yes
post: test ! -e /tmp/kscope-cli-calibrate-unused
