#!/usr/bin/env bash
# kscope causal beside coz, in one run, on the programs of
# examples/causal/ whose causal profile is known (docs/causal.md):
#
#   usage: bench/causal.sh [-r ROUNDS] [-n RUNS] [-t TRIALS]
#          (BUILD=dir overrides the build directory, default build/)
#
# (a) Overhead.  balance (two threads at a barrier) and pipeline (a
#     producer and a consumer under a mutex and condition variables),
#     built as coz needs (-gdwarf-3, coz.h's COZ_PROGRESS_NAMED, which
#     kscope's runtime serves too), each run natively, under `kscope
#     causal` and under `coz run`, both choosing lines themselves with
#     their default speedups and experiment lengths; ROUNDS rounds
#     (default 5) in rotating order; printed: each tool's median wall time
#     over native's.  The slowdown includes the virtual speedups' pauses,
#     which both tools insert by design.  Target: kscope's at most coz's
#     (goal: under 10%).
# (b) Runs to a stable ranking.  RUNS runs (default 8) of balance under
#     each tool, pooled run after run (kscope: --runs RUNS, then the raw
#     files of runs 1..k; coz: its profile.coz, which it appends to run
#     after run); after each k, each line's experiments above 0% pooled
#     against the 0% ones give one figure per line (the same computation
#     for both tools' records); the number of runs after
#     which the top line is balance.c's line A and stays so (RUNS + 1 when
#     it never settles).  That number varies from trial to trial (each
#     run holds a handful of experiments at lines drawn from the
#     samples), so TRIALS trials (default 5) of each tool are made, and
#     printed with their median.  Target: kscope's median at most coz's.
# Exit status: 0 if every run succeeded and every target was met, 1
# otherwise, 2 for a usage error.
set -uo pipefail

usage() {
	echo "usage: bench/causal.sh [-r ROUNDS] [-n RUNS] [-t TRIALS]  (BUILD=dir: build directory)" >&2
	exit 2
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
KSCOPE=$BUILD/kscope
ROUNDS=5
RUNS=8
TRIALS=5
while (($#)); do
	case $1 in
	-r) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; ROUNDS=$2; shift ;;
	-n) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; RUNS=$2; shift ;;
	-t) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; TRIALS=$2; shift ;;
	-h | --help) usage ;;
	*) usage ;;
	esac
	shift
done
[[ -x $KSCOPE ]] || { echo "bench: $KSCOPE is missing; build first (make)" >&2; exit 1; }
command -v coz >/dev/null || { echo "bench: coz is missing (scripts/install-deps.sh)" >&2; exit 1; }

work=$(mktemp -d /tmp/kscope-bench-causal.XXXXXX)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
EX=$ROOT/examples/causal
for p in balance pipeline; do
	gcc -gdwarf-3 -O1 -pthread -DUSE_COZ "$EX/$p.c" -o "$work/$p" -ldl ||
		{ echo "bench: cannot build $p" >&2; exit 1; }
done
declare -A ARGS=([balance]=400 [pipeline]=300)
LINE_A=$(grep -n '/\* line A \*/' "$EX/balance.c" | cut -d: -f1)

nfail=0
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN {if (a != "" && b > 0) printf "%.3f", a / b; else print "-"}'; }
# timed MODE PROG: runs PROG natively, under kscope causal or under coz;
# prints the wall time in seconds, or nothing when the run failed.
timed() {
	local t0 t1 rc
	rm -rf "$work/out" "$work/cozdir"
	mkdir -p "$work/cozdir"
	t0=$(date +%s.%N)
	case $1 in
	native) "$work/$2" "${ARGS[$2]}" >/dev/null 2>&1 ;;
	kscope) "$KSCOPE" causal -o "$work/out" -- "$work/$2" "${ARGS[$2]}" >/dev/null 2>&1 ;;
	coz) (cd "$work/cozdir" && coz run --- "$work/$2" "${ARGS[$2]}" >/dev/null 2>&1) ;;
	esac
	rc=$?
	t1=$(date +%s.%N)
	if ((rc != 0)); then
		echo "bench:   failed: $2 under $1: exit $rc" >&2
		return
	fi
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", b - a}'
}

# ---------------------------------------------------------------------
# (a) overhead
# ---------------------------------------------------------------------
echo "bench: (a) overhead: balance and pipeline, native, kscope causal and coz, $ROUNDS rounds" >&2
declare -A T=()
for r in $(seq "$ROUNDS"); do
	case $((r % 3)) in
	0) order=(native kscope coz) ;;
	1) order=(kscope coz native) ;;
	2) order=(coz native kscope) ;;
	esac
	for p in balance pipeline; do
		for m in "${order[@]}"; do
			w=$(timed "$m" "$p")
			if [[ -z $w ]]; then nfail=$((nfail + 1)); continue; fi
			T[$p,$m]+="$w "
		done
	done
done

# ---------------------------------------------------------------------
# (b) runs to a stable ranking
# ---------------------------------------------------------------------
echo "bench: (b) runs to a stable ranking: balance, $TRIALS trials of $RUNS runs under each tool" >&2
KS_TRIALS=
COZ_TRIALS=
LAST_TOPS=
for trial in $(seq "$TRIALS"); do
	rm -rf "$work/out" "$work/cozrank"
	mkdir -p "$work/cozrank"
	"$KSCOPE" causal -o "$work/out" --runs "$RUNS" -- "$work/balance" "${ARGS[balance]}" \
		>/dev/null 2>"$work/kscope.err" ||
		{ echo "bench:   failed: kscope causal --runs" >&2; nfail=$((nfail + 1)); }
	KS_RUN=$(ls -d "$work"/out/causal_* 2>/dev/null | head -n 1)
	for k in $(seq "$RUNS"); do
		(cd "$work/cozrank" && coz run --- "$work/balance" "${ARGS[balance]}" >/dev/null 2>&1) ||
			{ echo "bench:   failed: coz run $k" >&2; nfail=$((nfail + 1)); }
		cp "$work/cozrank/profile.coz" "$work/cozrank/after_$k.coz" 2>/dev/null
	done
	STABLE=$(python3 - "$KS_RUN" "$work/cozrank" "$RUNS" "$LINE_A" <<'EOF'
import os, sys
ks_run, cozdir, runs, line_a = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def top_line(records):
    """records: (selected "file:line", speedup fraction, effective ns,
    visits); each line's experiments above 0% pooled against the 0% ones;
    the best line's "file:line", or None."""
    base, lines = [0, 0], {}
    for sel, s, d, v in records:
        acc = base if s == 0 else lines.setdefault(sel, [0, 0])
        acc[0] += d
        acc[1] += v
    if not base[1]:
        return None
    p0 = base[0] / base[1]
    fig = {l: (p0 - a[0] / a[1]) / p0 for l, a in lines.items() if a[1]}
    return max(fig, key=fig.get) if fig else None

def kscope_records(k):
    names = {}
    with open(os.path.join(ks_run, "lines.tsv")) as f:
        next(f)
        for row in f:
            i, file, line = row.rstrip("\n").split("\t")[:3]
            names[i] = f"{file}:{line}"
    recs = []
    for j in range(1, k + 1):
        d = os.path.join(ks_run, "raw", f"run_{j}")
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            cur = None
            for row in open(os.path.join(d, name)):
                f = row.rstrip("\n").split("\t")
                kv = dict(x.split("=", 1) for x in f[1:] if "=" in x)
                if f[0] == "experiment":
                    cur = (names[kv["line"]], int(kv["speedup"]) / 100,
                           int(kv["wall_ns"]) - int(kv["delay_ns"]))
                elif f[0] == "point" and kv.get("kind") == "throughput" and cur:
                    recs.append((*cur, int(kv["delta"])))
    return recs

def coz_records(k):
    recs, cur = [], None
    path = os.path.join(cozdir, f"after_{k}.coz")
    for row in open(path) if os.path.exists(path) else []:
        f = row.rstrip("\n").split("\t")
        kv = dict(x.split("=", 1) for x in f[1:] if "=" in x)
        if f[0] == "experiment":
            cur = (kv["selected"], float(kv["speedup"]), int(kv["duration"]))
        elif f[0] == "throughput-point" and cur:
            recs.append((*cur, int(kv["delta"])))
    return recs

def stable(records_of):
    tops = [top_line(records_of(k)) for k in range(1, runs + 1)]
    right = [t is not None and t.endswith(f"balance.c:{line_a}") for t in tops]
    for k in range(runs):
        if all(right[k:]):
            return k + 1, tops
    return runs + 1, tops

ks, kt = stable(kscope_records)
cz, ct = stable(coz_records)
short = lambda t: [os.path.basename(x) if x else "-" for x in t]
print(ks, cz, " ".join(short(kt)), "|", " ".join(short(ct)))
EOF
)
	read -r KS_ONE COZ_ONE TOPS <<<"$STABLE"
	if [[ ! $KS_ONE =~ ^[0-9]+$ || ! $COZ_ONE =~ ^[0-9]+$ ]]; then
		echo "bench:   failed: trial $trial's rankings could not be computed" >&2
		nfail=$((nfail + 1))
		continue
	fi
	KS_TRIALS+="$KS_ONE "
	COZ_TRIALS+="$COZ_ONE "
	LAST_TOPS=$TOPS
done
KS_STABLE=$(tr ' ' '\n' <<<"$KS_TRIALS" | grep . | median)
COZ_STABLE=$(tr ' ' '\n' <<<"$COZ_TRIALS" | grep . | median)
KS_STABLE=${KS_STABLE:--}
COZ_STABLE=${COZ_STABLE:--}

# ---------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------
echo
echo "(a) Overhead: wall time over native (medians of $ROUNDS rounds)"
printf '%-10s %10s %10s %10s %10s %10s\n' program 'native s' 'kscope s' 'coz s' kscope coz
declare -A OV=()
for p in balance pipeline; do
	n=$(tr ' ' '\n' <<<"${T[$p,native]:-}" | grep . | median)
	k=$(tr ' ' '\n' <<<"${T[$p,kscope]:-}" | grep . | median)
	c=$(tr ' ' '\n' <<<"${T[$p,coz]:-}" | grep . | median)
	OV[$p,kscope]=$(ratio "$k" "$n")
	OV[$p,coz]=$(ratio "$c" "$n")
	printf '%-10s %10s %10s %10s %10s %10s\n' "$p" "${n:--}" "${k:--}" "${c:--}" \
		"${OV[$p,kscope]}" "${OV[$p,coz]}"
done
echo
echo "(b) Runs of balance until the top line is balance.c:$LINE_A and stays so ($TRIALS trials"
echo "    of $RUNS runs; $((RUNS + 1)): never)"
echo "  kscope causal: ${KS_TRIALS:--} median $KS_STABLE"
echo "  coz:           ${COZ_TRIALS:--} median $COZ_STABLE"
echo "  last trial, top line after each run, kscope | coz: ${LAST_TOPS:-}"

echo
echo "Targets"
nmiss=0
for p in balance pipeline; do
	v=$(awk -v k="${OV[$p,kscope]}" -v c="${OV[$p,coz]}" 'BEGIN {
		if (k == "-" || c == "-") print "n/a"; else if (k <= c) print "PASS"; else print "MISS"}')
	printf '%-52s %9s %9s   %s\n' "overhead of $p: kscope at most coz's" "${OV[$p,kscope]}" \
		"${OV[$p,coz]}" "$v"
	[[ $v == PASS ]] || nmiss=$((nmiss + 1))
done
v=$(awk -v k="$KS_STABLE" -v c="$COZ_STABLE" 'BEGIN {
	if (k == "-") print "MISS"; else if (c == "-" || k + 0 <= c + 0) print "PASS"; else print "MISS"}')
printf '%-52s %9s %9s   %s\n' "runs to a stable ranking: kscope at most coz's" "$KS_STABLE" \
	"$COZ_STABLE" "$v"
[[ $v == PASS ]] || nmiss=$((nmiss + 1))
if ((nfail)); then
	echo "bench: $nfail run(s) failed; $nmiss target(s) missed"
	exit 1
fi
if ((nmiss)); then
	echo "bench: every run succeeded; $nmiss target(s) missed"
	exit 1
fi
echo "bench: every run succeeded and every target was met"
