#!/usr/bin/env python3
"""Checks a SARIF file against the structural rules of SARIF 2.1.0 that
consumers depend on, then optional expectations.

Rules checked: version "2.1.0"; runs is a non-empty array; each run has
tool.driver.name; rule ids are unique strings; every result has
message.text, a level from the SARIF enumeration (if given), a ruleId
naming a rule of the driver (and ruleIndex pointing at that rule, if
given); every location (result locations, relatedLocations, stack frames)
has a physicalLocation with an artifactLocation or an address; an
artifactLocation.uri is a non-empty URI reference without spaces or
control characters; a region has startLine >= 1 (endLine >= startLine);
occurrenceCount >= 1.  Prints "ok: ..." and exits 0, or prints what is
wrong on stderr and exits 1.  Python standard library only.

usage: check_sarif.py FILE [--expect-results N] [--expect-rule RULE[:FILE:LINE]]...
                           [--expect-rule-count RULE:N]... [--expect-level LEVEL]

  --expect-results N            exactly N results in run 0
  --expect-rule RULE            a result with ruleId RULE (--expect-kind is the same)
  --expect-rule RULE:FILE:LINE  ... located at FILE:LINE (the uri ends with FILE)
  --expect-rule-count RULE:N    exactly N results with ruleId RULE
  --expect-level LEVEL          every result has this level
"""
import argparse
import json
import re
import sys
import urllib.parse

LEVELS = {"none", "note", "warning", "error"}
KINDS = {"notApplicable", "pass", "fail", "review", "open", "informational"}
BAD_URI = re.compile(r"[\s\x00-\x1f\x7f<>\"{}|\\^`]")


class Bad(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Bad(msg)


def is_int(v, minimum):
    return isinstance(v, int) and not isinstance(v, bool) and v >= minimum


def check_text_message(m, where):
    need(isinstance(m, dict), "%s: message is not an object" % where)
    need(isinstance(m.get("text"), str) and m["text"], "%s: message.text missing or empty" % where)


def check_physical(p, where):
    need(isinstance(p, dict), "%s: physicalLocation is not an object" % where)
    need("artifactLocation" in p or "address" in p,
         "%s: physicalLocation has neither artifactLocation nor address" % where)
    if "artifactLocation" in p:
        a = p["artifactLocation"]
        need(isinstance(a, dict), "%s: artifactLocation is not an object" % where)
        uri = a.get("uri")
        need(isinstance(uri, str) and uri, "%s: artifactLocation.uri missing or empty" % where)
        need(not BAD_URI.search(uri), "%s: uri %r is not a valid URI reference" % (where, uri))
        try:
            urllib.parse.urlsplit(uri)
        except ValueError as e:
            raise Bad("%s: uri %r: %s" % (where, uri, e))
    if "region" in p:
        r = p["region"]
        need(isinstance(r, dict), "%s: region is not an object" % where)
        if "startLine" in r or "endLine" in r:
            need(is_int(r.get("startLine"), 1), "%s: region.startLine < 1 or not an integer" % where)
        if "endLine" in r:
            need(is_int(r["endLine"], r["startLine"]), "%s: region.endLine < startLine" % where)
        for k in ("startColumn", "endColumn"):
            if k in r:
                need(is_int(r[k], 1), "%s: region.%s < 1" % (where, k))
    if "address" in p:
        ad = p["address"]
        need(isinstance(ad, dict), "%s: address is not an object" % where)
        if "absoluteAddress" in ad:
            need(is_int(ad["absoluteAddress"], -1), "%s: absoluteAddress is not an integer" % where)


def check_location(loc, where):
    need(isinstance(loc, dict), "%s: location is not an object" % where)
    if "physicalLocation" in loc:
        check_physical(loc["physicalLocation"], where)
    if "message" in loc:
        check_text_message(loc["message"], where)
    for i, ll in enumerate(loc.get("logicalLocations", [])):
        need(isinstance(ll, dict), "%s: logicalLocations[%d] is not an object" % (where, i))


def check_result(res, i, rules, rule_ids):
    where = "result %d" % i
    need(isinstance(res, dict), "%s: not an object" % where)
    check_text_message(res.get("message"), where)
    if "level" in res:
        need(res["level"] in LEVELS, "%s: level %r is not one of %s" % (where, res["level"],
                                                                       sorted(LEVELS)))
    if "kind" in res:
        need(res["kind"] in KINDS, "%s: kind %r is not valid" % (where, res["kind"]))
    if "ruleId" in res:
        need(isinstance(res["ruleId"], str), "%s: ruleId is not a string" % where)
        if rules:
            need(res["ruleId"] in rule_ids, "%s: ruleId %r names no rule" % (where, res["ruleId"]))
    if "ruleIndex" in res:
        idx = res["ruleIndex"]
        need(is_int(idx, 0) and idx < len(rules), "%s: ruleIndex %r out of range" % (where, idx))
        if "ruleId" in res:
            need(rules[idx].get("id") == res["ruleId"],
                 "%s: ruleIndex %d is rule %r, not %r" % (where, idx, rules[idx].get("id"),
                                                          res["ruleId"]))
    need("ruleId" in res or "ruleIndex" in res or "rule" in res, "%s: names no rule" % where)
    if "occurrenceCount" in res:
        need(is_int(res["occurrenceCount"], 1), "%s: occurrenceCount < 1" % where)
    for j, loc in enumerate(res.get("locations", [])):
        check_location(loc, "%s location %d" % (where, j))
    for j, loc in enumerate(res.get("relatedLocations", [])):
        check_location(loc, "%s relatedLocation %d" % (where, j))
    for j, st in enumerate(res.get("stacks", [])):
        need(isinstance(st, dict) and isinstance(st.get("frames"), list),
             "%s stack %d: no frames array" % (where, j))
        if "message" in st:
            check_text_message(st["message"], "%s stack %d" % (where, j))
        for k, fr in enumerate(st["frames"]):
            need(isinstance(fr, dict), "%s stack %d frame %d: not an object" % (where, j, k))
            if "location" in fr:
                check_location(fr["location"], "%s stack %d frame %d" % (where, j, k))


def result_at(res, file_, line):
    for loc in res.get("locations", []):
        p = loc.get("physicalLocation", {})
        uri = urllib.parse.unquote(p.get("artifactLocation", {}).get("uri", ""))
        if p.get("region", {}).get("startLine") == line and \
                (uri == file_ or uri.endswith("/" + file_.lstrip("/"))):
            return True
    return False


def check(path, args):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise Bad("cannot read JSON: %s" % e)
    need(isinstance(doc, dict), "top level is not an object")
    need(doc.get("version") == "2.1.0", "version is %r, not \"2.1.0\"" % doc.get("version"))
    if "$schema" in doc:
        need(isinstance(doc["$schema"], str), "$schema is not a string")
    runs = doc.get("runs")
    need(isinstance(runs, list) and runs, "runs is missing or empty")
    first = None
    for r_i, run in enumerate(runs):
        need(isinstance(run, dict), "run %d is not an object" % r_i)
        driver = run.get("tool", {}).get("driver") if isinstance(run.get("tool"), dict) else None
        need(isinstance(driver, dict), "run %d: no tool.driver" % r_i)
        need(isinstance(driver.get("name"), str) and driver["name"],
             "run %d: tool.driver.name missing" % r_i)
        rules = driver.get("rules", [])
        need(isinstance(rules, list), "run %d: rules is not an array" % r_i)
        ids = []
        for k, rule in enumerate(rules):
            need(isinstance(rule, dict) and isinstance(rule.get("id"), str) and rule["id"],
                 "run %d: rule %d has no id" % (r_i, k))
            ids.append(rule["id"])
            if "shortDescription" in rule:
                check_text_message(rule["shortDescription"], "rule %s shortDescription" % rule["id"])
            lvl = rule.get("defaultConfiguration", {}).get("level")
            need(lvl is None or lvl in LEVELS, "rule %s: bad default level %r" % (rule["id"], lvl))
        need(len(set(ids)) == len(ids), "run %d: rule ids repeat" % r_i)
        for k, inv in enumerate(run.get("invocations", [])):
            need(isinstance(inv.get("executionSuccessful"), bool),
                 "run %d invocation %d: executionSuccessful missing" % (r_i, k))
        results = run.get("results", [])
        need(isinstance(results, list), "run %d: results is not an array" % r_i)
        for i, res in enumerate(results):
            check_result(res, i, rules, set(ids))
        if first is None:
            first = results

    rule_ids = [r.get("ruleId") for r in first]
    if args.expect_results is not None:
        need(len(first) == args.expect_results,
             "expected %d results, found %d" % (args.expect_results, len(first)))
    for spec in args.expect_rule:
        parts = spec.split(":")
        if len(parts) == 1:
            need(parts[0] in rule_ids, "no %s result (found: %s)" % (parts[0], ", ".join(
                sorted(set(map(str, rule_ids))))))
            continue
        need(len(parts) == 3 and parts[2].isdigit(), "bad --expect-rule %r" % spec)
        need(any(r.get("ruleId") == parts[0] and result_at(r, parts[1], int(parts[2]))
                 for r in first), "no %s result at %s:%s" % tuple(parts))
    for spec in args.expect_rule_count:
        rule, _, n = spec.rpartition(":")
        need(n.isdigit(), "bad --expect-rule-count %r" % spec)
        need(rule_ids.count(rule) == int(n),
             "expected %s %s results, found %d" % (n, rule, rule_ids.count(rule)))
    if args.expect_level:
        for i, r in enumerate(first):
            need(r.get("level", "warning") == args.expect_level,
                 "result %d: level %r, expected %r" % (i, r.get("level"), args.expect_level))
    return len(first)


def main():
    p = argparse.ArgumentParser(description="Check a SARIF 2.1.0 file.")
    p.add_argument("file")
    p.add_argument("--expect-results", type=int)
    p.add_argument("--expect-rule", "--expect-kind", action="append", default=[])
    p.add_argument("--expect-rule-count", action="append", default=[])
    p.add_argument("--expect-level")
    args = p.parse_args()
    try:
        n = check(args.file, args)
    except Bad as e:
        print("check_sarif: %s: %s" % (args.file, e), file=sys.stderr)
        return 1
    print("ok: %s: SARIF 2.1.0, %d results" % (args.file, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
