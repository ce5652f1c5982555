# an output location that is a file
setup: echo "int x;" > x.c && touch outfile
args: pack -o outfile --source x.c
exit: 2
nothing-written: yes
