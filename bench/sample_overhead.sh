#!/usr/bin/env bash
# The overhead of `kscope sample`, against the program alone and against
# `perf record` at the same rate, measured in one run.
#
#   usage: bench/sample_overhead.sh [BUILD_DIR] [RUNS]
#
# Workloads (examples/sample, built in BUILD_DIR):
#   compute   one compute-bound thread          (cpu_split)
#   threads8  8 busy threads                    (threads 8)
#   spawn     thousands of short threads        (many_threads 4000)
# Each runs natively, under kscope sample at the default rate (300/s) and
# at 1000/s, and under `perf record -e cpu-clock -F 1000 -g`.  The time of
# a run is the program's wall time as kscope's own launcher sees it: for
# kscope the profiling part only (the program's run; post-processing is
# reported separately), for perf the whole record.  Medians of RUNS runs
# (default 5); each printed as a ratio to native.  Targets: at most 1.03
# at the default rate, and no more than perf at 1000/s.
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-5}
BUILD=$(realpath "$BUILD")
KSCOPE=$BUILD/kscope
EX=$BUILD/examples/sample
for f in "$KSCOPE" "$EX/cpu_split" "$EX/threads" "$EX/many_threads"; do
	[[ -x "$f" ]] || { echo "bench: $f is missing; build first (make)" >&2; exit 1; }
done
have_perf=yes
command -v perf >/dev/null && perf record -e cpu-clock -F 1000 -g -o /dev/null -- true \
	>/dev/null 2>&1 || have_perf=no

work=$(mktemp -d /tmp/kscope-bench.XXXXXX)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run_timed MODE CMD...: prints seconds of the program's run.
run_timed() {
	local mode=$1
	shift
	local t0 t1 out
	case $mode in
	native)
		t0=$(now); "$@" >/dev/null 2>&1; t1=$(now)
		echo "$t1 - $t0" | bc -l ;;
	kscope300 | kscope1000)
		local hz=${mode#kscope}
		# kscope measures the program from fork to exit and logs it
		# at debug level; post-processing comes after and is not
		# part of the program's slowdown.
		out=$("$KSCOPE" sample --log-level debug -o "$work/out" -F "$hz" \
			--trace-format none -- "$@" 2>&1 >/dev/null | \
			sed -n 's/.*program ran for \([0-9.]*\) s.*/\1/p')
		echo "${out:-nan}" ;;
	perf1000)
		t0=$(now)
		perf record -q -e cpu-clock -F 1000 -g -o "$work/perf.data" -- "$@" \
			>/dev/null 2>&1
		t1=$(now)
		echo "$t1 - $t0" | bc -l ;;
	esac
}

declare -A CMDS=(
	[compute]="$EX/cpu_split"
	[threads8]="$EX/threads 8"
	[spawn]="$EX/many_threads 4000"
)
MODES="native kscope300 kscope1000"
[[ $have_perf == yes ]] && MODES="$MODES perf1000"

printf '%-9s' workload
for m in $MODES; do printf ' %11s' "$m"; done
printf '\n'
for w in compute threads8 spawn; do
	declare -A med=()
	for m in $MODES; do
		# shellcheck disable=SC2086
		med[$m]=$(for _ in $(seq "$RUNS"); do run_timed "$m" ${CMDS[$w]}; done | median)
	done
	printf '%-9s' "$w"
	for m in $MODES; do
		printf ' %11s' "$(echo "${med[$m]} / ${med[native]}" | bc -l | xargs printf '%.3f')"
	done
	printf '   (native %.3f s)\n' "${med[native]}"
	unset med
done
[[ $have_perf == yes ]] || echo "(perf record is not available here: no perf column)"
