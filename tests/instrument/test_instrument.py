#!/usr/bin/env python3
"""kscope instrument end to end (docs/instrument.md).

Each scenario builds programs of examples/instrument/ into a temporary
directory (gcc and clang, -O0/-O2, PIE and not, stripped, static), runs
them natively and under `kscope instrument`, and checks:

  list        --list's verdicts and totals; --include, --exclude and
              --min-instructions in the verdicts
  entries     functions whose first instructions are moved (RIP-relative,
              jcc rel8, call rel32, jmp rel8, a 5-byte function ending in
              ret) or refused (a branch into the patched bytes, loop, too
              short): verdicts, the same output, exact counts
  fib         fib(20) makes exactly 21,891 calls of fib, with gcc -O0,
              gcc -O2, clang -O2, PIE and non-PIE (at -O2 objdump shows
              the two recursive calls, so the source's count is the
              machine's)
  calls       mutual recursion and calls through function pointers
  stripped    a stripped program: only what .dynsym shows
  longjmp     setjmp/longjmp out of a deep recursion: exact counts, frames
              closed, no crash
  threads     8 threads, per-thread counts
  exits       pthread_exit 51 frames down (a forced unwind), an
              instrumented signal handler, exit() 11 frames down
  cxx         a C++ exception crossing three instrumented frames is
              caught by the same handler as natively
  fork        a child made by fork writes its own counters
  progout     tests/cli/progout.c (stdio and write(2), a last line without
              a newline) with stdout to a file: the same file; its exit
              status (--exit 3) and 128+15 when SIGTERM ends it
  errors      a bad regex, --min-instructions out of range, a static
              program, a script: exit 2, a clear message, no run directory
  modules     --modules: libwork.so's functions (examples/instrument)
              counted beside the program's, exactly, with the call graph
              across the two; libc refused and said; --list and
              functions.txt list the library; the same counts as perf
              probe's uprobes on the library; Debian's python3 with
              --modules libz: deflate once, counts as perf's
  mpi         mpirun -n 2: one directory with rank0/ and rank1/, each with
              fib's exact counts; kscope merge: one profile.db (counts,
              calls and edges of both, processes with their rank), kscope
              report on it, a trace kscope view shows with two processes;
              a second merge refused
  perfprobe   side by side with Linux uprobes (perf probe, where perf
              can place them): fib and calls.c, gcc -O0/-O2, clang -O2,
              every function's call count the same
  report      kscope report on a run of 8 threads: the function table
              (as report.txt's), --format json, --tree (the call graph),
              --threads, --thread TID; sampling options refused (exit 2)
  system      Debian's gzip (installed, stripped) compressing a file: the
              same bytes as natively, and kscope says nothing could be
              instrumented when .dynsym shows no function; Debian's
              python3 (its exported C API, ~1,400 functions): the same
              output, Py_BytesMain once, the call graph consistent
  trace       the traces: fib(20)'s 21,892 calls as nested slices in
              trace.json, their times those of the counters, the same
              slices from trace.perfetto-trace and trace.json through
              kscope view; --trace-limit 100 keeps the first 100 calls
              (every caller of a kept call kept) and exact counts;
              --trace-limit 0 writes no trace; 8 threads, one track each;
              profile.db (read-only, intact) holds the same counts, edges
              and traced calls

In every run the program's stdout must be byte-identical with and without
kscope, and so must its exit status.

Usage: test_instrument.py KSCOPE EXAMPLES_DIR SCENARIO [PROGOUT]
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "view"))
from kstest import Failure, TempDirs, check  # noqa: E402
import viewer  # noqa: E402  (tests/view/viewer.py)

KSCOPE = None
EXAMPLES = None
PROGOUT = None
tmp = TempDirs("ks-instr-")


def build(src, out, cc="gcc", flags=("-O2",), libs=()):
    """Compiles examples/instrument/SRC into OUT; returns OUT."""
    cmd = [cc, *flags, "-g", "-o", out, os.path.join(EXAMPLES, src), *libs]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check(p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stdout.decode()}")
    return out


def build_text(d, name, text, libs=()):
    """Compiles the C program text (gcc -O2) into d/name; returns its path."""
    src = os.path.join(d, name + ".c")
    with open(src, "w") as f:
        f.write(text)
    out = os.path.join(d, name)
    subprocess.run(["gcc", "-O2", "-o", out, src, *libs], check=True)
    return out


def native(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout


def instrument(argv, opts=(), expect_same=True):
    """kscope instrument OPTS -- ARGV in a fresh output directory:
    (exit status, stdout bytes, stderr text, run directory)."""
    out = tmp()
    cmd = [KSCOPE, "instrument", "-o", out, *opts, "--", *argv]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    err = p.stderr.decode(errors="replace")
    runs = [d for d in os.listdir(out) if d.startswith("instrument_")]
    check(len(runs) == 1, f"{cmd}: expected one run directory, got {runs}; stderr:\n{err}")
    if expect_same:
        code, stdout = native(argv)
        check(p.stdout == stdout, f"{cmd}: stdout differs from the native run:\n"
              f"native: {stdout!r}\nkscope: {p.stdout!r}\nstderr:\n{err}")
        check(p.returncode == code, f"{cmd}: exit {p.returncode}, natively {code}\n{err}")
    return p.returncode, p.stdout, err, os.path.join(out, runs[0])


def counters(rundir):
    """{pid: {"threads": {tid: {name: calls}}, "unwound": n, "names": set}}
    from every instr.<pid>.txt; the program a process ran before an exec
    (instr.<pid>.exec<K>.txt) under the key "<pid>.exec<K>"."""
    procs = {}
    for f in sorted(os.listdir(rundir)):
        m = re.fullmatch(r"instr\.(\d+)(\.exec\d+)?\.txt", f)
        if not m:
            continue
        names, threads, cur, unwound, ended = {}, {}, None, 0, False
        prefix, times, cpu_known = "", {}, True
        with open(os.path.join(rundir, f)) as fh:
            for line in fh:
                w = line.split()
                if not w:
                    continue
                if w[0] == "error":
                    raise Failure(f"{f}: {line.strip()}")
                if w[0] == "module":
                    prefix = os.path.basename(w[5]) + ":"
                if w[0] == "f":
                    names[int(w[1])] = prefix + w[5]
                elif w[0] == "thread":
                    cur = threads.setdefault(int(w[1]), {})
                    unwound += int(w[5])
                    check(w[10:12] in (["cpu", "1"], ["cpu", "0"]), f"{f}: {line}")
                    cpu_known = w[11] == "1"
                elif w[0] == "s":
                    cur[names[int(w[1])]] = int(w[2])
                    calls, closed = int(w[2]), int(w[3])
                    incl, excl, total, mn, mx, ci, cx = map(float, w[4:11])
                    # CPU time: -1 for a thread without a CPU clock, else
                    # at most the wall time.
                    check((ci, cx) == (-1, -1) if not cpu_known else
                          0 <= ci <= incl + 1 and 0 <= cx <= excl + 1 and cx <= ci + 1,
                          f"{f}: CPU times out of bounds: {line}")
                    tm = times.setdefault(names[int(w[1])], [0.0, 0.0, 0.0, 0.0, True])
                    tm[0] += incl
                    tm[1] += excl
                    tm[2] += max(ci, 0)
                    tm[3] += max(cx, 0)
                    tm[4] = tm[4] and cpu_known
                    check(closed <= calls, f"{f}: more ends than calls: {line}")
                    # Each field is rounded to whole ns on its own: min and
                    # max by up to half a ns per call against the sum.
                    slack = 0.5 * closed + 1
                    check(excl <= incl + 1, f"{f}: exclusive above inclusive time: {line}")
                    check(incl <= total + 1, f"{f}: inclusive time above the sum: {line}")
                    check(mn <= mx and (not closed or (mn * closed <= total + slack and
                                                       total <= mx * closed + slack)),
                          f"{f}: min/mean/max out of order: {line}")
                elif w[0] == "end":
                    ended = True
        check(ended, f"{f} has no end line")
        procs[int(m.group(1)) if not m.group(2) else m.group(1) + m.group(2)] = {
            "threads": threads, "unwound": unwound,
                                  "names": set(names.values()), "times": times}
    check(procs, f"no instr.<pid>.txt in {rundir}")
    return procs


def totals(rundir):
    """{name: calls} over every process and thread."""
    t = {}
    for p in counters(rundir).values():
        for th in p["threads"].values():
            for name, calls in th.items():
                t[name] = t.get(name, 0) + calls
    return t


def report_calls(rundir):
    """{name: calls} of report.txt's total table."""
    with open(os.path.join(rundir, "report.txt")) as f:
        txt = f.read()
    total = txt.split("\ntotal\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return {w[0]: int(w[1]) for w in (line.split() for line in total)}


def expect_calls(rundir, want):
    got = totals(rundir)
    for name, n in want.items():
        check(got.get(name) == n, f"{name}: {got.get(name)} calls, expected {n} (all: {got})")
    rep = report_calls(rundir)
    for name, n in want.items():
        check(rep.get(name) == n, f"report.txt: {name}: {rep.get(name)} calls, expected {n}")


NOT_INSTR = "(not instrumented)"


def edges(rundir):
    """{(caller, callee): calls} over every process and thread, from the
    "e" lines of every instr.<pid>.txt; each function's calls must equal
    the calls along the edges into it (no thread here overflows)."""
    got, calls = {}, {}
    for f in sorted(os.listdir(rundir)):
        if not re.fullmatch(r"instr\.\d+\.txt", f):
            continue
        names = {-1: NOT_INSTR, -2: "(signal)"}
        prefix = ""
        with open(os.path.join(rundir, f)) as fh:
            for line in fh:
                w = line.split()
                if w and w[0] == "module":
                    prefix = os.path.basename(w[5]) + ":"
                if w and w[0] == "f":
                    names[int(w[1])] = prefix + w[5]
                elif w and w[0] == "thread":
                    check(w[9] == "0", f"{f}: calls in no edge: {line}")
                elif w and w[0] == "s":
                    calls[names[int(w[1])]] = calls.get(names[int(w[1])], 0) + int(w[2])
                elif w and w[0] == "e":
                    k = (names[int(w[1])], names[int(w[2])])
                    got[k] = got.get(k, 0) + int(w[3])
    into = {}
    for (_, callee), n in got.items():
        into[callee] = into.get(callee, 0) + n
    check(into == calls, f"calls along the edges into each function {into} "
          f"differ from its calls {calls}")
    return got


def report_edges(rundir):
    """{(caller, callee): calls} of report.txt's total call graph."""
    with open(os.path.join(rundir, "report.txt")) as f:
        txt = f.read()
    sect = txt.split("\ncall graph, total", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    out = {}
    for line in sect:
        m = re.fullmatch(r"(\(not instrumented\)|\(signal\)|\S+)\s+(\S+)\s+(\d+)\s+\d+", line)
        check(m, f"report.txt: call graph line {line!r}")
        out[(m.group(1), m.group(2))] = int(m.group(3))
    return out


def expect_edges(rundir, want):
    got = edges(rundir)
    check(got == want, f"call graph {got}, expected {want}")
    rep = report_edges(rundir)
    check(rep == want, f"report.txt's call graph {rep}, expected {want}")


def list_verdicts(argv, opts=()):
    p = subprocess.run([KSCOPE, "instrument", "--list", *opts, "--", *argv],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode == 0, f"--list: exit {p.returncode}: {p.stderr.decode()}")
    lines = p.stdout.decode().splitlines()
    v = {}
    for line in lines[2:-1]:
        m = re.match(r"(\S+)\s+0x[0-9a-f]{16}\s+(\d+)\s+(\d+)\s+(.*)$", line)
        check(m, f"--list: unexpected line {line!r}")
        v[m.group(1)] = (int(m.group(2)), int(m.group(3)), m.group(4))
    check(re.fullmatch(r"\d+ functions: \d+ instrumented, \d+ left alone", lines[-1]),
          f"--list: no totals line: {lines[-1]!r}")
    n, inst, alone = map(int, re.findall(r"\d+", lines[-1]))
    check(n == len(v) and inst == sum(1 for x in v.values() if x[2] == "instrumented")
          and inst + alone == n, f"--list: totals do not add up: {lines[-1]}")
    return lines, v


# ------------------------------------------------------------------ scenarios

def s_list(d):
    prog = build("fib.c", os.path.join(d, "fib"))
    lines, v = list_verdicts([prog])
    check(lines[0].startswith(f"# {prog}: PIE, symbols from .symtab"), f"header: {lines[0]}")
    check(lines[1].split() == ["function", "address", "size", "instrs", "verdict"],
          f"column line: {lines[1]}")
    check(v["fib"][2] == "instrumented" and v["main"][2] == "instrumented", f"{v}")
    check(v["_start"][2] == "left alone: the program's entry point (_start)", f"{v}")
    check(v["fib"][1] > 5, f"fib's instruction count {v['fib'][1]}")
    _, v = list_verdicts([prog], ["--include", "^fib$"])
    check(v["fib"][2] == "instrumented" and
          v["main"][2] == "left alone: not selected by --include", f"{v}")
    _, v = list_verdicts([prog], ["--exclude", "^f"])
    check(v["fib"][2] == "left alone: excluded by --exclude" and
          v["main"][2] == "instrumented", f"{v}")
    n = v["fib"][1]
    _, v = list_verdicts([prog], ["--min-instructions", str(n + 1)])
    check(v["fib"][2].startswith("left alone: fewer instructions than --min-instructions"),
          f"{v}")
    _, v = list_verdicts([prog], ["--min-instructions", str(n)])
    check(v["fib"][2] == "instrumented", f"{v}")
    # A run instruments only what was selected.
    _, _, _, rd = instrument([prog, "15"], ["--include", "^fib$"])
    t = totals(rd)
    check(t == {"fib": 1973}, f"--include ^fib$: counts {t}")


def s_entries(d):
    prog = build("entries.c", os.path.join(d, "entries"))
    _, v = list_verdicts([prog])
    for f in ("riprel_first", "jcc_first", "call_first", "helper_plus1", "jmp_first"):
        check(v[f][2] == "instrumented", f"{f}: {v[f]}")
    check(v["branch_into"][2] == "left alone: a branch at +7 targets +2, inside the "
          "patched bytes", f"branch_into: {v['branch_into']}")
    check(v["loop_first"][2].startswith("left alone: cannot move the instruction at +0: "
                                        "'loop'"), f"loop_first: {v['loop_first']}")
    check(v["short_fn"][2] == "left alone: too short (3 bytes, the patch needs 5)",
          f"short_fn: {v['short_fn']}")
    for pie in ("-pie", "-no-pie"):
        prog = build("entries.c", os.path.join(d, "entries" + pie), flags=("-O2", pie))
        _, _, _, rd = instrument([prog, "25"])
        expect_calls(rd, {"riprel_first": 25, "jcc_first": 25, "call_first": 25,
                          "helper_plus1": 25, "jmp_first": 25, "main": 1})
        check("branch_into" not in totals(rd), "branch_into was instrumented")


def fib_calls(n):
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1  # 2*fib(n+1) - 1


def calls_in(prog, func, callee):
    """How many direct calls of callee objdump shows in func."""
    p = subprocess.run(["objdump", "-d", "--no-show-raw-insn", prog],
                       stdout=subprocess.PIPE, check=True)
    body = p.stdout.decode().split(f"<{func}>:\n", 1)[1].split("\n\n", 1)[0]
    return len(re.findall(rf"call\s+[0-9a-f]+ <{re.escape(callee)}>", body))


def s_fib(d):
    check(fib_calls(20) == 21891, "fib_calls")
    builds = [("gcc", ("-O0",)), ("gcc", ("-O2",)), ("gcc", ("-O2", "-no-pie")),
              ("gcc", ("-O0", "-no-pie")), ("gcc", ("-O2", "-fcf-protection"))]
    if shutil.which("clang"):
        builds += [("clang", ("-O2",)), ("clang", ("-O2", "-no-pie"))]
    else:
        print("note: no clang here; the clang builds were not run")
    for i, (cc, flags) in enumerate(builds):
        prog = build("fib.c", os.path.join(d, f"fib{i}"), cc, flags)
        if "-O2" in flags:
            check(calls_in(prog, "fib", "fib") == 2,
                  f"{cc} {flags}: fib does not make two calls of fib (objdump)")
        _, out, _, rd = instrument([prog, "20"])
        check(out == b"fib(20) x 1 = 6765\n", f"{cc} {flags}: output {out!r}")
        expect_calls(rd, {"fib": 21891, "main": 1})
        expect_edges(rd, {(NOT_INSTR, "main"): 1, ("main", "fib"): 1, ("fib", "fib"): 21890})
        _, _, _, rd = instrument([prog, "12", "7"])
        expect_calls(rd, {"fib": 7 * fib_calls(12), "main": 1})


def s_calls(d):
    for cc, flags in (("gcc", ("-O0",)), ("gcc", ("-O2",)), ("clang", ("-O2",))):
        if not shutil.which(cc):
            continue
        prog = build("calls.c", os.path.join(d, f"calls-{cc}{flags[0]}"), cc, flags)
        _, _, _, rd = instrument([prog, "1000", "100"])
        expect_calls(rd, {"is_even": 501, "is_odd": 500, "apply": 300, "add1": 100,
                          "twice": 100, "negate": 100, "main": 1})
        # Tail calls (is_even and is_odd jump to each other at -O2, apply
        # jumps through the table) are calls from the function that jumps.
        expect_edges(rd, {(NOT_INSTR, "main"): 1, ("main", "is_even"): 1,
                          ("is_even", "is_odd"): 500, ("is_odd", "is_even"): 500,
                          ("main", "apply"): 300, ("apply", "add1"): 100,
                          ("apply", "twice"): 100, ("apply", "negate"): 100})


def s_stripped(d):
    prog = build("fib.c", os.path.join(d, "fib-dyn"), flags=("-O2", "-rdynamic"))
    subprocess.run(["strip", prog], check=True)
    lines, v = list_verdicts([prog])
    check("symbols from .dynsym" in lines[0], f"header: {lines[0]}")
    check(v["fib"][2] == "instrumented", f"{v}")
    _, _, _, rd = instrument([prog, "20"])
    expect_calls(rd, {"fib": 21891, "main": 1})
    # Stripped without exported functions: nothing to instrument, still runs.
    prog = build("fib.c", os.path.join(d, "fib-bare"))
    subprocess.run(["strip", prog], check=True)
    lines, v = list_verdicts([prog])
    check(not any(x[2] == "instrumented" for x in v.values()), f"{v}")
    _, _, _, rd = instrument([prog, "20"])
    check(totals(rd) == {}, f"counts of a program with nothing instrumented: {totals(rd)}")


def s_longjmp(d):
    for cc, flags in (("gcc", ("-O0",)), ("gcc", ("-O2",)), ("clang", ("-O2",))):
        if not shutil.which(cc):
            continue
        prog = build("jump.c", os.path.join(d, f"jump-{cc}{flags[0]}"), cc, flags)
        _, _, _, rd = instrument([prog, "10", "3000", "50"])
        expect_calls(rd, {"dive": 10 * 3001, "leaf": 50, "main": 1})
        unwound = sum(p["unwound"] for p in counters(rd).values())
        check(unwound == 10 * 3001, f"{cc} {flags}: {unwound} frames closed as left, "
              f"expected {10 * 3001}")


def s_threads(d):
    prog = build("threads.c", os.path.join(d, "threads"), libs=("-lpthread",))
    _, _, _, rd = instrument([prog, "1000"])
    procs = counters(rd)
    check(len(procs) == 1, f"processes: {list(procs)}")
    threads = list(procs.values())[0]["threads"]
    check(len(threads) == 9, f"{len(threads)} threads, expected 9 (main and 8)")
    works = sorted(t.get("work", 0) for t in threads.values())
    check(works == [0] + [1000 * i for i in range(1, 9)], f"per-thread work calls: {works}")
    check(sorted(t.get("worker", 0) for t in threads.values()) == [0] + [1] * 8,
          "worker calls per thread")
    expect_calls(rd, {"work": 36000, "worker": 8, "main": 1})
    expect_edges(rd, {(NOT_INSTR, "main"): 1, (NOT_INSTR, "worker"): 8,
                      ("worker", "work"): 36000})


def s_exits(d):
    prog = build("exits.c", os.path.join(d, "exits"), libs=("-lpthread",))
    _, out, _, rd = instrument([prog])
    check(out == b"sink 1\nbye\n", f"output {out!r}")
    expect_calls(rd, {"deep": 51, "th": 1, "handler": 20, "spin": 20, "bye": 11, "main": 1})
    # The handler runs while main is open (raise), but main does not call
    # it: the kernel does.
    expect_edges(rd, {(NOT_INSTR, "main"): 1, (NOT_INSTR, "th"): 1, ("th", "deep"): 1,
                      ("deep", "deep"): 50, ("(signal)", "handler"): 20,
                      ("main", "spin"): 20, ("main", "bye"): 1, ("bye", "bye"): 10})
    procs = counters(rd)
    threads = list(procs.values())[0]["threads"]
    check(len(threads) == 2, f"{len(threads)} threads, expected 2")


def s_cxx(d):
    if not shutil.which("g++"):
        print("note: no g++ here; not run")
        return
    prog = build("throw.cc", os.path.join(d, "throw"), "g++")
    _, out, _, rd = instrument([prog, "7"])
    check(out == b"caught 7 of 7, then 9\n", f"output {out!r}")
    want = {"_Z6level1ib": 8, "_Z6level2ib": 8, "_Z6level3ib": 8, "main": 1}
    expect_calls(rd, want)


def s_fork(d):
    prog = build_text(d, "forky",
                      '#include <stdio.h>\n#include <unistd.h>\n#include <sys/wait.h>\n'
                '__attribute__((noinline)) long twice(long x) { return 2 * x; }\n'
                'int main(void) { long a = 0; for (int i = 0; i < 10; i++) a += twice(i);\n'
                ' pid_t p = fork(); if (p == 0) { for (int i = 0; i < 5; i++) a += twice(i);\n'
                ' printf("child %ld\\n", a); return 0; }\n waitpid(p, 0, 0);\n'
                ' printf("parent %ld\\n", a); return 0; }\n')
    _, _, _, rd = instrument([prog])
    procs = counters(rd)
    check(len(procs) == 2, f"{len(procs)} processes wrote counters, expected 2")
    per = sorted(sum(t.get("twice", 0) for t in p["threads"].values()) for p in procs.values())
    check(per == [5, 10], f"twice per process: {per}, expected [5, 10]")


def s_exec(d):
    """exec: the results of the program before it are written first
    (instr.<pid>.exec1.txt), a failed exec changes nothing, and the
    program after it is patched afresh; the same through a shell."""
    fib = build("fib.c", os.path.join(d, "fib"))
    prog = build_text(d, "execer",
                      '#include <stdio.h>\n#include <unistd.h>\n'
                '__attribute__((noinline)) long twice(long x) { volatile long y = x;\n'
                ' return 2 * y; }\n'
                'int main(int argc, char **argv) { long a = 0; (void)argc;\n'
                ' for (int i = 0; i < 3; i++) a += twice(i);\n'
                ' execl("/nonexistent/kscope-test", "x", (char *)NULL);\n'
                ' for (int i = 0; i < 2; i++) a += twice(i);\n'
                ' printf("before exec %ld\\n", a); fflush(stdout);\n'
                ' execl(argv[1], argv[1], "10", (char *)NULL); return 1; }\n')
    _, out, _, rd = instrument([prog, fib])
    check(out == b"before exec 8\nfib(10) x 1 = 55\n", f"output {out!r}")
    procs = counters(rd)
    check(len(procs) == 2, f"counters of {list(procs)}, expected 2")
    pid = [k for k in procs if isinstance(k, int)][0]
    before = procs[f"{pid}.exec1"]["threads"]
    after = procs[pid]["threads"]
    check([c.get("twice") for c in before.values()] == [5],
          f"before the exec: {before}, expected twice 5 (3, a failed exec, 2)")
    check([c.get("fib") for c in after.values()] == [177],
          f"after the exec: {after}, expected fib 177")
    # Through a shell: each fib process, started by sh, patched.
    _, out, _, rd = instrument(["/bin/sh", "-c", f"{fib} 10; {fib} 5"])
    per = sorted(sum(t.get("fib", 0) for t in p["threads"].values())
                 for p in counters(rd).values() if any("fib" in t for t in p["threads"].values()))
    check(per == [15, 177], f"fib per process under sh: {per}, expected [15, 177]")


def s_progout(d):
    for extra, code in (([], 0), (["--exit", "3"], 3), (["--signal", "15"], 143)):
        files = []
        for under in (False, True):
            out = tmp()
            path = os.path.join(d, f"out-{len(files)}-{code}")
            cmd = ([KSCOPE, "instrument", "-o", out, "--"] if under else []) + [PROGOUT, *extra]
            with open(path, "wb") as f:
                p = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, timeout=120)
            want = code if under or code < 128 else -(code - 128)  # a signal, natively
            check(p.returncode == want, f"{cmd}: exit {p.returncode}, expected {want}: "
                  f"{p.stderr.decode()}")
            with open(path, "rb") as f:
                files.append(f.read())
        check(files[0] == files[1], f"progout {extra}: the output differs under kscope")
        check(len(files[0]) > 10000, "progout wrote less than expected")


def s_errors(d):
    fib = build("fib.c", os.path.join(d, "fib"))
    static = build("fib.c", os.path.join(d, "fib-static"), flags=("-O2", "-static"))
    script = os.path.join(d, "script.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(script, 0o755)
    cases = [
        (["--include", "a(b"], fib, "--include 'a(b' is not a valid POSIX extended regular "
         "expression"),
        (["--exclude", "[z"], fib, "--exclude '[z' is not a valid POSIX extended regular "
         "expression"),
        (["--min-instructions", "1000001"], fib, "option --min-instructions: '1000001' is "
         "out of range"),
        (["--min-instructions", "-3"], fib, "option --min-instructions: '-3' is out of range"),
        ([], static, "is statically linked; kscope instrument needs a dynamically linked "
         "program"),
        (["--list"], static, "is statically linked"),
        ([], script, "is not an ELF file"),
    ]
    for opts, prog, msg in cases:
        out = tmp()
        p = subprocess.run([KSCOPE, "instrument", "-o", out, *opts, "--", prog],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err = p.stderr.decode()
        check(p.returncode == 2, f"{opts} {prog}: exit {p.returncode}, expected 2: {err}")
        check(msg in err, f"{opts} {prog}: message {err!r} lacks {msg!r}")
        check(len(err.strip().splitlines()) == 1, f"{opts}: more than one line: {err!r}")
        check(os.listdir(out) == [], f"{opts}: a run directory was made: {os.listdir(out)}")


def s_system(d):
    """An installed, stripped system binary: gzip compressing a file."""
    gz = shutil.which("gzip")
    if not gz:
        print("note: no gzip here; not run")
        return
    data = os.path.join(d, "data.txt")
    with open(data, "w") as f:
        for i in range(20000):
            f.write(f"line {i} {i * i % 977}\n")
    # -n: no name or time stamp in the header, so both runs' bytes compare.
    code, out, err, rd = instrument([gz, "-n", "-c", "-9", data])
    check(code == 0 and len(out) > 100, f"gzip under kscope: exit {code}, {len(out)} bytes")
    check(subprocess.run([gz, "-d", "-c"], input=out, stdout=subprocess.PIPE,
                         check=True).stdout == open(data, "rb").read(),
          "gzip's output under kscope does not decompress to the input")
    lines, v = list_verdicts([gz])
    if not any(x[2] == "instrumented" for x in v.values()):
        check("no function of" in err and "can be instrumented" in err,
              f"no word that nothing could be instrumented:\n{err}")
        check(totals(rd) == {}, f"counts of a program with nothing instrumented: {totals(rd)}")
    # Debian's python3: stripped too, but it exports its C API (.dynsym),
    # about 1,400 functions, patched before main.
    py = os.path.realpath("/usr/bin/python3")
    if not os.path.isfile(py):
        print("note: no /usr/bin/python3 here; its part was not run")
        return
    code, out, err, rd = instrument([py, "-c", "print(sum([i * i for i in range(1000)]))"])
    check(out == b"332833500\n", f"python3 under kscope printed {out!r}")
    t = totals(rd)
    check(t.get("Py_BytesMain") == 1 and t.get("PyObject_GetAttr", 0) > 100 and len(t) > 100,
          f"python3: Py_BytesMain {t.get('Py_BytesMain')}, PyObject_GetAttr "
          f"{t.get('PyObject_GetAttr')}, {len(t)} functions called")
    check((NOT_INSTR, "Py_BytesMain") in edges(rd), "python3: who called Py_BytesMain")


def trace_calls(rundir):
    """{tid: [(name, start_ns, end_ns)]} of trace.json's call slices,
    each thread's in nesting order; checks that they nest."""
    with open(os.path.join(rundir, "trace.json")) as f:
        doc = json.load(f)
    per = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            check(e["cat"] == "call", f"trace.json: category {e['cat']!r}")
            t0 = round(e["ts"] * 1000)
            per.setdefault(e["tid"], []).append((e["name"], t0, t0 + round(e["dur"] * 1000)))
    for tid, v in per.items():
        v.sort(key=lambda c: (c[1], -c[2]))
        open_ = []
        for name, t0, t1 in v:
            while open_ and open_[-1] <= t0 and open_[-1] < t1:
                open_.pop()
            check(not open_ or t1 <= open_[-1],
                  f"trace.json: {name} [{t0}, {t1}] on thread {tid} does not nest")
            open_.append(t1)
    return per


def report_incl(rundir, name):
    with open(os.path.join(rundir, "report.txt")) as f:
        txt = f.read()
    total = txt.split("\ntotal\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return {w[0]: int(w[2]) for w in (line.split() for line in total)}[name]


def check_db(rundir, traced):
    """profile.db holds what the counters files and the traces hold."""
    path = os.path.join(rundir, "profile.db")
    check(os.stat(path).st_mode & 0o777 == 0o440, "profile.db is not read-only")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        check(con.execute("PRAGMA application_id").fetchone()[0] == 0x4b534349,
              "profile.db: application_id")
        check(con.execute("PRAGMA integrity_check").fetchone()[0] == "ok",
              "profile.db: integrity_check")
        got = dict(con.execute("SELECT name, calls FROM function_totals"))
        check(got == totals(rundir), f"profile.db function_totals {got}, "
              f"counters {totals(rundir)}")
        rows = con.execute(
            "SELECT e.caller_kind, c.name, f.name, sum(e.calls) FROM edges e "
            "LEFT JOIN functions c ON c.id = e.caller_id JOIN functions f ON f.id = e.callee_id "
            "GROUP BY 1, 2, 3").fetchall()
        kinds = {"not instrumented": NOT_INSTR, "signal": "(signal)"}
        db_edges = {(kinds.get(k, c), f): n for k, c, f, n in rows}
        check(db_edges == edges(rundir), f"profile.db edges {db_edges}, counters {edges(rundir)}")
        n = con.execute("SELECT count(*) FROM calls").fetchone()[0]
        check(n == traced, f"profile.db: {n} calls, the traces {traced}")
        bad = con.execute("SELECT count(*) FROM calls WHERE end_ns < start_ns").fetchone()[0]
        check(bad == 0, f"profile.db: {bad} calls end before they start")
        nt = con.execute("SELECT sum(traced) FROM threads").fetchone()[0]
        check(nt == traced, f"profile.db threads.traced sum {nt}, the traces {traced}")
    finally:
        con.close()


def perf_probe_counts(prog, args, funcs, run=None):
    """{function: hits} from Linux uprobes placed by `perf probe` on each
    of funcs in prog (a program or a library), counted by `perf stat` over
    one run of prog ARGS (or of the command run); None when perf
    cannot place them here (not root, no uprobes).  The probes get a group
    of their own and are removed again."""
    perf = shutil.which("perf")
    if not perf:
        return None
    group = f"ksinstr{os.getpid()}"
    # By address: by name, perf probe also puts a probe on the function's
    # PLT stub in a library that calls itself through its PLT, and counts
    # such calls twice.
    addr = {}
    for opt in ([], ["-D"]):
        p = subprocess.run(["nm", *opt, "--defined-only", prog], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        for line in p.stdout.decode().splitlines():
            w = line.split()
            if len(w) == 3 and w[1] in "Tt":
                addr.setdefault(w[2].split("@")[0], "0x" + w[0])
    try:
        for f in funcs:
            check(f in addr, f"nm finds no function {f} in {prog}")
            p = subprocess.run([perf, "probe", "-q", "-x", prog, "-a",
                                f"{group}:{f}={addr[f]}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            if p.returncode != 0:
                print(f"note: perf probe cannot place a uprobe here: "
                      f"{p.stderr.decode().strip()[:200]}")
                return None
        p = subprocess.run([perf, "stat", "-x,", *sum((["-e", f"{group}:{f}"] for f in funcs),
                                                      []), "--", *(run or [prog, *args])],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        check(p.returncode == 0, f"perf stat: {p.stderr.decode()[-500:]}")
        got = {}
        for line in p.stderr.decode().splitlines():
            w = line.split(",")
            if len(w) > 2 and w[2].startswith(group + ":"):
                got[w[2].split(":", 1)[1]] = int(w[0])
        return got
    finally:
        subprocess.run([perf, "probe", "-q", "-d", f"{group}:*"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)


def s_perfprobe(d):
    """Side by side with Linux uprobes (perf probe): the same call counts."""
    cases = [("fib.c", ["20", "3"], ["fib", "main"]),
             ("calls.c", ["1000", "100"], ["is_even", "is_odd", "apply", "add1", "twice",
                                          "negate", "main"])]
    for src, args, funcs in cases:
        for cc, flags in (("gcc", ("-O0",)), ("gcc", ("-O2",)), ("clang", ("-O2",))):
            if not shutil.which(cc):
                continue
            prog = build(src, os.path.join(d, f"{src[:-2]}-{cc}{flags[0]}"), cc, flags)
            perf = perf_probe_counts(prog, args, funcs)
            if perf is None:
                return
            _, _, _, rd = instrument([prog, *args])
            mine = {f: n for f, n in totals(rd).items() if f in funcs}
            check(mine == perf, f"{src} {cc} {flags}: kscope {mine}, perf probe {perf}")


def s_modules(d):
    """--modules: a library's functions patched beside the program's."""
    lib = os.path.join(d, "libwork.so")
    p = subprocess.run(["gcc", "-O2", "-g", "-shared", "-fPIC", "-o", lib,
                        os.path.join(EXAMPLES, "libwork.c")], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    check(p.returncode == 0, f"libwork.so: {p.stdout.decode()}")
    prog = build("usework.c", os.path.join(d, "usework"),
                 libs=("-L" + d, "-lwork", "-Wl,-rpath,$ORIGIN"))
    # Without --modules: the program's functions only.
    _, out, _, rd = instrument([prog, "100"])
    check(out == b"9900 3\n", f"usework printed {out!r}")
    check(totals(rd) == {"main": 1, "twice": 1}, f"without --modules: {totals(rd)}")
    # With it, and with the C library asked for too (refused, said).
    _, out, err, rd = instrument([prog, "100"], ["--modules", "libwork|libc"])
    want = {"main": 1, "twice": 1, "libwork.so:work_sum": 2, "libwork.so:work_add": 201}
    expect_calls(rd, want)
    expect_edges(rd, {(NOT_INSTR, "main"): 1, ("main", "twice"): 1,
                      ("twice", "libwork.so:work_sum"): 2,
                      ("libwork.so:work_sum", "libwork.so:work_add"): 200,
                      ("main", "libwork.so:work_add"): 1})
    check(re.search(r"library left alone \(--modules\): \S*libc\.so\.6: the C library", err),
          f"no word that libc was left alone:\n{err}")
    p = subprocess.run([KSCOPE, "instrument", "--list", "--modules", "libwork|libc", "--",
                        prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode == 0, f"--list --modules: exit {p.returncode}: {p.stderr.decode()}")
    text = p.stdout.decode()
    check(re.search(r"^# \S*libwork\.so: PIE", text, re.M) and
          re.search(r"^work_add\s.*instrumented$", text, re.M) and
          re.search(r"^# \S*libc\.so\.6: left alone: the C library", text, re.M),
          f"--list --modules:\n{text}")
    with open(os.path.join(rd, "functions.txt")) as f:
        check("libwork.so: PIE" in f.read(), "functions.txt has no libwork.so section")
    # Side by side with uprobes on the library's functions.
    perf = perf_probe_counts(lib, [], ["work_add", "work_sum"], run=[prog, "100"])
    if perf is not None:
        check(perf == {"work_add": 201, "work_sum": 2}, f"perf probe on libwork.so: {perf}")
    # A system library: Debian's python3 compressing with its libz.
    py = os.path.realpath("/usr/bin/python3")
    libz = [ln.split()[2] for ln in subprocess.run(["ldd", py], stdout=subprocess.PIPE)
            .stdout.decode().splitlines() if ln.strip().startswith("libz.so")]
    if not libz:
        print("note: python3 does not link libz here; its part was not run")
        return
    script = "import zlib; print(len(zlib.compress(bytes(range(256)) * 4000, 9)))"
    _, out, _, rd = instrument([py, "-c", script], ["--modules", "libz"])
    t = {k: v for k, v in totals(rd).items() if k.startswith("libz.so.1:")}
    check(t.get("libz.so.1:deflate") == 1 and t.get("libz.so.1:deflateInit2_") == 1,
          f"python3 --modules libz: {t}")
    funcs = ["deflate", "deflateInit2_", "deflateEnd", "adler32_z"]
    perf = perf_probe_counts(libz[0], [], funcs, run=[py, "-c", script])
    if perf is not None:
        mine = {f: t.get("libz.so.1:" + f, 0) for f in funcs}
        check(mine == perf, f"libz: kscope {mine}, perf probe {perf}")


def s_mpi(d):
    """Under mpirun: a directory per rank, combined by kscope merge."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("note: no mpirun here; not run")
        return
    prog = build("fib.c", os.path.join(d, "fib"))
    out = os.path.join(d, "out")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run([mpirun, "--oversubscribe", "-n", "2", KSCOPE, "instrument", "-o", out,
                        "--top", "0", "--", prog, "20"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=300)
    check(p.returncode == 0, f"mpirun: exit {p.returncode}: {p.stderr.decode()[-2000:]}")
    check(p.stdout == b"fib(20) x 1 = 6765\n" * 2, f"mpirun: output {p.stdout!r}")
    runs = os.listdir(out)
    check(len(runs) == 1 and runs[0].startswith("instrument_"), f"run directories {runs}")
    run = os.path.join(out, runs[0])
    check(sorted(os.listdir(run)) == ["rank0", "rank1"], f"{run}: {os.listdir(run)}")
    for r in ("rank0", "rank1"):
        expect_calls(os.path.join(run, r), {"fib": 21891, "main": 1})
    m = subprocess.run([KSCOPE, "merge", run], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    check(m.returncode == 0, f"kscope merge: {m.stderr.decode()}")
    con = sqlite3.connect(f"file:{run}/profile.db?mode=ro", uri=True)
    try:
        got = dict(con.execute("SELECT name, calls FROM function_totals"))
        check(got == {"fib": 2 * 21891, "main": 2}, f"merged function_totals {got}")
        ranks = sorted(r for (r,) in con.execute("SELECT rank FROM processes"))
        check(ranks == [0, 1], f"merged processes' ranks {ranks}")
        n = con.execute("SELECT count(*) FROM calls").fetchone()[0]
        check(n == 2 * 21892, f"merged calls {n}")
        e = con.execute("SELECT sum(calls) FROM edges e JOIN functions f ON f.id = e.callee_id"
                        " WHERE f.name = 'fib' AND e.caller_kind = 'function'").fetchone()[0]
        check(e == 2 * 21891, f"merged edges into fib {e}")
    finally:
        con.close()
    rep, _ = kreport(run)
    rows = {ln.split()[0]: int(ln.split()[1]) for ln in rep.splitlines()[1:]}
    check(rows == {"fib": 2 * 21891, "main": 2}, f"kscope report on the merge: {rows}")
    with viewer.Viewer(KSCOPE, os.path.join(run, "trace.perfetto-trace")) as v:
        a = v.ok("timeline", "unit/threads", {})
        check(len(a["processes"]) == 2, f"kscope view: {len(a['processes'])} processes")
    m = subprocess.run([KSCOPE, "merge", run], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    check(m.returncode == 2 and "already" in m.stderr.decode(),
          f"a second merge: exit {m.returncode}: {m.stderr.decode()}")


def kreport(rundir, *opts, code=0):
    p = subprocess.run([KSCOPE, "report", *opts, rundir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == code, f"kscope report {' '.join(opts)}: exit {p.returncode}, "
          f"expected {code}: {p.stderr.decode()}")
    return p.stdout.decode(), p.stderr.decode()


def s_report(d):
    """kscope report on an instrument run: its tables from profile.db."""
    prog = build("threads.c", os.path.join(d, "threads"), libs=("-lpthread",))
    _, _, _, rd = instrument([prog, "100"])
    want = totals(rd)
    out, _ = kreport(rd)
    rows = [ln.split() for ln in out.splitlines()[1:]]
    check({r[0]: int(r[1]) for r in rows} == want, f"kscope report: {out}\nwant {want}")
    check([r[0] for r in rows] == [r[0] for r in sorted(rows, key=lambda r: -int(r[2]))],
          f"kscope report: not by inclusive time:\n{out}")
    check(out.splitlines()[1:] == [ln for ln in open(os.path.join(rd, "report.txt")).read()
                                   .split("\ntotal\n", 1)[1].split("\n\n", 1)[0]
                                   .splitlines()[1:]],
          f"kscope report's table differs from report.txt's:\n{out}")
    js = json.loads(kreport(rd, "--format", "json")[0])
    check({r["function"]: r["calls"] for r in js["rows"]} == want, f"--format json: {js}")
    out, _ = kreport(rd, "--tree")
    graph = {}
    for ln in out.splitlines()[1:]:
        m = re.fullmatch(r"(\(not instrumented\)|\(signal\)|\S+)\s+(\S+)\s+(\d+)\s+\d+", ln)
        check(m, f"--tree line {ln!r}")
        graph[(m.group(1), m.group(2))] = int(m.group(3))
    check(graph == edges(rd), f"--tree {graph}, counters {edges(rd)}")
    js = json.loads(kreport(rd, "--threads", "--format", "json")[0])
    per = {r["tid"]: r["calls"] for r in js["rows"]}
    check(len(per) == 9 and sum(per.values()) == sum(want.values()),
          f"--threads: {js}")
    tid = max(per, key=per.get)
    out, _ = kreport(rd, "--thread", str(tid))
    rows = {ln.split()[0]: int(ln.split()[1]) for ln in out.splitlines()[1:]}
    check(rows == {"worker": 1, "work": 800}, f"--thread {tid}: {rows}")
    _, err = kreport(rd, "--thread", "1", code=2)
    check("no thread 1" in err, f"--thread 1: {err}")
    for opts in (["--region", "x"], ["--format", "folded"], ["--clock", "cpu"]):
        _, err = kreport(rd, *opts, code=2)
        check("kscope instrument run" in err and opts[0] in err, f"{opts}: {err}")


def s_trace(d):
    prog = build("fib.c", os.path.join(d, "fib"))
    _, _, err, rd = instrument([prog, "20"])
    per = trace_calls(rd)
    check(len(per) == 1, f"threads in trace.json: {list(per)}")
    calls = list(per.values())[0]
    names = [c[0] for c in calls]
    check(names.count("fib") == 21891 and names.count("main") == 1 and len(names) == 21892,
          f"trace.json: {len(names)} calls, {names.count('fib')} of fib")
    check(names[0] == "main", f"the first slice is {names[0]}")
    # The slice's length is the call's inclusive time, to rounding.
    check(abs((calls[0][2] - calls[0][1]) - report_incl(rd, "main")) <= 1,
          f"main: {calls[0][2] - calls[0][1]} ns in the trace, "
          f"{report_incl(rd, 'main')} ns in report.txt")
    check("--trace-limit" not in err, f"a note on the limit, with none reached:\n{err}")
    check_db(rd, 21892)
    # kscope view: the same slices from both files, all of them.
    got = {}
    for f in ("trace.perfetto-trace", "trace.json"):
        with viewer.Viewer(KSCOPE, os.path.join(rd, f)) as v:
            a = v.ok("timeline", "unit/threads", {})
            p = a["processes"][0]
            q = {"processId": p["pid"], "threadId": p["threads"][0]["tid"], "startTime": 0,
                 "endTime": a["endTime"] + 1,
                 "timePerPx": max(1, -(-(a["endTime"] + 1) // 50000))}
            got[f] = v.ok("timeline", "unit/threadTraces", q)
            # Slices narrower than a pixel come merged, with their count.
            n = sum(x["count"] for level in got[f]["data"] for x in level)
            check(n == 21892, f"kscope view {f}: {n} slices")
            top = got[f]["data"][0][0]
            check(top["name"] == "main" and
                  top["duration"] == calls[0][2] - calls[0][1],
                  f"kscope view {f}: first slice {top}")
    check(got["trace.perfetto-trace"] == got["trace.json"],
          "kscope view: the Perfetto trace's slices differ from trace.json's")

    # A limit: the first 100 calls, counts still exact.
    _, _, err, rd = instrument([prog, "20"], ["--trace-limit", "100"])
    expect_calls(rd, {"fib": 21891, "main": 1})
    calls = list(trace_calls(rd).values())[0]
    check(len(calls) == 100, f"--trace-limit 100: {len(calls)} calls in trace.json")
    check(calls[0][0] == "main", "--trace-limit 100: main is not the first slice")
    check("the traces hold the first 100 calls of each thread: 100 calls in all, "
          "21792 more are in the counts only" in err, f"no note on the limit:\n{err}")
    check_db(rd, 100)
    # No trace at all.
    _, _, _, rd = instrument([prog, "20"], ["--trace-limit", "0"])
    expect_calls(rd, {"fib": 21891, "main": 1})
    check(not any(f.startswith("trace.") for f in os.listdir(rd)),
          f"--trace-limit 0 wrote {os.listdir(rd)}")

    # Threads: one track each, with each thread's calls.
    prog = build("threads.c", os.path.join(d, "threads"), libs=("-lpthread",))
    _, _, _, rd = instrument([prog, "100"])
    per = trace_calls(rd)
    check(len(per) == 9, f"trace.json: {len(per)} threads, expected 9")
    works = sorted(sum(1 for c in v if c[0] == "work") for v in per.values())
    check(works == [0] + [100 * i for i in range(1, 9)], f"work calls per track: {works}")
    check_db(rd, sum(len(v) for v in per.values()))


def s_cputime(d):
    """CPU time per function: equal to what each thread measures itself
    (CLOCK_THREAD_CPUTIME_ID around its spins), apart from the sleeps,
    in the parent and in a forked child; the same in report.txt, kscope
    report and profile.db."""
    prog = build("cputime.c", os.path.join(d, "cputime"), flags=("-O2",), libs=("-lpthread",))

    def steal_ns():
        """Time the hypervisor took from this machine's CPUs, in all."""
        with open("/proc/stat") as f:
            return int(f.readline().split()[8]) * 1e9 / os.sysconf("SC_CLK_TCK")
    steal0 = steal_ns()
    _, _, err, rd = instrument([prog, "20000000"])
    # kscope's CPU time is the time a thread was scheduled, in which a
    # hypervisor may take the CPU (steal); the thread's own clock leaves
    # that out (paravirt steal accounting).  Counted in ticks: one more.
    steal = steal_ns() - steal0
    steal = steal + 1e9 / os.sysconf("SC_CLK_TCK") if steal else 0
    own = {}
    for m in re.finditer(r"^spin (\d+) (\d+)$", err, re.M):
        own[int(m.group(1))] = own.get(int(m.group(1)), 0) + int(m.group(2))
    procs = counters(rd)
    check(set(own) == set(procs), f"processes {set(procs)}, the program says {set(own)}")
    for pid, p in procs.items():
        t = p["times"]
        spin_wall, _, spin_cpu, spin_xcpu, known = t["spin"]
        check(known, f"pid {pid}: spin's CPU time unknown:\n{err}")
        # The program's reading brackets the call: kscope's hooks are in it.
        check(-0.03 * own[pid] - 1e6 <= spin_cpu - own[pid] <= 0.03 * own[pid] + 1e6 + steal,
              f"pid {pid}: spin {spin_cpu:.0f} ns of CPU, the program measured {own[pid]} "
              f"(the hypervisor took {steal:.0f} ns meanwhile)")
        check(spin_xcpu == spin_cpu, f"pid {pid}: spin's exclusive CPU {spin_xcpu}, "
              f"inclusive {spin_cpu}")
        nap_wall, _, nap_cpu, _, _ = t["nap"]
        check(nap_wall >= 40e6 and nap_cpu <= 0.05 * nap_wall,
              f"pid {pid}: nap {nap_wall:.0f} ns of wall, {nap_cpu:.0f} of CPU")
        step_wall, _, step_cpu, step_xcpu, _ = t["step"]
        check(abs(step_cpu - (spin_cpu + nap_cpu)) <= 0.01 * step_cpu + 1e6 and
              step_xcpu <= 1e6 + 0.01 * step_cpu,
              f"pid {pid}: step {step_cpu:.0f} ns of CPU ({step_xcpu:.0f} its own), "
              f"spin {spin_cpu:.0f}, nap {nap_cpu:.0f}")
    check("no CPU time" not in err, f"a CPU-time warning:\n{err}")
    # report.txt's total table and kscope report's agree with the files.
    want = {}
    for p in procs.values():
        for name, tm in p["times"].items():
            w = want.setdefault(name, [0, 0])
            w[0] += tm[2]
            w[1] += tm[3]
    with open(os.path.join(rd, "report.txt")) as f:
        total = f.read().split("\ntotal\n", 1)[1].split("\n\n", 1)[0].splitlines()
    check(total[0].split()[:8] == ["function", "calls", "incl", "excl", "incl", "cpu",
                                   "excl", "cpu"], f"report.txt's header: {total[0]}")
    rep = {w[0]: (int(w[4]), int(w[5])) for w in (ln.split() for ln in total[1:])}
    for name, (ci, cx) in want.items():
        check(abs(rep[name][0] - ci) <= 1 and abs(rep[name][1] - cx) <= 1,
              f"report.txt: {name} CPU {rep[name]}, the counters {ci:.0f} {cx:.0f}")
    js = json.loads(kreport(rd, "--format", "json")[0])
    got = {r["function"]: (r["incl_cpu"], r["excl_cpu"]) for r in js["rows"]}
    check(got == rep, f"kscope report's CPU times {got}, report.txt's {rep}")
    con = sqlite3.connect(f"file:{os.path.join(rd, 'profile.db')}?mode=ro", uri=True)
    try:
        db = {n: (a, b) for n, a, b in con.execute(
            "SELECT name, cpu_incl_ns, cpu_excl_ns FROM function_totals")}
    finally:
        con.close()
    check(db == rep, f"profile.db's CPU times {db}, report.txt's {rep}")


def s_nocpu(d):
    """Threads the kernel gives no CPU clock: more threads at once than
    an unprivileged user may map perf memory for (perf_event_mlock_kb per
    CPU, with RLIMIT_MEMLOCK 0).  Their functions show '-' and null,
    never a number, and kscope says why."""
    import resource
    with open("/proc/sys/kernel/perf_event_mlock_kb") as f:
        limit_kb = int(f.read()) * os.cpu_count()
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    n = limit_kb // page_kb + 40     # one page a thread
    check(n < 5000, f"{n} threads needed to pass the limit: too many for a test")
    prog = build_text(d, "many",
                      '#include <pthread.h>\n#include <stdio.h>\n#include <stdlib.h>\n'
                'static pthread_barrier_t b;\n'
                '__attribute__((noinline)) long work(long x) { volatile long s = x;\n'
                ' for (int i = 0; i < 100; i++) s += i; return s; }\n'
                '__attribute__((noinline)) long only_main(long x) { volatile long s = x;\n'
                ' for (int i = 0; i < 100; i++) s += i; return s - 4949; }\n'
                'static void *run(void *a) { work(1); pthread_barrier_wait(&b); return a; }\n'
                'int main(int argc, char **argv) { int n = atoi(argv[1]);\n'
                ' pthread_t *t = malloc(n * sizeof(*t)); pthread_barrier_init(&b, 0, n);\n'
                ' for (int i = 0; i < n; i++) if (pthread_create(&t[i], 0, run, 0)) return 1;\n'
                ' for (int i = 0; i < n; i++) pthread_join(t[i], 0);\n'
                ' printf("%ld\\n", only_main(n)); return 0; }\n', libs=("-lpthread",))
    out = os.path.join(d, "out")
    os.mkdir(out)
    cmd = [KSCOPE, "instrument", "-o", out, "--", prog, str(n)]
    if os.geteuid() == 0:
        # root may lock any amount: run as nobody.
        os.chmod(d, 0o755)
        os.chown(out, 65534, -1)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]

    def no_memlock():
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, 0))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300,
                       preexec_fn=no_memlock)
    err = p.stderr.decode()
    check(p.returncode == 0 and p.stdout == f"{n + 1}\n".encode(), f"{cmd}: {p}\n{err}")
    m = re.search(r"no CPU time for (\d+) of (\d+) threads .*: mapping a perf event: ", err)
    check(m and int(m.group(1)) > 0 and int(m.group(2)) == n + 1, f"no warning:\n{err}")
    rd = os.path.join(out, os.listdir(out)[0])
    procs = counters(rd)
    work = list(procs.values())[0]["times"]
    check(not work["work"][4] and work["only_main"][4],
          f"which functions have CPU time: {work}")
    with open(os.path.join(rd, "report.txt")) as f:
        total = f.read().split("\ntotal\n", 1)[1].split("\n\n", 1)[0].splitlines()
    rep = {w[0]: w[4:6] for w in (ln.split() for ln in total[1:])}
    check(rep["work"] == ["-", "-"] and rep["only_main"][0].isdigit(),
          f"report.txt's CPU columns: {rep}")
    js = json.loads(kreport(rd, "--format", "json")[0])
    got = {r["function"]: r["incl_cpu"] for r in js["rows"]}
    check(got["work"] is None and isinstance(got["only_main"], int), f"kscope report: {got}")


def start_running(prog):
    """Starts prog (running.c, throwing.cc) and waits for its "ready"."""
    p = subprocess.Popen([prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stderr.readline()
    check(line == b"ready\n", f"{prog} said {line!r}")
    return p


def stop_running(p, expect):
    """Ends a started program with SIGUSR1; checks its output and status."""
    import signal
    check(p.poll() is None, f"the program ended early: {p.returncode}")
    p.send_signal(signal.SIGUSR1)
    out, _ = p.communicate(timeout=60)
    check(out == expect and p.returncode == 0,
          f"the program printed {out!r}, exit {p.returncode}; expected {expect!r}, 0")


def code_bytes(pid, prog, names):
    """{name: the first 16 bytes of function name} in process pid's memory."""
    syms = {}
    for ln in subprocess.run(["nm", "--defined-only", prog], stdout=subprocess.PIPE,
                             check=True).stdout.decode().splitlines():
        w = ln.split()
        if len(w) == 3 and w[2] in names:
            syms[w[2]] = int(w[0], 16)
    base = None
    with open(f"/proc/{pid}/maps") as f:
        for ln in f:
            w = ln.split()
            if len(w) >= 6 and w[5] == os.path.realpath(prog) and int(w[2], 16) == 0:
                base = int(w[0].split("-")[0], 16)
                break
    check(base is not None and set(syms) == set(names), f"{prog}: {syms}, base {base}")
    # A PIE's symbols are offsets; a fixed program's are addresses.
    with open(prog, "rb") as f:
        pie = f.read(18)[16] == 3
    out = {}
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for n, a in syms.items():
            mem.seek(a + (base if pie else 0))
            out[n] = mem.read(16)
    return out


def attach_bg(pid):
    """kscope instrument --pid PID started in the background, once its
    runtime is in the process: (the kscope process, output directory)."""
    out = tmp()
    k = subprocess.Popen([KSCOPE, "instrument", "-o", out, "--pid", str(pid)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while "libkscope-instr" not in open(f"/proc/{pid}/maps").read() and \
            time.time() < deadline and k.poll() is None:
        time.sleep(0.05)
    time.sleep(0.3)
    return k, out


def attach(pid, opts=(), code=0):
    """kscope instrument --pid PID OPTS: (stderr, run directory)."""
    out = tmp()
    cmd = [KSCOPE, "instrument", "-o", out, "--pid", str(pid), *opts]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    err = p.stderr.decode(errors="replace")
    check(p.returncode == code and p.stdout == b"", f"{cmd}: exit {p.returncode}:\n{err}")
    runs = os.listdir(out)
    return err, os.path.join(out, runs[0]) if runs else None


def s_attach(d):
    """--pid: attach to a running program with four threads, record for
    half a second, detach; the program runs on with its code as it was
    and ends with its own output; counts consistent per thread."""
    prog = build("running.c", os.path.join(d, "running"), libs=("-lpthread",))
    p = start_running(prog)
    before = code_bytes(p.pid, prog, ("tick", "work", "main"))
    err, rd = attach(p.pid, ("--duration", "0.5"))
    check(f"attached to process {p.pid}" in err and "detached: process" in err, err)
    after = code_bytes(p.pid, prog, ("tick", "work", "main"))
    check(after == before, f"the code differs after detaching: {before} {after}")
    with open(f"/proc/{p.pid}/status") as f:
        check("TracerPid:\t0\n" in f.read(), "the process is still traced")
    procs = counters(rd)
    check(list(procs) == [p.pid], f"counters of {list(procs)}")
    threads = procs[p.pid]["threads"]
    check(len(threads) == 4, f"{len(threads)} threads recorded, expected 4")
    for tid, c in threads.items():
        # A tick open when kscope attached has some of its work calls
        # counted, not itself; one open at the end is counted.
        check(c.get("tick", 0) >= 50 and abs(c.get("work", 0) - 100 * c["tick"]) <= 100,
              f"thread {tid}: {c}")
    check("main" not in procs[p.pid]["names"] or
          all("main" not in c for c in threads.values()),
          f"main counted, though it was entered before kscope attached: {threads}")
    # Still running, unharmed: another attach is refused, clearly.
    err2, _ = attach(p.pid, code=1)
    check("attaching twice is not supported" in err2, err2)
    stop_running(p, b"all results right\n")

    # Ctrl+C ends the recording.
    import signal
    p = start_running(prog)
    k, out = attach_bg(p.pid)
    k.send_signal(signal.SIGINT)
    _, kerr = k.communicate(timeout=120)
    kerr = kerr.decode()
    check(k.returncode == 0 and "detached: process" in kerr, f"Ctrl+C: {k.returncode}\n{kerr}")
    rd = os.path.join(out, os.listdir(out)[0])
    check(totals(rd).get("work", 0) > 0, f"Ctrl+C: {totals(rd)}")
    stop_running(p, b"all results right\n")

    # The process ends while kscope is attached: its results are written.
    p = start_running(prog)
    k, out = attach_bg(p.pid)
    stop_running(p, b"all results right\n")
    _, kerr = k.communicate(timeout=120)
    kerr = kerr.decode()
    check(k.returncode == 0 and f"process {p.pid} ended" in kerr, f"{k.returncode}\n{kerr}")
    rd = os.path.join(out, os.listdir(out)[0])
    t = totals(rd)
    # main was entered before kscope attached: it is not seen.
    check("main" not in t and t.get("work", 0) > 0 and t.get("on_signal") == 1,
          f"ended while attached: {t}")


def s_attachexec(d):
    """--pid on a program that runs another (exec) while attached: its
    results up to the exec are written (the GOT entries of exec point at
    the runtime's wrapper), and kscope, told to stop, says what happened
    instead of calling into a runtime that is gone."""
    import signal
    prog = build_text(d, "execs",
                      '#include <signal.h>\n#include <stdio.h>\n#include <unistd.h>\n'
                'static volatile sig_atomic_t go;\n'
                'static void on(int s) { (void)s; go = 1; }\n'
                '__attribute__((noinline)) long work(long x) { volatile long s = x;\n'
                ' for (int i = 0; i < 100; i++) s += i; return s; }\n'
                'int main(void) { signal(SIGUSR2, on); fprintf(stderr, "ready\\n");\n'
                ' while (!go) { work(1); usleep(1000); }\n'
                ' execl("/bin/sleep", "sleep", "60", (char *)NULL); return 1; }\n')
    p = start_running(prog)
    k, out = attach_bg(p.pid)
    try:
        deadline = time.time() + 60
        p.send_signal(signal.SIGUSR2)
        while os.path.realpath(f"/proc/{p.pid}/exe") != os.path.realpath("/bin/sleep") and \
                time.time() < deadline:
            time.sleep(0.05)
        k.send_signal(signal.SIGINT)
        _, kerr = k.communicate(timeout=120)
        kerr = kerr.decode()
        check(k.returncode == 0 and "has run another program (exec)" in kerr,
              f"{k.returncode}\n{kerr}")
        check(p.poll() is None, "the program after the exec ended")
    finally:
        p.kill()
        p.wait()
    rd = os.path.join(out, os.listdir(out)[0])
    procs = counters(rd)
    check(list(procs) == [f"{p.pid}.exec1"], f"counters of {list(procs)}")
    calls = sum(t.get("work", 0) for t in procs[f"{p.pid}.exec1"]["threads"].values())
    check(calls > 10, f"work: {calls} calls before the exec")


def sha(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def s_rewrite(d):
    """--rewrite: a copy with its functions patched in the file, which
    runs itself under kscope instrument: the same counts as a started
    run, the program's output and status its own, the original file
    untouched; PIE and not, C++ exceptions; the refusals; and, when kscope
    is gone, the copy runs unrecorded and says so."""
    for flags in (("-O2",), ("-O2", "-no-pie", "-fno-pie")):
        prog = build("fib.c", os.path.join(d, "fib" + "".join(flags)), flags=flags)
        before = sha(prog)
        out = os.path.join(d, "fibrw" + "".join(flags))
        res = tmp()
        _, err = kreport_run(["instrument", "--rewrite", out, "-o", res, "--", prog], 0)
        check(f"wrote {out}" in err and sha(prog) == before, f"{flags}: {err}")
        listed, _ = kreport_run(["instrument", "--list", "--", out], 0)
        check("rewritten by kscope instrument --rewrite" in listed and
              re.search(r"^fib\s+0x[0-9a-f]+\s+\d+\s+\d+\s+instrumented$", listed, re.M),
              f"--list of the copy:\n{listed}")
        # Run as it is: it runs itself under kscope, output and status its own.
        p = subprocess.run([out, "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        code, want = native([prog, "20"])
        check(p.stdout == want and p.returncode == code,
              f"{flags}: the copy printed {p.stdout!r}, exit {p.returncode}; natively "
              f"{want!r}, {code}\n{p.stderr.decode()}")
        runs = os.listdir(res)
        check(len(runs) == 1, f"{flags}: run directories {runs}")
        rd = os.path.join(res, runs[0])
        check(totals(rd) == {"main": 1, "fib": 21891}, f"{flags}: {totals(rd)}")
        check_db(rd, 21892)
        # And started by kscope instrument, the same.
        _, _, _, rd2 = instrument([out, "20"])
        check(totals(rd2) == {"main": 1, "fib": 21891}, f"{flags}: {totals(rd2)}")
    # C++: exceptions through functions patched in the file.
    if shutil.which("g++"):
        prog = build("throw.cc", os.path.join(d, "throw"), cc="g++")
        out = os.path.join(d, "throwrw")
        kreport_run(["instrument", "--rewrite", out, "-o", tmp(), "--", prog], 0)
        _, _, _, rd = instrument([out, "7"])
        t = totals(rd)
        check(all(t.get(f"_Z6level{i}ib") == 8 for i in (1, 2, 3)), f"throw: {t}")
    # Refusals, nothing written or changed.
    prog = os.path.join(d, "fib-O2")
    out = os.path.join(d, "fibrw-O2")
    before = sha(out)
    _, err = kreport_run(["instrument", "--rewrite", out, "--", prog], 2)
    check("the file exists" in err and sha(out) == before, err)
    _, err = kreport_run(["instrument", "--rewrite", os.path.join(d, "x"), "--", out], 2)
    check("rewritten already" in err and not os.path.exists(os.path.join(d, "x")), err)
    _, err = kreport_run(["instrument", "--rewrite", os.path.join(d, "x"), "--pid", "1"], 2)
    check("not with --pid" in err, err)
    # kscope gone: a copy of it writes the program, then is removed.
    # (The runtime beside it as kscope looks for it: build tree or
    # installed layout.)
    kdir = os.path.join(d, "k", "bin")
    here = os.path.dirname(os.path.realpath(KSCOPE))
    for rel in ("lib", "../lib/kscope"):
        if os.path.exists(os.path.join(here, rel, "libkscope-instr.so")):
            os.makedirs(os.path.join(kdir, rel))
            shutil.copy(os.path.join(here, rel, "libkscope-instr.so"), os.path.join(kdir, rel))
            break
    shutil.copy(KSCOPE, os.path.join(kdir, "kscope"))
    out = os.path.join(d, "orphan")
    p = subprocess.run([os.path.join(kdir, "kscope"), "instrument", "--rewrite", out, "--",
                        prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode == 0, p.stderr.decode())
    os.unlink(os.path.join(kdir, "kscope"))
    p = subprocess.run([out, "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode == 0 and p.stdout == native([prog, "20"])[1] and
          b"runs unrecorded" in p.stderr, f"without kscope: {p}")


def s_attachcxx(d):
    """--pid on a C++ program throwing through instrumented frames: the
    unwinder is pointed at kscope's wrappers (GOT), every throw is still
    caught by main, during and after the recording."""
    prog = build("throwing.cc", os.path.join(d, "throwing"), cc="g++")
    p = start_running(prog)
    err, rd = attach(p.pid, ("--duration", "0.5"))
    t = totals(rd)
    check(t.get("_Z6level1i", 0) > 100 and t["_Z6level1i"] == t["_Z6level2i"] ==
          t["_Z6level3i"], f"counts while attached: {t}\n{err}")
    time.sleep(0.2)
    stop_running(p, b"every throw caught\n")


def s_attacherrors(d):
    """--pid refused with exit status 2 and one clear line: no such
    process, with a program, --duration without --pid, a static
    program."""
    import signal
    _, err = kreport_run(["instrument", "--pid", "2147483647"], 2)
    check("no such process" in err, err)
    _, err = kreport_run(["instrument", "--pid", "1", "--", "true"], 2)
    check("--pid 1 and a program" in err, err)
    _, err = kreport_run(["instrument", "--duration", "1", "--", "true"], 2)
    check("--duration applies to --pid only" in err, err)
    src = os.path.join(d, "st.c")
    with open(src, "w") as f:
        f.write("#include <unistd.h>\nint main(void) { pause(); return 0; }\n")
    prog = os.path.join(d, "st")
    if subprocess.run(["gcc", "-static", "-o", prog, src]).returncode == 0:
        p = subprocess.Popen([prog])
        try:
            _, err = kreport_run(["instrument", "--pid", str(p.pid)], 2)
            check("statically linked" in err or "static" in err, err)
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait()
    # --list --pid: the verdicts for the process's program, nothing run.
    rprog = build("running.c", os.path.join(d, "running"), libs=("-lpthread",))
    p = start_running(rprog)
    out, _ = kreport_run(["instrument", "--list", "--pid", str(p.pid)], 0)
    check(re.search(r"^work\s+0x[0-9a-f]+\s+\d+\s+\d+\s+instrumented$", out, re.M), out)
    check("libkscope-instr" not in open(f"/proc/{p.pid}/maps").read(), "--list attached")
    stop_running(p, b"all results right\n")


def kreport_run(args, code):
    """kscope ARGS with no output directory involved: (stdout, stderr)."""
    p = subprocess.run([KSCOPE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    err = p.stderr.decode()
    check(p.returncode == code, f"kscope {args}: exit {p.returncode}, expected {code}\n{err}")
    return p.stdout.decode(), err


SCENARIOS = {"list": s_list, "entries": s_entries, "fib": s_fib, "calls": s_calls,
             "stripped": s_stripped, "longjmp": s_longjmp, "threads": s_threads,
             "exits": s_exits, "cxx": s_cxx, "fork": s_fork, "progout": s_progout, "errors": s_errors,
             "trace": s_trace, "system": s_system, "report": s_report,
             "perfprobe": s_perfprobe, "modules": s_modules, "mpi": s_mpi,
             "cputime": s_cputime, "nocpu": s_nocpu, "attach": s_attach,
             "attachcxx": s_attachcxx, "attacherrors": s_attacherrors, "exec": s_exec,
             "attachexec": s_attachexec, "rewrite": s_rewrite}


def main():
    global KSCOPE, EXAMPLES, PROGOUT
    if len(sys.argv) not in (4, 5) or sys.argv[3] not in SCENARIOS:
        print(__doc__)
        return 2
    KSCOPE, EXAMPLES, name = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    PROGOUT = sys.argv[4] if len(sys.argv) == 5 else None
    if name == "progout" and not PROGOUT:
        print("progout: needs the path of tests/cli/progout")
        return 2
    try:
        SCENARIOS[name](tmp())
    except Failure as e:
        print(f"FAIL {name}: {e}")
        return 1
    finally:
        tmp.remove()
    print(f"PASS {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
