# --strict: a 0x09 table in the design's convention (the rows' name column first in header_name) passes
setup: printf '{"table_per_block":[{"block_id":0,"table_op_type":"opencl","table_detail":[{"table_name":"Buffers","size":[1,3],"header_name":["buffer","bytes","flags"],"row":[{"name":"arg 0 a","value":[64,"read_only"]}]}],"advice":[]}],"advice":[]}' > t.json && "$KSCOPE" pack -o o --block memory-table:t.json > /dev/null && cp o/pack_*/visualize_data.bin t.bin
args: inspect --strict --format json t.bin
exit: 0
