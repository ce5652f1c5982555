"""The man pages and bash completion kscope generates from its command and
option tables (src/cli/gendoc.c), checked against what `kscope --help` and
`kscope CMD --help` print: both are parsed, nothing is listed here.

    usage: test_gendoc.py KSCOPE MANDIR COMPLETION SCENARIO

MANDIR and COMPLETION are what the build generated (build/man/man1,
build/completion/kscope; build/man/gz has the pages as installed).
Scenarios:

  pages       every command has a page, and no page is left over; each
              page's name line and synopsis are the help's; kscope.1 lists
              the commands, and the exit statuses `kscope --help` lists
              (their values); build/man/gz holds each page compressed;
              `kscope help --man DIR` and `--completion FILE` make the
              same files again, and refuse a missing argument or directory
  options     each page lists the options `kscope CMD --help` lists, in
              its order, each with the same short name, metavar, help,
              accepted values, default and environment variable
  groff       groff renders each page without a warning (-ww)
  completion  the script, sourced in bash, completes the commands, each
              command's options, the choices of every enum option, file
              names where paths go, and nothing of kscope's after `--`
              or the program's name
Everything is written under a temporary directory, removed at the end.
"""
import gzip
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # tests/, for kstest
from kstest import Failure, check, TempDirs  # noqa: E402


def run(argv, **kw):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("KSCOPE_"):
            del env[k]
    return subprocess.run(argv, capture_output=True, text=True, env=env, **kw)


def help_text(kscope, *args):
    r = run([kscope, *args])
    check(r.returncode == 0, f"kscope {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


# ------------------------------------------------------------------
# What --help says
# ------------------------------------------------------------------

def section(text, title):
    """The lines after the line `title` up to the next blank line."""
    lines = text.split("\n")
    check(title in lines, f"no '{title}' section in:\n{text}")
    out = []
    for line in lines[lines.index(title) + 1:]:
        if not line.strip():
            break
        out.append(line)
    return out


def main_help(kscope):
    """(commands {name: summary} in order, main options, exit statuses)."""
    text = help_text(kscope, "--help")
    cmds = {}
    for line in section(text, "Commands:"):
        name, summary = line.split(None, 1)
        cmds[name] = summary
    opts = set()
    for line in section(text, "Options:"):
        m = re.match(r"\s+(?:(-\w), )?(--[\w-]+)", line)
        check(m, f"kscope --help: cannot read option line {line!r}")
        opts.update(x for x in m.groups() if x)
    statuses = {}
    for line in section(text, "Exit status:"):
        m = re.match(r"\s+(\d+)\s+(.*)", line)
        if m:
            statuses[int(m.group(1))] = m.group(2)
    check(statuses, "no numbered exit statuses under 'Exit status:' in kscope --help")
    return cmds, opts, statuses


def norm(s):
    return " ".join(s.split())


def command_help(kscope, cmd):
    """(usage, [option dicts in order]) from `kscope CMD --help`.

    ks_opt_print_help writes each option as a head ("  -o, --name META")
    with its help from column 31, an "accepts ..." line and a
    "default ...; env ..." line at column 33, continuations at 31 (help)
    and 35 (the others)."""
    text = help_text(kscope, cmd, "--help")
    first = text.split("\n", 1)[0]
    prefix = f"usage: kscope {cmd} "
    check(first.startswith(prefix), f"kscope {cmd} --help: first line {first!r}")
    usage = first[len(prefix):]
    opts, cur, field = [], None, None
    for line in section(text, "Options:"):
        m = re.match(r"^  (?:-(\S), |    )--([\w-]+)(?: (\S+))?(.*)$", line)
        if m:
            cur = {"short": m.group(1), "name": m.group(2), "metavar": m.group(3),
                   "help": m.group(4).strip(), "accepts": None, "default": None,
                   "env": None, "_info": []}
            opts.append(cur)
            field = "help"
            continue
        check(cur is not None, f"kscope {cmd} --help: stray line {line!r}")
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if indent == 31 and field == "help":
            cur["help"] += " " + body
        elif indent == 33:
            cur["_info"].append(body)
            field = "info"
        elif indent == 35 and cur["_info"]:
            cur["_info"][-1] += " " + body
        else:
            raise Failure(f"kscope {cmd} --help: cannot place {line!r}")
    for o in opts:
        for info in o.pop("_info"):
            if info.startswith("accepts "):
                o["accepts"] = norm(info[len("accepts "):])
                continue
            m = re.fullmatch(r"(?:default (.*?))?(?:(?:; )?env (\S+))?", info)
            check(m and (m.group(1) is not None or m.group(2)),
                  f"kscope {cmd} --help --{o['name']}: cannot read {info!r}")
            o["default"], o["env"] = m.group(1), m.group(2)
        o["help"] = norm(o["help"])
        # "(repeatable)" is added by the option table's flag: a help text
        # that says it too prints it twice.
        check("(repeatable) (repeatable)" not in o["help"],
              f"kscope {cmd} --help --{o['name']}: {o['help']!r} says (repeatable) twice")
    return usage, opts


# ------------------------------------------------------------------
# What the pages say
# ------------------------------------------------------------------

ROFF_ESC = {"-": "-", "e": "\\", "&": "", "(aq": "'", "(ga": "`", "(ha": "^",
            "(ti": "~", "(lq": '"', "(rq": '"'}


def roff_plain(s):
    """An input line's text: escapes resolved, font changes dropped."""
    def one(m):
        e = m.group(1)
        if e[0] == "f":
            return ""
        check(e in ROFF_ESC, f"unexpected roff escape \\{e} in {s!r}")
        return ROFF_ESC[e]
    return re.sub(r"\\(\(..|f.|.)", one, s)


def page_sections(path):
    """{section title: [input lines]}, plus '.TH' for the title line."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    secs, cur = {}, None
    for line in lines:
        if line.startswith(".TH "):
            secs[".TH"] = [line]
        elif line.startswith(".SH "):
            cur = line[4:].strip('"')
            check(cur not in secs, f"{path}: section {cur} twice")
            secs[cur] = []
        elif cur is not None:
            secs[cur].append(line)
    return secs


def tp_blocks(lines):
    """The .TP items of a section: [(tag, [body lines])]."""
    items = []
    for i, line in enumerate(lines):
        if line == ".TP":
            body = []
            for b in lines[i + 2:]:
                if b in (".TP", ".PP"):
                    break
                body.append(b)
            items.append((roff_plain(lines[i + 1]), body))
    return items


def page_options(path, title="OPTIONS"):
    opts = []
    for tag, body in tp_blocks(page_sections(path).get(title, [])):
        m = re.fullmatch(r"(?:-(\S), )?--([\w-]+)(?: (\S+))?", tag)
        check(m, f"{path}: option tag {tag!r}")
        o = {"short": m.group(1), "name": m.group(2), "metavar": m.group(3),
             "help": [], "accepts": None, "default": None, "env": None}
        label = None
        for b in body:
            if b == ".br":
                label = "next"
                continue
            text = roff_plain(b)
            if label is None:
                o["help"].append(text)
                continue
            m = re.fullmatch(r"(Accepts|Default|Environment): (.*)", text)
            check(m, f"{path} --{o['name']}: cannot read {text!r}")
            key = {"Accepts": "accepts", "Default": "default",
                   "Environment": "env"}[m.group(1)]
            check(o[key] is None, f"{path} --{o['name']}: {m.group(1)} twice")
            o[key] = norm(m.group(2)) if key == "accepts" else m.group(2)
        o["help"] = norm(" ".join(o["help"]))
        opts.append(o)
    return opts


# ------------------------------------------------------------------
# Scenarios
# ------------------------------------------------------------------

def scenario_pages(kscope, mandir, completion, tmp):
    cmds, _, statuses = main_help(kscope)
    cmds.pop("help", None)
    check(cmds, "kscope --help lists no commands")
    want = {"kscope.1"} | {f"kscope-{c}.1" for c in cmds}
    have = set(os.listdir(mandir))
    check(have == want, f"{mandir}: pages {sorted(have)}, expected {sorted(want)}")
    for c, summary in cmds.items():
        path = os.path.join(mandir, f"kscope-{c}.1")
        secs = page_sections(path)
        usage, _ = command_help(kscope, c)
        title = ".TH KSCOPE\\-" + c.upper().replace("-", "\\-") + " 1 "
        check(secs[".TH"][0].startswith(title), f"{path}: title {secs['.TH'][0]!r}")
        name = norm(roff_plain(" ".join(secs["NAME"])))
        check(name == f"kscope-{c} - {summary}", f"{path}: NAME {name!r}, help says {summary!r}")
        syn = norm(roff_plain(" ".join(secs["SYNOPSIS"])))
        check(syn == norm(f"kscope {c} {usage}"), f"{path}: SYNOPSIS {syn!r}, help: {usage!r}")
        desc = [roff_plain(x) for x in secs["DESCRIPTION"] if not x.startswith(".")]
        check(desc, f"{path}: empty DESCRIPTION")
    main = page_sections(os.path.join(mandir, "kscope.1"))
    listed = [t.split()[0] for t, _ in tp_blocks(main["COMMANDS"])]
    check(listed == ["help"] + list(cmds), f"kscope.1 COMMANDS {listed}, help: {list(cmds)}")
    seealso = roff_plain(" ".join(main["SEE ALSO"]))
    for c in cmds:
        check(f"kscope-{c}(1)" in seealso, f"kscope.1 SEE ALSO lacks kscope-{c}(1)")
    # The statuses are cli.h's KS_EXIT_* in both; the words are written
    # twice (main.c, gendoc.c), so only the values are compared.
    exits = {}
    for tag, body in tp_blocks(main["EXIT STATUS"]):
        if tag.isdigit():
            exits[int(tag)] = norm(roff_plain(" ".join(body)))
    check(sorted(exits) == sorted(statuses),
          f"kscope.1 EXIT STATUS {exits}, kscope --help: {statuses}")

    # The compressed copies that are installed (build/man/gz).
    gzdir = os.path.join(os.path.dirname(mandir), "gz")
    have = set(os.listdir(gzdir))
    check(have == {p + ".gz" for p in want}, f"{gzdir}: {sorted(have)}")
    for p in want:
        with gzip.open(os.path.join(gzdir, p + ".gz")) as a, \
             open(os.path.join(mandir, p), "rb") as b:
            check(a.read() == b.read(), f"{gzdir}/{p}.gz is not {p}")

    # The same files again from the mode, and its refusals.
    again = os.path.join(tmp, "man1")
    os.mkdir(again)
    r = run([kscope, "help", "--man", again])
    check(r.returncode == 0 and not r.stdout and not r.stderr,
          f"kscope help --man: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")
    check(set(os.listdir(again)) == want, f"kscope help --man wrote {os.listdir(again)}")
    for p in want:
        with open(os.path.join(again, p), "rb") as a, open(os.path.join(mandir, p), "rb") as b:
            check(a.read() == b.read(), f"{p}: kscope help --man differs from the build's")
    comp = os.path.join(tmp, "kscope.bash")
    r = run([kscope, "help", "--completion", comp])
    check(r.returncode == 0, f"kscope help --completion: exit {r.returncode}: {r.stderr}")
    with open(comp, "rb") as a, open(completion, "rb") as b:
        check(a.read() == b.read(), "kscope help --completion differs from the build's")
    for args, code in ((["--man"], 2), (["--completion"], 2), (["--man", "a", "b"], 2),
                       (["--man", os.path.join(tmp, "none")], 1),
                       (["--completion", os.path.join(tmp, "none", "k")], 1)):
        before = sorted(os.listdir(tmp))
        r = run([kscope, "help", *args])
        check(r.returncode == code and r.stderr.startswith("kscope: error: ") and not r.stdout,
              f"kscope help {' '.join(args)}: exit {r.returncode} (expected {code}), "
              f"stderr {r.stderr!r}")
        check(sorted(os.listdir(tmp)) == before, f"kscope help {' '.join(args)} wrote files")


def scenario_options(kscope, mandir, completion, tmp):
    cmds, _, _ = main_help(kscope)
    cmds.pop("help", None)
    for c in cmds:
        path = os.path.join(mandir, f"kscope-{c}.1")
        _, want = command_help(kscope, c)
        have = page_options(path)
        check([o["name"] for o in have] == [o["name"] for o in want],
              f"{path}: options {[o['name'] for o in have]}, "
              f"--help: {[o['name'] for o in want]}")
        for h, w in zip(have, want):
            for key in w:
                check(h[key] == w[key], f"{path} --{w['name']}: {key} {h[key]!r}, "
                      f"--help says {w[key]!r}")
    # The common options in kscope.1 are those every command has.
    common = page_options(os.path.join(mandir, "kscope.1"), "COMMON OPTIONS")
    check(common, "kscope.1 lists no common options")
    for c in cmds:
        _, want = command_help(kscope, c)
        for o in common:
            check(o in want, f"kscope.1's --{o['name']} is not kscope {c}'s: {o}")


def scenario_groff(kscope, mandir, completion, tmp):
    groff = shutil.which("groff")
    check(groff, "groff not found (scripts/install-deps.sh installs groff-base)")
    pages = sorted(p for p in os.listdir(mandir) if p.endswith(".1"))
    check(pages, f"no pages in {mandir}")
    for p in pages:
        r = run([groff, "-man", "-Tutf8", "-ww", "-z", os.path.join(mandir, p)])
        check(r.returncode == 0 and not r.stderr,
              f"groff -man -ww {p}: exit {r.returncode}:\n{r.stderr}")
        r = run([groff, "-man", "-Tutf8", "-P-cbou", os.path.join(mandir, p)])
        check(r.returncode == 0 and "NAME" in r.stdout and "OPTIONS" in r.stdout,
              f"groff {p}: no NAME and OPTIONS in the output")


# The driver sourced script, COMP_WORDS and COMP_CWORD as bash sets them,
# one reply a line.
DRIVER = r'''
source "$1" || exit 3
COMP_CWORD=$2
shift 2
COMP_WORDS=("$@")
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
_kscope || exit 4
printf '%s\n' "${COMPREPLY[@]}"
'''


def scenario_completion(kscope, mandir, completion, tmp):
    bindir = os.path.join(tmp, "bin")
    work = os.path.join(tmp, "work")
    os.makedirs(bindir)
    os.makedirs(os.path.join(work, "subdir"))
    open(os.path.join(work, "data.txt"), "w").close()
    with open(os.path.join(bindir, "myprog"), "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(os.path.join(bindir, "myprog"), 0o755)
    bash = shutil.which("bash")
    check(bash, "bash not found")

    def complete(*words):
        """Completes the last word of `kscope WORDS...`."""
        words = ["kscope", *words]
        env = {"PATH": bindir, "HOME": tmp, "LC_ALL": "C"}
        r = subprocess.run([bash, "--norc", "--noprofile", "-c", DRIVER, "bash",
                            completion, str(len(words) - 1), *words],
                           capture_output=True, text=True, cwd=work, env=env)
        check(r.returncode == 0 and not r.stderr,
              f"completing {words}: exit {r.returncode}: {r.stderr}")
        return [x for x in r.stdout.split("\n") if x]

    def expect(words, want):
        got = complete(*words)
        check(sorted(got) == sorted(want), f"kscope {' '.join(words)}<TAB>: {got}, "
              f"expected {sorted(want)}")

    cmds, main_opts, _ = main_help(kscope)
    expect([""], list(cmds))
    check("help" in cmds, "kscope --help lists no help command")
    first = next(iter(c for c in cmds if c != "help"))
    expect([first[:2]], [c for c in cmds if c.startswith(first[:2])])
    expect(["-"], main_opts)
    expect(["help", ""], [c for c in cmds if c != "help"])
    expect(["nocommand", "--"], [])
    cmds.pop("help")

    enums = paths = words = 0
    for c in cmds:
        usage, opts = command_help(kscope, c)
        longs = ["--" + o["name"] for o in opts]
        expect([c, "-"], longs)
        expect([c, "--"], longs)
        prefix = longs[0][:4]
        expect([c, prefix], [x for x in longs if x.startswith(prefix)])
        for o in opts:
            acc = o["accepts"] or ""
            names = ["--" + o["name"]] + (["-" + o["short"]] if o["short"] else [])
            if acc.startswith("one of "):
                choices = acc[len("one of "):].split(", ")
                for n in names:
                    expect([c, n, ""], choices)
                expect([c, names[0], choices[-1][:1]],
                       [x for x in choices if x.startswith(choices[-1][:1])])
                # --option=value, split at '=' as bash does, and whole
                expect([c, names[0], "=", ""], choices)
                expect([c, names[0], "=", choices[0]],
                       [x for x in choices if x.startswith(choices[0])])
                expect([c, names[0] + "="], [names[0] + "=" + x for x in choices])
                # the value given, the next word is an option again
                expect([c, names[0], choices[0], "--"], longs)
                enums += 1
            elif acc.startswith("the path of"):
                dirs = "directory" in acc and "file or directory" not in acc
                expect([c, names[0], ""], ["subdir"] if dirs else ["subdir", "data.txt"])
                paths += 1
            elif acc.startswith("a directory"):
                expect([c, names[0], ""], ["subdir"])
                paths += 1
            elif o["metavar"] and {"FILE", "PATH"} & set(o["metavar"].split("|")):
                # text that names a file (to be created, or NAME|FILE)
                expect([c, names[0], ""], ["subdir", "data.txt"])
                paths += 1
            elif o["metavar"] and "DIR" in o["metavar"].split("|"):
                expect([c, names[0], ""], ["subdir"])
                paths += 1
            elif o["metavar"]:
                # a number or text: no value is offered, nor an option
                expect([c, names[0], ""], [])
                expect([c, names[0], "-"], [])
                words += 1
        if usage.endswith("-- PROGRAM [ARGS...]"):
            # After --, or the program's name, the program's command line
            expect([c, "--", "my"], ["myprog"])
            expect([c, "--", "myprog", "--"], [])
            expect([c, "--", "myprog", "-"], [])
            expect([c, "--", "myprog", "d"], ["data.txt"])
            got = complete(c, "--", "")
            check("myprog" in got and "data.txt" in got and
                  not [x for x in got if x.startswith("-")],
                  f"kscope {c} -- <TAB>: {got}")
            if usage == "[options] -- PROGRAM [ARGS...]":
                expect([c, "myprog", "--"], [])
                expect([c, "myprog", "d"], ["data.txt"])
            flag = next((o for o in opts if not o["metavar"]), None)
            if flag:
                expect([c, "--" + flag["name"], "--", "myprog", "--"], [])
        elif re.search(r"(?:^| )[A-Z][A-Z.a-z]*$", usage):
            # a path argument at the end
            got = complete(c, "")
            check("subdir" in got and set(got) <= {"subdir", "data.txt"},
                  f"kscope {c} <TAB>: {got}, expected subdir and maybe data.txt")
    check(enums and paths and words,
          f"the tables have {enums} enum, {paths} path, {words} other value options")


SCENARIOS = {"pages": scenario_pages, "options": scenario_options,
             "groff": scenario_groff, "completion": scenario_completion}


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        return 2
    kscope, mandir, completion, name = sys.argv[1:]
    tmpdir = TempDirs("ks-gendoc-")
    try:
        SCENARIOS[name](kscope, mandir, completion, tmpdir())
    except Failure as e:
        print(f"FAIL {name}: {e}")
        return 1
    finally:
        tmpdir.remove()
    print(f"PASS {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
