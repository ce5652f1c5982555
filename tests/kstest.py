"""What kscope's Python end-to-end tests share (tests/*/*.py).

Failure and check(): a test step that does not hold raises Failure with a
message saying what was expected and what came; each script catches it
in its main loop and prints FAIL.

TempDirs: temporary directories made during a test and removed at its
end.  kscope makes its run directories and deliverables read-only, so
remove() first gives the owner back the right to empty each directory.

opencl_platforms(): how many OpenCL platforms this machine has, for the
tests that need one.
"""
import ctypes
import os
import shutil
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
                    os.chmod(os.path.join(root, x), 0o700)
            shutil.rmtree(d, ignore_errors=True)
        self.paths = []


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
