#!/usr/bin/env python3
"""End-to-end tests of kscope op --simulate.

Each scenario runs `kscope op --simulate` on a real program (the
multi-threaded workloads under bench/workloads, or an OpenCL example) and
asserts on what came out: the exit status, the program's output (its
native output, unchanged), the summary on stderr, and the deliverables:
thread<T>/instr_exe.csv and code_exe.csv (their columns and that their
sums agree with each other and with the summary), bandwidth.csv,
trace.json, and visualize_data.bin as `kscope inspect` checks it.  The
agreement of the counts with callgrind and cachegrind is checked on the
engine itself (tests/memtools/hotspot).  Nothing here asserts on a time.

    simulate_e2e.py KSCOPE BUILD_DIR SOURCE_DIR SCENARIO
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
from kstest import Failure, check, TempDirs  # noqa: E402

KSCOPE, BUILD, SRC, SCENARIO = sys.argv[1:5]
BENCH = os.path.join(BUILD, "bench")
SKIP = 77
TIMEOUT = 600
# Two levels, so that runs do not depend on this machine's caches.
CACHE = "L1=32k:8:64,LL=2M:16:64"

INSTR_COLUMNS = ["Address", "Source", "Pipe", "Instructions Executed", "Cycles",
                 "Process Bytes", "Load Bytes", "Store Bytes", "Flops",
                 "L2Cache Hit Rate", "L1 Accesses", "L1 Misses", "L1 Hit Rate",
                 "LL Accesses", "LL Misses", "LL Hit Rate", "ICache Misses",
                 "Stall Cycles", "GPR Count", "Function", "File", "Line"]
CODE_COLUMNS = ["File", "Line", "Address Range", "Instructions Executed", "Cycles",
                "Process Bytes", "Load Bytes", "Store Bytes", "Flops",
                "L2Cache Hit Rate", "L1 Accesses", "L1 Misses", "L1 Hit Rate",
                "LL Accesses", "LL Misses", "LL Hit Rate", "ICache Misses",
                "Stall Cycles", "GPR Count"]


tmpdir = TempDirs("ks-sim-e2e-")


def program(name):
    path = os.path.join(BENCH, name)
    check(os.access(path, os.X_OK), f"{path} is missing: build first")
    return path


def native(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    check(p.returncode == 0, f"{argv} fails natively ({p.returncode})")
    return p.stdout


def env():
    e = {k: v for k, v in os.environ.items() if not k.startswith("KSCOPE_")}
    # No calibration: the roofline's ceilings come from the cost model.
    e["XDG_CACHE_HOME"] = tmpdir()
    pocl = os.path.join(os.environ.get("XDG_CACHE_HOME")
                        or os.path.join(os.path.expanduser("~"), ".cache"), "pocl", "kcache")
    if "POCL_CACHE_DIR" not in e and os.path.isdir(pocl):
        e["POCL_CACHE_DIR"] = pocl
    return e


class Run:
    def __init__(self, cmd, code, stdout, stderr, out):
        self.cmd, self.code, self.stdout, self.stderr = cmd, code, stdout, stderr
        runs = glob.glob(os.path.join(out, "simulate_*"))
        check(len(runs) <= 1, f"more than one run directory in {out}")
        self.rundir = runs[0] if runs else None

    def why(self):
        return (f"\n  command: {' '.join(self.cmd)}\n  exit: {self.code}\n"
                f"  stderr (end):\n{self.stderr[-3000:]}")

    def summary(self):
        """(instructions, cycles, threads, flops) from the summary line."""
        m = re.search(r"kscope op --simulate: (\d+) instructions, (\d+) cycles on "
                      r"(\d+) threads? \(.*\), (\d+) FLOPs", self.stderr)
        check(m, "no summary line on stderr" + self.why())
        return tuple(int(x) for x in m.groups())


def run_sim(opts, argv, expect_exit=0):
    out = tmpdir()
    cmd = [KSCOPE, "op", "--simulate", "-o", out, *opts, "--", *argv]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(),
                       timeout=TIMEOUT)
    r = Run(cmd, p.returncode, p.stdout, p.stderr.decode(errors="replace"), out)
    check(p.returncode == expect_exit,
          f"exit {p.returncode}, expected {expect_exit}" + r.why())
    return r


def read_csv(path, columns):
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, csv.Error) as ex:
        raise Failure(f"{path}: {ex}")
    check(rows and rows[0] == columns, f"{path}: header {rows[0] if rows else None}, "
          f"expected {columns}")
    for i, row in enumerate(rows[1:], 2):
        check(len(row) == len(columns), f"{path}:{i}: {len(row)} fields")
    return [dict(zip(columns, row)) for row in rows[1:]]


def inspect_blocks(path):
    p = subprocess.run([KSCOPE, "inspect", "--strict", "--format", "json", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    check(p.returncode == 0, f"kscope inspect {path}: exit {p.returncode}: "
          f"{p.stderr.decode(errors='replace')}")
    doc = json.loads(p.stdout)
    check(doc.get("error") is None, f"kscope inspect {path}: {doc.get('error')}")
    return [b["type"] for b in doc["blocks"]]


def threads_of(r):
    return sorted(int(os.path.basename(d)[6:])
                  for d in glob.glob(os.path.join(r.rundir, "thread*")))


def check_deliverables(r, expect_threads=None):
    """The files of a run, their columns, and that they agree; returns the
    instr_exe.csv rows per thread."""
    check(r.rundir, "no run directory" + r.why())
    tids = threads_of(r)
    check(tids, "no thread<T> directory" + r.why())
    if expect_threads is not None:
        check(tids == expect_threads, f"threads {tids}, expected {expect_threads}")
    instrs, cycles, nthreads, flops = r.summary()
    check(nthreads == len(tids), f"summary says {nthreads} threads, {len(tids)} directories")
    per = {}
    tot_i = tot_c = tot_f = 0
    for t in tids:
        d = os.path.join(r.rundir, f"thread{t}")
        rows = read_csv(os.path.join(d, "instr_exe.csv"), INSTR_COLUMNS)
        lines = read_csv(os.path.join(d, "code_exe.csv"), CODE_COLUMNS)
        check(rows, f"thread{t}/instr_exe.csv is empty")
        per[t] = rows
        s_i = sum(int(x["Instructions Executed"]) for x in rows)
        s_c = sum(int(x["Cycles"]) for x in rows)
        s_b = sum(int(x["Process Bytes"]) for x in rows)
        for x in rows:
            check(int(x["Process Bytes"]) == int(x["Load Bytes"]) + int(x["Store Bytes"]),
                  f"thread{t} {x['Address']}: Process Bytes is not loads + stores")
            check(x["Pipe"] in ("SCALAR", "VECTOR", "LOAD", "STORE", "BRANCH"),
                  f"thread{t} {x['Address']}: pipe {x['Pipe']}")
            check(int(x["Cycles"]) >= int(x["Instructions Executed"]),
                  f"thread{t} {x['Address']}: fewer cycles than executions")
            check(0 <= int(x["GPR Count"]) <= 16,
                  f"thread{t} {x['Address']}: {x['GPR Count']} general-purpose registers")
            check(0 <= int(x["Stall Cycles"]) < int(x["Cycles"]) or
                  int(x["Stall Cycles"]) == int(x["Cycles"]) == 0,
                  f"thread{t} {x['Address']}: {x['Stall Cycles']} stall cycles of "
                  f"{x['Cycles']}")
            check(int(x["L1 Misses"]) <= int(x["L1 Accesses"]),
                  f"thread{t} {x['Address']}: more misses than accesses")
        check(s_i == sum(int(x["Instructions Executed"]) for x in lines),
              f"thread{t}: code_exe.csv and instr_exe.csv disagree on instructions")
        check(s_c == sum(int(x["Cycles"]) for x in lines),
              f"thread{t}: code_exe.csv and instr_exe.csv disagree on cycles")
        check(s_b == sum(int(x["Process Bytes"]) for x in lines),
              f"thread{t}: code_exe.csv and instr_exe.csv disagree on bytes")
        tot_i += s_i
        tot_c += s_c
        tot_f += sum(int(x["Flops"]) for x in rows)
    check((tot_i, tot_c, tot_f) == (instrs, cycles, flops),
          f"the CSV files sum to {tot_i} instructions, {tot_c} cycles, {tot_f} "
          f"FLOPs; the summary says {instrs}, {cycles}, {flops}")
    # The pipeline chart: one process per thread, slices on pipe tracks.
    with open(os.path.join(r.rundir, "trace.json")) as f:
        trace = json.load(f)
    slices = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    check(slices, "trace.json has no slice")
    names = {e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    check(names <= {"SCALAR", "VECTOR", "LOAD", "STORE", "BRANCH"} and names,
          f"trace.json tracks {names}")
    for e in slices[:1000]:
        check(e["dur"] >= 0 and "pc_addr" in e["args"], f"trace.json slice {e}")
    # Bandwidth: L1 -> registers carries exactly the loaded and stored bytes.
    bw = read_csv(os.path.join(r.rundir, "bandwidth.csv"),
                  ["Thread", "Start (us)", "End (us)", "Path", "Read Bytes",
                   "Write Bytes", "Read GB/s", "Write GB/s"])
    for t in tids:
        reg = [x for x in bw if x["Thread"] == str(t) and x["Path"].endswith("-> registers")]
        loads = sum(int(x["Load Bytes"]) for x in per[t])
        stores = sum(int(x["Store Bytes"]) for x in per[t])
        check(sum(int(x["Read Bytes"]) for x in reg) == loads and
              sum(int(x["Write Bytes"]) for x in reg) == stores,
              f"thread{t}: bandwidth.csv's register path does not carry the "
              f"{loads} loaded and {stores} stored bytes")
    check(os.path.getsize(os.path.join(r.rundir, "bandwidth.svg")) > 0, "no bandwidth.svg")
    return per


def whole():
    """The whole program, two worker threads: every deliverable and block."""
    argv = [program("mt_matmul"), "48", "2"]
    want = native(argv)
    r = run_sim(["--cache", CACHE, "--clock", "2"], argv)
    check(r.stdout == want, "the program's output changed under kscope" + r.why())
    check_deliverables(r, [1, 2, 3])
    blocks = inspect_blocks(os.path.join(r.rundir, "visualize_data.bin"))
    for b, name in ((0x02, "trace"), (0x01, "source"), (0x03, "api-files"),
                    (0x04, "api-instructions"), (0x0D, "roofline")):
        check(b in blocks, f"visualize_data.bin has no {name} block: {blocks}")
    check(blocks[0] == 0x02, f"the pipeline chart is not the first block: {blocks}")
    # Every block header ends in the design's u16 reserve 0x5A5A, the 0x04
    # block's too.
    with open(os.path.join(r.rundir, "visualize_data.bin"), "rb") as f:
        data = f.read()
    off = 0
    while off < len(data):
        size, kind, _pad, tail = struct.unpack_from("<QBBH", data, off)
        check(tail == 0x5A5A, f"block 0x{kind:02x} at {off}: reserve 0x{tail:04x}")
        off += 12 + (4096 if kind == 0x01 else 0) + size
    check(off == len(data), f"visualize_data.bin: blocks end at {off} of {len(data)}")
    p = subprocess.run([KSCOPE, "inspect", os.path.join(r.rundir, "visualize_data.bin")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    check(p.returncode == 0 and b"mt_matmul.c" in p.stdout,
          "kscope inspect does not list the source block of mt_matmul.c")
    # The pipeline chart starts at main, not in the dynamic loader: its
    # first slice is main's, and the summary says so with its share.
    with open(os.path.join(r.rundir, "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    main_pid = [e["pid"] for e in events if e.get("ph") == "M" and
                e.get("name") == "process_name" and e["args"]["name"] == "thread1"]
    slices = [e for e in events if e.get("ph") == "X" and e["pid"] in main_pid]
    check(slices, f"trace.json has no slice of thread1 (processes {main_pid})")
    first = min(slices, key=lambda e: e["ts"])
    check(first["args"].get("function") == "main",
          f"the pipeline chart starts in {first['args'].get('function')!r}, not main")
    check(re.search(r"pipeline chart: \d+ block executions from main, [0-9.e+-]+% of the "
                    r"simulated cycles", r.stderr),
          "the summary does not say where the pipeline chart starts" + r.why())


def region():
    """--kernel-name: only inside the worker threads' function and its callees."""
    argv = [program("mt_matmul"), "48", "2"]
    r = run_sim(["--cache", CACHE, "--kernel-name", "worker"], argv)
    per = check_deliverables(r, [2, 3])
    fns = {x["Function"] for rows in per.values() for x in rows}
    check("worker" in fns and "main" not in fns, f"functions counted: {sorted(fns)[:20]}")
    check("block executions in the region" in r.stderr,
          "the summary does not say the pipeline chart is the region's" + r.why())
    # The multiply alone does 2 * 48^3 / 2 FLOPs per thread.
    for t, rows in per.items():
        f = sum(int(x["Flops"]) for x in rows)
        check(f >= 48 ** 3, f"thread{t}: {f} FLOPs, fewer than its multiply's {48 ** 3}")


def threads():
    """--threads: the others are not simulated."""
    argv = [program("mt_matmul"), "48", "2"]
    r = run_sim(["--cache", CACHE, "--threads", "3"], argv)
    check_deliverables(r, [3])
    # --export: the same raw file rebuilt into a new run directory gives
    # the same per-line figures.
    out = tmpdir()
    cmd = [KSCOPE, "op", "--export", r.rundir, "-o", out, "--clock", "2"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(),
                       timeout=TIMEOUT)
    check(p.returncode == 0, f"{cmd}: exit {p.returncode}: "
          f"{p.stderr.decode(errors='replace')[-2000:]}")
    (new,) = glob.glob(os.path.join(out, "simulate_*"))
    for name in ("code_exe.csv", "instr_exe.csv"):
        with open(os.path.join(r.rundir, "thread3", name), "rb") as f1, \
             open(os.path.join(new, "thread3", name), "rb") as f2:
            check(f1.read() == f2.read(), f"--export: thread3/{name} differs")
    check(os.path.exists(os.path.join(new, "visualize_data.bin")), "--export: no container")


def nomatch():
    """A --kernel-name that nothing calls: exit 1, saying so."""
    argv = [program("mt_matmul"), "32", "2"]
    r = run_sim(["--cache", CACHE, "--kernel-name", "nomatch_xyz"], argv, expect_exit=1)
    check("never called a function matching --kernel-name 'nomatch_xyz'" in r.stderr,
          "no message about the name" + r.why())


def sigint():
    """Ctrl+C: the program ends, what was simulated is written, exit 130."""
    out = tmpdir()
    argv = [program("mt_histogram"), "64", "2", "1000"]
    cmd = [KSCOPE, "op", "--simulate", "-o", out, "--cache", CACHE, "--", *argv]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(),
                         start_new_session=True)
    try:
        # Long enough for the program to be inside its passes.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.2)
        check(p.poll() is None, f"the program ended by itself ({p.returncode})")
        os.killpg(p.pid, signal.SIGINT)
        stdout, stderr = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    r = Run(cmd, p.returncode, stdout, stderr.decode(errors="replace"), out)
    check(r.code == 130, f"Ctrl+C: exit {r.code}, expected 130" + r.why())
    check_deliverables(r)
    check("has no 'end' record" not in r.stderr,
          "the engine did not finish its file on Ctrl+C" + r.why())


def timeout():
    """--timeout: the program is stopped (SIGINT) when the time is up and
    what was simulated is written, with a warning.  A minute lasts 3 s
    here (KSCOPE_OP_TEST_MINUTE_S, a test hook)."""
    out = tmpdir()
    argv = [program("mt_histogram"), "64", "2", "1000"]
    cmd = [KSCOPE, "op", "--simulate", "-o", out, "--cache", CACHE, "--timeout", "2", "--",
           *argv]
    e = env()
    e["KSCOPE_OP_TEST_MINUTE_S"] = "3"
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e,
                       timeout=TIMEOUT)
    took = time.monotonic() - t0
    r = Run(cmd, p.returncode, p.stdout, p.stderr.decode(errors="replace"), out)
    check(r.code == 130, f"--timeout: exit {r.code}, expected 130 (SIGINT)" + r.why())
    check(took < 120, f"--timeout 2 (6 s here) took {took:.0f} s")
    check("--timeout 2 minutes reached" in r.stderr,
          "kscope did not say the time was up" + r.why())
    check_deliverables(r)
    check("has no 'end' record" not in r.stderr,
          "the engine did not finish its file at the timeout" + r.why())


def opencl():
    """An OpenCL kernel that PoCL compiled for the CPU, by its name."""
    ex = os.path.join(BUILD, "examples", "opencl", "vadd")
    check(os.access(ex, os.X_OK), f"{ex} is missing")
    if subprocess.run([ex], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                      env=env(), timeout=TIMEOUT).returncode != 0:
        print("skip opencl: vadd does not run here (no OpenCL platform)")
        sys.exit(SKIP)
    r = run_sim(["--cache", CACHE, "--kernel-name", "*vadd"], [ex])
    check(b"vadd: ok" in r.stdout, "vadd's output changed" + r.why())
    per = check_deliverables(r)
    fl = sum(int(x["Flops"]) for rows in per.values() for x in rows)
    check(fl > 0, "no FLOP counted in the vadd kernel")


def opencl_lines():
    """--kernel-lines: the cycles of matmul's mm_naive map to the lines of
    its kernel source, kept in the run directory; the hottest is the
    inner loop's."""
    ex = os.path.join(BUILD, "examples", "opencl", "matmul")
    check(os.access(ex, os.X_OK), f"{ex} is missing")
    if subprocess.run([ex, "16"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                      env=env(), timeout=TIMEOUT).returncode != 0:
        print("skip opencl_lines: matmul does not run here (no OpenCL platform)")
        sys.exit(SKIP)
    want = native([ex, "32"])
    r = run_sim(["--cache", CACHE, "--kernel-name", "*mm_naive", "--kernel-lines", "on"],
                [ex, "32"])
    check(r.stdout == want, "matmul's output changed" + r.why())
    per = check_deliverables(r)
    lines = {}
    for t in per:
        with open(os.path.join(r.rundir, f"thread{t}", "code_exe.csv")) as f:
            rows = list(csv.DictReader(f))
        for x in rows:
            key = (x["File"], int(x["Line"]))
            lines[key] = lines.get(key, 0) + int(x["Cycles"])
    total = sum(lines.values())
    (path, line), cycles = max(lines.items(), key=lambda kv: kv[1])
    check(path.startswith(os.path.join(r.rundir, "pocl-cache")) and path.endswith(".cl"),
          f"the hottest line is in {path}, not a kernel source kept in the run directory")
    with open(path) as f:
        text = f.read().splitlines()
    check("acc += A[row * K + k] * B[k * N + col];" in text[line - 1],
          f"the hottest line is {path}:{line} ({text[line - 1]!r}), not the inner loop")
    on_cl = sum(c for (p_, _), c in lines.items() if p_.endswith(".cl"))
    check(on_cl > 0.9 * total, f"only {on_cl} of {total} cycles map to kernel lines")
    check("--kernel-lines" in r.stderr and "unoptimized" in r.stderr,
          "kscope did not say the kernels were built without optimization" + r.why())


SCENARIOS = {"whole": whole, "region": region, "threads": threads,
             "nomatch": nomatch, "sigint": sigint, "opencl": opencl,
             "opencl_lines": opencl_lines, "timeout": timeout}


def main():
    if SCENARIO not in SCENARIOS:
        raise Failure(f"unknown scenario {SCENARIO}")
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
