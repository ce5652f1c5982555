#!/usr/bin/env python3
"""Runs one command and prints its wall time, for bench/op.sh.

    timeit.py STDOUT STDERR COMMAND [ARGS...]

The command's standard output and error go to the files STDOUT and
STDERR; the time from just before it starts to just after it has been
waited for is printed in seconds on this script's standard output, and
the script exits with the command's exit status (128 + N after signal N).
Timing from here rather than from bash's clock leaves out bash's own
fork and wait, which on a shared machine add a few milliseconds that vary
from run to run.
"""
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4:
        print("usage: timeit.py STDOUT STDERR COMMAND [ARGS...]", file=sys.stderr)
        return 2
    with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
        t0 = time.perf_counter()
        p = subprocess.run(sys.argv[3:], stdout=out, stderr=err)
        t1 = time.perf_counter()
    print("%.6f" % (t1 - t0))
    return p.returncode if p.returncode >= 0 else 128 - p.returncode


if __name__ == "__main__":
    sys.exit(main())
