# the whole path: pack, then inspect the result; modes as documented
args: pack --source $KS_SRC/examples/demo/saxpy.c --block base-info:$KS_SRC/examples/demo/base_info.json --block trace:$KS_SRC/examples/demo/trace.json --block api-files:$KS_SRC/examples/demo/api_files.json --block api-instructions:$KS_SRC/examples/demo/api_instructions.json --block roofline:$KS_SRC/examples/demo/roofline.json
exit: 0
post: test "$(stat -c %a kscope-out)" = 750
post: test "$(stat -c %a kscope-out/pack_*)" = 750
post: test "$(stat -c %a kscope-out/pack_*/visualize_data.bin)" = 440
post: test "$(ls -A kscope-out/pack_*)" = visualize_data.bin
post: "$KSCOPE" inspect kscope-out/pack_*/visualize_data.bin | sed "s|$KS_SRC|@SRC@|; s|$KS_WORK|@WORK@|; s/_[0-9]\{8\}_[0-9]\{6\}_[0-9]*/_@TS@/" | diff -u "$KS_SRC/tests/cli/pack_and_inspect.listing" -
post: "$KSCOPE" inspect --block 5 kscope-out/pack_*/visualize_data.bin | cmp - "$KS_SRC/examples/demo/roofline.json"
post: "$KSCOPE" inspect --block 0 kscope-out/pack_*/visualize_data.bin | cmp - "$KS_SRC/examples/demo/saxpy.c"
post: "$KSCOPE" inspect --format json kscope-out/pack_*/visualize_data.bin | python3 -c "import json,sys; d=json.load(sys.stdin); assert len(d[\"blocks\"])==6 and d[\"error\"] is None and d[\"blocks\"][5][\"type_name\"]==\"roofline\", d"
