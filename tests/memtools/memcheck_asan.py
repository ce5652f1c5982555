#!/usr/bin/env python3
"""kscope memcheck's AddressSanitizer engine, side by side with ASan itself.

For one scenario, builds a program with -fsanitize=address here, runs the
ASan binary alone (ASan symbolizing its own reports, read here with
regular expressions, independently of kscope's reader) and under
`kscope memcheck`, and compares:

  - the same findings: ASan's bug type (kscope's `what` starts with it)
    and source line of the first frame in the program's own files, and
    for leaks the kind (direct, indirect), bytes and blocks;
  - every marker of the source is a finding at its line: `/* DEFECT:
    kind */` (examples/memory; the kinds ASan detects) and `/* ASAN:
    bug-type */` (procs/mt_asan_only.c);
  - against Valgrind's Memcheck on the same source built without ASan
    (kscope memcheck --engine memcheck): the same kinds at the same lines,
    for the kinds both engines detect;
  - the program's stdout is its own, and the exit status is 100 with
    findings, else the program's own.

    memcheck_asan.py KSCOPE BUILD_DIR SOURCE_DIR SCENARIO

SCENARIO: an examples/memory program (gcc), clang_NAME (built with
clang), asan_only, fork (procs/mt_fork.c: three processes, one report
each), halt (built without -fsanitize-recover: ASan stops at the first
error and the reports say so), segv (a fatal SIGSEGV after a heap error),
options (what the ASan engine refuses).
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from kstest import Failure, TempDirs, check  # noqa: E402

KSCOPE, BUILD, SRC, SCENARIO = sys.argv[1:5]
FINDINGS = 100
MEM_SRC = os.path.join(SRC, "examples", "memory")
PROCS_SRC = os.path.join(SRC, "tests", "memtools", "procs")
# kscope's kinds that both engines find (docs/memtools.md, "Engines").
SHARED = {"invalid-read", "invalid-write", "use-after-free", "double-free",
          "invalid-free", "mismatched-free", "leak-definite", "leak-indirect"}
ERROR_RE = re.compile(r"==\d+==ERROR: AddressSanitizer: (\S+)")
SUMMARY_RE = re.compile(r"^SUMMARY: AddressSanitizer: (\S+)")
LEAK_RE = re.compile(r"^(Direct|Indirect) leak of (\d+) byte\(s\) in (\d+) object\(s\)")
FRAME_RE = re.compile(r"^\s+#\d+ 0x[0-9a-f]+ in .* (\S+?):(\d+)(?::\d+)?$")
tmp = TempDirs("ks-mc-asan-")


def env_without_asan():
    env = dict(os.environ)
    env.pop("ASAN_OPTIONS", None)
    env.pop("LSAN_OPTIONS", None)
    return env


def build(src, out, compiler, recover=True):
    cmd = [compiler, "-g", "-O0", "-fsanitize=address", "-w", src, "-o", out]
    if recover:
        cmd.insert(3, "-fsanitize-recover=address")
    subprocess.run(cmd, check=True)


def reference(binary, basename, args=()):
    """ASan alone: (stdout, [(bug, line)], [(kind, bytes, blocks, line)])."""
    d = tmp()
    env = env_without_asan()
    env["ASAN_OPTIONS"] = f"halt_on_error=0:log_path={d}/ref:symbolize=1"
    p = subprocess.run([binary, *args], env=env, stdout=subprocess.PIPE, timeout=120)
    errors, leaks = [], []
    for name in sorted(os.listdir(d)):
        cur = None   # ["error", bug, line] or ["leak", kind, bytes, blocks, line]
        for ln in open(os.path.join(d, name), errors="replace"):
            ln = ln.rstrip("\n")
            m = ERROR_RE.search(ln)
            if m:
                cur = ["error", None, None]
                continue
            m = SUMMARY_RE.match(ln)
            if m and cur and cur[0] == "error":
                cur[1] = m.group(1)
                errors.append((cur[1], cur[2]))
                cur = None
                continue
            m = LEAK_RE.match(ln)
            if m:
                cur = ["leak", "leak-definite" if m.group(1) == "Direct" else "leak-indirect",
                       int(m.group(2)), int(m.group(3)), None]
                leaks.append(cur)
                continue
            m = FRAME_RE.match(ln)
            if m and cur and os.path.basename(m.group(1)) == basename and cur[-1] is None:
                cur[-1] = int(m.group(2))
    return p.stdout, p.returncode, errors, [tuple(x[1:]) for x in leaks]


def user_line(stack, basename):
    for f in stack:
        if f.get("file") and os.path.basename(f["file"]) == basename and f.get("line"):
            return f["line"]
    return None


def run_kscope(binary, args=(), opts=(), expect=None):
    out = tmp()
    p = subprocess.run([KSCOPE, "memcheck", "-o", out, "--no-filter",
                        "--show-leak-kinds", "definite,indirect", *opts, "--", binary, *args],
                       env=env_without_asan(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600)
    err = p.stderr.decode(errors="replace")
    if expect is not None:
        check(p.returncode == expect, f"kscope memcheck exited {p.returncode}, expected "
              f"{expect}:\n{err[-3000:]}")
    runs = [d for d in os.listdir(out) if d.startswith("memcheck_")]
    check(len(runs) == 1, f"one run directory expected in {out}: {runs}\n{err[-2000:]}")
    rundir = os.path.join(out, runs[0])
    with open(os.path.join(rundir, "report.json")) as f:
        rep = json.load(f)
    with open(os.path.join(rundir, "findings.sarif")) as f:
        sarif = json.load(f)
    check(sarif["runs"][0]["results"] is not None, "SARIF without results")
    return p, err, rep, rundir


def findings(rep, basename, pid=None):
    errs, leaks = [], []
    for e in rep["errors"]:
        if pid is not None and e["pid"] != pid:
            continue
        errs.append((e["kind"], e["what"].split(":")[0].split(" ")[0],
                     user_line(e["stack"], basename)))
    for lk in rep["leaks"]:
        if pid is not None and lk["pid"] != pid:
            continue
        leaks.append((lk["kind"], lk["bytes"], lk["blocks"], user_line(lk["stack"], basename)))
    return errs, leaks


def markers(path):
    out = []
    for i, ln in enumerate(open(path), 1):
        for m in re.finditer(r"/\* (DEFECT|ASAN): ([a-z-]+)", ln):
            out.append((m.group(1), m.group(2), i))
    return out


ASAN_TYPE = {"double-free": "double-free", "invalid-free": "bad-free",
             "mismatched-free": "alloc-dealloc-mismatch", "use-after-free": "heap-use-after-free"}


def side_by_side(src, compiler, args=()):
    basename = os.path.basename(src)
    binary = os.path.join(tmp(), os.path.splitext(basename)[0])
    build(src, binary, compiler)
    ref_out, ref_rc, ref_errs, ref_leaks = reference(binary, basename, args)
    expect = FINDINGS if (ref_errs or ref_leaks) else ref_rc
    p, err, rep, _ = run_kscope(binary, args, expect=expect)
    check(p.stdout == ref_out, f"stdout differs from the program's own: {p.stdout!r} vs "
          f"{ref_out!r}")
    errs, leaks = findings(rep, basename)
    got = sorted((bug, line) for _, bug, line in errs)
    check(got == sorted(ref_errs), f"errors differ from ASan's own:\n kscope {got}\n "
          f"ASan   {sorted(ref_errs)}")
    check(sorted(leaks) == sorted(ref_leaks), f"leaks differ from LeakSanitizer's own:\n "
          f"kscope {sorted(leaks)}\n LSan   {sorted(ref_leaks)}")
    kinds_at = {(k, line) for k, _, line in errs} | {(k, line) for k, _, _, line in leaks}
    bugs_at = {(b, line) for _, b, line in errs}
    for tag, kind, line in markers(src):
        if tag == "ASAN":
            check((kind, line) in bugs_at, f"{basename}:{line}: ASan's {kind} not reported "
                  f"({sorted(bugs_at)})")
        elif kind in SHARED:
            check((kind, line) in kinds_at, f"{basename}:{line}: {kind} not reported "
                  f"({sorted(kinds_at)})")
    print(f"ok: {basename} ({compiler}): {len(errs)} errors, {len(leaks)} leaks, as ASan's own")
    return binary, errs, leaks


def against_memcheck(src, errs, leaks, args=()):
    """The same source without ASan under Memcheck: shared kinds agree."""
    basename = os.path.basename(src)
    plain = os.path.join(tmp(), "plain_" + os.path.splitext(basename)[0])
    compiler = "g++" if src.endswith(".cpp") else "gcc"
    subprocess.run([compiler, "-g", "-gdwarf-4", "-O0", "-w", src, "-o", plain], check=True)
    _, _, rep, _ = run_kscope(plain, args, opts=["--engine", "memcheck"])
    merrs, mleaks = findings(rep, basename)
    mine = {(k, line) for k, _, line in errs if k in SHARED} | \
           {(k, line) for k, _, _, line in leaks if k in SHARED}
    theirs = {(k, line) for k, _, line in merrs if k in SHARED} | \
             {(k, line) for k, _, _, line in mleaks if k in SHARED}
    check(mine == theirs, f"{basename}: ASan and Memcheck differ on the kinds both find:\n"
          f" ASan     {sorted(mine)}\n Memcheck {sorted(theirs)}")
    print(f"ok: {basename}: the same {len(mine)} findings as Memcheck on the kinds both find")


def scenario_example(name, compiler="gcc"):
    for ext in (".c", ".cpp"):
        src = os.path.join(MEM_SRC, name + ext)
        if os.path.exists(src):
            break
    if src.endswith(".cpp"):
        compiler = "g++" if compiler == "gcc" else "clang++"
    _, errs, leaks = side_by_side(src, compiler)
    if compiler in ("gcc", "g++"):
        against_memcheck(src, errs, leaks)


def scenario_fork():
    src = os.path.join(PROCS_SRC, "mt_fork.c")
    binary = os.path.join(tmp(), "mt_fork")
    build(src, binary, "gcc")
    p, err, rep, rundir = run_kscope(binary, expect=FINDINGS)
    pids = sorted({e["pid"] for e in rep["errors"]})
    check(len(pids) == 3, f"three processes with an error each expected: {pids}\n{err[-2000:]}")
    want = {"PARENT": "use-after-free", "CHILD": "invalid-read", "GRANDCHILD": "invalid-write"}
    lines = {}
    for i, ln in enumerate(open(src), 1):
        m = re.search(r"/\* (\w+) ERROR: ([a-z-]+)", ln)
        if m:
            lines[m.group(1)] = (m.group(2), i)
    got = sorted((e["kind"], user_line(e["stack"], "mt_fork.c")) for e in rep["errors"])
    check(got == sorted(lines[k] for k in want), f"fork: {got} vs {sorted(lines.values())}")
    main = rep["program"]["pid"]
    check(any(e["pid"] == main and e["kind"] == "use-after-free" for e in rep["errors"]),
          "the parent's error is not the program's")
    check(p.stdout.decode().count("parent done") == 1, f"stdout: {p.stdout!r}")
    print(f"ok: fork: one report per process ({len(pids)} processes)")


def scenario_halt():
    src = os.path.join(PROCS_SRC, "mt_asan_only.c")
    binary = os.path.join(tmp(), "mt_asan_only")
    build(src, binary, "gcc", recover=False)
    p, err, rep, rundir = run_kscope(binary, expect=FINDINGS)
    check(len(rep["errors"]) == 1, f"ASan stops at the first error: {rep['errors']}")
    check(rep["errors"][0]["what"].startswith("global-buffer-overflow"), rep["errors"][0]["what"])
    check(rep.get("incomplete") and "stopped the program at its first error"
          in rep["incomplete"], f"report.json does not say ASan stopped: {rep.get('incomplete')}")
    sarif = json.load(open(os.path.join(rundir, "findings.sarif")))
    check(sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False,
          "SARIF: executionSuccessful should be false")
    text = open(os.path.join(rundir, "report.txt")).read()
    check("-fsanitize-recover=address" in text, "report.txt does not say how to go on")
    _, _, rep0, _ = run_kscope(binary, opts=["--error-exitcode", "0"], expect=1)
    print("ok: halt: the first error, the report says the rest was not checked")


def scenario_segv():
    src = os.path.join(PROCS_SRC, "mt_signal.c")
    binary = os.path.join(tmp(), "mt_signal")
    build(src, binary, "gcc")
    p, err, rep, _ = run_kscope(binary, expect=FINDINGS)
    kinds = sorted(e["what"].split(":")[0].split(" ")[0] for e in rep["errors"])
    check(kinds == ["SEGV", "heap-buffer-overflow"], f"SEGV run: {kinds}")
    check(rep["exit"] == {"how": "signal", "signal": 11, "name": "SIGSEGV"} or
          (rep["exit"].get("how") == "signal" and rep["exit"].get("signal") == 11),
          f"exit: {rep['exit']}")
    run_kscope(binary, opts=["--error-exitcode", "0"], expect=128 + 11)
    print("ok: segv: the heap error and the SIGSEGV, the program's death kept")


def scenario_options():
    src = os.path.join(MEM_SRC, "oob.c")
    binary = os.path.join(tmp(), "oob")
    build(src, binary, "gcc")
    cases = [
        (["--track-origins"], "option --track-origins is Valgrind Memcheck's"),
        (["--suppressions", src], "option --suppressions is Valgrind Memcheck's"),
        (["--xml"], "option --xml is Valgrind Memcheck's"),
        (["--engine", "memcheck"], "built with AddressSanitizer, which Valgrind cannot run"),
        (["--redzone", "100"], "accepted with ASan: a power of two from 16 to 2048"),
        (["--leak-check", "summary"], "accepted with ASan: full or no"),
    ]
    for opts, words in cases:
        out = tmp()
        p = subprocess.run([KSCOPE, "memcheck", "-o", out, *opts, "--", binary],
                           env=env_without_asan(), capture_output=True, timeout=120)
        err = p.stderr.decode()
        check(p.returncode == 2, f"{opts}: exit {p.returncode}, expected 2: {err}")
        check(words in err, f"{opts}: the message should say '{words}': {err}")
        check(not os.listdir(out), f"{opts}: nothing should be written: {os.listdir(out)}")
    # Given options reach ASan: a larger redzone, no leak check.
    _, _, rep, _ = run_kscope(binary, opts=["--redzone", "256", "--leak-check", "no"],
                              expect=FINDINGS)
    check(rep["settings"].get("redzone") == 256,
          f"report.json settings: {rep['settings']}")
    # The user's ASAN_OPTIONS win over kscope's defaults: halt_on_error=1
    # stops a program built to go on at its first error.
    env = env_without_asan()
    env["ASAN_OPTIONS"] = "halt_on_error=1"
    three = os.path.join(tmp(), "mt_asan_only")
    build(os.path.join(PROCS_SRC, "mt_asan_only.c"), three, "gcc")
    out = tmp()
    p = subprocess.run([KSCOPE, "memcheck", "-o", out, "--", three], env=env,
                       capture_output=True, timeout=120)
    check(p.returncode == FINDINGS, f"ASAN_OPTIONS run: exit {p.returncode}")
    rep = json.load(open(os.path.join(out, os.listdir(out)[0], "report.json")))
    check(len(rep["errors"]) == 1 and rep.get("incomplete"),
          f"ASAN_OPTIONS=halt_on_error=1 should stop at the first error: {rep['errors']}")
    print("ok: options: Valgrind's options refused with ASan, ASan's own given")


def main():
    try:
        if SCENARIO == "fork":
            scenario_fork()
        elif SCENARIO == "halt":
            scenario_halt()
        elif SCENARIO == "segv":
            scenario_segv()
        elif SCENARIO == "options":
            scenario_options()
        elif SCENARIO == "asan_only":
            src = os.path.join(PROCS_SRC, "mt_asan_only.c")
            side_by_side(src, "gcc")
            side_by_side(src, "clang")
        elif SCENARIO.startswith("clang_"):
            scenario_example(SCENARIO[6:], "clang")
        else:
            scenario_example(SCENARIO)
    except Failure as e:
        print(f"FAIL: memcheck_asan {SCENARIO}: {e}")
        return 1
    finally:
        tmp.remove()
    print(f"PASS: memcheck_asan {SCENARIO}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
