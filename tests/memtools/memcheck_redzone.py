#!/usr/bin/env python3
"""kscope memcheck and a heap overflow past the redzone.

The program (tests/memtools/procs/mt_overflow, no arguments) copies 100
bytes into a 50-byte block, prints its first byte and frees it.  With
Memcheck's 16-byte redzones the copy overwrites the next block's header
in Memcheck's own arena and Memcheck aborts at the free.

  default  kscope memcheck's default options (--xml added): Memcheck runs
           to the end; every byte written past the block (50 to 99) is in
           an invalid-write finding; exit 100 (findings), and with
           --error-exitcode 0 the program's own 0; its output printed;
           report.json (json), findings.sarif (json) and memcheck.xml
           (xml.etree) parse, and memcheck.xml has as many InvalidWrite
           errors as report.json has invalid-write findings.
  abort    --redzone 16: Memcheck aborts.  kscope exits 1 and says so,
           naming --redzone; report.json, report.txt and findings.sarif
           are well formed, hold the errors Memcheck wrote before the
           abort (as many as the complete <error> elements of its XML),
           say the run is incomplete and why (Memcheck's assertion, from
           valgrind.log) and suggest a larger --redzone; the program's
           exit status is unknown (null).

    memcheck_redzone.py KSCOPE BUILD_DIR SCENARIO
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from kstest import Failure, TempDirs, check, run_kscope, run_outputs  # noqa: E402

KSCOPE, BUILD, SCENARIO = sys.argv[1:4]
PROG = os.path.join(BUILD, "tests", "memtools", "procs", "mt_overflow")
BLOCK, COPIED = 50, 100


tmp = TempDirs("ks-redzone-")


def run(opts):
    """kscope memcheck OPTS -- mt_overflow: (exit, stdout, stderr, run dir)."""
    return run_kscope(KSCOPE, "memcheck", tmp(), opts, [PROG])


load = run_outputs


def invalid_writes(rep):
    return [e for e in rep["errors"] if e["kind"] == "invalid-write"]


def covered(writes):
    """The bytes past the block (50..99) that the findings' writes cover."""
    got = set()
    for e in writes:
        b = e.get("block")
        if not b or b["size"] != BLOCK or "size" not in e:
            continue
        got.update(range(b["offset"], b["offset"] + e["size"]))
    return got & set(range(BLOCK, COPIED))


def default():
    code, stdout, err, rundir = run(["--xml"])
    check(code == 100, f"exit {code}, expected 100 (findings); stderr:\n{err[-3000:]}")
    check(stdout == "A\n", f"the program's output: {stdout!r}")
    check("aborted" not in err, f"Memcheck aborted under the default redzone:\n{err[-3000:]}")
    rep, sarif, txt = load(rundir)
    check("incomplete" not in rep and not rep["truncated"],
          f"report.json: incomplete {rep.get('incomplete')!r}, truncated {rep['truncated']}")
    check(rep["exit"] == {"how": "exit", "code": 0}, f"report.json exit {rep['exit']}")
    writes = invalid_writes(rep)
    missing = sorted(set(range(BLOCK, COPIED)) - covered(writes))
    # Memcheck reports each context once, with a count: when a copy loop
    # writes past the block several times from one instruction and stack
    # (memcpy inlined as a loop of 8-byte stores), the repeats stand for
    # the bytes not named by an address.
    repeats = sum((e.get("count", 1) - 1) * e["size"] for e in writes
                  if (e.get("block") or {}).get("size") == BLOCK and "size" in e)
    check(len(missing) <= repeats, f"bytes past the block not reported: {missing} "
          f"(repeats of reported writes cover {repeats}); findings "
          f"{[(e.get('block'), e.get('size'), e.get('count')) for e in writes]}")
    # (clang names the file by its path from the build's directory)
    check(all(os.path.basename(e["location"]["file"]) == "mt_overflow.c"
              for e in writes if "location" in e),
          "an invalid write located outside mt_overflow.c")
    inv = sarif["runs"][0]["invocations"][0]
    check(inv["executionSuccessful"] is True, f"findings.sarif: {inv}")
    check(len(sarif["runs"][0]["results"]) == len(rep["errors"]) + len(rep["leaks"]),
          "findings.sarif: results and report.json's findings differ in number")
    xml_writes = [e for e in ET.parse(os.path.join(rundir, "memcheck.xml")).getroot()
                  .findall("error") if e.findtext("kind") == "InvalidWrite"]
    check(len(xml_writes) == len(writes),
          f"memcheck.xml: {len(xml_writes)} InvalidWrite, report.json {len(writes)}")
    check("incomplete" not in txt, "report.txt says the run is incomplete")
    # The program's status, when findings do not decide kscope's.
    code, stdout, err, rundir = run(["--error-exitcode", "0"])
    check(code == 0, f"--error-exitcode 0: exit {code}, expected the program's 0; {err[-2000:]}")


def abort():
    code, stdout, err, rundir = run(["--xml", "--redzone", "16"])
    with open(os.path.join(rundir, "valgrind.log"), errors="replace") as f:
        log = f.read()
    m = re.search(r"^valgrind: (m_mallocfree\.c:\d+ .*Assertion.*)$", log, re.M)
    check(m, "Memcheck did not abort in its allocator with --redzone 16 (the premise "
          f"of this test); valgrind.log:\n{log[-2000:]}")
    check(code == 1, f"exit {code}, expected 1 (the analysis failed); stderr:\n{err[-3000:]}")
    check("Memcheck aborted" in err and "--redzone" in err,
          f"stderr does not say Memcheck aborted and name --redzone:\n{err[-3000:]}")
    rep, sarif, txt = load(rundir)
    why = rep.get("incomplete", "")
    check("Memcheck aborted" in why and m.group(1) in why and "--redzone" in why,
          f"report.json: incomplete is {why!r}")
    check(rep["truncated"] is True, "report.json: truncated is not true")
    check(rep["exit"] is None, f"report.json: the program's exit is {rep['exit']}, not unknown")
    # The errors before the abort: every complete <error> of Memcheck's
    # XML (which is not well formed: more follows </valgrindoutput>).
    xmls = [f for f in os.listdir(rundir) if re.fullmatch(r"memcheck\.\d+\.xml", f)]
    check(len(xmls) == 1 and not os.path.exists(os.path.join(rundir, "memcheck.xml")),
          f"the damaged XML should keep its pid name: {os.listdir(rundir)}")
    with open(os.path.join(rundir, xmls[0]), errors="replace") as f:
        raw = f.read()
    ndone = raw.count("</error>")
    writes = invalid_writes(rep)
    check(ndone > 0 and len(rep["errors"]) == ndone and len(writes) == ndone,
          f"{ndone} complete errors in {xmls[0]}, report.json has {len(rep['errors'])} "
          f"({len(writes)} invalid writes)")
    check(BLOCK in covered(writes), "the first byte past the block is not reported")
    check("The run is incomplete" in txt and m.group(1) in txt and "--redzone" in txt,
          f"report.txt does not say the run is incomplete and why:\n{txt[-2000:]}")
    run0 = sarif["runs"][0]
    inv = run0["invocations"][0]
    notes = [n["message"]["text"] for n in inv.get("toolExecutionNotifications", [])]
    check(inv["executionSuccessful"] is False and any("--redzone" in n for n in notes),
          f"findings.sarif's invocation: {inv}")
    check(len(run0["results"]) == ndone, f"findings.sarif: {len(run0['results'])} results")


SCENARIOS = {"default": default, "abort": abort}

if __name__ == "__main__":
    try:
        if SCENARIO not in SCENARIOS:
            raise Failure(f"unknown scenario {SCENARIO}")
        SCENARIOS[SCENARIO]()
    except Failure as e:
        print(f"FAIL {SCENARIO}: {e}")
        sys.exit(1)
    finally:
        tmp.remove()
    print(f"ok {SCENARIO}")
