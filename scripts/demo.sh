#!/usr/bin/env bash
# make demo: kscope's main job on the bundled example.  It profiles the
# multi-threaded demo program (examples/demo/demo.c) with `kscope sample`,
# prints the report (flat profile, call tree, threads) and says where the
# results are.
set -euo pipefail
KSCOPE=${1:?usage: demo.sh PATH/TO/kscope}
BUILD=$(dirname "$KSCOPE")
cd "$(dirname "$0")/.."

# kscope prints its summary, and where the results are, on stderr (stdout
# is the program's): keep a copy to find the run directory.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$KSCOPE" sample --output kscope-out -- "$BUILD/examples/demo/demo" >/dev/null 2>"$log" ||
	{ cat "$log" >&2; exit 1; }
dir=$(sed -n 's/^results: //p' "$log")
echo
echo "== flat profile (kscope report $dir)"
"$KSCOPE" report "$dir"
echo
echo "== call tree (kscope report --tree --min-pct 2)"
"$KSCOPE" report "$dir" --tree --min-pct 2
echo
echo "== threads (kscope report --threads)"
"$KSCOPE" report "$dir" --threads
echo
echo "demo: results are in $dir"
echo "      profile.db (SQLite), trace.perfetto-trace (open it at ui.perfetto.dev),"
echo "      flat.txt, tree.txt, threads.txt"
# The demo's source is in examples/demo, outside the run directory:
# kscope view serves sources only from PATH and --source-dir.
echo "      to look at them in a web page, with the demo's source:"
echo "        $KSCOPE view --source-dir $(pwd)/examples $dir"
