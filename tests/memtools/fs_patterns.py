"""Checks of `kscope falseshare` on examples/threads/sharing_patterns,
shared by the Valgrind front end's tests (e2e.py) and the compiled front
end's (rt/test_rt.py): the verdicts that need byte granularity and the
--min-writes threshold (docs/memtools.md), asserted on report.json.

Then the suite of false-sharing bugs, each with its fix (MODE and
MODE_fixed): for a bug, exactly the right objects flagged false, named
by their symbol (a heap block: its allocation stack at the marked
calloc/malloc line), the threads and the bytes each wrote in every line,
and the marked hot store among the objects' contexts; for a fix, no
false sharing at all; `atomic_counter` true sharing only, `readonly`
neither.  The per-variable and per-field split of each falsely shared
line (`parts`, docs/formats.md) is checked by one parts_MODE helper per
bug, apart from the rest.  The heap modes' lines depend on where the
allocator put the block (natively 16 bytes into a line, under Valgrind
often on a line): the expected lines are computed from the block's
address in the report.

check_pattern(mode, run, n) runs one mode; `run(argv_tail, opts, env,
expect_exit)` runs kscope falseshare on sharing_patterns with the given
arguments and returns its report.json as a dict (the caller knows which
front end and which binary); n is the iteration count.  PAIRS lists the
(bug, fix) modes, for a front end that measures the cost of each.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from kstest import check  # noqa: E402

FINDINGS = 100  # falseshare's exit status with findings
USAGE = 2       # a bad command line
SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "examples", "threads", "sharing_patterns.c")
FNAME = os.path.basename(SOURCE)
LINE = 64
MIN_WRITES = 100  # falseshare's default --min-writes
# As in sharing_patterns.c.
NTHREADS = 4
BINS = 10
SPLIT_LEN = 4 * 100 + 10


def fs_objects(rep):
    return rep["false_sharing"]["objects"]


def one_object(rep, name, mode):
    objs = fs_objects(rep)
    check(len(objs) == 1 and (objs[0].get("variable") or {}).get("name") == name,
          f"{mode}: expected false sharing on {name} alone, got "
          f"{[o['name'] for o in objs]}")
    return objs[0]


def writers(line, n):
    """Bytes written per thread that wrote the line n times or more."""
    check(line["word_size"] == 1, f"words of {line['word_size']} bytes, expected bytes")
    return sorted(tuple(t["write_words"]) for t in line["threads"] if t["writes"] >= n)


def flags(run, n):
    rep = run([str(n)], [], None, FINDINGS)
    o = one_object(rep, "flags", "flags")
    check(o["verdict"] == "false" and o["size"] == 4,
          f"flags: verdict {o['verdict']}, size {o['size']}")
    ln = o["lines"][0]
    check(ln["verdict"] == "false" and ln["offset_in_object"] == 0,
          f"flags: line verdict {ln['verdict']} at {ln['offset_in_object']}")
    w = writers(ln, n)
    check(w == [(0,), (1,), (2,), (3,)],
          f"flags: expected each thread to write its own byte, got {w}")
    check(not rep["true_sharing"], f"flags: true sharing reported: "
          f"{[t.get('name') for t in rep['true_sharing']]}")


def samebyte(run, n):
    rep = run([str(n)], [], None, 0)
    check(not fs_objects(rep), f"samebyte: reported as false sharing: "
          f"{[o['name'] for o in fs_objects(rep)]}")
    tl = [t for t in rep["true_sharing"] if (t.get("name") or "").startswith("shared_flag ")]
    check(len(tl) == 1 and tl[0]["verdict"] == "true",
          f"samebyte: shared_flag not truly shared: "
          f"{[(t.get('name'), t['verdict']) for t in rep['true_sharing']]}")
    w = [t["write_words"] for t in tl[0]["threads"] if t["writes"] >= n]
    check(len(w) == 4 and all(x == [0] for x in w),
          f"samebyte: expected 4 threads writing byte 0, got {w}")


def readmostly(run, n):
    # The default threshold (100 writes by each of two threads): one store
    # per thread next to the table is not false sharing.
    rep = run([str(n)], [], None, 0)
    sm = rep["summary"]
    check(rep["false_sharing"]["false_lines"] == 0 and not fs_objects(rep),
          f"readmostly: reported as false sharing: {[o['name'] for o in fs_objects(rep)]}")
    check(sm.get("min_writes") == 100 and sm.get("read_mostly_lines", 0) >= 1,
          f"readmostly: summary min_writes {sm.get('min_writes')}, read_mostly_lines "
          f"{sm.get('read_mostly_lines')}")
    # No threshold: the line's pattern alone says false sharing, as before.
    rep = run([str(n)], ["--min-writes", "0"], None, FINDINGS)
    o = one_object(rep, "lookup", "readmostly --min-writes 0")
    check(o["verdict"] == "false", f"readmostly --min-writes 0: verdict {o['verdict']}")
    check(rep["summary"].get("read_mostly_lines") == 0 and rep["summary"]["min_writes"] == 0,
          f"readmostly --min-writes 0: summary {rep['summary']}")
    # The environment variable sets it too.
    rep = run([str(n)], [], {"KSCOPE_MIN_WRITES": "0"}, FINDINGS)
    one_object(rep, "lookup", "readmostly KSCOPE_MIN_WRITES=0")


def counters(run, n):
    rep = run([str(n)], [], None, FINDINGS)
    o = one_object(rep, "slots", "counters")
    check(o["verdict"] == "false" and o["size"] == 32,
          f"counters: verdict {o['verdict']}, size {o['size']}")
    w = writers(o["lines"][0], n)
    check(w == [tuple(range(8 * i, 8 * i + 8)) for i in range(4)],
          f"counters: expected each thread to write its own 8 bytes, got {w}")
    check(rep["summary"].get("read_mostly_lines") == 0,
          f"counters: read-mostly lines {rep['summary'].get('read_mostly_lines')}")


# ---------------------------------------------------------------------
# Helpers of the bug/fix suite
# ---------------------------------------------------------------------

def tagged_line(tag):
    """The line number of sharing_patterns.c's line carrying `/* TAG */`
    (e.g. "FALSE SHARING: fields", "ALLOC: heap_split")."""
    with open(SOURCE) as f:
        for n, text in enumerate(f, 1):
            if re.search(r"/\*\s*" + re.escape(tag) + r"\s*\*/", text):
                return n
    check(False, f"{SOURCE}: no /* {tag} */ marker")


def frame_in_source(stack):
    """The first frame of stack in sharing_patterns.c, or None (clang
    names a file relative to the compilation directory, gcc by its base
    name: compare base names)."""
    for fr in stack or []:
        if os.path.basename(fr.get("file") or "") == FNAME:
            return fr
    return None


def objects_named(rep, names, mode):
    """The false-sharing objects, which must be the globals `names`
    exactly, each flagged false; {name: object}."""
    objs = fs_objects(rep)
    got = sorted((o.get("variable") or {}).get("name") or o["name"] for o in objs)
    check(got == sorted(names), f"{mode}: expected false sharing on {sorted(names)}, got {got}")
    for o in objs:
        check(o["verdict"] == "false" and o["variable"]["kind"] == "global",
              f"{mode}: {o['name']}: verdict {o['verdict']}, kind {o['variable']['kind']}")
    return {o["variable"]["name"]: o for o in objs}


def heap_object(rep, mode):
    """The one false-sharing object, a heap block allocated at the line
    marked `ALLOC: mode`."""
    objs = fs_objects(rep)
    check(len(objs) == 1 and (objs[0].get("variable") or {}).get("kind") == "heap",
          f"{mode}: expected false sharing on one heap block, got {[o['name'] for o in objs]}")
    o = objs[0]
    want = tagged_line("ALLOC: " + mode)
    fr = frame_in_source(o["variable"].get("alloc_stack"))
    check(o["verdict"] == "false" and fr is not None and fr.get("line") == want,
          f"{mode}: verdict {o['verdict']}, allocation at {FNAME}:{fr and fr.get('line')}, "
          f"expected line {want}")
    return o


def hot_store_seen(o, mode):
    """The line marked `FALSE SHARING: mode` is among o's contexts."""
    want = tagged_line("FALSE SHARING: " + mode)
    # A frame may have a file and no line: clang's line-0 code (spills,
    # loop set-up) under Valgrind.
    got = sorted({fr.get("line") for fr in (frame_in_source(c["stack"]) for c in o["contexts"])
                  if fr and fr.get("line")})
    check(want in got, f"{mode}: {FNAME}:{want} not among {o['name']}'s contexts {got}")


def line_writers(line, mode, min_writes=MIN_WRITES):
    """{tid: (bytes written, writes)} of the threads that wrote the line
    min_writes times or more (the main thread's few start-up stores left
    out); the line must be false sharing, in bytes."""
    check(line["word_size"] == 1, f"{mode}: words of {line['word_size']} bytes")
    check(line["verdict"] == "false", f"{mode}: line at {line['offset_in_object']} of "
          f"the object: verdict {line['verdict']}")
    return {t["tid"]: (tuple(t["write_words"]), t["writes"]) for t in line["threads"]
            if t["writes"] >= min_writes}


def span(lo, n):
    return tuple(range(lo, lo + n))


def no_false(rep, mode):
    objs = fs_objects(rep)
    check(rep["false_sharing"]["false_lines"] == 0 and not objs,
          f"{mode}: false sharing reported: {[o['name'] for o in objs]}")
    check(not rep["true_sharing"], f"{mode}: true sharing reported: "
          f"{[t.get('name') for t in rep['true_sharing']]}")


def fixed(mode):
    """The check of a fix: nothing falsely (or truly) shared."""
    def check_fix(run, n):
        no_false(run([str(n)], [], None, 0), mode)
    return check_fix


def heap_lines(o, ranges, mode):
    """Checks a heap object's lines against the threads' byte ranges
    [(lo, hi)] in the block, thread i the i-th: the lines reported are
    those where two ranges or more meet, given where the block is, each
    thread writing its own bytes of the line.  Returns [(line, {tid:
    (lo, hi)})]: the block bytes each writer wrote, for parts_heap."""
    base = int(o["addr"], 16)
    first = base // LINE * LINE
    want = {}
    for ls in range(first, base + o["size"], LINE):
        rel = ls - base  # the line's offset in the block (negative: before it)
        w = [(max(lo, rel), min(hi, rel + LINE)) for lo, hi in ranges
             if lo < rel + LINE and hi > rel]
        if len(w) >= 2:
            want[rel] = w
    got = {ln["offset_in_object"]: ln for ln in o["lines"]}
    check(sorted(got) == sorted(want),
          f"{mode}: block at {o['addr']}: falsely shared lines at offsets {sorted(got)} "
          f"of the block, expected {sorted(want)}")
    out = []
    owner = {}  # tid -> the index of its range: one each, the same in every line
    for rel, w in sorted(want.items()):
        wr = line_writers(got[rel], mode)
        bytes_ = sorted(b for b, _ in wr.values())
        check(bytes_ == sorted(span(lo - rel, hi - lo) for lo, hi in w),
              f"{mode}: line at {rel} of the block: bytes written {bytes_}, expected "
              f"{[(lo - rel, hi - rel - 1) for lo, hi in w]} (first, last byte per thread)")
        wrote = {tid: (rel + b[0], rel + b[-1] + 1) for tid, (b, _) in wr.items()}
        for tid, (lo, _) in wrote.items():
            i = next(i for i, (a, z) in enumerate(ranges) if a <= lo < z)
            check(owner.setdefault(tid, i) == i,
                  f"{mode}: thread {tid} wrote the bytes of two threads: {owner[tid]} and {i}")
        out.append((got[rel], wrote))
    check(len(set(owner.values())) == len(owner),
          f"{mode}: two threads wrote the same thread's bytes: {owner}")
    return out


# Parts: the line's split into variables and fields (docs/formats.md).

def parts_of(line, mode):
    parts = line.get("parts")
    check(isinstance(parts, list), f"{mode}: the line at {line['offset_in_object']} of its "
          f"object has no parts: {parts!r}")
    return parts


def check_parts(line, want, mode):
    """The line's parts are `want`, [(name, variable id, offset_in_line,
    size, offset_in_variable)] in ascending address, each written by one
    thread, all its bytes (words relative to the line, as in the line's
    own threads, which must say the same); returns {name: writer tid}."""
    parts = parts_of(line, mode)
    got = [(p["name"], p["variable"], p["offset_in_line"], p["size"], p["offset_in_variable"])
           for p in parts]
    check(got == want, f"{mode}: line at {line['offset_in_object']}: parts {got}, "
          f"expected {want}")
    by_tid = {t["tid"]: set(t["write_words"]) for t in line["threads"]}
    writer = {}
    for p in parts:
        w = [t for t in p["threads"] if t["write_words"]]
        check(len(w) == 1 and w[0]["write_words"] == list(span(p["offset_in_line"], p["size"])),
              f"{mode}: part {p['name']}: writers {[(t['tid'], t['write_words']) for t in w]}, "
              f"expected one thread writing bytes {p['offset_in_line']}-"
              f"{p['offset_in_line'] + p['size'] - 1} of the line")
        tid = w[0]["tid"]
        check(set(w[0]["write_words"]) <= by_tid.get(tid, set()),
              f"{mode}: part {p['name']}: thread {tid}'s bytes are not the line's")
        writer[p["name"]] = tid
    return writer


def parts_heap(o, lines, mode):
    """A heap block's line: a part per thread's run of bytes, named
    block+OFFSET (block at 0), written by that thread alone."""
    vid = o["variable"]["id"]
    for ln, wrote in lines:
        rel = ln["offset_in_object"]
        want = [("block" if lo == 0 else f"block+{lo}", vid, lo - rel, hi - lo, lo)
                for lo, hi in sorted(wrote.values())]
        writer = check_parts(ln, want, mode)
        check(all(wrote[writer[name]] == (lo, lo + size) for name, _, _, size, lo in want),
              f"{mode}: line at {rel}: parts written by the wrong threads: {writer}")


# ---------------------------------------------------------------------
# The bug/fix suite
# ---------------------------------------------------------------------

def fields(run, n):
    """Thread i increments field i of `st` {a, b, c, d}: one line, four
    writers of 8 bytes each."""
    rep = run([str(n)], [], None, FINDINGS)
    o = objects_named(rep, ["st"], "fields")["st"]
    check(o["size"] == 32 and len(o["lines"]) == 1 and o["lines"][0]["offset_in_object"] == 0,
          f"fields: size {o['size']}, lines at {[l['offset_in_object'] for l in o['lines']]}")
    wr = line_writers(o["lines"][0], "fields")
    check(sorted(wr.values()) == [(span(8 * i, 8), n) for i in range(NTHREADS)],
          f"fields: expected 4 threads writing their own 8 bytes {n} times, got {wr}")
    hot_store_seen(o, "fields")
    parts_fields(o)


def parts_fields(o):
    ln = o["lines"][0]
    vid = o["variable"]["id"]
    writer = check_parts(ln, [(f"st.{f}", vid, 8 * i, 8, 8 * i) for i, f in enumerate("abcd")],
                         "fields")
    check(len(set(writer.values())) == NTHREADS,
          f"fields: each field written by its own thread, got {writer}")


def statics(run, n):
    """Thread i increments the i-th of the statics hits_a..hits_d, four
    symbols in one line: an object per symbol, all on the same line."""
    names = ["hits_a", "hits_b", "hits_c", "hits_d"]
    rep = run([str(n)], [], None, FINDINGS)
    objs = objects_named(rep, names, "statics")
    addrs = {m: int(o["addr"], 16) for m, o in objs.items()}
    line = min(addrs.values()) // LINE * LINE
    check(all(a // LINE * LINE == line for a in addrs.values()),
          f"statics: not in one line: {sorted((hex(a), m) for m, a in addrs.items())}")
    for m, o in sorted(objs.items()):
        check(o["size"] == 8 and len(o["lines"]) == 1 and
              o["lines"][0]["offset_in_object"] == line - addrs[m],
              f"statics: {m}: size {o['size']}, lines at "
              f"{[l['offset_in_object'] for l in o['lines']]}")
        wr = line_writers(o["lines"][0], "statics")
        check(sorted(wr.values()) == sorted((span(a - line, 8), n) for a in addrs.values()),
              f"statics: {m}'s line: expected each thread writing one of the four "
              f"longs {n} times, got {wr}")
        hot_store_seen(o, "statics")
    parts_statics(objs, addrs, line)


def parts_statics(objs, addrs, line):
    want = sorted(((m, objs[m]["variable"]["id"], a - line, 8, 0) for m, a in addrs.items()),
                  key=lambda p: p[2])
    for m, o in sorted(objs.items()):
        writer = check_parts(o["lines"][0], want, f"statics ({m})")
        check(len(set(writer.values())) == NTHREADS,
              f"statics: each static written by its own thread, got {writer}")


def calloc_structs(run, n):
    """Thread i adds to the i-th 16-byte struct of a calloc'd array: the
    64 bytes lie in one line or two, so some line has two writers or more
    wherever the block is; each writes sum and count (16 bytes) 2N times."""
    rep = run([str(n)], [], None, FINDINGS)
    o = heap_object(rep, "calloc_structs")
    check(o["size"] == 16 * NTHREADS, f"calloc_structs: block of {o['size']} bytes")
    lines = heap_lines(o, [(16 * i, 16 * i + 16) for i in range(NTHREADS)], "calloc_structs")
    for ln, _ in lines:
        counts = [w for _, w in line_writers(ln, "calloc_structs").values()]
        check(counts == [2 * n] * len(counts),
              f"calloc_structs: writes per thread {counts}, expected {2 * n} each")
    hot_store_seen(o, "calloc_structs")
    parts_heap(o, lines, "calloc_structs")


def heap_split(run, n):
    """A malloc'd int[SPLIT_LEN] split among the threads at ints 102, 205
    and 307: the three lines holding a boundary are falsely shared, each
    by the two threads on either side, wherever the block is (its address
    is a multiple of 16, and no boundary's byte offset is one of 64)."""
    rep = run([str(n)], [], None, FINDINGS)
    o = heap_object(rep, "heap_split")
    check(o["size"] == 4 * SPLIT_LEN, f"heap_split: block of {o['size']} bytes")
    lo = [t * SPLIT_LEN // NTHREADS for t in range(NTHREADS + 1)]
    lines = heap_lines(o, [(4 * lo[t], 4 * lo[t + 1]) for t in range(NTHREADS)], "heap_split")
    check(len(lines) == NTHREADS - 1, f"heap_split: {len(lines)} lines")
    hot_store_seen(o, "heap_split")
    parts_heap(o, lines, "heap_split")


def histogram(run, n):
    """`long hist[BINS][4]`, bin-major: every line holds two bins of the
    four threads, so each thread writes bytes 8t..8t+7 and 32+8t..32+8t+7
    of every line."""
    rep = run([str(n)], [], None, FINDINGS)
    o = objects_named(rep, ["hist"], "histogram")["hist"]
    nlines = BINS * NTHREADS * 8 // LINE
    check(o["size"] == BINS * NTHREADS * 8 and
          [l["offset_in_object"] for l in o["lines"]] == [LINE * k for k in range(nlines)],
          f"histogram: size {o['size']}, lines at {[l['offset_in_object'] for l in o['lines']]}")
    per_bin = [n // BINS + (b < n % BINS) for b in range(BINS)]
    for k, ln in enumerate(o["lines"]):
        wr = line_writers(ln, "histogram")
        want = sorted((span(8 * t, 8) + span(32 + 8 * t, 8), per_bin[2 * k] + per_bin[2 * k + 1])
                      for t in range(NTHREADS))
        check(sorted(wr.values()) == want,
              f"histogram: line {k}: expected each thread writing its two counters, got {wr}")
    hot_store_seen(o, "histogram")
    parts_histogram(o)


def parts_histogram(o):
    vid = o["variable"]["id"]
    column = {}  # thread -> the column it wrote
    for k, ln in enumerate(o["lines"]):
        want = [(f"hist[{2 * k + j // 4}][{j % 4}]", vid, 8 * j, 8, LINE * k + 8 * j)
                for j in range(8)]
        writer = check_parts(ln, want, "histogram")
        for name, tid in writer.items():
            col = int(name[-2])
            check(column.setdefault(tid, col) == col,
                  f"histogram: thread {tid} wrote hist[..][{column[tid]}] and {name}")
    check(sorted(column.values()) == list(range(NTHREADS)),
          f"histogram: columns per thread {column}")


def atomic_counter(run, n):
    """Every thread atomically increments atomic_total: true sharing, not
    false."""
    rep = run([str(n)], [], None, 0)
    check(rep["false_sharing"]["false_lines"] == 0 and not fs_objects(rep),
          f"atomic_counter: reported as false sharing: {[o['name'] for o in fs_objects(rep)]}")
    tl = [t for t in rep["true_sharing"] if (t.get("name") or "").startswith("atomic_total ")]
    check(len(tl) == 1 and tl[0]["verdict"] == "true",
          f"atomic_counter: atomic_total not truly shared: "
          f"{[(t.get('name'), t['verdict']) for t in rep['true_sharing']]}")
    w = [(t["write_words"], t["writes"]) for t in tl[0]["threads"] if t["writes"] >= MIN_WRITES]
    check(w == [(list(range(8)), n)] * NTHREADS,
          f"atomic_counter: expected 4 threads writing bytes 0-7 {n} times, got {w}")


def readonly(run, n):
    """Every thread reads ro_table, nobody writes: nothing to report."""
    rep = run([str(n)], [], None, 0)
    no_false(rep, "readonly")
    check(rep["summary"].get("read_mostly_lines") == 0,
          f"readonly: read-mostly lines {rep['summary'].get('read_mostly_lines')}")


def layout_consistent(rep, mode):
    """The layout prediction (docs/memtools.md) agrees with the run: an
    object it says is falsely shared as laid out (64-byte lines, its own
    bytes) is among the falsely shared objects; its start offset is its
    address's."""
    false_vars = {(o.get("variable") or {}).get("id") for o in fs_objects(rep)}
    for lay in rep.get("layout_prediction", []):
        v = lay["variable"]
        z64 = lay["line_sizes"][0]
        check(z64["line_size"] == LINE and z64["start_offset"] == int(v["addr"], 16) % LINE,
              f"{mode}: layout of {lay['name']}: {z64}")
        if z64["false_sharing"]:
            check(v["id"] in false_vars, f"{mode}: the layout prediction says {lay['name']} "
                  f"is falsely shared as laid out; the report does not")
        check(lay["latent"] == (not z64["false_sharing"] and
                                bool(z64["false_at"] or lay["line_sizes"][1]["false_at"])),
              f"{mode}: latent {lay['latent']} for {lay['name']}: {lay['line_sizes']}")


def counters_fixed(run, n):
    """The fix is clean, and the layout prediction knows why and where it
    stops being: `padded_slots` is 64-byte aligned by its type (DWARF), so
    no other start offset exists with 64-byte lines; with 128-byte lines
    two threads' slots share every line, wherever it starts."""
    rep = run([str(n)], [], None, 0)
    no_false(rep, "counters_fixed")
    lay = [x for x in rep.get("layout_prediction", [])
           if x["variable"].get("name") == "padded_slots"]
    check(len(lay) == 1, f"counters_fixed: no layout prediction of padded_slots: "
          f"{[x['name'] for x in rep.get('layout_prediction', [])]}")
    z64, z128 = lay[0]["line_sizes"]
    check(lay[0]["align"] == 64 and z64["false_at"] == [] and z64["clean_at"] == [0],
          f"counters_fixed: 64-byte lines: align {lay[0]['align']}, {z64}")
    check(z128["line_size"] == 128 and z128["false_at"] == [0, 64] and lay[0]["latent"],
          f"counters_fixed: 128-byte lines: {z128}, latent {lay[0]['latent']}")


def aligned_block_fixed(mode):
    """A fix on a block from aligned_alloc(64): clean, and the layout
    prediction knows the front end's recorded alignment (64: no other
    start offset in a 64-byte line) and that with 128-byte lines two
    threads' data meet in a line at either start offset."""
    def check_fix(run, n):
        rep = run([str(n)], [], None, 0)
        no_false(rep, mode)
        lay = [x for x in rep.get("layout_prediction", []) if x["variable"]["kind"] == "heap"]
        check(len(lay) == 1, f"{mode}: layout predictions of heap blocks: "
              f"{[x['name'] for x in rep.get('layout_prediction', [])]}")
        v, (z64, z128) = lay[0]["variable"], lay[0]["line_sizes"]
        check(v.get("align") == 64 and lay[0]["align"] == 64,
              f"{mode}: the block's alignment {v.get('align')} / {lay[0]['align']}, "
              f"aligned_alloc was asked 64")
        check(z64["false_at"] == [] and z64["clean_at"] == [0] and not z64["false_sharing"],
              f"{mode}: 64-byte lines: {z64}")
        check(z128["false_at"] == [0, 64] and lay[0]["latent"],
              f"{mode}: 128-byte lines: {z128}, latent {lay[0]['latent']}")
    return check_fix


PATTERNS = {"flags": flags, "samebyte": samebyte, "readmostly": readmostly,
            "counters": counters,
            "counters_fixed": counters_fixed,
            "fields": fields, "fields_fixed": fixed("fields_fixed"),
            "statics": statics, "statics_fixed": fixed("statics_fixed"),
            "calloc_structs": calloc_structs,
            "calloc_structs_fixed": aligned_block_fixed("calloc_structs_fixed"),
            "heap_split": heap_split,
            "heap_split_fixed": aligned_block_fixed("heap_split_fixed"),
            "histogram": histogram, "histogram_fixed": fixed("histogram_fixed"),
            "atomic_counter": atomic_counter, "readonly": readonly}
# Each bug and its fix.
PAIRS = [(m, m + "_fixed") for m in PATTERNS if m + "_fixed" in PATTERNS]


def check_pattern(mode, run, n):
    def run_checked(tail, opts, env, code):
        rep = run([mode, *tail], opts, env, code)
        layout_consistent(rep, mode)
        return rep
    PATTERNS[mode](run_checked, n)
