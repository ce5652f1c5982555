#!/usr/bin/env python3
"""A Python program whose workers run OpenCL programs, for tests/op/e2e.py
(scenario tree_mp): with multiprocessing's start method METHOD (fork or
spawn), a pool of two workers each runs PROGRAM ARGS... with
subprocess and returns its output; the parent prints the outputs in
order.  pyopencl is not needed.

    mp_tree.py METHOD PROGRAM [ARGS...]
"""
import multiprocessing
import subprocess
import sys


def run(argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout.decode()


def main():
    method, argv = sys.argv[1], sys.argv[2:]
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        outs = pool.map(run, [argv, argv])
    for i, out in enumerate(outs):
        sys.stdout.write("worker %d:\n%s" % (i, out))


if __name__ == "__main__":
    main()
