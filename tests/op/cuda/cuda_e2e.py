#!/usr/bin/env python3
"""kscope op on CUDA programs on a machine where CUDA cannot run.

    cuda_e2e.py KSCOPE BUILD_DIR SCENARIO

Scenarios:
  nodriver  every example of examples/cuda, with no libcuda.so.1 to be
            found: the program's standard output and exit status are
            those of its native run, its own error message is there, and
            kscope says in exactly one line that the program uses CUDA
            and that libcuda.so.1 is missing.
  stub      the same with the CUDA toolkit's stub library found as
            libcuda.so.1 (LD_LIBRARY_PATH): kscope's runtime loads it,
            and says it is the stub, not a driver.
  notcuda   /bin/true: kscope does not claim the program uses CUDA.

Exits 77 (skipped) where the examples were not built (no nvcc), or where
this machine has a working CUDA driver (tests/gpu/run.sh covers that).
"""
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
KSCOPE, BUILD, SCENARIO = sys.argv[1:4]
EXAMPLES = ["vadd", "matmul", "reduce", "structptr", "streams", "graph", "ranges"]
SMALL = {"matmul": "64"}   # keep the CPU reference product short


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def driver_works():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return cuda.cuInit(0) == 0


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KSCOPE_") and k != "LD_PRELOAD"}
    env.update(extra or {})
    return env


def run(argv, env):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def example(name):
    return os.path.join(BUILD, "examples", "cuda", name)


def compare(name, env, want):
    """Runs example name natively and under kscope op with env; want: a
    regular expression the one kscope line about CUDA must match."""
    argv = [example(name)] + ([SMALL[name]] if name in SMALL else [])
    nat = run(argv, env)
    check(nat.returncode == 3,
          f"{name}: native run exited {nat.returncode}, not 3 (no usable CUDA):\n{nat.stderr}")
    out = tempfile.mkdtemp(prefix="ks_cuda_e2e_")
    try:
        r = run([KSCOPE, "op", "-o", out, "--", *argv], env)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    why = f"\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    check(r.returncode == nat.returncode,
          f"{name}: kscope op exited {r.returncode}, the program alone {nat.returncode}" + why)
    check(r.stdout == nat.stdout, f"{name}: standard output differs from the native run" + why)
    own = [l for l in nat.stderr.splitlines() if l.strip()]
    for line in own:
        check(line in r.stderr.splitlines(), f"{name}: the program's line {line!r} is missing" + why)
    cuda_lines = [l for l in r.stderr.splitlines() if l.startswith("kscope") and "CUDA" in l]
    check(len(cuda_lines) == 1, f"{name}: {len(cuda_lines)} kscope lines about CUDA, not 1" + why)
    check(re.search(want, cuda_lines[0]), f"{name}: {cuda_lines[0]!r} does not match {want!r}")
    check("never used" not in r.stderr, f"{name}: kscope says the program never used CUDA" + why)


def nodriver():
    for name in EXAMPLES:
        compare(name, clean_env(), r"uses CUDA, but no libcuda\.so\.1 .*not installed")


def stub():
    stubs = sorted(glob.glob("/usr/local/cuda*/lib64/stubs/libcuda.so") +
                   glob.glob("/usr/local/cuda*/targets/*/lib/stubs/libcuda.so"))
    if not stubs:
        print("skip stub: no libcuda.so stub in /usr/local/cuda*")
        sys.exit(SKIP)
    d = tempfile.mkdtemp(prefix="ks_cuda_stub_")
    try:
        os.symlink(stubs[0], os.path.join(d, "libcuda.so.1"))
        for name in ["vadd", "structptr"]:
            compare(name, clean_env({"LD_LIBRARY_PATH": d}), r"uses CUDA, but .*stub")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def notcuda():
    out = tempfile.mkdtemp(prefix="ks_cuda_e2e_")
    try:
        r = run([KSCOPE, "op", "-o", out, "--", "/bin/true"], clean_env())
    finally:
        shutil.rmtree(out, ignore_errors=True)
    check(r.returncode == 1, f"/bin/true: kscope op exited {r.returncode}, not 1")
    check("uses CUDA" not in r.stderr and re.search(r"never used OpenCL or CUDA", r.stderr),
          f"/bin/true: wrong explanation:\n{r.stderr}")


def main():
    if not all(os.access(example(n), os.X_OK) for n in EXAMPLES):
        print(f"skip {SCENARIO}: the CUDA examples were not built (no nvcc)")
        sys.exit(SKIP)
    if SCENARIO != "notcuda" and driver_works():
        print(f"skip {SCENARIO}: this machine has a working CUDA driver")
        sys.exit(SKIP)
    {"nodriver": nodriver, "stub": stub, "notcuda": notcuda}[SCENARIO]()


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print(f"FAIL {SCENARIO}: {e}")
        sys.exit(1)
    print(f"ok {SCENARIO}")
