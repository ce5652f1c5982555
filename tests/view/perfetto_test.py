#!/usr/bin/env python3
"""API tests of kscope view on a Perfetto trace kscope wrote.

Runs examples/sample/regions under `kscope sample --trace-format both`
(regions, a mark, ranges on their own lane, a pause, two threads), then
starts `kscope view --port 0` on the run's trace.perfetto-trace and on its
trace.json and asks both the same questions over the real server: the
tracks (unit/threads), every thread's slices at full resolution
(unit/threadTraces), each slice's detail (unit/threadDetail) and each
process's summary must be the same.  The Perfetto card also has the
samples: profile/flat and profile/threads are checked against the run's
profile.db, read here with SQL (the trace carries samples, not the timer
periods each stands for, so each counts once).  Last, through
view_request_driver: a damaged trace, a Perfetto trace kscope did not
write, and a directory that holds only the Perfetto trace.

    perfetto_test.py KSCOPE VIEW_REQUEST_DRIVER EXAMPLES_DIR
"""
import glob
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from kstest import Failure, TempDirs, check  # noqa: E402
import viewer  # noqa: E402  (tests/view/viewer.py)

KSCOPE, DRIVER, EX = sys.argv[1:4]
TIMEOUT = 60


class Viewer(viewer.Viewer):
    """kscope view on PATH (tests/view/viewer.py); ok() sends {} for no
    parameters."""

    def __init__(self, path):
        super().__init__(KSCOPE, path)

    def ok(self, module, command, params=None):
        return super().ok(module, command, params or {})


def driver(path, requests=()):
    text = "".join(json.dumps(r) + "\n" for r in requests)
    p = subprocess.run([DRIVER, path], input=text.encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    return p.returncode, p.stdout.decode()


def the_run(tmp):
    out = tmp()
    p = subprocess.run([KSCOPE, "sample", "-o", out, "-F", "1000", "--samplers", "both",
                        "--trace-format", "both", "--", os.path.join(EX, "regions")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    check(p.returncode == 0, f"kscope sample: exit {p.returncode}: {p.stderr.decode()}")
    runs = glob.glob(os.path.join(out, "sample_*"))
    check(len(runs) == 1, f"run directories {runs}")
    return runs[0]


def same_timeline(pf, js):
    """The Perfetto trace's timeline is the JSON trace's."""
    a, b = pf.ok("timeline", "unit/threads"), js.ok("timeline", "unit/threads")
    check(a == b, f"unit/threads differ:\n  perfetto {a}\n  json     {b}")
    tracks = [(p["pid"], t["tid"]) for p in a["processes"] for t in p["threads"]]
    check(any(t.startswith("async:") for _, t in tracks), f"no lane track in {tracks}")
    nslices = 0
    for pid, tid in tracks:
        q = {"processId": pid, "threadId": tid, "startTime": 0,
             "endTime": a["endTime"] + 1,
             "timePerPx": max(1, -(-(a["endTime"] + 1) // 50000))}
        x, y = pf.ok("timeline", "unit/threadTraces", q), js.ok("timeline",
                                                                 "unit/threadTraces", q)
        check(x == y, f"{pid}/{tid}: slices differ:\n  perfetto {x}\n  json     {y}")
        for depth in x["data"]:
            for s in depth:
                d = {"pid": pid, "tid": tid, "id": s["id"]}
                u, v = pf.ok("timeline", "unit/threadDetail", d), js.ok(
                    "timeline", "unit/threadDetail", d)
                check(u == v, f"{d}: details differ:\n  perfetto {u}\n  json     {v}")
                nslices += 1
    for p in a["processes"]:
        # At most 50000 pixels, however long the run took.
        q = {"processId": p["pid"], "startTime": 0, "endTime": a["endTime"] + 1,
             "timePerPx": max(1000, -(-(a["endTime"] + 1) // 50000))}
        check(pf.ok("timeline", "unit/threadTracesSummary", q) ==
              js.ok("timeline", "unit/threadTracesSummary", q),
              f"process {p['pid']}: summaries differ")
    names = set()
    for pid, tid in tracks:
        q = {"processId": pid, "threadId": tid, "startTime": 0,
             "endTime": a["endTime"] + 1,
             "timePerPx": max(1, -(-(a["endTime"] + 1) // 50000))}
        for depth in pf.ok("timeline", "unit/threadTraces", q)["data"]:
            for s in depth:
                d = pf.ok("timeline", "unit/threadDetail",
                          {"pid": pid, "tid": tid, "id": s["id"]})["data"]
                names.add(d["title"])
    for want in ("outer", "inner", "checkpoint", "io", "cross-thread"):
        check(want in names, f"no slice {want!r} in {sorted(names)}")
    return nslices


def profile(pf, run):
    """The samples of the Perfetto trace are profile.db's samples."""
    con = sqlite3.connect(f"file:{run}/profile.db?mode=ro", uri=True)
    n = con.execute("SELECT count(*) FROM samples").fetchone()[0]
    per_tid = dict(con.execute("SELECT t.tid, count(*) FROM samples s JOIN threads t "
                               "ON t.id = s.thread_id GROUP BY t.tid"))
    leaf = dict(con.execute(
        "SELECT fn.text || '|' || md.text, count(*) FROM samples s "
        "JOIN stacks st ON st.id = s.stack_id JOIN frames f ON f.id = st.frame_id "
        "JOIN strings fn ON fn.id = f.function JOIN strings md ON md.id = f.module "
        "GROUP BY f.function, f.module"))
    con.close()
    check(n > 0, "the run has no samples")
    flat = pf.ok("profile", "profile/flat")
    check(flat["samples"] == n and flat["periods"] == n,
          f"profile/flat: {flat['samples']} samples, {flat['periods']} periods; "
          f"profile.db has {n} samples")
    got = {f"{f['function']}|{f['module_path']}": f["self"] for f in flat["functions"]
           if f["self"]}
    check(got == leaf, f"self counts differ:\n  view {got}\n  db   {leaf}")
    rows = pf.ok("profile", "profile/threads")["rows"]
    got = {r["tid"]: r["samples"] for r in rows if r["samples"]}
    check(got == per_tid, f"samples per thread: view {got}, db {per_tid}")
    return n


def refusals(tmp, run):
    d = tmp()
    # damaged: cut inside the packet that spans the middle of the file, so
    # that the packet's length runs past the end
    data = open(os.path.join(run, "trace.perfetto-trace"), "rb").read()
    off = 0
    while True:
        check(data[off] == 0x0a, f"byte {off}: not a packet")
        n, i, shift = 0, off + 1, 0
        while True:
            n |= (data[i] & 0x7f) << shift
            shift += 7
            i += 1
            if not data[i - 1] & 0x80:
                break
        if i + n > len(data) // 2 and n > 1:
            break
        off = i + n
    cut = os.path.join(d, "cut.perfetto-trace")
    open(cut, "wb").write(data[:i + n // 2])
    rc, out = driver(cut)
    check(rc == 1 and re.match(r"error: .*cut\.perfetto-trace: not a (valid )?Perfetto "
                               r"trace", out), f"a damaged trace: {rc} {out!r}")
    # another tool's: a packet with a clock snapshot (TracePacket field 6)
    other = os.path.join(d, "other.pftrace")
    pkt = bytes([0x32, 0x00, 0x50, 0x01])  # clock_snapshot {}, sequence id 1
    open(other, "wb").write(bytes([0x0a, len(pkt)]) + pkt)
    rc, out = driver(other)
    check(rc == 1 and "a Perfetto trace that kscope did not write" in out and
          "TracePacket field 6 (clock_snapshot)" in out and "ui.perfetto.dev" in out,
          f"another tool's trace: {rc} {out!r}")
    # garbage with the name
    junk = os.path.join(d, "junk.perfetto-trace")
    open(junk, "wb").write(b"\xff" * 64)
    rc, out = driver(junk)
    check(rc == 1 and "not a Perfetto trace" in out, f"junk: {rc} {out!r}")
    # a directory with only the Perfetto trace: one card with both kinds
    only = os.path.join(tmp(), "sample_copy")
    os.mkdir(only)
    shutil.copy(os.path.join(run, "trace.perfetto-trace"), only)
    rc, out = driver(only, [{"id": 1, "moduleName": "timeline", "type": "request",
                             "command": "import/action", "params": {}}])
    check(rc == 0, f"a directory with the Perfetto trace: {rc} {out!r}")
    cards = json.loads(out)["body"]["result"]
    check(len(cards) == 1 and cards[0]["kinds"] == ["timeline", "profile"],
          f"cards {cards}")


def main():
    tmp = TempDirs("ks-view-perfetto-")
    try:
        run = the_run(tmp)
        with Viewer(os.path.join(run, "trace.perfetto-trace")) as pf, \
                Viewer(os.path.join(run, "trace.json")) as js:
            c = pf.ok("timeline", "import/action")["result"]
            check(len(c) == 1 and c[0]["kinds"] == ["timeline", "profile"] and
                  c[0]["cardId"] == "sample", f"Perfetto cards {c}")
            c = js.ok("timeline", "import/action")["result"]
            check(len(c) == 1 and c[0]["kinds"] == ["timeline"], f"JSON cards {c}")
            nslices = same_timeline(pf, js)
            nsamples = profile(pf, run)
        refusals(tmp, run)
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        tmp.remove()
    print(f"PASS: {nslices} slices and {nsamples} samples as the JSON trace and "
          f"profile.db have them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
