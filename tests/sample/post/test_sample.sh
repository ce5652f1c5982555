#!/usr/bin/env bash
# Integration tests of `kscope sample`: real programs (examples/sample)
# run under kscope, with assertions on profile.db, the reports and the
# trace.  Times are never asserted; shares get the tolerance the issue
# sets (3 percentage points).
#
#   usage: test_sample.sh KSCOPE EXAMPLES_DIR SCENARIO [PROGRAM]
set -euo pipefail
KSCOPE=$1 EX=$2 SCENARIO=$3 PROG=${4:-}
work=$(mktemp -d /tmp/kscope-sample-test.XXXXXX)
trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }

# run_sample ARGS... -- PROG...: runs kscope sample into ./out; sets $RUN
# (the run directory, from the summary on stderr), $STATUS (kscope's exit
# status) and keeps stdout in ./stdout, stderr in ./stderr.
run_sample() {
	set +e
	"$KSCOPE" sample -o out "$@" >stdout 2>stderr
	STATUS=$?
	set -e
	RUN=$(sed -n 's/^results: //p' stderr)
	[[ -n "$RUN" && -d "$RUN" ]] || { cat stdout stderr >&2; fail "no run directory"; }
}

# sql QUERY: one value from the run's profile.db.
sql() {
	python3 - "$RUN/profile.db" "$1" <<'PY'
import sqlite3, sys
con = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
row = con.execute(sys.argv[2]).fetchone()
print("" if row is None or row[0] is None else row[0])
PY
}

check_outputs() { # the deliverables exist, are read-only, and parse
	for f in profile.db flat.txt tree.txt threads.txt trace.perfetto-trace; do
		[[ -f "$RUN/$f" ]] || fail "$f is missing"
		[[ $(stat -c %a "$RUN/$f") == 440 ]] || fail "$f mode is $(stat -c %a "$RUN/$f")"
	done
	[[ ! -e "$RUN/raw" ]] || fail "raw/ was not cleaned up"
	[[ $(sql "PRAGMA integrity_check") == ok ]] || fail "profile.db is damaged"
	protoc --decode_raw <"$RUN/trace.perfetto-trace" >/dev/null ||
		fail "the Perfetto trace does not decode"
}

case $SCENARIO in
split)
	# Two functions splitting CPU time 3:1 are reported within 3 points.
	# Both samplers at 1000/s for 3 CPU-seconds give some 3500 samples:
	# the sampling error of a 75% share is then about 0.7 points, so 3
	# points is a margin of over 4 standard errors, not luck.  A sample
	# that carries late periods (overrun: the thread was off the CPU when
	# its wall-clock timer expired) weighs 1 + overrun, so on a busy
	# machine a few heavy samples make the share vary more: the margin is
	# then 4.5 standard errors of the weighted share (Kish's effective
	# number of samples, (sum w)^2 / sum w^2), never less than 3 points.
	run_sample --samplers both -F 1000 -- "$EX/cpu_split" 3
	[[ $STATUS == 0 ]] || fail "exit status $STATUS"
	check_outputs
	"$KSCOPE" report "$RUN" --format json >flat.json
	python3 - flat.json "$RUN/profile.db" <<'PY'
import json, math, sqlite3, sys
d = json.load(open(sys.argv[1]))
f = {x["function"]: x for x in d["functions"]}
# Both samplers ran, so the counts come per timer (cpu_*, wall_*); this
# compute-bound program splits each 3:1, and their periods add up here.
h = f["heavy"]["cpu_total"] + f["heavy"]["wall_total"]
l = f["light"]["cpu_total"] + f["light"]["wall_total"]
share = 100.0 * h / (h + l)
# The same from profile.db, sample by sample, with each sample's weight.
db = sqlite3.connect(sys.argv[2])
fn = dict(db.execute("SELECT s.id, t.text FROM stacks s JOIN frames f ON f.id = s.frame_id "
                     "JOIN strings t ON t.id = f.function"))
parent = dict(db.execute("SELECT id, parent_id FROM stacks"))
def under(sid):
    while sid is not None:
        if fn.get(sid) in ("heavy", "light"):
            return fn[sid]
        sid = parent.get(sid)
    return None
w_h = w_all = w2 = 0
for sid, over in db.execute("SELECT stack_id, overrun FROM samples"):
    u = under(sid)
    if u is None:
        continue
    w = 1 + over
    w_all += w
    w2 += w * w
    w_h += w if u == "heavy" else 0
assert w_all == h + l and w_h == h, (w_h, w_all, h, l)
p = w_h / w_all
n_eff = w_all * w_all / w2
margin = max(3.0, 4.5 * 100.0 * math.sqrt(p * (1 - p) / n_eff))
print("heavy share of heavy+light: %.1f%% (%d periods, %.0f effective samples; "
      "margin %.1f points)" % (share, h + l, n_eff, margin))
assert abs(share - 75.0) <= margin, (share, margin)
assert (f["spin"]["file"] or "").endswith("cpu_split.c"), f["spin"]
assert f["spin"]["cpu_self_pct"] > 80 and f["spin"]["wall_self_pct"] > 80, f["spin"]
assert d["samples"] >= 2000, d["samples"]
PY
	# The call tree has the path main -> heavy -> spin.
	"$KSCOPE" report "$RUN" --tree --format json --min-pct 0 | python3 -c '
import json, sys
def paths(n, path):
    path = path + [n["function"]]
    yield path
    for c in n.get("children", []):
        yield from paths(c, path)
d = json.load(sys.stdin)
found = [p for r in d["roots"] for p in paths(r, [])]
want = ["main", "heavy", "spin"]
assert any(p[i:i + 3] == want for p in found for i in range(len(p))), found[:5]
'
	grep -q "heavy" "$RUN/tree.txt" || fail "tree.txt lacks heavy"
	;;
threads)
	# Per-thread totals match the thread count.
	run_sample -- "$EX/threads" 4
	[[ $STATUS == 0 ]] || fail "exit status $STATUS"
	check_outputs
	[[ $(sql "SELECT count(*) FROM threads") == 5 ]] || fail "threads: $(sql 'SELECT count(*) FROM threads')"
	# How much the sampler saw is in timer periods: on a busy machine the
	# kernel folds several into one signal (samples.overrun).
	[[ $(sql "SELECT count(*) FROM (SELECT thread_id FROM samples GROUP BY thread_id
		  HAVING sum(1 + overrun) > 20)") -ge 4 ]] ||
		fail "the workers have too few samples"
	[[ $(sql "SELECT sum(samples) FROM threads") == $(sql "SELECT count(*) FROM samples") ]] ||
		fail "per-thread totals do not add up"
	"$KSCOPE" report "$RUN" --threads --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert len(d["rows"]) == 5, d["rows"]
assert abs(sum(r["share_pct"] for r in d["rows"]) - 100) < 0.1
assert sum(r["periods"] for r in d["rows"]) == d["periods"] == int(sys.argv[1]), d
assert sum(r["samples"] for r in d["rows"]) == d["samples"] == int(sys.argv[2]), d
' "$(sql "SELECT sum(1 + overrun) FROM samples")" "$(sql "SELECT count(*) FROM samples")"
	;;
regions)
	# User-API regions: slices with the right nesting, and nodes in the tree.
	run_sample --samplers both -- "$EX/regions"
	[[ $STATUS == 0 ]] || fail "exit status $STATUS"
	check_outputs
	python3 - "$RUN/profile.db" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = con.execute("""SELECT s.text, r.kind, r.depth, r.start_ns, r.end_ns
                      FROM regions r JOIN strings s ON s.id = r.name
                      ORDER BY r.start_ns""").fetchall()
by = {}
for name, kind, depth, start, end in rows:
    by.setdefault(name, []).append((kind, depth, start, end))
print(sorted(by))
outer, inner = by["outer"][0], by["inner"][0]
assert outer[0] == 0 and outer[1] == 0, outer
assert inner[0] == 0 and inner[1] == 1, inner
assert outer[2] <= inner[2] and inner[3] <= outer[3], (outer, inner)
assert by["checkpoint"][0][0] == 3, by["checkpoint"]       # a mark
assert by["checkpoint"][0][2] == by["checkpoint"][0][3]
assert by["io"][0][0] == 1 and by["io"][0][3] >= by["io"][0][2]   # a range
assert any(k == 4 for k, *_ in by.get("[paused]", [])), "no pause slice"
assert "cross-thread" in by
# Regions are nodes of the call tree: frames of module [region].
n = con.execute("""SELECT count(*) FROM frames f JOIN strings m ON m.id = f.module
                   JOIN strings fn ON fn.id = f.function
                   WHERE m.text = '[region]' AND fn.text IN ('outer', 'inner')""").fetchone()[0]
assert n == 2, n
PY
	"$KSCOPE" report "$RUN" --region inner >/dev/null || fail "--region inner"
	;;
perfetto)
	# The trace decodes into the expected packets.
	run_sample -- "$EX/regions"
	protoc --decode_raw <"$RUN/trace.perfetto-trace" >decoded.txt
	grep -c '^1 {' decoded.txt | { read -r n; [[ $n -ge 10 ]] || fail "only $n packets"; }
	# Track descriptors (60) for the process and its threads, with the
	# program's pid; track events (11) with interned names (12).
	grep -q '^  60 {' decoded.txt || fail "no TrackDescriptor"
	grep -q '^  11 {' decoded.txt || fail "no TrackEvent"
	grep -q '^  12 {' decoded.txt || fail "no InternedData"
	grep -q '"outer"' decoded.txt || fail "region name not interned"
	pid=$(sql "SELECT pid FROM processes LIMIT 1")
	grep -q "^      1: $pid\$" decoded.txt || fail "no descriptor with pid $pid"
	# The JSON trace on request.
	run_sample --trace-format json -- "$EX/regions"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ph = [e["ph"] for e in d["traceEvents"]]
assert "M" in ph and "X" in ph, set(ph)
' "$RUN/trace.json"
	;;
fork_exec)
	run_sample -- "$EX/fork_exec"
	[[ $STATUS == 0 ]] || fail "exit status $STATUS"
	check_outputs
	[[ $(sql "SELECT count(DISTINCT pid) FROM processes") -ge 2 ]] ||
		fail "the child process is missing"
	;;
sigint)
	# SIGINT to the program: what was collected is still written, and
	# kscope reports the program's fate as its own exit status.  (A
	# shell starts background jobs with SIGINT ignored; env restores the
	# default, as a terminal's foreground job has it.)
	env --default-signal=INT "$KSCOPE" sample -o out -- "$EX/sigint" >stdout 2>stderr &
	kpid=$!
	sleep 1.5
	prog=$(pgrep -P $kpid) || fail "the program was not running"
	kill -INT "$prog"
	set +e
	wait $kpid
	STATUS=$?
	set -e
	RUN=$(sed -n 's/^results: //p' stderr)
	[[ -d "$RUN" ]] || { cat stdout stderr >&2; fail "no results after SIGINT"; }
	[[ $STATUS == 130 ]] || fail "exit status $STATUS, expected 130"
	check_outputs
	[[ $(sql "SELECT sum(1 + overrun) FROM samples") -gt 50 ]] || fail "too few samples"
	# SIGTERM sent to kscope itself reaches the program.
	env --default-signal=INT "$KSCOPE" sample -o out2 -- "$EX/sigint" >stdout 2>stderr &
	kpid=$!
	sleep 1.5
	kill -TERM $kpid
	set +e
	wait $kpid
	STATUS=$?
	set -e
	[[ $STATUS == 143 ]] || fail "exit status $STATUS after SIGTERM, expected 143"
	;;
many_threads)
	run_sample -- "$EX/many_threads" 3000
	[[ $STATUS == 0 ]] || fail "exit status $STATUS"
	check_outputs
	[[ $(sql "SELECT count(*) FROM threads") -ge 3000 ]] ||
		fail "threads: $(sql 'SELECT count(*) FROM threads')"
	# 1000 waiting threads under the real-time sampler at 200 Hz: it
	# slows down to its budget and says so, and the database says how.
	run_sample --samplers realtime --realtime-freq 200 -- "$EX/idle_threads" 1000 0.3
	[[ $STATUS == 0 && $(cat stdout) == ok ]] || fail "idle_threads: status $STATUS"
	grep -q "the real-time sampler slowed down: more than 20 threads were live at 200 Hz" stderr ||
		fail "no word of the slowed sampler: $(cat stderr)"
	slowed=$(sql "SELECT value FROM meta WHERE key = 'realtime_slowed_samples'")
	most=$(sql "SELECT value FROM meta WHERE key = 'realtime_slowed_max_periods'")
	[[ $slowed -ge 100 && $most -ge 40 ]] || fail "meta: $slowed slowed samples, at most $most periods"
	# The reports' headers say so too, not that the signals came late.
	"$KSCOPE" report "$RUN" | head -1 | grep -q "the sampler slowed down to keep to 4000 samples a second, so a sample stands for up to $most periods" ||
		fail "report header: $("$KSCOPE" report "$RUN" | head -1)"
	[[ $("$KSCOPE" report "$RUN" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["timers"]["wall"]["slowed_max_periods"])') == "$most" ]] ||
		fail "JSON timers.wall.slowed_max_periods"
	;;
short_threads)
	# 3000 threads of 0.9 ms of CPU each, sampled at 1000 Hz: every one
	# uses less than one 1 ms period.  Their samples, in timer periods,
	# must add up to the CPU time the threads table gives.  Each thread
	# that runs c ms is due c/P periods on average (random first expiry),
	# and the count it gets is floor(c/P) or one more: a Bernoulli of
	# variance f(1 - f), f = frac(c/P), so the total has standard
	# deviation sqrt(sum f(1 - f)) (some 14 periods of 2700 here).  The
	# bound is 4 of those, plus 2% for the CPU each thread spends before
	# its timer is armed and after it is stopped (thread start and end in
	# glibc and kscope, some 10-30 us a thread).  A first expiry of one
	# whole period saw none of these threads; one that is random but
	# left the periods of a thread's last tick unsignalled saw about
	# c / (2 * tick) of them, a tenth.
	run_sample -F 1000 -- "$EX/short_threads" 3000 900 2
	[[ $STATUS == 0 ]] || fail "exit status $STATUS"
	check_outputs
	python3 - "$RUN/profile.db" <<'PY'
import math, sqlite3, sys
con = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
freq = con.execute("SELECT cputime_freq FROM sampling").fetchone()[0]
period = 1e9 / freq
cpu = [r[0] for r in con.execute("SELECT cpu_ns FROM threads")]
due = sum(c / period for c in cpu)
var = sum((c / period % 1) * (1 - c / period % 1) for c in cpu)
seen = con.execute("SELECT sum(1 + overrun) FROM samples WHERE clock = 0").fetchone()[0] or 0
sampled = con.execute("SELECT count(*) FROM threads WHERE samples > 0").fetchone()[0]
tol = 4 * math.sqrt(var) + 0.02 * due
print("threads %d (%d sampled), CPU %.3f s: %.0f periods due, %d seen, "
      "tolerance %.0f" % (len(cpu), sampled, sum(cpu) / 1e9, due, seen, tol))
assert len(cpu) == 3001, len(cpu)
assert abs(seen - due) <= tol, (seen, due, tol)
# Each worker is due 0.9 periods: most must have been sampled.
assert sampled >= 2000, sampled
PY
	# The reports count the same periods.
	"$KSCOPE" report "$RUN" --threads --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["periods"] == int(sys.argv[1]), (d["periods"], sys.argv[1])
' "$(sql "SELECT sum(1 + overrun) FROM samples")"
	;;
same_output)
	# The program behaves as without kscope: same output (kscope's summary
	# goes to stderr), same status.
	"$EX/cpu_split" 0.3 >native.out 2>native.err || true
	run_sample -- "$EX/cpu_split" 0.3
	cmp native.out stdout || fail "stdout is not the program's own output"
	grep -q '^kscope sample: [0-9]* samples' stderr || fail "no summary on stderr"
	set +e
	"$KSCOPE" sample -o out -- sh -c 'exit 7' >/dev/null 2>&1
	st=$?
	set -e
	[[ $st == 7 ]] || fail "exit status $st, expected the program's 7"
	;;
clang_lines)
	# clang writes no .debug_aranges: lines must still be found.
	command -v clang >/dev/null || { echo "no clang: skipped"; exit 0; }
	cat >hot.c <<'C'
#include <stdio.h>
#include <time.h>
static volatile double sink;
__attribute__((noinline)) static void hot(void)
{
	for (int i = 0; i < 2000000; i++)
		sink = sink * 1.0000001 + 1e-9;
}
int main(void)
{
	clock_t end = clock() + CLOCKS_PER_SEC / 2;
	while (clock() < end)
		hot();
	printf("%d\n", sink > 0);
	return 0;
}
C
	clang -g -O1 -gdwarf-5 -o hot hot.c
	readelf -S hot | grep -q debug_aranges && echo "(clang wrote aranges after all)"
	run_sample -- ./hot
	"$KSCOPE" report "$RUN" --format json | python3 -c '
import json, sys
f = {x["function"]: x for x in json.load(sys.stdin)["functions"]}
assert (f["hot"]["file"] or "").endswith("hot.c") and f["hot"]["line"] in (6, 7), f["hot"]
'
	;;
errors)
	# A statically linked program, a missing one, bad periods and tids:
	# exit 2, nothing launched, nothing written.
	printf 'int main(void){return 0;}\n' >s.c
	printf 'not a program\n' >plain.txt
	chmod 644 plain.txt
	if cc -static -o static_prog s.c 2>/dev/null; then
		set +e
		"$KSCOPE" sample -o out -- ./static_prog 2>err
		st=$?
		set -e
		[[ $st == 2 ]] || fail "static: exit $st"
		grep -q "statically linked" err || fail "static: $(cat err)"
	fi
	for args in "-- ./nonexistent" "--periods realtime:x:1:1 -- true" \
		    "--tids 1-0 -- true" "--freq 0 -- true" "--freq 10001 -- true" \
		    "--samplers often -- true" "-- ./plain.txt"; do
		set +e
		# shellcheck disable=SC2086
		"$KSCOPE" sample -o out $args >/dev/null 2>err
		st=$?
		set -e
		[[ $st == 2 ]] || fail "'$args': exit $st: $(cat err)"
		grep -q "accepted" err || fail "'$args': no 'accepted' in: $(cat err)"
	done
	[[ ! -e out ]] || fail "a rejected run wrote out/"
	;;
finish)
	# kill -9 of kscope: the program dies with it (unless
	# --keep-running), and 'kscope report RUN' turns the raw files left
	# behind into profile.db and the reports.
	# start NAME ARGS...: kscope sample ARGS -- sigint in the background,
	# once the program has printed its first line; sets $kpid, $prog, $RUN.
	start() {
		local name=$1
		shift
		"$KSCOPE" sample -o "$name" --keep-raw "$@" -- "$EX/sigint" >"$name.out" 2>"$name.err" &
		kpid=$!
		for _ in $(seq 100); do [[ -s "$name.out" ]] && break; sleep 0.1; done
		[[ -s "$name.out" ]] || fail "$name: the program did not start: $(cat "$name.err")"
		prog=$(pgrep -P $kpid) || fail "$name: no program under kscope"
		RUN=$(echo "$PWD/$name"/sample_*)
		[[ -d $RUN/raw ]] || fail "$name: no raw/ in $RUN"
	}
	# gone PID: true once PID has ended (polled: the kernel sends the
	# death signal as kscope's exit is processed).
	gone() { for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done; return 1; }
	start a
	sleep 1
	# While kscope runs, report refuses to finish the run behind its back.
	set +e
	"$KSCOPE" report "$RUN" >/dev/null 2>err
	st=$?
	set -e
	[[ $st == 2 ]] && grep -q "still running" err || fail "report during the run: exit $st: $(cat err)"
	kill -KILL $kpid
	wait $kpid 2>/dev/null || true
	gone "$prog" || { kill -KILL "$prog"; fail "the program outlived kill -9 of kscope"; }
	[[ ! -e $RUN/profile.db ]] || fail "profile.db exists before finishing"
	ls "$RUN"/raw/*.ksraw >/dev/null || fail "no raw files left"
	set +e
	"$KSCOPE" report "$RUN" >flat.txt 2>err
	st=$?
	set -e
	[[ $st == 0 ]] || fail "report of the killed run: exit $st: $(cat err)"
	grep -q "writing them from its raw files" err || fail "report did not say it finished the run: $(cat err)"
	check_outputs
	[[ $(sql "SELECT sum(1 + overrun) FROM samples") -gt 50 ]] || fail "too few samples: $(sql 'SELECT count(*) FROM samples')"
	grep -q "spin\|main" flat.txt || fail "the flat profile lacks the program: $(head flat.txt)"
	cmp -s flat.txt "$RUN/flat.txt" || fail "the printed flat profile differs from flat.txt"
	# Finished once: the next report only reads.
	"$KSCOPE" report "$RUN" --threads >/dev/null 2>err || fail "second report: $(cat err)"
	! grep -q "raw files" err || fail "the run was finished twice"
	# --keep-running: the program outlives kscope, as asked.
	start b --keep-running
	kill -KILL $kpid
	wait $kpid 2>/dev/null || true
	sleep 1
	kill -0 "$prog" 2>/dev/null || fail "--keep-running: the program died with kscope"
	kill -TERM "$prog"
	gone "$prog" || { kill -KILL "$prog"; fail "the program ignored SIGTERM"; }
	"$KSCOPE" report "$RUN" >/dev/null 2>err || fail "report of the --keep-running run: $(cat err)"
	[[ $(sql "SELECT end_reason FROM processes LIMIT 1") == 3 ]] ||
		fail "the program's end was not recorded: $(sql 'SELECT end_reason FROM processes')"
	;;
modules)
	# profile.db's module table: the executable, libc and the vdso, one
	# row each for the process, with the build-ids readelf reads from the
	# files, and every frame's address inside its module's range.  The
	# header of the reports counts what the database holds.
	run_sample -F 1000 -- "$EX/cpu_split" 0.5
	[[ $STATUS == 0 ]] || fail "exit status $STATUS"
	check_outputs
	exe=$(readlink -f "$EX/cpu_split")
	libc=$(sql "SELECT s.text FROM modules m JOIN strings s ON s.id = m.path
		    WHERE s.text LIKE '%/libc.so.6'")
	[[ -n "$libc" ]] || fail "no libc in the module table"
	for f in "$exe" "$libc"; do
		want=$(readelf -n "$f" | sed -n 's/^ *Build ID: //p')
		[[ -n "$want" ]] || fail "$f has no build-id to compare"
		got=$(sql "SELECT b.text FROM modules m JOIN strings s ON s.id = m.path
			   JOIN strings b ON b.id = m.build_id WHERE s.text = '$f'")
		[[ "$got" == "$want" ]] || fail "$f: build-id '$got', readelf says '$want'"
	done
	[[ $(sql "SELECT count(*) FROM modules m JOIN strings s ON s.id = m.path
		  WHERE s.text = '[vdso]'") == 1 ]] || fail "no [vdso] row"
	[[ $(sql "SELECT count(*) FROM (SELECT process_id, path, base FROM modules
		  GROUP BY 1, 2, 3 HAVING count(*) > 1)") == 0 ]] || fail "a module twice"
	[[ $(sql "SELECT count(*) FROM modules WHERE low >= high OR
		  process_id NOT IN (SELECT id FROM processes)") == 0 ]] || fail "bad rows"
	# A frame's address + its module's base is a run-time address inside
	# the module: what re-symbolizing needs.
	[[ $(sql "SELECT count(*) FROM frames f JOIN modules m ON m.path = f.module
		  WHERE f.address + m.base < m.low OR f.address + m.base >= m.high") == 0 ]] ||
		fail "a frame outside its module"
	[[ $(sql "SELECT count(*) FROM frames f JOIN modules m ON m.path = f.module") -gt 0 ]] ||
		fail "no frame of a recorded module"
	# The header in words, with the database's own counts.
	stacks=$(sql "SELECT count(*) FROM samples s LEFT JOIN stacks k ON k.id = s.stack_id
		      LEFT JOIN frames f ON f.id = k.frame_id LEFT JOIN strings n
		      ON n.id = f.function
		      WHERE n.text IS NULL OR n.text != '[thread ended between ticks]'")
	periods=$(sql "SELECT sum(1 + overrun) FROM samples")
	head -1 "$RUN/flat.txt" | grep -q "^$stacks call stacks\{0,1\} sampled from $periods CPU-time periods\{0,1\} of 1 ms" ||
		fail "header: $(head -1 "$RUN/flat.txt") (want $stacks stacks, $periods periods)"
	;;
vdso)
	# A program that spends its time in the vdso's clock_gettime: the top
	# function is the vdso's own name for it (__vdso_clock_gettime on
	# x86-64, __kernel_clock_gettime on arm64), in module [vdso], not the
	# bare "[vdso]"; and the vdso's module row has its build-id.
	run_sample -- "$PROG" 20
	[[ $STATUS == 0 ]] || fail "exit status $STATUS"
	check_outputs
	"$KSCOPE" report "$RUN" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
top = d["functions"][0]
print("top:", top["function"], top["module_path"], "%.1f%%" % top["self_pct"])
assert top["module_path"] == "[vdso]", top
assert top["function"] != "[vdso]" and "clock_gettime" in top["function"], top
'
	bid=$(sql "SELECT b.text FROM modules m JOIN strings s ON s.id = m.path
		   JOIN strings b ON b.id = m.build_id WHERE s.text = '[vdso]'")
	[[ "$bid" =~ ^[0-9a-f]{16,}$ ]] || fail "vdso build-id '$bid'"
	;;
deep_tree)
	# A call path 5,000 frames deep in profile.db (a real run's database
	# with one chain added by hand: deep recursion or nested regions give
	# the same) goes through every report and export.  The call tree was
	# printed by a recursion with some 12 KB of locals a level, which
	# overflowed the stack at about 700 levels; its JSON was dumped by
	# jansson's recursion, which overflows at some 1,600 levels per MiB of
	# stack.  Now both walk the tree with a stack of their own: they also
	# run within a 1 MiB stack.
	run_sample -- "$EX/cpu_split" 0.2
	[[ $STATUS == 0 ]] || fail "exit status $STATUS"
	cp "$RUN/profile.db" deep.db
	chmod u+w deep.db
	python3 - deep.db 5000 <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
depth = int(sys.argv[2])
sid = con.execute("SELECT max(id) + 1 FROM strings").fetchone()[0]
con.execute("INSERT INTO strings VALUES (?, 'deep')", (sid,))
mod = con.execute("SELECT module FROM frames LIMIT 1").fetchone()[0]
fid = con.execute("SELECT max(id) + 1 FROM frames").fetchone()[0]
con.execute("INSERT INTO frames VALUES (?, ?, NULL, 0, ?, 4096, 0)", (fid, sid, mod))
first = con.execute("SELECT max(id) + 1 FROM stacks").fetchone()[0]
for i in range(depth):
    con.execute("INSERT INTO stacks VALUES (?, ?, ?)",
                (first + i, first + i - 1 if i else None, fid))
ts = con.execute("SELECT max(ts_ns) FROM samples").fetchone()[0]
con.execute("""INSERT INTO samples VALUES ((SELECT max(id) + 1 FROM samples), ?, 0, ?,
               0, 0, 0, 0, 0)""", (ts, first + depth - 1))
con.execute("UPDATE threads SET samples = samples + 1 WHERE id = 0")
con.commit()
PY
	# check_deep FILE FORMAT: the chain of 'deep' frames is all there.
	check_deep() {
		python3 - "$1" "$2" 5000 <<'PY'
import json, sys
path, fmt, depth = sys.argv[1], sys.argv[2], int(sys.argv[3])
if fmt == "text":
    rows = [l for l in open(path) if l.rstrip().endswith("deep [cpu_split]")]
    ind = sorted(len(l) - len(l.lstrip()) for l in (r[15:] for r in rows))
    assert len(rows) == depth, len(rows)
    assert ind == list(range(0, 2 * depth, 2)), ind[:5]
else:
    sys.setrecursionlimit(4 * depth + 1000)
    d = json.load(open(path))
    node = next(r for r in d["roots"] if r["function"] == "deep")
    n = 1
    while node["children"]:
        assert len(node["children"]) == 1 and node["more"] is None
        node = node["children"][0]
        n += 1
    assert n == depth and node["self"] == 1 and node["function"] == "deep", (n, node)
PY
	}
	for stack in "$(ulimit -s)" 1024; do
		(ulimit -s $stack && "$KSCOPE" report deep.db --tree --min-pct 0 >tree.txt) ||
			fail "report --tree, stack $stack: exit $?"
		check_deep tree.txt text || fail "tree.txt, stack $stack"
		(ulimit -s $stack && "$KSCOPE" report deep.db --tree --min-pct 0 --format json >tree.json) ||
			fail "report --tree --format json, stack $stack: exit $?"
		check_deep tree.json json || fail "tree.json, stack $stack"
		# The other reports and the exports walk call paths too.
		for args in "" "--threads" "--format json" "--format folded" \
			    "--format speedscope" "--format pprof --output p$stack.pb.gz"; do
			# shellcheck disable=SC2086
			(ulimit -s $stack && "$KSCOPE" report deep.db $args >out.txt) ||
				fail "report $args, stack $stack: exit $?"
		done
	done
	"$KSCOPE" report deep.db --format folded >folded.txt
	grep -qx "$(printf 'deep;%.0s' $(seq 4999))deep 1" folded.txt ||
		fail "the folded stack of the deep path is missing"
	# The viewer's Profile page gets the tree cut at 400 levels, and
	# says where (jansson, which the viewer parses with, nests at most
	# 2048 values: the whole path could not load at all).
	python3 - "$(cd "$(dirname "$0")/../../view" && pwd)" "$KSCOPE" deep.db <<'PY' || fail "the viewer's deep tree"
import json, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/..")
from viewer import Viewer
with Viewer(sys.argv[2], sys.argv[3]) as v:
    tree = v.ok("profile", "profile/tree", {"minPct": 0})
    depth, node = 0, {"children": tree["roots"]}
    while node["children"]:
        node = max(node["children"], key=lambda n: n["total"] if n["function"] == "deep" else -1)
        depth += node["function"] == "deep"
    assert tree["max_depth"] == 400, tree["max_depth"]
    assert depth == 400, depth
PY
	# --depth still cuts the deep path.
	[[ $("$KSCOPE" report deep.db --tree --min-pct 0 --depth 3 --format json |
	     python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)).count("\"deep\""))') == 3 ]] ||
		fail "--depth 3 did not cut the deep path"
	;;
limits)
	# --tids, --periods and --counters: whatever the checker accepts the
	# runtime applies, and what the runtime could not hold is refused
	# (exit 2, the limit in the message, nothing run) instead of being
	# dropped in the program, which then sampled everything.
	odd() { python3 -c "import sys; print(','.join(str(2 * i + 1) for i in range(int(sys.argv[1]))))" "$1"; }
	late() { python3 -c "import sys; print(' '.join(['realtime:100:1:1'] * int(sys.argv[1])))" "$1"; }
	# refused ARGS... -- EXPECTED: exit 2, the message has EXPECTED and
	# 'accepted', the program did not run.
	refused() {
		local args=() want
		while [[ $1 != -- ]]; do args+=("$1"); shift; done
		want=$2
		set +e
		"$KSCOPE" sample -o refused "${args[@]}" -- sh -c 'echo ran' >stdout 2>err
		st=$?
		set -e
		[[ $st == 2 ]] || fail "${args[*]:0:2}: exit $st: $(cat err)"
		grep -qF -- "$want" err || fail "${args[*]:0:2}: no '$want' in: $(cat err)"
		grep -q accepted err || fail "${args[*]:0:2}: no 'accepted' in: $(cat err)"
		[[ ! -s stdout && ! -e refused ]] || fail "${args[*]:0:2}: the program ran"
	}
	# samples: the run's sample count.
	samples() { sql "SELECT count(*) FROM samples"; }
	# At the bounds the runtime applies the filter: 64 ranges and the
	# largest index, none of them thread 0, leave the one-thread
	# cpu_split unsampled; so do 16 windows that open after 100 s, and
	# one that opens after the longest delay.
	run_sample --tids "$(odd 64)" -- "$EX/cpu_split" 0.3
	[[ $STATUS == 0 && $(samples) == 0 ]] || fail "64 tid ranges: status $STATUS, $(samples) samples"
	run_sample --tids 4294967295 -- "$EX/cpu_split" 0.3
	[[ $STATUS == 0 && $(samples) == 0 ]] || fail "tid 4294967295: $(samples) samples"
	run_sample --periods "$(late 16)" -- "$EX/cpu_split" 0.3
	[[ $STATUS == 0 && $(samples) == 0 ]] || fail "16 periods: $(samples) samples"
	run_sample --periods cputime:1000000000:1:18446744073709551615 -- "$EX/cpu_split" 0.3
	[[ $STATUS == 0 && $(samples) == 0 ]] || fail "the longest delay: $(samples) samples"
	# The design's own example is accepted (its windows open after 10 s).
	run_sample --periods "realtime:10:1:5 process_cputime:10:2:20" -- "$EX/cpu_split" 0.2
	[[ $STATUS == 0 && $(samples) == 0 ]] || fail "the design's example: status $STATUS, $(samples) samples"
	grep -q "no samples: the time windows" stderr || fail "0 samples in closed windows, without a word: $(cat stderr)"
	# The periods start after --delay: 0.75-1.0 s is sampled.
	run_sample --delay 0.5 --periods realtime:0.25:0.25:1 -- "$EX/cpu_split" 1.2
	[[ $STATUS == 0 && $(samples) -gt 0 ]] || fail "--delay 0.5 --periods realtime:0.25:0.25:1: $(samples) samples"
	# ... and a control: the same program without a filter is sampled.
	run_sample -- "$EX/cpu_split" 0.3
	[[ $(samples) -gt 0 ]] || fail "cpu_split was not sampled at all"
	# 8 counters are all recorded (those this machine lacks as not
	# supported); names are known ones (the counters scenario), so the
	# 31-byte bound is checked past its limit only.
	long31=abcdefghijklmnopqrstuvwxyz01234
	eight=cycles,instructions,cache-references,cache-misses,branch-instructions,branch-misses,page-faults,context-switches
	run_sample --counters "$eight" -- "$EX/cpu_split" 0.2
	[[ $(sql "SELECT count(*) FROM counter_names") == 8 ]] || fail "8 counters: $(sql 'SELECT count(*) FROM counter_names') recorded"
	# Past the bounds: refused.
	refused --tids "$(odd 65)" -- "at most 64"
	refused --tids 1,99999999999999999999 -- "0 to 4294967295"
	refused --tids 4294967296 -- "0 to 4294967295"
	refused --tids 0-4294967296 -- "0 to 4294967295"
	refused --periods "$(late 17)" -- "at most 16"
	refused --periods cputime:1e10:1:1 -- "0 to 1000000000 seconds"
	refused --periods cputime:1000000000.5:1:1 -- "0 to 1000000000 seconds"
	refused --periods realtime:0:1e10:1 -- "0 to 1000000000 seconds"
	refused --periods realtime:0:nan:1 -- "a decimal from 0 to 1000000000"
	refused --periods realtime:0:1:18446744073709551616 -- "to 18446744073709551615"
	# Windows that can never open, and clocks the design names but
	# windows cannot use.
	refused --periods "realtime:1:1:0 realtime:0:1:1" -- "period 2 never starts"
	refused --duration 1 --periods "realtime:0.5:1:1 monotonic:0.6:1:1" -- \
		"period 2 never opens: it would open 2.1 s after the delay"
	refused --duration 2 --periods "realtime:2:1:1" -- "period 1 never opens"
	refused --periods "thread_cputime:1:1:1" -- "thread_cputime is not supported"
	refused --periods "walltime:1:1:1" -- "unknown clock 'walltime'"
	refused --counters "$eight,task-clock" -- "at most 8"
	refused --counters "${long31}5" -- "at most 31 bytes"
	# The environment variables go through the same checks.
	set +e
	KSCOPE_TIDS=$(odd 65) "$KSCOPE" sample -o refused -- true 2>err
	st=$?
	set -e
	[[ $st == 2 ]] && grep -q "at most 64" err || fail "KSCOPE_TIDS: exit $st: $(cat err)"
	;;
mpi)
	command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 0; }
	[[ -x "$EX/mpi_ring" ]] || { echo "no mpi_ring: skipped"; exit 0; }
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	mpirun --oversubscribe -n 2 "$KSCOPE" sample -o out -- "$EX/mpi_ring" >stdout 2>stderr ||
		{ cat stdout stderr >&2; fail "mpirun failed"; }
	dirs=(out/sample_*)
	[[ ${#dirs[@]} == 1 ]] || fail "ranks wrote ${#dirs[@]} directories: ${dirs[*]}"
	[[ -f "${dirs[0]}/rank0/profile.db" && -f "${dirs[0]}/rank1/profile.db" ]] ||
		fail "rank directories missing: $(ls -R out)"
	"$KSCOPE" merge "${dirs[0]}" >merge.out 2>&1 || { cat merge.out >&2; fail "merge failed"; }
	RUN=${dirs[0]}
	[[ $(sql "SELECT count(DISTINCT rank) FROM processes") == 2 ]] || fail "merged ranks"
	[[ $(sql "SELECT count(*) FROM regions WHERE kind = 2") -gt 0 ]] || fail "no MPI slices"
	protoc --decode_raw <"$RUN/trace.perfetto-trace" >/dev/null || fail "merged trace"
	;;
counters)
	# One counter table for avail, the checker and the runtime: a name
	# the checker does not know is refused with the known ones listed...
	set +e
	"$KSCOPE" sample --counters bogus -o out -- true >stdout 2>stderr
	st=$?
	set -e
	[[ $st == 2 ]] || { cat stderr >&2; fail "--counters bogus: exit $st, expected 2"; }
	grep -q "option --counters: unknown counter 'bogus'; accepted: .*context-switches.*cpu-migrations" stderr ||
		{ cat stderr >&2; fail "--counters bogus: no list of the known counters"; }
	[[ ! -e out ]] || fail "--counters bogus: something ran"
	# ...and every software counter avail says works, the runtime opens.
	"$KSCOPE" avail --counters --format json >avail.json
	sw=$(python3 -c '
import json, sys
d = json.load(open("avail.json"))
print(",".join(c["name"] for c in d["counters"] if c["group"] == "software" and c["available"]))')
	[[ -n "$sw" ]] || fail "avail --counters lists no software counter that works here"
	# A sleeping program woken by the real-time sampler context-switches
	# at every sample: context-switches counts in the kernel, and must
	# not read 0.  Hardware counters are asked for too: this machine may
	# lack them, which is recorded, never a failure.
	run_sample --samplers realtime -F 200 --counters "$sw,cycles" -- sleep 0.5
	[[ $STATUS == 0 ]] || { cat stderr >&2; fail "exit status $STATUS"; }
	for c in ${sw//,/ }; do
		[[ $(sql "SELECT count(*) FROM counter_names n JOIN strings s ON s.id = n.name
			  WHERE s.text = '$c'") == 1 ]] ||
			fail "avail says $c works, but the run recorded: $(sql "SELECT group_concat(s.text, ' | ') FROM counter_names n JOIN strings s ON s.id = n.name")"
	done
	cs=$(sql "SELECT max(v.value) FROM sample_counters v JOIN counter_names n ON n.id = v.counter_id
		  JOIN strings s ON s.id = n.name WHERE s.text = 'context-switches'")
	[[ -n "$cs" && "$cs" -gt 0 ]] || fail "context-switches read ${cs:-nothing} in a sleeping program"
	cyc=$(sql "SELECT s.text FROM counter_names n JOIN strings s ON s.id = n.name WHERE s.text LIKE 'cycles%'")
	[[ "$cyc" == cycles || "$cyc" == "cycles (not supported: "* ]] || fail "cycles recorded as '$cyc'"
	# The --counters view: per function and per line, text and JSON.
	"$KSCOPE" report --counters "$RUN" >counters.txt
	grep -q '^counter context-switches: [1-9][0-9]* events' counters.txt || { cat counters.txt >&2; fail "report --counters: no context switches"; }
	grep -q '^By function:' counters.txt && grep -q '^By line:' counters.txt || fail "report --counters: sections"
	"$KSCOPE" report --counters --format json "$RUN" >counters.json
	python3 - counters.json "$cs" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["report"] == "counters", d["report"]
names = {c["name"]: c for c in d["counters"]}
assert names["context-switches"]["supported"], names
assert names["cycles"]["supported"] == (names["cycles"]["note"] is None), names["cycles"]
total = d["totals"]["context-switches"]
# One thread: the deltas add up to its last running total.
assert total == int(sys.argv[2]), (total, sys.argv[2])
per_func = sum(f["counters"]["context-switches"] for f in d["functions"])
assert 0 < per_func <= total, (per_func, total)
assert all("counters" in f and "self" in f for f in d["functions"]), d["functions"][:1]
per_line = sum(l["counters"]["context-switches"] for l in d["lines"])
assert per_line <= per_func, (per_line, per_func)
PY
	# Without counters, the view is refused with what to do.
	run_sample -- "$EX/cpu_split" 0.2
	set +e
	"$KSCOPE" report --counters "$RUN" >stdout 2>stderr
	st=$?
	set -e
	[[ $st == 2 ]] && grep -q "option --counters: the profile has no per-sample counters" stderr ||
		{ cat stderr >&2; fail "report --counters without counters: exit $st"; }
	# Where perf_event_paranoid forbids kernel-side counting (2 and more,
	# without CAP_PERFMON or CAP_SYS_ADMIN), the counter is recorded as
	# not allowed, with the level, instead of reading 0.
	# capsh drops the two from the bounding set, which takes them from
	# root too at the exec of the shell it starts.
	drop="capsh --drop=cap_perfmon,cap_sys_admin --"
	if [[ $(cat /proc/sys/kernel/perf_event_paranoid) -ge 2 ]] && command -v capsh >/dev/null &&
	   $drop -c true 2>/dev/null; then
		$drop -c '"$0" sample -o out2 --samplers realtime --counters context-switches -- sleep 0.2' \
			"$KSCOPE" >stdout 2>stderr || { cat stderr >&2; fail "unprivileged run failed"; }
		RUN=$(sed -n 's/^results: //p' stderr)
		note=$(sql "SELECT s.text FROM counter_names n JOIN strings s ON s.id = n.name")
		[[ "$note" == "context-switches (not supported: not allowed: it counts in the kernel, and kernel.perf_event_paranoid is "* ]] ||
			fail "unprivileged context-switches recorded as '$note'"
		echo "unprivileged: $note"
	fi
	;;
*)
	fail "unknown scenario $SCENARIO"
	;;
esac
echo "ok: $SCENARIO"
