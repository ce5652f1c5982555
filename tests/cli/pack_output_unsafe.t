# an output location whose parent others can write to is refused
setup: mkdir shared && chmod 0777 shared && echo "int x;" > x.c
args: pack --output shared/out --source x.c
exit: 2
nothing-written: yes
