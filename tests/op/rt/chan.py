#!/usr/bin/env python3
"""kscope op's side of the channel to libkscope-op.so, for tests.

Listens on a SOCK_SEQPACKET socket file in a private directory and runs
PROGRAM with the library preloaded and the socket's address in
KSCOPE_OP_CHANNEL (<token>:<path>, as kscope does).  Every process of the
program that uses the runtime connects by itself; each connection's
`hello` is answered with a `config` made from --config, each `launch`
with `collect` or `pass` by the --collect rule (counted over all the
connections), each `skip` by the count of config's skip= over all the
connections, and every message received is written to --log as one JSON
object per line: {"type": "launch", "conn": 0, "fields": {"name":
["axpy"], "index": ["0"], ...}} (conn: the connection, in accept order).

The program's stdout and stderr are its own (inherited, unchanged).  The
exit status is the program's (128+N when signal N ended it).  The serving
ends when the program has exited and every connection is closed (or 5 s
after the program exited).

  chan.py --lib LIB --dir DIR --log FILE [options] -- PROGRAM [ARGS...]

  --config K=V      a config key (repeatable); dir= is added from --dir
  --collect N       collect at most N launches (default: every one), then
                    answer `pass final=1`
  --collect-name A,B  collect only launches of these names (others pass)
  --close-at TYPE   close the connection instead of answering the first
                    message of TYPE (hello: no config at all)
  --run N           KSCOPE_OP_RUN for the program
  --env K=V         an extra environment variable for the program
"""
import argparse
import json
import os
import secrets
import socket
import selectors
import subprocess
import sys
import tempfile
import time


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
    sockdir = tempfile.mkdtemp(prefix="ks-chan-")
    path = os.path.join(sockdir, "s")
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    lsock.bind(path)
    lsock.listen(64)
    token = secrets.token_hex(16)
    env = dict(os.environ)
    env["LD_PRELOAD"] = a.lib
    env["KSCOPE_OP_CHANNEL"] = "%s:%s" % (token, path)
    if a.run:
        env["KSCOPE_OP_RUN"] = a.run
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    child = subprocess.Popen(prog, env=env)

    config = {}
    for kv in a.config:
        k, _, v = kv.partition("=")
        config[k] = v
    config["dir"] = os.path.abspath(a.dir)
    skip = int(config.get("skip", "0"))
    names = set(n for n in a.collect_name.split(",") if n)
    state = {"collected": 0, "skipped": 0}
    log = open(a.log, "w")
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ, None)
    conns = {}
    ended = None

    def serve(conn, no, pid):
        try:
            data = conn.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            return False
        mtype, fields = parse(data)
        log.write(json.dumps({"type": mtype, "conn": no, "fields": fields}) + "\n")
        log.flush()
        if mtype == a.close_at:
            return False
        if mtype == "hello":
            if fields.get("token") != [token]:
                print("chan.py: hello with a wrong token", file=sys.stderr)
                return False
            pid[0] = int(fields["pid"][0])
            conn.send(message("config", **config))
        elif mtype == "skip":
            more = state["skipped"] < skip
            state["skipped"] += more
            conn.send(message("skip", more=int(more)))
        elif mtype == "launch":
            name = fields["name"][0]
            want = (not names or name in names)
            if a.collect >= 0 and state["collected"] >= a.collect:
                conn.send(message("pass", final=1))
            elif want:
                state["collected"] += 1
                conn.send(message("collect", dir="%d/%s_%s" % (
                    pid[0], name, fields["index"][0])))
            else:
                conn.send(message("pass", final=0))
        return True

    while True:
        if ended is None and child.poll() is not None:
            ended = time.monotonic()
        if ended is not None and (not conns or time.monotonic() > ended + 5):
            break
        for key, _ in sel.select(timeout=0.05):
            if key.data is None:
                conn, _ = lsock.accept()
                conns[conn] = (state.setdefault("nconn", 0), [0])
                state["nconn"] += 1
                sel.register(conn, selectors.EVENT_READ, conn)
                continue
            conn = key.data
            no, pid = conns[conn]
            if not serve(conn, no, pid):
                sel.unregister(conn)
                conn.close()
                del conns[conn]
    for conn in list(conns):
        conn.close()
    lsock.close()
    os.unlink(path)
    os.rmdir(sockdir)
    log.close()
    rc = child.wait()
    sys.exit(128 - rc if rc < 0 else rc)


if __name__ == "__main__":
    main()
