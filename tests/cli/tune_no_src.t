# --src is required
setup: echo '{"TILE": [1, 2]}' > s.json
args: tune -o out --space s.json --build "cc -O2 {src} -o {exe}" --run "{exe}"
exit: 2
nothing-written: yes
