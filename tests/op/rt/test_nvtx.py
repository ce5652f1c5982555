#!/usr/bin/env python3
"""Tests of libkscope-op.so's NVTX injection (src/op/rt/oprt_nvtx.c), one
scenario per run (tests/op/rt/CMakeLists.txt).

  test_nvtx.py SCENARIO LIB RT_NVTX CHAN_PY

rt_nvtx (rt_nvtx.c) makes every kind of NVTX range call and prints what
each returns; chan.py plays kscope's side of the channel.  No OpenCL is
needed: in range replay each range is announced (`launch`) as it starts.

  mapping   range replay, ranges on: the names kscope is told, in order;
            what push and pop return; a range a thread left pushed ends
            when the thread exits (it is collected, and the collection
            reports the end, not "still open at exit")
  inert     NVTX_INJECTION64_PATH naming the library, no kscope; and
            under kscope with ranges off (kernel replay, mstx=0): the
            library declines, NVTX stays a no-op, the output is the
            native one and no range reaches kscope
"""
import json
import os
import subprocess
import sys
import tempfile

SCENARIO, LIB, PROG, CHAN = sys.argv[1:5]
WORK = tempfile.mkdtemp(prefix="ks_oprt_nvtx_")
failures = []

# Without a tool: push and pop return -2 (NVTX_NO_PUSH_POP_TRACKING),
# start returns 0, domains and registered strings are NULL.
NATIVE = """push a0: -2
push a1: -2
push wide: -2
pop: -2
pop: -2
pop: -2
pop empty: -2
start ids: 0 0
push ex_ascii: -2
push ex_wide: -2
domain handles: same
registered handles: same
pop: -2
pop: -2
domain push d_a: -2
push g: -2
domain pop: -2
domain pop empty: -2
pop: -2
thread push t_open: -2
rt_nvtx: done
"""

TRACKED = """push a0: 0
push a1: 1
push wide: 2
pop: 2
pop: 1
pop: 0
pop empty: -1
start ids: distinct
push ex_ascii: 0
push ex_wide: 1
domain handles: same
registered handles: same
pop: 1
pop: 0
domain push d_a: 0
push g: 0
domain pop: 0
domain pop empty: -1
pop: 0
thread push t_open: 0
rt_nvtx: done
"""

RANGES = ["a0", "a1", "wide \u00e9", "s0", "s1", "ex_ascii", "ex_wide", "reg",
          "(unnamed)", "(unnamed)", "(unnamed)", "d_a", "g", "t_open", "last"]


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def run(env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([PROG], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=100)
    sys.stderr.write(p.stderr.decode())
    return p.returncode, p.stdout.decode()


def run_chan(name, args, env):
    """rt_nvtx under chan.py: (status, stdout, messages)."""
    d = os.path.join(WORK, name)
    log = os.path.join(WORK, name + ".log")
    cmd = [sys.executable, CHAN, "--lib", LIB, "--dir", d, "--log", log, *args]
    for k, v in env.items():
        cmd += ["--env", "%s=%s" % (k, v)]
    cmd += ["--", PROG]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, timeout=100)
    msgs = [json.loads(line) for line in open(log)]
    return p.returncode, p.stdout.decode(), msgs


def of_type(msgs, t):
    return [m["fields"] for m in msgs if m["type"] == t]


def s_mapping():
    rc, out, msgs = run_chan("mapping", [
        "--config", "mode=range", "--config", "mstx=1", "--collect-name", "t_open"],
        {"NVTX_INJECTION64_PATH": LIB})
    check(rc == 0, "exit status %d" % rc)
    check(out == TRACKED, "output under kscope:\n%s--- expected:\n%s" % (out, TRACKED))
    names = [f["name"][0] for f in of_type(msgs, "launch")]
    check(names == RANGES, "ranges announced %s, expected %s" % (names, RANGES))
    check([f["index"][0] for f in of_type(msgs, "launch")] ==
          [str(i) for i in range(len(RANGES))], "range indexes %s" % of_type(msgs, "launch"))
    check(all(f.get("range") == f.get("name") for f in of_type(msgs, "launch")),
          "range keys %s" % of_type(msgs, "launch"))
    # t_open was collected; its end came when its thread exited.  It had
    # no launch, so its collection may fail, but not as a range still
    # open at exit.
    col = of_type(msgs, "collected")
    check(len(col) == 1 and col[0]["dir"][0].endswith("/t_open_13"), "collected %s" % col)
    check(not any("still open" in m for f in col for m in f.get("message", [])),
          "t_open did not end with its thread: %s" % col)


def s_inert():
    native = run()
    check(native == (0, NATIVE), "native run: %r" % (native,))
    # The library named by NVTX_INJECTION64_PATH without kscope (not even
    # preloaded: NVTX loads it, it declines).
    got = run({"NVTX_INJECTION64_PATH": LIB})
    check(got == native, "with NVTX_INJECTION64_PATH alone: %r" % (got,))
    got = run({"NVTX_INJECTION64_PATH": LIB, "LD_PRELOAD": LIB})
    check(got == native, "preloaded without a channel: %r" % (got,))
    # Under kscope with ranges off.
    rc, out, msgs = run_chan("off", ["--config", "mode=kernel", "--config", "mstx=0"],
                             {"NVTX_INJECTION64_PATH": LIB})
    check((rc, out) == native, "under kscope, ranges off: %r" % ((rc, out),))
    check([m["type"] for m in msgs] == ["hello", "bye"], "messages %s" % msgs)


SCENARIOS = {k[2:]: v for k, v in globals().items() if k.startswith("s_")}


def main():
    if SCENARIO not in SCENARIOS:
        print("unknown scenario %s; known: %s" % (SCENARIO, " ".join(SCENARIOS)),
              file=sys.stderr)
        return 2
    SCENARIOS[SCENARIO]()
    if failures:
        print("%d failure(s); kept %s" % (len(failures), WORK), file=sys.stderr)
        return 1
    subprocess.run(["rm", "-rf", WORK])
    return 0


if __name__ == "__main__":
    sys.exit(main())
