# a tunable line must be one of the accepted forms
setup: printf '#define TILE(x) (x) // tunable\nint main(void) { return 0; }\n' > k.c
setup: echo '{"TILE": [1, 2]}' > s.json
args: tune -o out --src k.c --space s.json --build "cc -O2 {src} -o {exe}" --run "{exe}"
exit: 2
nothing-written: yes
