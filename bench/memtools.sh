#!/usr/bin/env bash
# The cost of kscope's memory tools (contention, falseshare, memcheck) in
# time and memory, against the program alone and against Valgrind's own
# tools, measured in one run, with the ablation of the cache analyses'
# optimizations.
#
#   usage: bench/memtools.sh [--quick] [--no-ablation] [--modes LIST] [-r RUNS] [WORKLOAD...]
#          (BUILD=dir overrides the build directory, default build/)
#
# Workloads (bench/workloads, multi-threaded, 4 threads, built into
# BUILD/bench), with a native footprint of 90-270 MB at the default size:
#   histogram  mt_histogram 256: 256 MiB of random bytes, 8 passes
#   matmul     mt_matmul 1920: three 1920 x 1920 double matrices
#   linreg     mt_linreg 256: 256 MiB of points, 3 passes, false sharing
# --quick runs them at small sizes (about 0.1 s natively), once (-r
# still sets the runs): a check that everything runs, whose memory ratios
# mostly measure the tools' fixed cost.
# Each runs natively, under `kscope contention`, `kscope falseshare` and
# `kscope memcheck`, under `valgrind --tool=memcheck` and `--tool=none`,
# and under kscope contention and falseshare with each optimization off
# (--no-min-write, --no-pad-smu, --no-thread-isolation; --no-ablation
# skips these, which at full size take most of the time; --modes
# LIST, comma-separated, runs only those of contention, falseshare,
# memcheck, vg-memcheck and vg-none besides native).  Per run:
# wall time and peak RSS of the whole command (kscope's post-processing
# included), from /usr/bin/time '%e %M'.  Medians of RUNS runs (default
# 3), the modes interleaved run by run; printed as ratios to native
# (slowdown, memory) and, for the ablation, time without the optimization
# over time with all.  Targets, each printed PASS or MISS: contention
# slowdown <= 20, falseshare <= 30, kscope memcheck no slower than
# valgrind memcheck, each kscope tool's peak memory <= 10x native.
# A run that fails (kscope or a tool missing, a non-zero exit, a result
# line that differs from native) is reported on its row and the script
# goes on.  Exit status: 0 if every run succeeded and every target was
# met, 1 otherwise, 2 for a usage error.
set -uo pipefail

usage() {
	echo "usage: bench/memtools.sh [--quick] [--no-ablation] [--modes LIST] [-r RUNS] [WORKLOAD...]  (BUILD=dir: build directory)" >&2
	exit 2
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
KSCOPE=$BUILD/kscope
EX=$BUILD/bench
QUICK=no
ABLATION=yes
ONLY=
RUNS=
WORKLOADS=()
while (($#)); do
	case $1 in
	--quick) QUICK=yes ;;
	--no-ablation) ABLATION=no ;;
	--modes) [[ -n ${2:-} ]] || usage; ONLY=$2; shift ;;
	-r) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; RUNS=$2; shift ;;
	-r*) [[ ${1#-r} =~ ^[1-9][0-9]*$ ]] || usage; RUNS=${1#-r} ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) WORKLOADS+=("$1") ;;
	esac
	shift
done
[[ -n $RUNS ]] || { [[ $QUICK == yes ]] && RUNS=1 || RUNS=3; }

declare -A CMDS
if [[ $QUICK == yes ]]; then
	CMDS=([histogram]="$EX/mt_histogram 64 4 1" [matmul]="$EX/mt_matmul 512 4"
	      [linreg]="$EX/mt_linreg 32 4 1")
else
	CMDS=([histogram]="$EX/mt_histogram 256 4" [matmul]="$EX/mt_matmul 1920 4"
	      [linreg]="$EX/mt_linreg 256 4")
fi
# The line each workload prints its result on: compared with native's.
declare -A RESULT=([histogram]='^histogram ' [matmul]='^matmul ' [linreg]='^linreg ')
((${#WORKLOADS[@]})) || WORKLOADS=(histogram matmul linreg)
for w in "${WORKLOADS[@]}"; do
	[[ -n ${CMDS[$w]:-} ]] || { echo "bench: unknown workload '$w' (histogram, matmul, linreg)" >&2; exit 2; }
	exe=${CMDS[$w]%% *}
	[[ -x $exe ]] || { echo "bench: $exe is missing; build first (make)" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }

TOOLS="contention falseshare memcheck"
ABLATIONS="no-min-write no-pad-smu no-thread-isolation"
MODES="native $TOOLS vg-memcheck vg-none"
if [[ -n $ONLY ]]; then
	for m in ${ONLY//,/ }; do
		[[ " $TOOLS vg-memcheck vg-none " == *" $m "* ]] ||
			{ echo "bench: unknown mode '$m' (contention, falseshare, memcheck, vg-memcheck, vg-none)" >&2; exit 2; }
	done
	MODES="native ${ONLY//,/ }"
	TOOLS=$(for t in $TOOLS; do [[ " $MODES " == *" $t "* ]] && echo "$t"; done | tr '\n' ' ')
	ABLATION=no
fi
[[ $ABLATION == yes ]] || ABLATIONS=
for t in contention falseshare; do
	for a in $ABLATIONS; do MODES="$MODES $t--$a"; done
done

work=$(mktemp -d /tmp/kscope-bench.XXXXXX)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }

# exitcode_opt TOOL: the program's own exit status, whatever was found
# (contention has no findings, and no --error-exitcode).
exitcode_opt() { [[ $1 == contention ]] || echo "--error-exitcode 0"; }

# mode_cmd MODE: the command words that go before the workload's.
mode_cmd() {
	local out=$work/out
	case $1 in
	native) ;;
	vg-memcheck) echo "valgrind --tool=memcheck --log-file=$work/valgrind.log" ;;
	vg-none) echo "valgrind --tool=none --log-file=$work/valgrind.log" ;;
	*--*) echo "$KSCOPE ${1%%--*} --${1#*--} --output $out $(exitcode_opt "${1%%--*}") --" ;;
	*) echo "$KSCOPE $1 --output $out $(exitcode_opt "$1") --" ;;
	esac
}

# run_one WORKLOAD MODE: runs it once; sets TIME, RSS (KB), and REASON
# (empty on success).
run_one() {
	local w=$1 m=$2 pre rc line
	pre=$(mode_cmd "$m")
	REASON=
	case $pre in
	"$KSCOPE "*) [[ -x $KSCOPE ]] || { REASON="$KSCOPE is missing"; return; } ;;
	valgrind*) command -v valgrind >/dev/null || { REASON="valgrind is not installed"; return; } ;;
	esac
	mkdir -p "$work/out"
	# shellcheck disable=SC2086
	/usr/bin/time -o "$work/time" -f '%e %M' $pre ${CMDS[$w]} \
		>"$work/stdout" 2>"$work/stderr"
	rc=$?
	chmod -R u+w "$work/out"
	rm -rf "$work/out"
	if ((rc != 0)); then
		# The last thing it said, with the temporary run directory
		# shortened to <out>.
		line=$(grep -v '^[[:space:]]*$' "$work/stderr" | tail -n 1 |
			sed "s|$work/out/[^/ ]*|<out>|g" | cut -c1-160)
		REASON="exit status $rc${line:+: $line}"
		return
	fi
	read -r TIME RSS < <(tail -n 1 "$work/time")
	line=$(grep -m1 -E "${RESULT[$w]}" "$work/stdout")
	if [[ $m == native ]]; then
		NATIVE_RESULT[$w]=$line
	elif [[ $line != "${NATIVE_RESULT[$w]:-}" ]]; then
		REASON="result differs from native: '${line:-no result line}'"
	fi
}

declare -A NATIVE_RESULT=() FAILED=() MED_T=() MED_M=()
for w in "${WORKLOADS[@]}"; do
	declare -A times=() rss=()
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
			rss[$m]+="$RSS "
		done
		# Without native, no run has anything to compare with.
		[[ -n ${FAILED[$w.native]:-} ]] && break
	done
	for m in $MODES; do
		[[ -n ${FAILED[$w.$m]:-} || -z ${times[$m]:-} ]] && continue
		MED_T[$w.$m]=$(tr ' ' '\n' <<<"${times[$m]}" | grep . | median)
		MED_M[$w.$m]=$(tr ' ' '\n' <<<"${rss[$m]}" | grep . | median)
	done
	unset times rss
done

nfail=0
nmiss=0
echo
echo "Slowdown and peak memory against native (medians of $RUNS run(s)$([[ $QUICK == yes ]] && echo ', --quick sizes'))"
printf '%-10s %-20s %9s %9s %9s %9s\n' workload mode 'time s' slowdown 'peak MB' memory
for w in "${WORKLOADS[@]}"; do
	for m in $MODES; do
		[[ $m == *--* ]] && continue
		printf '%-10s %-20s ' "$w" "$m"
		if [[ -n ${FAILED[$w.$m]:-} ]]; then
			printf 'FAILED: %s\n' "${FAILED[$w.$m]}"
			nfail=$((nfail + 1))
		elif [[ -z ${MED_T[$w.$m]:-} ]]; then
			printf 'not run: native failed\n'
			nfail=$((nfail + 1))
		else
			printf '%9.2f %8sx %9.1f %8sx\n' "${MED_T[$w.$m]}" \
				"$(ratio "${MED_T[$w.$m]}" "${MED_T[$w.native]}")" \
				"$(awk -v k="${MED_M[$w.$m]}" 'BEGIN {print k / 1024}')" \
				"$(ratio "${MED_M[$w.$m]}" "${MED_M[$w.native]}")"
		fi
	done
done

if [[ $ABLATION == yes ]]; then
echo
echo "Ablation: time without the optimization / time with all"
printf '%-10s %-11s' workload tool
for a in $ABLATIONS; do printf ' %21s' "--$a"; done
printf '\n'
for w in "${WORKLOADS[@]}"; do
	for t in contention falseshare; do
		printf '%-10s %-11s' "$w" "$t"
		for a in $ABLATIONS; do
			m=$t--$a
			if [[ -n ${FAILED[$w.$m]:-} || -z ${MED_T[$w.$m]:-} || -z ${MED_T[$w.$t]:-} ]]; then
				printf ' %21s' FAILED
			else
				printf ' %21s' "$(ratio "${MED_T[$w.$m]}" "${MED_T[$w.$t]}")"
			fi
		done
		printf '\n'
	done
done
fi
for w in "${WORKLOADS[@]}"; do
	for t in contention falseshare; do
		for a in $ABLATIONS; do
			m=$t--$a
			if [[ -n ${FAILED[$w.$m]:-} ]]; then
				echo "  $w $m: ${FAILED[$w.$m]}"
				nfail=$((nfail + 1))
			fi
		done
	done
done

# target WORKLOAD LABEL VALUE LIMIT UNIT: prints one target's line.
target() {
	local w=$1 label=$2 value=$3 limit=$4 unit=$5 verdict
	if [[ -z $value ]]; then
		printf '%-10s %-38s %10s %10s   n/a (not measured)\n' "$w" "$label" - "$limit$unit"
		nmiss=$((nmiss + 1))
		return
	fi
	verdict=$(awk -v v="$value" -v l="$limit" 'BEGIN {print (v <= l) ? "PASS" : "MISS"}')
	[[ $verdict == PASS ]] || nmiss=$((nmiss + 1))
	printf '%-10s %-38s %10s %10s   %s\n' "$w" "$label" "$value$unit" "$limit$unit" "$verdict"
}

# ok_ratio NUM_KEY DEN_KEY ARRAY: the ratio of two medians, or empty.
ok_ratio() {
	local -n arr=$3
	[[ -n ${arr[$1]:-} && -n ${arr[$2]:-} ]] && ratio "${arr[$1]}" "${arr[$2]}"
}

echo
echo "Targets"
printf '%-10s %-38s %10s %10s   %s\n' workload target measured limit verdict
for w in "${WORKLOADS[@]}"; do
	# (only for the modes run)
	[[ " $MODES " == *" contention "* ]] &&
		target "$w" "contention slowdown" "$(ok_ratio "$w.contention" "$w.native" MED_T)" 20 x
	[[ " $MODES " == *" falseshare "* ]] &&
		target "$w" "falseshare slowdown" "$(ok_ratio "$w.falseshare" "$w.native" MED_T)" 30 x
	[[ " $MODES " == *" memcheck "* && " $MODES " == *" vg-memcheck "* ]] &&
		target "$w" "memcheck time / valgrind memcheck's" "$(ok_ratio "$w.memcheck" "$w.vg-memcheck" MED_T)" 1 x
	for t in $TOOLS; do
		target "$w" "$t peak memory / native" "$(ok_ratio "$w.$t" "$w.native" MED_M)" 10 x
	done
done

echo
if ((nfail)); then
	echo "bench: $nfail measurement(s) failed (see FAILED above); $nmiss target(s) missed or not measured"
	exit 1
elif ((nmiss)); then
	echo "bench: every run succeeded; $nmiss target(s) missed"
	exit 1
fi
echo "bench: every run succeeded and every target was met"
