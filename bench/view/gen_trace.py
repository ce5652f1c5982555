#!/usr/bin/env python3
"""Writes a synthetic Trace Event Format trace for bench/view.sh.

  usage: gen_trace.py OUT.json EVENTS [--bin OUT.bin --bin-mb MB]

EVENTS events over 4 processes x 4 threads: per thread, a stream of
top-level "X" slices holding nested children down to depth 5 (names from
a small set, a few args each), and a flow ("s"/"f" with "bp":"e") every
50 slices to a slice of another thread.  Deterministic (fixed seed).

With --bin, also writes a visualize_data.bin holding one 0x02 (trace)
block of about MB megabytes, the same kind of events, in the container
layout of docs/formats.md (12-byte header, payload, zero padding).
"""
import random
import struct
import sys

NAMES = ["matmul", "softmax", "load", "store", "sync", "reduce", "gelu", "copy"]
PROCS, THREADS = 4, 4


def events(n, rnd):
    """Yields the JSON text of n events (about n: flows count as events)."""
    tracks = [(p, t) for p in range(1, PROCS + 1) for t in range(1, THREADS + 1)]
    for p in range(1, PROCS + 1):
        yield ('{"ph":"M","name":"process_name","pid":%d,"args":{"name":"device %d"}}'
               % (p, p - 1))
        for t in range(1, THREADS + 1):
            yield ('{"ph":"M","name":"thread_name","pid":%d,"tid":%d,'
                   '"args":{"name":"stream %d"}}' % (p, t, t))
    per = max(1, n // len(tracks))
    flow = 0
    for (p, t) in tracks:
        ts = 0.0
        made = 0
        while made < per:
            # one tree: a root and nested children, depth-first
            dur = rnd.uniform(20, 400)
            todo = [(ts, dur, 0)]
            while todo and made < per:
                start, d, depth = todo.pop()
                name = NAMES[rnd.randrange(len(NAMES))]
                yield ('{"ph":"X","name":"%s","cat":"op","pid":%d,"tid":%d,"ts":%.3f,'
                       '"dur":%.3f,"args":{"pc_addr":"0x%x","code":"kernel.c:%d",'
                       '"bytes":%d}}' % (name, p, t, start, d, rnd.randrange(1 << 30),
                                         rnd.randrange(1, 500), rnd.randrange(1 << 20)))
                made += 1
                if made % 50 == 0:
                    q, u = tracks[rnd.randrange(len(tracks))]
                    flow += 1
                    yield ('{"ph":"s","name":"dep","cat":"dep","id":%d,"pid":%d,"tid":%d,'
                           '"ts":%.3f}' % (flow, p, t, start))
                    yield ('{"ph":"f","bp":"e","name":"dep","cat":"dep","id":%d,"pid":%d,'
                           '"tid":%d,"ts":%.3f}' % (flow, q, u, start + d))
                    made += 2
                if depth < 5 and d > 4:
                    k = rnd.randrange(0, 4)
                    c = start + d * 0.05
                    for _ in range(k):
                        cd = d * rnd.uniform(0.05, 0.2)
                        if c + cd > start + d:
                            break
                        todo.append((c, cd, depth + 1))
                        c += cd + d * 0.02
            ts += dur + rnd.uniform(0, 30)


def write_trace(f, n, rnd):
    f.write('{"displayTimeUnit":"ns","traceEvents":[\n')
    first = True
    count = 0
    for e in events(n, rnd):
        f.write(e if first else ",\n" + e)
        first = False
        count += 1
    f.write("\n]}\n")
    return count


class Counter:
    """A file-like object counting what is written to a list of chunks."""

    def __init__(self):
        self.chunks = []
        self.size = 0

    def write(self, s):
        b = s.encode()
        self.chunks.append(b)
        self.size += len(b)


def write_bin(path, mb, rnd):
    # about 150 bytes an event
    n = int(mb * 1e6 / 155)
    c = Counter()
    write_trace(c, n, rnd)
    payload = b"".join(c.chunks)
    pad = (4 - len(payload) % 4) % 4
    with open(path, "wb") as f:
        f.write(struct.pack("<QBBBB", len(payload) + pad, 0x02, pad, 0x5A, 0x5A))
        f.write(payload)
        f.write(b"\0" * pad)
    return n, len(payload)


def main():
    args = sys.argv[1:]
    if len(args) not in (2, 6) or (len(args) == 6 and (args[2] != "--bin" or args[4] != "--bin-mb")):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    rnd = random.Random(8)
    with open(args[0], "w") as f:
        count = write_trace(f, int(args[1]), rnd)
    print("%s: %d events" % (args[0], count))
    if len(args) == 6:
        n, size = write_bin(args[3], float(args[5]), rnd)
        print("%s: a 0x02 block of %d bytes (~%d events)" % (args[3], size, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
