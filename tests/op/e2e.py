#!/usr/bin/env python3
"""End-to-end tests of kscope op.

Each scenario runs `kscope op` on a real OpenCL program (the examples
under examples/opencl, or /bin/true) and asserts on what came out: the
exit status, the program's output (which must be its native output,
unchanged: kscope's summary goes to stderr), which kernel launches were
collected (the <run>/<pid>/<kernel>_<index>/ directories), and the
deliverables in each (context.json, measure.json, kernel.cl, the CSV
tables, trace.json, and visualize_data.bin as `kscope inspect` checks
it).  Nothing here asserts on a time.

    e2e.py KSCOPE BUILD_DIR SOURCE_DIR SCENARIO

Exit status 0 when the scenario passed, 1 when it failed, 77 (skipped)
when this machine has no OpenCL platform.
"""
import csv
import glob
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for kstest
from kstest import Failure, check, TempDirs, opencl_platforms  # noqa: E402

KSCOPE, BUILD, SRC, SCENARIO = sys.argv[1:5]
EX = os.path.join(BUILD, "examples", "opencl")
SKIP = 77
# Per kscope op run; the slowest scenario runs a few seconds.
TIMEOUT = 300

DELIVERABLES = ["context.json", "measure.json", "OpBasicInfo.csv", "Timing.csv",
                "Memory.csv", "trace.json", "visualize_data.bin"]


def example(name):
    path = os.path.join(EX, name)
    check(os.access(path, os.X_OK), f"{path} is missing: build the examples first")
    return path


_native_cache = {}
# A new temporary directory, removed when the scenario passes.
tmpdir = TempDirs("ks-op-e2e-")


def native(argv):
    """The program's own stdout (bytes) and exit status, without kscope."""
    key = tuple(argv)
    if key not in _native_cache:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
        check(p.returncode == 0, f"{argv} fails natively ({p.returncode}): "
              f"{p.stderr.decode(errors='replace')[-2000:]}")
        _native_cache[key] = p.stdout
    return _native_cache[key]


class Run:
    """One finished `kscope op` run."""

    def __init__(self, cmd, code, stdout, stderr, out):
        self.cmd, self.code, self.stdout, self.stderr = cmd, code, stdout, stderr
        self.out = out
        runs = glob.glob(os.path.join(out, "op_*"))
        self.rundir = runs[0] if len(runs) == 1 else None
        check(len(runs) <= 1, f"more than one run directory in {out}: {runs}")

    def why(self):
        return (f"\n  command: {' '.join(self.cmd)}\n  exit: {self.code}\n"
                f"  stderr (end):\n{self.stderr[-3000:]}")

    def collected(self):
        """{"<kernel>_<index>": directory} of every launch directory."""
        out = {}
        if not self.rundir:
            return out
        for pid in os.listdir(self.rundir):
            pdir = os.path.join(self.rundir, pid)
            if not pid.isdigit() or not os.path.isdir(pdir):
                continue
            for d in os.listdir(pdir):
                if os.path.isdir(os.path.join(pdir, d)):
                    check(d not in out, f"{d} collected by two processes")
                    out[d] = os.path.join(pdir, d)
        return out


def clean_env(cache=None):
    """The environment for kscope: no KSCOPE_* settings from outside, and
    the calibration cache in cache (default: a new empty directory), so
    that a `kscope calibrate` the user ran does not change what is
    checked.  PoCL keeps its compiled kernels under the same
    $XDG_CACHE_HOME; it is pointed at its usual directory, which spares
    each run compiling every kernel again."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("KSCOPE_")}
    pocl = os.path.join(os.environ.get("XDG_CACHE_HOME")
                        or os.path.join(os.path.expanduser("~"), ".cache"), "pocl", "kcache")
    if "POCL_CACHE_DIR" not in e and os.path.isdir(pocl):
        e["POCL_CACHE_DIR"] = pocl
    e["XDG_CACHE_HOME"] = cache or tmpdir()
    return e


def run_op(opts, argv, expect_exit=0, env=None):
    out = tmpdir()
    cmd = [KSCOPE, "op", "-o", out, *opts, "--", *argv]
    e = clean_env()
    e.update(env or {})
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                       timeout=TIMEOUT)
    r = Run(cmd, p.returncode, p.stdout, p.stderr.decode(errors="replace"), out)
    if expect_exit is not None:
        check(p.returncode == expect_exit,
              f"exit {p.returncode}, expected {expect_exit}" + r.why())
    return r


def summary_of(r):
    """kscope's summary: stderr from its 'kscope op: ' line on."""
    i = r.stderr.find("kscope op: ")
    check(i >= 0, "no line starting 'kscope op: ' on stderr" + r.why())
    return r.stderr[i:]


def split_output(r, native_out):
    """Checks that stdout under kscope is native_out, unchanged (nothing
    of kscope's), and that the summary is on stderr; returns the summary."""
    check(r.stdout == native_out,
          "the program's output changed under kscope:\n--- native\n"
          + native_out.decode(errors="replace") + "--- under kscope op\n"
          + r.stdout.decode(errors="replace") + r.why())
    return summary_of(r)


def program_ok(out, name):
    check(f"{name}: ok\n".encode() in out, f"{name} did not print '{name}: ok'")


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as ex:
        raise Failure(f"{path}: {ex}")


def read_csv(path):
    """(header, rows) of a CSV file whose rows all have the header's width."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, csv.Error) as ex:
        raise Failure(f"{path}: {ex}")
    check(rows and len(rows[0]) >= 2, f"{path}: no header")
    for i, row in enumerate(rows[1:], 2):
        check(len(row) == len(rows[0]),
              f"{path}:{i}: {len(row)} fields, the header has {len(rows[0])}")
    return rows[0], rows[1:]


def column(path, header, rows, *names):
    """The index of the first header cell equal to one of names
    (case-insensitive, ignoring a unit in parentheses or after '_')."""
    norm = [re.sub(r"\s*\(.*\)$", "", h).strip().lower() for h in header]
    for n in names:
        if n in norm:
            return norm.index(n)
    raise Failure(f"{path}: no column {' or '.join(names)} in {header}")


def inspect_blocks(path):
    """The block types of a visualize_data.bin that `kscope inspect
    --strict` checks without finding damage: every block has the fields
    of the design's list for its type."""
    p = subprocess.run([KSCOPE, "inspect", "--strict", "--format", "json", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == 0, f"kscope inspect {path}: exit {p.returncode}: "
          f"{p.stderr.decode(errors='replace')}{p.stdout.decode(errors='replace')[-2000:]}")
    doc = json.loads(p.stdout)
    check(doc.get("error") is None, f"kscope inspect {path}: {doc.get('error')}")
    return [b["type"] for b in doc["blocks"]]


def check_launch(d, name, index=None, kind="kernel", passes=None, roofline=False):
    """Checks the deliverables of one collected launch (or range) in d
    against its raw files; returns (context, measure).  passes: the
    measured passes the deliverables must show, when they are not
    measure.json's (application replay: measure.json holds the first
    run's one pass, the deliverables every run's).  roofline: whether
    visualize_data.bin must have a roofline block (0x0D), which needs
    FLOPs and a calibration; without, it must not."""
    for f in DELIVERABLES:
        check(os.path.isfile(os.path.join(d, f)), f"{d}: {f} is missing; it has "
              f"{sorted(os.listdir(d))}")
    ctx = load_json(os.path.join(d, "context.json"))
    ms = load_json(os.path.join(d, "measure.json"))
    check(ctx.get("kind") == kind, f"{d}/context.json: kind {ctx.get('kind')}, "
          f"expected {kind}")
    check(ctx.get("name") == name, f"{d}/context.json: name {ctx.get('name')}, "
          f"expected {name}")
    if index is not None:
        check(ctx.get("index") == index, f"{d}/context.json: index {ctx.get('index')}, "
              f"expected {index}")
    check(ms.get("status") == "ok", f"{d}/measure.json: status {ms.get('status')}: "
          f"{ms.get('error')}")
    raw_passes = ms.get("passes")
    check(isinstance(raw_passes, int) and raw_passes >= 1,
          f"{d}/measure.json: passes {raw_passes}")
    check(len(ms.get("pass_ns") or []) == raw_passes,
          f"{d}/measure.json: {len(ms.get('pass_ns') or [])} pass times for "
          f"{raw_passes} passes")
    if passes is None:
        passes = raw_passes

    # The kernel's source when it is known.
    prog = ctx.get("program") or {}
    if kind == "kernel" and prog.get("file") == "kernel.cl":
        with open(os.path.join(d, "kernel.cl")) as f:
            src = f.read()
        check(re.search(r"__kernel\s+void\s+" + re.escape(name) + r"\s*\(", src),
              f"{d}/kernel.cl does not define kernel {name}")

    # OpBasicInfo.csv: one row of key facts about this launch.
    p = os.path.join(d, "OpBasicInfo.csv")
    header, rows = read_csv(p)
    check(len(rows) == 1, f"{p}: {len(rows)} rows, expected 1")
    check(name in rows[0], f"{p}: the row does not name {name}: {rows[0]}")

    # Timing.csv: one row per pass, warm-ups and measured ones.
    p = os.path.join(d, "Timing.csv")
    header, rows = read_csv(p)
    kcol = column(p, header, rows, "kind")
    kinds = [r[kcol] for r in rows]
    check(kinds.count("measured") == passes,
          f"{p}: {kinds.count('measured')} measured rows for {passes} passes")
    check(kinds.count("warmup") == len(ms.get("warmup_ns") or []),
          f"{p}: {kinds.count('warmup')} warm-up rows, measure.json has "
          f"{len(ms.get('warmup_ns') or [])} warm-ups")

    # Memory.csv: one row per buffer argument.
    p = os.path.join(d, "Memory.csv")
    header, rows = read_csv(p)
    if kind == "kernel":
        nbuf = sum(1 for a in ctx.get("args", []) if a.get("kind") == "buffer")
        check(len(rows) == nbuf, f"{p}: {len(rows)} rows, the launch has {nbuf} "
              f"buffer arguments")

    # trace.json: Trace Event JSON with the passes on a timeline.
    tr = load_json(os.path.join(d, "trace.json"))
    events = tr.get("traceEvents") if isinstance(tr, dict) else tr
    check(isinstance(events, list), f"{d}/trace.json: no traceEvents array")
    slices = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]
    check(len(slices) >= passes, f"{d}/trace.json: {len(slices)} slices for "
          f"{passes} passes")

    types = inspect_blocks(os.path.join(d, "visualize_data.bin"))
    for t in (0x05, 0x08, 0x09):
        check(t in types, f"{d}/visualize_data.bin: no block 0x{t:02x} in "
              f"{[hex(x) for x in types]}")
    check((0x0D in types) == roofline, f"{d}/visualize_data.bin: blocks "
          f"{[hex(x) for x in types]}, {'expected' if roofline else 'unexpected'} 0x0d")
    return ctx, ms


def check_collected(r, expected, passes=None):
    """expected: {"<kernel>_<index>": (kernel, index)}; the run collected
    exactly these, each with valid deliverables (passes as check_launch),
    and the summary and summary.csv list them."""
    got = r.collected()
    check(sorted(got) == sorted(expected),
          f"collected {sorted(got)}, expected {sorted(expected)}" + r.why())
    out = {}
    for d, (name, index) in expected.items():
        out[d] = check_launch(got[d], name, index, passes=passes)
    summary = summary_of(r)
    for d, (name, _) in expected.items():
        check(name in summary, f"the summary does not list {name}:\n{summary}")
    header, rows = read_csv(os.path.join(r.rundir, "summary.csv"))
    check(len(rows) == len(expected), f"summary.csv: {len(rows)} rows for "
          f"{len(expected)} collected launches")
    return out


def check_counts(r, rows):
    """rows: {name: (matched, collected, skipped)} as the summary's
    launches-per-kernel table prints them ("2+" is at least 2)."""
    summary = summary_of(r)
    check("kscope op: launches per " in summary,
          "the summary has no launches-per-kernel table" + r.why())
    for name, (m, c, k) in rows.items():
        check(re.search(rf"^  {re.escape(name)} +{re.escape(str(m))} +{re.escape(str(c))}"
                        rf" +{re.escape(str(k))}$", summary, re.M),
              f"the summary does not count {name} as matched {m}, collected {c}, "
              f"skipped {k}:\n{summary}")
    check(("(+: at least;" in summary) == any("+" in str(v) for t in rows.values()
                                               for v in t),
          "the summary's '+: at least' line does not match its counts:\n" + summary)


def check_notes(r, calibrated):
    """The calibration note appears once exactly when there is none; each
    summary.csv row is `noisy` exactly when its p80_p20 is above 1.5, and
    the note advising --replay-count appears exactly when one is."""
    summary = summary_of(r)
    n = r.stderr.count("make one with: kscope calibrate")
    check(n == (0 if calibrated else 1),
          f"the no-calibration note appears {n} times" + r.why())
    header, rows = read_csv(os.path.join(r.rundir, "summary.csv"))
    ratio = column("summary.csv", header, rows, "p80_p20")
    status = column("summary.csv", header, rows, "status")
    noisy = 0
    for row in rows:
        check(row[status] in ("ok", "noisy"), f"summary.csv: status {row[status]}")
        check((row[status] == "noisy") == (row[ratio] != "" and float(row[ratio]) > 1.5),
              f"summary.csv: status {row[status]} with p80_p20 {row[ratio]!r}")
        noisy += row[status] == "noisy"
    check(("launch is noisy" in summary or "launches are noisy" in summary) == (noisy > 0)
          and ("--replay-count" in summary) == (noisy > 0),
          f"{noisy} noisy launches, but the summary's note says otherwise:\n{summary}")


def launches(*names_indexes):
    """{"name_index": (name, index)} from ("name", index) pairs."""
    return {f"{n}_{i}": (n, i) for n, i in names_indexes}


# ---------------------------------------------------------------------
# The examples: same output, results ok, every launch collected
# ---------------------------------------------------------------------

def example_all(prog, args, expected, opts=()):
    argv = [example(prog), *args]
    nat = native(argv)
    r = run_op(["--launch-count", str(len(expected)), *opts], argv)
    split_output(r, nat)
    program_ok(r.stdout, prog)
    return r, check_collected(r, expected)


def out_vadd():
    # Each launch reads the previous one's result: a replay that did not
    # restore what it wrote would change the checksum.
    r, _ = example_all("vadd", [], launches(*[("vadd", i) for i in range(4)]))
    # All four launches asked for: every one was reported, none skipped.
    check_counts(r, {"vadd": (4, 4, 0)})
    check_notes(r, calibrated=False)


def out_matmul():
    example_all("matmul", [], launches(("mm_naive", 0), ("mm_tiled", 1),
                                       ("mm_naive", 2), ("mm_tiled", 3)))


def out_ranges():
    example_all("ranges", [], launches(
        ("prep", 0), ("stage_scale", 1), ("stage_add", 2), ("stage_mod", 3),
        ("probe", 4), ("stage_scale", 5), ("stage_add", 6), ("stage_mod", 7),
        ("finish", 8)))


def out_many():
    example_all("many", ["300"], launches(("small", 0), ("small", 1), ("small", 2)))


def threads2():
    """Two threads, two queues: every launch of both collected, the
    output byte-identical."""
    rounds = 3
    argv = [example("threads2"), str(rounds)]
    nat = native(argv)
    n = 2 * 3 * rounds
    r = run_op(["--launch-count", str(n)], argv)
    split_output(r, nat)
    program_ok(r.stdout, "threads2")
    got = r.collected()
    check(len(got) == n, f"threads2: {len(got)} launches collected, expected {n}: "
          f"{sorted(got)}" + r.why())
    per_tid = {}
    indexes = set()
    for d, path in got.items():
        name = d.rsplit("_", 1)[0]
        ctx, _ = check_launch(path, name)
        per_tid.setdefault(ctx.get("tid"), []).append(name)
        indexes.add(ctx["index"])
    check(indexes == set(range(n)), f"threads2: launch indexes {sorted(indexes)}")
    check(len(per_tid) == 2, f"threads2: launches from {len(per_tid)} threads "
          f"(tids {sorted(map(str, per_tid))}), expected 2")
    for tid, names in per_tid.items():
        check(sorted(names) == sorted(["scale", "offset", "saxpy"] * rounds),
              f"threads2: thread {tid} launched {sorted(names)}")


def binprog():
    """A kernel from a program built from a binary: no source."""
    r, res = example_all("binprog", [], launches(("twice", 0), ("twice", 1)))
    ctx0 = res["twice_0"][0]
    ctx1 = res["twice_1"][0]
    got = r.collected()
    check(ctx0["program"]["origin"] == "source" and ctx0["program"]["file"] == "kernel.cl",
          f"binprog: the first launch's program is {ctx0['program']}")
    check(ctx1["program"]["origin"] == "binary",
          f"binprog: the second launch's program origin is {ctx1['program']['origin']}, "
          "expected binary")
    check(ctx1["program"]["file"] != "kernel.cl"
          and not os.path.exists(os.path.join(got["twice_1"], "kernel.cl")),
          "binprog: a kernel built from a binary has a kernel.cl")


# ---------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------

def filtered(prog, args, opts, expected):
    argv = [example(prog), *args]
    nat = native(argv)
    r = run_op(opts, argv)
    split_output(r, nat)
    program_ok(r.stdout, prog)
    check_collected(r, expected)
    return r


def filter_skip():
    # The skip counts every launch, before the name filter applies.
    filtered("vadd", ["65536"], ["--launch-skip-before-match", "2"],
             launches(("vadd", 2)))
    filtered("matmul", ["64"], ["--kernel-name", "mm_tiled", "--launch-skip-before-match",
                                "2", "--launch-count", "5"], launches(("mm_tiled", 3)))


def filter_count():
    filtered("matmul", ["64"], ["--launch-count", "3"],
             launches(("mm_naive", 0), ("mm_tiled", 1), ("mm_naive", 2)))
    r = filtered("vadd", ["65536"], ["--kernel-name", "vadd", "--launch-count", "2"],
                 launches(("vadd", 0), ("vadd", 1)))
    # The third launch was passed over with `final`: from then on the
    # runtime reports nothing, so matched and skipped are lower bounds.
    check_counts(r, {"vadd": ("3+", 2, "1+")})


def filter_name():
    filtered("matmul", ["64"], ["--kernel-name", "mm_t*d|nothing", "--launch-count", "5"],
             launches(("mm_tiled", 1), ("mm_tiled", 3)))
    filtered("ranges", ["4096"], ["--kernel-name", "stage_*d|fin", "--launch-count", "10"],
             launches(("stage_add", 2), ("stage_mod", 3), ("stage_add", 6),
                      ("stage_mod", 7), ("finish", 8)))


def filter_mstx():
    """--mstx on in kernel mode: only launches inside an included range."""
    filtered("ranges", ["4096"], ["--mstx", "on", "--mstx-include", "tail",
                                  "--launch-count", "5"], launches(("finish", 8)))
    filtered("ranges", ["4096"], ["--mstx", "on", "--launch-count", "3"],
             launches(("stage_scale", 1), ("stage_add", 2), ("stage_mod", 3)))


# ---------------------------------------------------------------------
# Replay modes
# ---------------------------------------------------------------------

def mode_kernel():
    argv = [example("matmul")]
    nat = native(argv)
    # mm_naive has an expression of its own, mm_tiled takes the bare one.
    r = run_op(["--replay-mode", "kernel", "--kernel-name", "mm", "--launch-count", "2",
                "--warm-up", "2", "--replay-count", "4", "--flops", "mm_naive=2*M*N*K",
                "--flops", "M*N"], argv)
    split_output(r, nat)
    program_ok(r.stdout, "matmul")
    res = check_collected(r, launches(("mm_naive", 0), ("mm_tiled", 1)))
    for d, (ctx, ms) in res.items():
        check(ms["mode"] == "kernel" and ms["passes"] == 4 and ms["warmup"] == 2
              and len(ms["warmup_ns"]) == 2,
              f"{d}: measure.json mode {ms['mode']}, passes {ms['passes']}, "
              f"warm-ups {ms['warmup']} ({len(ms['warmup_ns'])} times)")
        args = {a.get("name"): a for a in ctx["args"]}
        for n in ("M", "N", "K"):
            check(args.get(n, {}).get("kind") == "scalar" and args[n].get("value") == 256,
                  f"{d}: context.json argument {n} is {args.get(n)}")
        check(ctx["work"]["global"] == [256, 256],
              f"{d}: global size {ctx['work']['global']}")
        if d.startswith("mm_tiled"):
            check(ctx["work"]["local"] == [16, 16], f"{d}: local size {ctx['work']['local']}")
        p = os.path.join(r.collected()[d], "OpBasicInfo.csv")
        header, rows = read_csv(p)
        col = column(p, header, rows, "flops")
        want = 2 * 256 ** 3 if d.startswith("mm_naive") else 256 * 256
        check(float(rows[0][col]) == want, f"{p}: FLOPs {rows[0][col]}, expected {want}")
        expr = rows[0][column(p, header, rows, "flops_expression")]
        check(expr == ("2*M*N*K" if d.startswith("mm_naive") else "M*N"),
              f"{p}: flops_expression {expr!r}")


def mode_application():
    """The program runs once per pass; its output is shown once."""
    argv = [example("vadd"), "65536"]
    nat = native(argv)
    r = run_op(["--replay-mode", "application", "--replay-count", "3",
                "--kernel-name", "vadd", "--launch-count", "2"], argv)
    split_output(r, nat)
    check(r.stdout.count(b"vadd: ok\n") == 1, "application replay: the program's "
          "output appears more than once" + r.why())
    # (check_collected checks that Timing.csv has the 3 passes.)
    res = check_collected(r, launches(("vadd", 0), ("vadd", 1)), passes=3)
    for d, (ctx, ms) in res.items():
        check(ms["mode"] == "application" and ms["passes"] == 1,
              f"{d}: measure.json mode {ms['mode']}, passes {ms['passes']}: "
              "expected the first run's one pass")
        header, rows = read_csv(os.path.join(r.collected()[d], "Timing.csv"))
        rcol = column("Timing.csv", header, rows, "run")
        kcol = column("Timing.csv", header, rows, "kind")
        runs = sorted(int(row[rcol]) for row in rows if row[kcol] == "measured")
        check(runs == [0, 1, 2], f"{d}: Timing.csv's measured passes come from "
              f"runs {runs}, expected one from each of runs 0, 1, 2")


def mode_range():
    argv = [example("ranges")]
    nat = native(argv)
    r = run_op(["--replay-mode", "range", "--mstx", "on", "--mstx-include", "step",
                "--launch-count", "2", "--warm-up", "1", "--replay-count", "3"], argv)
    split_output(r, nat)
    program_ok(r.stdout, "ranges")
    got = r.collected()
    check(sorted(got) == ["step_0", "step_1"], f"range replay collected {sorted(got)}"
          + r.why())
    for d in ("step_0", "step_1"):
        ctx, ms = check_launch(got[d], "step", kind="range")
        names = [ln.get("name") for ln in ctx.get("launches") or []]
        check(names == ["stage_scale", "stage_add", "stage_mod"],
              f"{d}: the range's launches are {names}")
        check(ms["mode"] == "range" and ms["passes"] == 3,
              f"{d}: measure.json mode {ms['mode']}, passes {ms['passes']}")


# ---------------------------------------------------------------------
# NVTX ranges (examples/opencl/nvtx.c): user ranges under --mstx on
# ---------------------------------------------------------------------

def runtime_lib():
    return os.path.join(BUILD, "lib", "libkscope-op.so")


_sets_nvtx = []


def kscope_sets_nvtx():
    """Whether kscope op itself gives the program NVTX_INJECTION64_PATH
    under --mstx on: asked of kscope with /usr/bin/env as the program
    (which prints its environment and uses no OpenCL: exit 1)."""
    if not _sets_nvtx:
        env = clean_env()
        env.pop("NVTX_INJECTION64_PATH", None)
        out = tmpdir()
        p = subprocess.run([KSCOPE, "op", "-o", out, "--mstx", "on", "--", "/usr/bin/env"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=TIMEOUT)
        _sets_nvtx.append(re.search(rb"^NVTX_INJECTION64_PATH=", p.stdout, re.M) is not None)
    return _sets_nvtx[0]


def nvtx_env():
    """The environment NVTX ranges need under kscope op: none when kscope
    sets NVTX_INJECTION64_PATH itself, else the variable naming kscope's
    runtime (as kscope would set it)."""
    return {} if kscope_sets_nvtx() else {"NVTX_INJECTION64_PATH": runtime_lib()}


def nvtx_argv():
    path = os.path.join(EX, "nvtx")
    if not os.access(path, os.X_OK):
        print("skip: examples/opencl/nvtx was not built (no nvtx3/nvToolsExt.h)")
        sys.exit(SKIP)
    return [path]


def nvtx_run(opts, expected=None, env=None):
    """kscope op OPTS on nvtx: the output must be the native one and the
    program's check pass; expected: {"<name>_<index>": (name, index)} of
    the kernel launches to collect, with their deliverables."""
    argv = nvtx_argv()
    nat = native(argv)
    e = nvtx_env()
    e.update(env or {})
    r = run_op(opts, argv, env=e)
    split_output(r, nat)
    program_ok(r.stdout, "nvtx")
    if expected is not None:
        check_collected(r, expected)
    return r


def nvtx_range():
    """Range replay of NVTX ranges: start/end (step, twice), push/pop
    (outer, around both steps and inner) and a domain's push/pop of a
    registered string (inner)."""
    stage = ["stage_scale", "stage_add", "stage_mod"]
    for include, want in (("step", {"step_0": stage, "step_1": stage}),
                          ("outer", {"outer_0": stage + stage + ["finish"]}),
                          ("inner", {"inner_0": ["finish"]})):
        r = nvtx_run(["--replay-mode", "range", "--mstx", "on", "--mstx-include", include,
                      "--launch-count", "2", "--warm-up", "1", "--replay-count", "2"])
        got = r.collected()
        check(sorted(got) == sorted(want), f"--mstx-include {include}: range replay "
              f"collected {sorted(got)}, expected {sorted(want)}" + r.why())
        for d, names in want.items():
            if d not in got:
                continue
            ctx, ms = check_launch(got[d], include, kind="range")
            got_names = [ln.get("name") for ln in ctx.get("launches") or []]
            check(got_names == names, f"{d}: the range's launches are {got_names}, "
                  f"expected {names}")
            check(ms["mode"] == "range" and ms["passes"] == 2,
                  f"{d}: measure.json mode {ms['mode']}, passes {ms['passes']}")
        check_counts(r, {include: (len(want), len(want), 0)})


def nvtx_filter():
    """Kernel replay, --mstx on: only launches inside an (included) NVTX
    range; prep (0) and probe (8) are outside every range."""
    nvtx_run(["--mstx", "on", "--mstx-include", "inner", "--launch-count", "9"],
             launches(("finish", 7)))
    nvtx_run(["--mstx", "on", "--mstx-include", "step", "--launch-count", "9"],
             launches(("stage_scale", 1), ("stage_add", 2), ("stage_mod", 3),
                      ("stage_scale", 4), ("stage_add", 5), ("stage_mod", 6)))
    nvtx_run(["--mstx", "on", "--launch-count", "9"],
             launches(("stage_scale", 1), ("stage_add", 2), ("stage_mod", 3),
                      ("stage_scale", 4), ("stage_add", 5), ("stage_mod", 6),
                      ("finish", 7)))


def nvtx_off():
    """Without --mstx on NVTX ranges change nothing: every launch is
    collected, even when the environment names kscope's runtime as the
    NVTX injection."""
    every = launches(("prep", 0), ("stage_scale", 1), ("stage_add", 2), ("stage_mod", 3),
                     ("stage_scale", 4), ("stage_add", 5), ("stage_mod", 6),
                     ("finish", 7), ("probe", 8))
    nvtx_run(["--launch-count", "9"], every)
    nvtx_run(["--launch-count", "9"], every,
             env={"NVTX_INJECTION64_PATH": runtime_lib()})


def nvtx_env_var():
    """kscope op sets NVTX_INJECTION64_PATH (to its runtime) only under
    --mstx on, and leaves a value of the user's that names another
    library, with a warning."""
    if not kscope_sets_nvtx():
        print("skip: this kscope op does not set NVTX_INJECTION64_PATH (cmd_op.c)")
        sys.exit(SKIP)
    env = clean_env()
    env.pop("NVTX_INJECTION64_PATH", None)

    def env_of(opts, extra):
        e = dict(env)
        e.update(extra)
        out = tmpdir()
        p = subprocess.run([KSCOPE, "op", "-o", out, *opts, "--", "/usr/bin/env"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                           timeout=TIMEOUT)
        got = re.findall(rb"^NVTX_INJECTION64_PATH=(.*)$", p.stdout, re.M)
        return [g.decode() for g in got], p.stderr.decode(errors="replace")

    got, _ = env_of(["--mstx", "on"], {})
    check(len(got) == 1 and os.path.samefile(got[0], runtime_lib()),
          f"--mstx on: the program's NVTX_INJECTION64_PATH is {got}")
    got, _ = env_of([], {})
    check(got == [], f"without --mstx on: the program's NVTX_INJECTION64_PATH is {got}")
    got, err = env_of(["--mstx", "on"], {"NVTX_INJECTION64_PATH": "/other/libtool.so"})
    check(got == ["/other/libtool.so"], f"--mstx on, the user's NVTX_INJECTION64_PATH "
          f"became {got}")
    check("NVTX_INJECTION64_PATH" in err, "--mstx on, the user's NVTX_INJECTION64_PATH "
          "left without a warning:\n" + err)
    got, err = env_of(["--mstx", "on"], {"NVTX_INJECTION64_PATH": runtime_lib()})
    check(len(got) == 1 and os.path.samefile(got[0], runtime_lib())
          and "NVTX_INJECTION64_PATH" not in err,
          f"--mstx on, NVTX_INJECTION64_PATH already kscope's: {got}, stderr:\n{err}")


# ---------------------------------------------------------------------
# --kill, the deliverables in detail, failures
# ---------------------------------------------------------------------

def kill():
    """--kill on: the program stops once the launch is collected."""
    argv = [example("vadd")]
    nat = native(argv)
    r = run_op(["--kill", "on", "--kernel-name", "vadd"], argv)
    summary_of(r)
    prog_out = r.stdout
    check(nat.startswith(prog_out) and len(prog_out) < len(nat),
          "--kill: the program's output is not a strict prefix of its native "
          f"output:\n{prog_out.decode(errors='replace')}" + r.why())
    check(b"vadd: ok" not in prog_out, "--kill: the program ran to its end")
    got = r.collected()
    check(sorted(got) == ["vadd_0"], f"--kill: collected {sorted(got)}" + r.why())
    check_launch(got["vadd_0"], "vadd", 0)


def vadd_values(n, launches):
    """vadd's result buffer after that many launches, as float32 bytes
    (a + launches * b; exact, see vadd.c)."""
    return b"".join(struct.pack("<f", (i % 1000) * 0.25 + launches * ((i % 7) * 1.5))
                    for i in range(n))


def deliverables():
    """The counts and buffers of one launch, through every deliverable:
    vadd's launch 2, which overwrites the result of launch 0 (a + b)
    with a + 3b in the buffer c."""
    n = 65536
    argv = [example("vadd"), str(n)]
    nat = native(argv)
    r = run_op(["--launch-skip-before-match", "2", "--warm-up", "2", "--replay-count", "3",
                "--cache-flush", "off", "--flops", "n"], argv)
    split_output(r, nat)
    (ctx, ms), = check_collected(r, launches(("vadd", 2))).values()
    d = r.collected()["vadd_2"]
    check(ms["warmup"] == 2 and ms["passes"] == 3 and len(ms["warmup_ns"]) == 2
          and ms["flush"] is False,
          f"measure.json: warmup {ms['warmup']}, passes {ms['passes']}, "
          f"flush {ms['flush']}")
    check(all(isinstance(t, int) and t > 0 for t in ms["pass_ns"]),
          f"measure.json: pass times {ms['pass_ns']}")
    check(ctx["work"]["dim"] == 1 and ctx["work"]["global"] == [n],
          f"context.json: work {ctx['work']}")

    # The arguments: a buffer of the previous result, b (READ_ONLY), c,
    # and the scalar n.
    args = {a["index"]: a for a in ctx["args"]}
    check(sorted(args) == [0, 1, 2, 3], f"context.json: arguments {sorted(args)}")
    check([args[i]["kind"] for i in range(4)] == ["buffer", "buffer", "buffer", "scalar"],
          f"context.json: argument kinds {[args[i]['kind'] for i in range(4)]}")
    check(args[3].get("value") == n, f"context.json: argument 3 (n) is {args[3]}")
    check("CL_MEM_READ_ONLY" in args[1]["buffer"]["flags"]
          and "CL_MEM_READ_ONLY" not in args[2]["buffer"]["flags"],
          f"context.json: flags {args[1]['buffer']['flags']}, {args[2]['buffer']['flags']}")

    # Only c (argument 2) may be written: b is CL_MEM_READ_ONLY and
    # argument 0 a const pointer, so only c is backed up.  What the launch
    # wrote is counted as the bytes that changed: those of a + b that
    # differ from a + 3b.
    bufs = {b["arg"]: b for b in ms["buffers"]}
    check(sorted(bufs) == [0, 1, 2], f"measure.json: buffers of arguments {sorted(bufs)}")
    for a in (0, 1, 2):
        check(bufs[a]["bytes"] == 4 * n, f"measure.json: argument {a} has "
              f"{bufs[a]['bytes']} bytes, expected {4 * n}")
    check([bufs[a]["backed_up"] for a in (0, 1, 2)] == [False, False, True],
          f"measure.json: backed up {[bufs[a]['backed_up'] for a in (0, 1, 2)]}")
    check(ms["backup_bytes"] == 4 * n, f"measure.json: backup_bytes {ms['backup_bytes']}")
    before, after = vadd_values(n, 1), vadd_values(n, 3)
    changed = sum(1 for x, y in zip(before, after) if x != y)
    written = [bufs[a]["bytes_written"] for a in (0, 1, 2)]
    check(written == [0, 0, changed],
          f"measure.json: bytes written {written}, expected [0, 0, {changed}]")

    counters = ms["counters"]
    check(counters.get("supported") in (True, False), f"measure.json: counters {counters}")
    if counters["supported"] is False:
        check(counters.get("reason"), "measure.json: counters unsupported without a reason")

    may = [(bufs[a]["may_read"], bufs[a]["may_write"]) for a in (0, 1, 2)]
    check(may == [(True, False), (True, False), (True, True)],
          f"measure.json: may read, may write {may}")

    # The deliverables count the extent (every byte of a buffer the kernel
    # may write), the same for every launch, and keep the changed bytes
    # beside it.
    p = os.path.join(d, "Memory.csv")
    header, rows = read_csv(p)
    acol = column(p, header, rows, "arg")
    wcol = column(p, header, rows, "bytes_written")
    ccol = column(p, header, rows, "bytes_changed")
    check(sorted((int(r_[acol]), int(r_[wcol]), int(r_[ccol])) for r_ in rows)
          == [(0, 0, 0), (1, 0, 0), (2, 4 * n, changed)],
          f"{p}: arguments, bytes written and changed "
          f"{[(r_[acol], r_[wcol], r_[ccol]) for r_ in rows]}")
    p = os.path.join(d, "OpBasicInfo.csv")
    header, rows = read_csv(p)
    row = dict(zip(header, rows[0]))
    check((row["bytes_read"], row["bytes_written"], row["bytes_changed"])
          == (str(12 * n), str(4 * n), str(changed)),
          f"{p}: bytes read, written, changed {row['bytes_read']}, {row['bytes_written']}, "
          f"{row['bytes_changed']}, expected {12 * n}, {4 * n}, {changed}")
    check(row["bytes_basis"].startswith("extent:"), f"{p}: bytes basis {row['bytes_basis']!r}")
    check(float(rows[0][column(p, header, rows, "flops")]) == n,
          f"{p}: FLOPs {rows[0][column(p, header, rows, 'flops')]}, expected {n}")
    check(rows[0][column(p, header, rows, "launch_index")] == "2",
          f"{p}: launch index {rows[0][column(p, header, rows, 'launch_index')]}")
    p = os.path.join(d, "Timing.csv")
    header, rows = read_csv(p)
    check(len(rows) == 5, f"{p}: {len(rows)} rows for 2 warm-ups and 3 passes")


def traffic_repeat():
    """Identical launches give identical traffic: matmul's two launches of
    mm_naive compute the same C from the same A and B.  The second
    changes no byte of C (it already holds the result), so the bytes
    changed differ (all of C, then 0), but the bytes read and written,
    the extent, and so the arithmetic intensity and the roofline's
    x, are the same."""
    argv = [example("matmul"), "64"]
    nat = native(argv)
    r = run_op(["--kernel-name", "mm_naive", "--launch-count", "2", "--flops", "2*M*N*K"],
               argv)
    split_output(r, nat)
    got = r.collected()
    check(sorted(got) == ["mm_naive_0", "mm_naive_2"], f"collected {sorted(got)}" + r.why())
    rows = {}
    for name, d in got.items():
        p = os.path.join(d, "OpBasicInfo.csv")
        header, rs = read_csv(p)
        rows[name] = dict(zip(header, rs[0]))
    first, second = rows["mm_naive_0"], rows["mm_naive_2"]
    c_bytes = 4 * 64 * 64
    # A and B are read whole; C is CL_MEM_WRITE_ONLY, written whole.
    for key, want in (("bytes_read", 2 * c_bytes), ("bytes_written", c_bytes)):
        check(first[key] == second[key] == str(want),
              f"{key}: {first[key]} and {second[key]}, expected {want} for both")
    check(first["arithmetic_intensity"] == second["arithmetic_intensity"]
          and first["arithmetic_intensity"] != "",
          f"arithmetic intensity {first['arithmetic_intensity']} and "
          f"{second['arithmetic_intensity']}")
    check(int(first["bytes_changed"]) > 0 and second["bytes_changed"] == "0",
          f"bytes changed {first['bytes_changed']} and {second['bytes_changed']}: the "
          f"second launch rewrites the values C already holds")


def basic_row(d):
    """OpBasicInfo.csv's one data row in launch directory d, by column."""
    header, rows = read_csv(os.path.join(d, "OpBasicInfo.csv"))
    return dict(zip(header, rows[0]))


def export():
    """--export: a run's raw files rebuilt into a new run directory, with
    this run's --flops; the times and bytes are the run's own, the
    original directory is left as it was."""
    argv = [example("matmul"), "32"]
    nat = native(argv)
    r = run_op(["--launch-count", "2"], argv)
    split_output(r, nat)
    first = r.collected()
    check(sorted(first) == ["mm_naive_0", "mm_tiled_1"], f"collected {sorted(first)}" + r.why())
    run_dir = os.path.dirname(os.path.dirname(first["mm_naive_0"]))
    before = {f: os.path.getmtime(os.path.join(run_dir, f)) for f in os.listdir(run_dir)}
    out = tmpdir()
    cmd = [KSCOPE, "op", "--export", run_dir, "-o", out, "--flops", "2*M*N*K"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
                       timeout=TIMEOUT)
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 0 and not p.stdout, f"{cmd}: exit {p.returncode}: {err[-2000:]}")
    check("2 kernel(s) rebuilt from" in err, f"--export: summary {err[-1000:]!r}")
    (new_dir,) = glob.glob(os.path.join(out, "op_*"))
    for name, d in first.items():
        rel = os.path.relpath(d, run_dir)
        nd = os.path.join(new_dir, rel)
        for raw in ("context.json", "measure.json"):
            with open(os.path.join(d, raw), "rb") as f1, open(os.path.join(nd, raw), "rb") as f2:
                check(f1.read() == f2.read(), f"{rel}/{raw} differs in the rebuilt run")
        old, new = (basic_row(x) for x in (d, nd))
        for key in ("median_us", "bytes_read", "bytes_written", "bytes_changed"):
            check(old[key] == new[key], f"{rel}: {key} {old[key]} became {new[key]}")
        check(old["flops"] == "" and new["flops"] == str(2 * 32 ** 3) and new["gflops"],
              f"{rel}: FLOPs {old['flops']!r} then {new['flops']!r}, GFLOP/s {new['gflops']!r}")
    after = {f: os.path.getmtime(os.path.join(run_dir, f)) for f in os.listdir(run_dir)}
    check(before == after, "--export changed the original run directory")
    # A directory with no run in it, and a program besides: refused.
    for bad, msg in (([tmpdir()], "holds no collected launch"),
                     ([run_dir, "--", "/bin/true"], "runs no program")):
        p = subprocess.run([KSCOPE, "op", "-o", tmpdir(), "--export", *bad],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=clean_env(), timeout=60)
        check(p.returncode == 2 and msg in p.stderr.decode(),
              f"--export {bad}: exit {p.returncode}, {p.stderr.decode()!r}")


def close(a, b, rel=1e-3, absolute=0.0):
    """a and b agree to rel, or to absolute (the rounding of a CSV
    column printed with 3 decimals: 0.0005)."""
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), absolute)


def roofline():
    """With FLOPs and this machine's calibration (`kscope calibrate
    --quick` into an empty cache), the kernel is placed on the roofline:
    a 0x0D block whose point is (FLOPs / bytes moved, FLOPs / median)."""
    cache = tmpdir()
    env = clean_env(cache)
    # --no-chip: only the ceilings are needed, and the host chip would go
    # to the user's data directory.
    p = subprocess.run([KSCOPE, "calibrate", "--quick", "--no-chip"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=TIMEOUT)
    check(p.returncode == 0, f"kscope calibrate --quick: exit {p.returncode}: "
          f"{p.stderr.decode(errors='replace')[-2000:]}")
    check(glob.glob(os.path.join(cache, "kscope", "calibration-*.json")),
          f"kscope calibrate --quick wrote no calibration under {cache}")
    argv = [example("matmul"), "64"]
    nat = native(argv)
    r = run_op(["--kernel-name", "mm_tiled", "--flops", "2*M*N*K"], argv,
               env={"XDG_CACHE_HOME": cache})
    split_output(r, nat)
    got = r.collected()
    check(sorted(got) == ["mm_tiled_1"], f"roofline: collected {sorted(got)}" + r.why())
    d = got["mm_tiled_1"]
    check_launch(d, "mm_tiled", 1, roofline=True)

    p = os.path.join(d, "OpBasicInfo.csv")
    header, rows = read_csv(p)
    row = dict(zip(header, rows[0]))
    flops = float(row["flops"])
    check(flops == 2 * 64 ** 3, f"{p}: flops {row['flops']}")
    moved = float(row["bytes_read"]) + float(row["bytes_written"])
    ai, gflops = float(row["arithmetic_intensity"]), float(row["gflops"])
    check(close(ai, flops / moved), f"{p}: arithmetic intensity {ai}, but FLOPs / bytes "
          f"moved is {flops / moved}")
    check(close(gflops, flops / (float(row["median_us"]) * 1e3), absolute=0.0006),
          f"{p}: {gflops} GFLOP/s, but FLOPs / median is "
          f"{flops / (float(row['median_us']) * 1e3)}")
    check(row["roofline"] == "yes" and row["binding_ceiling"],
          f"{p}: roofline {row['roofline']!r}, binding ceiling {row['binding_ceiling']!r}")
    check_notes(r, calibrated=True)

    vb = os.path.join(d, "visualize_data.bin")
    q = subprocess.run([KSCOPE, "inspect", "--format", "json", vb], stdout=subprocess.PIPE,
                       timeout=60)
    index = [b["index"] for b in json.loads(q.stdout)["blocks"] if b["type"] == 0x0D][0]
    q = subprocess.run([KSCOPE, "inspect", "--block", str(index), vb],
                       stdout=subprocess.PIPE, timeout=60)
    check(q.returncode == 0, f"kscope inspect --block {index} {vb}: exit {q.returncode}")
    charts = json.loads(q.stdout)["multiple_rooflines"]
    check(charts and all(c["rooflines"] for c in charts), f"{vb}: empty roofline {charts}")
    for c in charts:
        for rl in c["rooflines"]:
            check(rl["bw"] > 0 and rl["computility"] > 0, f"{vb}: a ceiling {rl}")
            check(close(rl["point"][0], ai) and close(rl["point"][1], gflops, absolute=0.0006),
                  f"{vb}: the kernel's point {rl['point']}, OpBasicInfo says "
                  f"[{ai}, {gflops}]")
    check(any(row["binding_ceiling"] == c.get("binding") for c in charts),
          f"{vb}: no chart binds by {row['binding_ceiling']!r}")


def nomatch():
    argv = [example("vadd"), "65536"]
    nat = native(argv)
    r = run_op(["--kernel-name", "nomatch_xyz"], argv, expect_exit=1)
    check(r.stdout == nat, "nomatch: the program's output changed" + r.why())
    check("kscope op: 0 kernel(s) collected" in r.stderr, "nomatch: no summary" + r.why())
    check(not r.collected(), f"nomatch: collected {sorted(r.collected())}")
    check("nomatch_xyz" in r.stderr and re.search(r"\bvadd\b", r.stderr),
          "nomatch: the message does not name the filter and the kernel seen" + r.why())
    check_counts(r, {"vadd": (0, 0, 0)})
    check(os.listdir(r.out) == [],
          f"nomatch: a run that collected nothing left {os.listdir(r.out)}")
    check("make one with: kscope calibrate" not in r.stderr,
          "nomatch: a calibration note although nothing was collected" + r.why())


def noopencl():
    r = run_op([], ["/bin/true"], expect_exit=1)
    check(re.search(r"never used OpenCL", r.stderr, re.I),
          "a program without OpenCL: no message saying so" + r.why())
    check(not r.collected(), f"/bin/true: collected {sorted(r.collected())}")
    check(os.listdir(r.out) == [], f"/bin/true: left {os.listdir(r.out)} in the output")
    # The channel: one socket file in $TMPDIR, mode 0700 while the program
    # runs (the program looks), gone afterwards.
    tmp = tmpdir()
    r = run_op([], ["/bin/sh", "-c", 'stat -c "%a %F" "$TMPDIR"/kscope-op-*.sock'],
               expect_exit=1, env={"TMPDIR": tmp})
    check(r.stdout.decode().split("\n") == ["700 socket", ""],
          f"the channel's socket as the program saw it: {r.stdout!r}" + r.why())
    check(os.listdir(tmp) == [], f"kscope left {os.listdir(tmp)} in $TMPDIR")


def failed_replay():
    """A replay that fails is reported; the program goes on unchanged."""
    argv = [example("vadd"), "65536"]
    nat = native(argv)
    r = run_op(["--launch-count", "2"], argv,
               env={"KSCOPE_OP_TEST_FAIL_REPLAY": "vadd"})
    summary = split_output(r, nat)
    program_ok(r.stdout, "vadd")
    check("failed" in summary, f"failed replay: the summary does not say so:\n{summary}")
    got = r.collected()
    check(sorted(got) == ["vadd_0", "vadd_1"], f"failed replay: collected {sorted(got)}")
    for d in got.values():
        ms = load_json(os.path.join(d, "measure.json"))
        check(ms["status"] == "failed" and "CL_OUT_OF_RESOURCES" in (ms.get("error") or ""),
              f"{d}/measure.json: status {ms['status']}, error {ms.get('error')}")


def sigint():
    """Ctrl+C: the program stops, what was collected is written, the
    summary printed, exit 130."""
    out = tmpdir()
    argv = [example("many"), "10000000"]
    cmd = [KSCOPE, "op", "-o", out, "--launch-count", "5", "--", *argv]
    e = clean_env()
    # A session of its own, as a terminal's foreground job has a group.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                         start_new_session=True)
    first = None
    deadline = time.monotonic() + 120
    while first is None and time.monotonic() < deadline and p.poll() is None:
        done = glob.glob(os.path.join(out, "op_*", "*", "small_*", "measure.json"))
        if done:
            first = os.path.dirname(sorted(done)[0])
        else:
            time.sleep(0.05)
    try:
        check(first is not None, "Ctrl+C: no launch was collected "
              f"(kscope {'exited ' + str(p.returncode) if p.poll() is not None else 'still runs'})")
        os.killpg(p.pid, signal.SIGINT)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    r = Run(cmd, p.returncode, stdout, stderr.decode(errors="replace"), out)
    check(r.code == 130, f"Ctrl+C: exit {r.code}, expected 130" + r.why())
    summary = summary_of(r)
    check(stdout.startswith(b"many: 10000000 launches of small\n")
          and b"kscope op: " not in stdout,
          "Ctrl+C: the program's output is missing, or kscope's is in it" + r.why())
    name = os.path.basename(first)
    check_launch(first, "small", int(name.rsplit("_", 1)[1]))
    check("small" in summary,
          "Ctrl+C: the summary does not list the collected kernel" + r.why())


# ---------------------------------------------------------------------
# Child processes: every process of the program connects on its own
# ---------------------------------------------------------------------

def by_pid(r):
    """{pid: sorted ["<kernel>_<index>", ...]} of the launch directories."""
    out = {}
    if r.rundir:
        for pid in os.listdir(r.rundir):
            pdir = os.path.join(r.rundir, pid)
            if pid.isdigit() and os.path.isdir(pdir):
                out[int(pid)] = sorted(os.listdir(pdir))
    return out


def check_tree_launches(r, per_process):
    """per_process: the launch directories each process must have, in the
    order of their pids' first launch in summary.csv; checks each
    directory's deliverables and that summary.csv's pid column says the
    same."""
    got = by_pid(r)
    check(sorted(map(sorted, got.values())) == sorted(map(sorted, per_process)),
          f"launches per process {got}, expected {per_process}" + r.why())
    for pid, dirs in got.items():
        for d in dirs:
            name, index = d.rsplit("_", 1)
            ctx, _ = check_launch(os.path.join(r.rundir, str(pid), d), name, int(index))
            check(ctx.get("pid") == pid, f"{pid}/{d}/context.json: pid {ctx.get('pid')}")
    header, rows = read_csv(os.path.join(r.rundir, "summary.csv"))
    pcol = column("summary.csv", header, rows, "pid")
    check(sorted(int(row[pcol]) for row in rows)
          == sorted(p for p, dirs in got.items() for _ in dirs),
          f"summary.csv's pids {[row[pcol] for row in rows]}, directories {got}")
    if len(got) > 1:
        check(re.search(r"^ +# +pid +kernel ", summary_of(r), re.M),
              "the summary has no pid column though several processes were "
              "collected" + r.why())
    return got


def tree_sh():
    """sh -c "prog1; prog2": both programs collected, under their pids,
    their output as without kscope."""
    script = f"{example('vadd')} 65536; {example('matmul')} 64"
    argv = ["sh", "-c", script]
    nat = native(argv)
    r = run_op(["--launch-count", "100"], argv)
    split_output(r, nat)
    program_ok(r.stdout, "vadd")
    program_ok(r.stdout, "matmul")
    check_tree_launches(r, [[f"vadd_{i}" for i in range(4)],
                            ["mm_naive_0", "mm_naive_2", "mm_tiled_1", "mm_tiled_3"]])


def tree_fork():
    """A program that forks without exec: the child's first OpenCL use is
    after the fork, and the parent launches too; both collected."""
    argv = [example("forked")]
    nat = native(argv)
    r = run_op(["--launch-count", "100"], argv)
    split_output(r, nat)
    program_ok(r.stdout, "forked")
    check(b"child: ok\n" in r.stdout, "forked: the child's check failed" + r.why())
    got = check_tree_launches(r, [["scale2_0", "scale2_1"], ["scale2_0", "scale2_1"]])
    check(len(got) == 2, f"forked: launches from {len(got)} processes")


def tree_mp():
    """Python multiprocessing (start methods fork and spawn), the workers
    running an OpenCL program with subprocess: every run collected."""
    for method in ("fork", "spawn"):
        argv = [sys.executable, os.path.join(SRC, "tests", "op", "e2e", "mp_tree.py"),
                method, example("vadd"), "4096"]
        nat = native(argv)
        r = run_op(["--launch-count", "100", "--kernel-name", "vadd"], argv)
        split_output(r, nat)
        check(r.stdout.count(b"vadd: ok\n") == 2, f"{method}: vadd's output" + r.why())
        check_tree_launches(r, [[f"vadd_{i}" for i in range(4)]] * 2)


def tree_count():
    """--launch-count 3 over two processes launching 2 kernels each:
    exactly 3 collected, the first process's two, then the second's
    first; --launch-skip-before-match 3 over the same tree leaves only
    the second process's last launch."""
    argv = ["sh", "-c", f"{example('many')} 2; {example('many')} 2"]
    nat = native(argv)
    r = run_op(["--launch-count", "3"], argv)
    split_output(r, nat)
    check_tree_launches(r, [["small_0", "small_1"], ["small_0"]])
    header, rows = read_csv(os.path.join(r.rundir, "summary.csv"))
    pcol = column("summary.csv", header, rows, "pid")
    check(rows[0][pcol] == rows[1][pcol] != rows[2][pcol],
          f"--launch-count 3: summary.csv's pids {[row[pcol] for row in rows]}: the "
          "first process's launches were not counted first")
    r = run_op(["--launch-skip-before-match", "3", "--launch-count", "5"], argv)
    split_output(r, nat)
    check_tree_launches(r, [["small_1"]])


def tree_orphan():
    """A child that outlives the program (it sleeps 60 s after its work):
    kscope ends about 5 s after the top process, with the child's launches
    collected and a warning; the child is left running."""
    argv = [example("forked"), "4096", "60"]
    t0 = time.monotonic()
    r = run_op(["--launch-count", "100"], argv)
    took = time.monotonic() - t0
    try:
        check(took < 30, f"kscope took {took:.1f} s with a lingering child" + r.why())
        check("still connected 5 s after it ended" in r.stderr,
              "no warning about the process that outlived the program" + r.why())
        program_ok(r.stdout, "forked")
        check_tree_launches(r, [["scale2_0", "scale2_1"], ["scale2_0", "scale2_1"]])
    finally:
        for pid in by_pid(r):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


SCENARIOS = {
    "out_vadd": out_vadd,
    "out_matmul": out_matmul,
    "out_ranges": out_ranges,
    "out_many": out_many,
    "threads2": threads2,
    "binprog": binprog,
    "filter_skip": filter_skip,
    "filter_count": filter_count,
    "filter_name": filter_name,
    "filter_mstx": filter_mstx,
    "mode_kernel": mode_kernel,
    "traffic_repeat": traffic_repeat,
    "export": export,
    "mode_application": mode_application,
    "mode_range": mode_range,
    "nvtx_range": nvtx_range,
    "nvtx_filter": nvtx_filter,
    "nvtx_off": nvtx_off,
    "nvtx_env": nvtx_env_var,
    "kill": kill,
    "deliverables": deliverables,
    "roofline": roofline,
    "nomatch": nomatch,
    "noopencl": noopencl,
    "failed_replay": failed_replay,
    "sigint": sigint,
    "tree_sh": tree_sh,
    "tree_fork": tree_fork,
    "tree_mp": tree_mp,
    "tree_count": tree_count,
    "tree_orphan": tree_orphan,
}


def main():
    if SCENARIO not in SCENARIOS:
        raise Failure(f"unknown scenario {SCENARIO}")
    if opencl_platforms() == 0:
        print(f"skip {SCENARIO}: no OpenCL platform on this machine")
        sys.exit(SKIP)
    SCENARIOS[SCENARIO]()


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print(f"FAIL {SCENARIO}: {e}")
        if tmpdir.paths:
            print("kept for a look: " + " ".join(tmpdir.paths))
        sys.exit(1)
    tmpdir.remove()
    print(f"ok {SCENARIO}")
