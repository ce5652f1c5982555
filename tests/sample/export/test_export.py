#!/usr/bin/env python3
"""End-to-end tests of the call stacks a sampled run exports: kscope
report --format folded|pprof|speedscope, the Perfetto trace's PerfSample
packets and the Chrome JSON trace's "samples" and "stackFrames".

Each scenario runs a real program of examples/sample under kscope sample
(both samplers at 1000 Hz, both trace formats), reads the stacks and
their counts from the run's profile.db with Python's sqlite3, and asserts
that each export holds the same stacks with the same counts.  The pprof
file and the Perfetto trace are decoded with protoc against schemas
written here from the formats' documented .proto files (pprof's
proto/profile.proto; Perfetto's trace_packet.proto, track_descriptor.proto,
profile_packet.proto, profile_common.proto, interned_data.proto).

    test_export.py KSCOPE EXAMPLES_DIR SCENARIO
"""
import glob
import gzip
import json
import os
import pty
import re
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from kstest import Failure, TempDirs, check  # noqa: E402

KSCOPE, EX, SCENARIO = sys.argv[1:4]
TIMEOUT = 120

# ------------------------------------------------------------------
# Schemas for protoc, subsets of the documented protos
# ------------------------------------------------------------------

# github.com/google/pprof proto/profile.proto (proto3), what kscope writes.
PPROF_PROTO = """
syntax = "proto3";
package perftools.profiles;
message Profile {
  repeated ValueType sample_type = 1;
  repeated Sample sample = 2;
  repeated Mapping mapping = 3;
  repeated Location location = 4;
  repeated Function function = 5;
  repeated string string_table = 6;
  int64 time_nanos = 9;
  int64 duration_nanos = 10;
  ValueType period_type = 11;
  int64 period = 12;
  repeated int64 comment = 13;
  int64 default_sample_type = 14;
}
message ValueType { int64 type = 1; int64 unit = 2; }
message Sample {
  repeated uint64 location_id = 1;
  repeated int64 value = 2;
  repeated Label label = 3;
}
message Label { int64 key = 1; int64 str = 2; int64 num = 3; int64 num_unit = 4; }
message Mapping {
  uint64 id = 1; uint64 memory_start = 2; uint64 memory_limit = 3;
  uint64 file_offset = 4; int64 filename = 5; int64 build_id = 6;
  bool has_functions = 7; bool has_filenames = 8; bool has_line_numbers = 9;
  bool has_inline_frames = 10;
}
message Location {
  uint64 id = 1; uint64 mapping_id = 2; uint64 address = 3;
  repeated Line line = 4; bool is_folded = 5;
}
message Line { uint64 function_id = 1; int64 line = 2; }
message Function {
  uint64 id = 1; int64 name = 2; int64 system_name = 3; int64 filename = 4;
  int64 start_line = 5;
}
"""

# Perfetto's protos/perfetto/trace/ (proto2), the fields kscope writes:
# the schema tests/sample/trace/decode.sh decodes with too.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trace",
                       "perfetto_subset.proto")) as _f:
    PERFETTO_PROTO = _f.read()


def protoc_decode(schema, message, data, tmp):
    """protoc --decode's text, parsed into nested dicts of lists; fails if
    a field is not in the schema (protoc then prints its number)."""
    with open(os.path.join(tmp, "schema.proto"), "w") as f:
        f.write(schema)
    p = subprocess.run(["protoc", "-I", tmp, "--decode", message, "schema.proto"],
                       input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       cwd=tmp, timeout=TIMEOUT)
    check(p.returncode == 0, f"protoc --decode {message}: {p.stderr.decode()[-500:]}")
    text = p.stdout.decode("utf-8", "replace")
    bad = re.findall(r"^\s*\d+\s*[:{]", text, re.M)
    check(not bad, f"fields outside the schema (wrong number or type): {bad[:5]}")
    return parse_text(text)


def parse_text(text):
    """protobuf text format -> {field: [values]} (messages as dicts)."""
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            cur = stack.pop()
            continue
        m = re.match(r"(\w+) \{$", line)
        if m:
            child = {}
            cur.setdefault(m.group(1), []).append(child)
            stack.append(cur)
            cur = child
            continue
        m = re.match(r"(\w+): (.*)$", line)
        check(m, f"protoc output line {line!r}")
        v = m.group(2)
        if v.startswith('"'):
            v = bytes(v[1:-1], "latin-1").decode("unicode_escape").encode("latin-1") \
                .decode("utf-8", "replace")
        elif re.fullmatch(r"-?\d+", v):
            v = int(v)
        cur.setdefault(m.group(1), []).append(v)
    return root


def one(d, k, default=0):
    return d.get(k, [default])[0]


# ------------------------------------------------------------------
# The run and its database
# ------------------------------------------------------------------

def run_sample(out, *args):
    p = subprocess.run([KSCOPE, "sample", "-o", out, *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    check(p.returncode == 0, f"kscope sample {args}: exit {p.returncode}: "
          f"{p.stderr.decode()[-1000:]}")
    runs = glob.glob(os.path.join(out, "sample_*"))
    check(len(runs) == 1, f"run directories {runs}")
    return runs[0]


def report(run, *args, expect=0):
    p = subprocess.run([KSCOPE, "report", run, *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    check(p.returncode == expect, f"kscope report {args}: exit {p.returncode}, "
          f"expected {expect}: {p.stderr.decode()[-600:]}")
    return p


class Db:
    """What profile.db says, read here with SQL."""

    def __init__(self, run):
        con = sqlite3.connect(f"file:{run}/profile.db?mode=ro", uri=True)
        s = {i: t for i, t in con.execute("SELECT id, text FROM strings")}
        self.frame = {}
        for i, fn, mod, file, line in con.execute(
                "SELECT id, function, module, file, line FROM frames"):
            self.frame[i] = (s[fn], s[mod], s.get(file), line)
        self.stack = {i: (par, fr) for i, par, fr in
                      con.execute("SELECT id, parent_id, frame_id FROM stacks")}
        self.threads = {i: (tid, s[name]) for i, tid, name in
                        con.execute("SELECT id, tid, name FROM threads")}
        self.samples = list(con.execute(
            "SELECT thread_id, stack_id, clock, overrun FROM samples"))
        self.cpu_hz, self.real_hz = con.execute(
            "SELECT cputime_freq, realtime_freq FROM sampling").fetchone()
        # regions on some call path (a region no sample was taken in has
        # a frame but no stack, and the reports do not know it)
        self.regions = {s[n] for (n,) in con.execute(
            "SELECT f.function FROM stacks st JOIN frames f ON f.id = st.frame_id "
            "JOIN strings m ON m.id = f.module WHERE m.text = '[region]'")}
        con.close()

    def name(self, frame, folded=False):
        fn, mod = self.frame[frame][:2]
        n = (fn or "[unknown]") + (" [region]" if mod == "[region]" else "")
        if folded:
            n = n.replace(";", ":").replace("\n", " ").replace("\r", " ")
        return n

    def path(self, stack):
        """Frame ids of a stack, outermost first."""
        out = []
        while stack is not None:
            par, fr = self.stack[stack]
            out.append(fr)
            stack = par
        return out[::-1]

    def names(self, stack, folded=False):
        return tuple(self.name(f, folded) for f in self.path(stack))

    def period(self, clock):
        hz = self.real_hz if clock == 1 else self.cpu_hz
        return 10**9 // hz if hz else 0

    def passing(self, tid=None, region=None):
        for th, st, clock, ov in self.samples:
            if tid is not None and self.threads[th][0] != tid:
                continue
            if region is not None and (st is None or not any(
                    self.frame[f][0] == region and self.frame[f][1] == "[region]"
                    for f in self.path(st))):
                continue
            yield th, st, clock, ov

    def totals(self, weight, folded=False, **filt):
        """{stack names: sum of weight(clock, overrun)} of the passing samples;
        a sample without a call path under ()."""
        out = {}
        for th, st, clock, ov in self.passing(**filt):
            k = self.names(st, folded) if st is not None else ()
            out[k] = out.get(k, 0) + weight(clock, ov)
        return out


def periods(clock, ov):
    return 1 + ov


def signals(clock, ov):
    return 1


# ------------------------------------------------------------------
# The exports, read back
# ------------------------------------------------------------------

def folded(run, *args):
    out = {}
    for line in report(run, "--format", "folded", *args).stdout.decode().splitlines():
        stack, count = line.rsplit(" ", 1)
        key = () if stack == "[no call path]" else tuple(stack.split(";"))
        check(key not in out, f"folded: stack {stack!r} on two lines")
        out[key] = int(count)
    return out


def pprof(run, tmp, *args):
    path = os.path.join(tmp, "profile.pb.gz")
    if os.path.exists(path):
        os.chmod(path, 0o600)
        os.unlink(path)
    report(run, "--format", "pprof", "--output", path, *args)
    raw = open(path, "rb").read()
    check(raw[:2] == b"\x1f\x8b", "the pprof file is not gzip")
    return protoc_decode(PPROF_PROTO, "perftools.profiles.Profile", gzip.decompress(raw), tmp)


def pprof_stacks(prof):
    """{stack names: [sum of each value]} and the sample types."""
    st = prof["string_table"]
    check(st[0] == "", "string_table[0] is not empty")
    fn = {one(f, "id"): st[one(f, "name")] for f in prof["function"]}
    loc = {}
    for l in prof["location"]:
        lines = l.get("line", [])
        check(len(lines) == 1, f"location {l}: one line each")
        loc[one(l, "id")] = fn[one(lines[0], "function_id")]
    types = [(st[one(t, "type")], st[one(t, "unit")]) for t in prof["sample_type"]]
    out = {}
    for s in prof.get("sample", []):
        vals = s["value"]
        check(len(vals) == len(types), f"sample values {vals} for types {types}")
        key = tuple(loc[i] for i in reversed(s.get("location_id", [])))
        acc = out.setdefault(key, [0] * len(types))
        for i, v in enumerate(vals):
            acc[i] += v
    return out, types


def speedscope(run, *args):
    doc = json.loads(report(run, "--format", "speedscope", *args).stdout)
    check(doc["$schema"] == "https://www.speedscope.app/file-format-schema.json",
          "no speedscope $schema")
    check(isinstance(doc.get("version"), str), "no version")
    frames = doc["shared"]["frames"]
    check(all(isinstance(f["name"], str) for f in frames), "a frame without a name")
    for p in doc["profiles"]:
        check(p["type"] == "sampled", f"profile type {p['type']}")
        check(p["unit"] in ("nanoseconds", "none"), f"unit {p['unit']}")
        check(len(p["samples"]) == len(p["weights"]),
              f"{p['name']}: {len(p['samples'])} samples, {len(p['weights'])} weights")
        check(p["startValue"] == 0 and p["endValue"] == sum(p["weights"]),
              f"{p['name']}: endValue {p['endValue']}, weights add to {sum(p['weights'])}")
        for s in p["samples"]:
            check(all(isinstance(i, int) and 0 <= i < len(frames) for i in s),
                  f"{p['name']}: frame index out of range in {s}")
    return doc


def speedscope_stacks(doc):
    names = [f["name"] for f in doc["shared"]["frames"]]
    out = {}
    for p in doc["profiles"]:
        for s, w in zip(p["samples"], p["weights"]):
            k = tuple(names[i] for i in s)
            out[k] = out.get(k, 0) + w
    return out


def perfetto_stacks(run, tmp):
    """{stack names: PerfSample count} of trace.perfetto-trace."""
    d = protoc_decode(PERFETTO_PROTO, "perfetto.protos.Trace",
                      open(os.path.join(run, "trace.perfetto-trace"), "rb").read(), tmp)
    interned = {}  # (seq, kind, iid) -> entry
    samples = []
    for pkt in d["packet"]:
        seq = one(pkt, "trusted_packet_sequence_id")
        for idata in pkt.get("interned_data", []):
            for kind in ("function_names", "frames", "callstacks", "mapping_paths",
                         "mappings"):
                for e in idata.get(kind, []):
                    interned.setdefault((seq, kind, one(e, "iid")), e)
        for ps in pkt.get("perf_sample", []):
            samples.append((seq, ps))
    out = {}
    for seq, ps in samples:
        key = ()
        cs = one(ps, "callstack_iid", None)
        if cs is not None:
            stack = interned[(seq, "callstacks", cs)]
            names = []
            for fid in stack["frame_ids"]:
                fr = interned[(seq, "frames", fid)]
                fn = one(interned[(seq, "function_names", one(fr, "function_name_id"))],
                         "str", "")
                mp = interned[(seq, "mappings", one(fr, "mapping_id"))]
                mod = one(interned[(seq, "mapping_paths", one(mp, "path_string_ids"))],
                          "str", "")
                names.append((fn or "[unknown]") + (" [region]" if mod == "[region]"
                                                    else ""))
            key = tuple(names)
        out[key] = out.get(key, 0) + 1
    return out


def json_stacks(run):
    """{stack names: weight} of trace.json's samples and stackFrames."""
    doc = json.load(open(os.path.join(run, "trace.json")))
    sf = doc["stackFrames"]
    out = {}
    for s in doc["samples"]:
        check({"cpu", "tid", "ts", "name", "weight"} <= set(s), f"sample {s}")
        names, key = [], s.get("sf")
        while key is not None:
            f = sf[str(key)]
            names.append(f["name"] + (" [region]" if f["category"] == "[region]" else ""))
            key = f.get("parent")
        k = tuple(reversed(names))
        out[k] = out.get(k, 0) + s["weight"]
    return out


def same(name, got, want):
    if got == want:
        return
    diff = [(k, got.get(k), want.get(k)) for k in set(got) | set(want)
            if got.get(k) != want.get(k)]
    raise Failure(f"{name}: {len(diff)} stacks differ from profile.db, e.g. {diff[:3]}")


def figures(label, **totals):
    print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in totals.items()))


# ------------------------------------------------------------------
# Scenarios
# ------------------------------------------------------------------

def all_formats(tmp):
    """Many threads, both samplers: every export equals the database."""
    run = run_sample(tmp(), "-F", "1000", "--samplers", "both", "--trace-format", "both",
                     "--", os.path.join(EX, "threads"))
    db = Db(run)
    check(len(db.samples) > 50 and len({t for t, *_ in db.samples}) > 1,
          f"{len(db.samples)} samples: too few to test")
    work = tmp()

    want_periods = db.totals(periods, folded=True)
    got = folded(run)
    same("folded", got, want_periods)

    prof = pprof(run, work)
    stacks, types = pprof_stacks(prof)
    check(types[0] == ("samples", "count"), f"sample types {types}")
    want_cpu = db.totals(lambda c, o: (1 + o) * db.period(0) if c == 0 else 0)
    want_wall = db.totals(lambda c, o: (1 + o) * db.period(1) if c == 1 else 0)
    want_sig = db.totals(signals)
    same("pprof samples/count", {k: v[0] for k, v in stacks.items()}, want_sig)
    col = {t: i for i, t in enumerate(types)}
    check(("cpu", "nanoseconds") in col and ("wall", "nanoseconds") in col,
          f"sample types {types}")
    same("pprof cpu/nanoseconds", {k: v[col[("cpu", "nanoseconds")]]
                                   for k, v in stacks.items()}, want_cpu)
    same("pprof wall/nanoseconds", {k: v[col[("wall", "nanoseconds")]]
                                    for k, v in stacks.items()}, want_wall)
    check(one(prof, "period") == db.period(0), f"period {one(prof, 'period')}")

    doc = speedscope(run)
    ns = db.totals(lambda c, o: (1 + o) * db.period(c))
    same("speedscope", speedscope_stacks(doc), ns)
    names = {p["name"] for p in doc["profiles"]}
    tids = {tid for _, (tid, _) in db.threads.items()
            if any(db.threads[t][0] == tid for t, *_ in db.samples)}
    for tid in tids:
        check(any(f"tid {tid}," in n or f"tid {tid})" in n or n.endswith(f"tid {tid}")
                  for n in names), f"no speedscope profile of tid {tid}: {names}")

    same("perfetto", perfetto_stacks(run, work), db.totals(signals))
    same("trace.json", json_stacks(run), db.totals(periods))

    figures("totals", db_samples=len(db.samples),
            db_periods=sum(1 + o for *_, o in db.samples),
            folded=sum(got.values()),
            pprof_samples=sum(v[0] for v in stacks.values()),
            pprof_cpu_ns=sum(v[col[("cpu", "nanoseconds")]] for v in stacks.values()),
            db_cpu_ns=sum(want_cpu.values()),
            speedscope_ns=sum(sum(p["weights"]) for p in doc["profiles"]),
            db_ns=sum(ns.values()),
            perfetto=sum(perfetto_stacks(run, work).values()),
            json_weight=sum(json_stacks(run).values()))


def filters(tmp):
    """--thread and --region select the samples the reports count."""
    run = run_sample(tmp(), "-F", "1000", "--samplers", "both", "--trace-format", "none",
                     "--", os.path.join(EX, "regions"))
    db = Db(run)
    check(db.samples, "no samples")
    work = tmp()
    tid = max(db.threads.values(), key=lambda t: sum(
        1 for th, *_ in db.samples if db.threads[th][0] == t[0]))[0]
    same("folded --thread", folded(run, "--thread", str(tid)),
         db.totals(periods, folded=True, tid=tid))
    stacks, _ = pprof_stacks(pprof(run, work, "--thread", str(tid)))
    same("pprof --thread", {k: v[0] for k, v in stacks.items()},
         db.totals(signals, tid=tid))
    for region in sorted(db.regions):
        want = db.totals(periods, folded=True, region=region)
        same(f"folded --region {region}", folded(run, "--region", region), want)
        same(f"speedscope --region {region}",
             speedscope_stacks(speedscope(run, "--region", region)),
             db.totals(lambda c, o: (1 + o) * db.period(c), region=region))
    check(db.regions, "the run has no regions")
    # Filters that name nothing are refused, as for the reports.
    p = report(run, "--format", "folded", "--region", "no such region", expect=2)
    check(b"no region named" in p.stderr and not p.stdout, p.stderr.decode())


def options(tmp):
    """What does not apply is refused; --output never replaces a file;
    binary is not written to a terminal."""
    run = run_sample(tmp(), "-F", "1000", "--trace-format", "none", "--",
                     os.path.join(EX, "threads"))
    work = tmp()
    for args, msg in ((["--format", "folded", "--tree"], b"--tree chooses a report"),
                      (["--format", "speedscope", "--threads"], b"--threads chooses"),
                      (["--format", "pprof", "--min-pct", "2"], b"--min-pct shapes"),
                      (["--format", "folded", "--depth", "3"], b"--depth shapes")):
        p = report(run, *args, expect=2)
        check(msg in p.stderr and not p.stdout, f"{args}: {p.stderr.decode()}")
    out = os.path.join(work, "stacks.folded")
    report(run, "--format", "folded", "--output", out)
    first = open(out, "rb").read()
    check(first and first == report(run, "--format", "folded").stdout,
          "--output holds other text than standard output")
    p = report(run, "--format", "folded", "--output", out, expect=2)
    check(b"exists" in p.stderr and open(out, "rb").read() == first,
          f"an existing --output: {p.stderr.decode()}")
    check(sorted(os.listdir(work)) == ["stacks.folded"], f"left behind: {os.listdir(work)}")
    # pprof to a terminal: refused before anything is written.
    master, slave = pty.openpty()
    try:
        p = subprocess.run([KSCOPE, "report", run, "--format", "pprof"], stdout=slave,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    try:
        written = os.read(master, 4096)
    except (BlockingIOError, OSError):
        written = b""
    os.close(master)
    check(p.returncode == 2 and b"--output FILE" in p.stderr and not written,
          f"pprof to a terminal: exit {p.returncode}, {p.stderr.decode()}, {written[:40]}")


SCENARIOS = {"all_formats": all_formats, "filters": filters, "options": options}


def main():
    tmp = TempDirs("ks-export-")
    try:
        SCENARIOS[SCENARIO](tmp)
    except Failure as e:
        print(f"FAIL: {SCENARIO}: {e}")
        return 1
    finally:
        tmp.remove()
    print(f"PASS: {SCENARIO}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
