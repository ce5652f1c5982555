# a sticky directory that anyone can write to is accepted, like /tmp
setup: mkdir -m 1777 drop && echo "int x;" > x.c
args: pack -o drop/res --source x.c
exit: 0
post: test -f drop/res/pack_*/visualize_data.bin
