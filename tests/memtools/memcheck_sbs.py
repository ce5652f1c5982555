#!/usr/bin/env python3
"""kscope memcheck side by side with Valgrind's Memcheck.

For one program, runs `valgrind --tool=memcheck --xml=yes
--leak-check=full` itself and `kscope memcheck` on the same binary, reads
Memcheck's XML here with xml.etree (independently of kscope's reader) and
compares it with kscope's report.json:

  - with --no-filter: the same findings -- kind (Memcheck's kind mapped to
    kscope's name by the table of docs/memtools.md), count, leaked bytes
    and blocks, and source line (the first frame in the program's own
    code: not Valgrind's replacement functions, not a system library);
  - with the default filter: exactly Memcheck's findings whose top three
    frames (after Valgrind's replacement functions) have a line number,
    and the others counted as filtered;
  - every `/* DEFECT: kind */` marker of the program's source is a finding
    of that kind at that line, and a program without markers (the clean
    ones) has no finding at all;
  - the exit status: 100 when something was reported, else the
    program's own.

    memcheck_sbs.py KSCOPE BUILD_DIR SOURCE_DIR NAME [--heap-map]

NAME is a program of examples/memory, or "everyday" (ls -l /, sort on a
file, /usr/bin/python3 -c pass: nothing may be reported by default).
With --heap-map, every kscope memcheck run has that option: its
allocation wrappers must leave Memcheck's findings as they are.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from kstest import Failure, check  # noqa: E402

KSCOPE, BUILD, SRC, NAME = sys.argv[1:5]
MODE_OPTS = sys.argv[5:]  # ["--heap-map"] or nothing
MEM = os.path.join(BUILD, "examples", "memory")
FINDINGS = 100
# Options both runs get, per program (leak_kinds lists every kind).
EXTRA = {"leak_kinds": ["--show-leak-kinds=all"]}
KSCOPE_EXTRA = {"leak_kinds": ["--show-leak-kinds", "all"]}
SYSTEM_DIRS = ("/lib/", "/lib32/", "/lib64/", "/libx32/", "/usr/lib/", "/usr/lib32/",
               "/usr/lib64/", "/usr/libx32/", "/usr/libexec/valgrind/")

# Memcheck's kinds -> kscope's (docs/memtools.md, "Kinds").
PLAIN = {
    "MismatchedFree": "mismatched-free", "UninitCondition": "uninit-cond",
    "UninitValue": "uninit-value", "Overlap": "overlap", "FishyValue": "fishy-value",
    "ClientCheck": "client-check", "InvalidJump": "invalid-jump",
    "InvalidMemPool": "invalid-mempool", "Leak_DefinitelyLost": "leak-definite",
    "Leak_IndirectlyLost": "leak-indirect", "Leak_PossiblyLost": "leak-possible",
    "Leak_StillReachable": "leak-reachable",
}
FREED = re.compile(r" a block of size [\d,]+ free'd$")


def kscope_kind(err):
    kind = err.findtext("kind")
    aux = err.findtext("auxwhat") or ""
    freed = bool(FREED.search(aux))
    what = err.findtext("what") or err.findtext("xwhat/text") or ""
    if kind in ("InvalidRead", "InvalidWrite"):
        return "use-after-free" if freed else \
            ("invalid-read" if kind == "InvalidRead" else "invalid-write")
    if kind == "InvalidFree":
        return "double-free" if freed else "invalid-free"
    if kind == "SyscallParam":
        return "invalid-syscall" if "unaddressable" in what else "uninit-syscall"
    return PLAIN.get(kind, "other")


def replacement(fr):
    obj = os.path.basename(fr.get("obj") or "")
    fn = fr.get("fn") or ""
    return obj.startswith("vgpreload_") or fn.startswith(("vg_replace_", "_vgr"))


def user_line(frames):
    """(file base name, line) of the first frame in the user's code."""
    for fr in frames:
        if fr.get("line") and fr.get("file") and not replacement(fr) and \
                not (fr.get("obj") or "").startswith(SYSTEM_DIRS):
            return os.path.basename(fr["file"]), int(fr["line"])
    for fr in frames:
        if fr.get("line") and fr.get("file"):
            return os.path.basename(fr["file"]), int(fr["line"])
    return None


def kept_by_filter(frames):
    i = 0
    while i + 1 < len(frames) and replacement(frames[i]):
        i += 1
    return any(fr.get("line") and fr.get("fn") != "(below main)" for fr in frames[i:i + 3])


def xml_frames(stack):
    return [{c.tag: c.text for c in fr} for fr in stack.findall("frame")]


def valgrind_findings(argv, extra, stdin_path):
    """Memcheck's findings, read here: [(kind, where, count, bytes, blocks, kept)]."""
    with tempfile.TemporaryDirectory(prefix="ks-sbs-vg-") as tmp:
        xml = os.path.join(tmp, "vg.xml")
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        env = {k: v for k, v in os.environ.items() if k not in ("VALGRIND_OPTS", "VALGRIND_LIB")}
        subprocess.run(["valgrind", "--tool=memcheck", "--xml=yes", f"--xml-file={xml}",
                        "--leak-check=full", *extra, *argv], stdin=stdin,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                       timeout=600)
        root = ET.parse(xml).getroot()
    counts = {p.findtext("unique"): int(p.findtext("count"))
              for p in root.findall("errorcounts/pair")}
    out = []
    for err in root.findall("error"):
        frames = xml_frames(err.find("stack"))
        leak = (err.findtext("kind") or "").startswith("Leak_")
        out.append((kscope_kind(err), user_line(frames),
                    1 if leak else counts.get(err.findtext("unique"), 1),
                    int(err.findtext("xwhat/leakedbytes") or 0),
                    int(err.findtext("xwhat/leakedblocks") or 0),
                    kept_by_filter(frames)))
    return out


def kscope_run(argv, opts, stdin_path):
    out = tempfile.mkdtemp(prefix="ks-sbs-")
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    p = subprocess.run([KSCOPE, "memcheck", "-o", out, "--log-level", "warn", *MODE_OPTS,
                        *opts, "--", *argv], stdin=stdin, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=600)
    try:
        runs = os.listdir(out)
        check(len(runs) == 1,
              f"{argv}: no run directory; stderr:\n{p.stderr.decode()[-2000:]}")
        with open(os.path.join(out, runs[0], "report.json")) as f:
            rep = json.load(f)
    finally:
        # kscope makes its run directory read-only: opened up first.
        for root, dirs, _ in os.walk(out):
            for x in dirs:
                os.chmod(os.path.join(root, x), 0o700)
        shutil.rmtree(out, ignore_errors=True)
    return p.returncode, rep


def where(item):
    loc = item.get("location")
    if not loc or not loc.get("line") or not loc.get("file"):
        return None
    return os.path.basename(loc["file"]), loc["line"]


def kscope_findings(rep):
    out = [(e["kind"], where(e), e["count"], 0, 0) for e in rep["errors"]]
    out += [(l["kind"], where(l), 1, l["bytes"], l["blocks"]) for l in rep["leaks"]]
    return sorted(out, key=repr)


def markers(path):
    """[(kind, (file, line))] of the /* DEFECT: kind */ markers."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"/\*\s*DEFECT:\s*([\w-]+)", line)
            if m:
                out.append((m.group(1), (os.path.basename(path), n)))
    return out


def compare(argv, label, extra=(), kextra=(), stdin_path=None, source=None,
            expect_clean=False):
    vg = valgrind_findings(argv, list(extra), stdin_path)
    native = subprocess.run(argv, stdin=open(stdin_path, "rb") if stdin_path else None,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

    # Everything, unfiltered.
    code, rep = kscope_run(argv, ["--no-filter", *kextra], stdin_path)
    got = kscope_findings(rep)
    want = sorted([f[:5] for f in vg], key=repr)
    check(got == want, f"{label} --no-filter: kscope and Memcheck differ\n"
          f"  kscope:   {got}\n  Memcheck: {want}")

    # The default filter.
    code, rep = kscope_run(argv, list(kextra), stdin_path)
    got = kscope_findings(rep)
    want = sorted([f[:5] for f in vg if f[5]], key=repr)
    check(got == want, f"{label}: kscope and filtered Memcheck differ\n"
          f"  kscope:   {got}\n  Memcheck: {want}")
    dropped = sum(1 for f in vg if not f[5])
    check(rep["summary"]["filtered"] == dropped,
          f"{label}: filtered {rep['summary']['filtered']}, expected {dropped}")
    errors = [e for e in rep["errors"]] + [l for l in rep["leaks"] if l["counted_as_error"]]
    check(code == (FINDINGS if errors else native),
          f"{label}: exit {code}, expected {FINDINGS if errors else native}")

    if expect_clean:
        check(not got, f"{label}: expected no report, got {got}")
    if source:
        found = {(k, w) for k, w, *_ in got}
        marks = markers(source)
        for kind, at in marks:
            check((kind, at) in found, f"{label}: no {kind} at {at[0]}:{at[1]}; got {got}")
        if not marks:
            check(not got, f"{label}: a program without defects got {got}")
    print(f"ok {label}: {len(got)} findings, {dropped} filtered, "
          f"kinds {sorted({k for k, *_ in got})}")


def main():
    if NAME == "everyday":
        with tempfile.TemporaryDirectory(prefix="ks-sbs-sort-") as tmp:
            path = os.path.join(tmp, "in.txt")
            with open(path, "w") as f:
                for i in range(2000):
                    f.write(f"{(i * 7919) % 2003} line {i}\n")
            compare(["ls", "-l", "/"], "ls -l /", expect_clean=True)
            compare(["sort", path], "sort", expect_clean=True)
            compare(["/usr/bin/python3", "-c", "pass"], "python3 -c pass",
                    expect_clean=True)
        return
    exe = os.path.join(MEM, NAME)
    check(os.access(exe, os.X_OK), f"{exe} is missing: build the examples first")
    src = [os.path.join(SRC, "examples", "memory", NAME + ext) for ext in (".c", ".cpp")]
    src = [s for s in src if os.path.exists(s)][0]
    compare([exe], NAME, EXTRA.get(NAME, ()), KSCOPE_EXTRA.get(NAME, ()), source=src,
            expect_clean=NAME.endswith("_clean") or NAME == "struct_copy")


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print(f"FAIL {NAME}: {e}")
        sys.exit(1)
