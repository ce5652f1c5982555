#!/usr/bin/env python3
"""kscope causal end to end (docs/causal.md).

Each scenario builds programs of examples/causal/ into a temporary
directory with gcc, runs them natively and under `kscope causal`, and
checks:

  balance   two threads meet at a barrier each round, line A's work twice
            line B's: the program speedup predicted for line A at 25% and
            50% is within 5 points of the real speedup, measured in the
            same run by builds with A's work cut to 75% and 50%; line B's
            prediction at 50% is within 5 points of 0; without
            --fixed-line, line A ranks above line B
  pipeline  a producer and a consumer through a queue under a mutex and
            condition variables (the blocking and waking calls): the
            same checks for the consumer's and the producer's lines
  offpath   the hottest line off the critical path (offpath.c: a helper
            thread runs line H all the time, the main thread's rounds
            are line M then a wait): H has more samples than M, yet
            line M ranks above line H; M at 50% is within 5 points of
            the real speedup of a build with M's work halved, H at 50%
            within 5 points of 0
  coz       the same balance program built as coz needs (-gdwarf-3) with
            coz's COZ_PROGRESS_NAMED, run under coz and under kscope
            causal: with line A fixed, kscope's median error against the
            known answer min(s, 50%) is at most 2 points more than coz's
            (coz's estimates from its profile.coz, computed as its viewer
            does); kscope's profile.coz has coz's record types; on
            balance and pipeline, both tools choosing the lines
            themselves rank the critical path's line above the other
            (coz by its viewer's impact); on offpath kscope does, and
            coz's ranking is printed (it puts the off-path line first in
            4 of 14 runs here: docs/causal.md)
  endtoend  a batch program without progress points (serial.c, one
            thread, loop X three fifths of its time): --end-to-end --runs
            14 on loop X at 50% predicts within 6 points of the real
            speedup of a build with X's work halved; variants.tsv lists
            each run's variant and settings; without --end-to-end and
            with --runs 3, kscope warns and measures runs 2 and 3 end to
            end; --end-to-end --runs 1 is refused
  program   the program's stdout is its own, its exit status is kscope's;
            kscope report on the run prints its report.txt again;
            profile.db's curves are causal.csv's, with every experiment;
            --granularity function gives the busy function its curve;
            a program killed by a signal keeps the experiments it
            finished; a child made by fork() runs without experiments
            and the parent's experiments are recorded; a program with no
            progress point gets a warning naming the API; a program run
            beside more busy loops than CPUs, at a lower priority: each
            experiment records its thread's run-queue wait, and kscope
            warns that the threads waited for a CPU
  signals   a thread that wakes another (pthread_mutex_unlock) in a tight
            loop while owing delays, its own sampling signal arriving
            while it pays them, 100 us periods: each of 8 runs ends
            within 60 s (natively 0.1 s) with the program's output; a
            signal paying inside the wrapper's own payment once made the
            owed delay wrap round to a sleep of centuries
  errors    a program without line information, --fixed-line at a line
            without code (the nearest lines named) or in no file,
            --speedups out of range, a script, --fixed-function without
            --granularity function (and --fixed-line with it), a
            function name that is not one (similar names given),
            --functions and --lines that match nothing: exit 2, a clear
            message, no run directory

usage: test_causal.py KSCOPE EXAMPLES_DIR INCLUDE_DIR SCENARIO
"""
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

KSCOPE, EXAMPLES, INCLUDE, SCENARIO = sys.argv[1:5]
LIBDIR = os.path.join(os.path.dirname(os.path.abspath(KSCOPE)), "lib")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def build(tmp, src, out, *flags, user=True, debug="-g"):
    cmd = ["gcc", debug, "-O1", "-pthread", "-I" + INCLUDE, *flags,
           os.path.join(EXAMPLES, src), "-o", os.path.join(tmp, out)]
    if user:
        cmd += ["-L" + LIBDIR, "-lkscope-user", "-Wl,-rpath," + LIBDIR]
    subprocess.run(cmd, check=True)
    return os.path.join(tmp, out)


def line_of(src, marker):
    with open(os.path.join(EXAMPLES, src)) as f:
        for n, text in enumerate(f, 1):
            if marker in text:
                return n
    raise SystemExit(f"no '{marker}' in {src}")


def wall(cmd):
    """The median of three runs' wall times (seconds)."""
    import time
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def causal(tmp, args, prog_args, expect=0):
    out = os.path.join(tmp, "out")
    p = subprocess.run([KSCOPE, "causal", "-o", out, *args, "--", *prog_args],
                       capture_output=True, text=True)
    if p.returncode != expect:
        print(p.stderr)
    check(p.returncode == expect, f"kscope causal {' '.join(args)} exits {expect} "
          f"(got {p.returncode})")
    m = re.search(r"^results: (.*)$", p.stderr, re.M)
    return p, (m.group(1) if m else None)


def curves(rundir):
    """{(file basename, line): {line speedup: (program, lo, hi)}}."""
    res = {}
    with open(os.path.join(rundir, "causal.csv")) as f:
        for row in csv.DictReader(f):
            key = (os.path.basename(row["file"]), int(row["line"]))
            res.setdefault(key, {})[int(row["line_speedup_pct"])] = (
                float(row["program_speedup_pct"]),
                float(row["ci_low_pct"] or "nan"), float(row["ci_high_pct"] or "nan"))
    return res


def ranking(rundir):
    """The lines of causal.csv in rank order."""
    order = []
    with open(os.path.join(rundir, "causal.csv")) as f:
        for row in csv.DictReader(f):
            key = (os.path.basename(row["file"]), int(row["line"]))
            if key not in order:
                order.append(key)
    return order


def known_answer(tmp, src, fast, slow, cut, count, label):
    """The checks balance and pipeline share: fast is the marker of the
    line on the critical path, slow of the other; cut the macro that cuts
    the critical line's work; count the program's argument."""
    fast_line, slow_line = line_of(src, fast), line_of(src, slow)
    base = os.path.splitext(src)[0]
    progs = {p: build(tmp, src, f"{base}_{p}", f"-D{cut}={p}") for p in (100, 75, 50)}
    # The real speedups: the same program with the line's work cut.
    t = {p: wall([progs[p], str(count // 4)]) for p in (100, 75, 50)}
    real = {25: 100 * (1 - t[75] / t[100]), 50: 100 * (1 - t[50] / t[100])}
    print(f"real speedups of {src}: 25% -> {real[25]:.1f}%, 50% -> {real[50]:.1f}%")
    p, rundir = causal(tmp, ["--fixed-line", f"{src}:{fast_line}", "--speedups", "0,25,50",
                             "--experiment-ms", "100"],
                       [progs[100], str(count)])
    if not rundir:
        return
    c = curves(rundir).get((src, fast_line), {})
    for s in (25, 50):
        pred = c.get(s, (float("nan"),))[0]
        check(abs(pred - real[s]) <= 5, f"{label}: {src}:{fast_line} at {s}%: predicted "
              f"{pred:.1f}%, real {real[s]:.1f}% (within 5 points)")
    shutil.rmtree(os.path.join(tmp, "out"))
    p, rundir = causal(tmp, ["--fixed-line", f"{src}:{slow_line}", "--speedups", "0,50",
                             "--experiment-ms", "100"], [progs[100], str(count)])
    if not rundir:
        return
    pred = curves(rundir).get((src, slow_line), {}).get(50, (float("nan"),))[0]
    check(abs(pred) <= 5, f"{label}: {src}:{slow_line} (off the critical path) at 50%: "
          f"predicted {pred:.1f}%, real 0 (within 5 points)")
    shutil.rmtree(os.path.join(tmp, "out"))
    p, rundir = causal(tmp, ["--speedups", "0,50", "--experiment-ms", "100"],
                       [progs[100], str(count)])
    if not rundir:
        return
    order = ranking(rundir)
    check((src, fast_line) in order and
          ((src, slow_line) not in order or
           order.index((src, fast_line)) < order.index((src, slow_line))),
          f"{label}: lines drawn from the samples: {src}:{fast_line} ranks above "
          f"{src}:{slow_line} ({order[:4]})")


def coz_throughput(path):
    """profile.coz's throughput measurements: (selected "file:line",
    speedup in percent, the experiment's duration, the point's delta),
    one per throughput-point record after its experiment."""
    out, selected = [], None
    with open(path) as f:
        for text in f:
            fields = text.rstrip("\n").split("\t")
            kv = dict(x.split("=", 1) for x in fields[1:] if "=" in x)
            if fields[0] == "experiment":
                selected = (kv["selected"], round(float(kv["speedup"]) * 100),
                            int(kv["duration"]))
            elif fields[0] == "throughput-point" and selected:
                out.append((*selected, int(kv["delta"])))
    return out


def coz_speedups(path, line):
    """coz's own estimate per speedup for the line, from its profile.coz:
    per speedup the summed duration over the summed visits of the point,
    against the 0% experiments' (any line; with --fixed-line every
    experiment is the line's, as in coz's viewer)."""
    sums = {}
    for sel, s, duration, delta in coz_throughput(path):
        key = (sel, s) if s else ("*", 0)
        d, v = sums.get(key, (0, 0))
        sums[key] = (d + duration, v + delta)
    base = sums.get(("*", 0))
    out = {}
    for (sel, s), (d, v) in sums.items():
        if sel.endswith(f":{line}") and s and base and v and base[1]:
            p0, ps = base[0] / base[1], d / v
            out[s] = 100 * (p0 - ps) / p0
    return out


def coz_impact(path, line):
    """The line's "impact", by which coz's viewer sorts its plots
    (viewer/ts/profile.ts in coz's sources): the line's experiments
    summed per speedup, each speedup's program speedup against the line's
    own 0% experiments (values outside -100%..200% dropped, as the viewer
    does), then the largest area under the curve from 0 to a speedup s
    over s.  None when the line has no 0% experiment or no other."""
    sums = {}
    for sel, s, duration, delta in coz_throughput(path):
        if sel.endswith(f":{line}"):
            d, v = sums.get(s, (0, 0))
            sums[s] = (d + duration, v + delta)
    if not sums.get(0, (0, 0))[1]:
        return None
    p0 = sums[0][0] / sums[0][1]
    curve = [(s / 100, (p0 - d / v) / p0) for s, (d, v) in sorted(sums.items()) if v]
    curve = [(s, y) for s, y in curve if -1 <= y <= 2]
    if len(curve) < 2:
        return None
    best, area = 0.0, 0.0
    for (s0, y0), (s1, y1) in zip(curve, curve[1:]):
        area += (y0 + y1) / 2 * (s1 - s0)
        best = max(best, area / s1)
    return round(100 * best, 1)


def scenario_balance(tmp):
    known_answer(tmp, "balance.c", "/* line A */", "/* line B */", "A_PERCENT", 1200,
                 "barrier")


def scenario_pipeline(tmp):
    known_answer(tmp, "pipeline.c", "/* consumer */", "/* producer */", "C_PERCENT", 1200,
                 "mutex and condition variables")


def samples_of(rundir):
    """{(file basename, line): samples} from report.txt's curve headers."""
    out = {}
    with open(os.path.join(rundir, "report.txt")) as f:
        for text in f:
            m = re.match(r"^(\S+):(\d+)(?: in .*?)?  impact .*\((\d+) samples\)", text)
            if m:
                out[(os.path.basename(m.group(1)), int(m.group(2)))] = int(m.group(3))
    return out


def scenario_offpath(tmp):
    m, h = line_of("offpath.c", "/* line M */"), line_of("offpath.c", "/* line H */")
    prog = build(tmp, "offpath.c", "offpath")
    half = build(tmp, "offpath.c", "offpath50", "-DM_PERCENT=50")
    t = wall([prog, "150"]), wall([half, "150"])
    real = 100 * (1 - t[1] / t[0])
    print(f"real speedup of offpath.c with line M halved: {real:.1f}%")
    p, rundir = causal(tmp, ["--speedups", "0,50", "--experiment-ms", "100"], [prog, "600"])
    if rundir:
        order, smp = ranking(rundir), samples_of(rundir)
        check(smp.get(("offpath.c", h), 0) > smp.get(("offpath.c", m), 0),
              f"line H has more samples than line M ({smp})")
        check(("offpath.c", m) in order and
              (("offpath.c", h) not in order or
               order.index(("offpath.c", m)) < order.index(("offpath.c", h))),
              f"line M ranks above line H, the hottest ({order[:4]})")
    for line, want, what in ((m, real, f"real {real:.1f}%"), (h, 0.0, "real 0")):
        shutil.rmtree(os.path.join(tmp, "out"))
        p, rundir = causal(tmp, ["--fixed-line", f"offpath.c:{line}", "--speedups", "0,50",
                                 "--experiment-ms", "100"], [prog, "400"])
        if not rundir:
            continue
        pred = curves(rundir).get(("offpath.c", line), {}).get(50, (float("nan"),))[0]
        check(abs(pred - want) <= 5, f"offpath.c:{line} at 50%: predicted {pred:.1f}%, "
              f"{what} (within 5 points)")


def scenario_endtoend(tmp):
    x = line_of("serial.c", "/* loop X */")
    prog = build(tmp, "serial.c", "serial", user=False)
    half = build(tmp, "serial.c", "serial50", "-DX_PERCENT=50", user=False)
    t = wall([prog, "150"]), wall([half, "150"])
    real = 100 * (1 - t[1] / t[0])
    print(f"real speedup of serial.c with loop X halved: {real:.1f}%")
    p, rundir = causal(tmp, ["--end-to-end", "--runs", "14", "--fixed-line",
                             f"serial.c:{x}", "--speedups", "0,50"], [prog, "150"])
    if not rundir:
        return
    c = curves(rundir).get(("serial.c", x), {})
    pred = c.get(50, (float("nan"),))[0]
    check(abs(pred - real) <= 6, f"serial.c:{x} at 50%, end to end: predicted "
          f"{pred:.1f}%, real {real:.1f}% (within 6 points)")
    with open(os.path.join(rundir, "variants.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    check(len(rows) == 14 and all(r[1] == "end-to-end" for r in rows) and
          sum(r[3] == "50" for r in rows) == 7 and
          all(f"KSCOPE_CAUSAL_RT_FIXED_LINE=" in r[4] for r in rows if r[3] == "50"),
          f"variants.tsv: 14 end-to-end runs, 7 at 50% with their line ({rows[:3]})")
    shutil.rmtree(os.path.join(tmp, "out"))
    p, rundir = causal(tmp, ["--runs", "3", "--experiment-ms", "50"], [prog, "60"])
    check("no throughput progress point: the 2 runs left each measure the whole" in
          p.stderr, "without --end-to-end: kscope warns and measures the runs left "
          "end to end")
    if rundir:
        with open(os.path.join(rundir, "variants.tsv")) as f:
            modes = [line.split("\t")[1] for line in f][1:]
        check(modes == ["experiments", "end-to-end", "end-to-end"],
              f"variants.tsv: run 1 experiments, runs 2 and 3 end to end ({modes})")
    shutil.rmtree(os.path.join(tmp, "out"))
    p, rundir = causal(tmp, ["--end-to-end"], [prog, "10"], expect=2)
    check("option --end-to-end" in p.stderr and "--runs" in p.stderr,
          "--end-to-end without --runs: exit 2 naming --runs")


def scenario_coz(tmp):
    coz = shutil.which("coz")
    check(coz is not None, "coz is installed (scripts/install-deps.sh: coz-profiler)")
    if not coz:
        return
    a = line_of("balance.c", "/* line A */")
    b = line_of("balance.c", "/* line B */")
    prog = build(tmp, "balance.c", "balance_coz", "-DUSE_COZ", "-ldl", user=False,
                 debug="-gdwarf-3")
    # coz writes profile.coz in its working directory.
    cozdir = os.path.join(tmp, "coz")
    os.mkdir(cozdir)
    p = subprocess.run([coz, "run", "--fixed-line", f"{EXAMPLES}/balance.c:{a}", "---",
                        prog, "1500"], cwd=cozdir, capture_output=True, text=True)
    check(p.returncode == 0, f"coz run exits 0 (got {p.returncode})")
    cz = coz_speedups(os.path.join(cozdir, "profile.coz"), a)
    print(f"coz's estimates for balance.c:{a}: " +
          ", ".join(f"{s}% -> {v:.1f}%" for s, v in sorted(cz.items())))
    check(len(cz) >= 3, f"coz recorded experiments at 3 or more speedups ({len(cz)})")
    p, rundir = causal(tmp, ["--fixed-line", f"balance.c:{a}", "--speedups",
                             "0,25,50,75,100", "--experiment-ms", "100"], [prog, "1500"])
    if not rundir:
        return
    ks = curves(rundir).get(("balance.c", a), {})
    print(f"kscope's estimates for balance.c:{a}: " +
          ", ".join(f"{s}% -> {v[0]:.1f}%" for s, v in sorted(ks.items()) if s))
    # Each tool against the known answer, min(s, 50): the median error
    # over the speedups it measured (coz draws its own, in steps of 5,
    # mostly one experiment each, so single points of its are noisy).
    known = lambda s: min(s, 50)
    err_cz = statistics.median(abs(v - known(s)) for s, v in cz.items()) if cz else 99
    err_ks = statistics.median(abs(v[0] - known(s)) for s, v in ks.items() if s) \
        if len(ks) > 1 else 99
    check(err_ks <= err_cz + 2, f"balance.c:{a}: kscope's median error against the known "
          f"answer {err_ks:.1f} points, coz's {err_cz:.1f} (kscope's at most 2 more)")
    with open(os.path.join(rundir, "profile.coz")) as f:
        kinds = {line.split("\t", 1)[0] for line in f}
    check({"startup", "experiment", "throughput-point", "samples", "runtime"} <= kinds,
          f"kscope's profile.coz has coz's record types ({sorted(kinds)})")
    # Each program of known answer, under both tools choosing the lines
    # themselves: both rank the line on the critical path above the other.
    os.remove(os.path.join(cozdir, "profile.coz"))
    for src, top, other, args in (("balance.c", "/* line A */", "/* line B */", "1500"),
                                  ("pipeline.c", "/* consumer */", "/* producer */", "1000"),
                                  ("offpath.c", "/* line M */", "/* line H */", "1500")):
        t, o = line_of(src, top), line_of(src, other)
        cprog = build(tmp, src, os.path.splitext(src)[0] + "_coz", "-DUSE_COZ", "-ldl",
                      user=False, debug="-gdwarf-3")
        shutil.rmtree(os.path.join(tmp, "out"), ignore_errors=True)
        p, rundir = causal(tmp, ["--speedups", "0,50", "--experiment-ms", "100"],
                           [cprog, args])
        if rundir:
            order = ranking(rundir)
            check((src, t) in order and
                  ((src, o) not in order or order.index((src, t)) < order.index((src, o))),
                  f"kscope ranks {src}:{t} above {src}:{o} ({order[:3]})")
        # coz draws lines from its samples and speedups at random, with
        # experiments of 500 ms: a run may give a line no experiment at 0%
        # or above.  Its runs accumulate in profile.coz; up to three until
        # both lines have a curve.  Its ranking is its viewer's.
        for _ in range(3):
            subprocess.run([coz, "run", "---", cprog, args], cwd=cozdir,
                           capture_output=True, text=True)
            ct, co = (coz_impact(os.path.join(cozdir, "profile.coz"), x) for x in (t, o))
            if ct is not None and co is not None:
                break
        agree = ct is not None and (co is None or ct > co)
        if src == "offpath.c" and not agree:
            # A documented difference (docs/causal.md, "coz"): coz's
            # estimates for the off-path line H climb with the speedup,
            # where the known answer is 0, and outranked M in 4 of 14
            # of its runs; kscope's ranking is checked against the known
            # answer above.
            print(f"note coz ranks {src}:{o} above {src}:{t} (impact {co} against {ct}): "
                  f"the known difference on offpath")
        else:
            check(agree, f"coz ranks {src}:{t} above {src}:{o} too (its viewer's impact: "
                         f"{ct} against {co})")
        os.remove(os.path.join(cozdir, "profile.coz"))


def check_db(rundir):
    """profile.db: kscope causal's application_id, the curves table equal
    to causal.csv row for row, one experiments row per raw experiment."""
    import sqlite3
    db = sqlite3.connect(f"file:{os.path.join(rundir, 'profile.db')}?mode=ro", uri=True)
    check(db.execute("PRAGMA application_id").fetchone()[0] == 0x4b534343,
          "profile.db has kscope causal's application_id (KSCC)")
    rows = db.execute("SELECT c.point, l.file, l.line, c.line_speedup_pct, "
                      "c.program_speedup_pct, c.experiments, c.visits FROM curves c "
                      "JOIN lines l ON l.id = c.line ORDER BY c.rank, c.line_speedup_pct"
                      ).fetchall()
    with open(os.path.join(rundir, "causal.csv")) as f:
        want = [(r["point"], r["file"], int(r["line"]), int(r["line_speedup_pct"]),
                 float(r["program_speedup_pct"]), int(r["experiments"]), int(r["visits"]))
                for r in csv.DictReader(f)]
    same = len(rows) == len(want) and all(
        g[:4] == w[:4] and abs(g[4] - w[4]) <= 0.0015 and g[5:] == w[5:]
        for g, w in zip(rows, want))
    check(same and want, f"profile.db's curves are causal.csv's ({rows[:2]} against "
          f"{want[:2]})")
    raws = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(rundir, "raw")) for f in fs]
    exps = sum(open(r).read().count("experiment\t") for r in raws)
    n = db.execute("SELECT count(*) FROM experiments").fetchone()[0]
    check(n == exps, f"profile.db has every experiment ({n} of {exps})")
    db.close()


PROGRAM_C = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <kscope/user.h>
static volatile double sink;
__attribute__((noinline)) static void work(long n) { double x = 1; for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9; sink = x; }
int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";
	if (strcmp(mode, "fork") == 0 && fork() == 0) {
		for (int i = 0; i < 100; i++) { work(300000); kscope_progress("child"); }
		printf("child done\n");
		return 0;
	}
	for (int i = 0; i < 700; i++) {
		work(400000);
		if (strcmp(mode, "none") != 0)
			kscope_progress("step");
		if (strcmp(mode, "kill") == 0 && i == 500)
			raise(SIGTERM);
	}
	if (strcmp(mode, "fork") == 0)
		wait(NULL);
	printf("out: %s line 1\nout: line 2\n", mode);
	return strcmp(mode, "plain") == 0 ? 3 : 0;
}
"""


def scenario_program(tmp):
    src = os.path.join(tmp, "prog.c")
    with open(src, "w") as f:
        f.write(PROGRAM_C)
    prog = os.path.join(tmp, "prog")
    subprocess.run(["gcc", "-g", "-O1", "-I" + INCLUDE, src, "-o", prog, "-L" + LIBDIR,
                    "-lkscope-user", "-Wl,-rpath," + LIBDIR], check=True)
    native = subprocess.run([prog, "plain"], capture_output=True, text=True)
    p, rundir = causal(tmp, ["--experiment-ms", "50"], [prog, "plain"], expect=3)
    check(p.stdout == native.stdout, "the program's stdout is its own, unchanged")
    if rundir:
        with open(os.path.join(rundir, "report.txt")) as f:
            report = f.read()
        check("prog.c:" in report, "report.txt ranks lines of prog.c")
        check_db(rundir)
        r = subprocess.run([KSCOPE, "report", rundir], capture_output=True, text=True)
        check(r.returncode == 0 and r.stdout == report,
              f"kscope report on the run prints report.txt again from the raw files "
              f"(exit {r.returncode})")
        r = subprocess.run([KSCOPE, "report", "--tree", rundir], capture_output=True,
                           text=True)
        check(r.returncode == 2 and "kscope causal run" in r.stderr,
              "kscope report --tree on a causal run: exit 2, the options do not apply")
    shutil.rmtree(os.path.join(tmp, "out"))
    p, rundir = causal(tmp, ["--experiment-ms", "50", "--granularity", "function",
                             "--speedups", "0,50"], [prog, "plain"], expect=3)
    if rundir:
        with open(os.path.join(rundir, "causal.csv")) as f:
            rows = list(csv.DictReader(f))
        check(rows and all(r["function"] == "work" for r in rows) and
              "prog.c:" in open(os.path.join(rundir, "report.txt")).read(),
              f"--granularity function: the one busy function, work, has the curve "
              f"({sorted({r['function'] for r in rows})})")
        with open(os.path.join(rundir, "lines.tsv")) as f:
            names = [line.rstrip("\n").split("\t")[3] for line in f][1:]
        check("work" in names and "main" in names and "" not in names,
              f"lines.tsv by function: one entry per function ({names})")
    shutil.rmtree(os.path.join(tmp, "out"))
    p, rundir = causal(tmp, ["--experiment-ms", "50"], [prog, "kill"], expect=128 + 15)
    check("signal 15" in p.stderr, "kscope says the program was ended by signal 15")
    if rundir:
        raws = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(rundir, "raw"))
                for f in fs]
        exps = sum(open(r).read().count("\nexperiment\t") for r in raws)
        check(exps >= 2, f"the experiments finished before the signal are kept ({exps})")
        check(os.path.getsize(os.path.join(rundir, "causal.csv")) > 0 and
              "step" in open(os.path.join(rundir, "causal.csv")).read(),
              "causal.csv has the curves of the killed run")
    shutil.rmtree(os.path.join(tmp, "out"))
    p, rundir = causal(tmp, ["--experiment-ms", "50"], [prog, "fork"])
    check("child done" in p.stdout, "the forked child ran")
    if rundir:
        raws = [f for d, _, fs in os.walk(os.path.join(rundir, "raw")) for f in fs]
        check(len(raws) == 1, f"one raw file: the parent's; the child runs no experiments "
              f"({raws})")
        check("step" in open(os.path.join(rundir, "causal.csv")).read(),
              "the parent's progress point has curves")
    shutil.rmtree(os.path.join(tmp, "out"))
    p, rundir = causal(tmp, ["--experiment-ms", "50"], [prog, "none"])
    check("no throughput progress point" in p.stderr and "kscope_progress" in p.stderr,
          "a program without progress points: a warning naming the API")
    shutil.rmtree(os.path.join(tmp, "out"))
    # A machine short of CPUs: busy loops, one more than the CPUs, beside
    # a program run at a lower priority, which waits for a CPU most of
    # the time: the experiments record the wait, and kscope warns.
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range((os.cpu_count() or 1) + 1)]
    try:
        out = os.path.join(tmp, "out")
        p = subprocess.run(["nice", "-n", "5", KSCOPE, "causal", "-o", out,
                            "--experiment-ms", "50", "--", prog, "plain"],
                           capture_output=True, text=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    check(p.returncode == 3, f"under load: kscope causal exits 3 (got {p.returncode})")
    m = re.search(r"waited for a CPU (\d+)% of the time", p.stderr)
    check(m is not None and int(m.group(1)) > 10,
          f"under load: kscope warns that the threads waited for a CPU "
          f"({m.group(0) if m else p.stderr[-600:]})")
    m = re.search(r"^results: (.*)$", p.stderr, re.M)
    if m:
        r = subprocess.run([KSCOPE, "report", m.group(1)], capture_output=True, text=True)
        check(r.returncode == 0 and "waited for a CPU" in r.stderr,
              f"kscope report on the run warns too (exit {r.returncode}: {r.stderr[-300:]})")
    raws = [os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs
            if f.startswith("causal_") and f.endswith(".txt")]
    exps = [line for r in raws for line in open(r) if line.startswith("experiment\t")]
    check(exps and all("\tready_wait_ns=" in e and "\tthreads=1\n" in e for e in exps),
          f"every experiment records the run-queue wait of the program's one thread "
          f"({exps[:1]})")


WAKER_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <kscope/user.h>
static volatile int stop;
static volatile double sink;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void *hot(void *u)
{
	(void)u;
	while (!stop) {
		double x = 1;
		for (long i = 0; i < 100000; i++) x = x * 1.0000001 + 1e-9; /* line H */
		sink = x;
	}
	return NULL;
}
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	pthread_t t;
	pthread_create(&t, NULL, hot, NULL);
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
		if (i % 100 == 0)
			kscope_progress("wake");
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("waker: %ld\n", n);
	return 0;
}
"""


def scenario_signals(tmp):
    src = os.path.join(tmp, "waker.c")
    with open(src, "w") as f:
        f.write(WAKER_C)
    prog = os.path.join(tmp, "waker")
    subprocess.run(["gcc", "-g", "-O1", "-pthread", "-I" + INCLUDE, src, "-o", prog,
                    "-L" + LIBDIR, "-lkscope-user", "-Wl,-rpath," + LIBDIR], check=True)
    with open(src) as f:
        hot = next(n for n, t in enumerate(f, 1) if "/* line H */" in t)
    out = os.path.join(tmp, "out")
    ended = 0
    for k in range(8):
        try:
            p = subprocess.run([KSCOPE, "causal", "-o", out, "--fixed-line", f"waker.c:{hot}",
                                "--speedups", "0,100", "--period-us", "100",
                                "--experiment-ms", "20", "--", prog, "20000000"],
                               capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            check(False, f"run {k + 1}: kscope causal on a thread waking another while "
                         f"owing delays has not ended after 60 s")
            subprocess.run(["pkill", "-KILL", "-f", prog])
            break
        if p.returncode != 0 or p.stdout != "waker: 20000000\n":
            print(p.stderr)
        check(p.returncode == 0 and p.stdout == "waker: 20000000\n",
              f"run {k + 1}: exit {p.returncode}, the program's output {p.stdout!r}")
        ended += 1
        shutil.rmtree(out, ignore_errors=True)
    check(ended == 8, f"all 8 runs ended ({ended})")


def scenario_errors(tmp):
    src = os.path.join(EXAMPLES, "balance.c")
    nodebug = os.path.join(tmp, "nodebug")
    subprocess.run(["gcc", "-O1", "-pthread", "-I" + INCLUDE, src, "-o", nodebug,
                    "-L" + LIBDIR, "-lkscope-user", "-Wl,-rpath," + LIBDIR], check=True)
    prog = build(tmp, "balance.c", "balance")
    script = os.path.join(tmp, "run.sh")
    with open(script, "w") as f:
        f.write(f"#!/bin/sh\nexec {prog} 10\n")
    os.chmod(script, 0o755)
    a = line_of("balance.c", "/* line A */")
    cases = [
        ([], [nodebug, "10"], "build the program with -g"),
        (["--fixed-line", "balance.c:1"], [prog, "10"], "has no code; the nearest line"),
        (["--fixed-line", "nosuch.c:3"], [prog, "10"], "no source file of the program matches"),
        (["--fixed-line", "balance.c"], [prog, "10"], "is not FILE:LINE"),
        (["--speedups", "0,150"], [prog, "10"], "not a percentage from 0 to 100"),
        (["--speedups", "0"], [prog, "10"], "at least one speedup above 0"),
        (["--fixed-function", "main"], [prog, "10"], "with --granularity function"),
        (["--granularity", "function", "--fixed-line", f"balance.c:{a}"], [prog, "10"],
         "give --fixed-function NAME"),
        (["--granularity", "function", "--fixed-function", "mai"], [prog, "10"],
         "no function in scope is called 'mai'; names that contain it: main"),
        (["--functions", "nosuch*"], [prog, "10"], "no function matching --functions"),
        (["--lines", "*/nosuch/*"], [prog, "10"], "none matching --lines"),
        ([], [script], "is not an ELF executable (a script?)"),
    ]
    for args, cmd, want in cases:
        out = os.path.join(tmp, "out")
        p = subprocess.run([KSCOPE, "causal", "-o", out, *args, "--", *cmd],
                           capture_output=True, text=True)
        check(p.returncode == 2 and want in p.stderr,
              f"{' '.join(args) or os.path.basename(cmd[0])}: exit 2 and '{want}' "
              f"(got {p.returncode}: {p.stderr.strip()[:200]})")
        check(not os.path.exists(out) or not os.listdir(out),
              f"{' '.join(args) or os.path.basename(cmd[0])}: no run directory")
    check(a > 0, "the marker lines are found")
    # A program that cannot start (its ELF interpreter is missing): exit 2,
    # and the run directory kscope had made is removed, files and all.
    with open(prog, "rb") as f:
        elf = f.read()
    interp = b"/lib64/ld-linux-x86-64.so.2"
    if interp in elf:
        broken = os.path.join(tmp, "broken")
        with open(broken, "wb") as f:
            f.write(elf.replace(interp, b"/lib64/ld-linux-x86-64.so.9", 1))
        os.chmod(broken, 0o755)
        out = os.path.join(tmp, "out-broken")
        p = subprocess.run([KSCOPE, "causal", "-o", out, "--", broken, "10"],
                           capture_output=True, text=True)
        check(p.returncode == 2 and "cannot run" in p.stderr,
              f"a program that cannot start: exit 2 ({p.returncode}: {p.stderr.strip()[-200:]})")
        check(not os.path.exists(out) or not os.listdir(out),
              f"a program that cannot start: no run directory left "
              f"({os.listdir(out) if os.path.exists(out) else []})")


def main():
    tmp = tempfile.mkdtemp(prefix="kscope-causal-")
    try:
        globals()["scenario_" + SCENARIO](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
