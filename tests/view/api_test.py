#!/usr/bin/env python3
"""API tests of kscope view on the bundled sample results.

For each sample under tests/view/samples (real run directories of kscope
op, op --simulate, predict, sample, memcheck, falseshare and contention; see
make-samples.sh), starts `kscope view SAMPLE --port 0`, POSTs every
command of docs/view.md that applies to /api, and checks the answers
against the sample's own files, read here independently: the blocks of
visualize_data.bin, code_exe.csv, the predict CSVs, report.json, and
`kscope report --format json`.  Then every command's errors: a missing,
mistyped or out-of-range parameter, a card that does not exist, a source
file the data does not name -- each must give result:false with the
expected message.  A last check runs the same requests through
view_request_driver (the handlers without the server) and expects the
same bodies, and a last one that what is not UTF-8 (a directory name, a
source text, a message cut inside a character) reaches the page as text.

    api_test.py KSCOPE VIEW_REQUEST_DRIVER SAMPLES_DIR
"""
import csv
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for kstest
from kstest import Failure, check  # noqa: E402
import viewer  # noqa: E402  (tests/view/viewer.py)

KSCOPE, DRIVER, SAMPLES = sys.argv[1:4]
# kscope view makes PATH absolute; so do the tests, to compare paths
SAMPLES = os.path.abspath(SAMPLES)
TIMEOUT = 60


# ------------------------------------------------------------------
# Reading the samples here, independently of kscope view
# ------------------------------------------------------------------

def blocks(path):
    """{type: payload} of a visualize_data.bin (the first of each type),
    and the 0x01 blocks as {path: text}."""
    data = open(path, "rb").read()
    out, sources, off = {}, {}, 0
    while off < len(data):
        size, typ, pad, _ver, _res = struct.unpack_from("<QBBBB", data, off)
        head = 12
        if typ == 1:
            name = data[off + 12:off + 12 + 4096].split(b"\0")[0].decode()
            head += 4096
        payload = data[off + head:off + head + size - pad]
        if typ == 1:
            sources[name] = payload.decode()
        elif typ not in out:
            out[typ] = payload
        off += head + size
    return out, sources


def block_json(path, typ):
    return json.loads(blocks(path)[0][typ])


def number(s):
    """A CSV field as kscope view gives it: an integer or a number when the
    whole field is one."""
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def read_csv(path):
    with open(path, newline="") as f:
        return [{k: number(v) for k, v in row.items()} for row in csv.DictReader(f)]


def viewer_str(v):
    """A block's value as the seed's viewer gets it: a string ("" for null;
    numbers compare as numbers, see same_number)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def same_number(a, b):
    return float(a) == float(b)


# ------------------------------------------------------------------
# The server
# ------------------------------------------------------------------

# Sources are served from PATH's directory and --source-dir: the tests
# allow kscope's source tree, where the samples' programs came from.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def Viewer(path):
    return viewer.Viewer(KSCOPE, path, ["--source-dir", ROOT])


def servable(name, path):
    """Whether kscope view started on path with --source-dir ROOT may
    serve name: a regular file under ROOT or path's directory."""
    real = os.path.realpath(name)
    base = path if os.path.isdir(path) else os.path.dirname(path)
    return os.path.isfile(real) and any(
        real.startswith(os.path.realpath(d) + os.sep) for d in (ROOT, base))


def sample(name):
    p = os.path.join(SAMPLES, name)
    check(os.path.isdir(p), f"{p} is missing (tests/view/samples/make-samples.sh)")
    return p


def one_card(v, kinds, command):
    body = v.ok("timeline", "import/action", {"path": [v.path]})
    cards = body["result"]
    check(len(cards) == 1, f"{v.path}: {len(cards)} cards: {cards}")
    c = cards[0]
    check(c["kinds"] == kinds, f"{v.path}: kinds {c['kinds']}, expected {kinds}")
    check(c["command"] == command, f"{v.path}: command {c['command']!r}")
    check(c["cardId"] == c["rankId"] and c["result"] is True, f"{v.path}: card {c}")
    return body, c


def disk_sources_served(v, body, names):
    """Every absolute source the data names that is a regular file here is
    listed and served exactly; others are not listed."""
    for name in names:
        listed = name in body["sourceList"]
        if servable(name, v.path):
            check(listed, f"{name} exists but is not in sourceList")
            got = v.ok("source", "source/code/file", {"sourceName": name})
            with open(name, encoding="utf-8", errors="surrogateescape") as f:
                check(got["fileContent"] == f.read(), f"{name}: served text differs")
        else:
            check(not listed, f"{name} does not exist here but is in sourceList")


NOT_A_SOURCE = ('params.sourceName "{}" is not a source file of the imported data; '
                'source/code/file serves only the files import/action lists in '
                'sourceList')


def common_errors(v, card_id):
    """The card and source rules every sample shares."""
    for name in ("/etc/passwd", "../../../../etc/passwd", "", "kernel.cl/../x"):
        v.fails("source", "source/code/file", {"sourceName": name},
                NOT_A_SOURCE.format(name))
    v.fails("source", "source/code/file", {}, "params.sourceName is missing; a string "
            "is expected")
    v.fails("source", "source/code/file", {"sourceName": 7}, "params.sourceName is an "
            "integer; a string is expected")
    v.fails("source", "source/code/file", {"cardId": card_id, "sourceName": "/etc/passwd"},
            re.compile(r'params\.sourceName "/etc/passwd" is not a source file of card '
                       + re.escape(f'"{card_id}"') + r"; its sources are: .*"))
    v.fails("timeline", "import/action", {"path": ["/etc"]},
            f'params.path[0] is not the PATH kscope view was started with ("{v.path}"); '
            "kscope view serves only that")
    v.fails("timeline", "import/action", {"path": v.path},
            f"params.path must be an array of strings, each the PATH kscope view was "
            f'started with ("{v.path}")')
    v.fails("predict", "predict/summary", {"cardId": "nope"},
            re.compile(r'params\.cardId "nope" is no card here; .*'))
    v.fails("findings", "findings/list", {"rankId": 3},
            "params.rankId is an integer; a string is expected")


# ------------------------------------------------------------------
# The samples
# ------------------------------------------------------------------

def op():
    with Viewer(sample("op_vadd")) as v:
        body, c = one_card(v, ["timeline", "details", "roofline"], "op")
        cid = c["cardId"]
        check(re.fullmatch(r"op/\d+/vadd_0", cid), f"op card id {cid!r}")
        rel = cid.split("/", 1)[1]
        launch = os.path.join(v.path, rel)
        vb = os.path.join(launch, "visualize_data.bin")
        check(body["isBinary"] is True and body["isSimulation"] is False, f"flags {body}")
        check(c["cardPath"] == launch, f"cardPath {c['cardPath']}")
        # the kernel's source, by the name op's trace gives it
        check("kernel.cl" in body["sourceList"], f"sourceList {body['sourceList']}")
        got = v.ok("source", "source/code/file", {"cardId": cid, "sourceName": "kernel.cl"})
        check(got["fileContent"] == open(os.path.join(launch, "kernel.cl")).read(),
              "kernel.cl differs")

        bi = block_json(vb, 0x05)
        got = v.ok("source", "source/details/baseInfo", {"cardId": cid})
        check(got["name"] == bi["name"] == "vadd" and got["soc"] == bi["soc"] and
              got["opType"] == bi["op_type"], f"baseInfo {got}")
        check(got["blockDim"] == viewer_str(bi["block_dim"]) and
              same_number(got["duration"], bi["duration"]), f"baseInfo {got}")
        check(got["advice"] == bi["advice"], "baseInfo advice")
        check(got["blockDetail"]["size"] == [str(len(bi["block_detail"])), "3"],
              f"blockDetail {got['blockDetail']}")

        mg = block_json(vb, 0x08)["core_memory_map"]
        got = v.ok("source", "source/details/memoryGraph",
                   {"cardId": cid, "blockId": "0", "showAs": "bandwidth"})["coreMemory"]
        check(len(got) == len(mg) == 1, f"memoryGraph {got}")
        units = got[0]["memoryUnit"]
        check([u["memoryPath"] for u in units] == [u["memory_path"] for u in mg[0]["memory_unit"]]
              and [u["request"] for u in units] == [u["request"] for u in mg[0]["memory_unit"]],
              f"memoryUnit {units}")
        for g, b in zip(units, mg[0]["memory_unit"]):
            check(same_number(g["bandwidth"], b["bandwidth"]), f"bandwidth {g} {b}")
        check(got[0]["chipType"] == mg[0]["soc"] and got[0]["blockId"] == "0", f"{got[0]}")

        mt = block_json(vb, 0x09)["table_per_block"]
        got = v.ok("source", "source/details/memoryTable", {"cardId": cid})["memoryTable"]
        check(len(got) == len(mt), "memoryTable blocks")
        for g, b in zip(got[0]["tableDetail"], mt[0]["table_detail"]):
            check(g["tableName"] == b["table_name"] and g["headerName"] == b["header_name"],
                  f"table {g['tableName']}")
            check([r["name"] for r in g["row"]] == [r["name"] for r in b["row"]], "rows")
            for gr, br in zip(g["row"], b["row"]):
                check(len(gr["value"]) == len(br["value"]) and
                      all(isinstance(x, str) for x in gr["value"]), f"row {gr}")
                for x, y in zip(gr["value"], br["value"]):
                    check(x == (y if isinstance(y, str) else viewer_str(y)) or
                          (y is not None and not isinstance(y, str) and same_number(x, y)),
                          f"row {gr['name']}: {x!r} vs {y!r}")

        rf = block_json(vb, 0x0D)["multiple_rooflines"]
        got = v.ok("roofline", "roofline/charts")["cards"]
        check(len(got) == 1 and got[0]["cardId"] == cid, f"roofline cards {got}")
        check(got[0]["charts"] == rf, "roofline charts differ from the 0x0D block")
        check(all(len(r["point"]) == 2 for r in rf[0]["rooflines"]), "points")

        # the errors of the details
        v.fails("source", "source/details/memoryGraph", {"blockId": 7},
                "params.blockId is 7; the blocks here are 0")
        v.fails("source", "source/details/memoryTable", {"blockId": "x"},
                'params.blockId is "x"; an integer from 0 to 2147483647 is expected')
        v.fails("source", "source/details/memoryTable", {"blockId": -1},
                "params.blockId is -1; an integer from 0 to 2147483647 is expected")
        v.fails("source", "source/details/memoryGraph", {"showAs": "both"},
                'params.showAs is "both"; "request" or "bandwidth" is expected')
        v.fails("source", "source/details/memoryGraph", {"showAs": 1},
                "params.showAs is an integer; a string is expected")
        v.fails("source", "source/details/computeworkload", {},
                f'card "{cid}" has no compute workload')
        v.fails("source", "source/api/line", {"sourceName": "kernel.cl"},
                "the imported data has no source data")
        v.fails("source", "source/api/line", {"cardId": cid, "sourceName": "kernel.cl"},
                f'params.cardId "{cid}" is a card without that data; no card has source')
        v.fails("source", "source/api/instructions", {},
                "the imported data has no source data")
        v.fails("profile", "profile/flat", {}, "the imported data has no profile data")
        v.fails("findings", "findings/list", {}, "the imported data has no findings data")
        v.fails("predict", "predict/summary", {}, "the imported data has no predict data")
        common_errors(v, cid)


def simulate():
    with Viewer(sample("simulate_matmul")) as v:
        body, c = one_card(v, ["timeline", "source", "roofline"], "simulate")
        cid = c["cardId"]
        check(cid == "simulate" and body["isSimulation"] is True, f"card {c}")
        vb = os.path.join(v.path, "visualize_data.bin")
        bl, texts = blocks(vb)
        files = json.loads(bl[0x03])
        check(body["coreList"] == files["Cores"], f"coreList {body['coreList']}")
        # the 0x01 texts, whatever this machine has on disk
        for name, text in texts.items():
            check(name in body["sourceList"], f"{name} not listed")
            got = v.ok("source", "source/code/file", {"sourceName": name})
            check(got["fileContent"] == text, f"{name}: text differs from its 0x01 block")
        src = next(n for n in texts)

        # per line and core: the 0x03 block, and its sums equal code_exe.csv's
        for core_i, core in enumerate(files["Cores"]):
            got = v.ok("source", "source/api/line",
                       {"cardId": cid, "sourceName": src, "coreName": core})
            check(got["cores"] == files["Cores"] and
                  got["dtype"] == files["Files Dtype"]["Lines"], "cores, dtype")
            want = next(f for f in files["Files"] if f["Source"] == src)["Lines"]
            check(len(got["lines"]) == len(want), f"{core}: {len(got['lines'])} lines")
            for g, w in zip(got["lines"], want):
                check(g["Line"] == w["Line"] and g["Address Range"] == w["Address Range"],
                      f"line {g}")
                check(g["Cycles"] == w["Cycles"][core_i] and
                      g["Instructions Executed"] == w["Instructions Executed"][core_i],
                      f"{core} line {g['Line']}: {g} vs {w}")
            rows = [r for r in read_csv(os.path.join(v.path, core, "code_exe.csv"))
                    if r["File"] == src]
            for col in ("Instructions Executed", "Cycles"):
                s = sum(x[col] for x in got["lines"])
                check(s == sum(r[col] for r in rows), f"{core}: {col} sums to {s}, "
                      f"code_exe.csv says {sum(r[col] for r in rows)}")
            check(sum(x["Cycles"] for x in got["lines"]) > 0 or core_i > 0,
                  f"{core}: no cycle in {src}")
        # without coreName: the first core
        first = v.ok("source", "source/api/line", {"sourceName": src})
        check(first["lines"] == v.ok("source", "source/api/line",
                                     {"sourceName": src, "coreName": files["Cores"][0]})
              ["lines"], "the default core is not the first")

        got = v.ok("source", "source/api/instructions", {"cardId": cid})
        check(json.loads(got["instructions"]) == json.loads(bl[0x04]),
              "instructions differ from the 0x04 block")

        rf = json.loads(bl[0x0D])["multiple_rooflines"]
        got = v.ok("roofline", "roofline/charts", {})["cards"]
        check(got[0]["charts"] == rf and got[0]["charts"][0]["rooflines"][0]["point"] ==
              rf[0]["rooflines"][0]["point"], "roofline differs from the 0x0D block")

        v.fails("source", "source/api/line", {"sourceName": src, "coreName": "core9"},
                'params.coreName "core9" is not a core of this data; the cores are: '
                + ", ".join(f'"{x}"' for x in files["Cores"]))
        v.fails("source", "source/api/line", {"coreName": files["Cores"][0]},
                "params.sourceName is missing; a string is expected")
        v.fails("source", "source/api/line", {"sourceName": "/etc/passwd"},
                f'params.sourceName "/etc/passwd" is not a file of card "{cid}"\'s '
                f'hot-spot map (its "Files" have {len(files["Files"])} sources)')
        v.fails("source", "source/api/line", {"sourceName": src, "coreName": ["x"]},
                "params.coreName is an array; a string is expected")
        v.fails("source", "source/details/baseInfo", {},
                "the imported data has no details data")
        common_errors(v, cid)


def predict():
    with Viewer(sample("predict_vadd")) as v:
        _body, c = one_card(v, ["timeline", "predict"], "predict")
        got = v.ok("predict", "predict/summary", {"cardId": c["cardId"]})
        pipes = read_csv(os.path.join(v.path, "Pipe_statistic.csv"))
        instr = read_csv(os.path.join(v.path, "Instruction_statistic.csv"))
        check(got["pipes"] == pipes, f"pipes {got['pipes']} vs {pipes}")
        check(got["instructions"] == instr, "instructions differ from the CSV")
        check(any(isinstance(p["Busy (us)"], float) for p in got["pipes"]) and
              all(isinstance(p["Instructions"], int) for p in got["pipes"]),
              "numbers are not numbers")
        v.fails("roofline", "roofline/charts", {},
                "the imported data has no roofline (kscope op draws one with --flops "
                "and a calibration)")
        common_errors(v, c["cardId"])


def report(path, *opts):
    p = subprocess.run([KSCOPE, "report", "--format", "json", *opts, path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    check(p.returncode == 0, f"kscope report {opts}: {p.stderr.decode()[-500:]}")
    return json.loads(p.stdout)


def sample_run():
    with Viewer(sample("sample_demo")) as v:
        body, c = one_card(v, ["timeline", "profile"], "sample")
        cid = c["cardId"]
        flat = v.ok("profile", "profile/flat", {"cardId": cid})
        want = report(v.path)
        check(flat == want, "profile/flat differs from kscope report --format json")
        check(flat["samples"] > 0, "no samples")
        threads = v.ok("profile", "profile/threads", {"cardId": cid})
        check(threads == report(v.path, "--threads"), "profile/threads differs")
        tree = v.ok("profile", "profile/tree", {"cardId": cid, "minPct": 5})
        check(tree == report(v.path, "--tree", "--min-pct", "5", "--depth", "400"),
              "profile/tree differs")
        check(tree["samples"] == flat["samples"], "tree and flat disagree on samples")
        rows = threads["rows"]
        n = len(rows)
        check(n > 1 and [r["index"] for r in rows] == list(range(n)), f"rows {rows}")
        for i, t in enumerate(rows):
            got = v.ok("profile", "profile/flat", {"thread": i})
            check(got == report(v.path, "--thread", str(t["tid"])),
                  f"profile/flat of thread {i} (tid {t['tid']}) differs")
        # the timeline of the samples: per thread, the outermost frames'
        # slices cover every sample of the thread once
        procs = v.ok("timeline", "unit/threads", {"cardId": cid})
        end = procs["endTime"]
        per_px = max(1, -(-end // 50000))
        for pr in procs["processes"]:
            for th in pr["threads"]:
                row = next(r for r in rows if str(r["tid"]) == th["tid"])
                check((th["slices"] > 0) == (row["samples"] > 0),
                      f"thread {th['tid']}: {th['slices']} slices, {row['samples']} samples")
                if not row["samples"]:
                    continue
                data = v.ok("timeline", "unit/threadTraces", {
                    "cardId": cid, "processId": pr["pid"], "threadId": th["tid"],
                    "startTime": 0, "endTime": end, "timePerPx": per_px})["data"]
                if any(x["count"] != 1 for x in data[0]):
                    continue  # merged at this scale: no per-slice args to add
                total = 0
                for x in data[0]:
                    d = v.ok("timeline", "unit/threadDetail", {
                        "cardId": cid, "pid": pr["pid"], "tid": th["tid"], "id": x["id"]})
                    args = json.loads(d["data"]["args"])
                    check("module" in args, f"slice args {args}")
                    total += args["samples"]
                check(total == row["samples"], f"thread {th['tid']}: its outermost "
                      f"slices cover {total} samples, the profile has {row['samples']}")
        disk_sources_served(v, body, {f["file"] for f in flat["functions"]
                                      if (f.get("file") or "").startswith("/")})
        v.fails("profile", "profile/flat", {"thread": n},
                f"params.thread is {n}; an integer from 0 to {n - 1} is expected")
        v.fails("profile", "profile/tree", {"thread": "a"},
                f'params.thread is "a"; an integer from 0 to {n - 1} is expected')
        v.fails("profile", "profile/tree", {"minPct": 101},
                "params.minPct is 101; a number from 0 to 100 is expected")
        v.fails("profile", "profile/tree", {"minPct": "5"},
                "params.minPct is a string; a number from 0 to 100 is expected")
        v.fails("profile", "profile/flat", {"cardId": "op"},
                re.compile(r'params\.cardId "op" is no card here; cards with "sample"'))
        # the clock filter is kscope report --clock's; this profile has
        # CPU-time samples only
        check(v.ok("profile", "profile/flat", {"clock": "cpu"}) ==
              report(v.path, "--clock", "cpu"), "profile/flat clock cpu differs")
        check(v.ok("profile", "profile/threads", {"clock": "cpu"}) ==
              report(v.path, "--threads", "--clock", "cpu"), "profile/threads clock cpu differs")
        check(flat["by_clock"] is False and flat["timers"]["wall"]["periods"] == 0,
              f"one timer's profile: by_clock {flat['by_clock']}, timers {flat['timers']}")
        v.fails("profile", "profile/tree", {"clock": "real"},
                f'params.clock is "real", but the profile has no wall-clock (real-time) '
                f'samples: it has only {flat["samples"]} CPU-time samples (kscope sample '
                f'--samplers chooses the samplers); accepted: cpu or all')
        v.fails("profile", "profile/flat", {"clock": "wall"},
                'params.clock is "wall"; "all", "cpu" or "real" is expected')
        v.fails("profile", "profile/threads", {"clock": 1},
                "params.clock is an integer; a string is expected")
        check(flat["counters_recorded"] == 0, f"counters_recorded {flat['counters_recorded']}")
        v.fails("profile", "profile/counters", {"cardId": cid},
                f'card "{cid}" has no per-sample counters: kscope sample --counters LIST '
                f'records them')
        v.fails("source", "source/details/baseInfo", {},
                "the imported data has no details data")
        common_errors(v, cid)


def findings(name, analysis, count_key):
    with Viewer(sample(name)) as v:
        body, c = one_card(v, ["findings"], analysis)
        got = v.ok("findings", "findings/list", {"cardId": c["cardId"]})
        want = json.load(open(os.path.join(v.path, "report.json")))
        check(got == want, "findings/list differs from report.json")
        check(len(got[count_key]) == len(want[count_key]) > 0,
              f"{count_key}: {len(got[count_key])}")
        names = set()

        def frames(j):
            if isinstance(j, dict):
                f, d = j.get("file"), j.get("dir")
                if isinstance(f, str) and f.startswith("/"):
                    names.add(f)
                elif isinstance(f, str) and isinstance(d, str) and d.startswith("/"):
                    names.add(d + "/" + f)
                for x in j.values():
                    frames(x)
            elif isinstance(j, list):
                for x in j:
                    frames(x)
        frames(want)
        check(names, "no frame with a source location in report.json")
        disk_sources_served(v, body, names)
        common_errors(v, c["cardId"])


def files():
    """PATH as a file: a visualize_data.bin, a trace.json, a profile.db, a
    report.json; each one card, named by the run directory it is in."""
    for rel, kinds, cid, binary in (
            ("simulate_matmul/visualize_data.bin", ["timeline", "source", "roofline"],
             "simulate", True),
            ("simulate_matmul/trace.json", ["timeline"], "simulate", False),
            ("sample_demo/profile.db", ["timeline", "profile"], "sample", False),
            ("memcheck_uaf/report.json", ["findings"], "memcheck", False)):
        with Viewer(os.path.join(SAMPLES, rel)) as v:
            body = v.ok("timeline", "import/action", {"path": [v.path]})
            c = body["result"]
            check(len(c) == 1 and c[0]["kinds"] == kinds and c[0]["cardId"] == cid and
                  c[0]["cardPath"] == v.path and body["isBinary"] is binary,
                  f"{rel}: {body}")


def everything():
    """All samples at once: one card each, unique readable ids; the
    handlers without the server give the same bodies."""
    with Viewer(SAMPLES) as v:
        body = v.ok("timeline", "import/action", {})
        ids = [c["cardId"] for c in body["result"]]
        check(len(ids) == len(set(ids)) == 7, f"ids {ids}")
        for want in ("simulate", "predict", "sample", "memcheck", "falseshare",
                     "contention"):
            check(want in ids, f"no card {want!r} in {ids}")
        check(any(re.fullmatch(r"op/\d+/vadd_0", i) for i in ids), f"no op card in {ids}")
        reqs = [{"id": i, "moduleName": m, "type": "request", "command": cmd, "params": p}
                for i, (m, cmd, p) in enumerate([
                    ("timeline", "import/action", {}),
                    ("roofline", "roofline/charts", {}),
                    ("predict", "predict/summary", {}),
                    ("profile", "profile/threads", {}),
                    ("findings", "findings/list", {"cardId": "memcheck"}),
                    ("source", "source/api/instructions", {}),
                    ("source", "source/code/file", {"sourceName": "/etc/passwd"}),
                ])]
        text = "".join(json.dumps(r) + "\n" for r in reqs)
        p = subprocess.run([DRIVER, SAMPLES, ROOT], input=text.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        check(p.returncode == 0, f"view_request_driver: exit {p.returncode}")
        lines = p.stdout.decode().splitlines()
        check(len(lines) == len(reqs), f"driver: {len(lines)} responses")
        for r, line in zip(reqs, lines):
            d = json.loads(line)
            s = v.raw(json.dumps(r))
            check(d["result"] == s["result"] and d["body"] == s["body"],
                  f"{r['command']}: the server and the handlers disagree")


LATIN1 = b"/* caf\xe9 */\n"


def latin1_sources(src, dst):
    """A copy of visualize_data.bin src at dst whose source blocks (0x01)
    end in a Latin-1 comment, and with one more whose name is Latin-1;
    returns {name as listed: text as served}."""
    data, out, served, off = open(src, "rb").read(), bytearray(), {}, 0
    while off < len(data):
        size, typ, pad, ver, res = struct.unpack_from("<QBBBB", data, off)
        head = 12 + (4096 if typ == 1 else 0)
        if typ != 1:
            out += data[off:off + head + size]
        else:
            text = data[off + head:off + head + size - pad]
            payload = text + LATIN1
            npad = -len(payload) % 4
            out += struct.pack("<QBBBB", len(payload) + npad, typ, npad, ver, res)
            out += data[off + 12:off + head] + payload + b"\0" * npad
            name = data[off + 12:off + head].split(b"\0")[0].decode()
            served[name] = text.decode() + LATIN1.decode("latin-1")
            ver1, res1 = ver, res
        off += head + size
    # and one more source, named in Latin-1
    name = b"/src/caf\xe9.c"
    npad = -len(LATIN1) % 4
    out += struct.pack("<QBBBB", len(LATIN1) + npad, 1, npad, ver1, res1)
    out += name + b"\0" * (4096 - len(name)) + LATIN1 + b"\0" * npad
    served[name.decode("latin-1")] = LATIN1.decode("latin-1")
    with open(dst, "wb") as f:
        f.write(out)
    return served


def encodings():
    """What is not UTF-8 reaches the page as text, each byte that is not
    part of valid UTF-8 shown as the character with its value, never as a
    hole: a message cut by its bound inside a character, a directory name,
    a source text in Latin-1."""
    with Viewer(sample("memcheck_uaf")) as v:
        r = v.raw(json.dumps({"id": 1, "moduleName": "timeline", "type": "request",
                              "command": "a" * 99 + "\u00e9"}))
        # the bound cuts the 2-byte \u00e9 after its first byte, 0xC3
        want = 'unknown command "' + "a" * 99 + '\u00c3"; docs/view.md lists the commands'
        check(r["result"] is False and r["body"].get("message") == want,
              f"a command cut inside a character: {r}")
    with tempfile.TemporaryDirectory() as tmp:
        card = os.path.join(tmp, "caf\udce9")  # b"caf\xe9" on disk
        os.mkdir(card)
        shutil.copy(os.path.join(SAMPLES, "memcheck_uaf", "report.json"), card)
        served = latin1_sources(os.path.join(SAMPLES, "simulate_matmul", "visualize_data.bin"),
                                os.path.join(card, "visualize_data.bin"))
        check(served, "simulate_matmul/visualize_data.bin has no source block")
        with Viewer(card) as v:
            body = v.ok("timeline", "import/action", {})
            cards = body["result"]
            check(len(cards) == 1, f"{len(cards)} cards: {cards}")
            c = cards[0]
            check(c["cardPath"] == os.path.join(tmp, "caf\u00e9") and
                  c["cardId"] == "caf\u00e9" and "findings" in c["kinds"] and
                  "source" in c["kinds"], f"card {c}")
            check(c["cardName"] == "memcheck: uaf", f"card name {c['cardName']!r}")
            v.ok("findings", "findings/list", {"cardId": "caf\u00e9"})
            for name, text in served.items():
                check(name in body["sourceList"], f"{name} not in {body['sourceList']}")
                got = v.ok("source", "source/code/file", {"sourceName": name})
                check(got["fileContent"] == text,
                      f"{name}: served {got['fileContent'][-40:]!r}, expected "
                      f"{text[-40:]!r}")


def driver_lines(path, reqs):
    """The handlers' answers to reqs on path, as the texts they print."""
    text = "".join(json.dumps(r) + "\n" for r in reqs)
    p = subprocess.run([DRIVER, path, ROOT], input=text.encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    check(p.returncode == 0, f"view_request_driver {path}: exit {p.returncode}")
    return p.stdout.decode().splitlines()


# A number of a JSON text, outside strings (after a colon, a bracket or a
# comma, before a comma or a bracket)
JSON_NUMBER = re.compile(r"(?<=[:\[,])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?=[,\]}])")


def page_data():
    """What the page shows comes right from the server: numbers in their
    shortest form, sampled stacks outermost first, slices under 1 ns on
    their thread's row, every repeated card id renamed."""
    # Numbers as the data has them: 341.693, not 341.69299999999998.
    line = driver_lines(sample("simulate_matmul"), [
        {"id": 1, "moduleName": "roofline", "type": "request", "command": "roofline/charts",
         "params": {}}])[0]
    reals = [t for t in JSON_NUMBER.findall(line) if re.search(r"[.eE]", t)]
    check(reals, "roofline/charts: no real number in the answer")
    long = [t for t in reals if len(t) > len(repr(float(t)))]
    check(not long, f"roofline/charts prints numbers longer than they are: {long[:4]}")

    # op --simulate's slices under 1 ns: in trace.json no two slices of a
    # thread overlap, so every thread is one row deep; such a slice says
    # it is brief.
    path = sample("simulate_matmul")
    with open(os.path.join(path, "trace.json")) as f:
        doc = json.load(f)
    xs = [e for e in (doc["traceEvents"] if isinstance(doc, dict) else doc) if e["ph"] == "X"]
    per = {}
    for e in xs:
        per.setdefault((str(e["pid"]), str(e["tid"])), []).append((e["ts"], e["ts"] + e["dur"]))
    for k, spans in per.items():
        spans.sort()
        check(all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:])),
              f"trace.json: slices of {k} overlap; the sample is not what this test expects")
    brief = [e for e in xs if 0 < e["dur"] < 0.001]
    check(brief, "simulate_matmul/trace.json has no slice under 1 ns")
    with Viewer(path) as v:
        threads = v.ok("timeline", "unit/threads", {"cardId": "simulate"})
        deep = [(p["pid"], t["tid"], t["maxDepth"]) for p in threads["processes"]
                for t in p["threads"] if t["maxDepth"]]
        check(not deep, f"threads with slices that do not overlap nest: {deep}")
        e = brief[0]
        t0 = round(e["ts"] * 1000)
        data = v.ok("timeline", "unit/threadTraces", {
            "cardId": "simulate", "processId": str(e["pid"]), "threadId": str(e["tid"]),
            "startTime": max(0, t0 - 2), "endTime": t0 + 2, "timePerPx": 0.01})["data"]
        items = [x for d in data for x in d if x["startTime"] == t0 and x["name"] == e["name"]]
        check(items, f"no slice {e['name']} at {t0} ns: {data}")
        d = v.ok("timeline", "unit/threadDetail", {"cardId": "simulate", "pid": str(e["pid"]),
                                                   "tid": str(e["tid"]), "id": items[0]["id"]})
        check(d["data"]["brief"] is True and d["data"]["depth"] == 0 and
              d["data"]["duration"] == 0, f"slice of {e['dur']} us: {d['data']}")

    # A sampled thread's depth-0 slices are the outermost frames: the
    # roots of the profile's tree, their children at depth 1.
    with Viewer(sample("sample_demo")) as v:
        tree = v.ok("profile", "profile/tree", {"cardId": "sample", "minPct": 0})
        roots = {r["function"] for r in tree["roots"]}
        second = {c["function"] for r in tree["roots"] for c in r["children"]}
        procs = v.ok("timeline", "unit/threads", {"cardId": "sample"})
        end = procs["endTime"]
        seen = 0
        for pr in procs["processes"]:
            for th in pr["threads"]:
                data = v.ok("timeline", "unit/threadTraces", {
                    "cardId": "sample", "processId": pr["pid"], "threadId": th["tid"],
                    "startTime": 0, "endTime": end, "timePerPx": max(1, -(-end // 50000))})["data"]
                for depth, want in ((0, roots), (1, second)):
                    names = {x["name"] for x in (data[depth] if len(data) > depth else [])
                             if x["count"] == 1}
                    check(names <= want, f"thread {th['tid']}: depth {depth} holds "
                          f"{sorted(names - want)}, not frames of depth {depth} of the tree")
                    seen += len(names)
        check(seen, "no slice of the samples' timeline was checked")

    # Three cards with one id are all named by their paths.
    tmp = tempfile.mkdtemp(prefix="ks-view-ids.")
    try:
        for d in ("a", "b", "c"):
            shutil.copytree(sample("memcheck_uaf"), os.path.join(tmp, d, "memcheck_uaf"))
        with Viewer(tmp) as v:
            cards = v.ok("timeline", "import/action", {})["result"]
            ids = sorted(c["cardId"] for c in cards)
            want = sorted(os.path.join(tmp, d, "memcheck_uaf") for d in ("a", "b", "c"))
            check(ids == want, f"cards with one id: {ids}, expected their paths {want}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


TESTS = [
    ("op", op),
    ("simulate", simulate),
    ("predict", predict),
    ("sample", sample_run),
    ("memcheck", lambda: findings("memcheck_uaf", "memcheck", "errors")),
    ("falseshare", lambda: findings("falseshare", "falseshare", "threads")),
    ("contention", lambda: findings("contention", "contention", "threads")),
    ("files", files),
    ("everything", everything),
    ("encodings", encodings),
    ("page data", page_data),
]


def main():
    failed = 0
    for name, fn in TESTS:
        try:
            fn()
            print(f"ok: {name}")
        except Failure as e:
            failed += 1
            print(f"FAIL: {name}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
