#!/usr/bin/env python3
"""kscope memcheck --heap-map: the block nearest to an access far past any.

The program (tests/memtools/procs/mt_heapmap) makes invalid accesses
beyond Memcheck's redzone, into unallocated heap, which Memcheck relates
to no block; then it frees the blocks near them and allocates others,
some over the addresses accessed, so the heap at exit is not the heap of
the moment.  It writes the truth of each moment to a file (the block
below or above, the blocks allocated later over the address).

  basic    with --heap-map: the write 3000 bytes past a 50-byte block and
           the read 2000 bytes before a 64-byte block name, in report.json
           (heap_map), report.txt and findings.sarif, the block live at the
           access (address, size, relation, distance, the function that
           allocated it: malloc; realloc for the moved block below the
           read), never a block allocated later over the address, and so
           does a last write past a 64 KiB block after which nothing is
           allocated (the exit's marker follows it in memcheck.xml); without
           it, each says to use --heap-map (report.json's hint) and nothing
           else changes: the program's standard output and exit status
           (--error-exitcode 0: its own 5) are the same, and so are the
           findings' stacks, in which no frame of kscope's library shows;
           report.json, findings.sarif (json) and memcheck.xml (xml.etree)
           parse, memcheck.xml with its markers is still Valgrind's
           protocol 4 (report/check_xml.py), and the markers are not
           reported.
  fork     a child that allocates and exits without exec (it must not
           spoil its parent's map), a write of the parent's, a child that
           execs the basic mode: the parent's and the exec'd child's
           accesses each name their own process's block.
  exec     a write past a block, then at once an exec of the basic mode in
           the same process: the first image's log is set aside with its
           XML, and the write, its image's last event, names the block of
           that image; the second image's accesses name its own.
  threads  four threads allocating and freeing at once, each writing past
           a block of its own: each names its thread's block.
  asan     the same programs built with -fsanitize=address (kscope runs
           them with AddressSanitizer): ASan's block and distance for the
           write past the 50-byte block, and for examples/memory's
           far_overflow (400 bytes past 1 MiB), are those --heap-map names
           under Memcheck.  The read 2000 bytes before the first 64-byte
           block is no comparison: ASan's allocator puts that block at the
           start of its size class's region, and the address before it is
           unmapped (ASan reports a SEGV, no block; docs/memtools.md).
  cxx      procs/mt_heapmap_ops.cpp, built here with g++: every operator
           new and delete that libstdc++ exports and Memcheck replaces,
           each with its own delete, and a write 3000 bytes past a
           new char[50]: the block is named, allocated by operator new[],
           and the findings are those without --heap-map (no mismatched
           free: each operator is forwarded to its own).
  complete the heap map is the whole heap: replayed to its end (by this
           script's own reader of the log's format, docs/formats.md), its
           live blocks and bytes are those Memcheck lists as leaks of every
           kind at exit, for ls -l /, sort, python3 -c pass, the C++
           program and examples/memory's leak_kinds -- an allocation or
           free that went round the wrappers would show.
  own      a program with a malloc and free of its own (which Memcheck
           replaces, and kscope's wrappers never see): the far write's
           heap map is "not known", saying why, never a block.
  options  --heap-map with --engine asan is refused (exit 2, a message,
           nothing written).

    memcheck_heapmap.py KSCOPE BUILD_DIR SOURCE_DIR SCENARIO
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from kstest import Failure, TempDirs, check, run_kscope, run_outputs  # noqa: E402

KSCOPE, BUILD, SRC, SCENARIO = sys.argv[1:5]
PROG = os.path.join(BUILD, "tests", "memtools", "procs", "mt_heapmap")
PROG_SRC = os.path.join(SRC, "tests", "memtools", "procs", "mt_heapmap.c")
FINDINGS = 100
tmp = TempDirs("ks-heapmap-")


def env_without_asan():
    env = dict(os.environ)
    env.pop("ASAN_OPTIONS", None)
    env.pop("LSAN_OPTIONS", None)
    return env


def run(opts, args, prog=PROG):
    """kscope memcheck OPTS -- PROG ARGS: (exit, stdout, stderr, run dir)."""
    return run_kscope(KSCOPE, "memcheck", tmp(), opts, [prog, *args], env=env_without_asan())


load = run_outputs


def truth(path):
    """{(tag, addr): {"below": (block, size), "above": ..., "covered": [...]}}."""
    t = {}
    for ln in open(path):
        tag, addr, rel, *rest = ln.split()
        e = t.setdefault((tag, int(addr, 16)), {"covered": []})
        if rel == "covered":
            e["covered"].append((int(rest[0], 16), int(rest[1])))
        elif rel != "none":
            e[rel] = (int(rest[0], 16), int(rest[1]))
    return t


def defect_lines():
    """The lines of mt_heapmap.c marked DEFECT: {line: kind}."""
    out = {}
    for i, ln in enumerate(open(PROG_SRC), 1):
        m = re.search(r"/\* DEFECT: ([a-z-]+)", ln)
        if m:
            out[i] = m.group(1)
    return out


def line_of(err):
    for f in err["stack"]:
        # (gcc names the file as compiled, clang with the path it was given)
        if os.path.basename(f.get("file") or "") == "mt_heapmap.c" and f.get("line"):
            return f["line"]
    return None


def far_errors(rep, pid=None):
    """The findings at the DEFECT lines of mt_heapmap.c (of process pid)."""
    lines = defect_lines()
    got = [e for e in rep["errors"] if line_of(e) in lines and (pid is None or e["pid"] == pid)]
    for e in got:
        # (a premise of the program: each access lands in unallocated
        # heap, where Memcheck relates it to no block)
        check(e["kind"] == lines[line_of(e)] and "block" not in e,
              f"mt_heapmap.c:{line_of(e)}: {e['kind']} {e.get('auxwhat')}, expected "
              f"{lines[line_of(e)]} in unallocated heap")
    return got


def expect_named(e, want, what):
    """e's heap_map names the blocks of the truth entry want."""
    hm = e.get("heap_map")
    addr = int(e["addr"], 16)
    check(hm and hm["status"] == "found", f"{what}: heap_map {hm}")
    for side, rel in (("below", "after"), ("above", "before")):
        if side not in want:
            continue
        block, size = want[side]
        got = hm.get(side)
        check(got, f"{what}: no block {side} in {hm}; the truth: {block:#x} ({size} bytes)")
        dist = addr - block - size if side == "below" else block - addr
        check(int(got["addr"], 16) == block and got["size"] == size and
              got["relation"] == rel and got["distance"] == dist,
              f"{what}: {side} is {got}, the truth is {block:#x} of {size} bytes, {dist} "
              f"bytes {rel}")
        check(got["allocation"] >= 1 and got["function"], f"{what}: {got}")
        for cblock, csize in want["covered"]:
            check(int(got["addr"], 16) != cblock,
                  f"{what}: names the block allocated later over the address")
    return hm


def check_basic(errs, tr, what):
    """The three accesses of mt_heapmap basic, each named as its truth
    says: {tag: finding} for the tags write, read and last."""
    check(sorted(e["kind"] for e in errs) == ["invalid-read", "invalid-write", "invalid-write"],
          f"{what}: findings at the DEFECT lines: {[(e['kind'], line_of(e)) for e in errs]}")
    by_tag = {}
    for e in errs:
        tags = [k[0] for k in tr if k[1] == int(e["addr"], 16)]
        check(len(tags) == 1, f"{what}: no truth for {e['addr']} ({tags}): {tr}")
        by_tag[tags[0]] = e
        expect_named(e, tr[(tags[0], int(e["addr"], 16))], f"{what}: the {tags[0]}")
    check(sorted(by_tag) == ["last", "read", "write"], f"{what}: {sorted(by_tag)}")
    for tag, size in (("write", 50), ("last", 65536)):
        hm = by_tag[tag]["heap_map"]
        check(hm["below"]["distance"] == 3000 and hm["below"]["size"] == size and
              hm["below"]["function"] == "malloc" and "above" not in hm,
              f"{what}: the {tag}: {hm}")
    hm = by_tag["read"]["heap_map"]
    check(hm["above"]["distance"] == 2000 and hm["above"]["size"] == 64 and
          hm["below"]["function"] == "realloc" and hm["below"]["size"] == 600,
          f"{what}: the read: {hm}")
    return by_tag


def no_kscope_frames(rep):
    def stacks(e):
        yield e["stack"]
        for a in e.get("aux", []):
            if "stack" in a:
                yield a["stack"]
    for e in rep["errors"] + rep["leaks"]:
        for st in stacks(e):
            for f in st:
                check("kscope-mcheap" not in (f.get("obj") or ""),
                      f"a frame of kscope's library in a finding: {f}")


def frames(e):
    """A finding's stacks as (fn, file, line) tuples, for comparing runs."""
    out = [tuple((f.get("fn"), f.get("file"), f.get("line")) for f in e["stack"])]
    for a in e.get("aux", []):
        out.append((a.get("what", "").split(" 0x")[0],
                    tuple((f.get("fn"), f.get("file"), f.get("line")) for f in a.get("stack", []))))
    return out


def well_formed(rundir):
    """memcheck.xml, markers and all, is Valgrind's protocol 4 (the
    checker of tests/memtools/report)."""
    path = os.path.join(rundir, "memcheck.xml")
    ET.parse(path)
    p = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "report", "check_xml.py"), path],
                       capture_output=True, text=True)
    check(p.returncode == 0, f"check_xml.py: {p.stdout}{p.stderr}")


def scenario_basic():
    tdir = tmp()
    t_on, t_off = os.path.join(tdir, "on"), os.path.join(tdir, "off")
    code, out_on, err, rd_on = run(["--heap-map", "--xml"], ["basic", t_on])
    check(code == FINDINGS, f"--heap-map: exit {code}; stderr:\n{err[-3000:]}")
    code, out_off, err_off, rd_off = run(["--xml"], ["basic", t_off])
    check(code == FINDINGS, f"without --heap-map: exit {code}; stderr:\n{err_off[-3000:]}")
    check(out_on == out_off == "mt_heapmap basic: done (1)\n",
          f"the program's output differs: {out_on!r} / {out_off!r}")
    for rd in (rd_on, rd_off):
        well_formed(rd)
    rep, sarif, txt = load(rd_on)
    check(rep["exit"] == {"how": "exit", "code": 5}, f"the program's exit: {rep['exit']}")
    tr = truth(t_on)
    check(any(v["covered"] for v in tr.values()),
          f"premise: no block was allocated over an accessed address later: {tr}")
    by_tag = check_basic(far_errors(rep), tr, "basic")
    w, r, last = by_tag["write"], by_tag["read"], by_tag["last"]
    check(all("hint" not in e for e in (w, r, last)), "a hint with --heap-map")
    # The last write: nothing was allocated after it; the exit's marker
    # follows it in Memcheck's XML.
    root = ET.parse(os.path.join(rd_on, "memcheck.xml")).getroot()
    kids = list(root)
    at = [i for i, el in enumerate(kids) if el.tag == "error" and
          el.findtext("auxwhat", "").startswith(f"Address {last['addr']} ")]
    check(len(at) == 1 and any(el.tag == "clientmsg" and
                               (el.findtext("text") or "").startswith("kscope-heapmap ")
                               for el in kids[at[0]:]),
          "memcheck.xml: no marker after the last write (the exit's)")
    check(re.search(r"Heap map: address 0x[0-9a-f]+ is 3,000 bytes after the block of 50 "
                    r"bytes at 0x[0-9a-f]+ \(allocated by malloc, allocation #\d+\)", txt),
          f"report.txt:\n{txt}")
    check(re.search(r"Heap map: address 0x[0-9a-f]+ is 2,000 bytes before the block of 64 "
                    r"bytes at 0x", txt), f"report.txt:\n{txt}")
    msgs = [res["message"]["text"] for res in sarif["runs"][0]["results"]]
    check(sum("Heap map: address" in m and "3,000 bytes after the block of 50 bytes" in m
              for m in msgs) == 1, f"findings.sarif: {msgs}")
    check("kscope-heapmap" not in txt and "kscope-heapmap" not in json.dumps(rep),
          "a heap map marker in the reports")
    with open(os.path.join(rd_on, "memcheck.xml")) as f:
        check("kscope-heapmap" in f.read(), "memcheck.xml has no marker (the premise)")
    check(any(n.startswith("heapmap.") for n in os.listdir(rd_on)),
          f"--xml keeps the heap map log: {os.listdir(rd_on)}")
    no_kscope_frames(rep)

    # Without --heap-map: the hint, and the same findings.
    rep0, sarif0, txt0 = load(rd_off)
    errs0 = far_errors(rep0)
    check(len(errs0) == 3 and all("--heap-map" in e.get("hint", "") and "heap_map" not in e
                                  for e in errs0), f"without --heap-map: {errs0}")
    check(txt0.count("Hint: Memcheck relates") == 3, f"report.txt:\n{txt0}")
    check(not any(n.startswith("heapmap.") for n in os.listdir(rd_off)),
          f"a heap map log without --heap-map: {os.listdir(rd_off)}")
    check(sorted(frames(e) for e in rep["errors"]) == sorted(frames(e) for e in rep0["errors"]),
          "the findings' stacks differ with --heap-map:\n"
          f"{sorted(frames(e) for e in rep['errors'])}\n{sorted(frames(e) for e in rep0['errors'])}")
    check([(lk["kind"], lk["bytes"]) for lk in rep["leaks"]] ==
          [(lk["kind"], lk["bytes"]) for lk in rep0["leaks"]], "the leaks differ")
    check(rep["summary"]["contexts"] == rep0["summary"]["contexts"] and
          rep["summary"]["occurrences"] == rep0["summary"]["occurrences"],
          f"summaries differ: {rep['summary']} / {rep0['summary']}")
    # The program's own status when findings do not decide kscope's.
    for opts in (["--heap-map", "--error-exitcode", "0"], ["--error-exitcode", "0"]):
        code, out, err, _ = run(opts, ["basic", os.path.join(tdir, "x")])
        check(code == 5 and out == out_on, f"{opts}: exit {code}, output {out!r}")
    print("ok: basic: the blocks of the moment named, without --heap-map the hint")


def scenario_fork():
    tdir = tmp()
    t = os.path.join(tdir, "t")
    code, out, err, rd = run(["--heap-map", "--xml"], ["fork", t])
    check(code == FINDINGS, f"exit {code}; stderr:\n{err[-3000:]}")
    check(out == "mt_heapmap basic: done (1)\nmt_heapmap fork: done\n", f"output {out!r}")
    well_formed(rd)
    rep, _, _ = load(rd)
    main = rep["program"]["pid"]
    parent = far_errors(rep, main)
    check(len(parent) == 1, f"the parent's write: {parent}")
    tr = truth(t)
    expect_named(parent[0], tr[("parent", int(parent[0]["addr"], 16))], "the parent's write")
    child_pids = {p["pid"] for p in rep["processes"]} - {main}
    check(len(child_pids) == 1, f"one exec'd child expected: {rep['processes']}")
    check_basic(far_errors(rep, child_pids.pop()), truth(t + ".child"), "the exec'd child")
    logs = sorted(n for n in os.listdir(rd) if n.startswith("heapmap."))
    check(len(logs) == 2, f"one heap map log per checked process: {logs}")
    no_kscope_frames(rep)
    print("ok: fork: each process's accesses name its own blocks")


def scenario_exec():
    tdir = tmp()
    t = os.path.join(tdir, "t")
    code, out, err, rd = run(["--heap-map", "--xml"], ["exec", t])
    check(code == FINDINGS, f"exit {code}; stderr:\n{err[-3000:]}")
    check(out == "mt_heapmap basic: done (1)\n", f"output {out!r}")
    rep, _, _ = load(rd)
    images = [p for p in rep["processes"]]
    check(len(images) == 2 and images[0]["pid"] == images[1]["pid"] and
          [p["image"] for p in images] == [0, 1], f"two images of one process: {images}")
    logs = sorted(n for n in os.listdir(rd) if n.startswith("heapmap."))
    pid = images[0]["pid"]
    check(logs == [f"heapmap.{pid}.0.log", f"heapmap.{pid}.log"],
          f"the first image's log set aside before the exec: {logs}")
    errs = far_errors(rep)
    src_lines = [i for i, ln in enumerate(open(PROG_SRC), 1) if "DEFECT" in ln]
    exec_line = [i for i, ln in enumerate(open(PROG_SRC), 1)
                 if "DEFECT" in ln and i > min(j for j, l2 in enumerate(open(PROG_SRC), 1)
                                               if "static int exec_self" in l2)][0]
    check(exec_line in src_lines, "the exec mode's DEFECT line")
    first = [e for e in errs if line_of(e) == exec_line]
    check(len(first) == 1, f"the first image's write: {[(line_of(e), e['kind']) for e in errs]}")
    tr0 = truth(t)
    expect_named(first[0], tr0[("image0", int(first[0]["addr"], 16))],
                 "the first image's write (its last event before the exec)")
    check_basic([e for e in errs if line_of(e) != exec_line], truth(t + ".child"),
                "the exec'd image")
    no_kscope_frames(rep)
    print("ok: exec: each image's accesses name its own blocks")


def scenario_threads():
    t = os.path.join(tmp(), "t")
    code, out, err, rd = run(["--heap-map", "--xml"], ["threads", t])
    check(code == FINDINGS, f"exit {code}; stderr:\n{err[-3000:]}")
    check(out == "mt_heapmap threads: done\n", f"output {out!r}")
    well_formed(rd)
    rep, _, _ = load(rd)
    errs = far_errors(rep)
    check(len(errs) == 4 and len({e["tid"] for e in errs}) == 4,
          f"four writes from four threads: {[(e['tid'], line_of(e)) for e in errs]}")
    tr = truth(t)
    for e in errs:
        key = [k for k in tr if k[1] == int(e["addr"], 16)]
        check(len(key) == 1, f"no truth for {e['addr']}: {tr}")
        hm = expect_named(e, tr[key[0]], f"thread {e['tid']}'s write")
        check(hm["below"]["distance"] == 3000, f"{hm}")
    no_kscope_frames(rep)
    print("ok: threads: each write names its thread's block")


def asan_block(rep, kind):
    """ASan's block of the first finding of kind: (size, distance after it)."""
    for e in rep["errors"]:
        if e["kind"] == kind and e.get("block"):
            b = e["block"]
            return b["size"], b["offset"] - b["size"]
    return None


def scenario_asan():
    d = tmp()
    # mt_heapmap basic: the write past the 50-byte block.
    binary = os.path.join(d, "mt_heapmap_asan")
    subprocess.run(["gcc", "-g", "-O0", "-fsanitize=address", "-fsanitize-recover=address",
                    "-w", PROG_SRC, "-o", binary, "-lpthread"], check=True)
    code, _, err, rd = run([], ["basic", os.path.join(d, "t")], prog=binary)
    check(code == FINDINGS, f"ASan: exit {code}; {err[-2000:]}")
    rep, _, _ = load(rd)
    got = asan_block(rep, "invalid-write")
    check(got == (50, 3000), f"ASan's block of the write past the 50-byte block: {got}")
    kinds = sorted(e["what"].split()[0].rstrip(":") for e in rep["errors"])
    check("SEGV" in kinds, f"ASan on the read before the first 64-byte block: {kinds} "
          "(documented: its address is unmapped under ASan's allocator)")
    code, _, err, rd = run(["--heap-map"], ["basic", os.path.join(d, "m")])
    rep_m, _, _ = load(rd)
    w = [e for e in far_errors(rep_m) if e["kind"] == "invalid-write"][0]
    b = w["heap_map"]["below"]
    check((b["size"], b["distance"], b["relation"]) == (50, 3000, "after"),
          f"--heap-map: {b}, ASan: 50 bytes, 3000 after")
    # examples/memory/far_overflow.c: 400 bytes past a 1 MiB block.
    src = os.path.join(SRC, "examples", "memory", "far_overflow.c")
    fa, fm = os.path.join(d, "far_asan"), os.path.join(d, "far")
    subprocess.run(["gcc", "-g", "-O0", "-fsanitize=address", "-fsanitize-recover=address",
                    "-w", src, "-o", fa], check=True)
    subprocess.run(["gcc", "-g", "-gdwarf-4", "-O0", "-w", src, "-o", fm], check=True)
    _, _, _, rd = run([], [], prog=fa)
    ga = asan_block(load(rd)[0], "invalid-write")
    code, _, err, rd = run(["--heap-map"], [], prog=fm)
    errs = [e for e in load(rd)[0]["errors"] if e["kind"] == "invalid-write"]
    check(len(errs) == 1 and errs[0].get("heap_map", {}).get("status") == "found",
          f"far_overflow under --heap-map: {errs}; {err[-2000:]}")
    b = errs[0]["heap_map"]["below"]
    check(ga == (1048576, 400) and (b["size"], b["distance"]) == ga,
          f"far_overflow: ASan {ga}, --heap-map {(b['size'], b['distance'])}")
    print("ok: asan: the same block and distance as AddressSanitizer's")


def scenario_options():
    d = tmp()
    src = os.path.join(SRC, "examples", "memory", "oob.c")
    binary = os.path.join(d, "oob_asan")
    subprocess.run(["gcc", "-g", "-O0", "-fsanitize=address", "-w", src, "-o", binary],
                   check=True)
    for opts, prog in ((["--heap-map"], binary),
                       (["--heap-map", "--engine", "asan"], PROG)):
        out = tmp()
        p = subprocess.run([KSCOPE, "memcheck", "-o", out, *opts, "--", prog, "basic", "x"],
                           capture_output=True, timeout=120, env=env_without_asan())
        err = p.stderr.decode()
        check(p.returncode == 2, f"{opts}: exit {p.returncode}, expected 2: {err}")
        check("option --heap-map is for Valgrind's Memcheck" in err and
              "leave the option out" in err, f"{opts}: the message: {err}")
        check(not os.listdir(out), f"{opts}: nothing should be written: {os.listdir(out)}")
    print("ok: options: --heap-map refused with AddressSanitizer")


def build_cxx():
    """procs/mt_heapmap_ops.cpp built with g++, or None without g++."""
    if not shutil.which("g++"):
        return None
    exe = os.path.join(tmp(), "mt_heapmap_ops")
    subprocess.run(["g++", "-std=c++17", "-g", "-gdwarf-4", "-O0", "-w",
                    os.path.join(SRC, "tests", "memtools", "procs", "mt_heapmap_ops.cpp"),
                    "-o", exe], check=True)
    return exe


def scenario_cxx():
    exe = build_cxx()
    if not exe:
        print("ok: cxx: skipped, no g++")
        return
    tdir = tmp()
    code, out, err, rd = run(["--heap-map"], [os.path.join(tdir, "t")], prog=exe)
    check(code == FINDINGS, f"exit {code}; stderr:\n{err[-3000:]}")
    code0, out0, err0, rd0 = run([], [os.path.join(tdir, "t0")], prog=exe)
    check(out == out0 and out.startswith("mt_heapmap_ops: "), f"output {out!r} / {out0!r}")
    rep, _, txt = load(rd)
    rep0, _, _ = load(rd0)
    kinds = sorted((e["kind"], line_of_file(e, "mt_heapmap_ops.cpp")) for e in rep["errors"])
    check(kinds == sorted((e["kind"], line_of_file(e, "mt_heapmap_ops.cpp"))
                          for e in rep0["errors"]),
          f"findings differ with --heap-map: {kinds} / {rep0['errors']}")
    check([k for k, _ in kinds] == ["invalid-write"], f"one invalid write expected: {kinds}")
    w = rep["errors"][0]
    tr = truth(os.path.join(tdir, "t"))
    hm = expect_named(w, tr[("write", int(w["addr"], 16))], "the write past new char[50]")
    check(hm["below"]["function"] == "operator new[]" and hm["below"]["distance"] == 3000,
          f"the write: {hm}")
    no_kscope_frames(rep)
    print("ok: cxx: every operator forwarded to its own, new[]'s block named")


def line_of_file(err, name):
    for f in err["stack"]:
        if f.get("file") == name and f.get("line"):
            return f["line"]
    return None


def replay_end(path):
    """The live blocks {addr: size} at the end of a heap map log, read here
    from its format (docs/formats.md, "heapmap.<pid>.log")."""
    with open(path, "rb") as f:
        data = f.read()
    seq, addr, size, magic, typ, fn, chk = struct.unpack_from("<QQQQHHI", data, 0)
    check(typ == 1 and magic == 0x70616d686563736b and size == 1, f"{path}: header {typ}")
    live, last = {}, 0
    for off in range(40, len(data) - 39, 40):
        seq, addr, size, _, typ, _, _ = struct.unpack_from("<QQQQHHI", data, off)
        if seq == 0 and typ == 0:
            break
        check(seq in (last, last + 1) and typ in (2, 3, 5), f"{path}: record {off // 40}: "
              f"seq {seq} after {last}, type {typ}")
        last = seq
        addr ^= (1 << 64) - 1  # stored complemented
        if typ == 2:
            live[addr] = size
        elif typ == 3:
            live.pop(addr, None)
    return live


def direct_bytes(leak):
    """A leak record's own bytes: Memcheck counts a lost block's indirectly
    lost ones in its bytes too ("24 (16 direct, 8 indirect) bytes"), and
    lists them again in their own record."""
    m = re.search(r"\(([\d,]+) direct, [\d,]+ indirect\)", leak["what"])
    return int(m.group(1).replace(",", "")) if m else leak["bytes"]


def scenario_complete():
    d = tmp()
    sort_in = os.path.join(d, "in.txt")
    with open(sort_in, "w") as f:
        f.writelines(f"{(i * 7919) % 2003} line {i}\n" for i in range(2000))
    progs = [["ls", "-l", "/"], ["sort", sort_in], ["/usr/bin/python3", "-c", "pass"],
             [os.path.join(BUILD, "examples", "memory", "leak_kinds")]]
    exe = build_cxx()
    if exe:
        progs.append([exe, os.path.join(d, "t")])
    for argv in progs:
        code, _, err, rd = run(["--heap-map", "--xml", "--show-leak-kinds", "all",
                                "--errors-for-leak-kinds", "none", "--no-filter",
                                "--error-exitcode", "0"], argv[1:], prog=argv[0])
        rep, _, _ = load(rd)
        main = rep["program"]["pid"]
        blocks = sum(lk["blocks"] for lk in rep["leaks"] if lk["pid"] == main)
        nbytes = sum(direct_bytes(lk) for lk in rep["leaks"] if lk["pid"] == main)
        live = replay_end(os.path.join(rd, f"heapmap.{main}.log"))
        check((len(live), sum(live.values())) == (blocks, nbytes),
              f"{argv[0]}: the heap map ends with {len(live)} blocks of "
              f"{sum(live.values())} bytes, Memcheck's leak records at exit list {blocks} "
              f"blocks of {nbytes} bytes")
        print(f"ok: complete: {os.path.basename(argv[0])}: {blocks} blocks, {nbytes} bytes "
              "live at exit in both")


OWN_MALLOC = r"""
#include <stddef.h>
#include <stdio.h>
#include <string.h>
static char arena[1 << 20];
static size_t used;
void *malloc(size_t n) { void *p = arena + used; used += (n + 15) & ~(size_t)15; return p; }
void free(void *p) { (void)p; }
void *calloc(size_t k, size_t n) { void *p = malloc(k * n); memset(p, 0, k * n); return p; }
void *realloc(void *p, size_t n) { void *q = malloc(n); if (p) memcpy(q, p, n); return q; }
int main(void)
{
	char *p = malloc(50);
	volatile char *w = p + 50 + 3000;
	*w = 1;
	free(p);
	puts("own: done");
	return 0;
}
"""


def scenario_own():
    d = tmp()
    src, exe = os.path.join(d, "own.c"), os.path.join(d, "own")
    with open(src, "w") as f:
        f.write(OWN_MALLOC)
    subprocess.run(["gcc", "-g", "-gdwarf-4", "-O0", "-fno-builtin", "-w", src, "-o", exe],
                   check=True)
    code, out, err, rd = run(["--heap-map", "--no-filter"], [], prog=exe)
    rep, _, txt = load(rd)
    writes = [e for e in rep["errors"] if e["kind"] == "invalid-write"]
    check(len(writes) == 1, f"one invalid write expected: {rep['errors']}; {err[-2000:]}")
    hm = writes[0].get("heap_map")
    check(hm and hm["status"] == "unknown" and "below" not in hm and
          "allocation function of its own (malloc)" in hm.get("reason", ""),
          f"the program's own malloc: heap_map {hm}")
    check("Heap map: the nearest block is not known: the program has an allocation "
          "function of its own (malloc)" in txt, f"report.txt:\n{txt}")
    print("ok: own: a program's own malloc makes the map say it cannot tell")


SCENARIOS = {"basic": scenario_basic, "fork": scenario_fork, "exec": scenario_exec,
             "threads": scenario_threads,
             "asan": scenario_asan, "cxx": scenario_cxx, "complete": scenario_complete,
             "own": scenario_own, "options": scenario_options}


def main():
    try:
        if SCENARIO not in SCENARIOS:
            raise Failure(f"unknown scenario {SCENARIO}")
        SCENARIOS[SCENARIO]()
    except Failure as e:
        print(f"FAIL: memcheck_heapmap {SCENARIO}: {e}")
        return 1
    finally:
        tmp.remove()
    print(f"PASS: memcheck_heapmap {SCENARIO}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
