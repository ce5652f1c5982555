#!/usr/bin/env python3
"""End-to-end tests of keeping the timers apart in kscope report: a
CPU-time period and a wall-clock period are never added into one share.

burn_sleep (one thread: 20 ms of CPU in burn(), 30 ms asleep in nap(),
repeated) runs under kscope sample with both samplers at 1000 Hz and two
software counters.  The program measures its own wall-clock split; the
rest is read from the run's profile.db with Python's sqlite3, and every
report is checked against one of the two:

  --clock cpu     burn() has ~all the samples (a sleeping thread uses no
                  CPU time: at least 80%, nap() at most 15% where the
                  two timers added would give it ~half); the header names
                  only the CPU-time timer
  --clock real    nap()'s share is the wall-clock share the program
                  measured (within 6 points: ~1200 samples give a
                  standard error of 1.4 points)
  default         flat, tree, threads and counters show the two timers
                  side by side, each column equal to that timer's own
                  report; JSON has cpu_* and wall_* fields, no mixed
                  ones, and the header's per-timer account (periods, late
                  periods, thread-end periods) equals profile.db's
  counters        the events go to the samples of the chosen timer:
                  task-clock (CPU time) lands in burn() under --clock cpu,
                  and each timer's total is its last sample's running total
  exports         --clock filters them as it filters the reports
  refusals        --clock real on a CPU-time-only run, and a bad value,
                  exit 2 with what the profile has and what is accepted;
                  KSCOPE_REPORT_CLOCK sets the option

    test_clocks.py KSCOPE BURN_SLEEP
"""
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from kstest import Failure, TempDirs, check  # noqa: E402

KSCOPE, BURN = sys.argv[1:3]
TIMEOUT = 120
AT_END = "[thread ended between ticks]"
CLOCK = {"cpu": 0, "wall": 1}


def env():
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("KSCOPE_"):
            del e[k]
    return e


def run_sample(out, *args):
    p = subprocess.run([KSCOPE, "sample", "-o", out, *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT, env=env())
    check(p.returncode == 0, f"kscope sample {args}: exit {p.returncode}: "
          f"{p.stderr.decode()[-1000:]}")
    runs = glob.glob(os.path.join(out, "sample_*"))
    check(len(runs) == 1, f"run directories {runs}")
    return runs[0], p.stdout.decode()


def report(run, *args, expect=0, extra_env=None):
    e = env()
    e.update(extra_env or {})
    p = subprocess.run([KSCOPE, "report", run, *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT, env=e)
    check(p.returncode == expect, f"kscope report {args}: exit {p.returncode}, "
          f"expected {expect}: {p.stderr.decode()[-600:]}")
    return p


def report_json(run, *args, **kw):
    return json.loads(report(run, "--format", "json", *args, **kw).stdout)


def software_counters():
    """The software counters `kscope avail` says work here."""
    p = subprocess.run([KSCOPE, "avail", "--counters", "--format", "json"],
                       stdout=subprocess.PIPE, timeout=TIMEOUT, env=env())
    d = json.loads(p.stdout)
    return [c["name"] for c in d["counters"] if c["group"] == "software" and c["available"]]


class Db:
    """profile.db's samples: per timer, how many, their periods, the late
    ones and those counted at a thread's end; and counter values."""

    def __init__(self, run):
        self.con = sqlite3.connect(f"file:{run}/profile.db?mode=ro", uri=True)

    def q(self, sql, *args):
        return self.con.execute(sql, args).fetchone()[0] or 0

    def timer(self, clock):
        end = ("(s.stack_id IS NOT NULL AND (SELECT fn.text FROM stacks st JOIN frames f "
               "ON f.id = st.frame_id JOIN strings fn ON fn.id = f.function "
               "WHERE st.id = s.stack_id) = ?)")
        return {
            "stacks": self.q(f"SELECT count(*) FROM samples s WHERE clock = ? AND NOT {end}",
                             clock, AT_END),
            "periods": self.q("SELECT sum(1 + overrun) FROM samples WHERE clock = ?", clock),
            "late_periods": self.q(f"SELECT sum(overrun) FROM samples s WHERE clock = ? "
                                   f"AND NOT {end}", clock, AT_END),
            "thread_end_periods": self.q(f"SELECT sum(1 + overrun) FROM samples s "
                                         f"WHERE clock = ? AND {end}", clock, AT_END),
        }

    def last_counter(self, name, clock=None):
        """The running total of counter name in the last sample (of one
        timer, or of any); one thread, so totals only grow."""
        where = "" if clock is None else f"AND s.clock = {int(clock)}"
        return self.q(f"SELECT v.value FROM sample_counters v JOIN samples s "
                      f"ON s.id = v.sample_id JOIN counter_names n ON n.id = v.counter_id "
                      f"JOIN strings t ON t.id = n.name WHERE t.text = ? {where} "
                      f"ORDER BY s.id DESC LIMIT 1", name)


def by_function(d):
    return {f["function"]: f for f in d["functions"]}


def text_rows(text, first_col, ncounts):
    """The heading and rows of a text report: the heading's names (the
    multi-word ones joined back), and per row its first ncounts cells then
    the texts that two spaces or more set apart (function, location,
    module)."""
    lines = text.splitlines()
    head = lines[1]
    names = re.findall(r"(?:cpu |wall )?[a-z_%]+", head)
    check(names[0] == first_col, f"heading {head!r}")
    rows = []
    for ln in lines[2:]:
        m = re.match(r"\s*((?:\S+\s+){%d})(.*)$" % ncounts, ln)
        check(m, f"row {ln!r}")
        rows.append(m.group(1).split() + re.split(r"\s{2,}", m.group(2).strip()))
    return names, rows


def two_clocks(tmp):
    counters = software_counters()
    check("task-clock" in counters and "context-switches" in counters,
          f"kscope avail --counters lists {counters} as working software counters; "
          "this test needs task-clock and context-switches")
    # On a machine whose cores other jobs keep busy, burn_sleep gets less
    # CPU time in its wall-clock time: a longer run then.
    for secs in ("1.2", "3.0"):
        run, out = run_sample(tmp(), "--samplers", "both", "-F", "1000",
                              "--counters", "task-clock,context-switches", "--", BURN, secs)
        m = re.search(r"burn_ns=(\d+) nap_ns=(\d+)", out)
        check(m, f"burn_sleep printed {out!r}")
        burn_ns, nap_ns = int(m.group(1)), int(m.group(2))
        nap_share = 100.0 * nap_ns / (burn_ns + nap_ns)
        db = Db(run)
        want = {k: db.timer(c) for k, c in CLOCK.items()}
        print(f"burn_sleep {secs} s: nap {nap_share:.1f}% of the wall-clock time; "
              f"timers {want}")
        if want["cpu"]["periods"] >= 300 and want["wall"]["periods"] >= 800:
            break
    check(want["cpu"]["periods"] >= 300 and want["wall"]["periods"] >= 800,
          f"too few samples for the shares to mean anything: {want}")

    # --clock cpu: burn() has ~all of it, nap() nothing.
    cpu = report_json(run, "--clock", "cpu")
    f = by_function(cpu)
    print(f"--clock cpu: burn total {f['burn']['total_pct']:.2f}%")
    check(cpu["filter"]["clock"] == "cpu" and cpu["by_clock"] is False, cpu["filter"])
    check(cpu["periods"] == want["cpu"]["periods"], (cpu["periods"], want["cpu"]))
    # Not 100/0: on a busy machine the kernel checks a thread's CPU-time
    # timer late, and a signal that arrives as burn() hands over to nap()
    # counts its late periods there (the header's "late" periods).  Added
    # to the wall-clock samples, nap() would have about half.
    check(f["burn"]["total_pct"] >= 80.0, f"burn has {f['burn']['total_pct']}% of the CPU time")
    check("nap" not in f or f["nap"]["total_pct"] <= 15.0, f"nap in CPU time: {f.get('nap')}")
    check(cpu["timers"]["cpu"] == want["cpu"], (cpu["timers"], want["cpu"]))
    check(set(cpu["timers"]["wall"].values()) == {0}, cpu["timers"])
    text = report(run, "--clock", "cpu").stdout.decode()
    check("CPU-time periods" in text.splitlines()[0] and "real-time" not in text.splitlines()[0]
          and text.splitlines()[0].endswith("; only the CPU-time samples"),
          f"--clock cpu header: {text.splitlines()[0]}")

    # --clock real: nap()'s share is the wall-clock time it took.
    real = report_json(run, "--clock", "real")
    f = by_function(real)
    print(f"--clock real: nap total {f['nap']['total_pct']:.2f}%, measured {nap_share:.2f}%")
    check(real["periods"] == want["wall"]["periods"], (real["periods"], want["wall"]))
    check(abs(f["nap"]["total_pct"] - nap_share) <= 6.0,
          f"nap has {f['nap']['total_pct']:.2f}% of the wall-clock samples, "
          f"{nap_share:.2f}% of the wall-clock time")
    check(abs(f["burn"]["total_pct"] - (100 - nap_share)) <= 6.0,
          f"burn has {f['burn']['total_pct']:.2f}% of the wall-clock samples")
    check(real["timers"]["wall"] == want["wall"], (real["timers"], want["wall"]))

    # Default: both, side by side, each column that timer's report.
    both = report_json(run)
    check(both["by_clock"] is True and both["filter"]["clock"] == "all", both["filter"])
    check(both["timers"] == want, f"timers {both['timers']}, profile.db {want}")
    fb, fc, fr = by_function(both), by_function(cpu), by_function(real)
    for name, row in fb.items():
        check(not {"self", "total", "self_pct", "total_pct"} & set(row),
              f"{name}: a mixed count in {sorted(row)}")
        for k in ("self", "total", "self_pct", "total_pct"):
            check(row[f"cpu_{k}"] == (fc[name][k] if name in fc else 0),
                  f"{name}: cpu_{k} {row[f'cpu_{k}']}, --clock cpu says {fc.get(name)}")
            check(row[f"wall_{k}"] == (fr[name][k] if name in fr else 0),
                  f"{name}: wall_{k} {row[f'wall_{k}']}, --clock real says {fr.get(name)}")
    text = report(run).stdout.decode()
    names, rows = text_rows(text, "cpu self%", 8)
    check(names[:8] == ["cpu self%", "cpu total%", "wall self%", "wall total%", "cpu self",
                        "cpu total", "wall self", "wall total"], f"flat heading {names}")
    for r in rows:
        name = r[8]
        check([float(x) for x in r[:4]] == [round(fb[name][k], 2) for k in (
            "cpu_self_pct", "cpu_total_pct", "wall_self_pct", "wall_total_pct")] and
              [int(x) for x in r[4:8]] == [fb[name][k] for k in (
                  "cpu_self", "cpu_total", "wall_self", "wall_total")],
              f"flat row {r} against JSON {fb[name]}")
    print(f"default flat: {len(rows)} rows, both columns equal each timer's own report")

    tree = report_json(run, "--tree", "--min-pct", "0")
    tc = report_json(run, "--tree", "--min-pct", "0", "--clock", "cpu")
    tr = report_json(run, "--tree", "--min-pct", "0", "--clock", "real")

    def nodes(roots, path=()):
        for n in roots:
            p = path + (n["function"],)
            yield p, n
            yield from nodes(n["children"], p)

    nc, nr = dict(nodes(tc["roots"])), dict(nodes(tr["roots"]))
    seen = 0
    for p, n in nodes(tree["roots"]):
        for k in ("self", "total", "self_pct", "total_pct"):
            check(n[f"cpu_{k}"] == (nc[p][k] if p in nc else 0) and
                  n[f"wall_{k}"] == (nr[p][k] if p in nr else 0),
                  f"tree node {p}: {n}")
        seen += 1
    check(any(p[-1] == "nap" for p, _ in nodes(tree["roots"])), "no nap in the tree")
    text = report(run, "--tree").stdout.decode()
    check(text.splitlines()[1].split("  function")[0].split() ==
          ["cpu", "total%", "cpu", "self%", "wall", "total%", "wall", "self%"],
          f"tree heading {text.splitlines()[1]!r}")
    print(f"default tree: {seen} nodes equal each timer's own tree")

    th = report_json(run, "--threads")["rows"]
    check(len(th) == 1 and th[0]["cpu_periods"] == want["cpu"]["periods"] and
          th[0]["wall_periods"] == want["wall"]["periods"] and
          th[0]["cpu_share_pct"] == 100.0 and th[0]["wall_share_pct"] == 100.0 and
          "share_pct" not in th[0], f"threads {th}")

    # Counters: the events between the chosen timer's samples.
    for clock, key in ((None, "all"), (0, "cpu"), (1, "real")):
        args = ["--counters"] + ([] if clock is None else ["--clock", key])
        c = report_json(run, *args)
        for name in ("task-clock", "context-switches"):
            check(c["totals"][name] == db.last_counter(name, clock),
                  f"--counters --clock {key}: {name} total {c['totals'][name]}, the last "
                  f"sample's running total is {db.last_counter(name, clock)}")
        fs = by_function(c)
        if key == "cpu":
            share = 100.0 * fs["burn"]["counters"]["task-clock"] / c["totals"]["task-clock"]
            print(f"--counters --clock cpu: burn has {share:.1f}% of task-clock")
            check(share >= 80.0, f"burn has {share:.1f}% of the CPU time task-clock counted")
        if key == "all":
            check(all("cpu_self" in x and "wall_self" in x and "self" not in x
                      for x in c["functions"]), f"counters rows {c['functions'][:2]}")
        else:
            check(all("self" in x for x in c["functions"]), c["functions"][:2])

    # Exports: the periods of the chosen timer.
    for key, k in (("cpu", "cpu"), ("real", "wall")):
        folded = report(run, "--format", "folded", "--clock", key).stdout.decode()
        n = sum(int(ln.rsplit(" ", 1)[1]) for ln in folded.splitlines())
        check(n == want[k]["periods"], f"folded --clock {key}: {n} periods, "
              f"profile.db has {want[k]['periods']}")

    # The environment variable sets the option.
    e = report_json(run, extra_env={"KSCOPE_REPORT_CLOCK": "real"})
    check(e == real, "KSCOPE_REPORT_CLOCK=real is not --clock real")
    p = report(run, "--clock", "wall", expect=2)
    check(p.stderr.decode() == "kscope: error: option --clock: 'wall' is not a choice; "
          "accepted: one of all, cpu, real\n" and not p.stdout, p.stderr.decode())


def one_clock(tmp):
    run, _ = run_sample(tmp(), "--samplers", "cputime", "-F", "1000", "--", BURN, "0.3")
    n = Db(run).q("SELECT count(*) FROM samples WHERE clock = 0")
    check(n > 0 and Db(run).q("SELECT count(*) FROM samples WHERE clock = 1") == 0,
          "a CPU-time-only run has other samples")
    p = report(run, "--clock", "real", expect=2)
    want = (f"kscope: error: option --clock: the profile has no wall-clock (real-time) "
            f"samples: it has only {n} CPU-time sample{'s' if n != 1 else ''} (kscope sample "
            f"--samplers chooses the samplers); accepted: cpu or all\n")
    check(p.stderr.decode() == want and not p.stdout,
          f"--clock real on a CPU-time run:\n  {p.stderr.decode()!r}\nexpected\n  {want!r}")
    # One timer: the report is as it always was, one set of columns.
    text = report(run).stdout.decode()
    check(text.splitlines()[1].split()[:4] == ["self%", "total%", "self", "total"],
          f"one timer's heading {text.splitlines()[1]!r}")
    d = report_json(run)
    check(d["by_clock"] is False and "self_pct" in d["functions"][0], d["functions"][:1])
    check(report_json(run, "--clock", "cpu")["functions"] == d["functions"],
          "--clock cpu differs from the default on a CPU-time-only run")
    print("one timer: --clock real refused with what the profile has; one set of columns")


def main():
    tmp = TempDirs("ks-clocks-")
    try:
        for scenario in (two_clocks, one_clock):
            scenario(tmp)
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        tmp.remove()
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
