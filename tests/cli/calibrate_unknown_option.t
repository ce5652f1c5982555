# a misspelt option gets a suggestion
env: XDG_CACHE_HOME=/tmp/kscope-cli-calibrate-unused
args: calibrate --quik
exit: 2
nothing-written: yes
post: test ! -e /tmp/kscope-cli-calibrate-unused
