# a truncated container: the good blocks are listed, the damage named by block and offset
setup: printf "{\"op_detail\":[]}" > a.json && "$KSCOPE" pack -o o --block core-load:a.json --block core-load:a.json --block core-load:a.json > /dev/null && head -c 60 o/pack_*/visualize_data.bin > t.bin
args: inspect t.bin
exit: 1
