# a corrupted reserve byte in the second block
setup: printf "{\"op_detail\":[]}" > a.json && "$KSCOPE" pack -o o --block core-load:a.json --block core-load:a.json > /dev/null && cp o/pack_*/visualize_data.bin c.bin && chmod 600 c.bin && printf "\x00" | dd of=c.bin bs=1 seek=39 conv=notrunc status=none
args: inspect c.bin
exit: 1
