"""What kscope's Python end-to-end tests share (tests/*/*.py).

Failure and check(): a test step that does not hold raises Failure with a
message saying what was expected and what came; each script catches it
in its main loop and prints FAIL.

TempDirs: temporary directories made during a test and removed at its
end.  kscope makes its run directories and deliverables read-only, so
remove() first gives the owner back the right to empty each directory.

opencl_platforms(): how many OpenCL platforms this machine has, for the
tests that need one.

run_kscope() and run_outputs(): one kscope run into a fresh output
directory, and the report.json, findings.sarif and report.txt it wrote.
"""
import ctypes
import json
import os
import shutil
import subprocess
import tempfile


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


class TempDirs:
    """tmpdir = TempDirs("ks-op-e2e-"); d = tmpdir(); ... tmpdir.remove()"""

    def __init__(self, prefix):
        self.prefix = prefix
        self.paths = []

    def __call__(self):
        d = tempfile.mkdtemp(prefix=self.prefix)
        self.paths.append(d)
        return d

    def remove(self):
        for d in self.paths:
            # top-down: a directory is opened up before it is entered
            for root, dirs, _ in os.walk(d):
                for x in dirs:
                    # not through a link: its target is not the test's
                    if not os.path.islink(os.path.join(root, x)):
                        os.chmod(os.path.join(root, x), 0o700)
            shutil.rmtree(d, ignore_errors=True)
        self.paths = []


def run_kscope(kscope, command, out, opts, argv, env=None, timeout=600):
    """kscope COMMAND -o OUT OPTS -- ARGV: (exit, stdout, stderr, the one run
    directory kscope made in OUT)."""
    cmd = [kscope, command, "-o", out, *opts, "--", *argv]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       env=env)
    err = p.stderr.decode(errors="replace")
    runs = [d for d in os.listdir(out) if d.startswith(command + "_")]
    check(len(runs) == 1, f"{cmd}: expected one run directory, got {runs}; stderr:\n{err}")
    return p.returncode, p.stdout.decode(errors="replace"), err, os.path.join(out, runs[0])


def run_outputs(rundir):
    """report.json and findings.sarif parsed, report.txt's text."""
    with open(os.path.join(rundir, "report.json")) as f:
        rep = json.load(f)
    with open(os.path.join(rundir, "findings.sarif")) as f:
        sarif = json.load(f)
    with open(os.path.join(rundir, "report.txt")) as f:
        txt = f.read()
    return rep, sarif, txt


def opencl_platforms():
    """How many OpenCL platforms the ICD loader finds (0 without one)."""
    try:
        lib = ctypes.CDLL("libOpenCL.so.1")
    except OSError:
        return 0
    n = ctypes.c_uint32(0)
    if lib.clGetPlatformIDs(0, None, ctypes.byref(n)) != 0:
        return 0
    return n.value
