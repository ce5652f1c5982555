#!/usr/bin/env python3
"""Tests of libkscope-op.so, one scenario per run (tests/op/rt/CMakeLists.txt).

  test_rt.py SCENARIO LIB RT_PROG CHAN_PY

Each scenario runs rt_prog (rt_prog.c) natively and under chan.py (which
plays kscope's side of the channel) and checks, on the real output of
those runs: the program's stdout and exit status are the same with and
without the library, the messages the library sent, and the raw files
(context.json, measure.json, the kernel source) it wrote.  Exits 77 (a
skip) when the machine has no usable OpenCL device.
"""
import glob
import json
import os
import stat
import subprocess
import sys
import tempfile

SCENARIO, LIB, PROG, CHAN = sys.argv[1:5]
WORK = tempfile.mkdtemp(prefix="ks_oprt_")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def run_native(mode, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([PROG, mode], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=100)
    sys.stderr.write(p.stderr.decode())
    if p.returncode == 2 and b"clGetPlatformIDs" in p.stderr:
        print("no OpenCL platform: skipped", file=sys.stderr)
        sys.exit(77)
    return p.returncode, p.stdout.decode()


def run_chan(mode, name, args=(), env=None):
    """Runs rt_prog MODE under chan.py; returns (status, stdout, messages, dir)."""
    d = os.path.join(WORK, name)
    log = os.path.join(WORK, name + ".log")
    cmd = [sys.executable, CHAN, "--lib", LIB, "--dir", d, "--log", log]
    cmd += list(args)
    for k, v in (env or {}).items():
        cmd += ["--env", "%s=%s" % (k, v)]
    cmd += ["--", PROG, mode]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, timeout=100)
    msgs = [json.loads(line) for line in open(log)]
    return p.returncode, p.stdout.decode(), msgs, d


def of_type(msgs, t):
    return [m["fields"] for m in msgs if m["type"] == t]


def one(fields, key):
    return fields[key][0]


def same_output(mode, rc, out, native):
    check(rc == native[0], "%s: exit status %d under the library, %d without"
          % (mode, rc, native[0]))
    check(out == native[1], "%s: output differs under the library:\n%s\n--- without:\n%s"
          % (mode, out, native[1]))
    check("FAILED" not in out and out.strip(), "%s: the program's own check failed" % mode)


def load(d, name):
    path = os.path.join(d, name)
    check(os.path.exists(path), "missing " + path)
    if not os.path.exists(path):
        return {}
    mode = stat.S_IMODE(os.stat(path).st_mode)
    check(mode == 0o640, "%s has mode %o, not 640" % (path, mode))
    with open(path) as f:
        return json.load(f)


CONTEXT_KEYS = ["kind", "name", "index", "pid", "tid", "platform", "device", "program",
                "queue"]
DEVICE_KEYS = ["name", "vendor", "version", "driver_version", "type", "compute_units",
               "max_clock_mhz", "global_mem_bytes", "global_mem_cache_bytes",
               "local_mem_bytes"]
ARG_KEYS = ["index", "name", "type_name", "address", "access", "const", "kind", "size"]
MEASURE_KEYS = ["mode", "status", "warmup", "passes", "flush", "flush_bytes", "original_ns",
                "pass_ns", "pass_queued_ns", "warmup_ns", "replay_wall_ns", "backup_bytes",
                "buffers", "counters"]
BUF_KEYS = ["arg", "bytes", "backed_up", "bytes_read", "bytes_written", "read_basis",
            "write_basis"]


def check_collected(root, rel, kind, mode, warmup, passes, status="ok"):
    """The raw files of one collected launch: every opraw.h field there."""
    d = os.path.join(root, rel)
    check(os.path.isdir(d), "no directory " + d)
    if not os.path.isdir(d):
        return {}, {}
    dmode = stat.S_IMODE(os.stat(d).st_mode)
    check(dmode == 0o750, "%s has mode %o, not 750" % (d, dmode))
    check(not glob.glob(os.path.join(d, ".*.part")), "temporary files left in " + d)
    c = load(d, "context.json")
    m = load(d, "measure.json")
    for k in CONTEXT_KEYS:
        check(k in c, "%s: context.json has no %s" % (rel, k))
    check(c.get("kind") == kind, "%s: kind %s" % (rel, c.get("kind")))
    check((c.get("pid") or 0) > 0 and (c.get("tid") or 0) > 0, "%s: pid/tid" % rel)
    for k in DEVICE_KEYS:
        check(k in c.get("device", {}), "%s: device has no %s" % (rel, k))
    for k in ["name", "vendor", "version"]:
        check(c.get("platform", {}).get(k), "%s: platform has no %s" % (rel, k))
    prog = c.get("program", {})
    check(prog.get("origin") == "source" and prog.get("file") == "kernel.cl",
          "%s: program %s" % (rel, prog))
    src = os.path.join(d, "kernel.cl")
    check(os.path.exists(src) and os.path.getsize(src) == prog.get("bytes"),
          "%s: kernel.cl missing or not %s bytes" % (rel, prog.get("bytes")))
    if os.path.exists(src):
        check("__kernel void axpy" in open(src).read(), "%s: kernel.cl is not the source" % rel)
    check(prog.get("build_options") == "-cl-std=CL1.2",
          "%s: build options %r" % (rel, prog.get("build_options")))
    launches = c.get("launches", []) if kind == "range" else [c]
    for l in launches:
        w = l.get("work", {})
        check(w.get("dim") == 1 and len(w.get("global", [])) == 1,
              "%s: work %s" % (rel, w))
        for a in l.get("args", []):
            for k in ARG_KEYS:
                check(k in a, "%s: arg %s has no %s" % (rel, a.get("index"), k))
            if a.get("kind") == "buffer":
                check(a.get("buffer", {}).get("bytes", 0) > 0 and
                      "flags" in a["buffer"] and "sub_buffer_of" in a["buffer"],
                      "%s: buffer arg %s" % (rel, a))
            if a.get("kind") == "scalar":
                check(a.get("value_hex") and a.get("value") is not None,
                      "%s: scalar arg %s" % (rel, a))
    for k in MEASURE_KEYS:
        check(k in m, "%s: measure.json has no %s" % (rel, k))
    check(m.get("mode") == mode, "%s: mode %s" % (rel, m.get("mode")))
    check(m.get("status") == status, "%s: status %s (%s)" % (rel, m.get("status"),
                                                           m.get("error")))
    if status == "ok":
        check(len(m.get("pass_ns", [])) == passes and all(t > 0 for t in m["pass_ns"]),
              "%s: pass_ns %s" % (rel, m.get("pass_ns")))
        check(len(m.get("pass_queued_ns", [])) == passes, "%s: pass_queued_ns" % rel)
        check(len(m.get("warmup_ns", [])) == warmup, "%s: warmup_ns" % rel)
        check(m.get("warmup") == warmup and m.get("passes") == passes,
              "%s: warmup/passes %s/%s" % (rel, m.get("warmup"), m.get("passes")))
    for b in m.get("buffers", []):
        for k in BUF_KEYS:
            check(k in b, "%s: buffer %s has no %s" % (rel, b, k))
    ctr = m.get("counters", {})
    check(isinstance(ctr.get("supported"), bool), "%s: counters %s" % (rel, ctr))
    if ctr.get("supported") is False:
        check(len(ctr.get("reason", "")) > 10, "%s: counters without a reason" % rel)
    elif status == "ok":
        check(len(ctr.get("per_pass", [])) == passes, "%s: counters per pass" % rel)
    return c, m


def arg(c, i):
    return [a for a in c.get("args", []) if a.get("index") == i][0]


def buf(m, i):
    b = [b for b in m.get("buffers", []) if b.get("arg") == i]
    return b[0] if b else {}


def launches(msgs):
    return [(one(f, "name"), int(one(f, "index")), one(f, "gsize"), int(one(f, "ordinal")))
            for f in of_type(msgs, "launch")]


# ---------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------

def s_inert():
    """Preloaded without a channel: the library does nothing."""
    native = run_native("basic")
    rc, out = run_native("basic", {"LD_PRELOAD": LIB})
    same_output("basic", rc, out, native)


def s_not_socket():
    """KSCOPE_OP_CHANNEL naming a file that is not a socket, or in the
    old <fd>:<token> form (here the program's stdout): left alone."""
    native = run_native("basic")
    for v in ("ab" * 16 + ":/dev/null", "1:" + "ab" * 16, "ab" * 16 + ":relative"):
        rc, out = run_native("basic", {"LD_PRELOAD": LIB, "KSCOPE_OP_CHANNEL": v})
        same_output("basic", rc, out, native)


def s_no_opencl():
    """A program that never uses OpenCL never connects: no message at all."""
    native = run_native("nocl")
    rc, out, msgs, _ = run_chan("nocl", "nocl")
    same_output("nocl", rc, out, native)
    check(msgs == [], "messages %s" % msgs)


def s_kernel_all():
    """Kernel replay of every launch: results restored, raw files complete."""
    native = run_native("basic")
    rc, out, msgs, d = run_chan("basic", "all", ["--config", "mode=kernel",
                                                 "--config", "warmup=2",
                                                 "--config", "passes=3"])
    same_output("basic", rc, out, native)
    types = [m["type"] for m in msgs]
    check(types[0] == "hello" and types[1] == "opencl" and types[-1] == "bye",
          "message order %s" % types)
    hello = of_type(msgs, "hello")[0]
    check(one(hello, "version") == "2" and one(hello, "run") == "0" and
          int(one(hello, "ppid")) > 0, "hello %s" % hello)
    check(sorted(one(f, "name") for f in of_type(msgs, "kernel")) ==
          ["axpy", "blocksum", "scale"], "kernel messages %s" % of_type(msgs, "kernel"))
    want = [("axpy", 0, "4096:1:1", 0), ("axpy", 1, "4096:1:1", 1),
            ("scale", 2, "2048:1:1", 0), ("blocksum", 3, "4096:1:1", 0),
            ("axpy", 4, "4096:1:1", 2), ("scale", 5, "4096:1:1", 0),
            ("blocksum", 6, "4096:1:1", 1)]
    check(launches(msgs) == want, "launches %s" % launches(msgs))
    col = of_type(msgs, "collected")
    check(len(col) == 7 and all(one(f, "status") == "ok" for f in col), "collected %s" % col)
    pid = one(of_type(msgs, "hello")[0], "pid")
    for name, index, _, _ in want:
        check_collected(d, "%s/%s_%d" % (pid, name, index), "kernel", "kernel", 2, 3)
    # axpy_1: y is written (backed up, bytes changed), x is const.
    c, m = check_collected(d, pid + "/axpy_1", "kernel", "kernel", 2, 3)
    check(arg(c, 0).get("name") == "y" and arg(c, 0).get("kind") == "buffer",
          "axpy arg 0 %s" % arg(c, 0))
    check(arg(c, 2).get("value") == 1.5 and arg(c, 2).get("type_name") == "float",
          "axpy arg 2 (a, last set to 1.5) %s" % arg(c, 2))
    check(arg(c, 3).get("value") == 4096 and arg(c, 3).get("value_hex") == "00100000",
          "axpy arg 3 %s" % arg(c, 3))
    check(buf(m, 0).get("backed_up") is True and buf(m, 0).get("bytes_written", 0) > 0,
          "axpy y %s" % buf(m, 0))
    check(buf(m, 1).get("backed_up") is False and buf(m, 1).get("bytes_written") == 0,
          "axpy x %s" % buf(m, 1))
    check(m.get("backup_bytes") == 16384 and m.get("original_ns", 0) > 0,
          "axpy backup/original %s %s" % (m.get("backup_bytes"), m.get("original_ns")))
    # axpy_4 asks for its event on a queue without profiling: the
    # program's launch stays on its queue, untimed.
    c, m = check_collected(d, pid + "/axpy_4", "kernel", "kernel", 2, 3)
    check("original_ns" in m and m["original_ns"] is None,
          "axpy_4 original_ns %s (its event's queue does not profile)" % m.get("original_ns"))
    check(c.get("queue") == {"out_of_order": False, "profiling_by_program": False},
          "axpy_4 queue %s" % c.get("queue"))
    check(m.get("flush") is True and m.get("flush_bytes", 0) >= 8 << 20,
          "flush %s %s" % (m.get("flush"), m.get("flush_bytes")))
    # scale_2 runs on a sub-buffer.
    c, m = check_collected(d, pid + "/scale_2", "kernel", "kernel", 2, 3)
    check(arg(c, 0).get("buffer", {}).get("sub_buffer_of") == {"origin": 8192},
          "scale arg 0 %s" % arg(c, 0))
    # blocksum_3: a host-no-access output, a __constant and a __local arg.
    c, m = check_collected(d, pid + "/blocksum_3", "kernel", "kernel", 2, 3)
    check("CL_MEM_HOST_NO_ACCESS" in arg(c, 0).get("buffer", {}).get("flags", []),
          "blocksum arg 0 %s" % arg(c, 0))
    check(arg(c, 2).get("address") == "constant" and arg(c, 3).get("kind") == "local"
          and arg(c, 3).get("size") == 256, "blocksum args %s" % c.get("args"))
    check(c.get("work", {}).get("local") == [64], "blocksum work %s" % c.get("work"))
    check(buf(m, 0).get("backed_up") is True and buf(m, 0).get("bytes_written", 0) > 0,
          "blocksum out %s" % buf(m, 0))
    check(buf(m, 2).get("write_basis") == "none (__constant argument)",
          "blocksum w %s" % buf(m, 2))


def s_queues():
    """The program's queues keep their properties in kernel replay (the
    replays run on queues of the library's own) and get profiling in
    application replay; the launches are collected and timed either way."""
    native = run_native("queues")
    check(native[1].startswith("queue 0 profiling: off\nqueue 1 profiling: off\n"),
          "queues natively: %r" % native[1])
    rc, out, msgs, d = run_chan("queues", "qk", ["--config", "mode=kernel",
                                                 "--config", "warmup=1",
                                                 "--config", "passes=2"])
    same_output("queues", rc, out, native)
    pid = one(of_type(msgs, "hello")[0], "pid")
    for rel in ("axpy_0", "axpy_1"):
        _, m = check_collected(d, "%s/%s" % (pid, rel), "kernel", "kernel", 1, 2)
        check(m.get("original_ns", 0) > 0, "%s: original_ns %s" % (rel, m.get("original_ns")))
    rc, out, msgs, d = run_chan("queues", "qa", ["--config", "mode=application",
                                                 "--collect-name", "axpy"])
    check(rc == native[0] and out == native[1].replace("profiling: off", "profiling: on"),
          "queues in application replay: %r" % out)
    pid = one(of_type(msgs, "hello")[0], "pid")
    for rel in ("axpy_0", "axpy_1"):
        _, m = check_collected(d, "%s/%s" % (pid, rel), "kernel", "application", 0, 1)
        check(m.get("pass_ns") == [m.get("original_ns")] and m.get("original_ns", 0) > 0,
              "%s: %s" % (rel, m))


def s_filters():
    """skip, kernel_name with '|' and '*', and pass final=1."""
    native = run_native("basic")
    rc, out, msgs, d = run_chan("basic", "filt", [
        "--config", "mode=kernel", "--config", "skip=2", "--config", "warmup=0",
        "--config", "passes=1", "--config", "kernel_name=axpy|blocksum", "--collect", "1"])
    same_output("basic", rc, out, native)
    # Launches 0 and 1 skipped, scale filtered out; blocksum_3 collected,
    # then axpy_4 is answered final=1 and nothing more is asked.
    check(launches(msgs) == [("blocksum", 3, "4096:1:1", 0), ("axpy", 4, "4096:1:1", 2)],
          "launches %s" % launches(msgs))
    check(len(of_type(msgs, "kernel")) == 3, "kernel messages %s" % of_type(msgs, "kernel"))
    pid = one(of_type(msgs, "hello")[0], "pid")
    check(os.listdir(os.path.join(d, pid)) == ["blocksum_3"],
          "collected dirs %s" % os.listdir(os.path.join(d, pid)))
    check_collected(d, pid + "/blocksum_3", "kernel", "kernel", 0, 1)
    rc, out, msgs, d = run_chan("basic", "wild", [
        "--config", "mode=kernel", "--config", "kernel_name=*sum|sc", "--collect-name",
        "none"])
    same_output("basic", rc, out, native)
    check([(n, i) for n, i, _, _ in launches(msgs)] ==
          [("scale", 2), ("blocksum", 3), ("scale", 5), ("blocksum", 6)],
          "launches with *sum|sc %s" % launches(msgs))


def s_failed_replay():
    """A replay launch that fails: reported, memory restored, program unharmed."""
    env = {"KSCOPE_OP_TEST_FAIL_REPLAY": "axpy"}
    native = run_native("basic", env)
    rc, out, msgs, d = run_chan("basic", "fail", ["--config", "warmup=1",
                                                  "--config", "passes=2"], env)
    same_output("basic", rc, out, native)
    pid = one(of_type(msgs, "hello")[0], "pid")
    for f in of_type(msgs, "collected"):
        rel = one(f, "dir")
        if "/axpy_" in rel:
            check(one(f, "status") == "failed" and
                  "CL_OUT_OF_RESOURCES" in f.get("message", [""])[0],
                  "collected %s" % f)
            _, m = check_collected(d, rel, "kernel", "kernel", 1, 2, status="failed")
            check("CL_OUT_OF_RESOURCES" in m.get("error", ""), "error %s" % m.get("error"))
            check(m.get("pass_ns") == [] and m.get("original_ns") is None,
                  "failed measure %s" % m)
        else:
            check(one(f, "status") == "ok", "collected %s" % f)
    check(len(of_type(msgs, "collected")) == 7, "collected %d" % len(of_type(msgs, "collected")))
    check(os.path.isdir(os.path.join(d, pid, "axpy_0")), "no axpy_0 dir")


def s_user_event():
    """A launch waiting for a user event set later: no hang, reported, unharmed."""
    native = run_native("userevent")
    rc, out, msgs, d = run_chan("userevent", "ue", ["--config", "warmup=1",
                                                    "--config", "passes=1"])
    same_output("userevent", rc, out, native)
    col = of_type(msgs, "collected")
    check([one(f, "status") for f in col] == ["failed", "ok"], "collected %s" % col)
    if col:
        check("user event" in col[0].get("message", [""])[0], "message %s" % col[0])
        check_collected(d, one(col[0], "dir"), "kernel", "kernel", 1, 1, status="failed")


def s_closed_at_hello():
    """kscope gone before config: the program runs unprofiled."""
    native = run_native("basic")
    rc, out, msgs, d = run_chan("basic", "hello", ["--close-at", "hello"])
    same_output("basic", rc, out, native)
    check([m["type"] for m in msgs] == ["hello"], "messages %s" % msgs)
    check(not os.listdir(d), "files written: %s" % os.listdir(d))


def s_closed_mid_run():
    """kscope gone at the first launch: the program carries on unprofiled."""
    native = run_native("basic")
    rc, out, msgs, d = run_chan("basic", "mid", ["--close-at", "launch"])
    same_output("basic", rc, out, native)
    check([m["type"] for m in msgs][-1] == "launch", "messages %s" % msgs)
    check(not os.listdir(d), "files written: %s" % os.listdir(d))


def s_threads():
    """Two threads, two queues: replays serialized, results intact."""
    native = run_native("threads")
    rc, out, msgs, d = run_chan("threads", "thr", ["--config", "warmup=1",
                                                   "--config", "passes=2"])
    same_output("threads", rc, out, native)
    ls = launches(msgs)
    check(sorted(i for _, i, _, _ in ls) == list(range(24)), "indexes %s" % ls)
    check(sorted(o for _, _, _, o in ls) == list(range(24)), "ordinals %s" % ls)
    col = of_type(msgs, "collected")
    check(len(col) == 24 and all(one(f, "status") == "ok" for f in col), "collected %s" % col)
    tids = set()
    for f in col:
        c, _ = check_collected(d, one(f, "dir"), "kernel", "kernel", 1, 2)
        tids.add(c.get("tid"))
    check(len(tids) == 2, "launching threads %s" % tids)


def s_fork():
    """A forked child that never uses OpenCL never connects: one hello,
    one bye (the parent's)."""
    native = run_native("fork")
    rc, out, msgs, _ = run_chan("fork", "fork", ["--collect", "0"])
    same_output("fork", rc, out, native)
    types = [m["type"] for m in msgs]
    check(types.count("hello") == 1 and types.count("bye") == 1, "messages %s" % types)


def s_fork_cl():
    """A forked child whose first OpenCL use comes after the fork connects
    by itself (its own pid, launch indexes from 0), and so does its
    parent: both collected, the skip counted over the two, the output
    unchanged."""
    native = run_native("forkcl")
    rc, out, msgs, d = run_chan("forkcl", "forkcl", [
        "--config", "warmup=0", "--config", "passes=1", "--config", "skip=3"])
    same_output("forkcl", rc, out, native)
    hellos = of_type(msgs, "hello")
    check(len(hellos) == 2, "hellos %s" % hellos)
    if len(hellos) != 2:
        return
    child, parent = one(hellos[0], "pid"), one(hellos[1], "pid")
    check(one(hellos[0], "ppid") == parent and child != parent,
          "child %s of %s, parent %s" % (child, one(hellos[0], "ppid"), parent))
    check(len(of_type(msgs, "bye")) == 2, "byes %s" % of_type(msgs, "bye"))
    by_conn = {}
    for m in msgs:
        if m["type"] == "launch":
            by_conn.setdefault(m["conn"], []).append(int(one(m["fields"], "index")))
        if m["type"] == "kernel":
            by_conn.setdefault(("k", m["conn"]), []).append(one(m["fields"], "name"))
    # skip=3 over both processes: the child's first three launches run
    # unexamined, its last four and all seven of the parent's are asked.
    check(by_conn.get(0) == [3, 4, 5, 6] and by_conn.get(1) == list(range(7)),
          "launch indexes per connection %s" % by_conn)
    check(sorted(by_conn.get(("k", 0), [])) == sorted(by_conn.get(("k", 1), [])) ==
          ["axpy", "blocksum", "scale"], "kernel messages per connection %s" % by_conn)
    for pid, index in [(child, 3), (parent, 0), (parent, 6)]:
        rel = [one(f, "dir") for f in of_type(msgs, "collected")
               if one(f, "dir").startswith("%s/" % pid) and
               one(f, "dir").endswith("_%d" % index)]
        check(len(rel) == 1, "no collected launch %d of %s" % (index, pid))
        if rel:
            c, _ = check_collected(d, rel[0], "kernel", "kernel", 0, 1)
            check(str(c.get("pid")) == pid, "%s: pid %s" % (rel[0], c.get("pid")))


def s_application():
    """Application replay: run 0 collects without replay, run 1 times targets."""
    native = run_native("basic")
    rc, out, msgs, d = run_chan("basic", "app0", ["--config", "mode=application",
                                                  "--collect-name", "axpy"])
    same_output("basic", rc, out, native)
    pid = one(of_type(msgs, "hello")[0], "pid")
    col = sorted(one(f, "dir") for f in of_type(msgs, "collected"))
    check(col == ["%s/axpy_%d" % (pid, i) for i in (0, 1, 4)], "collected %s" % col)
    for rel in col:
        _, m = check_collected(d, rel, "kernel", "application", 0, 1)
        check(m.get("pass_ns") == [m.get("original_ns")] and m.get("backup_bytes") == 0,
              "%s: %s" % (rel, m))
    targets = os.path.join(WORK, "targets")
    with open(targets, "w") as f:
        f.write("axpy,4096:1:1,0\naxpy,4096:1:1,2\nscale,2048:1:1,0\n")
    rc, out, msgs, d = run_chan("basic", "app1", [
        "--run", "1", "--config", "mode=application", "--config", "targets=" + targets])
    same_output("basic", rc, out, native)
    check(one(of_type(msgs, "hello")[0], "run") == "1", "hello run")
    check(not of_type(msgs, "launch"), "launch messages in run 1")
    t = of_type(msgs, "timing")
    check(sorted(one(f, "target") for f in t) ==
          ["axpy,4096:1:1,0", "axpy,4096:1:1,2", "scale,2048:1:1,0"], "timing %s" % t)
    check(all(int(one(f, "ns")) > 0 for f in t), "timing ns %s" % t)


def s_range():
    """Range replay: the launches of a collected range replayed as a whole."""
    native = run_native("range")
    rc, out, msgs, d = run_chan("range", "range", [
        "--config", "mode=range", "--config", "mstx=1", "--config", "mstx_include=step",
        "--config", "skip=2", "--config", "warmup=1", "--config", "passes=2"])
    same_output("range", rc, out, native)
    # Ranges: setup (excluded), step, step, step; skip=2 passes over the
    # first two ranges started.
    ls = launches(msgs)
    check(ls == [("step", 0, "0:0:0", 1), ("step", 1, "0:0:0", 2)], "launches %s" % ls)
    check(all(f.get("range") == ["step"] for f in of_type(msgs, "launch")), "range keys")
    pid = one(of_type(msgs, "hello")[0], "pid")
    for n in (0, 1):
        c, m = check_collected(d, "%s/step_%d" % (pid, n), "range", "range", 1, 2)
        check([l.get("name") for l in c.get("launches", [])] == ["axpy", "scale", "axpy"],
              "range launches %s" % c.get("launches"))
        check(m.get("original_ns") is None and buf(m, 0).get("launch") == 0 and
              buf(m, 0).get("bytes_written", 0) > 0, "range buffers %s" % m.get("buffers"))


def s_mstx_kernel():
    """Kernel replay with mstx: only launches inside included ranges."""
    native = run_native("range")
    rc, out, msgs, _ = run_chan("range", "mstx", [
        "--config", "mode=kernel", "--config", "mstx=1", "--config", "mstx_include=st",
        "--collect", "0"])
    same_output("range", rc, out, native)
    # Launch 0 is in "setup", launch 10 after every range; --collect 0
    # answers the first with final=1, so only it is asked.
    ls = launches(msgs)
    check([i for _, i, _, _ in ls] == [1], "launches %s" % ls)
    check(of_type(msgs, "launch")[0].get("range") == ["step"], "range key")
    rc, out, msgs, _ = run_chan("range", "mstx2", [
        "--config", "mode=kernel", "--config", "mstx=1", "--config", "mstx_include=st",
        "--collect-name", "none"])
    same_output("range", rc, out, native)
    check([i for _, i, _, _ in launches(msgs)] == list(range(1, 10)),
          "launches %s" % launches(msgs))


SCENARIOS = {k[2:]: v for k, v in globals().items() if k.startswith("s_")}


def main():
    if SCENARIO not in SCENARIOS:
        print("unknown scenario %s; known: %s" % (SCENARIO, " ".join(SCENARIOS)),
              file=sys.stderr)
        return 2
    SCENARIOS[SCENARIO]()
    if failures:
        print("%d check(s) failed; files in %s" % (len(failures), WORK), file=sys.stderr)
        return 1
    subprocess.run(["rm", "-rf", WORK])
    return 0


if __name__ == "__main__":
    sys.exit(main())
