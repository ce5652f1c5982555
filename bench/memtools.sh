#!/usr/bin/env bash
# The cost of kscope's memory tools (contention, falseshare, memcheck) in
# time and memory, against the program alone and against Valgrind's own
# tools, measured in one run, with the ablation of the cache analyses'
# optimizations.
#
#   usage: bench/memtools.sh [--quick] [--no-ablation] [--modes LIST] [-r RUNS] [WORKLOAD...]
#          bench/memtools.sh --vs-valgrind [--quick] [-r RUNS] [WORKLOAD...]
#          bench/memtools.sh --redzones LIST [--quick] [-r RUNS] [WORKLOAD...]
#          bench/memtools.sh --vs-asan [--quick] [-r RUNS] [WORKLOAD...]
#          bench/memtools.sh --heap-map [--quick] [-r RUNS] [WORKLOAD...]
#          bench/memtools.sh --compiled [--quick] [-r RUNS] [WORKLOAD...]
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
#
# --vs-valgrind, instead of the above: kscope memcheck against
# `valgrind --tool=memcheck` given the very options kscope gives it (XML
# to a file, --trace-children, --leak-check=full..., the same
# --redzone-size: VS_REDZONE, default 128, passed to both), on the
# workloads and on examples/memory's oob, uaf, uninit, leak, doublefree
# and far_overflow.  RUNS runs of each (default 5), the two alternating;
# medians of wall time and peak RSS, the ratio kscope / valgrind per
# program, and the errors found: kscope's report.json (contexts reported
# plus filtered) against the <error> elements of Valgrind's XML (read
# with python3's xml.etree), which must be equal.  Target: ratio <= 1.05.
#
# --redzones LIST (comma-separated byte counts, e.g. 16,32,64,128,256),
# instead of the above: kscope memcheck --redzone R for each R, time and
# peak memory of the workloads (medians of RUNS, default 3, the redzones
# alternating; ratios to the first R), and tests/memtools/procs/
# mt_overflow OVER SIZE for OVER in 8 50 100 500 and SIZE in 16 100 4096:
# whether Memcheck ran to the end ("ok") or aborted ("DIED"), with the
# invalid-write contexts and bytes it reported ("ok 5/52").  Measures
# only, no target.
#
# --vs-asan, instead of the above: kscope memcheck's AddressSanitizer
# engine against the ASan binary run alone.  The workloads and
# examples/memory's oob, uaf, leak, doublefree and far_overflow are built
# here with gcc -fsanitize=address -fsanitize-recover=address (-O2 for
# the workloads, -O0 for the examples); the ASan binary alone runs with
# ASAN_OPTIONS=halt_on_error=0:exitcode=0 (what kscope gives it, so that
# both do the same work), its reports on stderr.  RUNS runs of each
# (default 5), the two alternating; medians of wall time and peak RSS,
# the ratio kscope / ASan alone, and the findings: kscope's report.json
# (contexts reported plus filtered) against ASan's own error and leak
# records on stderr, which must be equal.  Target: ratio <= 1.05.
#
# --heap-map, instead of the above: what kscope memcheck --heap-map costs,
# against kscope memcheck without it in the same run (both with --xml,
# which keeps the heap map log to measure), on the workloads and on
# allocs (mt_allocs: 4 threads making 250 thousand allocation calls each,
# 20 thousand with --quick), which is what the option costs most on.
# RUNS runs of each (default 3), the two alternating; medians of wall
# time and peak RSS, their ratios (with / without), the heap map's events
# (allocation calls that changed the heap) and its log's size on disk, the
# time added per event (with at least 10000 events: below that it is the
# runs' noise), and the errors found by both (report.json's
# contexts reported plus filtered), which must be equal, as must the
# program's result line.  Measures only, no target.
#
# --compiled, instead of the above: kscope contention and falseshare
# with the compiled front end (libkscope-mt.so, docs/memtools.md).  Each
# workload is built here by clang -O2 -g three ways: without
# instrumentation (native), with -fsanitize=thread against kscope's
# runtime (the flags of `kscope falseshare --print-cflags`), and with
# clang's own ThreadSanitizer runtime (tsan, run with
# TSAN_OPTIONS=exitcode=0: its race reports, if any, go to stderr).
# RUNS runs of each (default 3), the modes interleaved; medians of wall
# time and peak RSS of the whole command (kscope's symbolizing and
# reports included), as ratios to native and to tsan, and the result
# line compared with native's.  Targets (issue 20), each printed PASS or
# MISS: kscope's time <= 5x native and <= 0.5x tsan's.
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
SECTION=main
REDZONES=
while (($#)); do
	case $1 in
	--quick) QUICK=yes ;;
	--no-ablation) ABLATION=no ;;
	--modes) [[ -n ${2:-} ]] || usage; ONLY=$2; shift ;;
	--vs-valgrind) SECTION=vs-valgrind ;;
	--vs-asan) SECTION=vs-asan ;;
	--heap-map) SECTION=heap-map ;;
	--compiled) SECTION=compiled ;;
	--redzones) [[ ${2:-} =~ ^[0-9]+(,[0-9]+)*$ ]] || usage; SECTION=redzones; REDZONES=${2//,/ }; shift ;;
	-r) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; RUNS=$2; shift ;;
	-r*) [[ ${1#-r} =~ ^[1-9][0-9]*$ ]] || usage; RUNS=${1#-r} ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) WORKLOADS+=("$1") ;;
	esac
	shift
done
if [[ -z $RUNS ]]; then
	case $SECTION in
	vs-valgrind | vs-asan) RUNS=5 ;;
	redzones | heap-map) RUNS=3 ;;
	*) [[ $QUICK == yes ]] && RUNS=1 || RUNS=3 ;;
	esac
fi

declare -A CMDS
if [[ $QUICK == yes ]]; then
	CMDS=([histogram]="$EX/mt_histogram 64 4 1" [matmul]="$EX/mt_matmul 512 4"
	      [linreg]="$EX/mt_linreg 32 4 1" [allocs]="$EX/mt_allocs 20 4")
else
	CMDS=([histogram]="$EX/mt_histogram 256 4" [matmul]="$EX/mt_matmul 1920 4"
	      [linreg]="$EX/mt_linreg 256 4" [allocs]="$EX/mt_allocs 250 4")
fi
# The line each workload prints its result on: compared with native's.
declare -A RESULT=([histogram]='^histogram ' [matmul]='^matmul ' [linreg]='^linreg '
		  [allocs]='^allocs ')
if ! ((${#WORKLOADS[@]})); then
	WORKLOADS=(histogram matmul linreg)
	# allocs is the heap map's workload: the others make few allocations.
	[[ $SECTION == heap-map ]] && WORKLOADS+=(allocs)
fi
for w in "${WORKLOADS[@]}"; do
	[[ -n ${CMDS[$w]:-} ]] || { echo "bench: unknown workload '$w' (histogram, matmul, linreg, allocs)" >&2; exit 2; }
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
ratio3() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print "-"}'; }

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

# ------------------------------------------------------------------
# --vs-valgrind and --redzones
# ------------------------------------------------------------------

# The options kscope memcheck gives Valgrind by default (src/cli/
# memcheck_mc.c build_argv), but the redzone; files into DIR.
vg_argv() {
	local dir=$1 rz=$2
	echo "valgrind --tool=memcheck --xml=yes --xml-file=$dir/memcheck.%p.xml" \
		"--log-file=$dir/valgrind.%p.log --trace-children=yes" \
		"--child-silent-after-fork=yes --leak-check=full" \
		"--show-leak-kinds=definite,possible --errors-for-leak-kinds=definite,possible" \
		"--track-origins=no --redzone-size=$rz --freelist-vol=20971520" \
		"--num-callers=12 --max-threads=501 --fair-sched=no"
}

# timed OUTDIR COMMAND...: runs it once under /usr/bin/time; sets TIME
# (wall seconds, from bash's microsecond clock: %e's 10 ms steps are
# several percent of a 0.3 s run), RSS (KB, %M), RC.
timed() {
	local start end
	shift
	start=$EPOCHREALTIME
	/usr/bin/time -o "$work/time" -f '%M' "$@" >"$work/stdout" 2>"$work/stderr"
	RC=$?
	end=$EPOCHREALTIME
	TIME=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.4f", b - a}')
	RSS=$(tail -n 1 "$work/time")
}

# kscope_errors RUNDIR: reported + filtered contexts in its report.json.
kscope_errors() {
	python3 - "$1/report.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(s["contexts"] + s["filtered"])
PY
}

# vg_errors DIR: the <error> elements of the program's XML (the only
# memcheck.*.xml there: these programs do not exec).
vg_errors() {
	python3 - "$1" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
files = sorted(glob.glob(sys.argv[1] + "/memcheck.*.xml"))
print(sum(len(ET.parse(f).getroot().findall("error")) for f in files) if files else "-")
PY
}

med() { tr ' ' '\n' <<<"$1" | grep . | median; }

# vs_record NAME TOOL COUNT...: after a timed run of TOOL (kscope or the
# other tool) on NAME, into the caller's FAIL, T, M, KERR and OERR: kscope
# without a report.json failed; otherwise the run's time and peak RSS,
# and its findings (kscope's from report.json, the other's printed by the
# command COUNT...).
vs_record() {
	local name=$1 tool=$2
	shift 2
	if [[ $tool == kscope ]] && ! ls -d "$work"/out/memcheck_*/report.json >/dev/null 2>&1; then
		FAIL[$name.$tool]="exit status $RC: $(tail -n 1 "$work/stderr" | cut -c1-120)"
		return
	fi
	T[$name.$tool]+="$TIME "
	M[$name.$tool]+="$RSS "
	if [[ $tool == kscope ]]; then
		KERR[$name]=$(kscope_errors "$(ls -d "$work"/out/memcheck_* | head -n 1)")
	else
		OERR[$name]=$("$@")
	fi
}

# vs_table OTHER LABEL: the table of kscope memcheck against OTHER (the
# tool's key in T, M and FAIL: valgrind, asan), from the caller's progs,
# T, M (time and peak RSS per "prog.tool"), KERR and OERR (findings per
# program), FAIL; exits 1 when a program failed, missed 1.05x or differs
# in findings.
vs_table() {
	local other=$1 label=$2 name kt ot km om tr v nfail=0 nmiss=0
	printf '%-12s %9s %9s %7s %10s %10s %7s %8s %8s  %s\n' program 'kscope s' "$label s" ratio \
		'kscope MB' "$label MB" ratio 'k errs' "$label errs" verdict
	for name in "${progs[@]}"; do
		printf '%-12s ' "$name"
		if [[ -n ${FAIL[$name.kscope]:-}${FAIL[$name.$other]:-} ]]; then
			echo "FAILED: ${FAIL[$name.kscope]:-}${FAIL[$name.$other]:-}"
			nfail=$((nfail + 1))
			continue
		fi
		kt=$(med "${T[$name.kscope]}"); ot=$(med "${T[$name.$other]}")
		km=$(med "${M[$name.kscope]}"); om=$(med "${M[$name.$other]}")
		tr=$(ratio3 "$kt" "$ot")
		v=$(awk -v t="$tr" 'BEGIN {print (t <= 1.05) ? "PASS" : "MISS"}')
		[[ ${KERR[$name]} == "${OERR[$name]}" ]] || v="$v, FINDINGS DIFFER"
		[[ $v == PASS ]] || nmiss=$((nmiss + 1))
		printf '%9.3f %9.3f %6sx %10.1f %10.1f %6sx %8s %8s  %s\n' "$kt" "$ot" "$tr" \
			"$(awk -v k="$km" 'BEGIN {print k / 1024}')" "$(awk -v k="$om" 'BEGIN {print k / 1024}')" \
			"$(ratio "$km" "$om")" "${KERR[$name]}" "${OERR[$name]}" "$v"
	done
	echo
	if ((nfail + nmiss)); then
		echo "bench: $nfail program(s) failed, $nmiss missed the 1.05x target or differ in findings"
		exit 1
	fi
}

vs_valgrind() {
	local rz=${VS_REDZONE:-128} progs=() name cmd r rc
	local -A CMD=() T=() M=() KERR=() OERR=() FAIL=()
	command -v valgrind >/dev/null || { echo "bench: valgrind is not installed" >&2; exit 1; }
	[[ -x $KSCOPE ]] || { echo "bench: $KSCOPE is missing; build first" >&2; exit 1; }
	for w in "${WORKLOADS[@]}"; do progs+=("$w"); CMD[$w]=${CMDS[$w]}; done
	for name in oob uaf uninit leak doublefree far_overflow; do
		[[ -x $BUILD/examples/memory/$name ]] || continue
		progs+=("$name")
		CMD[$name]=$BUILD/examples/memory/$name
	done
	for r in $(seq "$RUNS"); do
		for name in "${progs[@]}"; do
			for tool in kscope valgrind; do
				[[ -n ${FAIL[$name.$tool]:-} ]] && continue
				echo "bench: $name, $tool memcheck (run $r of $RUNS)" >&2
				rm -rf "$work/out"
				mkdir -p "$work/out"
				if [[ $tool == kscope ]]; then
					# shellcheck disable=SC2086
					timed "$work/out" "$KSCOPE" memcheck --output "$work/out" \
						--error-exitcode 0 --redzone "$rz" -- ${CMD[$name]}
				else
					# shellcheck disable=SC2046,SC2086
					timed "$work/out" $(vg_argv "$work/out" "$rz") ${CMD[$name]}
				fi
				# The examples' own status may be non-zero (a double
				# free...): only kscope's failure (1) or Valgrind's
				# abort without XML counts.
				vs_record "$name" "$tool" vg_errors "$work/out"
			done
		done
	done
	echo
	echo "kscope memcheck / valgrind --tool=memcheck with kscope's options (--redzone $rz; medians of $RUNS run(s)$([[ $QUICK == yes ]] && echo ', --quick sizes'))"
	vs_table valgrind vg
	echo "bench: every program within 1.05x of valgrind's time, with the same errors"
	exit 0
}

redzones() {
	local rz r w over size cell
	local -A T=() M=() FAIL=()
	[[ -x $KSCOPE ]] || { echo "bench: $KSCOPE is missing; build first" >&2; exit 1; }
	local ovf=$BUILD/tests/memtools/procs/mt_overflow
	[[ -x $ovf ]] || { echo "bench: $ovf is missing; build first" >&2; exit 1; }
	for r in $(seq "$RUNS"); do
		for w in "${WORKLOADS[@]}"; do
			for rz in $REDZONES; do
				[[ -n ${FAIL[$w.$rz]:-} ]] && continue
				echo "bench: $w, --redzone $rz (run $r of $RUNS)" >&2
				rm -rf "$work/out"
				mkdir -p "$work/out"
				# shellcheck disable=SC2086
				timed "$work/out" "$KSCOPE" memcheck --output "$work/out" \
					--error-exitcode 0 --redzone "$rz" -- ${CMDS[$w]}
				if ((RC)); then
					FAIL[$w.$rz]="exit status $RC"
					continue
				fi
				T[$w.$rz]+="$TIME "
				M[$w.$rz]+="$RSS "
			done
		done
	done
	local first=${REDZONES%% *}
	echo
	echo "kscope memcheck --redzone R: time and peak memory, ratios to --redzone $first (medians of $RUNS run(s)$([[ $QUICK == yes ]] && echo ', --quick sizes'))"
	printf '%-10s %6s %9s %7s %9s %7s\n' workload R 'time s' ratio 'peak MB' ratio
	for w in "${WORKLOADS[@]}"; do
		for rz in $REDZONES; do
			printf '%-10s %6s ' "$w" "$rz"
			if [[ -n ${FAIL[$w.$rz]:-} || -n ${FAIL[$w.$first]:-} ]]; then
				echo "FAILED: ${FAIL[$w.$rz]:-${FAIL[$w.$first]}}"
				continue
			fi
			local t m
			t=$(med "${T[$w.$rz]}"); m=$(med "${M[$w.$rz]}")
			printf '%9.2f %6sx %9.1f %6sx\n' "$t" "$(ratio "$t" "$(med "${T[$w.$first]}")")" \
				"$(awk -v k="$m" 'BEGIN {print k / 1024}')" "$(ratio "$m" "$(med "${M[$w.$first]}")")"
		done
	done
	echo
	echo "mt_overflow OVER SIZE under kscope memcheck --redzone R: ok (Memcheck ran to the end) or DIED,"
	echo "then the invalid-write contexts / bytes reported"
	printf '%-6s %-6s' over size
	for rz in $REDZONES; do printf ' %12s' "R=$rz"; done
	printf '\n'
	for size in 16 100 4096; do
		for over in 8 50 100 500; do
			printf '%-6s %-6s' "$over" "$size"
			for rz in $REDZONES; do
				rm -rf "$work/out"
				mkdir -p "$work/out"
				"$KSCOPE" memcheck --output "$work/out" --error-exitcode 0 --log-level error \
					--redzone "$rz" -- "$ovf" "$over" "$size" >/dev/null 2>&1
				cell=$(python3 - "$work"/out/memcheck_*/report.json <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("no-report")
    sys.exit()
w = [e for e in r["errors"] if e["kind"] == "invalid-write"]
print("%s %d/%d" % ("DIED" if "incomplete" in r else "ok", len(w),
                    sum(e.get("size", 0) * e["count"] for e in w)))
PY
)
				printf ' %12s' "$cell"
			done
			printf '\n'
		done
	done
	exit 0
}

# asan_records FILE: ASan's error reports plus LeakSanitizer's leak
# records in FILE (the ASan binary's stderr).
asan_records() {
	grep -cE '==[0-9]+==ERROR: AddressSanitizer|^(Direct|Indirect) leak of' "$1"
}

vs_asan() {
	local progs=() name r src bin
	local -A CMD=() T=() M=() KERR=() OERR=() FAIL=()
	command -v gcc >/dev/null || { echo "bench: gcc is not installed" >&2; exit 1; }
	[[ -x $KSCOPE ]] || { echo "bench: $KSCOPE is missing; build first" >&2; exit 1; }
	mkdir -p "$work/bin"
	for w in "${WORKLOADS[@]}"; do
		bin=${CMDS[$w]%% *}
		src=$ROOT/bench/workloads/$(basename "$bin").c
		gcc -O2 -g -pthread -fsanitize=address -fsanitize-recover=address "$src" \
			-o "$work/bin/$(basename "$bin")" -lm ||
			{ echo "bench: cannot build $src with -fsanitize=address" >&2; exit 1; }
		progs+=("$w")
		CMD[$w]="$work/bin/$(basename "$bin") ${CMDS[$w]#* }"
	done
	for name in oob uaf leak doublefree far_overflow; do
		gcc -O0 -g -w -fsanitize=address -fsanitize-recover=address \
			"$ROOT/examples/memory/$name.c" -o "$work/bin/$name" || continue
		progs+=("$name")
		CMD[$name]=$work/bin/$name
	done
	for r in $(seq "$RUNS"); do
		for name in "${progs[@]}"; do
			for tool in kscope asan; do
				[[ -n ${FAIL[$name.$tool]:-} ]] && continue
				echo "bench: $name, $tool (run $r of $RUNS)" >&2
				rm -rf "$work/out"
				mkdir -p "$work/out"
				if [[ $tool == kscope ]]; then
					# shellcheck disable=SC2086
					timed "$work/out" env -u ASAN_OPTIONS "$KSCOPE" memcheck \
						--output "$work/out" --error-exitcode 0 -- ${CMD[$name]}
				else
					# shellcheck disable=SC2086
					timed "$work/out" env ASAN_OPTIONS=halt_on_error=0:exitcode=0 ${CMD[$name]}
				fi
				vs_record "$name" "$tool" asan_records "$work/stderr"
			done
		done
	done
	echo
	echo "kscope memcheck (ASan engine) / the ASan binary alone (medians of $RUNS run(s)$([[ $QUICK == yes ]] && echo ', --quick sizes'))"
	vs_table asan asan
	echo "bench: every program within 1.05x of the ASan binary's time alone, with the same findings"
	exit 0
}

# ------------------------------------------------------------------
# --heap-map
# ------------------------------------------------------------------

# hm_log_stats RUNDIR: "EVENTS KB" of the heap map logs there: the events
# logged (the last event number of each log, summed) and the disk blocks
# the logs take (they are sparse beyond what was written).
hm_log_stats() {
	local kb
	kb=$(du -kc "$1"/heapmap.*.log 2>/dev/null | tail -n 1 | cut -f1)
	python3 - "$1" "${kb:-0}" <<'PY'
import glob, struct, sys
events = 0
for path in glob.glob(sys.argv[1] + "/heapmap.*.log"):
    with open(path, "rb") as f:
        data = f.read()
    last = 0
    for off in range(40, len(data) - 39, 40):
        seq, typ = struct.unpack_from("<Q", data, off)[0], struct.unpack_from("<H", data, off + 32)[0]
        if seq == 0 and typ == 0:
            break
        last = max(last, seq)
    events += last
print(events, sys.argv[2])
PY
}

heap_map() {
	local r w mode line
	local -A T=() M=() FAIL=() ERRS=() EVENTS=() LOGKB=() RES=()
	[[ -x $KSCOPE ]] || { echo "bench: $KSCOPE is missing; build first" >&2; exit 1; }
	for r in $(seq "$RUNS"); do
		for w in "${WORKLOADS[@]}"; do
			for mode in plain heap-map; do
				[[ -n ${FAIL[$w]:-} ]] && continue
				echo "bench: $w, kscope memcheck$([[ $mode == heap-map ]] && echo ' --heap-map') (run $r of $RUNS)" >&2
				rm -rf "$work/out"
				mkdir -p "$work/out"
				# shellcheck disable=SC2086,SC2046
				timed "$work/out" "$KSCOPE" memcheck --output "$work/out" --error-exitcode 0 \
					--xml $([[ $mode == heap-map ]] && echo --heap-map) -- ${CMDS[$w]}
				line=$(grep -m1 -E "${RESULT[$w]}" "$work/stdout")
				if ((RC)) || ! ls -d "$work"/out/memcheck_*/report.json >/dev/null 2>&1; then
					FAIL[$w]="$mode: exit status $RC: $(tail -n 1 "$work/stderr" | cut -c1-120)"
					continue
				fi
				if [[ -n ${RES[$w]:-} && $line != "${RES[$w]}" ]]; then
					FAIL[$w]="$mode: result '$line' differs from '${RES[$w]}'"
					continue
				fi
				RES[$w]=$line
				T[$w.$mode]+="$TIME "
				M[$w.$mode]+="$RSS "
				ERRS[$w.$mode]=$(kscope_errors "$(ls -d "$work"/out/memcheck_* | head -n 1)")
				if [[ $mode == heap-map ]]; then
					read -r "EVENTS[$w]" "LOGKB[$w]" < <(hm_log_stats "$(ls -d "$work"/out/memcheck_* | head -n 1)")
				fi
				chmod -R u+w "$work/out"
			done
		done
	done
	echo
	echo "kscope memcheck --heap-map / kscope memcheck (both --xml; medians of $RUNS run(s)$([[ $QUICK == yes ]] && echo ', --quick sizes'))"
	printf '%-10s %9s %9s %7s %9s %9s %7s %10s %8s %9s %7s\n' workload 'plain s' 'h-map s' ratio \
		'plain MB' 'h-map MB' ratio events 'log MB' 'us/event' errors
	local nfail=0 tp th mp mh
	for w in "${WORKLOADS[@]}"; do
		printf '%-10s ' "$w"
		if [[ -n ${FAIL[$w]:-} ]]; then
			echo "FAILED: ${FAIL[$w]}"
			nfail=$((nfail + 1))
			continue
		fi
		tp=$(med "${T[$w.plain]}"); th=$(med "${T[$w.heap-map]}")
		mp=$(med "${M[$w.plain]}"); mh=$(med "${M[$w.heap-map]}")
		printf '%9.2f %9.2f %6sx %9.1f %9.1f %6sx %10s %8.1f %9s %7s\n' "$tp" "$th" "$(ratio3 "$th" "$tp")" \
			"$(awk -v k="$mp" 'BEGIN {print k / 1024}')" "$(awk -v k="$mh" 'BEGIN {print k / 1024}')" \
			"$(ratio "$mh" "$mp")" "${EVENTS[$w]}" "$(awk -v k="${LOGKB[$w]}" 'BEGIN {print k / 1024}')" \
			"$(awk -v a="$th" -v b="$tp" -v n="${EVENTS[$w]}" 'BEGIN {if (n >= 10000) printf "%.2f", (a - b) * 1e6 / n; else print "-"}')" \
			"$([[ ${ERRS[$w.plain]} == "${ERRS[$w.heap-map]}" ]] && echo "${ERRS[$w.plain]}" || echo "DIFFER:${ERRS[$w.plain]}/${ERRS[$w.heap-map]}")"
		[[ ${ERRS[$w.plain]} == "${ERRS[$w.heap-map]}" ]] || nfail=$((nfail + 1))
	done
	echo
	if ((nfail)); then
		echo "bench: $nfail workload(s) failed or found different errors with --heap-map"
		exit 1
	fi
	exit 0
}

# ------------------------------------------------------------------
# --compiled
# ------------------------------------------------------------------

compiled() {
	local w r m bin src args line t km nt nm tt tm rt rm v nfail=0 nmiss=0
	local -A T=() M=() FAIL=() RES=()
	local modes="native contention falseshare tsan"
	command -v clang >/dev/null || { echo "bench: clang is not installed" >&2; exit 1; }
	[[ -x $KSCOPE ]] || { echo "bench: $KSCOPE is missing; build first" >&2; exit 1; }
	eval "$("$KSCOPE" falseshare --print-cflags)" ||
		{ echo "bench: kscope falseshare --print-cflags failed" >&2; exit 1; }
	mkdir -p "$work/bin"
	for w in "${WORKLOADS[@]}"; do
		bin=${CMDS[$w]%% *}
		src=$ROOT/bench/workloads/$(basename "$bin").c
		# shellcheck disable=SC2086
		clang -O2 -g -pthread "$src" -o "$work/bin/$w.native" -lm &&
			clang -O2 $KSCOPE_MT_CFLAGS -pthread "$src" $KSCOPE_MT_LDFLAGS_CLANG \
				-o "$work/bin/$w.kscope" -lm &&
			clang -O2 -g -fsanitize=thread -pthread "$src" -o "$work/bin/$w.tsan" -lm ||
			{ echo "bench: cannot build $src three ways with clang" >&2; exit 1; }
	done
	for r in $(seq "$RUNS"); do
		for w in "${WORKLOADS[@]}"; do
			args=${CMDS[$w]#* }
			for m in $modes; do
				[[ -n ${FAIL[$w.$m]:-} ]] && continue
				echo "bench: $w, $m (run $r of $RUNS)" >&2
				rm -rf "$work/out"
				mkdir -p "$work/out"
				case $m in
				native) # shellcheck disable=SC2086
					timed "$work/out" "$work/bin/$w.native" $args ;;
				tsan) # shellcheck disable=SC2086
					timed "$work/out" env TSAN_OPTIONS=exitcode=0 "$work/bin/$w.tsan" $args ;;
				*) # shellcheck disable=SC2046,SC2086
					timed "$work/out" "$KSCOPE" "$m" --output "$work/out" \
						$(exitcode_opt "$m") --front-end compiled -- \
						"$work/bin/$w.kscope" $args ;;
				esac
				if ((RC)); then
					FAIL[$w.$m]="exit status $RC: $(grep -v '^[[:space:]]*$' "$work/stderr" | tail -n 1 | cut -c1-120)"
					continue
				fi
				line=$(grep -m1 -E "${RESULT[$w]}" "$work/stdout")
				if [[ $m == native ]]; then
					RES[$w]=$line
				elif [[ $line != "${RES[$w]:-}" ]]; then
					FAIL[$w.$m]="result differs from native: '${line:-no result line}'"
					continue
				fi
				T[$w.$m]+="$TIME "
				M[$w.$m]+="$RSS "
			done
		done
	done
	echo
	echo "kscope's compiled front end (clang -O2 builds; medians of $RUNS run(s)$([[ $QUICK == yes ]] && echo ', --quick sizes'))"
	printf '%-10s %-11s %9s %9s %9s %9s %9s %9s  %s\n' workload mode 'time s' '/native' '/tsan' \
		'peak MB' '/native' '/tsan' verdict
	for w in "${WORKLOADS[@]}"; do
		for m in $modes; do
			printf '%-10s %-11s ' "$w" "$m"
			if [[ -n ${FAIL[$w.$m]:-} || -z ${T[$w.$m]:-} ]]; then
				echo "FAILED: ${FAIL[$w.$m]:-not run}"
				nfail=$((nfail + 1))
				continue
			fi
			t=$(med "${T[$w.$m]}"); km=$(med "${M[$w.$m]}")
			nt=$(med "${T[$w.native]:-}"); nm=$(med "${M[$w.native]:-}")
			tt=$(med "${T[$w.tsan]:-}"); tm=$(med "${M[$w.tsan]:-}")
			rt=$(ratio "$t" "$tt"); rm=$(ratio "$km" "$tm")
			v=
			if [[ $m == contention || $m == falseshare ]]; then
				v=$(awk -v a="$(ratio "$t" "$nt")" -v b="$rt" \
					'BEGIN {print ((a <= 5) ? "PASS" : "MISS") " <=5x native, " ((b <= 0.5) ? "PASS" : "MISS") " <=0.5x tsan"}')
				[[ $v == *MISS* ]] && nmiss=$((nmiss + 1))
			fi
			printf '%9.3f %8sx %8sx %9.1f %8sx %8sx  %s\n' "$t" "$(ratio "$t" "$nt")" "$rt" \
				"$(awk -v k="$km" 'BEGIN {print k / 1024}')" "$(ratio "$km" "$nm")" "$rm" "$v"
		done
	done
	echo
	if ((nfail)); then
		echo "bench: $nfail run(s) failed"
		exit 1
	elif ((nmiss)); then
		echo "bench: every run succeeded; $nmiss kscope row(s) missed a target"
		exit 1
	fi
	echo "bench: every run succeeded and every target was met"
	exit 0
}

case $SECTION in
vs-valgrind) vs_valgrind ;;
vs-asan) vs_asan ;;
redzones) redzones ;;
heap-map) heap_map ;;
compiled) compiled ;;
esac

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
