# source blocks come from --source
setup: echo "int x;" > x.c
args: pack --block source:x.c
exit: 2
nothing-written: yes
