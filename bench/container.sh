#!/usr/bin/env bash
# Measures how fast kscope writes and reads a large visualize_data.bin
# container, against copying the same bytes (the I/O floor), in one run.
#
#   usage: bench/container.sh [KSCOPE] [MEGABYTES] [RUNS]
#
# It makes a Trace Event JSON file of about MEGABYTES (default 100) MB and
# times, as medians over RUNS (default 3):
#   copy      cp of the JSON file (baseline)
#   pack      kscope pack --block trace:FILE (read, check the JSON, write)
#   inspect   kscope inspect of the container (map, check headers and JSON)
# and prints each as seconds, MB/s and a ratio to the copy.
set -euo pipefail
KSCOPE=${1:-build/kscope}
MB=${2:-100}
RUNS=${3:-3}
command -v python3 >/dev/null || { echo "bench: needs python3" >&2; exit 1; }
KSCOPE=$(realpath "$KSCOPE")
work=$(mktemp -d /tmp/kscope-bench.XXXXXX)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

python3 - "$work/trace.json" "$MB" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
target = mb * 1000 * 1000
with open(path, "w") as f:
    f.write('{"displayTimeUnit":"ns","traceEvents":[')
    n, size = 0, 0
    while size < target:
        ev = ('%s{"name":"instr_%d","ph":"X","pid":"core%d","tid":"VECTOR",'
              '"ts":%d,"dur":3,"args":{"code":"kernel.c:%d","pc_addr":"0x%x"}}'
              % ("," if n else "", n % 97, n % 8, n * 4, 10 + n % 300, 0x1000 + 4 * n))
        f.write(ev)
        size += len(ev)
        n += 1
    f.write("]}")
print("bench: %d trace events, %.1f MB" % (n, (size + 40) / 1e6), file=sys.stderr)
PY
bytes=$(stat -c %s "$work/trace.json")

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_runs() { # command...: prints the median seconds of RUNS runs
	for _ in $(seq "$RUNS"); do
		rm -rf "$work/out" "$work/copy.json"
		sync
		local t0 t1
		t0=$(now)
		"$@" >/dev/null
		t1=$(now)
		echo "$t1 - $t0" | bc -l
	done | median
}

t_copy=$(time_runs cp "$work/trace.json" "$work/copy.json")
t_pack=$(time_runs "$KSCOPE" pack --log-level error -o "$work/out" --block trace:"$work/trace.json")
"$KSCOPE" pack --log-level error -o "$work/keep" --block trace:"$work/trace.json" >/dev/null
bin=$(echo "$work"/keep/pack_*/visualize_data.bin)
t_inspect=$(time_runs "$KSCOPE" inspect "$bin")

printf '%-8s %9s %9s %14s\n' step seconds MB/s ratio-to-copy
for step in copy pack inspect; do
	t=$(eval echo "\$t_$step")
	printf '%-8s %9.3f %9.1f %14.2f\n' "$step" "$t" \
		"$(echo "$bytes / 1000000 / $t" | bc -l)" "$(echo "$t / $t_copy" | bc -l)"
done
