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
                 "Stall Cycles", "GPR Count", "Vector Utilization (%)", "Function", "File",
                 "Line"]
CODE_COLUMNS = ["File", "Line", "Address Range", "Instructions Executed", "Cycles",
                "Process Bytes", "Load Bytes", "Store Bytes", "Flops",
                "L2Cache Hit Rate", "L1 Accesses", "L1 Misses", "L1 Hit Rate",
                "LL Accesses", "LL Misses", "LL Hit Rate", "ICache Misses",
                "Stall Cycles", "GPR Count", "Vector Utilization (%)"]
PIPES = ["SCALAR", "VECTOR", "LOAD", "STORE", "BRANCH"]
# The fields of the design's Details blocks (docs/formats.md, 0x05 to 0x09).
BASE_INFO_KEYS = {"name", "soc", "op_type", "block_dim", "mix_block_dim", "duration",
                  "device_id", "pid", "block_detail", "mix_block_detail", "advice"}
SUBBLOCK_KEYS = {"block_id", "block_type", "name", "unit", "value", "origin_value"}
CORE_MAP_KEYS = {"core_no", "op_type", "soc", "memory_unit", "L2cache", "Vector", "advice"}
MEMORY_UNIT_KEYS = {"memory_path", "request", "request_per_byte", "bandwidth",
                    "peak_ratio", "display"}
TABLE_BLOCK_KEYS = {"block_id", "table_op_type", "table_detail", "advice"}
TABLE_KEYS = {"table_name", "size", "header_name", "row"}


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


def read_blocks(path):
    """{type: parsed JSON payload} of the JSON blocks 0x05 to 0x09 and 0x0C of a
    visualize_data.bin (the first of each type), their padding dropped."""
    with open(path, "rb") as f:
        data = f.read()
    out, off = {}, 0
    while off < len(data):
        size, kind, pad, _ver, _res = struct.unpack_from("<QBBBB", data, off)
        start = off + 12 + (4096 if kind == 0x01 else 0)
        if (0x05 <= kind <= 0x09 or kind == 0x0C) and kind not in out:
            out[kind] = json.loads(data[start:start + size - pad])
        off = start + size
    return out


def has_keys(obj, keys, what):
    check(isinstance(obj, dict) and keys <= set(obj),
          f"{what} lacks {sorted(keys - set(obj or {}))}: {str(obj)[:300]}")


def check_vector_pipes(r, tids, per):
    """Vector utilisation in instr_exe.csv, pipe_utilization.csv, and the
    Details blocks (check_details)."""
    # A percentage where VECTOR instructions had lanes, empty elsewhere.
    for t in tids:
        for x in per[t]:
            v = x["Vector Utilization (%)"]
            check(v == "" or (x["Pipe"] == "VECTOR" and 0 < float(v) <= 100),
                  f"thread{t} {x['Address']} ({x['Pipe']}): vector utilisation {v!r}")
    # Every pipe per thread and in total, agreeing with instr_exe.csv; the
    # shares of each sum to 100.
    rows = read_csv(os.path.join(r.rundir, "pipe_utilization.csv"),
                    ["Thread", "Pipe", "Instructions", "Cycles", "Cycle Share (%)"])
    pipes = {(x["Thread"], x["Pipe"]): x for x in rows}
    check(len(pipes) == len(rows) == 5 * (len(tids) + 1),
          f"pipe_utilization.csv: {len(rows)} rows")
    for t in [str(t) for t in tids] + ["total"]:
        share = sum(float(pipes[(t, p)]["Cycle Share (%)"] or 0) for p in PIPES)
        check(abs(share - 100) < 0.01,
              f"pipe_utilization.csv: thread {t}'s shares sum to {share}")
        for p in PIPES:
            mine = [x for tt in (tids if t == "total" else [int(t)]) for x in per[tt]
                    if x["Pipe"] == p]
            check(int(pipes[(t, p)]["Instructions"]) ==
                  sum(int(x["Instructions Executed"]) for x in mine) and
                  int(pipes[(t, p)]["Cycles"]) == sum(int(x["Cycles"]) for x in mine),
                  f"pipe_utilization.csv: thread {t} {p} disagrees with instr_exe.csv")
    check_details(r, tids, pipes)


def check_details(r, tids, pipes):
    """Blocks 0x05 to 0x09: every field of the design's lists, one core per
    thread, and figures that agree with pipe_utilization.csv (pipes:
    {(thread, pipe): row})."""
    bl = read_blocks(os.path.join(r.rundir, "visualize_data.bin"))
    check(set(bl) == {5, 6, 7, 8, 9, 12}, f"Details blocks {sorted(bl)}")
    bi = bl[5]
    has_keys(bi, BASE_INFO_KEYS, "0x05")
    check(bi["block_dim"] == len(tids) and len(bi["block_detail"]) == len(tids) and
          bi["op_type"] == "cpu" and bi["duration"] > 0, f"0x05 {bi}")
    check([d["thread"] for d in bi["block_detail"]] == [f"thread{t}" for t in tids],
          f"0x05 block_detail {bi['block_detail']}")
    for blk, what in ((bl[6], "0x06"), (bl[7], "0x07")):
        check(isinstance(blk.get("advice"), list), f"{what} has no advice list")
        for e in blk["subblock_detail"]:
            has_keys(e, SUBBLOCK_KEYS, what)
    for c, t in enumerate(tids):
        g = {e["name"]: e for e in bl[6]["subblock_detail"] if e["block_id"] == c}
        share = sum(g[f"{p} pipe"]["value"] for p in PIPES)
        check(abs(share - 100) < 0.05, f"0x06 core {c}: the pipes' shares sum to {share}")
        tab = {e["name"]: e for e in bl[7]["subblock_detail"] if e["block_id"] == c}
        for p in PIPES:
            row = pipes[(str(t), p)]
            check(g[f"{p} pipe"]["origin_value"] == int(row["Cycles"]) and
                  tab[f"{p} instructions"]["value"] == int(row["Instructions"]) and
                  tab[f"{p} time"]["origin_value"] == int(row["Cycles"]),
                  f"core {c} {p}: 0x06/0x07 disagree with pipe_utilization.csv {row}")
    check(len(bl[8]["core_memory_map"]) == len(tids), "0x08 cores")
    for c, core in enumerate(bl[8]["core_memory_map"]):
        has_keys(core, CORE_MAP_KEYS, "0x08 core")
        check(core["core_no"] == c, f"0x08 core_no {core['core_no']}")
        paths = [u["memory_path"] for u in core["memory_unit"]]
        check(paths == ["L1 -> registers", "LL -> L1", "memory -> LL"], f"0x08 paths {paths}")
        for u in core["memory_unit"]:
            has_keys(u, MEMORY_UNIT_KEYS, "0x08 memory_unit")
            check(u["request_per_byte"] == 64 and u["peak_ratio"] == -1 and
                  u["display"] is True and u["bandwidth"] >= 0, f"0x08 unit {u}")
        l2 = core["L2cache"]
        has_keys(l2, {"hit", "miss", "total_request", "hit_ratio"}, "0x08 L2cache")
        check(l2["hit"] + l2["miss"] == l2["total_request"], f"0x08 L2cache {l2}")
        has_keys(core["Vector"], {"ratio", "cycle", "total_cycles"}, "0x08 Vector")
        check(core["Vector"]["cycle"] == int(pipes[(str(tids[c]), "VECTOR")]["Cycles"]),
              f"0x08 Vector {core['Vector']}")
    # 0x0C: a core per thread, its cycles those of pipe_utilization.csv,
    # its throughput the bytes it loaded and stored (0x07), the advice
    # naming the busiest thread when the cycles are a fifth apart.
    cl = bl[12]
    check(cl["op_type"] == "cpu" and isinstance(cl["advice"], str) and
          [c["core_id"] for c in cl["op_detail"]] == list(range(len(tids))), f"0x0C {cl}")
    cyc = {}
    for c, t in enumerate(tids):
        (d,) = cl["op_detail"][c]["core_detail"]
        cyc[t] = sum(int(pipes[(str(t), p)]["Cycles"]) for p in PIPES)
        tab = {e["name"]: e for e in bl[7]["subblock_detail"] if e["block_id"] == c}
        moved = sum(tab[f"{p} load bytes"]["value"] + tab[f"{p} store bytes"]["value"]
                    for p in PIPES)
        check(d["thread"] == f"thread{t}" and int(d["cycles"]) == cyc[t] and
              int(d["throughput"]) == moved and 0 <= float(d["L2cache_hit_rate"]) <= 100,
              f"0x0C core {c}: {d}, cycles {cyc[t]}, bytes {moved}")
    hi, lo = max(cyc.values()), min(cyc.values())
    check((hi > 1.2 * lo) == bool(cl["advice"]), f"0x0C advice {cl['advice']!r}, cycles {cyc}")
    check(len(bl[9]["table_per_block"]) == len(tids), "0x09 blocks")
    for b in bl[9]["table_per_block"]:
        has_keys(b, TABLE_BLOCK_KEYS, "0x09 block")
        for t in b["table_detail"]:
            has_keys(t, TABLE_KEYS, "0x09 table")
            # The design's convention: size and header_name count the
            # rows' name column, each row's value does not.
            check(t["size"] == [len(t["row"]), len(t["header_name"])] and
                  [x["name"] for x in t["row"]] == ["L1", "LL"] and
                  all(len(x["value"]) == len(t["header_name"]) - 1 for x in t["row"]),
                  f"0x09 table {t}")


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
    check_vector_pipes(r, tids, per)
    check_bw_counters(trace["traceEvents"], bw)
    return per


def check_bw_counters(events, bw):
    """The bandwidth chart of trace.json: per thread (its process) and path
    a counter of Read and Write GB/s whose step chart integrates to the
    bytes of bandwidth.csv from the trace's start on."""
    ctr = {}
    for e in events:
        if e.get("ph") == "C":
            check(e.get("cat") == "bandwidth" and set(e["args"]) == {"Read GB/s", "Write GB/s"},
                  f"trace.json counter {e}")
            ctr.setdefault((e["pid"], e["name"]), []).append(e)
    check(ctr, "trace.json has no bandwidth counter")
    first_slice = {}
    for e in events:
        if e.get("ph") == "X":
            first_slice[e["pid"]] = min(first_slice.get(e["pid"], e["ts"]), e["ts"])
    start = {}
    for (pid, _), evs in ctr.items():
        start[pid] = min(start.get(pid, evs[0]["ts"]), min(x["ts"] for x in evs))
    for (pid, path), evs in ctr.items():
        check(len(evs) <= 2 * 1000 + 1, f"thread{pid} {path}: {len(evs)} counter events")
        ts = [x["ts"] for x in evs]
        check(ts == sorted(ts), f"thread{pid} {path}: counters out of time order")
        last = evs[-1]["args"]
        check(last["Read GB/s"] == 0 and last["Write GB/s"] == 0,
              f"thread{pid} {path}: the chart does not end at zero: {last}")
        rows = [x for x in bw if x["Thread"] == str(pid) and x["Path"] == path]
        # Rows before the trace's start (the dynamic loader's, before main)
        # are not charted; they end before the thread's first slice.
        early = [x for x in rows if float(x["Start (us)"]) < start[pid] - 1e-6]
        check(all(float(x["End (us)"]) <= first_slice.get(pid, float("inf")) + 1e-6
                  for x in early),
              f"thread{pid} {path}: bandwidth.csv rows after the trace's start are "
              f"not charted: {early[-1:]}")
        rows = [x for x in rows if x not in early]
        for key, col in (("Read GB/s", "Read Bytes"), ("Write GB/s", "Write Bytes")):
            # GB/s x us = 1e3 bytes
            got = sum(a["args"][key] * (b["ts"] - a["ts"]) * 1e3 for a, b in zip(evs, evs[1:]))
            want = sum(int(x[col]) for x in rows)
            check(abs(got - want) <= 1e-6 * want + 1,
                  f"thread{pid} {path}: the {key} counter integrates to {got:.3f} bytes, "
                  f"bandwidth.csv has {want}")
    for x in bw:
        if int(x["Read Bytes"]) or int(x["Write Bytes"]):
            check((int(x["Thread"]), x["Path"]) in ctr or
                  float(x["End (us)"]) <= first_slice.get(int(x["Thread"]), 0) + 1e-6,
                  f"bandwidth.csv row {x} has no counter in trace.json")


def view_counters(rundir):
    """kscope view (its handlers, through view_request_driver) gives the
    bandwidth counters of trace.json back as written: unit/counters lists
    them, unit/counterValues returns each sample, its time counted from
    the trace's first slice (a sample before it holds from 0)."""
    drv = os.path.join(BUILD, "tests", "view", "view_request_driver")
    check(os.access(drv, os.X_OK), f"{drv} is missing: build first")
    with open(os.path.join(rundir, "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    origin = min(round(e["ts"] * 1000) for e in events if e.get("ph") == "X")
    want = {}
    for e in events:
        if e.get("ph") == "C":
            want.setdefault((str(e["pid"]), e["name"]), []).append(
                [round(e["ts"] * 1000) - origin, [e["args"]["Read GB/s"], e["args"]["Write GB/s"]]])
    for samples in want.values():
        early = [s for s in samples if s[0] < 0]
        if early and not any(s[0] == 0 for s in samples):
            early[-1][0] = 0
            early.pop()
        samples[:] = [s for s in samples if s not in early]

    def ask(reqs):
        text = "".join(json.dumps({"id": i, "moduleName": "timeline", "type": "request",
                                   "command": c, "params": p}) + "\n"
                       for i, (c, p) in enumerate(reqs))
        p = subprocess.run([drv, rundir], input=text.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        check(p.returncode == 0, f"view_request_driver {rundir}: exit {p.returncode}")
        out = [json.loads(x) for x in p.stdout.decode().splitlines()]
        check(all(x["result"] for x in out), f"view_request_driver: {out[:1]}")
        return [x["body"] for x in out]

    listed = ask([("unit/counters", {"cardId": "simulate"})])[0]
    got_keys = [(c["pid"], c["name"]) for c in listed["counters"]]
    check(sorted(got_keys) == sorted(want), f"unit/counters lists {got_keys}, trace.json "
          f"has {sorted(want)}")
    end = listed["endTime"] + 1
    tpp = max(1.0, end / 100000.0)
    bodies = ask([("unit/counterValues", {"cardId": "simulate", "processId": pid,
                                          "name": name, "startTime": 0, "endTime": end,
                                          "timePerPx": tpp}) for pid, name in got_keys])
    for k, b in zip(got_keys, bodies):
        check(b["series"] == ["Read GB/s", "Write GB/s"], f"{k}: series {b['series']}")
        got = [[x["startTime"], x["values"]] for x in b["data"] if x["count"] == 1]
        check(len(got) == len(b["data"]), f"{k}: samples merged at {tpp} ns per pixel")
        check(got == want[k], f"{k}: unit/counterValues gives {got[:4]}..., trace.json "
              f"has {want[k][:4]}...")


def whole():
    """The whole program, two worker threads: every deliverable and block."""
    argv = [program("mt_matmul"), "48", "2"]
    want = native(argv)
    r = run_sim(["--cache", CACHE, "--clock", "2"], argv)
    check(r.stdout == want, "the program's output changed under kscope" + r.why())
    check_deliverables(r, [1, 2, 3])
    blocks = inspect_blocks(os.path.join(r.rundir, "visualize_data.bin"))
    for b, name in ((0x02, "trace"), (0x01, "source"), (0x03, "api-files"),
                    (0x04, "api-instructions"), (0x0D, "roofline"), (0x05, "base-info"),
                    (0x06, "compute-graph"), (0x07, "compute-table"),
                    (0x08, "memory-graph"), (0x09, "memory-table")):
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
    # The 0x02 block is trace.json, bandwidth counters included.
    check(data[8] == 0x02, "the first block is not 0x02")
    size = struct.unpack_from("<Q", data, 0)[0] - data[9]  # less its padding
    with open(os.path.join(r.rundir, "trace.json"), "rb") as f:
        check(data[12:12 + size] == f.read(), "the 0x02 block is not trace.json")
    check(b'"ph":"C"' in data[12:12 + size], "the 0x02 block has no counter")
    view_counters(r.rundir)
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


def vecutil():
    """Vector utilisation per line and instruction, from
    examples/simulate/vecutil's four loops (their lines marked VECUTIL),
    in the CSV files, the 0x03 and 0x04 blocks and kscope view's answers;
    the Details blocks through kscope view."""
    ex = os.path.join(BUILD, "examples", "simulate", "vecutil")
    src = os.path.join(os.path.abspath(SRC), "examples", "simulate", "vecutil.c")
    check(os.access(ex, os.X_OK), f"{ex} is missing")
    with open("/proc/cpuinfo") as f:
        avx2 = " avx2" in f.read()
    want = {"scalar_float": ("addss", 12.5), "packed_double": ("mulpd", 50.0),
            "packed_int": ("paddd", 50.0)}
    if avx2:
        want["avx_float"] = ("vaddps", 100.0)
    with open(src) as f:
        marks = {m.group(1): i for i, line in enumerate(f, 1)
                 for m in [re.search(r"VECUTIL (\w+)", line)] if m}
    r = run_sim(["--cache", CACHE, "--clock", "2"], [ex, "2000"])
    per = check_deliverables(r, [1])
    lines = read_csv(os.path.join(r.rundir, "thread1", "code_exe.csv"), CODE_COLUMNS)
    by_line = {int(x["Line"]): x for x in lines if x["File"] == src}
    for name, (mnem, pct) in want.items():
        row = by_line.get(marks[name])
        check(row, f"code_exe.csv has no row for {src}:{marks[name]} ({name})")
        got = row["Vector Utilization (%)"]
        check(got and abs(float(got) - pct) < 0.005,
              f"{name}: line {marks[name]} has vector utilisation {got!r}, expected {pct}")
        ins = [x for x in per[1] if x["File"] == src and int(x["Line"]) == marks[name]]
        vec = [x for x in ins if x["Pipe"] == "VECTOR"]
        check(len(vec) == 1 and vec[0]["Source"].startswith(mnem) and
              abs(float(vec[0]["Vector Utilization (%)"]) - pct) < 0.005,
              f"{name}: its VECTOR instructions "
              f"{[(x['Source'], x['Vector Utilization (%)']) for x in vec]}")
        check(all(x["Vector Utilization (%)"] == "" for x in ins if x["Pipe"] != "VECTOR"),
              f"{name}: a non-VECTOR instruction has a vector utilisation")
    # The loop's own line (compare, increment, branch): empty, not 0.
    loop = by_line.get(marks["scalar_float"] - 1)
    check(loop and loop["Vector Utilization (%)"] == "",
          f"the loop line without vector work: {loop}")

    bl = read_blocks(os.path.join(r.rundir, "visualize_data.bin"))
    sys.path.insert(0, os.path.join(SRC, "tests", "view"))
    import viewer  # noqa: E402  (tests/view/viewer.py)
    with viewer.Viewer(KSCOPE, r.rundir, ["--source-dir", SRC]) as v:
        cards = v.ok("timeline", "import/action", {"path": [r.rundir]})["result"]
        check(len(cards) == 1 and "details" in cards[0]["kinds"], f"cards {cards}")
        cid = cards[0]["cardId"]
        got = v.ok("source", "source/api/line", {"cardId": cid, "sourceName": src})
        check(got["dtype"].get("Vector Utilization (%)") == 2, f"dtype {got['dtype']}")
        vl = {x["Line"]: x["Vector Utilization (%)"] for x in got["lines"]}
        for name, (_mnem, pct) in want.items():
            check(vl.get(marks[name]) is not None and abs(vl[marks[name]] - pct) < 0.005,
                  f"source/api/line: {name}'s line has {vl.get(marks[name])!r}")
        check(vl.get(marks["scalar_float"] - 1, 0) is None,
              "source/api/line: the loop line's utilisation is not null")
        got = json.loads(v.ok("source", "source/api/instructions", {"cardId": cid})
                         ["instructions"])
        util = [x["Vector Utilization (%)"][0] for x in got["Instructions"]
                if x["Source"].startswith("addss")]
        check(12.5 in util, f"0x04: addss has {util}")
        bi = v.ok("source", "source/details/baseInfo", {"cardId": cid})
        check(bi["name"] == "vecutil" and bi["blockDim"] == "1" and bi["opType"] == "cpu" and
              bi["soc"] == bl[5]["soc"] and bi["soc"].startswith("simulated x86-64 at 2 GHz")
              and float(bi["duration"]) == bl[5]["duration"] and
              bi["blockDetail"]["size"] == ["1", "3"], f"baseInfo {bi}")
        cw = v.ok("source", "source/details/computeworkload", {"cardId": cid, "blockId": 0})
        chart = {x["name"]: x for x in cw["chartData"]["detailDataList"]}
        check(set(chart) == {f"{p} pipe" for p in PIPES} | {"Vector Utilization"} and
              all(x["blockType"] == "cpu" and x["unit"] == "%" for x in chart.values()),
              f"computeworkload chart {sorted(chart)}")
        check(0 < float(chart["Vector Utilization"]["value"]) <= 100,
              f"computeworkload: vector utilisation {chart['Vector Utilization']}")
        table = cw["tableData"]["detailDataList"]
        check(len(table) == 4 * len(PIPES) and
              {x["unit"] for x in table} == {"us", "instructions", "Byte"},
              f"computeworkload table {table[:3]}")
        mg = v.ok("source", "source/details/memoryGraph",
                  {"cardId": cid, "blockId": 0, "showAs": "bandwidth"})["coreMemory"]
        core = bl[8]["core_memory_map"][0]
        check(len(mg) == 1 and [u["memoryPath"] for u in mg[0]["memoryUnit"]] ==
              ["L1 -> registers", "LL -> L1", "memory -> LL"] and
              mg[0]["l2Cache"]["totalRequest"] == str(core["L2cache"]["total_request"]) and
              mg[0]["vector"]["cycle"] == str(core["Vector"]["cycle"]),
              f"memoryGraph {mg}")
        mt = v.ok("source", "source/details/memoryTable", {"cardId": cid})["memoryTable"]
        t = mt[0]["tableDetail"][0]
        check(t["tableName"] == "Caches" and t["headerName"][0] == "Cache" and
              t["size"] == ["2", str(len(t["headerName"]))] and
              [x["name"] for x in t["row"]] == ["L1", "LL"], f"memoryTable {t}")


SCENARIOS = {"vecutil": vecutil, "whole": whole, "region": region, "threads": threads,
             "nomatch": nomatch, "sigint": sigint, "opencl": opencl,
             "opencl_lines": opencl_lines, "timeout": timeout}


# The "cache" scenario's hierarchy (the columns check_deliverables
# expects): the second level has 1024 sets of 64 bytes, which
# tests/op/e2e/sim_cache.c's strides are made for.
CACHE_SETS = "L1=32k:8:64,LL=1M:16:64"


def block_payloads(path):
    """{type: payload bytes} of a visualize_data.bin, the first of each type."""
    with open(path, "rb") as f:
        data = f.read()
    out, off = {}, 0
    while off < len(data):
        size, kind, pad, _ver, _res = struct.unpack_from("<QBBBB", data, off)
        start = off + 12 + (4096 if kind == 0x01 else 0)
        out.setdefault(kind, data[start:start + size - pad])
        off = start + size
    return out


def cache():
    """The cache sets (0x0B, cache_sets.csv) and hot lines (0x0E,
    cache_lines.csv) of tests/op/e2e/sim_cache.c, whose access pattern
    gives known answers: its strided loads all fall into one set of the
    second level, which has the most misses; its counter is the line with
    the most first-level misses, written back dirty every round, and the
    instruction that missed most there is on the line marked HOT LINE.
    The sets sum exactly to the second level's accesses and misses of the
    per-instruction counts, and the lines (with "other") to every level's
    misses; kscope view serves the same figures."""
    ex = os.path.join(BUILD, "tests", "op", "e2e", "sim_cache")
    src = os.path.join(SRC, "tests", "op", "e2e", "sim_cache.c")
    check(os.access(ex, os.X_OK), f"{ex} is missing: build first")
    with open(src) as f:
        hot_line = next(i for i, line in enumerate(f, 1) if "HOT LINE" in line)
    r = run_sim(["--cache", CACHE_SETS], [ex])
    out = r.stdout.decode()
    array = int(re.search(r"array (0x[0-9a-f]+)", out).group(1), 16)
    counter = int(re.search(r"counter (0x[0-9a-f]+) 20000", out).group(1), 16)
    per = check_deliverables(r, [1])
    rows = per[1]
    acc = [sum(int(x[f"{n} Accesses"]) for x in rows) for n in ("L1", "LL")]
    miss = [sum(int(x[f"{n} Misses"]) for x in rows) for n in ("L1", "LL")]

    # cache_sets.csv: every set of the second level (LL), summing to its
    # accesses and misses.
    sets = read_csv(os.path.join(r.rundir, "cache_sets.csv"),
                    ["Level", "Set", "Loads", "Stores", "Hits", "Misses", "Miss Rate",
                     "Allocations", "Evictions With Write-back",
                     "Evictions Without Write-back"])
    check(len(sets) == 1024 and {x["Level"] for x in sets} == {"LL"} and
          [int(x["Set"]) for x in sets] == list(range(1024)),
          f"cache_sets.csv: {len(sets)} rows, levels {set(x['Level'] for x in sets)}")
    n = lambda x, k: int(x[k])  # noqa: E731
    s_acc = sum(n(x, "Loads") + n(x, "Stores") for x in sets)
    s_miss = sum(n(x, "Misses") for x in sets)
    check((s_acc, s_miss) == (acc[1], miss[1]),
          f"the LL sets sum to {s_acc} accesses and {s_miss} misses; the instructions "
          f"to {acc[1]} and {miss[1]}")
    for x in sets:
        check(n(x, "Hits") + n(x, "Misses") == n(x, "Loads") + n(x, "Stores") and
              n(x, "Allocations") >= n(x, "Misses") and
              n(x, "Evictions With Write-back") + n(x, "Evictions Without Write-back") <=
              n(x, "Allocations"), f"cache_sets.csv: set {x}")
    worst = max(sets, key=lambda x: n(x, "Misses"))
    want_set = (array >> 6) % 1024
    check(int(worst["Set"]) == want_set and n(worst, "Misses") >= 200 * 64 and
          n(worst, "Loads") >= 200 * 64 and n(worst, "Misses") > s_miss // 2,
          f"the set with most misses is {worst}, expected set {want_set} with at least "
          f"12800 of the {s_miss} misses")
    # 0x0B: the same sets, as the design's CacheRecords.
    bl = block_payloads(os.path.join(r.rundir, "visualize_data.bin"))
    check(0x0B in bl and len(bl[0x0B]) == 32 * 1024, f"0x0B: {len(bl.get(0x0B, b''))} bytes")
    for i, x in enumerate(sets):
        rec = struct.unpack_from("<8I", bl[0x0B], 32 * i)
        want = (n(x, "Loads"), n(x, "Stores"), i, n(x, "Hits"), n(x, "Misses"),
                n(x, "Allocations"), n(x, "Evictions With Write-back"),
                n(x, "Evictions Without Write-back"))
        check(rec == want, f"0x0B record {i} is {rec}, cache_sets.csv says {want}")

    # 0x0E and cache_lines.csv: the counter's line first.
    heat = json.loads(bl[0x0E])
    check(heat["levels"] == ["L1", "LL"] and heat["line_size"] == 64,
          f"0x0E levels {heat.get('levels')}, line size {heat.get('line_size')}")
    lines = heat["cache_lines"]
    check(0 < len(lines) <= 1000, f"0x0E has {len(lines)} lines")
    top = lines[0]
    check(int(top["address"], 16) == counter & ~63,
          f"the hottest line is {top['address']}, not the counter's ({counter:#x})")
    ti = top["top_instruction"]
    check(top["misses"][0] >= 20000 and top["writebacks"] >= 19999 and
          ti["function"] == "hot" and ti["file"] == src and ti["line"] == hot_line and
          ti["misses"] >= 19999, f"the counter's line: {top}, expected about 20000 misses "
          f"and write-backs by {src}:{hot_line}")
    o = heat["other"]
    for k in range(2):
        got = sum(x["misses"][k] for x in lines) + o["misses"][k]
        check(got == miss[k], f"level {k}: the lines and other sum to {got} misses, the "
              f"instructions to {miss[k]}")
    cols = ["Address", "L1 Misses", "LL Misses", "Load Misses", "Store Misses",
            "Write-backs", "Top Instruction", "Top Instruction Misses", "Function", "File",
            "Line"]
    csvl = read_csv(os.path.join(r.rundir, "cache_lines.csv"), cols)
    check(len(csvl) == len(lines) + 1 and csvl[-1]["Address"] == "other" and
          csvl[0]["Address"] == top["address"] and int(csvl[0]["Line"]) == hot_line and
          int(csvl[-1]["L1 Misses"]) == o["misses"][0],
          f"cache_lines.csv: {len(csvl)} rows, first {csvl[0]}, last {csvl[-1]}")

    # kscope view: source/details/cacheSets and cacheLines.
    sys.path.insert(0, os.path.join(SRC, "tests", "view"))
    import viewer  # noqa: E402  (tests/view/viewer.py)
    with viewer.Viewer(KSCOPE, r.rundir) as v:
        cards = v.ok("timeline", "import/action", {"path": [r.rundir]})["result"]
        check(len(cards) == 1 and "details" in cards[0]["kinds"], f"cards {cards}")
        cid = cards[0]["cardId"]
        got = v.ok("source", "source/details/cacheSets", {"cardId": cid})
        check(got["level"] == "LL" and len(got["sets"]) == 1024 and
              got["totals"]["miss"] == s_miss and
              got["totals"]["load"] + got["totals"]["store"] == s_acc,
              f"cacheSets: level {got.get('level')}, totals {got.get('totals')}")
        ws = got["sets"][want_set]
        check(ws["set"] == want_set and ws["miss"] == n(worst, "Misses") and
              abs(ws["missRatio"] - n(worst, "Misses") /
                  (n(worst, "Loads") + n(worst, "Stores"))) < 1e-9,
              f"cacheSets: set {want_set} is {ws}")
        got = v.ok("source", "source/details/cacheLines", {"cardId": cid})
        g0 = got["lines"][0]
        check(got["levels"] == ["L1", "LL"] and got["lineSize"] == 64 and
              len(got["lines"]) == len(lines) and g0["address"] == top["address"] and
              g0["misses"] == top["misses"] and g0["writebacks"] == top["writebacks"] and
              g0["topInstruction"]["line"] == hot_line and
              g0["topInstruction"]["function"] == "hot" and
              got["other"]["misses"] == o["misses"],
              f"cacheLines: {str(got)[:600]}")
        # source/details/coreLoad: the 0x0C block's rows as written.
        cl = read_blocks(os.path.join(r.rundir, "visualize_data.bin"))[0x0C]
        want = [(str(c["core_id"]), d["thread"], d["cycles"], d["throughput"],
                 d["L2cache_hit_rate"]) for c in cl["op_detail"] for d in c["core_detail"]]
        got = v.ok("source", "source/details/coreLoad", {"cardId": cid})
        check(want and [(x["coreId"], x["thread"], x["cycles"], x["throughput"], x["l2HitRate"])
                        for x in got["rows"]] == want and
              got["advice"] == ([cl["advice"]] if cl["advice"] else []),
              f"coreLoad: {str(got)[:600]}, block {str(cl)[:300]}")


SCENARIOS["cache"] = cache


def options():
    """--soc-version, --aic-metrics and --dump: the preset's caches and clock
    are simulated, each metric set writes its deliverables only, and --dump
    off leaves no raw dump; --export rebuilds another set from a kept one."""
    argv = [program("mt_matmul"), "32", "1"]
    want = native(argv)
    r = run_sim(["--soc-version", "skylake", "--aic-metrics", "Source,MemoryDetail",
                 "--dump", "off"], argv)
    check(r.stdout == want, "the program's output changed")
    check("--soc-version skylake: Intel Core i7-6700K" in r.stderr and
          "L1=32k:8:64,L2=256k:4:64:11,L3=8m:16:64:44, clock 4.0 GHz" in r.stderr,
          "no word of the preset" + r.why())
    check(re.search(r"cycles on \d+ threads? \([0-9.]+ ms at 4 GHz\)", r.stderr),
          "the summary is not at the preset's 4 GHz" + r.why())
    for lvl in ("L1", "L2", "L3"):
        check(re.search(rf"^  {lvl} +\d+ accesses", r.stderr, re.M),
              f"the summary has no {lvl} of the preset" + r.why())
    names = set(os.listdir(r.rundir))
    check(not any(n.startswith("hotspot.") for n in names),
          f"--dump off left the raw dump: {sorted(names)}")
    check("--dump off: hotspot." in r.stderr, "--dump off says nothing" + r.why())
    for gone in ("trace.json", "bandwidth.csv", "bandwidth.svg", "pipe_utilization.csv"):
        check(gone not in names, f"{gone} written without its metric set: {sorted(names)}")
    for kept in ("cache_sets.csv", "cache_lines.csv"):
        check(kept in names, f"MemoryDetail: no {kept}: {sorted(names)}")
    check(glob.glob(os.path.join(r.rundir, "thread*", "code_exe.csv")),
          "Source: no code_exe.csv")
    types = set(inspect_blocks(os.path.join(r.rundir, "visualize_data.bin")))
    check({0x03, 0x04, 0x05, 0x08, 0x09, 0x0B, 0x0E} <= types and
          not types & {0x02, 0x06, 0x07}, f"blocks {sorted(types)}")
    blocks = read_blocks(os.path.join(r.rundir, "visualize_data.bin"))
    check("skylake" in blocks[0x05]["soc"], f"0x05 soc {blocks[0x05]['soc']!r}")
    rows = [row["name"] for row in
            blocks[0x09]["table_per_block"][0]["table_detail"][0]["row"]]
    check(rows[:3] == ["L1", "L2", "L3"], f"0x09 rows {rows}")
    check("metric sets (--aic-metrics): Source MemoryDetail" in r.stderr,
          "the summary does not name the metric sets" + r.why())

    # A kept dump rebuilt with only the bandwidth chart.
    r = run_sim(["--soc-version", "zen3", "--clock", "2", "--aic-metrics", "PipeUtilization"],
                argv)
    check("clock 2.0 GHz" in r.stderr and "L3=32m:16:64:46" in r.stderr,
          "--clock does not override the preset's clock" + r.why())
    names = set(os.listdir(r.rundir))
    check("trace.json" in names and "pipe_utilization.csv" in names and
          "bandwidth.csv" not in names and not glob.glob(os.path.join(r.rundir, "thread*")),
          f"PipeUtilization wrote {sorted(names)}")
    out = tmpdir()
    cmd = [KSCOPE, "op", "--export", r.rundir, "-o", out, "--aic-metrics", "PMSampling"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(),
                       timeout=TIMEOUT)
    check(p.returncode == 0, f"{cmd}: exit {p.returncode}: "
          f"{p.stderr.decode(errors='replace')[-2000:]}")
    (new,) = glob.glob(os.path.join(out, "simulate_*"))
    names = set(os.listdir(new))
    check({"bandwidth.csv", "bandwidth.svg", "trace.json"} <= names and
          "pipe_utilization.csv" not in names, f"--export PMSampling wrote {sorted(names)}")
    with open(os.path.join(new, "trace.json")) as f:
        ev = json.load(f)["traceEvents"]
    check(any(e.get("ph") == "C" for e in ev) and not any(e.get("ph") == "X" for e in ev),
          "PMSampling's trace.json should hold the bandwidth counters and no slices")
    # What --export cannot change is refused.
    cmd = [KSCOPE, "op", "--export", r.rundir, "-o", tmpdir(), "--soc-version", "skylake"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(),
                       timeout=TIMEOUT)
    check(p.returncode == 2 and b"does not apply to --export" in p.stderr,
          f"{cmd}: exit {p.returncode}: {p.stderr[-500:]!r}")


SCENARIOS["options"] = options


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
