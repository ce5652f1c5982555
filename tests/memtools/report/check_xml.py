#!/usr/bin/env python3
"""Checks a memcheck.xml against Valgrind's XML output protocol 4.

Checks the layout Memcheck itself writes (valgrindoutput holding
protocolversion 4, protocoltool, preamble, pid, ppid, tool, args, a
RUNNING status, errors, client messages and errorcounts, a FINISHED
status, more errors, suppcounts), every error (unique, tid, kind from Memcheck's list, what or
xwhat, a stack of frames with ip first and obj/fn/dir/file/line in that
order) and that errorcounts refer to errors that exist.  Then the
expectations given on the command line.  Prints "ok: ..." and exits 0, or
prints what is wrong on stderr and exits 1.  Python standard library only.

usage: check_xml.py FILE [--expect-errors N] [--expect-kind KIND[:FILE:LINE]]...
                         [--expect-kind-count KIND:N]... [--expect-no-kind KIND]...

  --expect-errors N            exactly N <error> elements (leaks included)
  --expect-kind KIND           an error of KIND (e.g. InvalidRead)
  --expect-kind KIND:FILE:LINE ... whose primary stack has a frame at FILE:LINE
                               (FILE matches the <file> or its trailing path)
  --expect-kind-count KIND:N   exactly N errors of KIND
  --expect-no-kind KIND        no error of KIND
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET

MEMCHECK_KINDS = {
    "InvalidFree", "MismatchedFree", "InvalidRead", "InvalidWrite", "InvalidJump",
    "Overlap", "InvalidMemPool", "UninitCondition", "UninitValue", "SyscallParam",
    "ClientCheck", "Leak_DefinitelyLost", "Leak_IndirectlyLost", "Leak_PossiblyLost",
    "Leak_StillReachable", "FishyValue",
}
HEX = re.compile(r"^0x[0-9a-fA-F]{1,16}$")
FRAME_ORDER = ["ip", "obj", "fn", "dir", "file", "line"]


class Bad(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Bad(msg)


def is_int(text, minimum=None):
    try:
        v = int((text or "").strip())
    except ValueError:
        return False
    return minimum is None or v >= minimum


def check_stack(stack, where):
    frames = list(stack)
    need(frames, "%s: <stack> has no <frame>" % where)
    for i, fr in enumerate(frames):
        fw = "%s frame %d" % (where, i)
        need(fr.tag == "frame", "%s: <%s> in <stack>" % (fw, fr.tag))
        tags = [c.tag for c in fr]
        need(tags and tags[0] == "ip", "%s: <ip> is not first" % fw)
        need(HEX.match(fr.findtext("ip") or ""), "%s: <ip> is not HEX64" % fw)
        need(all(t in FRAME_ORDER for t in tags), "%s: unknown element in %s" % (fw, tags))
        order = [FRAME_ORDER.index(t) for t in tags]
        need(order == sorted(order) and len(set(tags)) == len(tags),
             "%s: elements out of order or repeated: %s" % (fw, tags))
        if fr.find("line") is not None:
            need(is_int(fr.findtext("line"), 1), "%s: <line> is not a positive integer" % fw)


def check_error(err, idx):
    where = "error %d" % idx
    kids = list(err)
    tags = [c.tag for c in kids]
    need(tags[:3] == ["unique", "tid", "kind"],
         "%s: does not start with unique, tid, kind: %s" % (where, tags[:3]))
    need(HEX.match(err.findtext("unique") or ""), "%s: <unique> is not HEX64" % where)
    need(is_int(err.findtext("tid"), 0), "%s: <tid> is not an integer" % where)
    kind = err.findtext("kind")
    need(kind in MEMCHECK_KINDS, "%s: unknown <kind> %r" % (where, kind))
    rest = tags[3:]
    nwhat = 0
    while rest and rest[0] in ("what", "xwhat"):
        nwhat += 1
        rest.pop(0)
    need(1 <= nwhat <= 2, "%s: needs one or two <what>/<xwhat>" % where)
    for xw in err.findall("xwhat"):
        need(xw.find("text") is not None, "%s: <xwhat> without <text>" % where)
    if kind.startswith("Leak_"):
        for tag in ("leakedbytes", "leakedblocks"):
            v = err.findtext("xwhat/" + tag)
            if v is None:
                v = err.findtext(tag)
            need(v is not None and is_int(v, 0), "%s: leak without <%s>" % (where, tag))
    while rest and rest[0] in ("leakedbytes", "leakedblocks"):
        rest.pop(0)
    need(rest and rest[0] == "stack", "%s: no <stack> after the description" % where)
    for t in rest[1:]:
        need(t in ("auxwhat", "xauxwhat", "stack", "origin", "suppression"),
             "%s: unexpected <%s>" % (where, t))
    for i, st in enumerate(err.findall("stack")):
        check_stack(st, "%s stack %d" % (where, i))
    return err.findtext("unique"), kind


def frame_matches(fr, file_, line):
    f = fr.findtext("file") or ""
    d = fr.findtext("dir") or ""
    full = (d.rstrip("/") + "/" + f) if d else f
    if fr.findtext("line") is None or int(fr.findtext("line")) != line:
        return False
    return f == file_ or full == file_ or full.endswith("/" + file_.lstrip("/"))


def check(path, args):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise Bad("cannot parse: %s" % e)
    need(root.tag == "valgrindoutput", "root is <%s>, not <valgrindoutput>" % root.tag)
    kids = list(root)
    tags = [c.tag for c in kids]
    need(tags[:2] == ["protocolversion", "protocoltool"],
         "does not start with protocolversion, protocoltool")
    need((root.findtext("protocolversion") or "").strip() == "4", "protocolversion is not 4")
    tool = (root.findtext("protocoltool") or "").strip()
    need(tool in ("memcheck", "helgrind", "ptrcheck", "drd", "exp-ptrcheck"),
         "unknown protocoltool %r" % tool)
    pos = 2
    for t in ("preamble", "pid", "ppid", "tool"):
        need(pos < len(tags) and tags[pos] == t, "<%s> missing or out of place" % t)
        pos += 1
    need(is_int(root.findtext("pid"), 0) and is_int(root.findtext("ppid"), 0),
         "<pid>/<ppid> are not integers")
    while pos < len(tags) and tags[pos] in ("logfilequalifier", "usercomment"):
        pos += 1
    need(pos < len(tags) and tags[pos] == "args", "<args> missing or out of place")
    a = kids[pos]
    for part in ("vargv", "argv"):
        need(a.find(part) is not None and a.find(part).find("exe") is not None,
             "<args> has no <%s><exe>" % part)
    pos += 1
    states = []
    errors = []
    counted = []
    saw_supp = False
    for el in kids[pos:]:
        need(not saw_supp, "<%s> after <suppcounts>" % el.tag)
        if el.tag == "status":
            states.append((el.findtext("state") or "").strip())
        elif el.tag == "error":
            need(states, "<error> before the RUNNING <status>")
            errors.append(el)
        elif el.tag == "errorcounts":
            for pair in el:
                need(pair.tag == "pair" and is_int(pair.findtext("count"), 1) and
                     HEX.match(pair.findtext("unique") or ""),
                     "<errorcounts> has a malformed <pair>")
                counted.append(pair.findtext("unique"))
        elif el.tag == "suppcounts":
            for pair in el:
                need(pair.tag == "pair" and is_int(pair.findtext("count"), 0) and
                     pair.find("name") is not None, "<suppcounts> has a malformed <pair>")
            saw_supp = True
        elif el.tag == "clientmsg":
            # A client's VALGRIND_PRINTF (kscope memcheck --heap-map's markers)
            need(states, "<clientmsg> before the RUNNING <status>")
            need(is_int(el.findtext("tid"), 1) and el.find("text") is not None,
                 "<clientmsg> without <tid> or <text>")
        else:
            raise Bad("unexpected <%s> in <valgrindoutput>" % el.tag)
    need(states[:1] == ["RUNNING"], "no RUNNING <status> first")
    need("FINISHED" in states, "no FINISHED <status>")
    need(saw_supp, "no <suppcounts>")
    uniques = {}
    for i, e in enumerate(errors):
        u, kind = check_error(e, i)
        need(u not in uniques, "error %d: <unique> %s repeats" % (i, u))
        uniques[u] = kind
    for u in counted:
        need(u in uniques, "<errorcounts> refers to unknown error %s" % u)

    kinds = [e.findtext("kind") for e in errors]
    if args.expect_errors is not None:
        need(len(errors) == args.expect_errors,
             "expected %d errors, found %d (%s)" % (args.expect_errors, len(errors),
                                                    ", ".join(kinds)))
    for spec in args.expect_kind:
        parts = spec.split(":")
        kind = parts[0]
        if len(parts) == 1:
            need(kind in kinds, "no %s error (found: %s)" % (kind, ", ".join(kinds)))
            continue
        need(len(parts) == 3 and parts[2].isdigit(), "bad --expect-kind %r" % spec)
        file_, line = parts[1], int(parts[2])
        ok = any(e.findtext("kind") == kind and
                 any(frame_matches(fr, file_, line) for fr in e.find("stack"))
                 for e in errors)
        need(ok, "no %s error at %s:%d" % (kind, file_, line))
    for spec in args.expect_kind_count:
        kind, _, n = spec.rpartition(":")
        need(n.isdigit(), "bad --expect-kind-count %r" % spec)
        need(kinds.count(kind) == int(n),
             "expected %s %s errors, found %d" % (n, kind, kinds.count(kind)))
    for kind in args.expect_no_kind:
        need(kind not in kinds, "unexpected %s error" % kind)
    return len(errors)


def main():
    p = argparse.ArgumentParser(description="Check a memcheck.xml (Valgrind XML protocol 4).")
    p.add_argument("file")
    p.add_argument("--expect-errors", type=int)
    p.add_argument("--expect-kind", action="append", default=[])
    p.add_argument("--expect-kind-count", action="append", default=[])
    p.add_argument("--expect-no-kind", action="append", default=[])
    args = p.parse_args()
    try:
        n = check(args.file, args)
    except Bad as e:
        print("check_xml: %s: %s" % (args.file, e), file=sys.stderr)
        return 1
    print("ok: %s: protocol 4, %d errors" % (args.file, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
