# --stop-factor is 0 or at least 1
setup: printf '#define TILE 1 // tunable\nint main(void) { return 0; }\n' > k.c
setup: echo '{"TILE": [1, 2]}' > s.json
args: tune -o out --src k.c --space s.json --build "cc -O2 {src} -o {exe}" --run "{exe}" --stop-factor 0.5
exit: 2
nothing-written: yes
