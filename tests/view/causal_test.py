#!/usr/bin/env python3
"""API tests of kscope view on a kscope causal run (docs/view.md, "Causal").

Builds examples/causal/balance.c and runs it under `kscope causal` in a
temporary directory (causal_run.py), then starts `kscope view --port 0` on
the run directory and checks, over the real server:

  - the run is one card, of kind causal, made by kscope causal;
  - causal/curves gives every curve of causal.csv in the file's order,
    each point's every field equal to the CSV's (read here with Python's
    csv module), each curve's impact the mean of its points above 0%, and
    no message;
  - its errors: no causal card (a memory tool's sample), a card without
    causal data, a card that does not exist, the wrong module; the
    handlers without the server (view_request_driver) give the same
    bodies;
  - a causal.csv without the function column (an older kscope causal's):
    the same curves, each with a null function;
  - a malformed causal.csv -- a header without line_speedup_pct, a cell
    that is not a number, a row of the wrong length -- still makes the
    card, with messages naming the file and the line, the rows that
    could be read as curves, and the server answers and stops as usual.

    causal_test.py KSCOPE VIEW_REQUEST_DRIVER EXAMPLES_CAUSAL INCLUDE SAMPLES
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/view/
from kstest import Failure, TempDirs, check  # noqa: E402
import causal_run  # noqa: E402  (tests/view/causal_run.py)
import viewer  # noqa: E402  (tests/view/viewer.py)

KSCOPE, DRIVER, EXAMPLES, INCLUDE, SAMPLES = sys.argv[1:6]
TIMEOUT = 60


def Viewer(path):
    return viewer.Viewer(KSCOPE, path)


def one_causal_card(v):
    cards = v.ok("timeline", "import/action", {})["result"]
    check(len(cards) == 1, f"{v.path}: {len(cards)} cards: {cards}")
    c = cards[0]
    check(c["kinds"] == ["causal"] and c["command"] == "causal" and c["cardId"] == "causal"
          and c["cardPath"] == v.path, f"{v.path}: card {c}")
    return c


def same_curves(got, want, where):
    """Every curve and every field of every point, in order."""
    check(len(got) == len(want), f"{where}: {len(got)} curves, causal.csv has {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        for k in ("point", "file", "line", "function"):
            check(g[k] == w[k], f"{where}: curve {i}: {k} {g[k]!r}, causal.csv has {w[k]!r}")
        check(g["impact_pct"] == w["impact_pct"] or
              abs(g["impact_pct"] - w["impact_pct"]) <= 1e-9 * abs(w["impact_pct"]),
              f"{where}: curve {i}: impact {g['impact_pct']}, the CSV's mean is "
              f"{w['impact_pct']}")
        check(len(g["points"]) == len(w["points"]),
              f"{where}: curve {i}: {len(g['points'])} points, causal.csv has "
              f"{len(w['points'])}")
        for j, (gp, wp) in enumerate(zip(g["points"], w["points"])):
            check(set(gp) == set(wp), f"{where}: curve {i} point {j}: keys {sorted(gp)}")
            for k, x in wp.items():
                y = gp[k]
                check(y == x and type(y) is type(x) or
                      (isinstance(x, float) and isinstance(y, int) and y == x),
                      f"{where}: curve {i} point {j}: {k} is {y!r}, causal.csv has {x!r}")


def curves(run):
    csv_path = os.path.join(run, "causal.csv")
    want = causal_run.read_curves(csv_path)
    check(want and all(len(c["points"]) >= 2 for c in want),
          f"{csv_path}: no curve of two points or more; the run gave nothing to show")
    with Viewer(run) as v:
        c = one_causal_card(v)
        body = v.ok("causal", "causal/curves", {"cardId": c["cardId"]})
        check(body["messages"] == [], f"messages on a good causal.csv: {body['messages']}")
        same_curves(body["curves"], want, "causal/curves")
        check(v.ok("causal", "causal/curves", {}) == body, "causal/curves without cardId "
              "differs from the causal card's")
        v.fails("causal", "causal/curves", {"cardId": "nope"},
                re.compile(r'params\.cardId "nope" is no card here; cards with "causal"'))
        v.fails("predict", "causal/curves", {},
                'causal/curves belongs to moduleName "causal", not "predict"')
        v.fails("predict", "predict/summary", {}, "the imported data has no predict data")
    return want


def errors(tmp, run):
    """causal/curves where there is no causal card, or not the one named;
    the handlers without the server answer alike."""
    with Viewer(os.path.join(SAMPLES, "memcheck_uaf")) as v:
        v.fails("causal", "causal/curves", {}, "the imported data has no causal data")
        v.fails("causal", "causal/curves", {"cardId": "memcheck"},
                'params.cardId "memcheck" is a card without that data; no card has causal')
    both = tmp()
    shutil.copytree(run, os.path.join(both, os.path.basename(run)))
    shutil.copytree(os.path.join(SAMPLES, "memcheck_uaf"), os.path.join(both, "memcheck_uaf"))
    reqs = [{"id": i, "moduleName": m, "type": "request", "command": cmd, "params": p}
            for i, (m, cmd, p) in enumerate([
                ("timeline", "import/action", {}),
                ("causal", "causal/curves", {}),
                ("causal", "causal/curves", {"cardId": "memcheck"}),
                ("findings", "findings/list", {"cardId": "causal"}),
            ])]
    with Viewer(both) as v:
        ids = sorted(c["cardId"] for c in v.ok("timeline", "import/action", {})["result"])
        check(ids == ["causal", "memcheck"], f"cards {ids}")
        v.fails("causal", "causal/curves", {"cardId": "memcheck"},
                'params.cardId "memcheck" is a card without that data; cards with "causal"')
        text = "".join(json.dumps(r) + "\n" for r in reqs)
        p = subprocess.run([DRIVER, both], input=text.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        check(p.returncode == 0, f"view_request_driver: exit {p.returncode}")
        lines = p.stdout.decode().splitlines()
        check(len(lines) == len(reqs), f"view_request_driver: {len(lines)} answers")
        for r, line in zip(reqs, lines):
            d = json.loads(line)
            s = v.raw(json.dumps(r))
            check(d["result"] == s["result"] and d["body"] == s["body"],
                  f"{r['command']} {r['params']}: the server and the handlers disagree")


def malformed(tmp, run, want):
    """A causal.csv kscope causal did not write is still a card, with
    messages naming the file and the line."""
    name = os.path.basename(run)

    def case(edit):
        d = os.path.join(tmp(), name)
        shutil.copytree(run, d)
        causal_run.rewrite(os.path.join(d, "causal.csv"), edit)
        return d, os.path.join(d, "causal.csv")

    # the header without line_speedup_pct: no curve, and why
    d, csv_path = case(lambda ls: [ls[0].replace("line_speedup_pct", "speedup")] + ls[1:])
    with Viewer(d) as v:
        one_causal_card(v)
        body = v.ok("causal", "causal/curves", {})
        check(body["curves"] == [], f"curves read under a wrong header: {body['curves']}")
        check(len(body["messages"]) == 1 and body["messages"][0].startswith(
              f'{csv_path}: line 1: the header is "point,file,line,speedup,') and
              "without line_speedup_pct;" in body["messages"][0],
              f"bad header: messages {body['messages']}")

    # a causal.csv of a kscope causal before the function column: the
    # same curves, each with a null function
    def no_function(ls):
        head = ls[0].split(",")
        k = head.index("function")
        return [",".join(x for i, x in enumerate(line.split(",")) if i != k) if line else line
                for line in ls]
    d, csv_path = case(no_function)
    with Viewer(d) as v:
        one_causal_card(v)
        body = v.ok("causal", "causal/curves", {})
        check(body["messages"] == [], f"without the function column: messages "
              f"{body['messages']}")
        check(all(c["function"] is None for c in body["curves"]),
              "without the function column: every curve's function is null")
        old = json.loads(json.dumps(want))
        for c in old:
            c["function"] = None
        same_curves(body["curves"], old, "causal.csv without its function column")

    # a cell that is not a number (line 3: the first curve's second point)
    # and a row cut short (the last line)
    def cells(ls):
        row = ls[2].split(",")
        row[4] = "n/a"
        ls = list(ls)
        ls[2] = ",".join(row)
        last = max(i for i, x in enumerate(ls) if x)
        ls[last] = ",".join(ls[last].split(",")[:5])
        return ls
    d, csv_path = case(cells)
    nlines = sum(1 for _ in open(csv_path))
    ncols = len(open(csv_path).readline().rstrip("\r\n").split(","))
    with Viewer(d) as v:
        one_causal_card(v)
        body = v.ok("causal", "causal/curves", {})
        check(body["messages"] == [
            f'{csv_path}: line 3: program_speedup_pct is "n/a"; a number is expected '
            "(the row is left out)",
            f"{csv_path}: line {nlines}: 5 fields, where the header has {ncols} (the row "
            "is left out)"], f"bad cells: messages {body['messages']}")
        kept = json.loads(json.dumps(want))
        del kept[0]["points"][1]
        del kept[-1]["points"][-1]
        for c in kept:
            up = [p["program_speedup_pct"] for p in c["points"] if p["line_speedup_pct"] > 0]
            c["impact_pct"] = sum(up) / len(up) if up else None
        got = body["curves"]
        check(all(g["impact_pct"] is None for g, k in zip(got, kept) if k["impact_pct"] is None),
              "a curve without points above 0% has an impact")
        for g, k in zip(got, kept):
            if k["impact_pct"] is None:
                g["impact_pct"] = k["impact_pct"] = 0.0
        same_curves(got, kept, "malformed causal.csv")


def main():
    tmp = TempDirs("ks-view-causal-")
    try:
        run = causal_run.make_run(KSCOPE, EXAMPLES, INCLUDE, tmp())
        want = curves(run)
        print(f"ok: causal/curves: {len(want)} curves, "
              f"{sum(len(c['points']) for c in want)} points as causal.csv has them")
        errors(tmp, run)
        print("ok: errors")
        malformed(tmp, run, want)
        print("ok: malformed causal.csv")
    except (Failure, RuntimeError) as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        tmp.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
