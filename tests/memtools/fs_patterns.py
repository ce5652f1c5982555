"""Checks of `kscope falseshare` on examples/threads/sharing_patterns,
shared by the Valgrind front end's tests (e2e.py) and the compiled front
end's (rt/test_rt.py): the verdicts that need byte granularity and the
--min-writes threshold (docs/memtools.md), asserted on report.json.

check_pattern(mode, run) runs one mode; `run(argv_tail, opts, env,
expect_exit)` runs kscope falseshare on sharing_patterns with the given
arguments and returns its report.json as a dict (the caller knows which
front end and which binary).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from kstest import check  # noqa: E402

FINDINGS = 100  # falseshare's exit status with findings
USAGE = 2       # a bad command line


def fs_objects(rep):
    return rep["false_sharing"]["objects"]


def one_object(rep, name, mode):
    objs = fs_objects(rep)
    check(len(objs) == 1 and (objs[0].get("variable") or {}).get("name") == name,
          f"{mode}: expected false sharing on {name} alone, got "
          f"{[o['name'] for o in objs]}")
    return objs[0]


def writers(line, n):
    """Bytes written per thread that wrote the line n times or more."""
    check(line["word_size"] == 1, f"words of {line['word_size']} bytes, expected bytes")
    return sorted(tuple(t["write_words"]) for t in line["threads"] if t["writes"] >= n)


def flags(run, n):
    rep = run([str(n)], [], None, FINDINGS)
    o = one_object(rep, "flags", "flags")
    check(o["verdict"] == "false" and o["size"] == 4,
          f"flags: verdict {o['verdict']}, size {o['size']}")
    ln = o["lines"][0]
    check(ln["verdict"] == "false" and ln["offset_in_object"] == 0,
          f"flags: line verdict {ln['verdict']} at {ln['offset_in_object']}")
    w = writers(ln, n)
    check(w == [(0,), (1,), (2,), (3,)],
          f"flags: expected each thread to write its own byte, got {w}")
    check(not rep["true_sharing"], f"flags: true sharing reported: "
          f"{[t.get('name') for t in rep['true_sharing']]}")


def samebyte(run, n):
    rep = run([str(n)], [], None, 0)
    check(not fs_objects(rep), f"samebyte: reported as false sharing: "
          f"{[o['name'] for o in fs_objects(rep)]}")
    tl = [t for t in rep["true_sharing"] if (t.get("name") or "").startswith("shared_flag ")]
    check(len(tl) == 1 and tl[0]["verdict"] == "true",
          f"samebyte: shared_flag not truly shared: "
          f"{[(t.get('name'), t['verdict']) for t in rep['true_sharing']]}")
    w = [t["write_words"] for t in tl[0]["threads"] if t["writes"] >= n]
    check(len(w) == 4 and all(x == [0] for x in w),
          f"samebyte: expected 4 threads writing byte 0, got {w}")


def readmostly(run, n):
    # The default threshold (100 writes by each of two threads): one store
    # per thread next to the table is not false sharing.
    rep = run([str(n)], [], None, 0)
    sm = rep["summary"]
    check(rep["false_sharing"]["false_lines"] == 0 and not fs_objects(rep),
          f"readmostly: reported as false sharing: {[o['name'] for o in fs_objects(rep)]}")
    check(sm.get("min_writes") == 100 and sm.get("read_mostly_lines", 0) >= 1,
          f"readmostly: summary min_writes {sm.get('min_writes')}, read_mostly_lines "
          f"{sm.get('read_mostly_lines')}")
    # No threshold: the line's pattern alone says false sharing, as before.
    rep = run([str(n)], ["--min-writes", "0"], None, FINDINGS)
    o = one_object(rep, "lookup", "readmostly --min-writes 0")
    check(o["verdict"] == "false", f"readmostly --min-writes 0: verdict {o['verdict']}")
    check(rep["summary"].get("read_mostly_lines") == 0 and rep["summary"]["min_writes"] == 0,
          f"readmostly --min-writes 0: summary {rep['summary']}")
    # The environment variable sets it too.
    rep = run([str(n)], [], {"KSCOPE_MIN_WRITES": "0"}, FINDINGS)
    one_object(rep, "lookup", "readmostly KSCOPE_MIN_WRITES=0")


def counters(run, n):
    rep = run([str(n)], [], None, FINDINGS)
    o = one_object(rep, "slots", "counters")
    check(o["verdict"] == "false" and o["size"] == 32,
          f"counters: verdict {o['verdict']}, size {o['size']}")
    w = writers(o["lines"][0], n)
    check(w == [tuple(range(8 * i, 8 * i + 8)) for i in range(4)],
          f"counters: expected each thread to write its own 8 bytes, got {w}")
    check(rep["summary"].get("read_mostly_lines") == 0,
          f"counters: read-mostly lines {rep['summary'].get('read_mostly_lines')}")


PATTERNS = {"flags": flags, "samebyte": samebyte, "readmostly": readmostly,
            "counters": counters}


def check_pattern(mode, run, n):
    PATTERNS[mode](lambda tail, opts, env, code: run([mode, *tail], opts, env, code), n)
