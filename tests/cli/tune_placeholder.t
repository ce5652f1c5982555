# an unknown placeholder
setup: printf '#define TILE 1 // tunable\nint main(void) { return 0; }\n' > k.c
setup: echo '{"TILE": [1, 2]}' > s.json
args: tune -o out --src k.c --space s.json --build "cc -O2 {source} -o {exe}" --run "{exe}"
exit: 2
nothing-written: yes
