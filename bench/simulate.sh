#!/usr/bin/env bash
# The cost of kscope op --simulate against the program alone and against
# Valgrind's own instruction-level profilers, measured in one run.
#
#   usage: bench/simulate.sh [--quick] [-r RUNS] [WORKLOAD...]
#          (BUILD=dir overrides the build directory, default build/)
#
# Workloads (bench/workloads, built into BUILD/bench), two threads each:
#   matmul     mt_matmul 256 2: three 256 x 256 double matrices
#   histogram  mt_histogram 16 2 2: 16 MiB of random bytes, 2 passes
#   linreg     mt_linreg 8 2 2: 8 MiB of points, 2 passes
# --quick halves the sizes.  Each runs natively, under
#   kscope          kscope op --simulate, this machine's cache levels
#   kscope-2lvl     kscope op --simulate --cache L1=32k:8:64,LL=8M:16:64
#   callgrind       valgrind --tool=callgrind --cache-sim=yes with the same
#                   two levels (--I1/--D1 32768,8,64 --LL 8388608,16,64)
#   cachegrind      valgrind --tool=cachegrind --cache-sim=yes, same levels
# Wall time of the whole command (kscope's deliverables included), from
# bench/op/timeit.py; medians of RUNS runs (default 3), the modes interleaved
# run by run.  Printed: each mode's slowdown to native, and kscope-2lvl's
# time over callgrind's (same work: every instruction counted, the same
# caches simulated).  Target: at most 1.0.
# A run that fails (a non-zero exit, a result line that differs from
# native's) is reported and left out.  Exit status: 0 if every run
# succeeded and the target was met, 1 otherwise, 2 for a usage error.
set -uo pipefail

usage() {
	echo "usage: bench/simulate.sh [--quick] [-r RUNS] [WORKLOAD...]  (BUILD=dir: build directory)" >&2
	exit 2
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
KSCOPE=$BUILD/kscope
EX=$BUILD/bench
QUICK=no
RUNS=3
WORKLOADS=()
while (($#)); do
	case $1 in
	--quick) QUICK=yes ;;
	-r) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; RUNS=$2; shift ;;
	-r*) [[ ${1#-r} =~ ^[1-9][0-9]*$ ]] || usage; RUNS=${1#-r} ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) WORKLOADS+=("$1") ;;
	esac
	shift
done

declare -A CMDS
if [[ $QUICK == yes ]]; then
	CMDS=([matmul]="$EX/mt_matmul 128 2" [histogram]="$EX/mt_histogram 8 2 1"
	      [linreg]="$EX/mt_linreg 4 2 1")
else
	CMDS=([matmul]="$EX/mt_matmul 256 2" [histogram]="$EX/mt_histogram 16 2 2"
	      [linreg]="$EX/mt_linreg 8 2 2")
fi
declare -A RESULT=([histogram]='^histogram ' [matmul]='^matmul ' [linreg]='^linreg ')
((${#WORKLOADS[@]})) || WORKLOADS=(matmul histogram linreg)
for w in "${WORKLOADS[@]}"; do
	[[ -n ${CMDS[$w]:-} ]] || { echo "bench: unknown workload '$w' (matmul, histogram, linreg)" >&2; exit 2; }
	exe=${CMDS[$w]%% *}
	[[ -x $exe ]] || { echo "bench: $exe is missing; build first (make)" >&2; exit 1; }
done
[[ -x $KSCOPE ]] || { echo "bench: $KSCOPE is missing; build first (make)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 is missing" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "bench: valgrind is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }

MODES="native kscope kscope-2lvl callgrind cachegrind"
VGCACHE="--I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64"

work=$(mktemp -d /tmp/kscope-bench.XXXXXX)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }

mode_cmd() {
	case $1 in
	native) ;;
	kscope) echo "$KSCOPE op --simulate --output $work/out --" ;;
	kscope-2lvl) echo "$KSCOPE op --simulate --cache L1=32k:8:64,LL=8M:16:64 --output $work/out --" ;;
	callgrind) echo "valgrind --tool=callgrind --cache-sim=yes $VGCACHE --callgrind-out-file=$work/cg.out --log-file=$work/vg.log" ;;
	cachegrind) echo "valgrind --tool=cachegrind --cache-sim=yes $VGCACHE --cachegrind-out-file=$work/cg.out --log-file=$work/vg.log" ;;
	esac
}

# run_one WORKLOAD MODE: sets TIME and REASON (empty on success).
run_one() {
	local w=$1 m=$2 pre rc line
	pre=$(mode_cmd "$m")
	REASON=
	mkdir -p "$work/out"
	# Timed by bench/op/timeit.py (to the microsecond: a native run here
	# can take under 10 ms, which /usr/bin/time's %e rounds to 0.00).
	# shellcheck disable=SC2086
	TIME=$(python3 "$ROOT/bench/op/timeit.py" "$work/stdout" "$work/stderr" $pre ${CMDS[$w]})
	rc=$?
	chmod -R u+w "$work/out"
	rm -rf "$work/out" "$work/cg.out"
	if ((rc != 0)); then
		line=$(grep -v '^[[:space:]]*$' "$work/stderr" | tail -n 1 | cut -c1-160)
		REASON="exit status $rc${line:+: $line}"
		return
	fi
	line=$(grep -m1 -E "${RESULT[$w]}" "$work/stdout")
	if [[ $m == native ]]; then
		NATIVE_RESULT[$w]=$line
	elif [[ $line != "${NATIVE_RESULT[$w]:-}" ]]; then
		REASON="result differs from native: '${line:-no result line}'"
	fi
}

declare -A NATIVE_RESULT=() FAILED=() MED=()
for w in "${WORKLOADS[@]}"; do
	declare -A times=()
	for r in $(seq "$RUNS"); do
		for m in $MODES; do
			[[ -n ${FAILED[$w.$m]:-} ]] && continue
			echo "bench: $w, $m (run $r of $RUNS)" >&2
			run_one "$w" "$m"
			if [[ -n $REASON ]]; then
				FAILED[$w.$m]=$REASON
				echo "bench:   failed: $REASON" >&2
				continue
			fi
			times[$m]+="$TIME "
		done
		[[ -n ${FAILED[$w.native]:-} ]] && break
	done
	for m in $MODES; do
		[[ -n ${FAILED[$w.$m]:-} || -z ${times[$m]:-} ]] && continue
		MED[$w.$m]=$(tr ' ' '\n' <<<"${times[$m]}" | grep . | median)
	done
	unset times
done

nfail=0
nmiss=0
echo
echo "Slowdown to native (medians of $RUNS run(s)$([[ $QUICK == yes ]] && echo ', --quick sizes'))"
printf '%-10s %-12s %9s %9s\n' workload mode 'time s' slowdown
for w in "${WORKLOADS[@]}"; do
	for m in $MODES; do
		printf '%-10s %-12s ' "$w" "$m"
		if [[ -n ${FAILED[$w.$m]:-} ]]; then
			printf 'FAILED: %s\n' "${FAILED[$w.$m]}"
			nfail=$((nfail + 1))
		elif [[ -z ${MED[$w.$m]:-} ]]; then
			printf 'not run: native failed\n'
			nfail=$((nfail + 1))
		else
			printf '%9.3f %8sx\n' "${MED[$w.$m]}" "$(ratio "${MED[$w.$m]}" "${MED[$w.native]}")"
		fi
	done
done

echo
echo "Target: kscope op --simulate (kscope-2lvl) over callgrind --cache-sim=yes, at most 1.0"
printf '%-10s %12s %14s %8s   %s\n' workload 'over callgrind' 'over cachegrind' limit verdict
for w in "${WORKLOADS[@]}"; do
	k=${MED[$w.kscope-2lvl]:-} c=${MED[$w.callgrind]:-} g=${MED[$w.cachegrind]:-}
	if [[ -z $k || -z $c ]]; then
		printf '%-10s %12s %14s %8s   n/a (not measured)\n' "$w" - - 1.0
		nmiss=$((nmiss + 1))
		continue
	fi
	v=$(ratio "$k" "$c")
	verdict=$(awk -v v="$v" 'BEGIN {print (v <= 1.0) ? "PASS" : "MISS"}')
	[[ $verdict == PASS ]] || nmiss=$((nmiss + 1))
	printf '%-10s %12s %14s %8s   %s\n' "$w" "$v" "$([[ -n $g ]] && ratio "$k" "$g" || echo -)" 1.0 "$verdict"
done
((nfail == 0 && nmiss == 0))
