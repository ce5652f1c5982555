#!/usr/bin/env python3
"""End-to-end tests of kscope memcheck, contention and falseshare.

Each scenario runs kscope on a real program (the examples under
examples/memory and examples/threads, or everyday system binaries) and
asserts on the deliverables it wrote: report.json, findings.sarif,
memcheck.xml, and on the exit status and the program's own output.

    e2e.py KSCOPE BUILD_DIR SOURCE_DIR SCENARIO
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for kstest
from kstest import Failure, check  # noqa: E402
import fs_patterns  # noqa: E402  (this directory: the sharing_patterns modes)

KSCOPE, BUILD, SRC, SCENARIO = sys.argv[1:5]
HERE = os.path.dirname(os.path.abspath(__file__))
MEM = os.path.join(BUILD, "examples", "memory")
THR = os.path.join(BUILD, "examples", "threads")
# The exit status when memcheck or falseshare reported findings (README.md).
FINDINGS = 100


def run_tool(tool, argv, opts=(), expect_exit=None, stdin=None):
    """Runs `kscope TOOL OPTS -- ARGV`; returns (exit, stdout, run dir)."""
    out = tempfile.mkdtemp(prefix="ks-e2e-")
    cmd = [KSCOPE, tool, "-o", out, "--log-level", "warn", *opts, "--", *argv]
    p = subprocess.run(cmd, stdin=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    stdout = p.stdout.decode(errors="replace")
    runs = [d for d in os.listdir(out) if d.startswith(tool + "_")]
    check(len(runs) == 1, f"{tool}: expected one run directory in {out}, got {runs}; "
          f"stderr:\n{p.stderr.decode(errors='replace')}")
    rundir = os.path.join(out, runs[0])
    if expect_exit is not None:
        check(p.returncode == expect_exit,
              f"{' '.join(cmd)}: exit {p.returncode}, expected {expect_exit}; "
              f"stderr:\n{p.stderr.decode(errors='replace')[-3000:]}")
    return p.returncode, stdout, rundir, p.stderr.decode(errors="replace")


def report(rundir):
    with open(os.path.join(rundir, "report.json")) as f:
        return json.load(f)


def marker(path, tag):
    """(file name, line) of the line of path carrying `/* TAG ... */`."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"/\*\s*" + re.escape(tag) + r"\b(?::\s*([\w-]+))?", line)
            if m:
                return os.path.basename(path), n, m.group(1)
    raise Failure(f"{path}: no /* {tag} */ marker")


def frame_at(stack, fname):
    """The first frame of stack in source file fname, or None."""
    # (clang names a file relative to the compilation directory, gcc by
    # its base name: compare base names.)
    for fr in stack or []:
        if os.path.basename(fr.get("file") or "") == fname:
            return fr
    return None


def contexts(rep):
    """Every memcheck report: errors and leaks, as (kind, stack, item)."""
    out = [(e["kind"], e.get("stack"), e) for e in rep.get("errors", [])]
    out += [(l["kind"], l.get("stack"), l) for l in rep.get("leaks", [])]
    return out


def validate_sarif(rundir, extra=()):
    p = subprocess.run([sys.executable, os.path.join(HERE, "report", "check_sarif.py"),
                        os.path.join(rundir, "findings.sarif"), *extra],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check(p.returncode == 0, "findings.sarif: " + p.stdout.decode(errors="replace"))


def validate_xml(rundir, extra=()):
    p = subprocess.run([sys.executable, os.path.join(HERE, "report", "check_xml.py"),
                        os.path.join(rundir, "memcheck.xml"), *extra],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check(p.returncode == 0, "memcheck.xml: " + p.stdout.decode(errors="replace"))


# ---------------------------------------------------------------------
# memcheck
# ---------------------------------------------------------------------

DEFECTS = ["oob", "uaf", "uninit", "doublefree", "leak", "invalid_free",
           "uninit_syscall"]
# Which defects have a heap block behind them, and a free stack.
WITH_BLOCK = {"oob", "uaf", "doublefree", "invalid_free"}
WITH_FREE = {"uaf", "doublefree"}


def defect(name):
    src = os.path.join(SRC, "examples", "memory", name + ".c")
    fname, line, kind = marker(src, "DEFECT")
    # (The defect programs' output depends on what their bad accesses
    # read, so it is not compared.)
    code, stdout, rundir, _ = run_tool("memcheck", [os.path.join(MEM, name)],
                                       ["--xml"], expect_exit=FINDINGS)
    rep = report(rundir)
    ctx = contexts(rep)
    kinds = sorted(k for k, _, _ in ctx)
    check(kinds == [kind], f"{name}: expected exactly one {kind} report, got {kinds}")
    _, stack, item = ctx[0]
    fr = frame_at(stack, fname)
    check(fr is not None and fr.get("line") == line,
          f"{name}: {kind} expected at {fname}:{line}, stack is "
          + ", ".join(f"{f.get('fn')}@{f.get('file')}:{f.get('line')}" for f in stack or []))
    if name in WITH_BLOCK:
        blk = item.get("block")
        check(blk and blk.get("alloc_stack"), f"{name}: no allocation stack")
        check(frame_at(blk["alloc_stack"], fname) is not None,
              f"{name}: the allocation stack does not reach {fname}")
        if name in WITH_FREE:
            check(blk.get("free_stack") and frame_at(blk["free_stack"], fname),
                  f"{name}: no free stack reaching {fname}")
    validate_sarif(rundir, ["--expect-results", "1"])
    validate_xml(rundir, ["--expect-errors", "1"])


def clean(argv, stdin_path=None, same_output=True):
    stdin = open(stdin_path, "rb") if stdin_path else None
    native = subprocess.run(argv, stdin=stdin, stdout=subprocess.PIPE)
    if stdin:
        stdin.seek(0)
    code, stdout, rundir, err = run_tool("memcheck", argv, ["--xml"], stdin=stdin)
    check(code == native.returncode,
          f"{argv}: exit {code} under kscope, {native.returncode} without; {err[-2000:]}")
    check(not same_output or stdout == native.stdout.decode(errors="replace"),
          f"{argv}: the program's output changed under kscope")
    rep = report(rundir)
    ctx = contexts(rep)
    check(not ctx, f"{argv}: expected no reports, got "
          + "; ".join(f"{k} at " + ", ".join(f"{f.get('fn')}@{f.get('file')}:{f.get('line')}"
                                             for f in (s or [])[:4]) for k, s, _ in ctx))
    validate_sarif(rundir, ["--expect-results", "0"])
    # memcheck.xml is Memcheck's own, unfiltered: whatever it holds is
    # what kscope's filter dropped (sort's leak in code without debug
    # information), nothing more.
    validate_xml(rundir, ["--expect-errors", str(rep["summary"]["filtered"])])


def everyday():
    """ls, sort and python3: programs nobody should get reports about."""
    tmp = tempfile.mkdtemp(prefix="ks-e2e-sort-")
    path = os.path.join(tmp, "in.txt")
    with open(path, "w") as f:
        for i in range(2000):
            f.write(f"{(i * 7919) % 2003} line {i}\n")
    # / changes while tests run (temporary directories come and go), so
    # only ls's status is compared there; a fixed directory's listing
    # must come out the same.
    clean(["ls", "-l", "/"], same_output=False)
    clean(["ls", "-l", os.path.join(SRC, "examples", "memory")])
    clean(["sort", path])
    clean(["/usr/bin/python3", "-c", "pass"])
    shutil.rmtree(tmp)

# ---------------------------------------------------------------------
# falseshare and contention
# ---------------------------------------------------------------------

def thread_example(name):
    return os.path.join(THR, name)


def context_lines(entries, fname):
    """file:line of the innermost frame of each context in fname."""
    out = set()
    for e in entries:
        fr = frame_at(e.get("context"), fname)
        if fr:
            out.add(fr.get("line"))
    return out


def fs_objects(rep):
    return rep["false_sharing"]["objects"]


def fs_summary(rep):
    """What must not depend on scheduling: per falsely shared object its
    name, verdict, size, and per line the words each thread touched and
    the source lines of the accesses."""
    out = []
    for o in fs_objects(rep):
        var = o.get("variable") or {}
        lines = []
        for ln in o["lines"]:
            words = sorted((tuple(t["read_words"]), tuple(t["write_words"]))
                           for t in ln["threads"] if t["reads"] + t["writes"] >= 100)
            lines.append((ln["verdict"], ln["offset_in_object"], tuple(words)))
        out.append((var.get("name"), var.get("kind"), o["size"], o["verdict"],
                    tuple(lines)))
    return sorted(out, key=repr)


def fs_false(extra=()):
    src = os.path.join(SRC, "examples", "threads", "falseshare.c")
    fname, line, _ = marker(src, "FALSE SHARING")
    native = subprocess.run([thread_example("falseshare")], stdout=subprocess.PIPE)
    code, stdout, rundir, err = run_tool("falseshare", [thread_example("falseshare")],
                                         extra, expect_exit=FINDINGS)
    check(stdout == native.stdout.decode(), "falseshare: output changed under kscope")
    rep = report(rundir)
    objs = fs_objects(rep)
    check(len(objs) == 1, f"falseshare: expected one falsely shared object, got "
          f"{[o['name'] for o in objs]}")
    o = objs[0]
    check(o["variable"].get("name") == "counters" and o["variable"]["kind"] == "global",
          f"falseshare: the object is {o['name']}, expected the global counters")
    check(o["verdict"] == "false", f"falseshare: verdict {o['verdict']}")
    check(o["size"] == 16, f"falseshare: counters is 16 bytes, report says {o['size']}")
    # Four workers, each writing its own int (4 bytes: the core tracks
    # bytes) of the one line.
    ln = o["lines"][0]
    check(ln["word_size"] == 1, f"falseshare: words of {ln['word_size']} bytes")
    with open(os.path.join(rundir, "report.txt")) as f:
        text = f.read()
    check("Cache lines of 64 bytes, words of 1 byte\n" in text and
          "sharing, words of 1 byte;" in text, "falseshare: report.txt's word size in words")
    writers = sorted(tuple(t["write_words"]) for t in ln["threads"] if t["writes"])
    check(writers == [tuple(range(4 * i, 4 * i + 4)) for i in range(4)],
          f"falseshare: expected each worker to write its own word, got {writers}")
    gi = rep["false_sharing"]["global_all_threads_info"]
    check(line in context_lines(gi, fname),
          f"falseshare: {fname}:{line} not among the contexts "
          f"{sorted(context_lines(gi, fname))}")
    counts = [e["count"] for e in gi]
    check(counts == sorted(counts, reverse=True), "global-all-threads-info not sorted")
    compact = rep["false_sharing"]["global_all_threads_compact_info"]
    check(len(compact) == 1 and compact[0]["count"] == sum(counts),
          "global-all-threads-compact-info does not merge the contexts of counters")
    check(len(rep["false_sharing"]["per_thread"]) >= 4, "per-thread view misses workers")
    validate_sarif(rundir, ["--expect-results", "1"])
    return rep


def fs_padded():
    code, stdout, rundir, err = run_tool("falseshare",
                                         [thread_example("falseshare_padded")],
                                         expect_exit=0)
    rep = report(rundir)
    check(rep["false_sharing"]["false_lines"] == 0 and not fs_objects(rep),
          f"falseshare_padded: reported {[o['name'] for o in fs_objects(rep)]}")
    validate_sarif(rundir, ["--expect-results", "0"])


def fs_true():
    code, stdout, rundir, err = run_tool("falseshare", [thread_example("truesharing")],
                                         expect_exit=0)
    rep = report(rundir)
    check(not fs_objects(rep), f"truesharing: reported as false sharing: "
          f"{[o['name'] for o in fs_objects(rep)]}")
    names = [t.get("name", "") for t in rep["true_sharing"]]
    check(any(n.startswith("total ") for n in names),
          f"truesharing: the line of total is not classified true sharing: {names}")
    tl = [t for t in rep["true_sharing"] if t.get("name", "").startswith("total ")][0]
    check(tl["verdict"] == "true", f"truesharing: verdict {tl['verdict']}")


def fs_heap():
    src = os.path.join(SRC, "examples", "threads", "falseshare_heap.c")
    fname, line, _ = marker(src, "FALSE SHARING")
    code, stdout, rundir, err = run_tool("falseshare",
                                         [thread_example("falseshare_heap")],
                                         expect_exit=FINDINGS)
    objs = fs_objects(report(rundir))
    check(len(objs) == 1 and objs[0]["variable"]["kind"] == "heap",
          f"falseshare_heap: expected one heap object, got {[o['name'] for o in objs]}")
    check(frame_at(objs[0]["variable"].get("alloc_stack"), fname) is not None,
          "falseshare_heap: the allocation stack does not reach the program")
    gi = report(rundir)["false_sharing"]["global_all_threads_info"]
    check(line in context_lines(gi, fname), f"falseshare_heap: {fname}:{line} missing")


def fs_fairsched():
    """The verdicts do not depend on how Valgrind schedules threads."""
    a = fs_summary(fs_false())
    b = fs_summary(fs_false(["--fair-sched"]))
    check(a == b, f"--fair-sched changed the result:\n{a}\n{b}")


def contention():
    src = os.path.join(SRC, "examples", "threads", "contention.c")
    fname, line, _ = marker(src, "CONTENTION")
    native = subprocess.run([thread_example("contention")], stdout=subprocess.PIPE)
    code, stdout, rundir, err = run_tool("contention", [thread_example("contention")],
                                         expect_exit=0)
    check(stdout == native.stdout.decode(), "contention: output changed under kscope")
    rep = report(rundir)
    sm = rep["summary"]
    check(sm["contention_accesses"] > 0 and 0 < sm["contention_percent"] < 100,
          f"contention: no contention measured: {sm}")
    check(abs(sm["contention_percent"] - 100.0 * sm["contention_accesses"] / sm["accesses"])
          < 1e-6, "contention: the percentage is not contention / all accesses")
    objs = rep["objects"]
    check(objs and objs[0]["variable"].get("name") == "shared_table",
          f"contention: the most contended object is {objs[0]['name'] if objs else None}")
    check(objs[0]["invalidations"] > 0, "contention: no invalidations on shared_table")
    top = rep["sites"][0]["location"]
    check(os.path.basename(top.get("file") or "") == fname and top.get("line") == line,
          f"contention: the top site is {top}, expected {fname}:{line}")
    # Valgrind reuses the number of a thread that ended, so how many
    # thread records there are depends on scheduling; the counts must add
    # up whatever it was.
    check(len(rep["threads"]) >= 2, "contention: per-thread counts missing")
    check(sum(t["accesses"] for t in rep["threads"]) == sm["accesses"],
          "contention: the per-thread accesses do not add up to the total")
    validate_sarif(rundir)


def threads300():
    """300 threads alive at once, under each analysis."""
    argv = [thread_example("many_threads"), "300"]
    native = subprocess.run(argv, stdout=subprocess.PIPE)
    check(native.returncode == 0, "many_threads failed natively")
    for tool in ("memcheck", "contention", "falseshare"):
        code, stdout, rundir, err = run_tool(tool, argv)
        check(code == 0, f"{tool}: 300 threads: exit {code}; {err[-2000:]}")
        check(stdout == native.stdout.decode(), f"{tool}: 300 threads: output changed")
        rep = report(rundir)
        if tool == "memcheck":
            check(not contexts(rep), f"memcheck: 300 threads: reports {contexts(rep)[:2]}")
        else:
            check(len(rep["threads"]) >= 300,
                  f"{tool}: 300 threads: {len(rep['threads'])} threads counted")


def patterns(mode):
    """examples/threads/sharing_patterns under the Valgrind front end
    (fs_patterns.py says what each mode must give)."""
    import fs_patterns

    def run(argv_tail, opts, env, expect_exit):
        out = tempfile.mkdtemp(prefix="ks-e2e-")
        cmd = [KSCOPE, "falseshare", "-o", out, "--log-level", "warn", *opts, "--",
               thread_example("sharing_patterns"), *argv_tail]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env={**os.environ, **(env or {})}, timeout=600)
        err = p.stderr.decode(errors="replace")
        check(p.returncode == expect_exit,
              f"{' '.join(cmd)}: exit {p.returncode}, expected {expect_exit}; {err[-3000:]}")
        runs = [d for d in os.listdir(out) if d.startswith("falseshare_")]
        check(len(runs) == 1, f"expected one run directory in {out}, got {runs}")
        rep = report(os.path.join(out, runs[0]))
        check(rep["settings"].get("front_end", "valgrind") == "valgrind",
              f"front end {rep['settings'].get('front_end')}")
        return rep

    fs_patterns.check_pattern(mode, run, 20000)
    if mode == "readmostly":
        # A bad threshold is refused before anything runs.
        for bad in ("-1", "x", "1000000001"):
            p = subprocess.run([KSCOPE, "falseshare", "--min-writes", bad, "--",
                                thread_example("sharing_patterns"), "readmostly", "10"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            err = p.stderr.decode(errors="replace")
            check(p.returncode == fs_patterns.USAGE and "min-writes" in err,
                  f"--min-writes {bad}: exit {p.returncode}, stderr {err!r}")


SCENARIOS = {
    "fs_false": fs_false,
    "fs_padded": fs_padded,
    "fs_true": fs_true,
    "fs_heap": fs_heap,
    "fs_fairsched": fs_fairsched,
    "contention": contention,
    "threads300": threads300,
}
# fs_MODE: every mode of examples/threads/sharing_patterns (fs_patterns.py).
SCENARIOS.update({"fs_" + m: (lambda m=m: patterns(m)) for m in fs_patterns.PATTERNS})


# ---------------------------------------------------------------------
# Processes: fork, exec, descriptors, signals, threads, static programs
# ---------------------------------------------------------------------

PROCS = os.path.join(BUILD, "tests", "memtools", "procs")
PROC_SRC = os.path.join(HERE, "procs")
TOOLS = ("memcheck", "contention", "falseshare")


def proc(name):
    return os.path.join(PROCS, name)


def errors_at(rep, fname):
    """{(pid, kind, line)} of the memcheck errors with a frame in fname."""
    out = set()
    for e in rep.get("errors", []):
        fr = frame_at(e.get("stack"), fname)
        if fr:
            out.add((e["pid"], e["kind"], fr.get("line")))
    return out


def expect_error(rep, src, tag, pid):
    fname, line, kind = marker(os.path.join(PROC_SRC, src), tag)
    check((pid, kind, line) in errors_at(rep, fname),
          f"{tag}: no {kind} at {fname}:{line} in process {pid}; errors: "
          f"{sorted(errors_at(rep, fname))}")


def procs_of(rep):
    return rep["processes"]


def check_tree(rep, tool):
    """Every process image has a findings file's record, the program's
    first, and every other one's parent is a process of the run."""
    ps = procs_of(rep)
    check(ps and ps[0]["pid"] == rep["program"]["pid"] and ps[0]["ppid"] is None,
          f"{tool}: the program is not the first process: {ps[:1]}")
    pids = {p["pid"] for p in ps}
    for p in ps[1:]:
        check(p["ppid"] in pids, f"{tool}: process {p['pid']}'s parent {p['ppid']} "
              f"is not in the run")
    check(not any(p["truncated"] for p in ps), f"{tool}: a process left no end record")


def proc_fork():
    """fork without exec: three processes, each with its own file and error
    (contention, falseshare).  memcheck on Valgrind's Memcheck checks the
    program and leaves a forked child that does not exec unchecked, as
    docs/memtools.md says: the parent's error is reported, its report stays
    whole, and every report and stderr say which two processes were not
    checked."""
    native = subprocess.run([proc("mt_fork")], stdout=subprocess.PIPE)
    check(native.returncode == 0, "mt_fork failed natively")
    for tool in TOOLS:
        code, stdout, rundir, err = run_tool(tool, [proc("mt_fork")],
                                             expect_exit=FINDINGS if tool == "memcheck" else 0)
        check(sorted(stdout.splitlines()) == sorted(native.stdout.decode().splitlines()),
              f"{tool}: mt_fork's output changed: {stdout!r}")
        rep = report(rundir)
        check_tree(rep, tool)
        if tool == "memcheck":
            ps = procs_of(rep)
            check(len(ps) == 1 and ps[0]["exit"] == {"how": "exit", "code": 0},
                  f"memcheck: processes {ps}")
            expect_error(rep, "mt_fork.c", "PARENT ERROR", ps[0]["pid"])
            check(len(rep["errors"]) == 1, f"memcheck: expected the parent's error only, "
                  f"got {[(e['pid'], e['kind']) for e in rep['errors']]}")
            validate_sarif(rundir, ["--expect-results", "1"])
            said = rep.get("incomplete") or ""
            check("2 processes forked without exec were not checked" in said and
                  "-fsanitize=address" in said, f"memcheck: report.json: {said!r}")
            check("2 processes forked without exec were not checked" in err,
                  f"memcheck: stderr does not say so: {err[-1500:]!r}")
            check(not [f for f in os.listdir(rundir) if f.startswith("forked.")],
                  f"memcheck: marks left behind: {os.listdir(rundir)}")
            continue
        ps = procs_of(rep)
        check(len(ps) == 3, f"{tool}: expected 3 processes, got {ps}")
        root, child, grandchild = ps[0]["pid"], ps[1]["pid"], ps[2]["pid"]
        check(ps[1]["ppid"] == root and ps[2]["ppid"] == child,
              f"{tool}: the process tree is {[(p['pid'], p['ppid']) for p in ps]}")
        check(ps[0]["exit"] == {"how": "exit", "code": 0} and
              ps[1]["exit"] == {"how": "exit", "code": 7},
              f"{tool}: exits {[p['exit'] for p in ps]}")
        files = sorted(f for f in os.listdir(rundir) if f.startswith("findings."))
        check(files == sorted(["findings.jsonl", f"findings.{child}.jsonl",
                               f"findings.{grandchild}.jsonl", "findings.sarif"]),
              f"{tool}: findings files {files}")
        with open(os.path.join(rundir, "report.txt")) as f:
            txt = f.read()
        check(f"process {grandchild}:" in txt and "Processes (3 images" in txt,
              f"{tool}: report.txt does not show the process tree")
        if tool == "memcheck":
            expect_error(rep, "mt_fork.c", "PARENT ERROR", root)
            expect_error(rep, "mt_fork.c", "CHILD ERROR", child)
            expect_error(rep, "mt_fork.c", "GRANDCHILD ERROR", grandchild)
            check(len(rep["errors"]) == 3, f"memcheck: expected 3 errors, got "
                  f"{[(e['pid'], e['kind']) for e in rep['errors']]}")
            validate_sarif(rundir, ["--expect-results", "3"])
        else:
            check({t["pid"] for t in rep["threads"]} == {root, child, grandchild},
                  f"{tool}: threads of {sorted({t['pid'] for t in rep['threads']})}")


def exec_run(tool, argv, expect_images, final_status, forked=False):
    """Runs argv, which ends up exec'ing mt_error FINAL_STATUS; checks the
    exec'd image is there with its error and its exit status.  forked: the
    exec happens in a forked child, whose image before the exec Memcheck
    does not check (docs/memtools.md, Limits): one image fewer there."""
    expect = FINDINGS if tool == "memcheck" else final_status
    code, stdout, rundir, err = run_tool(tool, argv, expect_exit=expect)
    check(re.search(r"^mt_error \d+$", stdout, re.M), f"{tool}: mt_error did not run: "
          f"{stdout!r}")
    rep = report(rundir)
    check_tree(rep, tool)
    ps = procs_of(rep)
    if tool == "memcheck" and forked:
        expect_images -= 1
    check(len(ps) == expect_images, f"{tool}: expected {expect_images} process images, "
          f"got {[(p['pid'], p['image'], p['exe']) for p in ps]}")
    last = [p for p in ps if os.path.basename(p["exe"]) == "mt_error" and
            p["exit"].get("how") != "exec"]
    # Memcheck's XML does not give a child's exit status: kscope knows
    # the program's own (it waited for it), not a child's.
    top = last and last[0]["pid"] == rep["program"]["pid"]
    want = final_status if tool != "memcheck" or top else None
    unseen = tool == "memcheck" and forked
    check(len(last) == 1 and (last[0]["image"] >= 1) != unseen and
          last[0]["exit"] == {"how": "exit", "code": want},
          f"{tool}: the exec'd mt_error image: {last}")
    before = [p for p in ps if p["pid"] == last[0]["pid"] and p["image"] == 0]
    check(unseen or (len(before) == 1 and before[0]["exit"] == {"how": "exec"}),
          f"{tool}: the image that exec'd: {before}")
    if tool == "memcheck":
        expect_error(rep, "mt_error.c", "EXEC ERROR", last[0]["pid"])
        # Memcheck's log: the program's last image in valgrind.log.
        return rep
    check(any(t["pid"] == last[0]["pid"] for t in rep["threads"]),
          f"{tool}: no thread counts of the exec'd image")
    # valgrind.log is one file with every process's lines.
    with open(os.path.join(rundir, "valgrind.log")) as f:
        log = f.read()
    check(f"=={last[0]['pid']}== Command: {proc('mt_error')}" in log,
          f"{tool}: valgrind.log lacks the exec'd image")
    check(not [f for f in os.listdir(rundir) if re.match(r"valgrind\.\d+\.log$", f)],
          f"{tool}: per-process logs left behind")
    return rep


def proc_forkexec():
    for tool in TOOLS:
        rep = exec_run(tool, [proc("mt_forkexec"), proc("mt_error"), "3"], 3, 3,
                       forked=True)
        if tool == "memcheck":
            expect_error(rep, "mt_forkexec.c", "FORKEXEC ERROR", rep["program"]["pid"])


def proc_execchain():
    """An image with a heap error that execs another (mt_error execs
    mt_error): both images are reported, each with its error, the first
    ended by its exec -- under Memcheck too, where the next image's
    Valgrind would truncate the first's XML if kscope did not set it
    aside before the exec."""
    for tool in TOOLS:
        rep = exec_run(tool, [proc("mt_error"), "0", proc("mt_error"), "4"], 2, 4)
        if tool != "memcheck":
            continue
        pid = rep["program"]["pid"]
        errs = [e for e in rep["errors"] if e["pid"] == pid]
        check(len(errs) == 2, f"memcheck: both images' errors expected: {errs}")
        images = sorted(p["image"] for p in rep["processes"] if p["pid"] == pid)
        check(images == [0, 1], f"memcheck: images {images}")


def proc_script():
    """A #!/bin/sh script that execs the program."""
    tmp = tempfile.mkdtemp(prefix="ks-e2e-script-")
    script = os.path.join(tmp, "run.sh")
    with open(script, "w") as f:
        f.write('#!/bin/sh\nexec "$@"\n')
    os.chmod(script, 0o755)
    for tool in TOOLS:
        exec_run(tool, [script, proc("mt_error"), "5"], 2, 5)
    shutil.rmtree(tmp)


def proc_shim():
    """A pyenv-style shim: a script that sets up the environment and
    execs python3, which execs the program (os.execv)."""
    tmp = tempfile.mkdtemp(prefix="ks-e2e-shim-")
    shim = os.path.join(tmp, "python3")
    with open(shim, "w") as f:
        f.write('#!/bin/sh\nPYTHONDONTWRITEBYTECODE=1 exec /usr/bin/python3 "$@"\n')
    os.chmod(shim, 0o755)
    code = f"import os; os.execv({proc('mt_error')!r}, ['mt_error', '6'])"
    exec_run("memcheck", [shim, "-c", code], 3, 6)
    shutil.rmtree(tmp)


def proc_closefds():
    """The program closes every descriptor: the tool's output survives."""
    for tool in TOOLS:
        code, stdout, rundir, err = run_tool(tool, [proc("mt_closefds")],
                                             expect_exit=FINDINGS if tool == "memcheck" else 0)
        rep = report(rundir)
        check(not rep["truncated"] and rep["exit"] == {"how": "exit", "code": 0},
              f"{tool}: mt_closefds: exit {rep['exit']}, truncated {rep['truncated']}")
        if tool == "memcheck":
            expect_error(rep, "mt_closefds.c", "CLOSEFDS ERROR", rep["program"]["pid"])
        else:
            check(rep["threads"] and rep["summary"]["accesses"] > 0,
                  f"{tool}: mt_closefds: no counts")


def proc_signal():
    """Deaths by SIGSEGV and SIGABRT after a heap error."""
    for sig, num, name in (("segv", 11, "SIGSEGV"), ("abrt", 6, "SIGABRT")):
        for tool in TOOLS:
            for opts, expect in (([], FINDINGS), (["--error-exitcode", "0"], 128 + num)):
                if tool == "contention":
                    if opts:
                        continue
                    expect = 128 + num
                elif tool == "falseshare":
                    expect = 128 + num  # no false sharing in it
                code, stdout, rundir, err = run_tool(tool, [proc("mt_signal"), sig], opts,
                                                     expect_exit=expect)
                rep = report(rundir)
                check(rep["exit"] == {"how": "signal", "signal": num},
                      f"{tool} {sig}: exit {rep['exit']}")
                with open(os.path.join(rundir, "report.txt")) as f:
                    txt = f.read()
                check(f"was killed by signal {num} ({name})" in txt,
                      f"{tool} {sig}: report.txt does not say the signal")
                if tool == "memcheck":
                    expect_error(rep, "mt_signal.c", "SIGNAL ERROR", rep["program"]["pid"])


def proc_max_threads():
    """More threads than --max-threads: a message naming the option, exit 2."""
    for tool in TOOLS:
        p = subprocess.run([KSCOPE, tool, "-o", tempfile.mkdtemp(prefix="ks-e2e-"),
                            "--max-threads", "4", "--", thread_example("many_threads"), "20"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 2, f"{tool}: exit {p.returncode}, expected 2; {err[-2000:]}")
        check("--max-threads" in err and "no start record" not in err,
              f"{tool}: the message does not name --max-threads: {err[-2000:]}")


def proc_static():
    """A statically linked program is refused before anything runs."""
    for tool in TOOLS:
        out = tempfile.mkdtemp(prefix="ks-e2e-")
        p = subprocess.run([KSCOPE, tool, "-o", out, "--", proc("mt_static")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 2, f"{tool}: exit {p.returncode}, expected 2; {err}")
        check("statically linked" in err and "malloc" in err,
              f"{tool}: the message does not say why: {err}")
        check(not os.listdir(out), f"{tool}: a static program left {os.listdir(out)}")


def thread_numbers():
    """The main thread is thread 1, the workers 2 and up, in every tool."""
    argv = [thread_example("falseshare")]
    for tool in ("contention", "falseshare"):
        code, stdout, rundir, err = run_tool(tool, argv)
        tids = sorted(t["tid"] for t in report(rundir)["threads"])
        check(tids == [1, 2, 3, 4, 5], f"{tool}: thread numbers {tids}")
    code, stdout, rundir, err = run_tool("memcheck", [proc("mt_error")],
                                         expect_exit=FINDINGS)
    tids = [e["tid"] for e in report(rundir)["errors"]]
    check(tids == [1], f"memcheck: the main thread's error names thread {tids}")


SCENARIOS.update({
    "proc_fork": proc_fork,
    "proc_forkexec": proc_forkexec,
    "proc_execchain": proc_execchain,
    "proc_script": proc_script,
    "proc_shim": proc_shim,
    "proc_closefds": proc_closefds,
    "proc_signal": proc_signal,
    "proc_max_threads": proc_max_threads,
    "proc_static": proc_static,
    "thread_numbers": thread_numbers,
})


# ---------------------------------------------------------------------

def main():
    s = SCENARIO
    if s.startswith("defect_"):
        defect(s[len("defect_"):])
    elif s.startswith("clean_"):
        clean([os.path.join(MEM, s[len("clean_"):])])
    elif s == "everyday":
        everyday()
    elif s in SCENARIOS:
        SCENARIOS[s]()
    else:
        raise Failure(f"unknown scenario {s}")


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print(f"FAIL {SCENARIO}: {e}")
        sys.exit(1)
    print(f"ok {SCENARIO}")
