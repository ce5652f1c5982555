# --strict: kscope op's 0x09 table as it was (no name column in header_name) is named; the checks without --strict pass it
setup: printf '{"table_per_block":[{"block_id":0,"table_op_type":"opencl","table_detail":[{"table_name":"Buffers","size":[1,2],"header_name":["bytes","flags"],"row":[{"name":"arg 0 a","value":[64,"read_only"]}]}],"advice":[]}],"advice":[]}' > t.json && "$KSCOPE" pack -o o --block memory-table:t.json > /dev/null && cp o/pack_*/visualize_data.bin t.bin && "$KSCOPE" inspect t.bin > /dev/null
args: inspect --strict t.bin
exit: 1
