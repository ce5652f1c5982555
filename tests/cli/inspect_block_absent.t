# --block beyond the last block
setup: printf "{\"op_detail\":[]}" > a.json && "$KSCOPE" pack -o o --block core-load:a.json > /dev/null && cp o/pack_*/visualize_data.bin one.bin
args: inspect --block 1 one.bin
exit: 2
