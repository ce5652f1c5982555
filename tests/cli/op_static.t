# a statically linked program is refused: LD_PRELOAD cannot reach it
setup: printf 'int main(void) { return 0; }\n' > s.c && cc -static -o static s.c
args: op --output out -- ./static
exit: 2
nothing-written: yes
