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
#   kscope      kscope instrument (fib and main patched)
#   finstr      the -finstrument-functions build with empty hooks
# and prints the cost per call: (kscope - kscope-none) / calls, which
# leaves out what a run costs once (start, analysis, the 5 ms clock
# calibration at exit), and (finstr - native) / calls for comparison.
# Then the cost of instrumenting a large program once: kscope itself
# (a copy of KSCOPE, thousands of functions) running --version, natively
# and under kscope instrument (both analyses, kscope's and the
# runtime's, the trampolines, the patching, the results).
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
inst=$(median "$KSCOPE" instrument -o "$work/out" --top 0 -- "$work/fib" "$N")
finstr=$(median "$work/fib-finstr" "$N")

cp "$KSCOPE" "$work/big"
nbig=$("$KSCOPE" instrument --list -- "$work/big" | tail -1)
big_native=$(median "$work/big" --version)
big_inst=$(median "$KSCOPE" instrument -o "$work/out" --top 0 -- "$work/big" --version)

awk -v c="$calls" -v n="$native" -v z="$none" -v i="$inst" -v f="$finstr" 'BEGIN {
	printf "fib calls per run:       %d\n", c
	printf "native:                  %8.1f ms\n", n / 1e6
	printf "kscope, nothing patched: %8.1f ms\n", z / 1e6
	printf "kscope instrument:       %8.1f ms\n", i / 1e6
	printf "-finstrument-functions:  %8.1f ms\n", f / 1e6
	printf "kscope instrument:       %6.1f ns per call ((instrument - nothing patched) / calls)\n", (i - z) / c
	printf "-finstrument-functions:  %6.1f ns per call ((finstr - native) / calls, empty hooks)\n", (f - n) / c
}'
awk -v what="$nbig" -v n="$big_native" -v i="$big_inst" 'BEGIN {
	printf "large program (kscope: %s)\n", what
	printf "  --version natively:      %8.1f ms\n", n / 1e6
	printf "  under kscope instrument: %8.1f ms (+%.1f ms)\n", i / 1e6, (i - n) / 1e6
}'
