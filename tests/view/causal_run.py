"""A kscope causal run for kscope view's tests of the Causal tab
(causal_test.py, browser/causal_test.py), and its causal.csv read here,
independently of kscope view.

    run = make_run(kscope, examples_causal, include, parent)
    curves = read_curves(os.path.join(run, "causal.csv"))
"""
import csv
import glob
import os
import subprocess

TIMEOUT = 120


def make_run(kscope, examples, include, parent):
    """examples/causal/balance.c built with gcc into parent and run under
    `kscope causal` (three speedups, short experiments: a few seconds);
    the run directory.  Raises RuntimeError saying what failed."""
    lib = os.path.join(os.path.dirname(os.path.abspath(kscope)), "lib")
    prog = os.path.join(parent, "balance")
    p = subprocess.run(["gcc", "-g", "-O1", "-pthread", "-I" + include,
                        os.path.join(examples, "balance.c"), "-o", prog, "-L" + lib,
                        "-lkscope-user", "-Wl,-rpath," + lib],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
    if p.returncode != 0:
        raise RuntimeError(f"gcc balance.c: exit {p.returncode}: {p.stderr.decode()[-800:]}")
    out = os.path.join(parent, "out")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSCOPE_")}
    p = subprocess.run([kscope, "causal", "-o", out, "--speedups", "0,25,50",
                        "--experiment-ms", "100", "--", prog, "400"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT, env=env)
    runs = glob.glob(os.path.join(out, "causal_*"))
    if p.returncode != 0 or len(runs) != 1:
        raise RuntimeError(f"kscope causal: exit {p.returncode}, run directories {runs}: "
                           f"{p.stderr.decode()[-800:]}")
    return runs[0]


def _num(s):
    return None if s == "" else float(s)


def read_curves(path):
    """causal.csv as causal/curves gives it (docs/view.md): consecutive
    rows of one point, file and line are one curve, in the file's order,
    with its function (None where causal.csv has no such column or an
    empty cell); its impact the mean program speedup of its points above
    0%."""
    curves = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["point"], row["file"], int(row["line"]))
            if not curves or (curves[-1]["point"], curves[-1]["file"], curves[-1]["line"]) != key:
                curves.append({"point": key[0], "file": key[1], "line": key[2],
                               "function": row.get("function") or None, "points": []})
            curves[-1]["points"].append({
                "line_speedup_pct": float(row["line_speedup_pct"]),
                "program_speedup_pct": float(row["program_speedup_pct"]),
                "ci_low_pct": _num(row["ci_low_pct"]),
                "ci_high_pct": _num(row["ci_high_pct"]),
                "experiments": int(row["experiments"]),
                "visits": int(row["visits"]),
                "effective_s": float(row["effective_s"]),
            })
    for c in curves:
        up = [p["program_speedup_pct"] for p in c["points"] if p["line_speedup_pct"] > 0]
        c["impact_pct"] = sum(up) / len(up) if up else None
    return curves


def rewrite(path, edit):
    """Replaces the (read-only) file at path by edit(its lines)."""
    with open(path, newline="") as f:
        lines = f.read().split("\n")
    os.remove(path)
    with open(path, "w", newline="") as f:
        f.write("\n".join(edit(lines)))
