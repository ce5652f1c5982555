#!/usr/bin/env python3
"""End-to-end tests of kscope tune.

Each scenario runs `kscope tune` on a kernel of examples/tune, copied
into a scratch directory with its source made read-only, builds the
variants with the compiler CMake found, and checks what came out: the
exit status, the table and the best configuration on stdout, tune.csv
and tune.json, that the source's bytes are unchanged, that nothing was
added next to it, that the run directory holds only tune.csv and
tune.json (the variants are gone), and that no build or run is left
running.  No scenario asserts on a time; the wall-time scenario asserts
only which configuration wins, by a factor of four.

    tune_e2e.py KSCOPE CC SOURCE_DIR SCENARIO

Scenarios:
  planted     the best configuration of a product space, by the times
              planted.c prints (KSCOPE_TIME_NS); configurations slower than
              three times the best are stopped early; {srcdir} finds the
              source's header
  wall        busy.c prints no time: its wall time picks WORK=1
  failures    a build error, a hanging run (--timeout 2), a crash and an
              exit status 3 are reported with their output; the search goes
              on and finds the best
  allfail     every configuration fails: exit status 1, the table is written
  list_space  a list of configurations, keys in any order, a string value
              substituted as is, quoted command words, --top limiting the
              printed rows
  predict     --predict with a model whose time grows with TILE and --top 2:
              only the two best predicted are built and run; a model error
              is bad input (exit 2, nothing written)
  sigint      SIGINT while a run hangs: exit 130, the child killed, what was
              measured written, the variants removed
  sigterm     the same with SIGTERM: exit 143
  verify      --verify on tests/tune/kernels/checked.c: the fastest variant
              prints a wrong result and is excluded from the ranking
              ("verify failed"); the verify command gets the run's stdout
              and the values in its environment; bad --verify is refused
  noise       tests/tune/kernels/noisy.c prints times with a seeded jitter
              of 20%: two configurations 1% apart are reported as a tie
              ("=1", "tie:"), the clearly slower one is not, the rows that
              did not reach --precision within --max-runs say so; bad
              --precision and --max-runs are refused
  strategies  a 144-point space (tests/tune/kernels/grid.c) built by a
              stand-in compiler that logs each build: --restrict removes
              points before building (the builds are counted), exhaustive
              and random find the planted best, --max-evals bounds the
              builds, the same --seed draws the same points; bad
              --strategy, --max-evals, --time-budget and --restrict are
              refused
  anneal      --strategy anneal on a 400-point grid (grid.c, fake_build.sh):
              finds the planted best within --max-evals for a fixed seed,
              builds no point twice and none that --restrict excludes; the
              same seed builds the same sequence, another seed another; the
              default budget is 100; bad values are refused
  model       --strategy model with a model that agrees with the planted
              times (no warning, correlation 1) and one that is wrong (the
              warning names the best measured and the model's best, the
              true best among those measured is reported); --model-top and
              --model-sample decide what is built; bad values are refused
  cache       --cache: a rerun builds and runs nothing ("cached"), a changed
              source or command builds again; bad --cache is refused
"""
import csv
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for kstest
from kstest import Failure, check, TempDirs  # noqa: E402

KSCOPE, CC, SRC, SCENARIO = sys.argv[1:5]
EXAMPLES = os.path.join(SRC, "examples", "tune")
KERNELS = os.path.join(SRC, "tests", "tune", "kernels")  # kernels only tests use
TIMEOUT = 100


tmpdir = TempDirs("ks-tune-e2e-")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Work:
    """A scratch directory with a read-only copy of an example kernel."""

    def __init__(self, *names):
        self.dir = tmpdir()
        self.srcdir = os.path.join(self.dir, "src")
        os.mkdir(self.srcdir)
        for n in names:
            where = KERNELS if os.path.exists(os.path.join(KERNELS, n)) else EXAMPLES
            shutil.copy(os.path.join(where, n), self.srcdir)
        self.src = os.path.join(self.srcdir, names[0])
        os.chmod(self.src, stat.S_IRUSR | stat.S_IRGRP)
        self.hash = sha256(self.src)
        self.listing = sorted(os.listdir(self.srcdir))
        self.out = os.path.join(self.dir, "out")

    def space(self, obj, name="space.json"):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(obj, f)
        return path

    def args(self, space, build=None, run="{exe}", extra=()):
        build = build or f"{CC} -O2 -I{{srcdir}} {{src}} -o {{exe}}"
        return ["tune", "--src", self.src, "--space", space, "--build", build,
                "--run", run, "-o", self.out, "--jobs", "2"] + list(extra)

    def rundir(self):
        runs = [d for d in os.listdir(self.out) if d.startswith("tune_")]
        check(len(runs) == 1, f"one run directory expected in {self.out}: {runs}")
        return os.path.join(self.out, runs[0])

    def check_clean(self):
        check(sha256(self.src) == self.hash, "the source's bytes changed")
        check(sorted(os.listdir(self.srcdir)) == self.listing,
              f"files appeared next to the source: {sorted(os.listdir(self.srcdir))}")
        if os.path.isdir(self.out):
            rd = self.rundir()
            names = sorted(os.listdir(rd))
            check(names == ["tune.csv", "tune.json"],
                  f"the run directory holds {names}, not only tune.csv and tune.json")
            check_no_process(rd)

    def results(self):
        rd = self.rundir()
        with open(os.path.join(rd, "tune.json")) as f:
            j = json.load(f)
        with open(os.path.join(rd, "tune.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        check(len(rows) == len(j["rows"]) == j["configurations"],
              "tune.csv and tune.json disagree on the number of rows")
        for c, r in zip(rows, j["rows"]):
            check(int(c["config"]) == r["config"] and c["status"] == r["status"],
                  f"tune.csv row {c} and tune.json row {r} differ")
        return j, rows


def check_no_process(path):
    """No process whose command line mentions path (a variant) is alive."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if path.encode() in cmd and state not in ("Z", "X"):
            raise Failure(f"process {pid} is still running: {cmd!r}")


def kscope(args, env=None):
    e = dict(os.environ)
    e.pop("KSCOPE_LOG_LEVEL", None)
    e.update(env or {})
    p = subprocess.run([KSCOPE] + args, capture_output=True, text=True,
                       timeout=TIMEOUT, env=e)
    return p


def expect_exit(p, code):
    check(p.returncode == code,
          f"exit status {p.returncode}, expected {code}\n--- stdout:\n{p.stdout}"
          f"\n--- stderr:\n{p.stderr}")


def by_values(j, **want):
    for r in j["rows"]:
        if all(r["values"][k] == v for k, v in want.items()):
            return r
    raise Failure(f"no row with {want}")


def measured_sorted(j):
    meds = [r["median_ns"] for r in j["rows"] if r["status"] in ("ok", "stopped early")]
    check(meds == sorted(meds), f"measured rows not sorted by median: {meds}")


# ---------------------------------------------------------------------------


def scenario_planted():
    w = Work("planted.c", "planted.h")
    p = kscope(w.args(os.path.join(EXAMPLES, "planted.json")))
    expect_exit(p, 0)
    check("best: TILE=32 UNROLL=4 (median 1.000 us of 5 runs)" in p.stdout,
          f"the planted best is not printed:\n{p.stdout}")
    check("VERBOSE is not in the space: it keeps its value 0" in p.stderr,
          f"no note about VERBOSE:\n{p.stderr}")
    j, rows = w.results()
    check(j["best"]["values"] == {"TILE": 32, "UNROLL": 4},
          f"tune.json's best: {j['best']}")
    check(j["measured"] == 8 and j["failed"] == 0, f"counts: {j}")
    measured_sorted(j)
    order = [(r["values"]["TILE"], r["values"]["UNROLL"]) for r in j["rows"]]
    check(order == [(32, 4), (32, 1), (16, 4), (8, 4), (16, 1), (64, 4), (8, 1),
                    (64, 1)], f"the order of the rows: {order}")
    # Built and run in space order: by the time (64, *) runs, the best is
    # 1000 ns and their first measured run is over 3 times that.
    for r in j["rows"]:
        if r["values"]["TILE"] == 64:
            check(r["status"] == "stopped early" and r["runs"] == 1,
                  f"TILE 64 should stop early: {r}")
            check("x the best 1000 ns" in r["message"], r["message"])
        else:
            check(r["status"] == "ok" and r["runs"] == 5 and
                  len(r["samples_ns"]) == 5, f"row {r}")
        check(r["timing"] == "program", f"timing of {r}")
        cost = 1000 + 100 * abs(r["values"]["TILE"] - 32) + 500 * abs(r["values"]["UNROLL"] - 4)
        check(r["median_ns"] == cost and r["p20_ns"] == cost and r["p80_ns"] == cost,
              f"times of {r}: the planted cost is {cost}")
    check(rows[0]["rank"] == "1" and rows[0]["TILE"] == "32" and rows[0]["UNROLL"] == "4"
          and rows[0]["median (us)"] == "1.000", f"tune.csv's first row: {rows[0]}")
    w.check_clean()


def scenario_wall():
    w = Work("busy.c")
    space = w.space({"WORK": [6, 1, 4]})
    p = kscope(w.args(space, build=f"{CC} -O1 {{src}} -o {{exe}}",
                      extra=["--warmup", "1", "--repeat", "3", "--stop-factor", "0",
                             "--precision", "0"]))
    expect_exit(p, 0)
    j, _ = w.results()
    check(j["best"]["values"] == {"WORK": 1}, f"the best is {j['best']}, not WORK=1")
    check("best: WORK=1 " in p.stdout, p.stdout)
    for r in j["rows"]:
        check(r["status"] == "ok" and r["runs"] == 3 and r["timing"] == "wall", f"row {r}")
    measured_sorted(j)
    w.check_clean()


def scenario_failures():
    w = Work("planted.c", "planted.h")
    space = w.space({"TILE": [8, 13, 7, 32, 5, 3], "UNROLL": [4]})
    p = kscope(w.args(space, extra=["--timeout", "2"]))
    expect_exit(p, 0)
    j, _ = w.results()
    check(j["best"]["values"] == {"TILE": 32, "UNROLL": 4}, f"best: {j['best']}")
    check(j["measured"] == 2 and j["failed"] == 4, f"counts: {j}")
    statuses = [r["status"] for r in j["rows"]]
    check(statuses[:2] == ["ok", "ok"] and all(s != "ok" for s in statuses[2:]),
          f"failures must come last: {statuses}")
    r = by_values(j, TILE=13)
    check(r["status"] == "build failed" and r["message"] == "exit status 1", f"{r}")
    check('#error "TILE 13 does not build"' in r["output"], f"build output: {r['output']!r}")
    r = by_values(j, TILE=7)
    check(r["status"] == "run timed out" and r["message"] ==
          "run 1 of 6 to 31: timed out after 2 s", f"{r}")
    r = by_values(j, TILE=5)
    check(r["status"] == "run failed" and "killed by signal 6" in r["message"], f"{r}")
    r = by_values(j, TILE=3)
    check(r["status"] == "run failed" and r["message"] == "run 1 of 6 to 31: exit status 3"
          and r["output"] == "planted: TILE 3 is not supported", f"{r}")
    for want in ("TILE=13 UNROLL=4: build failed: exit status 1: planted.c:",
                 "TILE=7 UNROLL=4: run timed out", "TILE=5 UNROLL=4: run failed",
                 "TILE=3 UNROLL=4: run failed: run 1 of 6 to 31: exit status 3: planted: "
                 "TILE 3 is not supported"):
        check(want in p.stderr, f"stderr lacks {want!r}:\n{p.stderr}")
    check("failures:" in p.stdout and "TILE 13 does not build" in p.stdout,
          f"stdout lacks the failures:\n{p.stdout}")
    w.check_clean()


def scenario_allfail():
    w = Work("planted.c", "planted.h")
    space = w.space({"TILE": [13, 3], "UNROLL": [1]})
    p = kscope(w.args(space))
    expect_exit(p, 1)
    check("best: none" in p.stdout, p.stdout)
    check("no configuration was measured" in p.stderr, p.stderr)
    j, _ = w.results()
    check(j["best"] is None and j["failed"] == 2 and j["measured"] == 0, f"{j}")
    w.check_clean()


def scenario_list_space():
    w = Work("planted.c", "planted.h")
    space = w.space([{"TILE": 16, "UNROLL": 1},
                     {"UNROLL": "(2 + 2)", "TILE": 32},
                     {"TILE": 8, "UNROLL": 4}])
    p = kscope(w.args(space, build=f"{CC} '-O2' \"-I{{srcdir}}\" {{src}} -o {{exe}}",
                      run="{exe} 'an argument' \"another one\"",
                      extra=["--top", "1", "--repeat", "2"]))
    expect_exit(p, 0)
    check("best: TILE=32 UNROLL=(2 + 2) (median 1.000 us" in p.stdout, p.stdout)
    check("(2 more rows in tune.csv)" in p.stdout, p.stdout)
    j, rows = w.results()
    check(j["keys"] == ["TILE", "UNROLL"], f"keys: {j['keys']}")
    check(j["best"]["values"] == {"TILE": 32, "UNROLL": "(2 + 2)"}, f"{j['best']}")
    check(rows[0]["UNROLL"] == "(2 + 2)", f"{rows[0]}")
    check([r["config"] for r in j["rows"]] == [1, 2, 0], f"{j['rows']}")
    w.check_clean()


def scenario_predict():
    w = Work("planted.c", "planted.h")
    space = w.space({"TILE": [64, 8, 32, 16, 128], "UNROLL": [4]})
    env = {"KSCOPE_CHIP_PATH": EXAMPLES}
    p = kscope(w.args(space, extra=["--predict", os.path.join(EXAMPLES, "planted.kpp"),
                                    "--top", "2"]), env)
    expect_exit(p, 0)
    check("predicted (us)" in p.stdout, p.stdout)
    check("3 configurations not built" in p.stdout, p.stdout)
    j, rows = w.results()
    check(j["measured"] == 2 and j["not_selected"] == 3 and j["top"] == 2, f"{j}")
    built = sorted(r["values"]["TILE"] for r in j["rows"] if r["status"] == "ok")
    check(built == [8, 16], f"built: {built}, expected the two smallest TILEs")
    rest = [r for r in j["rows"] if r["status"] == "not selected"]
    check([r["values"]["TILE"] for r in rest] == [32, 64, 128], f"{rest}")
    check(all(r["runs"] == 0 and r["median_ns"] is None for r in rest), f"{rest}")
    preds = [r["predicted_us"] for r in sorted(j["rows"], key=lambda r: r["predicted_rank"])]
    check(preds == sorted(preds) and preds[0] > 0, f"predictions: {preds}")
    ok_lines = [l for l in p.stdout.splitlines() if l.rstrip().endswith(" ok")]
    check(len(ok_lines) == 2, f"the table should list the two built:\n{p.stdout}")
    check(all(r["predicted (us)"] for r in rows), "tune.csv lacks predictions")
    w.check_clean()

    # A model error: exit 2 before anything is built or written.
    w2 = Work("planted.c", "planted.h")
    p = kscope(w2.args(space, extra=["--predict", w2.src]), env)
    expect_exit(p, 2)
    check("option --predict: configuration 0 (TILE=64 UNROLL=4)" in p.stderr, p.stderr)
    check(not os.path.exists(w2.out), "a model error must write nothing")
    w2.check_clean()


def interrupt(sig, code):
    w = Work("planted.c", "planted.h")
    space = w.space({"TILE": [32, 7, 8], "UNROLL": [4]})
    e = dict(os.environ)
    e.pop("KSCOPE_LOG_LEVEL", None)
    p = subprocess.Popen([KSCOPE] + w.args(space, extra=["--timeout", "60"]),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    err = ""
    deadline = time.time() + 60
    while "measuring" not in err:
        line = p.stderr.readline()
        check(line and time.time() < deadline, f"no 'measuring' progress:\n{err}")
        err += line
    # TILE 32's six runs take milliseconds; then TILE 7 hangs.
    time.sleep(1.5)
    p.send_signal(sig)
    try:
        out, rest = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise Failure("kscope did not end after the signal")
    err += rest
    check(p.returncode == code, f"exit status {p.returncode}, expected {code}:\n{err}")
    check("interrupted" in err, err)
    j, _ = w.results()
    check(j["search_stopped"] is True, f"{j}")
    r = by_values(j, TILE=32)
    check(r["status"] == "ok" and r["runs"] == 5, f"TILE 32 was measured first: {r}")
    check(by_values(j, TILE=7)["status"] == "interrupted", f"{j['rows']}")
    check(by_values(j, TILE=8)["status"] == "interrupted", f"{j['rows']}")
    check("best: TILE=32 UNROLL=4" in out, out)
    w.check_clean()


def scenario_sigint():
    interrupt(signal.SIGINT, 130)


def scenario_sigterm():
    interrupt(signal.SIGTERM, 143)


def scenario_verify():
    w = Work("checked.c")
    space = w.space({"MODE": [0, 1, 2]})
    verify = ("sh -c 'grep -qx result=5050 \"$KSCOPE_TUNE_STDOUT\" && "
              "test -x \"$KSCOPE_TUNE_EXE\" && test -n \"$KSCOPE_TUNE_PARAM_MODE\"'")
    p = kscope(w.args(space, extra=["--verify", verify, "--precision", "0"]))
    expect_exit(p, 0)
    j, rows = w.results()
    check(j["best"]["values"] == {"MODE": 1}, f"the wrong MODE 2 must not win: {j['best']}")
    check(j["verify_failed"] == 1 and j["failed"] == 1 and j["measured"] == 2, f"{j}")
    r = by_values(j, MODE=2)
    check(r["status"] == "verify failed" and r["rank"] is None and r["runs"] == 0
          and r["message"] == "verify: exit status 1", f"{r}")
    check(j["rows"][-1]["values"] == {"MODE": 2}, "the failed row must come last")
    check("MODE=2: verify failed: verify: exit status 1" in p.stderr, p.stderr)
    check("best: MODE=1 " in p.stdout and "verify failed" in p.stdout, p.stdout)
    check(j["verify"] == verify, f"tune.json verify: {j['verify']!r}")
    w.check_clean()
    # Without --verify, the wrong variant wins: the check is what excludes it.
    w2 = Work("checked.c")
    p = kscope(w2.args(w2.space({"MODE": [0, 1, 2]}), extra=["--precision", "0"]))
    expect_exit(p, 0)
    j, _ = w2.results()
    check(j["best"]["values"] == {"MODE": 2}, f"{j['best']}")
    # Bad input: exit 2, nothing written.
    for bad, want in ((["--verify", ""], "option --verify"),
                      (["--verify", "no-such-program-xyz {exe}"],
                       "option --verify: the program 'no-such-program-xyz' is not in PATH"),
                      (["--verify", "sh -c 'x"], "option --verify")):
        w3 = Work("checked.c")
        p = kscope(w3.args(w3.space({"MODE": [0]}), extra=bad))
        expect_exit(p, 2)
        check(want in p.stderr, f"{bad}: stderr lacks {want!r}: {p.stderr}")
        check(not os.path.exists(w3.out), f"{bad}: something was written")


def scenario_noise():
    w = Work("noisy.c")
    space = w.space({"BASE": [3000, 1010, 1000]})
    p = kscope(w.args(space, extra=["--warmup", "0", "--repeat", "5", "--precision", "2",
                                    "--max-runs", "25", "--stop-factor", "0"]))
    expect_exit(p, 0)
    j, rows = w.results()
    check(j["ties"] == 2, f"ties: {j['ties']}")
    for base, tie in ((1000, True), (1010, True), (3000, False)):
        r = by_values(j, BASE=base)
        check(r["status"] == "ok" and r["tie"] is tie, f"BASE={base}: {r}")
        check(r["runs"] == 25 and not r["precise"] and
              r["message"].startswith("imprecise: the median's 95% interval is"), f"{r}")
        check(r["ci_low_ns"] <= r["median_ns"] <= r["ci_high_ns"], f"{r}")
    check({c["tie"] for c in rows} == {"yes", ""}, f"csv tie column: {rows}")
    check("tie: 2 configurations are within noise" in p.stdout, p.stdout)
    tied = [l for l in p.stdout.splitlines() if l.lstrip().startswith("=1 ")]
    check(len(tied) == 2 and all(", tie" in l for l in tied), p.stdout)
    check("; tied: see above" in p.stdout, p.stdout)
    w.check_clean()
    # Exact times reach the precision at --repeat: no more runs.
    w2 = Work("planted.c", "planted.h")
    p = kscope(w2.args(w2.space({"TILE": [32], "UNROLL": [4, 1]}),
                       extra=["--repeat", "5", "--max-runs", "40"]))
    expect_exit(p, 0)
    j, _ = w2.results()
    check(all(r["runs"] == 5 and r["precise"] and not r["tie"] for r in j["rows"]),
          f"{j['rows']}")
    check(j["ties"] == 0 and "tie:" not in p.stdout, p.stdout)
    for bad, want in ((["--precision", "0.05"], "option --precision: '0.05' is out of range"),
                      (["--precision", "101"], "option --precision"),
                      (["--precision", "x"], "option --precision"),
                      (["--max-runs", "0"], "option --max-runs"),
                      (["--max-runs", "1001"], "option --max-runs")):
        w3 = Work("noisy.c")
        p = kscope(w3.args(w3.space({"BASE": [1]}), extra=bad))
        expect_exit(p, 2)
        check(want in p.stderr, f"{bad}: stderr lacks {want!r}: {p.stderr}")
        check(not os.path.exists(w3.out), f"{bad}: something was written")


def scenario_strategies():
    fake = os.path.join(KERNELS, "fake_build.sh")
    space_obj = {"X": list(range(12)), "Y": list(range(12))}

    def tune(extra):
        w = Work("grid.c")
        log = os.path.join(w.dir, "builds.log")
        p = kscope(w.args(w.space(space_obj), build=f"sh {fake} {{src}} {{exe}} {log}",
                          extra=["--warmup", "0", "--repeat", "1", "--precision", "0",
                                 "--stop-factor", "0"] + extra))
        expect_exit(p, 0)
        j, _ = w.results()
        with open(log) as f:
            built = [tuple(map(int, line.split())) for line in f]
        w.check_clean()
        return p, j, built

    # --restrict: only the points where it holds are built.
    p, j, built = tune(["--restrict", "X + Y <= 12", "--restrict", "!(X % 2) || Y == 4"])
    want = {(x, y) for x in range(12) for y in range(12)
            if x + y <= 12 and (x % 2 == 0 or y == 4)}
    check(set(built) == want and len(built) == len(want),
          f"built {len(built)} points, expected {len(want)}")
    check(j["restricted"] == 144 - len(want) and j["measured"] == len(want), f"{j}")
    check(j["best"]["values"] == {"X": 7, "Y": 4}, f"{j['best']}")
    check(all(r["status"] == "restricted" for r in j["rows"]
              if (r["values"]["X"], r["values"]["Y"]) not in want), "restricted rows")
    check(f"{144 - len(want)} configurations excluded by --restrict" in p.stdout, p.stdout)
    # random: --max-evals bounds the builds; the seed decides the points.
    p, j, built = tune(["--strategy", "random", "--max-evals", "40", "--seed", "7"])
    check(len(built) == 40 and j["measured"] == 40 and j["not_selected"] == 104, f"{j}")
    _, _, again = tune(["--strategy", "random", "--max-evals", "40", "--seed", "7"])
    check(sorted(again) == sorted(built), "the same seed drew other points")
    _, _, other = tune(["--strategy", "random", "--max-evals", "40", "--seed", "8"])
    check(sorted(other) != sorted(built), "another seed drew the same points")
    # random within a budget that covers the restricted space finds the best.
    p, j, built = tune(["--strategy", "random", "--max-evals", "30",
                        "--restrict", "X >= 5 && X <= 9 && Y >= 2 && Y <= 7"])
    check(len(built) == 30 and j["best"]["values"] == {"X": 7, "Y": 4}, f"{j['best']}")
    # exhaustive with --max-evals: the first N in the space's order.
    p, j, built = tune(["--max-evals", "5"])
    check(sorted(built) == [(0, y) for y in range(5)], f"{built}")
    # bad input: exit 2, nothing written
    for bad, want in ((["--strategy", "genetic"], "option --strategy"),
                      (["--max-evals", "0"], "option --max-evals"),
                      (["--time-budget", "-1"], "option --time-budget"),
                      (["--restrict", "X +"], "option --restrict: 'X +': the expression "
                       "ends too early at column 4; accepted:"),
                      (["--restrict", "Z > 1"], "'Z' is not a key of the space"),
                      (["--restrict", "X = 1"], "'=' is no operator"),
                      (["--strategy", "random", "--predict",
                        os.path.join(EXAMPLES, "planted.kpp")], "option --strategy")):
        w = Work("grid.c")
        p = kscope(w.args(w.space(space_obj), build=f"sh {fake} {{src}} {{exe}} log",
                          extra=bad))
        expect_exit(p, 2)
        check(want in p.stderr, f"{bad}: stderr lacks {want!r}: {p.stderr}")
        check(not os.path.exists(w.out), f"{bad}: something was written")


GRID20 = {"X": list(range(20)), "Y": list(range(20))}


def grid_tune(extra, space_obj=GRID20, w=None, env=None, code=0):
    """kscope tune on grid.c with the stand-in compiler, one measured run
    per point; returns the result, the builds in the order they happened,
    and stdout/stderr."""
    fake = os.path.join(KERNELS, "fake_build.sh")
    w = w or Work("grid.c")
    log = os.path.join(w.dir, "builds.log")
    if os.path.exists(w.out):
        shutil.rmtree(w.out)
    p = kscope(w.args(w.space(space_obj), build=f"sh {fake} {{src}} {{exe}} {log}",
                      extra=["--warmup", "0", "--repeat", "1", "--precision", "0",
                             "--stop-factor", "0"] + extra), env)
    expect_exit(p, code)
    j, rows = w.results()
    built = []
    if os.path.exists(log):
        with open(log) as f:
            built = [tuple(map(int, line.split())) for line in f]
    w.check_clean()
    return p, j, rows, built


def refused(space_obj, cases, env=None):
    fake = os.path.join(KERNELS, "fake_build.sh")
    for bad, want in cases:
        w = Work("grid.c")
        p = kscope(w.args(w.space(space_obj), build=f"sh {fake} {{src}} {{exe}} log",
                          extra=bad), env)
        expect_exit(p, 2)
        check(want in p.stderr, f"{bad}: stderr lacks {want!r}: {p.stderr}")
        check(not os.path.exists(w.out), f"{bad}: something was written")


def scenario_anneal():
    args = ["--strategy", "anneal", "--max-evals", "40", "--seed", "3"]
    p, j, rows, built = grid_tune(args)
    check(len(built) == 40 and len(set(built)) == 40,
          f"40 distinct points expected, built {len(built)} ({len(set(built))} distinct)")
    check(j["best"]["values"] == {"X": 7, "Y": 4}, f"anneal missed the best: {j['best']}")
    check(j["measured"] == 40 and j["not_selected"] == 360 and j["strategy"] == "anneal",
          f"{j['measured']} measured, {j['not_selected']} not selected")
    # tune.json's order is the order of the builds.
    order = sorted((r["order"], (r["values"]["X"], r["values"]["Y"]))
                   for r in j["rows"] if r["order"] is not None)
    check([pt for _, pt in order] == built, "the rows' order is not the builds'")
    # A step changes one key to the next value of its list: nearly every
    # point built is a neighbour of one built before (but for restarts).
    steps = sum(1 for i, b in enumerate(built[1:], 1)
                if any(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 for a in built[:i]))
    check(steps >= 35, f"only {steps} of 39 points neighbour an earlier one: {built}")
    check("the annealing did not reach them" in p.stdout, p.stdout)
    # The same seed, the same sequence; another seed, another.
    _, _, _, again = grid_tune(args)
    check(again == built, f"the same seed built another sequence:\n{built}\n{again}")
    _, _, _, other = grid_tune(["--strategy", "anneal", "--max-evals", "40", "--seed", "4"])
    check(other != built, "another seed built the same sequence")
    # --restrict: excluded points are never built, not even as neighbours.
    _, j, _, built = grid_tune(args + ["--restrict", "X != 6 && Y != 6"])
    check(all(x != 6 and y != 6 for x, y in built), f"a restricted point was built: {built}")
    check(len(set(built)) == len(built), "a point was built twice")
    check(j["restricted"] == 39, f"restricted: {j['restricted']}")
    # A small space: anneal stops when every point is measured; the
    # default budget is 100.
    _, j, _, built = grid_tune(["--strategy", "anneal"], {"X": [0, 7, 9], "Y": [4, 5]})
    check(sorted(built) == sorted((x, y) for x in (0, 7, 9) for y in (4, 5)), f"{built}")
    check(j["best"]["values"] == {"X": 7, "Y": 4}, f"{j['best']}")
    _, j, _, built = grid_tune(["--strategy", "anneal"])
    check(len(built) == 100 and len(set(built)) == 100, f"default budget: {len(built)}")
    refused(GRID20, ((["--strategy", "anneal", "--max-evals", "0"], "option --max-evals"),
                     (["--strategy", "anneal", "--predict",
                       os.path.join(EXAMPLES, "planted.kpp")],
                      "option --strategy: anneal does not go with --predict"),
                     (["--strategy", "anneal", "--seed", "-1"], "option --seed")))


def scenario_model():
    env = {"KSCOPE_CHIP_PATH": EXAMPLES}
    right = os.path.join(KERNELS, "grid_right.kpp")
    wrong = os.path.join(KERNELS, "grid_wrong.kpp")
    # A model that agrees: its top is the planted best; no warning.
    p, j, rows, built = grid_tune(["--strategy", "model", "--predict", right, "--seed", "3"],
                                  env=env)
    check(len(built) == 10 and j["measured"] == 10, f"built {len(built)}")
    check(j["best"]["values"] == {"X": 7, "Y": 4}, f"{j['best']}")
    check(j["spearman"] is not None and j["spearman"] > 0.9 and j["spearman_n"] == 10
          and j["model_agrees"] is True, f"spearman {j['spearman']}")
    check(sum(r["sampled"] for r in j["rows"]) == 5, "5 sampled rows expected")
    top = {(r["values"]["X"], r["values"]["Y"]) for r in j["rows"]
           if r["status"] == "ok" and not r["sampled"]}
    check(all(r["predicted_rank"] <= 5 for r in j["rows"] if r["status"] == "ok"
              and not r["sampled"]) and len(top) == 5, f"top 5: {top}")
    check("disagree" not in p.stderr and "disagree" not in p.stdout, p.stderr)
    check("model: Spearman rank correlation 1.00" in p.stdout, p.stdout)
    check("model: Spearman rank correlation" in p.stderr, p.stderr)
    check(all(c["spearman"] == "1.000" for c in rows), "tune.csv's spearman column")
    check(sum(c["sampled"] == "yes" for c in rows) == 5, "tune.csv's sampled column")
    # A wrong model: the warning, and the true best among those measured.
    p, j, rows, built = grid_tune(["--strategy", "model", "--predict", wrong, "--seed", "3",
                                   "--model-top", "3", "--model-sample", "6"], env=env)
    check(len(built) == 9 and j["model_top"] == 3 and j["model_sample"] == 6, f"{built}")
    cost = {pt: 1000 + 10 * ((pt[0] - 7) ** 2 + (pt[1] - 4) ** 2) for pt in built}
    truth = min(built, key=lambda pt: cost[pt])
    check((j["best"]["values"]["X"], j["best"]["values"]["Y"]) == truth,
          f"best {j['best']}, the fastest measured is {truth}")
    check(j["spearman"] < 0.5 and j["model_agrees"] is False, f"spearman {j['spearman']}")
    for out in (p.stderr, p.stdout):
        check("the model and the measurements disagree" in out, out)
        check(f"the best measured is X={truth[0]} Y={truth[1]}" in out, out)
        check("the model's best is X=19 Y=19" in out, out)
    check("warn" in p.stderr, p.stderr)
    refused(GRID20, ((["--strategy", "model"], "option --strategy: model needs a model"),
                     (["--strategy", "model", "--predict", right, "--model-top", "0"],
                      "option --model-top"),
                     (["--strategy", "model", "--predict", right, "--model-sample", "-1"],
                      "option --model-sample"),
                     (["--model-top", "3"], "option --model-top: only with --strategy "
                      "model"),
                     (["--strategy", "model", "--predict", right, "--top", "3"],
                      "option --top: does not go with --strategy model")), env)


def scenario_cache():
    w = Work("grid.c")
    cache = os.path.join(w.dir, "cache")
    space = {"X": [5, 7, 9], "Y": [3, 4]}
    args = ["--cache", cache]
    _, j, rows, built = grid_tune(args, space, w=w)
    check(len(built) == 6 and j["cached"] == 0 and j["cache"] == cache, f"{built}")
    check(len(os.listdir(cache)) == 6, f"cache holds {os.listdir(cache)}")
    # The rerun: nothing built or run, the same results, said "cached".
    p, j2, rows2, built = grid_tune(args, space, w=w)
    check(len(built) == 6, f"the rerun built {len(built) - 6} points")
    check(j2["cached"] == 6 and all(r["cached"] for r in j2["rows"]), f"{j2}")
    check([r["median_ns"] for r in j2["rows"]] == [r["median_ns"] for r in j["rows"]],
          "the cached times differ")
    check(j2["best"]["values"] == {"X": 7, "Y": 4}, f"{j2['best']}")
    check(", cached" in p.stdout and "6 configurations came from the cache" in p.stdout,
          p.stdout)
    check("cached in" in p.stderr, p.stderr)
    check(all(c["cached"] == "yes" for c in rows2), "tune.csv's cached column")
    # Another command builds again (the log's path is in the build command).
    w3 = Work("grid.c")
    _, j3, _, built3 = grid_tune(args, space, w=w3)
    check(len(built3) == 6 and j3["cached"] == 0, f"another command: {built3}")
    # A changed source builds again, in the same cache.
    with open(os.path.join(w.dir, "builds.log")) as f:
        before = len(f.readlines())
    old = set(os.listdir(cache))
    os.chmod(w.src, stat.S_IRUSR | stat.S_IWUSR)
    with open(w.src, "a") as f:
        f.write("/* changed */\n")
    os.chmod(w.src, stat.S_IRUSR)
    w.hash = sha256(w.src)
    _, j4, _, built4 = grid_tune(args, space, w=w)
    check(len(built4) - before == 6 and j4["cached"] == 0,
          f"a changed source built {len(built4) - before} points")
    check(len(os.listdir(cache)) == 18, f"cache holds {len(os.listdir(cache))} entries")
    # A corrupt entry is measured again, with a warning.
    name = sorted(set(os.listdir(cache)) - old)[0]
    with open(os.path.join(cache, name), "w") as f:
        f.write("{not json")
    p, j5, _, built5 = grid_tune(args, space, w=w)
    check(len(built5) - len(built4) == 1 and j5["cached"] == 5, f"{j5['cached']}")
    check("the cache's entry is not used" in p.stderr, p.stderr)
    # Bad --cache: exit 2, nothing written.
    afile = os.path.join(w.dir, "afile")
    open(afile, "w").close()
    refused(space, ((["--cache", afile], "option --cache: '" + afile + "' is not a "
                      "directory"),
                     (["--cache", os.path.join(w.dir, "no", "such")],
                      "option --cache: '" + os.path.join(w.dir, "no", "such") +
                      "' does not exist"),
                     (["--cache", ""], "option --cache")))


def main():
    fn = globals().get("scenario_" + SCENARIO)
    if not fn:
        print(f"unknown scenario {SCENARIO}", file=sys.stderr)
        return 2
    try:
        fn()
    except Failure as e:
        print(f"FAIL: {SCENARIO}: {e}", file=sys.stderr)
        return 1
    finally:
        tmpdir.remove()
    print(f"ok: {SCENARIO}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
