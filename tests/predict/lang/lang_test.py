#!/usr/bin/env python3
"""Tests of kscope predict's model language, C API and Python module.

    lang_test.py KPP_DRIVER KPP_CAPI KSCOPE BUILD_DIR SCENARIO [--bless]

Scenarios:
  errors        every errors/NAME.kpp gives exactly errors/NAME.err on
                stderr and exit status 2, both from kpp_driver (what
                ks_pred_parse_file says) and from `kscope predict` (the
                same after "kscope: error: ", with the file's full path),
                which writes nothing.  A first line "# args: ..." gives
                the arguments; "@ANY@" in a .err matches any text, and
                @SRC@, @BUILD@, @TMP@ stand for the source tree, the build
                tree and the scratch directory.  --bless rewrites the .err
                files (review them before keeping them).
  overrides     -D values: they replace a param's default before it is
                evaluated, the last of a key wins, unknown keys are refused
                or ignored (KS_PRED_PARSE_IGNORE_UNKNOWN), values are
                integers.
  scopes        loops, scopes and shadowing, and the integer arithmetic
                (rounding of / % ceil_div, min, max), read back through the
                schedule: a `scalar C` runs for 2*C cycles on kpptest.
  limits        line length, name length, nesting of expressions and
                loops, the statement budget, file size, odd bytes, CRLF.
  three_ways    models/*.kpp, the same models written with the C API
                (kpp_capi.c) and with the Python module (below) give
                identical schedules: every instruction's name, pipe, start
                and end, and the total, compared exactly; on the test chip
                and on the bundled ascend910b (when the source tree has it).
  python_api    the Python module: shapes taken from the first writer,
                split, vconv/vreduce/mmad outputs, register, instr, scalar,
                locations, outputs written, time_us, finding the library.
  measured      --measured from msprof's PipeUtilization.csv and
                op_summary (measured/*.csv), and the layouts refused.
  python_errors the module's errors: a bad space, a shape mismatch, an
                unknown chip or instruction raise PredictError with the
                library's message after the caller's file:line:column.

Nothing here asserts on wall-clock time.
"""
import csv
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # tests/, for kstest
from kstest import Failure, check  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
CHIPS = os.path.join(HERE, "chips")
MODELS = ["two_pipes", "double_buffer", "mmad", "registered", "tiled_add", "flags", "cache",
          "cores"]


def scratch():
    d = tempfile.mkdtemp(prefix="ks-kpp-")
    _scratch.append(d)
    return d


_scratch = []


def base_env(tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSCOPE_")}
    # The test chip, then the chips of the build tree (ascend910b).
    env["KSCOPE_CHIP_PATH"] = CHIPS + ":" + os.path.join(BUILD, "share", "kscope", "chips")
    env["XDG_DATA_HOME"] = os.path.join(tmp, "xdg")
    env["HOME"] = tmp
    env["LC_ALL"] = "C"
    return env


def run(cmd, env, cwd=None, timeout=120):
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                          errors="replace", timeout=timeout)


def driver(args, tmp, cwd=None):
    return run([DRIVER] + args, base_env(tmp), cwd=cwd)


def schedule_of(text):
    """[(name, pipe, start, end)], total from kpp_driver/kpp_capi output."""
    rows, total = [], None
    for line in text.splitlines():
        f = line.split("\t")
        if f[0] == "cycles":
            total = float(f[1])
        else:
            rows.append((f[1], f[2], float(f[3]), float(f[4])))
    check(total is not None, f"no total in the output:\n{text}")
    return rows, total


def model_file(tmp, text, name="m.kpp"):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def scheduled(tmp, text, args=()):
    """The schedule of a model given as text, on kpptest."""
    path = model_file(tmp, text)
    r = driver(["--chip", "kpptest", "--schedule"] + list(args) + [path], tmp)
    check(r.returncode == 0, f"model failed ({r.returncode}): {r.stderr}\n{text}")
    return schedule_of(r.stdout)


def refused(tmp, text, args=(), name="m.kpp"):
    """The message of a model the language refuses (exit status 2)."""
    path = model_file(tmp, text, name)
    r = driver(list(args) + [name], tmp, cwd=os.path.dirname(path))
    check(r.returncode == 2, f"expected exit status 2, got {r.returncode}: "
                             f"{r.stdout}{r.stderr}\n{text}")
    return r.stderr.strip()


def durations(rows):
    return [e - s for (_, _, s, e) in rows]


# ------------------------------------------------------------------
# errors
# ------------------------------------------------------------------

def filters(tmp):
    return [(os.path.realpath(tmp), "@TMP@"), (tmp, "@TMP@"), (BUILD, "@BUILD@"),
            (os.path.realpath(BUILD), "@BUILD@"), (SRC, "@SRC@"),
            (os.path.realpath(SRC), "@SRC@")]


def scenario_errors(bless):
    tmp = scratch()
    edir = os.path.join(HERE, "errors")
    names = sorted(f[:-4] for f in os.listdir(edir) if f.endswith(".kpp"))
    check(len(names) >= 12, f"only {len(names)} error fixtures")
    bad = []
    for name in names:
        kpp = os.path.join(edir, name + ".kpp")
        with open(kpp, "rb") as f:
            first = f.readline().decode("utf-8", "replace")
        args = shlex.split(first[len("# args:"):]) if first.startswith("# args:") else []
        r = driver(args + [name + ".kpp"], tmp, cwd=edir)
        got = r.stderr
        for path, token in filters(tmp):
            got = got.replace(path, token)
        exp_path = os.path.join(edir, name + ".err")
        if bless:
            with open(exp_path, "w") as f:
                f.write(got)
            print(f"{name}: {got.strip()}")
            continue
        if not os.path.exists(exp_path):
            bad.append(f"{name}: no {name}.err")
            continue
        with open(exp_path) as f:
            exp = f.read()
        pattern = "^" + ".*".join(re.escape(p) for p in exp.split("@ANY@")) + "$"
        if r.returncode != 2:
            bad.append(f"{name}: exit status {r.returncode}, expected 2")
        if not re.match(pattern, got, re.S):
            bad.append(f"{name}:\n  expected: {exp.strip()}\n  got:      {got.strip()}")
        # Every message is FILE:LINE:COLUMN: what is wrong, one line.
        if not re.match(rf"^{re.escape(name)}\.kpp:\d+:\d+: \S.*\n$", got):
            bad.append(f"{name}: not one 'FILE:LINE:COLUMN: message' line: {got!r}")
        # kscope predict says the same, and writes nothing.
        out = os.path.join(tmp, "out")
        r = run([KSCOPE, "predict", "-o", out] + args + [name + ".kpp"], base_env(tmp),
                cwd=edir)
        got = r.stderr.replace(kpp, name + ".kpp")
        for path, token in filters(tmp):
            got = got.replace(path, token)
        kpattern = "^" + re.escape("kscope: error: ") + pattern[1:]
        if r.returncode != 2 or not re.match(kpattern, got, re.S):
            bad.append(f"{name}: kscope predict exited {r.returncode}:\n"
                       f"  expected: kscope: error: {exp.strip()}\n  got:      {got.strip()}")
        if os.path.exists(out) and os.listdir(out):
            bad.append(f"{name}: kscope predict wrote {os.listdir(out)}")
        shutil.rmtree(out, ignore_errors=True)
    check(not bad, "\n".join(bad))
    print(f"{len(names)} bad models give their expected messages")


# ------------------------------------------------------------------
# overrides
# ------------------------------------------------------------------

LOOP = """param N = 4
for i in 0 .. N {
    scalar 1
}
"""


def scenario_overrides(_bless):
    tmp = scratch()
    rows, _ = scheduled(tmp, LOOP)
    check(len(rows) == 4, f"default N=4: {len(rows)} instructions")
    rows, _ = scheduled(tmp, LOOP, ["-D", "N=7"])
    check(len(rows) == 7, f"-D N=7: {len(rows)} instructions")
    rows, _ = scheduled(tmp, LOOP, ["-D", "N=2", "-D", "N=5"])
    check(len(rows) == 5, f"-D N=2 -D N=5 (the last wins): {len(rows)}")
    rows, _ = scheduled(tmp, LOOP, ["-D", "N=-3"])
    check(len(rows) == 0, f"-D N=-3: an empty loop, got {len(rows)}")
    rows, _ = scheduled(tmp, LOOP, ["-D", "N=+3"])
    check(len(rows) == 3, f"-D N=+3: {len(rows)}")
    # The default is not evaluated when a value is given.
    text = "param N = 1 / 0\nscalar N\n"
    rows, _ = scheduled(tmp, text, ["-D", "N=6"])
    check(durations(rows) == [12.0], f"overridden 1/0: {durations(rows)}")
    msg = refused(tmp, text, ["--chip", "kpptest"])
    check(msg == "m.kpp:1:13: division by zero in '1 / 0': the divisor '0' is 0", msg)
    # Later names see the value given.
    rows, _ = scheduled(tmp, "param A = 2\nlet B = A * 3\nscalar B\n", ["-D", "A=5"])
    check(durations(rows) == [30.0], f"let B = A*3 with A=5: {durations(rows)}")
    # Unknown keys: refused, or ignored when asked.
    msg = refused(tmp, LOOP, ["--chip", "kpptest", "-D", "M=3"])
    check(msg == "m.kpp:1:1: 'M' is given a value from outside, but the model declares "
                 "no param of that name (its params: N)", msg)
    rows, _ = scheduled(tmp, LOOP, ["--ignore-unknown", "-D", "M=3", "-D", "N=2"])
    check(len(rows) == 2, f"ignored M, N=2: {len(rows)}")
    msg = refused(tmp, "let a = 1\n", ["--chip", "kpptest", "-D", "M=3"])
    check(msg.endswith("(it declares no params)"), msg)
    # Values are 64-bit integers.
    for bad in ["3.5", "0x10", "", "12 ", "9223372036854775808", "ten"]:
        msg = refused(tmp, LOOP, ["--chip", "kpptest", "-D", f"N={bad}"])
        check(msg == f"m.kpp:1:1: param N: the value given from outside, '{bad}', is not "
                     f"a 64-bit integer", msg)
    rows, _ = scheduled(tmp, "param N = 1\nscalar N - 9223372036854775806\n",
                        ["-D", "N=9223372036854775807"])
    check(durations(rows) == [2.0], f"INT64_MAX: {durations(rows)}")
    # A param in a loop body takes the value given on every pass.
    rows, _ = scheduled(tmp, "for i in 0 .. 3 {\n  param C = i + 1\n  scalar C\n}\n")
    check(durations(rows) == [2.0, 4.0, 6.0], f"param in a loop: {durations(rows)}")
    rows, _ = scheduled(tmp, "for i in 0 .. 3 {\n  param C = i + 1\n  scalar C\n}\n",
                        ["-D", "C=4"])
    check(durations(rows) == [8.0] * 3, f"param in a loop, C=4: {durations(rows)}")
    # --chip replaces the chip statement (which names no chip that exists).
    rows, _ = scheduled(tmp, "chip no_such_chip\nscalar 3\n")
    check(durations(rows) == [6.0], f"--chip over the chip statement: {durations(rows)}")
    print("overrides behave as documented")


# ------------------------------------------------------------------
# scopes and arithmetic
# ------------------------------------------------------------------

def scenario_scopes(_bless):
    tmp = scratch()
    # Shadowing: the body's a is computed from the outer a, and the outer
    # one is back after the loop.
    rows, _ = scheduled(tmp, "let a = 2\nfor i in 0 .. 2 {\n  let a = a * 10\n"
                             "  scalar a\n}\nscalar a\n")
    check(durations(rows) == [40.0, 40.0, 4.0], f"shadowing: {durations(rows)}")
    # The loop variable runs from A to B-1; nested loops.
    rows, _ = scheduled(tmp, "for i in 3 .. 6 {\n  scalar i + 1\n}\n")
    check(durations(rows) == [8.0, 10.0, 12.0], f"for 3..6: {durations(rows)}")
    rows, _ = scheduled(tmp, "for i in 0 .. 3 {\n  for j in i .. 3 {\n"
                             "    scalar 10 * i + j + 1\n  }\n}\n")
    want = [2 * (10 * i + j + 1) for i in range(3) for j in range(i, 3)]
    check(durations(rows) == want, f"nested loops: {durations(rows)} != {want}")
    rows, _ = scheduled(tmp, "for i in 5 .. 5 {\n  scalar 1\n}\nfor i in 5 .. 2 {\n"
                             "  scalar 1\n}\nscalar 1\n")
    check(len(rows) == 1, f"empty ranges ran: {len(rows)}")
    # The same name in two loops, one after the other.
    rows, _ = scheduled(tmp, "for i in 0 .. 1 {\n  let k = 3\n  scalar k\n}\n"
                             "for i in 0 .. 1 {\n  let k = 4\n  scalar k\n}\n")
    check(durations(rows) == [6.0, 8.0], f"two loops: {durations(rows)}")
    # Arithmetic: / and % truncate toward zero, ceil_div rounds up.
    exprs = {"7 / 2": 3, "-7 / 2 + 5": 2, "7 / -2 * -1": 3, "7 % 3": 1, "-7 % 3 + 2": 1,
             "7 % -3": 1, "ceil_div(7, 2)": 4, "ceil_div(8, 2)": 4,
             "-ceil_div(-7, 2)": 3, "ceil_div(-7, -2)": 4, "ceil_div(7, -2) + 4": 1,
             "min(3, 9) * max(2, -5)": 6, "2 + 3 * 4": 14, "(2 + 3) * 4": 20,
             "10 - 4 - 3": 3, "100 / 10 / 5": 2, "--3": 3, "- -3": 3,
             "min(-1, -2) + 5": 3, "max(1, 2)": 2, "3 - -2": 5}
    text = "".join(f"scalar {e}\n" for e in exprs)
    rows, _ = scheduled(tmp, text)
    got = [d / 2 for d in durations(rows)]
    check(got == list(exprs.values()),
          "arithmetic: " + ", ".join(f"{e} = {g:g} (want {w})" for e, g, w in
                                     zip(exprs, got, exprs.values()) if g != w))
    # Tensors declared in a loop are new on each pass: pass 2's vexp
    # reads its own u, written by the load after it (the first later
    # writer), not pass 1's u.
    rows, _ = scheduled(tmp, "tensor x GM fp16 [4096]\nfor i in 0 .. 2 {\n"
                             "  tensor u UB fp16 [4096]\n  tensor v UB fp16 [4096]\n"
                             "  vexp u -> v\n  load x -> u\n}\n")
    check([r[0] for r in rows] == ["vexp", "load", "vexp", "load"], str(rows))
    check(rows[2][2] >= rows[3][3], f"pass 2's vexp did not wait for pass 2's load: {rows}")
    # Comments, blank lines, tabs, CRLF ends of line.
    rows, _ = scheduled(tmp, "# a comment\r\n\r\n\tlet a = 3 # more\r\n\r\nscalar a\r\n")
    check(durations(rows) == [6.0], f"CRLF: {durations(rows)}")
    # Locations go to the trace.
    path = model_file(tmp, "let a = 1\n\n  scalar a\n")
    r = driver(["--chip", "kpptest", "--schedule", path], tmp)
    check(r.returncode == 0 and r.stdout.split("\n")[0].endswith(f"\t{path}:3:3"),
          f"location: {r.stdout}")
    # The language's own names are not reserved where a name is declared.
    rows, _ = scheduled(tmp, "let in = 2\nlet table = 3\nscalar in * table\n")
    check(durations(rows) == [12.0], f"names: {durations(rows)}")
    print("scopes and arithmetic behave as documented")


# ------------------------------------------------------------------
# limits
# ------------------------------------------------------------------

def scenario_limits(_bless):
    tmp = scratch()
    ok = "let a = 1" + " " * (4096 - 9) + "\nscalar a\n"
    rows, _ = scheduled(tmp, ok)
    check(len(rows) == 1, "a line of 4096 bytes")
    msg = refused(tmp, "let a = 1\nlet b = 1" + " " * (4097 - 9) + "\n", ["--chip", "kpptest"])
    check(msg == "m.kpp:2:4097: the line is longer than 4096 bytes (it has 4097)", msg)
    # A tensor larger than its space is refused, not timed as if it fit.
    msg = refused(tmp, "chip ascend910b\ntensor b UB fp32 [549755813888]\n")
    check(msg == "m.kpp:2:1: tensor b (2199023255552 bytes) is larger than UB (196608 "
                 "bytes on chip ascend910b); accepted: at most the space's size", msg)
    name = "a" * 63
    rows, _ = scheduled(tmp, f"let {name} = 1\nscalar {name}\n")
    check(len(rows) == 1, "a name of 63 characters")
    deep = "(" * 64 + "1" + ")" * 64
    rows, _ = scheduled(tmp, f"scalar {deep}\nscalar {'-' * 63}1 + 2\n")
    check(durations(rows) == [2.0, 2.0], f"depth 64: {durations(rows)}")
    msg = refused(tmp, f"let a = {'-' * 65}1\n", ["--chip", "kpptest"])
    check(msg == "m.kpp:1:73: the expression is nested more than 64 levels deep", msg)
    msg = refused(tmp, f"let a = {'min(1, ' * 65}1{')' * 65}\n", ["--chip", "kpptest"])
    check("nested more than 64 levels deep" in msg, msg)
    loops = "".join(f"for i{k} in 0 .. 1 {{\n" for k in range(64)) + "scalar 1\n" + "}\n" * 64
    rows, _ = scheduled(tmp, loops)
    check(len(rows) == 1, "loops nested 64 deep")
    loops = "".join(f"for i{k} in 0 .. 1 {{\n" for k in range(65)) + "}\n" * 65
    msg = refused(tmp, loops, ["--chip", "kpptest"])
    check(msg == "m.kpp:65:1: loops are nested more than 64 deep", msg)
    # The statement budget (lowered through the in-memory entry).
    text = "for i in 0 .. 1000 {\n  let a = i\n}\n"
    rows, _ = scheduled(tmp, text, ["--max-steps", "3000"])
    msg = refused(tmp, text, ["--chip", "kpptest", "--max-steps", "1500"])
    check(msg == "m.kpp:1:1: the model runs more than 1500 statements (loop passes and "
                 "split pieces count); is a loop bound wrong?", msg)
    msg = refused(tmp, "tensor x GM fp16 [4096]\nsplit x -> xs 0 2000\n",
                  ["--chip", "kpptest", "--max-steps", "1000"])
    check(msg.startswith("m.kpp:2:17: split xs: 2000 pieces are too many"), msg)
    # Odd bytes are named, not misread.
    msg = refused(tmp, "let a = 1\nlet b\0 = 2\n", ["--chip", "kpptest"])
    check(msg == "m.kpp:2:6: unexpected character '\\x00'", msg)
    msg = refused(tmp, "let a = 1 # caf\u00e9\nlet \u00e9 = 2\n", ["--chip", "kpptest"])
    check(msg == "m.kpp:2:5: unexpected character '\\xc3'", msg)
    # No statement at all: a model with no instructions, on the chip given.
    rows, _ = scheduled(tmp, "")
    check(rows == [], "an empty model")
    rows, _ = scheduled(tmp, "# only a comment, no newline")
    check(rows == [], "a comment alone")
    msg = refused(tmp, "", [])
    check(msg.startswith("m.kpp:1:1: no chip:"), msg)
    # The file size limit, and a file that cannot be read.
    big = os.path.join(tmp, "big.kpp")
    with open(big, "w") as f:
        f.write("#" * (16 * 1024 * 1024) + "\n")
    r = driver(["--chip", "kpptest", big], tmp)
    check(r.returncode == 2 and r.stderr.strip() == f"'{big}' is larger than 16777216 bytes",
          f"a big file: {r.returncode} {r.stderr}")
    r = driver(["--chip", "kpptest", os.path.join(tmp, "missing.kpp")], tmp)
    check(r.returncode == 2 and "cannot open" in r.stderr and "missing.kpp" in r.stderr,
          r.stderr)
    print("limits hold")


# ------------------------------------------------------------------
# three ways
# ------------------------------------------------------------------

def scenario_transfers(_bless):
    """Instruction_statistic.csv keeps transfers apart by their spaces: on
    ascend910b UB->GM and UB->L1 both run on MTE3, and are two rows."""
    tmp = scratch()
    path = model_file(tmp, "chip ascend910b\n"
                           "tensor x GM fp16 [1024]\ntensor u UB fp16 [1024]\n"
                           "tensor g GM fp16 [1024]\ntensor l L1 fp16 [1024]\n"
                           "load x -> u\n"
                           "load u -> g\nload u -> l\nload u -> l\n")
    out = os.path.join(tmp, "out")
    r = run([KSCOPE, "predict", "-o", out, path], base_env(tmp))
    check(r.returncode == 0, f"predict failed ({r.returncode}): {r.stderr}")
    runs = [d for d in os.listdir(out) if d.startswith("predict_")]
    check(len(runs) == 1, f"run directories: {runs}")
    with open(os.path.join(out, runs[0], "Instruction_statistic.csv")) as f:
        rows = {(row["Instruction"], row["Pipe"]): row for row in csv.DictReader(f)}
    check(set(rows) == {("load GM->UB", "MTE2"), ("load UB->GM", "MTE3"),
                        ("load UB->L1", "MTE3")},
          f"rows: {sorted(rows)}")
    check(rows[("load UB->L1", "MTE3")]["Count"] == "2" and
          rows[("load UB->GM", "MTE3")]["Count"] == "1", f"counts: {rows}")
    # each load moves 2048 bytes and counts them read and written
    check(rows[("load UB->GM", "MTE3")]["Bytes (read + written)"] == "4096",
          f"bytes: {rows[('load UB->GM', 'MTE3')]}")


def scenario_outputs(_bless):
    """--no-trace and --no-metrics (msKPP's enable_trace and enable_metrics)
    leave their files out, on the command line and in the Python module."""
    tmp = scratch()
    path = model_file(tmp, "chip ascend910b\ntensor x GM fp16 [1024]\n"
                           "tensor u UB fp16 [1024]\nload x -> u\n")
    trace = ["trace.json", "visualize_data.bin"]
    metrics = ["Instruction_statistic.csv", "Pipe_statistic.csv", "instruction_time.svg"]
    for flags, want in (([], trace + metrics), (["--no-trace"], metrics),
                        (["--no-metrics"], trace), (["--no-trace", "--no-metrics"], None)):
        out = os.path.join(tmp, "out" + "".join(flags))
        r = run([KSCOPE, "predict", *flags, "-o", out, path], base_env(tmp))
        check(r.returncode == 0, f"{flags}: exit {r.returncode}: {r.stderr}")
        check("predicted time: " in r.stdout, f"{flags}: {r.stdout}")
        if want is None:
            check(not os.path.exists(out) and "outputs: none" in r.stdout,
                  f"{flags}: {r.stdout}; {os.path.exists(out)}")
            continue
        runs = os.listdir(out)
        check(len(runs) == 1 and sorted(os.listdir(os.path.join(out, runs[0]))) == sorted(want),
              f"{flags}: {runs} {os.listdir(os.path.join(out, runs[0])) if runs else ''}")
    out = os.path.join(tmp, "py")
    code = ("import kscope.predict as P\n"
            f"with P.Chip('ascend910b', output={out!r}, trace=False) as c:\n"
            "    u = P.Tensor('UB', 'FP16', [64])\n"
            "    u.load(P.Tensor('GM', 'FP16', [64]))\n")
    r = run([sys.executable, "-c", code], python_env(tmp))
    check(r.returncode == 0, f"Python: {r.stderr}")
    check(sorted(os.listdir(out)) == sorted(metrics), f"Python trace=False: {os.listdir(out)}")


MEASURED_MODEL = ("chip kpptest\ntensor x GM fp16 [4096]\ntensor xu UB fp16 [4096]\n"
                  "tensor yu UB fp16 [4096]\nload x -> xu\nvexp xu -> yu\nload yu -> x\n")


def pipe_measured(run_dir):
    with open(os.path.join(run_dir, "Pipe_statistic.csv")) as f:
        return {row["Pipe"]: row["Measured (us)"] for row in csv.DictReader(f)}


def scenario_measured(_bless):
    """--measured from msprof (measured/*.csv, small files written by hand
    in msprof's layouts): PipeUtilization.csv sums each block's sub-blocks
    (the cube core and the two vector cores) per pipe and averages the
    blocks; op_summary turns ratios into times with the core's time and
    averages the launches; other layouts are refused saying what is
    expected.  The Python module reads the same files."""
    tmp = scratch()
    path = model_file(tmp, MEASURED_MODEL)
    mdir = os.path.join(HERE, "measured")
    # By hand: block 0 VECTOR 1.0 + 0.6, block 1 2.0 + 1.4, mean 2.5;
    # SCALAR (0.1 + 0.4 + 0.3 + 0.3 + 0.2 + 0.1) / 2 = 0.7; MTE2 (3.4 +
    # 2.4) / 2 = 2.9; MTE3 (1.4 + 1.0) / 2 = 1.2; total: the longest core
    # of each block, (4 + 5) / 2 = 4.5.  op_summary: aiv_time 4 and 6, so
    # VECTOR (0.25 * 4 + 0.5 * 6) / 2 = 2, SCALAR (0.2 + 0.3) / 2 = 0.25,
    # MTE2 (2 + 1.5) / 2 = 1.75, MTE3 (0.8 + 0.6) / 2 = 0.7; total: Task
    # Duration, (5.2 + 4.8) / 2 = 5.
    want = {
        "PipeUtilization.csv": {"MTE1": "0.000000", "MTE2": "2.900000", "MTE3": "1.200000",
                                "VECTOR": "2.500000", "CUBE": "0.000000",
                                "SCALAR": "0.700000", "FIXP": "0.000000",
                                "total": "4.500000"},
        "op_summary.csv": {"MTE1": "", "MTE2": "1.750000", "MTE3": "0.700000",
                           "VECTOR": "2.000000", "CUBE": "", "SCALAR": "0.250000",
                           "FIXP": "", "total": "5.000000"},
    }
    for name, exp in want.items():
        out = os.path.join(tmp, "out-" + name)
        r = run([KSCOPE, "predict", "-o", out, "--measured", os.path.join(mdir, name), path],
                base_env(tmp))
        check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
        runs = os.listdir(out)
        got = pipe_measured(os.path.join(out, runs[0]))
        check(got == exp, f"{name}: measured {got}, expected {exp}")
        print(f"{name}: {got}")
    refused = {
        "op_summary_two_ops.csv": 'line 3 is operator "MulCustom", line 2 "AddCustom": a '
                                  "model is one kernel, so keep the rows of the one it "
                                  "describes",
        "no_pipes.csv": "an msprof file, but without per-pipe columns: aic_mac_ratio or "
                        "aic_cube_ratio, aiv_vec_ratio,",
        "unknown.csv": 'neither a kscope op Timing.csv, a CSV with the columns "Pipe,Time '
                       '(us)", nor an msprof op_summary or PipeUtilization CSV (a header '
                       "with aic_time(us), aiv_time(us), aicore_time(us) or Task "
                       "Duration(us), and per-pipe columns: aic_mac_ratio",
    }
    for name, msg in refused.items():
        out = os.path.join(tmp, "out-" + name)
        f = os.path.join(mdir, name)
        r = run([KSCOPE, "predict", "-o", out, "--measured", f, path], base_env(tmp))
        check(r.returncode == 2 and r.stderr.startswith(f"kscope: error: --measured {f}: {msg}"),
              f"{name}: exit {r.returncode}: {r.stderr}")
        check(not os.path.exists(out) or not os.listdir(out), f"{name}: wrote {out}")
    # The Python module reads them too (Chip(measured=...)).
    out = os.path.join(tmp, "py")
    code = ("import kscope.predict as P\n"
            f"with P.Chip('kpptest', output={out!r}, "
            f"measured={os.path.join(mdir, 'op_summary.csv')!r}):\n"
            "    xu = P.Tensor('UB')\n    xu.load(P.Tensor('GM', 'FP16', [4096]))\n")
    r = run([sys.executable, "-c", code], python_env(tmp))
    check(r.returncode == 0, f"Python: {r.stderr}")
    got = pipe_measured(out)
    check(got["VECTOR"] == "2.000000" and got["total"] == "5.000000", f"Python: {got}")
    print("msprof files are read as documented")


def python_env(tmp):
    env = base_env(tmp)
    env["PYTHONPATH"] = os.path.join(BUILD, "python")
    env.pop("KSCOPE_PREDICT_LIB", None)
    preload = os.environ.get("KS_LANG_PRELOAD", "")
    if preload:
        # A sanitizer build's library needs the runtime loaded first; the
        # interpreter's own leaks are not kscope's.
        env["LD_PRELOAD"] = preload
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def run_python(tmp, scenario, *args):
    r = run([sys.executable, os.path.abspath(__file__), DRIVER, CAPI, KSCOPE, BUILD,
             "--python", scenario] + list(args), python_env(tmp), cwd=tmp)
    check(r.returncode == 0, f"python {scenario} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def chips_to_test():
    chips = ["kpptest"]
    if os.path.exists(os.path.join(SRC, "share", "kscope", "chips", "ascend910b.json")):
        chips.append("ascend910b")
    return chips


def scenario_three_ways(_bless):
    tmp = scratch()
    compared = 0
    for chip in chips_to_test():
        for name in MODELS:
            r = driver(["--chip", chip, "--schedule", os.path.join(HERE, "models",
                                                                    name + ".kpp")], tmp)
            check(r.returncode == 0, f"{name}.kpp on {chip}: {r.stderr}")
            text = schedule_of(r.stdout)
            r = run([CAPI, chip, name], base_env(tmp))
            check(r.returncode == 0, f"kpp_capi {name} on {chip}: {r.stderr}")
            capi = schedule_of(r.stdout)
            py = schedule_of(run_python(tmp, "model", chip, name))
            check(len(text[0]) > 0 and text[1] > 0, f"{name} on {chip}: an empty schedule")
            for what, other in (("the C API", capi), ("the Python module", py)):
                if other != text:
                    diff = [f"  #{k}: kpp {a} vs {b}" for k, (a, b) in
                            enumerate(zip(text[0], other[0])) if a != b][:5]
                    raise Failure(f"{name} on {chip}: {what} differs from the .kpp file "
                                  f"({len(text[0])} vs {len(other[0])} instructions, "
                                  f"totals {text[1]!r} vs {other[1]!r}):\n" + "\n".join(diff))
            compared += len(text[0])
            print(f"{chip} {name}: {len(text[0])} instructions, {text[1]:.6g} cycles, "
                  f"identical three ways")
    # One schedule computed by hand (kpptest): 8192 bytes GM->UB at
    # 16 + (8192-1024)/(16384-1024)*48 = 38.4 bytes/cycle; vexp of 4096
    # fp16 at 32/cycle; UB->GM at 16 + 7168/15360*16 bytes/cycle.
    r = driver(["--chip", "kpptest", "--schedule",
                os.path.join(HERE, "models", "two_pipes.kpp")], tmp)
    rows, total = schedule_of(r.stdout)
    t0 = 8192 / 38.4
    t1 = t0 + 4096 / 32
    t2 = t1 + 8192 / (16 + 7168 / 15360 * 16)
    want = [("load", "MTE2", 0, t0), ("vexp", "VECTOR", t0, t1), ("load", "MTE3", t1, t2)]
    for got, exp in zip(rows, want):
        check(got[:2] == exp[:2] and abs(got[2] - exp[2]) < 1e-9 and abs(got[3] - exp[3]) < 1e-9,
              f"two_pipes by hand: {got} != {exp}")
    check(abs(total - t2) < 1e-9, f"two_pipes total {total} != {t2}")
    # The cache hit ratio by hand (models/cache.kpp on kpptest): a tile's
    # load, 4096 bytes at 16 + 3072/15360*48 = 25.6 bytes/cycle, is 160
    # cycles by the table, 160 * 7/9 with 60% hits; vexp of 2048 fp16 at
    # 4 + (2048-128)/(4096-128)*28 elements/cycle; the store keeps its
    # table's time, 4096 bytes at 16 + 3072/15360*16 = 19.2 bytes/cycle.
    r = driver(["--chip", "kpptest", "--schedule",
                os.path.join(HERE, "models", "cache.kpp")], tmp)
    rows, total = schedule_of(r.stdout)
    ld = 160 * 7 / 9
    vx = 2048 / (4 + 1920 / 3968 * 28)
    st = 4096 / 19.2
    want = [("load", "MTE2", 0, ld), ("vexp", "VECTOR", ld, ld + vx),
            ("load", "MTE3", ld + vx, ld + vx + st), ("load", "MTE2", ld, 2 * ld)]
    for got, exp in zip(rows, want):
        check(got[:2] == exp[:2] and abs(got[2] - exp[2]) < 1e-9 and abs(got[3] - exp[3]) < 1e-9,
              f"cache by hand: {got} != {exp}")
    # Cores by hand (models/cores.kpp on kpptest): a tile's load, 8192
    # bytes GM->UB at 16 + 7168/15360*48 = 38.4 bytes/cycle, is L = 213.33
    # cycles; vadd of 4096 fp16 at 128/cycle V = 32; the store, 8192 bytes
    # at 16 + 7168/15360*16 bytes/cycle, S = 349.09.  One core doing all 4
    # tiles: its MTE2 loads 8 tiles back to back, then the last vadd and
    # store: 8L + V + S = 2087.76.  Two vector cores, 2 tiles each, on
    # their own MTE2/VECTOR/MTE3: 4L + V + S = 1234.42 for each, which is
    # the total (0.59 of one core's: only the loads halve).
    r = driver(["--chip", "kpptest", "--schedule",
                os.path.join(HERE, "models", "cores.kpp")], tmp)
    rows, total = schedule_of(r.stdout)
    L, V, S = 8192 / 38.4, 4096 / 128, 8192 / (16 + 7168 / 15360 * 16)
    check(abs(total - (4 * L + V + S)) < 1e-9, f"cores total {total} != {4 * L + V + S}")
    for k, core in ((0, "AIV0"), (8, "AIV1")):
        want = [("load", core + ".MTE2", 0, L), ("load", core + ".MTE2", L, 2 * L),
                ("vadd", core + ".VECTOR", 2 * L, 2 * L + V),
                ("load", core + ".MTE3", 2 * L + V, 2 * L + V + S)]
        for got, exp in zip(rows[k:k + 4], want):
            check(got[:2] == exp[:2] and abs(got[2] - exp[2]) < 1e-9 and
                  abs(got[3] - exp[3]) < 1e-9, f"cores by hand: {got} != {exp}")
    r = driver(["--chip", "kpptest", "-D", "N=8192", "--schedule",
                os.path.join(HERE, "models", "cores.kpp")], tmp)
    check(abs(schedule_of(r.stdout)[1] - (2 * L + V + S)) < 1e-9, "cores with N=8192")
    print(f"{compared} instructions compared")


# The models of models/*.kpp with the Python module, as its users write them.

def py_two_pipes(P):
    x = P.Tensor("GM", "FP16", [4096], format="ND")
    y = P.Tensor("GM", "FP16", [4096], format="ND")
    xu, yu = P.Tensor("UB"), P.Tensor("UB")
    xu.load(x)
    out = P.vexp(xu, yu)()
    y.load(out[0])


def py_double_buffer(P):
    n, tile = 32768, 2048
    t = n // tile
    x = P.Tensor("GM", "FP16", [n])
    z = P.Tensor("GM", "FP16", [n])
    xs, zs = x.split(0, t), z.split(0, t)
    xb = P.Tensor("UB", "FP16", [2, tile]).split(0, 2)
    zb = P.Tensor("UB", "FP16", [2, tile]).split(0, 2)
    for i in range(t):
        b = i % 2
        xb[b].load(xs[i])
        P.vrelu(xb[b], zb[b])
        zs[i].load(zb[b])


def py_mmad(P):
    m, k, n, kt = 64, 256, 64, 64
    ks = -(-k // kt)
    a = P.Tensor("GM", "FP16", [m, k])
    b = P.Tensor("GM", "FP16", [k, n])
    c = P.Tensor("GM", "FP32", [m, n])
    a1 = P.Tensor("L1", format="NZ")
    b1 = P.Tensor("L1", format="NZ")
    a1.load(a)
    b1.load(b)
    as_, bs = a1.split(1, ks), b1.split(0, ks)
    acc = P.Tensor("L0C", "FP32", [m, n])
    for i in range(ks):
        a0 = P.Tensor("L0A", format="NZ")
        b0 = P.Tensor("L0B", format="NZ")
        a0.load(as_[i])
        b0.load(bs[i])
        P.mmad(a0, b0, acc)
    c.load(acc)


def py_registered(P):
    vsquare = P.register("vsquare", "VECTOR", formula="size / 32 + 8", ops=1)
    vgelu = P.register("vgelu", "VECTOR", table=[(256, 4), (4096, 32.5)], ops=8)
    n = 8192
    x = P.Tensor("GM", "FP16", [n])
    y = P.Tensor("GM", "FP16", [n])
    xu, yu, zu = P.Tensor("UB"), P.Tensor("UB", "FP16", [n]), P.Tensor("UB", "FP16", [n])
    xu.load(x)
    P.scalar(16)
    vsquare(xu, yu)
    vgelu(yu, zu)
    P.vadd(zu, yu, yu)
    P.scalar(40, [yu], [zu])
    y.load(yu)


def py_tiled_add(P):
    n, tile = 65536, 4096
    t = n // tile
    x, y, z = (P.Tensor("GM", "FP16", [n]) for _ in range(3))
    xs, ys, zs = x.split(0, t), y.split(0, t), z.split(0, t)
    for i in range(t):
        xu, yu, zu = P.Tensor("UB"), P.Tensor("UB"), P.Tensor("UB")
        xu.load(xs[i])
        yu.load(ys[i])
        P.vadd(xu, yu, zu)
        zs[i].load(zu)


def py_flags(P):
    x, y, z = (P.Tensor("GM", "FP16", [4096]) for _ in range(3))
    xu, yu = P.Tensor("UB", "FP16", [4096]), P.Tensor("UB", "FP16", [4096])
    xu.load(x)
    P.set_flag("MTE2", "VECTOR", 0)
    P.wait_flag("MTE2", "VECTOR", 0)
    P.vexp(xu, yu)
    P.wait_flag("MTE3", "VECTOR", 1)
    P.vabs(yu, xu)
    y.load(yu)
    P.set_flag("MTE3", "VECTOR", 1)
    z.load(xu)


def py_cache(P):
    P.set_cache_hit_ratio({"cache_hit_ratio": 0.6})     # msKPP's config form
    n, tile = 8192, 2048
    t = n // tile
    x, y = P.Tensor("GM", "FP16", [n]), P.Tensor("GM", "FP16", [n])
    xs, ys = x.split(0, t), y.split(0, t)
    for i in range(t):
        xu, yu = P.Tensor("UB"), P.Tensor("UB")
        xu.load(xs[i])
        P.vexp(xu, yu)
        ys[i].load(yu)


def py_cores(P):
    n, tile = 16384, 4096
    t = n // tile
    h = t // 2
    x, y, z = (P.Tensor("GM", "FP16", [n]) for _ in range(3))
    xs, ys, zs = x.split(0, t), y.split(0, t), z.split(0, t)
    for c in range(2):
        with P.Core(f"AIV{c}"):
            for i in range(h):
                xu, yu, zu = P.Tensor("UB"), P.Tensor("UB"), P.Tensor("UB")
                xu.load(xs[c * h + i])
                yu.load(ys[c * h + i])
                P.vadd(xu, yu, zu)
                zs[c * h + i].load(zu)


def python_model(chip, name):
    import kscope.predict as P
    with P.Chip(chip) as c:
        globals()["py_" + name](P)
    for k, s in enumerate(c.slices()):
        print(f"{k}\t{s.name}\t{s.pipe}\t{s.start!r}\t{s.end!r}\t{s.location}")
    print(f"cycles\t{c.cycles!r}")


# ------------------------------------------------------------------
# The Python module
# ------------------------------------------------------------------

def scenario_python_api(_bless):
    tmp = scratch()
    print(run_python(tmp, "api", tmp), end="")


def scenario_python_errors(_bless):
    tmp = scratch()
    print(run_python(tmp, "errors"), end="")
    # The library is found through KSCOPE_PREDICT_LIB, or not at all.
    env = python_env(tmp)
    env["KSCOPE_PREDICT_LIB"] = os.path.join(tmp, "nothing.so")
    code = ("import kscope.predict as P\ntry:\n    P.Chip('kpptest')\n"
            "except P.PredictError as e:\n    print(e)\n")
    r = run([sys.executable, "-c", code], env)
    check(r.returncode == 0 and r.stdout.strip() ==
          f"KSCOPE_PREDICT_LIB is '{env['KSCOPE_PREDICT_LIB']}', which is not a file",
          f"a missing KSCOPE_PREDICT_LIB: {r.stdout}{r.stderr}")
    # A copy of the module with no library next to it says where it looked.
    moddir = os.path.join(tmp, "a", "b", "kscope")
    shutil.copytree(os.path.join(BUILD, "python", "kscope"), moddir)
    env = python_env(tmp)
    env["PYTHONPATH"] = os.path.dirname(moddir)
    r = run([sys.executable, "-c", code], env)
    want = (f"libkscope-predict.so not found: looked for {tmp}/a/lib/libkscope-predict.so "
            f"(build tree) and {tmp}/libkscope-predict.so (installed); set "
            f"KSCOPE_PREDICT_LIB to its path")
    check(r.returncode == 0 and r.stdout.strip() == want,
          f"no library:\n{r.stdout}{r.stderr}\nwant: {want}")
    print("the library is looked for where documented")


def expect_error(P, fn, pattern, located=True):
    """fn() must raise P.PredictError whose message matches pattern, after
    the location of the call in fn (this file, fn's line) when located."""
    if located:
        pattern = (re.escape(f"{os.path.abspath(__file__)}:{fn.__code__.co_firstlineno}:")
                   + r"\d+: " + pattern)
    try:
        fn()
    except P.PredictError as e:
        msg = str(e)
        check(re.fullmatch(pattern, msg), f"message {msg!r} !~ {pattern!r}")
        return msg
    raise Failure(f"no PredictError (wanted {pattern!r})")


def python_errors():
    import kscope.predict as P
    with P.Chip("kpptest") as chip:
        expect_error(P, lambda: P.Tensor("HBM", "FP16", [64]),
                     'tensor t0: the memory space "HBM" is not one of chip '
                     "kpptest's: GM, L1, L0A, L0B, L0C, UB")
        x = P.Tensor("UB", "FP16", [64])
        y = P.Tensor("UB", "FP16", [64])
        z = P.Tensor("UB", "FP16", [32])
        expect_error(P, lambda: P.vadd(x, y, z),
                     r"shape mismatch: vadd: t\d+ is \[64\] but t\d+ is \[32\]")
        expect_error(P, lambda: P.instr("vfrobnicate", [x], [y]),
                     'unknown instruction "vfrobnicate"; chip kpptest has: .*')
        expect_error(P, lambda: P.register("vq", "VEC", formula="size"),
                     'register vq: the pipe "VEC" is not one of chip kpptest\'s: .*')
        expect_error(P, lambda: x.split(1, 2),
                     "split t\\d+: axis 1 is not one of its 1 axes \\(0 to 0\\)")
        expect_error(P, lambda: x.split(0, -2),
                     "split t\\d+: -2 parts; axis 0 has 64 elements, so from 1 to "
                     "64 parts are accepted")
        expect_error(P, lambda: P.Tensor("UB", "FP16", [1] * 9),
                     "tensor t\\d+: a shape has 1 to 8 dimensions, not 9")
        expect_error(P, lambda: x.split(0, 100),
                     "split t\\d+: 100 parts; axis 0 has 64 elements, so from 1 to "
                     "64 parts are accepted")
        expect_error(P, lambda: P.Tensor("UB").load(P.Tensor("UB")),
                     r"load: the tensor Tensor\('UB', None, None, format=None\) has no shape "
                     r"or data type yet; give them, or load into it first")
        expect_error(P, lambda: P.scalar(0),
                     "scalar: 0 operations; from 1 to 2\\^50 are accepted")
        expect_error(P, lambda: P.Tensor("UB", "FP16", [1 << 64]),
                     "a dimension is 18446744073709551616, which does not fit in 64 bits")
        expect_error(P, lambda: chip.set_cache_hit_ratio(1.5),
                     r"cache_hit_ratio: 1\.5 is not from 0 to 1 \(the fraction of reads "
                     r"from a cached space that hit the cache\)")
        expect_error(P, lambda: P.set_cache_hit_ratio({"hit": 0.5}),
                     r"set_cache_hit_ratio: the config has the keys \['hit'\]; accepted: "
                     r"\{'cache_hit_ratio': R\}")
        with P.Chip("kpptest") as other:
            w = P.Tensor("UB", "FP16", [64])
            expect_error(P, lambda: P.vexp(x, w), r"Tensor\(.*\) belongs to another chip")
        other.close()
    expect_error(P, lambda: P.Chip("ascend9000"),
                 'unknown chip "ascend9000": no ascend9000.json in .*')
    expect_error(P, lambda: P.Tensor("GM", "FP16", [4]),
                 r"Tensor\(\) needs a chip: use it inside `with Chip\(...\):`")
    # An exception in the block leaves the model unscheduled.
    try:
        with P.Chip("kpptest") as c:
            P.Tensor("GM", "FP16", [4])
            raise KeyError("stop")
    except KeyError:
        pass
    check(c.cycles is None, "a failed block was scheduled")
    print("python errors carry the library's messages and the caller's location")


def python_deadlock():
    import kscope.predict as P
    try:
        with P.Chip("kpptest"):
            u = P.Tensor("UB", "FP16", [64])
            v = P.Tensor("UB", "FP16", [64])
            P.vexp(u, v)
    except P.PredictError as e:
        check("vexp" in str(e), f"deadlock message: {e}")
        print("a deadlock raises PredictError when the block ends")
        return
    raise Failure("a model that deadlocks ran")


def python_api(tmp):
    import kscope.predict as P
    check(P.library_path() == os.path.join(BUILD, "lib", "libkscope-predict.so"),
          f"library_path {P.library_path()}")
    out = os.path.join(tmp, "run")
    line = sys._getframe().f_lineno
    with P.Chip("kpptest", output=out) as chip:
        x = P.Tensor("GM", "FP16", [8, 256], name="x")
        xu = P.Tensor("UB")
        xu.load(x)                                
        check(xu.shape == [8, 256] and xu.dtype == "FP16", f"xu {xu!r}")
        r = P.Tensor("UB")
        P.vreduce_sum(xu, r)
        check(r.shape == [8, 1], f"vreduce_sum's output {r.shape}")
        f = P.Tensor("UB")
        conv = P.vconv(xu, f, "FP32")
        check(f.dtype == "FP32" and f.shape == [8, 256], f"vconv's output {f!r}")
        check(conv() == [f] and conv.inputs == [xu], "an instruction returns its outputs")
        parts = xu.split(1, 3)
        check([p.shape for p in parts] == [[8, 86], [8, 86], [8, 84]],
              f"split shapes {[p.shape for p in parts]}")
        e = P.Tensor("UB")
        P.vexp(parts[2], e)
        check(e.shape == [8, 84], f"vexp on a piece: {e.shape}")
        a = P.Tensor("L0A", "FP16", [16, 32], format="NZ")
        b = P.Tensor("L0B", "FP16", [32, 48], format="NZ")
        a1 = P.Tensor("L1", format="NZ")
        b1 = P.Tensor("L1", format="NZ")
        a1.load(P.Tensor("GM", "FP16", [16, 32]))
        b1.load(P.Tensor("GM", "FP16", [32, 48]))
        a.load(a1)
        b.load(b1)
        c = P.Tensor("L0C")
        mm = P.mmad(a, b, c)
        check(c.shape == [16, 48] and c.dtype == "fp32", f"mmad's output {c!r}")
        vq = P.register("vquad", "VECTOR", formula="size / 4", ops=2)
        q = P.Tensor("UB")
        ins = vq(xu, q)
        check(q.shape == [8, 256] and isinstance(ins.id, int), f"registered {q!r}")
        k = P.instr("vabs", [xu], [q])
        check(k == ins.id + 1, f"instr ids {ins.id} {k}")
        s = P.scalar(5, outputs=[q])
        check(s == k + 1, f"scalar id {s}")
        check(mm.id >= 0, "mmad id")
    check(chip.cycles > 0, f"cycles {chip.cycles}")
    check(abs(chip.time_us - chip.cycles / chip.clock_hz * 1e6) < 1e-12, "time_us")
    check(chip.chip_name == "kpptest", chip.chip_name)
    sl = chip.slices()
    check(sl[0].name == "load" and sl[0].location.startswith(
        f"{os.path.abspath(__file__)}:{line + 4}:"), f"first slice {sl[0]!r} {sl[0].location}")
    col = int(sl[0].location.rsplit(":", 1)[1])
    check(col == 9, f"the load's column is {col}, not 9 (where xu.load starts)")
    check(sl[-1].name == "scalar", f"last slice {sl[-1]!r}")
    for name in ("trace.json", "Pipe_statistic.csv", "Instruction_statistic.csv",
                 "instruction_time.svg", "visualize_data.bin"):
        check(os.path.isfile(os.path.join(out, name)), f"{name} was not written")
    with open(os.path.join(out, "trace.json")) as fh:
        check("vquad" in fh.read(), "the registered instruction is not in the trace")
    # Without output= nothing is written; run() and write() by hand.
    with P.Chip("kpptest") as c2:
        P.scalar(3)
    check(c2.cycles == 6.0, f"scalar 3 on kpptest: {c2.cycles}")
    out2 = os.path.join(tmp, "run2")
    c2.write(out2)
    check(os.path.isfile(os.path.join(out2, "trace.json")), "write()")
    c2.close()
    print("the python module's API works as documented")


def python_main(args):
    what = args[0]
    if what == "model":
        python_model(args[1], args[2])
    elif what == "api":
        python_api(args[1])
    elif what == "errors":
        python_errors_all()
    return 0


def python_errors_all():
    python_errors()
    python_deadlock()


# ------------------------------------------------------------------

def main():
    global DRIVER, CAPI, KSCOPE, BUILD
    args = sys.argv[1:]
    DRIVER, CAPI, KSCOPE, BUILD = (os.path.abspath(a) for a in args[:4])
    args = args[1:]
    if args[3] == "--python":
        try:
            return python_main(args[4:])
        except Failure as e:
            print(f"FAIL: {e}", file=sys.stderr)
            return 1
    scenario, bless = args[3], "--bless" in args[4:]
    try:
        globals()["scenario_" + scenario](bless)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        for d in _scratch:
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
