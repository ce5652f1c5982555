#!/usr/bin/env python3
"""Whole runs of every kscope command that runs a program.

stdout_<cmd>: `kscope <cmd> -- progout` with standard output redirected
to a file gives the file progout gives without kscope, byte for byte
(progout.c writes about 13 KiB through stdio and write(2), bytes of every
value, and a last line without a newline), exits 0, and kscope's summary
appeared on standard error.

exit_<cmd>: the exit statuses of README.md's table, on real runs: the
program's own status (progout --exit 3), 128+N when signal N ended it
(--signal 15), 2 for bad input with nothing created, 100 when memcheck or
falseshare reported findings (they win over the program's status;
--error-exitcode 0 gives the program's), 1 when kscope op or op
--simulate measured nothing although the program succeeded.  Every run
also checks that the program's output was its own.

    progrun.py KSCOPE PROGOUT BUILD_DIR SCENARIO

Exit status 0 when the scenario passed, 1 when it failed, 77 (skipped) for
kscope op's scenarios on a machine without an OpenCL platform.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from kstest import Failure, check, TempDirs, opencl_platforms  # noqa: E402

KSCOPE, PROGOUT, BUILD, SCENARIO = sys.argv[1:5]
SKIP = 77
TIMEOUT = 300
tmpdir = TempDirs("ks-progrun-")

# What each command prints on stderr when it is done (its summary).
SUMMARY = {
    "sample": re.compile(r"^kscope sample: \d+ samples, \d+ threads?, \d+ process", re.M),
    "causal": re.compile(r"^kscope causal: \d+ experiments? in \d+ process", re.M),
    "op": re.compile(r"^kscope op: 1 kernel\(s\) collected \(replay mode kernel\) in ", re.M),
    "simulate": re.compile(r"^kscope op --simulate: \d+ instructions, \d+ cycles", re.M),
    "memcheck": re.compile(r"^kscope memcheck report$", re.M),
    "contention": re.compile(r"^kscope contention report$", re.M),
    "falseshare": re.compile(r"^kscope falseshare report$", re.M),
}
RESULTS = re.compile(r"^(?:results: |kscope op: .* in )(/\S+)$", re.M)


def env():
    """No KSCOPE_* settings from outside; the calibration cache (kscope op
    reads it) in a new directory, PoCL's compiled kernels in its usual one."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("KSCOPE_")}
    pocl = os.path.join(os.environ.get("XDG_CACHE_HOME")
                        or os.path.join(os.path.expanduser("~"), ".cache"), "pocl", "kcache")
    if "POCL_CACHE_DIR" not in e and os.path.isdir(pocl):
        e["POCL_CACHE_DIR"] = pocl
    e["XDG_CACHE_HOME"] = tmpdir()
    return e


def kscope_words(cmd):
    """The command words for SCENARIO's command name."""
    return ["op", "--simulate"] if cmd == "simulate" else [cmd]


def run(argv, stdout_path):
    """Runs argv with stdout to a file; returns (status, stdout bytes, stderr)."""
    with open(stdout_path, "wb") as f:
        p = subprocess.run(argv, stdout=f, stderr=subprocess.PIPE, env=env(),
                           timeout=TIMEOUT)
    with open(stdout_path, "rb") as f:
        return p.returncode, f.read(), p.stderr.decode(errors="replace")


def under(cmd, args, opts=(), prog=None, expect=None, same_output=True):
    """Runs `kscope CMD -o DIR OPTS -- PROG ARGS` (PROG: progout) with
    stdout to a file; checks the status (expect) and that stdout is the
    program's own; returns (status, stderr, output directory)."""
    prog = prog or PROGOUT
    out = tmpdir()
    argv = [KSCOPE, *kscope_words(cmd), "-o", out, *opts, "--", prog, *args]
    code, stdout, stderr = run(argv, os.path.join(tmpdir(), "stdout"))
    why = f"\n  command: {' '.join(argv)}\n  exit: {code}\n  stderr (end):\n{stderr[-3000:]}"
    if expect is not None:
        check(code == expect, f"exit {code}, expected {expect}" + why)
    if same_output:
        nat, _ = native_of(prog, args)
        check(stdout == nat, "the program's standard output changed under kscope "
              f"({len(stdout)} bytes, {len(nat)} without kscope; first difference at "
              f"byte {first_difference(stdout, nat)})" + why)
    return code, stderr, out, why


_native = {}


def native_of(prog, args):
    """The program's own stdout (bytes) and status for args, without kscope."""
    key = (prog, tuple(args))
    if key not in _native:
        d = tmpdir()
        code, out, _ = run([prog, *args], os.path.join(d, "native.out"))
        _native[key] = (out, code)
    return _native[key]


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def check_progout_output():
    """progout's output is what the test needs: several KiB, bytes of
    every value, and no newline at the end."""
    out, code = native_of(PROGOUT, [])
    check(code == 0, f"progout exits {code} without kscope")
    check(len(out) > 8192, f"progout wrote only {len(out)} bytes")
    check(all(bytes([b]) in out for b in range(256)), "progout misses byte values")
    check(out.endswith(b"the end, with no newline"), "progout's output ends otherwise")


def summary_shown(cmd, stderr, why):
    check(SUMMARY[cmd].search(stderr), f"kscope {cmd}: no summary on stderr" + why)
    m = RESULTS.search(stderr)
    check(m and os.path.isdir(m.group(1)),
          f"kscope {cmd}: stderr names no run directory" + why)


def needs_opencl():
    if opencl_platforms() == 0:
        print("no OpenCL platform: skipped")
        sys.exit(SKIP)


def stdout_scenario(cmd):
    check_progout_output()
    args = ["--opencl"] if cmd == "op" else []
    if cmd == "op":
        needs_opencl()
        nat, code = native_of(PROGOUT, args)
        check(code == 0 and b"opencl: twice ok" in nat, "progout --opencl fails natively")
    _, stderr, _, why = under(cmd, args, expect=0)
    summary_shown(cmd, stderr, why)


def bad_input(cmd):
    """A program that does not exist: exit 2, nothing created, one error."""
    out = os.path.join(tmpdir(), "out")
    argv = [KSCOPE, *kscope_words(cmd), "-o", out, "--", "/nonexistent/progout"]
    code, stdout, stderr = run(argv, os.path.join(tmpdir(), "stdout"))
    why = f"\n  command: {' '.join(argv)}\n  exit: {code}\n  stderr:\n{stderr}"
    check(code == 2, f"bad input: exit {code}, expected 2" + why)
    check(stdout == b"", "bad input: something on stdout" + why)
    check("kscope: error: " in stderr, "bad input: no error message" + why)
    check(not os.path.exists(out), "bad input: the output directory was created" + why)


def exit_scenario(cmd):
    bad_input(cmd)
    if cmd == "op":
        needs_opencl()
        # The program's status and signal, with its kernel collected.
        _, stderr, _, why = under(cmd, ["--opencl", "--exit", "3"], expect=3)
        summary_shown(cmd, stderr, why)
        _, stderr, _, why = under(cmd, ["--opencl", "--signal", "15"], expect=128 + 15)
        summary_shown(cmd, stderr, why)
        # Nothing collected: 1 when the program succeeded, else its status.
        _, stderr, _, why = under(cmd, [], expect=1)
        check("kscope op: 0 kernel(s) collected" in stderr, "no '0 kernel(s)' line" + why)
        under(cmd, ["--exit", "3"], expect=3)
        return
    under(cmd, ["--exit", "3"], expect=3)
    under(cmd, ["--signal", "15"], expect=128 + 15)
    if cmd == "sample":
        under(cmd, ["--signal", "6"], expect=128 + 6)
    elif cmd == "simulate":
        # Nothing counted: 1 when the program succeeded, else its status.
        _, stderr, _, why = under(cmd, [], opts=["--kernel-name", "no_such_function"],
                                  expect=1)
        check("no instruction was counted" in stderr, "no message" + why)
        under(cmd, ["--exit", "3"], opts=["--kernel-name", "no_such_function"], expect=3)
    elif cmd == "memcheck":
        # Findings: 100, which wins over the program's status.
        _, stderr, out, why = under(cmd, ["--heap-error"], expect=100)
        summary_shown(cmd, stderr, why)
        check("invalid read" in stderr.lower(), "the heap error is not reported" + why)
        _, stderr, _, why = under(cmd, ["--heap-error", "--exit", "3"], expect=100)
        check("the program exited with status 3" in stderr,
              "the program's own status is not said" + why)
        under(cmd, ["--heap-error", "--exit", "3"], opts=["--error-exitcode", "0"], expect=3)
        under(cmd, ["--heap-error"], opts=["--error-exitcode", "7"], expect=7)
        under(cmd, [], expect=0)
    elif cmd in ("falseshare", "contention"):
        fs = os.path.join(BUILD, "examples", "threads", "falseshare")
        check(os.access(fs, os.X_OK), f"{fs} is missing: build the examples first")
        if cmd == "falseshare":
            _, stderr, _, why = under(cmd, [], prog=fs, expect=100)
            check("falsely shared" in stderr.lower() or "false sharing" in stderr.lower(),
                  "no false sharing reported" + why)
            under(cmd, [], prog=fs, opts=["--error-exitcode", "0"], expect=0)
        else:
            # contention measures; it has no findings and no --error-exitcode.
            under(cmd, [], prog=fs, expect=0)
            out = tmpdir()
            p = subprocess.run([KSCOPE, "contention", "-o", out, "--error-exitcode", "0",
                                "--", fs], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env(), timeout=TIMEOUT)
            check(p.returncode == 2 and not os.listdir(out),
                  f"contention --error-exitcode: exit {p.returncode}, expected 2")


def main():
    kind, _, cmd = SCENARIO.partition("_")
    check(cmd in SUMMARY, f"unknown scenario {SCENARIO}")
    if kind == "stdout":
        stdout_scenario(cmd)
    elif kind == "exit":
        exit_scenario(cmd)
    else:
        raise Failure(f"unknown scenario {SCENARIO}")


if __name__ == "__main__":
    try:
        main()
    except Failure as ex:
        print(f"FAIL: {SCENARIO}: {ex}")
        sys.exit(1)
    except subprocess.TimeoutExpired as ex:
        print(f"FAIL: {SCENARIO}: timed out: {ex}")
        sys.exit(1)
    tmpdir.remove()
    print(f"ok: {SCENARIO}")
