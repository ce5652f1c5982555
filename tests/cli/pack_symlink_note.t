# an input through a symbolic link is resolved and reported
setup: echo "int x;" > real.c && ln -s real.c link.c
args: pack --source link.c
exit: 0
post: grep -q "kscope: info: .link.c. goes through a symbolic link; using .*/real.c." "$KS_STDERR"
