#!/usr/bin/env bash
# kscope predict's speed, against the targets of docs/performance.md:
#   - instructions scheduled per second, for models of 10^4 to 10^7
#     instructions (target: at least 5 million per second);
#   - a 10^6-instruction model predicted end to end by `kscope predict`:
#     the model file read and built, scheduled, and every output written
#     (target: under 2 seconds).
#
#   usage: bench/predict_speed.sh [-r RUNS]   (BUILD=dir: build directory,
#          default build/)
#
# The scheduler's rate comes from BUILD/bench/predict_rate, which builds a
# double-buffered vector kernel of N instructions through the C API and
# times ks_pred_run alone.  The end-to-end time is the wall time of
# `kscope predict -D T=... bench/predict/tiles.kpp` (3*T instructions),
# and kscope's own split of it (read and built, scheduled, written) from
# its info line.  Medians of RUNS runs (default 3).  The chip is the unit
# tests' chip with round numbers (tests/predict/unit/chips/test.json): the
# costs do not change the scheduler's work.  Exit status: 0 when both
# targets are met, 1 otherwise, 2 for a usage error.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
KSCOPE=$BUILD/kscope
RATE=$BUILD/bench/predict_rate
CHIP=$ROOT/tests/predict/unit/chips/test.json
MODEL=$ROOT/bench/predict/tiles.kpp
RUNS=3
while (($#)); do
	case $1 in
	-r) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "bench/predict_speed.sh: -r takes a positive integer" >&2; exit 2; }
	    RUNS=$2; shift 2 ;;
	*) echo "usage: bench/predict_speed.sh [-r RUNS]  (BUILD=dir: build directory)" >&2; exit 2 ;;
	esac
done
for f in "$KSCOPE" "$RATE"; do
	[[ -x $f ]] || { echo "bench/predict_speed.sh: $f is missing: build first (make)" >&2; exit 2; }
done

median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ok=0
echo "kscope predict: scheduler rate (C API; medians of $RUNS runs)"
printf '%12s %12s %14s\n' instructions schedule_s "instr/s"
for n in 10000 100000 1000000 10000000; do
	for ((r = 0; r < RUNS; r++)); do
		"$RATE" "$CHIP" $n > "$TMP/rate" || { echo "predict_rate failed" >&2; exit 1; }
		sed -n 's/.*schedule_s=\([0-9.]*\) rate=\([0-9]*\).*/\1 \2/p' "$TMP/rate"
	done > "$TMP/runs"
	s=$(awk '{print $1}' "$TMP/runs" | median)
	rate=$(awk '{print $2}' "$TMP/runs" | median)
	printf '%12d %12.4f %14.0f\n' $n "$s" "$rate"
	awk -v r="$rate" 'BEGIN {exit !(r >= 5e6)}' || ok=1
done

echo
echo "kscope predict: a 10^6-instruction model end to end (medians of $RUNS runs)"
T=333334
# e2e OPTIONS...: one line, every output unless OPTIONS leave some out.
e2e() {
	for ((r = 0; r < RUNS; r++)); do
		start=$(date +%s.%N)
		"$KSCOPE" predict --log-level info --chip "$CHIP" "$@" -D T=$T -o "$TMP/out" "$MODEL" \
			> "$TMP/out.txt" 2> "$TMP/err.txt" || { cat "$TMP/err.txt" >&2; exit 1; }
		end=$(date +%s.%N)
		line=$(grep 'read and built in' "$TMP/err.txt")
		echo "$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}') $(echo "$line" | sed -n 's/.*read and built in \([0-9.]*\) s, scheduled in \([0-9.]*\) s.*written in \([0-9.]*\) s.*/\1 \2 \3/p')"
		rm -rf "$TMP/out"
	done > "$TMP/e2e"
	wall=$(awk '{print $1}' "$TMP/e2e" | median)
	printf 'instructions %d%s: wall %.3f s (read and built %.3f s, scheduled %.3f s, outputs %.3f s)\n' \
		$((3 * T)) "${1:+ ($*)}" "$wall" "$(awk '{print $2}' "$TMP/e2e" | median)" \
		"$(awk '{print $3}' "$TMP/e2e" | median)" "$(awk '{print $4}' "$TMP/e2e" | median)"
}
e2e
awk -v w="$wall" 'BEGIN {exit !(w < 2)}' || ok=1
# Without the pipeline chart (msKPP's enable_trace off): what the model
# itself costs.
e2e --no-trace
echo
echo "targets: >= 5e6 instructions/s at every size, end to end < 2 s: $([[ $ok == 0 ]] && echo met || echo NOT met)"
exit $ok
