#!/usr/bin/env bash
# make demo: runs kscope's main job on the bundled example and says where
# the results are.  Today that job packs the example kernel's source and
# its example blocks into a visualize_data.bin container and inspects it;
# the collectors replace this with a real profile as they arrive.
set -euo pipefail
KSCOPE=${1:?usage: demo.sh PATH/TO/kscope}
cd "$(dirname "$0")/.."
EX=examples/demo

out=$("$KSCOPE" pack --output kscope-out \
	--source "$EX/saxpy.c" \
	--block base-info:"$EX/base_info.json" \
	--block trace:"$EX/trace.json" \
	--block api-files:"$EX/api_files.json" \
	--block api-instructions:"$EX/api_instructions.json" \
	--block roofline:"$EX/roofline.json")
echo "$out"
dir=$(sed -n 's/^results: //p' <<<"$out")
echo
"$KSCOPE" inspect "$dir/visualize_data.bin"
echo
echo "demo: results are in $dir"
