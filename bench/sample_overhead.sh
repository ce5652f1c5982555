#!/usr/bin/env bash
# The overhead of `kscope sample`, against the program alone and against
# `perf record` at the same rate, measured in one run.
#
#   usage: bench/sample_overhead.sh [BUILD_DIR] [RUNS]
#
# Workloads (bench/workloads, fixed amounts of work, built into
# BUILD_DIR/bench):
#   compute   one compute-bound thread
#   threads8  8 busy threads
#   spawn     4000 short threads, created and joined 8 at a time
# Each runs natively, under kscope sample at the default rate (300/s) and
# at 1000/s, and under `perf record -e cpu-clock -F 1000 -g`.  Two times
# per run: wall-clock time (for kscope, the program's run as kscope's
# launcher measures it, without the post-processing that follows; for
# perf, the whole record) and CPU time (user + system, of the program and,
# for perf, of perf itself), which the shared machine's scheduling
# disturbs less.  Medians of RUNS runs
# (default 11), the modes interleaved run by run; each printed as a ratio
# to native.  Targets: at most 1.03
# at the default rate, and no more than perf at 1000/s.
#
# Then the real-time sampler with many waiting threads (its budget,
# docs/sample.md): examples/sample/idle_threads, 2000 threads waiting
# while one computes 0.4 s, natively and under `kscope sample --samplers
# realtime --realtime-freq 200`; the same ratios.
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-11}
BUILD=$(realpath "$BUILD")
KSCOPE=$BUILD/kscope
EX=$BUILD/bench
for f in "$KSCOPE" "$EX/compute" "$EX/threads" "$EX/spawn"; do
	[[ -x "$f" ]] || { echo "bench: $f is missing; build first (make)" >&2; exit 1; }
done
have_perf=yes
command -v perf >/dev/null && perf record -e cpu-clock -F 1000 -g -o /dev/null -- true \
	>/dev/null 2>&1 || have_perf=no

work=$(mktemp -d /tmp/kscope-bench.XXXXXX)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run_timed MODE CMD...: prints "WALL CPU" seconds of the program's run
# (CPU: user + system time of the program, and for perf of perf too).
run_timed() {
	local mode=$1
	shift
	case $mode in
	native)
		/usr/bin/time -o "$work/time" -f "%e %U %S" "$@" >/dev/null 2>&1
		awk '{printf "%s %.3f\n", $1, $2 + $3}' "$work/time" ;;
	kscopert200)
		"$KSCOPE" sample --log-level debug -o "$work/out" --samplers realtime \
			--realtime-freq 200 --trace-format none -- "$@" 2>&1 >/dev/null | \
			sed -n 's/.*program ran for \([0-9.]*\) s, cpu \([0-9.]*\) s.*/\1 \2/p' ;;
	kscope300 | kscope1000)
		local hz=${mode#kscope}
		# kscope measures the program from fork to exit (wall) and its
		# rusage (CPU) and logs both at debug level; post-processing
		# comes after and is not part of the program's slowdown.
		"$KSCOPE" sample --log-level debug -o "$work/out" -F "$hz" \
			--trace-format none -- "$@" 2>&1 >/dev/null | \
			sed -n 's/.*program ran for \([0-9.]*\) s, cpu \([0-9.]*\) s.*/\1 \2/p' ;;
	perf1000)
		/usr/bin/time -o "$work/time" -f "%e %U %S" perf record -q -e cpu-clock \
			-F 1000 -g -o "$work/perf.data" -- "$@" >/dev/null 2>&1
		awk '{printf "%s %.3f\n", $1, $2 + $3}' "$work/time" ;;
	esac
}

declare -A CMDS=(
	[compute]="$EX/compute 400"
	[threads8]="$EX/threads 8 100"
	[spawn]="$EX/spawn 4000"
)
MODES="native kscope300 kscope1000"
[[ $have_perf == yes ]] && MODES="$MODES perf1000"

declare -A MED=()
for w in compute threads8 spawn; do
	# Modes interleave run by run, so the machine's drifts (it is shared)
	# fall on every mode alike; then each mode's median.
	declare -A wall=() cpu=()
	for _ in $(seq "$RUNS"); do
		for m in $MODES; do
			# shellcheck disable=SC2086
			read -r a b <<<"$(run_timed "$m" ${CMDS[$w]})"
			wall[$m]+="$a "
			cpu[$m]+="$b "
		done
	done
	for m in $MODES; do
		MED[$w.$m.wall]=$(tr ' ' '\n' <<<"${wall[$m]}" | grep . | median)
		MED[$w.$m.cpu]=$(tr ' ' '\n' <<<"${cpu[$m]}" | grep . | median)
	done
	unset wall cpu
done
for kind in wall cpu; do
	printf '%-14s' "workload/$kind"
	for m in $MODES; do printf ' %11s' "$m"; done
	printf '\n'
	for w in compute threads8 spawn; do
		printf '%-14s' "$w"
		for m in $MODES; do
			printf ' %11s' "$(echo "${MED[$w.$m.$kind]} / ${MED[$w.native.$kind]}" | bc -l |
				xargs printf '%.3f')"
		done
		printf '   (native %.3f s)\n' "${MED[$w.native.$kind]}"
	done
done
[[ $have_perf == yes ]] || echo "(perf record is not available here: no perf column)"

IDLE=$BUILD/examples/sample/idle_threads
if [[ -x $IDLE ]]; then
	declare -A iw=() ic=()
	for _ in $(seq "$RUNS"); do
		for m in native kscopert200; do
			read -r a b <<<"$(run_timed "$m" "$IDLE" 2000 0.4)"
			iw[$m]+="$a "
			ic[$m]+="$b "
		done
	done
	for kind in wall cpu; do
		if [[ $kind == wall ]]; then n=${iw[native]} k=${iw[kscopert200]}; else n=${ic[native]} k=${ic[kscopert200]}; fi
		nm=$(tr ' ' '\n' <<<"$n" | grep . | median)
		km=$(tr ' ' '\n' <<<"$k" | grep . | median)
		printf 'idle2000/%-5s realtime 200 Hz: %.3f   (native %.3f s)\n' "$kind" \
			"$(echo "$km / $nm" | bc -l)" "$nm"
	done
fi
