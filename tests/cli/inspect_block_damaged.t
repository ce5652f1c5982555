# --block on a file damaged after that block prints the block and warns of the damage
setup: printf "{\"op_detail\":[]}" > a.json && "$KSCOPE" pack -o o --block core-load:a.json --block core-load:a.json > /dev/null && head -c 40 o/pack_*/visualize_data.bin > t.bin
args: inspect --block 0 t.bin
exit: 0
