#!/usr/bin/env python3
"""kscope op's side of the channel to libkscope-op.so, for tests.

Runs PROGRAM with the library preloaded and a SOCK_SEQPACKET socketpair
between them (the program's end passed in KSCOPE_OP_CHANNEL, as kscope
does), answers `hello` with a `config` made from --config, answers each
`launch` with `collect` or `pass` by the --collect rule, and writes every
message it receives to --log as one JSON object per line:
{"type": "launch", "fields": {"name": ["axpy"], "index": ["0"], ...}}.

The program's stdout and stderr are its own (inherited, unchanged).  The
exit status is the program's (128+N when signal N ended it).

  chan.py --lib LIB --dir DIR --log FILE [options] -- PROGRAM [ARGS...]

  --config K=V      a config key (repeatable); dir= is added from --dir
  --collect N       collect at most N launches (default: every one), then
                    answer `pass final=1`
  --collect-name A,B  collect only launches of these names (others pass)
  --close-at TYPE   close the channel instead of answering the first
                    message of TYPE (hello: no config at all)
  --run N           KSCOPE_OP_RUN for the program
  --env K=V         an extra environment variable for the program
"""
import argparse
import json
import os
import secrets
import socket
import subprocess
import sys


def parse(data):
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    fields = {}
    for line in lines[1:]:
        if not line:
            continue
        key, _, value = line.partition("=")
        fields.setdefault(key, []).append(value)
    return lines[0], fields


def message(mtype, **fields):
    out = mtype + "\n"
    for key, value in fields.items():
        out += "%s=%s\n" % (key, value)
    return out.encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--collect", type=int, default=-1)
    ap.add_argument("--collect-name", default="")
    ap.add_argument("--close-at", default="")
    ap.add_argument("--run", default="")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.program[1:] if a.program[:1] == ["--"] else a.program
    if not prog:
        ap.error("no program")

    os.makedirs(a.dir, exist_ok=True)
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    os.set_inheritable(theirs.fileno(), True)
    token = secrets.token_hex(16)
    env = dict(os.environ)
    env["LD_PRELOAD"] = a.lib
    env["KSCOPE_OP_CHANNEL"] = "%d:%s" % (theirs.fileno(), token)
    if a.run:
        env["KSCOPE_OP_RUN"] = a.run
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    child = subprocess.Popen(prog, env=env, pass_fds=(theirs.fileno(),))
    theirs.close()

    names = set(n for n in a.collect_name.split(",") if n)
    collected = 0
    log = open(a.log, "w")
    closed = False
    while not closed:
        try:
            data = mine.recv(65536)
        except ConnectionResetError:
            break
        if not data:
            break
        mtype, fields = parse(data)
        log.write(json.dumps({"type": mtype, "fields": fields}) + "\n")
        log.flush()
        if mtype == a.close_at:
            mine.close()
            closed = True
            break
        if mtype == "hello":
            if fields.get("token") != [token]:
                print("chan.py: hello with a wrong token", file=sys.stderr)
                mine.close()
                closed = True
                break
            config = {}
            for kv in a.config:
                k, _, v = kv.partition("=")
                config[k] = v
            config["dir"] = os.path.abspath(a.dir)
            mine.send(message("config", **config))
        elif mtype == "launch":
            name = fields["name"][0]
            want = (not names or name in names)
            if a.collect >= 0 and collected >= a.collect:
                mine.send(message("pass", final=1))
            elif want:
                collected += 1
                mine.send(message("collect", dir="%d/%s_%s" % (
                    child.pid, name, fields["index"][0])))
            else:
                mine.send(message("pass", final=0))
    if not closed:
        mine.close()
    log.close()
    rc = child.wait()
    sys.exit(128 - rc if rc < 0 else rc)


if __name__ == "__main__":
    main()
