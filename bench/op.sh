#!/usr/bin/env bash
# The cost and the accuracy of `kscope op`, measured in one run on the
# OpenCL example examples/opencl/many.c (built into BUILD/examples/opencl).
#
#   usage: bench/op.sh [-r RUNS] [-n LAUNCHES]
#          (BUILD=dir overrides the build directory, default build/)
#
# (a) Overhead.  `many LAUNCHES` (default 10000 launches of a 1024-element
#     kernel, a clFinish every 100) natively and under `kscope op
#     --kernel-name nomatch_xyz`, a filter no kernel matches, so every
#     launch goes through kscope's runtime and none is replayed (kscope
#     exits 1 there, having collected nothing: expected).  Wall time of
#     the whole command (kscope's start-up, the program, the summary),
#     timed by bench/op/timeit.py, which starts the command itself; one
#     unmeasured run of each first (PoCL compiles the
#     kernels into its cache on a first run), then RUNS runs (default 51),
#     interleaved run by run, in alternating order; printed: the ratio of
#     the medians, and the median of each round's own ratio (kscope over
#     native, run back to back), which a drift of the shared machine's
#     speed during the run affects least, with a 95% interval for it
#     (bootstrap over the rounds: single runs vary by 25% on a shared
#     machine, so the interval says whether RUNS resolved the target).
#     Target, on the median of the rounds' ratios: at most 1.02.
#     Also kscope's fixed cost, whatever the program does: the
#     median of `kscope op -- /bin/true` less that of /bin/true, run in
#     the same rounds.  And, in the same rounds, `many LAUNCHES` under
#     bench/op/launch.c, a launcher that only spawns the program and
#     waits for it (built here with cc): its median round ratio over
#     native is what any process standing between the caller and the
#     program costs on this machine, the part of the overhead no launcher
#     avoids; printed with kscope's median round ratio over it.  No
#     target on these.
# (b) Replay cost.  `kscope op --kernel-name work --warm-up 5
#     --replay-count 15 -- many 0 --time` collects the first launch of
#     `work` (a few ms of multiply-adds on 64 Ki floats) and replays it;
#     from its measure.json: replay_wall_ns (backup to final restore) over
#     (warm-ups + passes) x the median pass, i.e. what kscope's backup,
#     restores, cache flushes and bookkeeping add to the launches
#     themselves; with --cache-flush off and on.  No target: printed.
# (c) Accuracy.  The median replay pass (measure.json) against the
#     median event time (END - START) of the same kernel measured by the
#     program itself in an unprofiled run (`many 0 --time`, which launches
#     `work` 5 times unmeasured then 15 times measured on its own
#     profiling queue, and prints the median on stderr; the replay makes
#     as many warm-ups and passes).  Compared with
#     --cache-flush off, like with like (the program's launches find their
#     buffer in the cache too); the --cache-flush on figure is printed
#     beside it.  Medians over RUNS runs of each, interleaved.  Target:
#     within 5%.  Also printed, with no target: in each kscope run, the
#     replay's median over the program's own median of the launches that
#     follow in the same process (PoCL's kernel time moves between
#     processes: docs/performance.md).  Both run with POCL_AFFINITY=1
#     (PoCL's two worker threads pinned one per CPU): unpinned, some
#     processes run the kernel at half speed, both threads on one CPU.
# Runs that fail (a missing file, an unexpected exit status, a result line
# that differs from native) are reported and left out.  Exit status: 0 if
# every run succeeded and every target was met, 1 otherwise, 2 for a
# usage error.
set -uo pipefail

usage() {
	echo "usage: bench/op.sh [-r RUNS] [-n LAUNCHES]  (BUILD=dir: build directory)" >&2
	exit 2
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
KSCOPE=$BUILD/kscope
MANY=$BUILD/examples/opencl/many
RUNS=51
LAUNCHES=10000
while (($#)); do
	case $1 in
	-r) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; RUNS=$2; shift ;;
	-r*) [[ ${1#-r} =~ ^[1-9][0-9]*$ ]] || usage; RUNS=${1#-r} ;;
	-n) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; LAUNCHES=$2; shift ;;
	-h | --help) usage ;;
	*) usage ;;
	esac
	shift
done
for f in "$KSCOPE" "$MANY"; do
	[[ -x $f ]] || { echo "bench: $f is missing; build first (make)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "bench: python3 is missing" >&2; exit 1; }
# As many warm-ups and measured launches as `many --time` makes itself.
WARMUP=5
PASSES=15

work=$(mktemp -d /tmp/kscope-bench.XXXXXX)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# ratio A B: A / B, or "-" when either is missing.
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN {if (a != "" && b > 0) printf "%.3f", a / b; else print "-"}'; }

nfail=0
declare -A FAILED=()
# fail MODE WHAT REASON: reports a failed run; MODE is not run again.
fail() {
	echo "bench:   failed: $2: $3" >&2
	FAILED[$1]=$3
	nfail=$((nfail + 1))
}
# last_words: the last non-empty line kscope or the program said.
last_words() {
	grep -v '^[[:space:]]*$' "$work/stderr" | tail -n 1 |
		sed "s|$work/out/[^/ ]*|<out>|g" | cut -c1-160
}

# ---------------------------------------------------------------------
# (a) overhead
# ---------------------------------------------------------------------
# run_many MODE: runs `many LAUNCHES` natively (native) or under kscope
# op with a filter matching nothing (kscope), or /bin/true natively
# (true) or under kscope op (true-kscope: kscope's fixed cost, start-up
# to summary, with a program that never uses OpenCL); sets WALL (seconds)
# or REASON.
run_many() {
	local rc want=0 line
	local -a cmd
	REASON=
	rm -rf "$work/out"
	mkdir -p "$work/out"
	case $1 in
	native) cmd=("$MANY" "$LAUNCHES") ;;
	kscope) cmd=("$KSCOPE" op -o "$work/out" --kernel-name nomatch_xyz -- "$MANY" "$LAUNCHES")
		want=1 ;;  # nothing matched
	true) cmd=(/bin/true) ;;
	true-kscope) cmd=("$KSCOPE" op -o "$work/out" -- /bin/true)
		want=1 ;;  # never used OpenCL
	launcher) cmd=("$work/launch" "$MANY" "$LAUNCHES") ;;
	esac
	# Timed by a helper that starts the command itself (bench/op/timeit.py):
	# bash's own fork and wait would add a few milliseconds that vary.
	WALL=$(python3 "$ROOT/bench/op/timeit.py" "$work/stdout" "$work/stderr" "${cmd[@]}")
	rc=$?
	chmod -R u+w "$work/out"
	if ((rc != want)); then
		REASON="exit status $rc (expected $want): $(last_words)"
		return
	fi
	if [[ $1 != true* ]]; then
		line=$(grep -m1 '^checksum: ' "$work/stdout")
		if [[ $1 == native ]]; then
			NATIVE_SUM=$line
		elif [[ $line != "$NATIVE_SUM" ]]; then
			REASON="result differs from native: '${line:-no checksum line}'"
			return
		fi
	fi
}

# The launcher of (a); without a C compiler its runs are left out.
if ! ${CC:-cc} -O2 -o "$work/launch" "$ROOT/bench/op/launch.c" 2>"$work/cc.err"; then
	echo "bench: cannot build bench/op/launch.c ($(head -n 1 "$work/cc.err")):" \
		"the launcher's runs (no target) are left out" >&2
	FAILED[launcher]="not built"
fi

NATIVE_SUM=
WORK_SUM=
declare -A WALLS=() MED_WALL=() NS=() COSTS=() MED_NS_OF=() MED_COST=()
echo "bench: (a) overhead: many $LAUNCHES, native and kscope op with no kernel matching," \
	"1 unmeasured + $RUNS runs each" >&2
PAIRS=
LPAIRS=
KLPAIRS=
for r in $(seq 0 "$RUNS"); do
	# Native and kscope back to back, in alternating order, so that a
	# drift of the machine's speed affects both alike; each round's ratio
	# is kept (PAIRS) besides the times.
	if ((r % 2)); then
		order=(launcher kscope native true-kscope true)
	else
		order=(native kscope launcher true true-kscope)
	fi
	declare -A ROUND=()
	for m in "${order[@]}"; do
		[[ -n ${FAILED[$m]:-} ]] && continue
		run_many "$m"
		if [[ -n $REASON ]]; then
			fail "$m" "many $LAUNCHES, $m" "$REASON"
			continue
		fi
		ROUND[$m]=$WALL
		((r > 0)) && WALLS[$m]+="$WALL "
	done
	if ((r > 0)) && [[ -n ${ROUND[native]:-} && -n ${ROUND[kscope]:-} ]]; then
		PAIRS+="$(ratio "${ROUND[kscope]}" "${ROUND[native]}") "
	fi
	if ((r > 0)) && [[ -n ${ROUND[native]:-} && -n ${ROUND[launcher]:-} ]]; then
		LPAIRS+="$(ratio "${ROUND[launcher]}" "${ROUND[native]}") "
		[[ -n ${ROUND[kscope]:-} ]] &&
			KLPAIRS+="$(ratio "${ROUND[kscope]}" "${ROUND[launcher]}") "
	fi
	unset ROUND
done
MED_PAIR=$(tr ' ' '\n' <<<"$PAIRS" | grep . | median)
MED_LPAIR=$(tr ' ' '\n' <<<"$LPAIRS" | grep . | median)
MED_KLPAIR=$(tr ' ' '\n' <<<"$KLPAIRS" | grep . | median)
# interval RATIOS...: the 95% interval of the median of RATIOS: medians of
# 2000 resamples of the rounds (with replacement), their 2.5th and 97.5th
# percentiles; a fixed seed, so the same rounds give the same interval.
interval() {
	python3 -c '
import random, statistics, sys
p = [float(x) for x in sys.argv[1:]]
if len(p) < 5:
    sys.exit()
rng = random.Random(1)
m = sorted(statistics.median(rng.choices(p, k=len(p))) for _ in range(2000))
print("%.3f-%.3f" % (m[49], m[1949]))
' "$@"
}
# (The lists are split into one argument per round on purpose.)
# shellcheck disable=SC2086
PAIR_CI=$(interval $PAIRS)
# shellcheck disable=SC2086
LPAIR_CI=$(interval $LPAIRS)
# shellcheck disable=SC2086
KLPAIR_CI=$(interval $KLPAIRS)
for m in native kscope true true-kscope launcher; do
	MED_WALL[$m]=$(tr ' ' '\n' <<<"${WALLS[$m]:-}" | grep . | median)
done

# ---------------------------------------------------------------------
# (b) and (c): replay cost and accuracy
# ---------------------------------------------------------------------
# measure_json: prints "median_pass_ns replay_wall_ns warmup passes" from
# the one measure.json of a kscope op run in $work/out.
measure_json() {
	python3 - "$work/out" <<'EOF'
import glob, json, statistics, sys
files = glob.glob(sys.argv[1] + "/op_*/*/work_*/measure.json")
if len(files) != 1:
    sys.exit(f"expected one work_*/measure.json, found {len(files)}")
m = json.load(open(files[0]))
if m.get("status") != "ok":
    sys.exit(f"replay status {m.get('status')}: {m.get('error')}")
p = m["pass_ns"]
if not p:
    sys.exit("no pass times")
print(statistics.median(p), m["replay_wall_ns"], len(m["warmup_ns"]), len(p))
EOF
}

# run_work MODE: MODE native (the program's own median, from stderr),
# off or on (kscope op's replay with --cache-flush MODE); sets MED_NS,
# and for off/on COST (replay_wall / ((warm-ups + passes) x median)), or
# REASON.
run_work() {
	local rc line vals
	REASON=
	rm -rf "$work/out"
	mkdir -p "$work/out"
	# POCL_AFFINITY=1 pins PoCL's worker threads one per CPU, in both:
	# unpinned, the scheduler sometimes leaves both on one CPU for the
	# whole process, and the kernel then takes twice as long in that
	# process, native or under kscope alike (docs/performance.md).
	if [[ $1 == native ]]; then
		POCL_AFFINITY=1 "$MANY" 0 --time >"$work/stdout" 2>"$work/stderr"
		rc=$?
	else
		POCL_AFFINITY=1 "$KSCOPE" op -o "$work/out" --kernel-name work \
			--warm-up "$WARMUP" --replay-count "$PASSES" --cache-flush "$1" \
			-- "$MANY" 0 --time >"$work/stdout" 2>"$work/stderr"
		rc=$?
	fi
	chmod -R u+w "$work/out"
	if ((rc != 0)); then
		REASON="exit status $rc: $(last_words)"
		return
	fi
	line=$(grep -m1 '^checksum: ' "$work/stdout")
	if [[ $1 == native ]]; then
		WORK_SUM=$line
		MED_NS=$(sed -n 's/^many: work median_ns=\([0-9]*\)$/\1/p' "$work/stderr")
		[[ -n $MED_NS ]] || REASON="many printed no median"
		return
	fi
	if [[ $line != "$WORK_SUM" ]]; then
		REASON="result differs from native: '${line:-no checksum line}'"
		return
	fi
	if ! vals=$(measure_json 2>&1); then
		REASON="measure.json: $vals"
		return
	fi
	read -r MED_NS wall nw np <<<"$vals"
	COST=$(awk -v w="$wall" -v m="$MED_NS" -v n=$((nw + np)) \
		'BEGIN {printf "%.3f", w / (n * m)}')
	# The program's own median in the same process, after the replay
	# (its launches of work that kscope passes on).
	SAME=$(sed -n 's/^many: work median_ns=\([0-9]*\)$/\1/p' "$work/stderr")
	[[ -n $SAME ]] && SAMERATIO+="$(awk -v a="$MED_NS" -v b="$SAME" \
		'BEGIN {printf "%.4f", a / b}') "
}

echo "bench: (b, c) replay of work: native, kscope op --cache-flush off and on," \
	"$RUNS runs each" >&2
SAMERATIO=
for r in $(seq "$RUNS"); do
	for m in native off on; do
		[[ -n ${FAILED[work-$m]:-} ]] && continue
		run_work "$m"
		if [[ -n $REASON ]]; then
			fail "work-$m" "work, $m" "$REASON"
			continue
		fi
		NS[$m]+="$MED_NS "
		[[ $m == native ]] || COSTS[$m]+="$COST "
	done
done
for m in native off on; do
	MED_NS_OF[$m]=$(tr ' ' '\n' <<<"${NS[$m]:-}" | grep . | median)
	[[ $m == native ]] ||
		MED_COST[$m]=$(tr ' ' '\n' <<<"${COSTS[$m]:-}" | grep . | median)
done

# ---------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------
show() { if [[ -n ${1:-} ]]; then printf '%s' "$1"; else printf -- '-'; fi; }
secs() { if [[ -n ${1:-} ]]; then printf '%.3f' "$1"; else printf -- '-'; fi; }

echo
echo "(a) Overhead: many $LAUNCHES ($LAUNCHES launches of a 1024-element kernel), no kernel" \
	"matching (medians of $RUNS runs)"
printf '%-34s %10s %8s\n' mode 'wall s' ratio
printf '%-34s %10s %8s\n' native "$(secs "${MED_WALL[native]}")" 1.000
printf '%-34s %10s %8s\n' "kscope op --kernel-name nomatch_xyz" "$(secs "${MED_WALL[kscope]}")" \
	"$(ratio "${MED_WALL[kscope]:-}" "${MED_WALL[native]:-}")"
echo "  median of the rounds' own ratios (kscope / native, run back to back):" \
	"$(show "${MED_PAIR:-}")${PAIR_CI:+ (95% interval $PAIR_CI)}"
printf '%-34s %10s %8s\n' "bench/op/launch.c (spawn and wait)" "$(secs "${MED_WALL[launcher]}")" \
	"$(ratio "${MED_WALL[launcher]:-}" "${MED_WALL[native]:-}")"
echo "  any launcher's share, the launcher's median round ratio (launcher / native):" \
	"$(show "${MED_LPAIR:-}")${LPAIR_CI:+ (95% interval $LPAIR_CI)}"
echo "  kscope beyond a launcher, median round ratio (kscope / launcher):" \
	"$(show "${MED_KLPAIR:-}")${KLPAIR_CI:+ (95% interval $KLPAIR_CI)}"
echo "  kscope's fixed cost, measured apart (kscope op -- /bin/true, less /bin/true):" \
	"$(awk -v a="${MED_WALL[true-kscope]:-}" -v b="${MED_WALL[true]:-}" \
		'BEGIN {if (a != "" && b != "") printf "%.1f ms", (a - b) * 1000; else print "-"}')"

echo
echo "(b) Replay cost: work, $WARMUP warm-ups + $PASSES passes (medians of $RUNS runs)"
printf '%-34s %16s %8s\n' 'cache flush' 'median pass us' ratio
for m in off on; do
	printf '%-34s %16s %8s\n' "$m" \
		"$(show "$(awk -v n="${MED_NS_OF[$m]:-}" 'BEGIN {if (n != "") printf "%.1f", n / 1000}')")" \
		"$(show "${MED_COST[$m]:-}")"
done
echo "  ratio: replay_wall_ns / ((warm-ups + passes) x median pass)"

echo
echo "(c) Accuracy: work's median time (medians of $RUNS runs)"
printf '%-34s %16s %8s\n' source 'median us' ratio
printf '%-34s %16s %8s\n' "the program's own events" \
	"$(show "$(awk -v n="${MED_NS_OF[native]:-}" 'BEGIN {if (n != "") printf "%.1f", n / 1000}')")" 1.000
for m in off on; do
	printf '%-34s %16s %8s\n' "replay, --cache-flush $m" \
		"$(show "$(awk -v n="${MED_NS_OF[$m]:-}" 'BEGIN {if (n != "") printf "%.1f", n / 1000}')")" \
		"$(ratio "${MED_NS_OF[$m]:-}" "${MED_NS_OF[native]:-}")"
done

echo "  in the same kscope run (flush off and on), the replay's median over the" \
	"program's own median after it, median of the runs:" \
	"$(tr ' ' '\n' <<<"$SAMERATIO" | grep . | median | awk '{if ($1 != "") printf "%.3f", $1; else print "-"}')"

nmiss=0
# target LABEL VALUE LIMIT: prints one target's line; VALUE <= LIMIT passes.
target() {
	local verdict
	if [[ -z $2 || $2 == - ]]; then
		printf '%-44s %9s %9s   n/a (not measured)\n' "$1" - "$3"
		nmiss=$((nmiss + 1))
		return
	fi
	verdict=$(awk -v v="$2" -v l="$3" 'BEGIN {print (v <= l) ? "PASS" : "MISS"}')
	[[ $verdict == PASS ]] || nmiss=$((nmiss + 1))
	printf '%-44s %9s %9s   %s\n' "$1" "$2" "$3" "$verdict"
}
echo
echo "Targets"
printf '%-44s %9s %9s   %s\n' target measured limit verdict
target "overhead, no match (median round ratio)" "${MED_PAIR:--}" 1.02
target "accuracy, flush off (|replay / own - 1|)" \
	"$(awk -v a="${MED_NS_OF[off]:-}" -v b="${MED_NS_OF[native]:-}" \
		'BEGIN {if (a != "" && b > 0) {d = a / b - 1; if (d < 0) d = -d; printf "%.3f", d}}')" 0.05

echo
if ((nfail)); then
	echo "bench: $nfail run(s) failed (see above); $nmiss target(s) missed or not measured"
	exit 1
elif ((nmiss)); then
	echo "bench: every run succeeded; $nmiss target(s) missed"
	exit 1
fi
echo "bench: every run succeeded and every target was met"
