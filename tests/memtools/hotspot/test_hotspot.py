#!/usr/bin/env python3
"""Tests of the hotspot analysis of kscope's Valgrind tool
(valgrind --tool=kscope --analysis=hotspot), run directly under Valgrind
on the programs of this directory and checked against Valgrind's own
callgrind and cachegrind:

  counts   whole-program and per-region (--region=dot, ...) instruction
           totals equal callgrind's (--toggle-collect=dot, ...) within
           0.1%, in a scalar and a vectorized build;
  flops    the floating-point operations counted in each kernel's region
           equal the count of the code as written (hot_kernels.c);
  caches   level-0 and level-1 data misses equal cachegrind's D1 and LLd
           misses within 2% with the same geometry, on a run with real
           misses; the program's own malloc runs (no replacement);
  file     every file parses completely by the rules of src/op/sim/simraw.h
           (read_raw below), including its internal sums;
  threads  --threads keeps only the threads named; --trace-limit caps the
           trace and counts the rest; a small --interval doubles without
           losing bytes; SIGINT leaves a complete file ending "signal 2";
  options  bad option values are refused with a message.

    test_hotspot.py TOOLDIR LIBEXEC PLATFORM PROGDIR

TOOLDIR holds kscope-PLATFORM and its preload library, LIBEXEC is
Valgrind's own library directory, PROGDIR the built test programs.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # tests/, for kstest
from kstest import Failure, check  # noqa: E402

TOOLDIR, LIBEXEC, PLATFORM, PROGS = sys.argv[1:5]
PIPES = ("SCALAR", "VECTOR", "LOAD", "STORE", "BRANCH")
MAX_LEVELS = 4
MAX_BUCKETS = 65536

# Sizes: small enough for the whole test to take about a minute on two
# cores, large enough for the kernels and the misses to dominate.
N, M = 20000, 48          # dot/saxpy elements, matrix order
CACHE_ARGS = ["4000", "128", "16"]  # matmul 128x128 and a 16 MiB stream


def make_vglib(tmp):
    """A Valgrind library directory as kscope builds one (src/cli/vgrun.c):
    Valgrind's own files and kscope's tool and preload library, which the
    tool must keep out of the program for hotspot."""
    d = os.path.join(tmp, "vglib")
    os.mkdir(d)
    for name in os.listdir(LIBEXEC):
        os.symlink(os.path.join(LIBEXEC, name), os.path.join(d, name))
    for name in ("kscope-" + PLATFORM, "vgpreload_kscope-" + PLATFORM + ".so"):
        src = os.path.join(TOOLDIR, name)
        check(os.path.exists(src), f"{src} is missing: build the tool first")
        os.symlink(src, os.path.join(d, name))
    return d


TMP = ENV = None  # set up by main()
RUNS = 0


def prog(name):
    return os.path.join(PROGS, name)


def valgrind(args, timeout=300):
    p = subprocess.run(["valgrind", "-q"] + args, env=ENV, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def hotspot(argv, opts=(), expect_rc=0):
    """Runs the program under the hotspot analysis; the parsed raw file."""
    global RUNS
    RUNS += 1
    out = os.path.join(TMP, f"hot{RUNS}.raw")
    rc, _, err = valgrind(["--tool=kscope", "--analysis=hotspot", "--out=" + out,
                           *opts, *argv])
    check(rc == expect_rc, f"hotspot {opts} {argv}: exit {rc}, expected {expect_rc}:\n{err}")
    return read_raw(out)


def callgrind_ir(argv, toggle=None):
    out = os.path.join(TMP, "callgrind.out")
    opts = ["--tool=callgrind", "--callgrind-out-file=" + out]
    if toggle:
        opts.append("--toggle-collect=" + toggle)
    rc, _, err = valgrind(opts + argv)
    check(rc == 0, f"callgrind {argv}: exit {rc}:\n{err}")
    with open(out) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise Failure("callgrind wrote no summary line")


def cachegrind(argv, geometry):
    """cachegrind's totals by event name."""
    out = os.path.join(TMP, "cachegrind.out")
    rc, _, err = valgrind(["--tool=cachegrind", "--cache-sim=yes",
                           "--cachegrind-out-file=" + out, *geometry, *argv])
    check(rc == 0, f"cachegrind {argv}: exit {rc}:\n{err}")
    events = summary = None
    with open(out) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                summary = [int(v) for v in line.split()[1:]]
    check(events and summary, "cachegrind wrote no events or summary")
    return dict(zip(events, summary))


# ---------------------------------------------------------------------
# The raw file's reader (src/op/sim/simraw.h)
# ---------------------------------------------------------------------

# Record order: each kind's phase; single ones appear exactly once.
PHASE = {"kscope-hotspot": 0, "pid": 1, "exe": 2, "cache": 3, "icache": 4, "memory": 5,
         "region": 6, "file": 7, "fn": 7, "ins": 7, "sb": 7, "thread": 8, "x": 9,
         "interval": 10, "bw": 11, "trace": 12, "tr": 13, "sets": 14, "set": 15, "hl": 16,
         "hlwb": 16, "hlother": 17, "end": 18}
SINGLE = {"kscope-hotspot", "pid", "exe", "icache", "memory", "region", "interval", "trace",
          "end", "sets", "hlother"}


def unescape(s, where):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            check(i + 1 < len(s) and s[i + 1] in "\\tn", f"{where}: bad escape in {s!r}")
            out.append({"\\": "\\", "t": "\t", "n": "\n"}[s[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def num(s, where, lo=0):
    check(s.lstrip("-").isdigit(), f"{where}: {s!r} is not a decimal number")
    v = int(s)
    check(v >= lo, f"{where}: {v} < {lo}")
    return v


class Raw:
    pass


def read_raw(path):
    """Parses and checks one raw file; returns what the tests look at."""
    r = Raw()
    r.caches, r.files, r.fns, r.ins, r.sbs = [], [], [], {}, {}
    r.threads, r.x, r.bw, r.tr, r.end = {}, [], [], [], None
    r.trace_from = None
    r.sets, r.hl, r.hlwb, r.hlother = {}, [], {}, None
    seen, phase = set(), -1
    with open(path, encoding="utf-8", errors="strict", newline="\n") as f:
        text = f.read()
    check(text.endswith("\n"), f"{path}: the last line is cut short")
    lines = text[:-1].split("\n")
    for n, line in enumerate(lines, 1):
        where = f"{path}:{n}"
        fld = line.split("\t")
        kind = fld[0]
        check(kind in PHASE, f"{where}: unknown record {kind!r}")
        check(r.end is None, f"{where}: a record after end")
        check(PHASE[kind] >= phase, f"{where}: {kind} out of order")
        check(not (kind in SINGLE and kind in seen), f"{where}: a second {kind}")
        phase = PHASE[kind]
        seen.add(kind)
        if n == 1:
            check(fld == ["kscope-hotspot", "1"], f"{where}: bad first line {line!r}")
        elif kind == "pid":
            check(len(fld) == 2, where)
            num(fld[1], where, 1)
        elif kind == "exe":
            check(len(fld) == 2, where)
            r.exe = unescape(fld[1], where)
        elif kind == "cache":
            check(len(fld) == 8, f"{where}: cache has {len(fld)} fields")
            lvl, size, assoc, ln, lat = (num(v, where) for v in fld[1:6])
            check(lvl == len(r.caches) and lvl < MAX_LEVELS, f"{where}: level {lvl}")
            check(fld[6] in ("private", "shared"), f"{where}: scope {fld[6]}")
            check(size % (assoc * ln) == 0 and ln & (ln - 1) == 0, f"{where}: geometry")
            r.caches.append({"size": size, "assoc": assoc, "line": ln, "latency": lat,
                             "scope": fld[6], "name": unescape(fld[7], where)})
        elif kind == "icache":
            check(r.caches, f"{where}: no cache level")
            for i, c in enumerate(r.caches):
                want = "shared" if i == len(r.caches) - 1 else "private"
                check(c["scope"] == want, f"{where}: level {i} is {c['scope']}")
            check(len(fld) == 4, where)
            r.icache = [num(v, where, 1) for v in fld[1:]]
        elif kind == "memory":
            check(len(fld) == 2, where)
            r.memory = num(fld[1], where)
        elif kind == "region":
            check(len(fld) == 2 and fld[1], where)
            r.region = unescape(fld[1], where)
        elif kind in ("file", "fn"):
            table = r.files if kind == "file" else r.fns
            check(len(fld) == 3, where)
            check(num(fld[1], where) == len(table), f"{where}: {kind} ids not in order")
            table.append(unescape(fld[2], where))
        elif kind == "ins":
            # 13 fields since VLANES VELEM (simraw.h), which the reader
            # still takes without
            check(len(fld) == 13, f"{where}: ins has {len(fld)} fields")
            iid = num(fld[1], where)
            check(iid not in r.ins, f"{where}: ins {iid} defined twice")
            addr = fld[2]
            check(addr.startswith("0x") and addr[2:] and
                  all(c in "0123456789abcdef" for c in addr[2:]), f"{where}: address {addr}")
            length = num(fld[3], where, 1)
            check(len(fld[4]) == 2 * min(length, 16) and
                  all(c in "0123456789abcdef" for c in fld[4]), f"{where}: bytes {fld[4]}")
            fid, line_no, fnid = int(fld[5]), num(fld[6], where), int(fld[7])
            check(-1 <= fid < len(r.files), f"{where}: file {fid} not defined")
            check(-1 <= fnid < len(r.fns), f"{where}: fn {fnid} not defined")
            check(fid >= 0 or line_no == 0, f"{where}: a line without a file")
            check(fld[8] in PIPES, f"{where}: pipe {fld[8]}")
            key = (int(addr, 16), length)
            r.ins[iid] = {"addr": key[0], "len": length, "file": fid, "line": line_no,
                          "fn": r.fns[fnid] if fnid >= 0 else None, "pipe": fld[8],
                          "flops": num(fld[9], where), "base": num(fld[10], where, 1),
                          "vlanes": num(fld[11], where), "velem": num(fld[12], where)}
            lanes, elem = r.ins[iid]["vlanes"], r.ins[iid]["velem"]
            check((lanes, elem) == (0, 0) or (fld[8] == "VECTOR" and elem in (8, 16, 32, 64)
                                              and 1 <= lanes <= 256 // elem),
                  f"{where}: {lanes} vector lanes of {elem} bits ({fld[8]})")
        elif kind == "sb":
            sid, count = num(fld[1], where), num(fld[2], where, 1)
            check(sid not in r.sbs, f"{where}: sb {sid} defined twice")
            check(len(fld) == 3 + count, f"{where}: sb COUNT {count}, {len(fld) - 3} ids")
            ids = [num(v, where) for v in fld[3:]]
            check(all(i in r.ins for i in ids), f"{where}: sb uses an undefined ins")
            r.sbs[sid] = ids
        elif kind == "thread":
            check(len(fld) == 4, where)
            tid = num(fld[1], where, 1)
            check(tid not in r.threads, f"{where}: thread {tid} twice")
            r.threads[tid] = {"instrs": num(fld[2], where, 1), "cycles": num(fld[3], where)}
        elif kind == "x":
            nl = len(r.caches)
            check(len(fld) == 8 + 2 * nl, f"{where}: x has {len(fld)} fields")
            v = [num(s, where) for s in fld[1:]]
            tid, iid, execs, cyc, ldb, stb, imiss = v[:7]
            acc, miss = v[7::2], v[8::2]
            check(tid in r.threads, f"{where}: thread {tid} has no thread record")
            check(iid in r.ins, f"{where}: ins {iid} not defined")
            check(execs >= 1 and imiss <= execs, f"{where}: executions")
            check(cyc >= execs * r.ins[iid]["base"], f"{where}: cycles below BASE")
            for k in range(nl):
                check(miss[k] <= acc[k], f"{where}: level {k} misses above accesses")
                if k + 1 < nl:
                    check(acc[k + 1] == miss[k], f"{where}: level {k + 1} accesses != "
                          f"level {k} misses")
            r.x.append({"tid": tid, "ins": iid, "execs": execs, "cycles": cyc,
                        "loadb": ldb, "storeb": stb, "imiss": imiss, "acc": acc,
                        "miss": miss})
        elif kind == "interval":
            check(len(fld) == 2, where)
            r.interval = num(fld[1], where, 1)
        elif kind == "bw":
            nl = len(r.caches)
            check(len(fld) == 3 + 2 * (nl + 1), f"{where}: bw has {len(fld)} fields")
            v = [num(s, where) for s in fld[1:]]
            check(v[0] in r.threads, f"{where}: bw of unknown thread {v[0]}")
            check(v[1] < MAX_BUCKETS, f"{where}: bucket {v[1]}")
            check(any(v[2:]), f"{where}: an empty bucket")
            r.bw.append({"tid": v[0], "bucket": v[1], "bytes": v[2:]})
        elif kind == "trace":
            check(len(fld) == 4 and fld[1] in ("region", "main", "never"), f"{where}: {line!r}")
            r.trace_from = (fld[1], num(fld[2], where), num(fld[3], where))
        elif kind == "tr":
            check(len(fld) == 6, where)
            tid, sid, executed, start, end = (num(s, where) for s in fld[1:])
            check(tid in r.threads, f"{where}: tr of unknown thread")
            check(sid in r.sbs, f"{where}: tr of undefined sb {sid}")
            check(1 <= executed <= len(r.sbs[sid]), f"{where}: {executed} instructions of "
                  f"a block of {len(r.sbs[sid])}")
            check(start <= end, f"{where}: START after END")
            r.tr.append({"tid": tid, "sb": sid, "executed": executed, "start": start,
                         "end": end})
        elif kind == "sets":
            check(len(fld) == 3, where)
            r.set_level, r.nsets = num(fld[1], where), num(fld[2], where, 1)
            c = r.caches[min(1, len(r.caches) - 1)]
            check(r.set_level == min(1, len(r.caches) - 1) and
                  r.nsets == c["size"] // (c["assoc"] * c["line"]), f"{where}: {line!r}")
        elif kind == "set":
            check(len(fld) == 9, f"{where}: set has {len(fld)} fields")
            v = [num(s, where) for s in fld[1:]]
            check(v[0] < r.nsets and v[0] not in r.sets, f"{where}: set {v[0]}")
            check(v[1] + v[2] == v[3] + v[4], f"{where}: hits + misses != accesses")
            check(v[5] >= v[4] and v[6] + v[7] <= v[5], f"{where}: allocations, evictions")
            r.sets[v[0]] = v[1:]
        elif kind in ("hl", "hlother"):
            nl = len(r.caches)
            check(len(fld) == 5 + nl, f"{where}: {kind} has {len(fld)} fields")
            if kind == "hl":
                check(fld[1].startswith("0x") and int(fld[1], 16) % r.caches[0]["line"] == 0,
                      f"{where}: line address {fld[1]}")
                v = [num(s, where) for s in fld[2:]]
                check(v[0] in r.ins, f"{where}: ins {v[0]} not defined")
                ld, st, miss = v[1], v[2], v[3:]
                r.hl.append({"addr": int(fld[1], 16), "ins": v[0], "ld": ld, "st": st,
                             "miss": miss})
            else:
                v = [num(s, where) for s in fld[1:]]
                ld, st, miss = v[1], v[2], v[4:]
                r.hlother = {"pairs": v[0], "ld": ld, "st": st, "wb": v[3], "miss": miss}
            check(miss[0] == ld + st and all(miss[k + 1] <= miss[k] for k in range(nl - 1)),
                  f"{where}: {line!r}")
        elif kind == "hlwb":
            check(len(fld) == 3 and fld[1].startswith("0x"), where)
            r.hlwb[int(fld[1], 16)] = num(fld[2], where)
        elif kind == "end":
            check(len(fld) == 4 and fld[1] in ("exit", "signal"), f"{where}: {line!r}")
            r.end = (fld[1], num(fld[2], where), num(fld[3], where))
    check(r.end is not None, f"{path}: no end record (the file is cut short)")
    check(seen >= SINGLE, f"{path}: missing {sorted(SINGLE - seen)}")
    # The sets of the observed level sum to its accesses and misses, and
    # the hot lines (with what was dropped) to every level's misses.
    lv = r.set_level
    check(sum(v[0] + v[1] for v in r.sets.values()) == sum(x["acc"][lv] for x in r.x) and
          sum(v[3] for v in r.sets.values()) == sum(x["miss"][lv] for x in r.x),
          f"{path}: the sets of level {lv} do not sum to its accesses and misses")
    for k in range(len(r.caches)):
        check(sum(h["miss"][k] for h in r.hl) + r.hlother["miss"][k] ==
              sum(x["miss"][k] for x in r.x),
              f"{path}: the hot lines do not sum to level {k}'s misses")
    # Sums the file must agree with.
    for tid, t in r.threads.items():
        xs = [x for x in r.x if x["tid"] == tid]
        check(sum(x["execs"] for x in xs) == t["instrs"], f"{path}: thread {tid} INSTRS")
        check(sum(x["cycles"] for x in xs) == t["cycles"], f"{path}: thread {tid} CYCLES")
        bws = [b["bytes"] for b in r.bw if b["tid"] == tid]
        check(sum(b[0] for b in bws) == sum(x["loadb"] for x in xs),
              f"{path}: thread {tid}: bytes read at boundary 0 != bytes loaded")
        check(sum(b[1] for b in bws) == sum(x["storeb"] for x in xs),
              f"{path}: thread {tid}: bytes written at boundary 0 != bytes stored")
        line0 = r.caches[0]["line"]
        check(sum(b[2] for b in bws) >= line0 * sum(x["miss"][0] for x in xs),
              f"{path}: thread {tid}: lines filled into level 0 below its misses")
        check(max((b["bucket"] for b in r.bw if b["tid"] == tid), default=0)
              <= t["cycles"] // r.interval, f"{path}: thread {tid}: bucket past its clock")
    return r


def region_flops(r):
    return sum(x["execs"] * r.ins[x["ins"]]["flops"] for x in r.x)


def total(r, field):
    return sum(x[field] for x in r.x)


def level_misses(r, k):
    return sum(x["miss"][k] for x in r.x)


def close(a, b, tol):
    return abs(a - b) <= tol * max(a, b)


# ---------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------

def test_counts_and_flops():
    for build, dot_extra in (("scalar", 0), ("vector", 3)):
        argv = [prog("hot_kernels_" + build), str(N), str(M), "0"]
        whole = hotspot(argv)
        theirs = callgrind_ir(argv)
        ours = whole.threads[1]["instrs"]
        check(close(ours, theirs, 0.001),
              f"{build}: {ours} instructions, callgrind {theirs}")
        check(whole.end == ("exit", 0, whole.end[2]), f"{build}: end {whole.end}")
        check(whole.region == "*", f"{build}: region {whole.region}")
        # The program's own allocator ran, not a replacement.
        fns = {whole.ins[x["ins"]]["fn"] for x in whole.x}
        check("malloc" in fns, f"{build}: libc's malloc did not run")
        check(not any(f and f.startswith("_vgr") for f in fns),
              f"{build}: a replacement function ran")
        expected = {"dot": 2 * N + dot_extra, "saxpy": 2 * N, "matmul": 2 * M ** 3}
        for fn, flops in expected.items():
            r = hotspot(argv, ["--region=" + fn])
            check(r.region == fn, f"{build}/{fn}: region {r.region}")
            ours = sum(t["instrs"] for t in r.threads.values())
            theirs = callgrind_ir(argv, fn)
            check(theirs > 0 and close(ours, theirs, 0.001),
                  f"{build}/{fn}: {ours} instructions in the region, callgrind {theirs}")
            check(region_flops(r) == flops,
                  f"{build}/{fn}: {region_flops(r)} FLOPs, expected {flops}")
            check({r.ins[x["ins"]]["fn"] for x in r.x} == {fn},
                  f"{build}/{fn}: instructions of other functions counted")
            if build == "vector" and fn != "dot":
                pipes = {r.ins[x["ins"]]["pipe"] for x in r.x if r.ins[x["ins"]]["flops"]}
                check(pipes == {"VECTOR"}, f"{build}/{fn}: FP instructions in {pipes}")
            # Every FP instruction has lanes, and does 1 FLOP (2 for an
            # FMA) per lane.
            for i in {x["ins"] for x in r.x if r.ins[x["ins"]]["flops"]}:
                v = r.ins[i]
                check(v["velem"] in (32, 64) and v["flops"] in (v["vlanes"], 2 * v["vlanes"]),
                      f"{build}/{fn}: ins {hex(v['addr'])}: {v['flops']} FLOPs on "
                      f"{v['vlanes']} lanes of {v['velem']} bits")
        print(f"counts/flops {build}: ok")


def test_caches():
    geometry = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]
    argv = [prog("hot_kernels_scalar")] + CACHE_ARGS
    cg = cachegrind(argv, geometry)
    r = hotspot(argv, ["--cache=L1=32k:8:64,LL=8m:16:64", "--icache=32k:8:64"])
    check(r.caches[0]["size"] == 32768 and r.caches[1]["size"] == 8 << 20,
          f"caches {r.caches}")
    d1, ll = cg["D1mr"] + cg["D1mw"], cg["DLmr"] + cg["DLmw"]
    ours0, ours1 = level_misses(r, 0), level_misses(r, 1)
    check(ll > 200000, f"the stream gave only {ll} LL misses: the test would be vacuous")
    check(close(ours0, d1, 0.02), f"level-0 data misses {ours0}, cachegrind D1 {d1}")
    check(close(ours1, ll, 0.02), f"level-1 data misses {ours1}, cachegrind LLd {ll}")
    # A 16 MiB stream through an 8 MiB last level writes dirty lines back.
    wb = sum(b["bytes"][2 * len(r.caches) + 1] for b in r.bw)
    check(wb >= 8 << 20, f"only {wb} bytes written back to memory")
    # Latencies: every miss of the last level costs the memory latency.
    extra = total(r, "cycles") - sum(x["execs"] * r.ins[x["ins"]]["base"] for x in r.x)
    check(extra >= ours1 * r.memory, f"{extra} cycles of latency for {ours1} memory accesses")
    print(f"caches: level 0 {ours0} vs D1 {d1}, level 1 {ours1} vs LLd {ll}: ok")


def test_threads_trace_interval():
    argv = [prog("hot_threads"), "20000"]
    every = hotspot(argv)
    check(set(every.threads) == {1, 2, 3}, f"threads {sorted(every.threads)}")
    two = hotspot(argv, ["--threads=2"])
    check(set(two.threads) == {2}, f"--threads=2 gave threads {sorted(two.threads)}")
    check(close(two.threads[2]["instrs"], every.threads[2]["instrs"], 0.01),
          f"thread 2: {two.threads[2]['instrs']} alone, {every.threads[2]['instrs']} "
          "with the others")
    check({t["tid"] for t in two.tr} == {2}, "trace records of unselected threads")
    one_three = hotspot(argv, ["--threads=3,1"])
    check(set(one_three.threads) == {1, 3}, f"--threads=3,1: {sorted(one_three.threads)}")
    wr = hotspot(argv, ["--region=worker"])
    check(set(wr.threads) == {2, 3}, f"--region=worker in threads {sorted(wr.threads)}")

    kernels = [prog("hot_kernels_vector"), str(N), str(M), "0"]
    small = hotspot(kernels, ["--trace-limit=10"])
    check(len(small.tr) == 10 and small.end[2] > 0,
          f"--trace-limit=10: {len(small.tr)} records, {small.end[2]} dropped")
    none = hotspot(kernels, ["--trace-limit=0"])
    check(not none.tr and close(none.end[2], 10 + small.end[2], 0.001),
          f"--trace-limit=0 dropped {none.end[2]}, 10 + {small.end[2]} with 10 kept")
    # Without --region the trace starts at main: the dynamic loader's and
    # the C library's start-up instructions are counted, not traced.
    full = hotspot(kernels, ["--trace-limit=10000000"])
    traced = sum(t["executed"] for t in full.tr)
    check(full.trace_from[0] == "main" and full.trace_from[1] == 1,
          f"the trace starts at {full.trace_from}, not at main in thread 1")
    check(full.end[2] == 0 and 0.5 * full.threads[1]["instrs"] < traced <
          full.threads[1]["instrs"],
          f"the full trace from main holds {traced} of {full.threads[1]['instrs']} "
          "instructions")
    check(all(a["start"] >= full.trace_from[2] for a in full.tr),
          "a trace record starts before main was entered")
    # Inside a region the trace is the region's, every instruction of it.
    inmain = hotspot(kernels, ["--trace-limit=10000000", "--region=main"])
    check(inmain.trace_from[0] == "region" and inmain.end[2] == 0 and
          sum(t["executed"] for t in inmain.tr) == inmain.threads[1]["instrs"],
          "the full trace of --region=main does not add up to its instructions")
    check(all(a["end"] <= b["start"] for a, b in zip(full.tr, full.tr[1:])),
          "trace records overlap in time")

    fine = hotspot(kernels, ["--interval=1"])
    cycles = fine.threads[1]["cycles"]
    check(cycles > MAX_BUCKETS, "too few cycles to test the doubling")
    check(fine.interval > 1 and fine.interval & (fine.interval - 1) == 0,
          f"--interval=1 ended at {fine.interval}")
    check(cycles // fine.interval < MAX_BUCKETS and cycles // (fine.interval // 2) >=
          MAX_BUCKETS // 2, f"interval {fine.interval} for {cycles} cycles")
    coarse = hotspot(kernels)
    check(coarse.interval == 1000, f"default interval {coarse.interval}")
    for k in range(2 * len(fine.caches) + 2):
        a = sum(b["bytes"][k] for b in fine.bw)
        b_ = sum(b["bytes"][k] for b in coarse.bw)
        check(close(a, b_, 0.01), f"boundary field {k}: {a} bytes with --interval=1, {b_}")
    print("threads, trace, interval: ok")


def test_signal():
    out = os.path.join(TMP, "forever.raw")
    p = subprocess.Popen(["valgrind", "-q", "--tool=kscope", "--analysis=hotspot",
                          "--out=" + out, "--region=spin", prog("hot_forever")], env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        check(p.stdout.readline().strip() == b"ready", "hot_forever did not start")
        # Let it run its loop for a while.
        p.stdout.close()
        try:
            p.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check(rc == -signal.SIGINT, f"valgrind ended with {rc}, not by SIGINT")
    r = read_raw(out)
    check(r.end[:2] == ("signal", signal.SIGINT), f"end {r.end}")
    check(r.threads[1]["instrs"] > 1000000, "the loop was not counted")
    print("signal: ok")


def test_options():
    bad = [
        ("--analysis=hotspots", "expected contention, falseshare or hotspot"),
        ("--cache=L1=32k:8:48", "LINE must be a power of two"),
        ("--cache=L1=48k:8:64", "is not a power of two"),
        ("--cache=L1=32k:7:64", "multiple of ASSOC*LINE"),
        ("--cache=L1=32k:8", "expected SIZE:ASSOC:LINE"),
        ("--cache=32k:8:64", "expected NAME=SIZE:ASSOC:LINE"),
        ("--cache=a=1k:1:16,b=1k:1:16,c=1k:1:16,d=1k:1:16,e=1k:1:16", "at most 4"),
        ("--cache=L1=32k:8:64,LL=8m:16:32", "must not shrink"),
        ("--cache=L1=32k:8:64:x", "LATENCY"),
        ("--icache=32k:8", "expected SIZE:ASSOC:LINE"),
        ("--mem-latency=-1", "--mem-latency"),
        ("--region=dot||saxpy", "empty"),
        ("--region=", "expected function names"),
        ("--threads=0", "thread ids"),
        ("--threads=1,x", "thread ids"),
        ("--interval=0", "--interval"),
        ("--trace-limit=-5", "--trace-limit"),
        ("--cache=A=1k:1:16,B=2k:2:16 --icache=8k:2:32", "larger than the line of B"),
    ]
    for opts, msg in bad:
        rc, _, err = valgrind(["--tool=kscope", "--analysis=hotspot", *opts.split(),
                               "/bin/true"], timeout=60)
        check(rc != 0, f"{opts} was accepted")
        check(msg in err, f"{opts}: message {err!r} lacks {msg!r}")
    # The program's exit status reaches the file.
    r = hotspot([prog("hot_kernels_scalar"), "1"], expect_rc=2)
    check(r.end[:2] == ("exit", 2), f"exit status 2 written as {r.end}")
    print("options, exit status: ok")


def main():
    global TMP, ENV
    tests = [test_options, test_counts_and_flops, test_caches, test_threads_trace_interval,
             test_signal]
    failed = 0
    TMP = tempfile.mkdtemp(prefix="ks-hotspot-")
    try:
        ENV = dict(os.environ, VALGRIND_LIB=make_vglib(TMP))
        ENV.pop("VALGRIND_OPTS", None)
        for t in tests:
            try:
                t()
            except (Failure, subprocess.TimeoutExpired) as e:
                failed += 1
                print(f"FAIL {t.__name__}: {e}")
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
