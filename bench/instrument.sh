#!/usr/bin/env bash
# The cost per instrumented call of kscope instrument, in one run.
#
#   usage: bench/instrument.sh [KSCOPE] [N] [RUNS]
#
# Builds examples/instrument/fib.c (gcc -O2) and examples/instrument's
# fib with -finstrument-functions and empty hooks, and times, as medians
# over RUNS (default 5) of fib(N) (default 32: 7,049,155 calls):
#   native      the program alone
#   kscope-none kscope instrument --include '^$': kscope, the runtime,
#               the analysis and the results, but no function patched
#   kscope      kscope instrument --trace-limit 0 (fib and main patched,
#               no trace: the hot path and the counters' results)
#   kscope-trace kscope instrument with the default trace (the first
#               100,000 calls as slices in the traces and profile.db)
#   finstr      the -finstrument-functions build with empty hooks
# and prints the cost per call: (kscope - kscope-none) / calls, which
# leaves out what a run costs once (start, analysis, the 5 ms clock
# calibration at exit), and (finstr - native) / calls for comparison;
# and what the default trace adds to the run (kscope-trace - kscope).
# Then Linux uprobes, where `perf probe` can place one (root, a kernel
# with uprobes): a uprobe on fib, counted by `perf stat`, on fib(N-7)
# (a trap per call: a smaller N keeps the run short), against `perf stat`
# of the same run without it; the cost per call, and whether its count is
# kscope's.
# Then the cost of instrumenting a large program once: kscope itself
# (a copy of KSCOPE, thousands of functions) running --version, natively
# and under kscope instrument (both analyses, kscope's and the
# runtime's, the trampolines, the patching, the results), and a copy
# rewritten by --rewrite (run as it is: it runs itself under kscope
# instrument, with no analysis).
set -euo pipefail
KSCOPE=$(realpath "${1:-build/kscope}")
N=${2:-32}
RUNS=${3:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/kscope-bench.XXXXXX)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

gcc -O2 -o "$work/fib" "$here/examples/instrument/fib.c"
cat > "$work/hooks.c" <<'C'
void __cyg_profile_func_enter(void *f, void *c) __attribute__((no_instrument_function));
void __cyg_profile_func_exit(void *f, void *c) __attribute__((no_instrument_function));
void __cyg_profile_func_enter(void *f, void *c) { (void)f; (void)c; __asm__ volatile(""); }
void __cyg_profile_func_exit(void *f, void *c) { (void)f; (void)c; __asm__ volatile(""); }
C
gcc -O2 -c -o "$work/hooks.o" "$work/hooks.c"
gcc -O2 -finstrument-functions -o "$work/fib-finstr" "$here/examples/instrument/fib.c" \
    "$work/hooks.o"

calls=$(python3 -c "
a, b = 0, 1
for _ in range($N + 1): a, b = b, a + b
print(2 * a - 1)")

# median wall-clock seconds of RUNS runs of "$@"
median() {
	local times=() t0 t1
	for _ in $(seq "$RUNS"); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		times+=($(( t1 - t0 )))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

native=$(median "$work/fib" "$N")
none=$(median "$KSCOPE" instrument -o "$work/out" --top 0 --include '^$' -- "$work/fib" "$N")
inst=$(median "$KSCOPE" instrument -o "$work/out" --top 0 --trace-limit 0 -- "$work/fib" "$N")
traced=$(median "$KSCOPE" instrument -o "$work/out" --top 0 -- "$work/fib" "$N")
finstr=$(median "$work/fib-finstr" "$N")

# Linux uprobes through perf probe: a group of this run's own, removed
# at the end.
probe_line="uprobes (perf probe):    not measured (perf cannot place a uprobe here)"
if command -v perf >/dev/null &&
	perf probe -q -x "$work/fib" -a "ksbench$$:fib=fib" >/dev/null 2>&1; then
	trap 'perf probe -q -d "ksbench$$:*" >/dev/null 2>&1; chmod -R u+w "$work"; rm -rf "$work"' EXIT
	pn=$((N - 7))
	pcalls=$(python3 -c "
a, b = 0, 1
for _ in range($pn + 1): a, b = b, a + b
print(2 * a - 1)")
	p_none=$(median perf stat -e dummy -- "$work/fib" "$pn")
	p_probe=$(median perf stat -e "ksbench$$:fib" -- "$work/fib" "$pn")
	p_count=$(perf stat -x, -e "ksbench$$:fib" -- "$work/fib" "$pn" 2>&1 >/dev/null |
		awk -F, '/ksbench/ {print $1}')
	rm -rf "$work/probe-out"
	"$KSCOPE" instrument -o "$work/probe-out" --top 0 --trace-limit 0 -- "$work/fib" "$pn" \
		>/dev/null 2>&1
	k_count=$(python3 -c '
import glob, sqlite3, sys
db = glob.glob(sys.argv[1] + "/instrument_*/profile.db")
print(sqlite3.connect(db[0]).execute(
    "SELECT calls FROM function_totals WHERE name = \"fib\"").fetchone()[0] if db else "")
' "$work/probe-out" 2>/dev/null)
	probe_line=$(awk -v a="$p_probe" -v z="$p_none" -v c="$pcalls" -v pc="$p_count" \
		-v kc="$k_count" -v pn="$pn" 'BEGIN {
		printf "uprobes (perf probe):    %6.1f ns per call (fib(%d), %d calls; perf counted %s, kscope %s)", (a - z) / c, pn, c, pc, (kc == "" ? "-" : kc)
	}')
fi

cp "$KSCOPE" "$work/big"
nbig=$("$KSCOPE" instrument --list -- "$work/big" | tail -1)
big_native=$(median "$work/big" --version)
big_inst=$(median "$KSCOPE" instrument -o "$work/out" --top 0 -- "$work/big" --version)
"$KSCOPE" instrument --rewrite "$work/big-rw" -o "$work/out" --top 0 -- "$work/big" \
	>/dev/null 2>&1
big_rw=$(median "$work/big-rw" --version)

awk -v c="$calls" -v n="$native" -v z="$none" -v i="$inst" -v f="$finstr" -v t="$traced" 'BEGIN {
	printf "fib calls per run:       %d\n", c
	printf "native:                  %8.1f ms\n", n / 1e6
	printf "kscope, nothing patched: %8.1f ms\n", z / 1e6
	printf "kscope instrument:       %8.1f ms (--trace-limit 0)\n", i / 1e6
	printf "  with the default trace:%8.1f ms (+%.1f ms: 100,000 calls in the traces and profile.db)\n", t / 1e6, (t - i) / 1e6
	printf "-finstrument-functions:  %8.1f ms\n", f / 1e6
	printf "kscope instrument:       %6.1f ns per call ((instrument - nothing patched) / calls)\n", (i - z) / c
	printf "-finstrument-functions:  %6.1f ns per call ((finstr - native) / calls, empty hooks)\n", (f - n) / c
}'
echo "$probe_line"
awk -v what="$nbig" -v n="$big_native" -v i="$big_inst" -v r="$big_rw" 'BEGIN {
	printf "large program (kscope: %s)\n", what
	printf "  --version natively:      %8.1f ms\n", n / 1e6
	printf "  under kscope instrument: %8.1f ms (+%.1f ms)\n", i / 1e6, (i - n) / 1e6
	printf "  rewritten (--rewrite):   %8.1f ms (+%.1f ms: no analysis, the same run under kscope)\n", r / 1e6, (r - n) / 1e6
}'
