# values are integers or strings
setup: printf '#define TILE 1 // tunable\nint main(void) { return 0; }\n' > k.c
setup: echo '{"TILE": [16, 32.5]}' > s.json
args: tune -o out --src k.c --space s.json --build "cc -O2 {src} -o {exe}" --run "{exe}"
exit: 2
nothing-written: yes
