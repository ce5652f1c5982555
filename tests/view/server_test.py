#!/usr/bin/env python3
"""End-to-end tests of kscope view's server and command line.

Each scenario starts `kscope view --port 0` on a small Chrome trace written
here, reads the URL line it prints, and talks to it as a browser or an
attacker would: the JSON API over POST /api (valid and malformed requests,
size limits, methods, content types), a WebSocket at /ws (a client written
here with the standard library: handshake, masked frames, fragments, the
1 MiB limit), the page's files (content types, security headers, and path
traversal in every spelling, with a secret file next to the page that must
never come back), the Host and Origin checks, SIGINT and SIGTERM, a second
server on the same port, and bad command lines.  And as another user of
the machine would: every request without the run's token is refused
(403), the token's cookie works as the browser gets it, imported data
naming a file outside the allowed directories, a FIFO or a device is not
served (and does not hang the import), connections sending their headers
slowly do not delay an API call, and --host 0.0.0.0 keeps the Host and
Origin checks.  Nothing asserts on a time
beyond generous timeouts that turn a hang into a failure.

    server_test.py KSCOPE SOURCE_DIR [SCENARIO...]
"""
import base64
import hashlib
import http.client
import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for kstest
from kstest import Failure, check, TempDirs  # noqa: E402

KSCOPE, SRC = sys.argv[1:3]
ONLY = sys.argv[3:]
TIMEOUT = 20           # seconds before a wait counts as a hang
SECRET = "kscope-view-secret-3f1c"
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_REQUEST = 1 << 20


tmpdir = TempDirs("ks-view-server-")


# ----------------------------------------------------------------------
# Inputs: a small trace, a page directory with traps around it
# ----------------------------------------------------------------------

def write_trace(d):
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "app"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
    ]
    for i in range(50):
        events.append({"ph": "X", "name": f"step{i % 3}", "pid": 1, "tid": 2,
                       "ts": i * 10, "dur": 8, "args": {"i": i}})
    path = os.path.join(d, "trace.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    return path


def write_page(d):
    """A page directory with a file outside it, a symbolic link to that file,
    a hidden file and a subdirectory: only index.html, app.js and
    img/dot.svg may ever be served."""
    with open(os.path.join(d, "secret.txt"), "w") as f:
        f.write(SECRET + "\n")
    page = os.path.join(d, "page")
    os.makedirs(os.path.join(page, "img"))
    with open(os.path.join(page, "index.html"), "w") as f:
        f.write("<!doctype html><title>kscope</title><script src=app.js></script>\n")
    with open(os.path.join(page, "app.js"), "w") as f:
        f.write("'use strict';\n")
    with open(os.path.join(page, "img", "dot.svg"), "w") as f:
        f.write("<svg xmlns='http://www.w3.org/2000/svg'/>\n")
    with open(os.path.join(page, ".hidden"), "w") as f:
        f.write(SECRET + "\n")
    os.symlink(os.path.join(d, "secret.txt"), os.path.join(page, "link.txt"))
    os.symlink(d, os.path.join(page, "up"))
    return page


# ----------------------------------------------------------------------
# The server process
# ----------------------------------------------------------------------

class Server:
    def __init__(self, path, args=(), env=None):
        e = dict(os.environ)
        e.pop("KSCOPE_VIEW_PAGE_DIR", None)
        e.update(env or {})
        self.p = subprocess.Popen([KSCOPE, "view", "--port", "0", *args, path],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=e)
        self.line = self._read_line()
        m = re.fullmatch(r"kscope: view: http://([0-9.]+):(\d+)/(?:\?token=([0-9A-Za-z._~-]+))? "
                         r"\(Ctrl\+C stops\)\n", self.line)
        if not m:
            self.p.kill()
            out, err = self.p.communicate(timeout=TIMEOUT)
            raise Failure(f"no URL line: {self.line!r}{out.decode(errors='replace')}; "
                          f"exit {self.p.returncode}; stderr: "
                          f"{err.decode(errors='replace')}")
        self.host, self.port = m.group(1), int(m.group(2))
        self.token = m.group(3)
        check(self.port > 0, f"port {self.port}")

    def auth(self):
        """The header that carries the token (none under --no-token)."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _read_line(self):
        fd = self.p.stdout.fileno()
        buf = b""
        end = time.monotonic() + TIMEOUT
        while not buf.endswith(b"\n"):
            r, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
            if not r:
                raise Failure("kscope view printed no URL line in time")
            chunk = os.read(fd, 1)
            if not chunk:
                break
            buf += chunk
        return buf.decode(errors="replace")

    def stop(self, sig=signal.SIGINT):
        """Sends sig and returns (exit status, stderr)."""
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            _, err = self.p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.communicate()
            raise Failure(f"kscope view did not stop within {TIMEOUT} s of signal {sig}")
        return self.p.returncode, err.decode(errors="replace")

    def conn(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)

    def request(self, method, path, body=None, headers=None, conn=None):
        """One request; returns (status, headers as a dict, body bytes)."""
        own = conn is None
        c = conn or self.conn()
        h = {"Host": f"127.0.0.1:{self.port}", **self.auth()}
        h.update(headers or {})
        h = {k: v for k, v in h.items() if v is not None}
        try:
            c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for k, v in h.items():
                c.putheader(k, v)
            if body is not None and "Transfer-Encoding" not in h:
                c.putheader("Content-Length", str(len(body)))
            c.endheaders(body)
            r = c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            if own:
                c.close()

    def api(self, req, conn=None, ctype="application/json"):
        body = req if isinstance(req, bytes) else json.dumps(req).encode()
        st, hd, data = self.request("POST", "/api", body, {"Content-Type": ctype}, conn)
        check(st == 200, f"POST /api: status {st}: {data[:200]!r}")
        check(hd.get("content-type", "").startswith("application/json"),
              f"POST /api: Content-Type {hd.get('content-type')}")
        try:
            return json.loads(data)
        except ValueError:
            raise Failure(f"POST /api: the answer is not JSON: {data[:200]!r}")

    def raw(self, data, shut=False, auth=True):
        """Sends bytes as they are (with the token's header after the
        request line, unless auth is false) and returns what comes back
        until the server closes or stops talking."""
        if auth and self.token and b"\r\n" in data:
            line, rest = data.split(b"\r\n", 1)
            data = line + f"\r\nAuthorization: Bearer {self.token}".encode() + b"\r\n" + rest
        s = socket.create_connection((self.host, self.port), timeout=TIMEOUT)
        try:
            try:
                s.sendall(data)
                if shut:
                    s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass
            out = b""
            s.settimeout(3)
            while True:
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    break
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                out += chunk
            return out
        finally:
            s.close()


def request_obj(command, module="timeline", params=None, rid=1):
    r = {"id": rid, "moduleName": module, "type": "request", "command": command}
    if params is not None:
        r["params"] = params
    return r


def check_rejected(resp, what, rid=None):
    check(isinstance(resp, dict) and resp.get("type") == "response",
          f"{what}: not a response: {resp}")
    check(resp.get("result") is False, f"{what}: result is not false: {resp}")
    msg = resp.get("body", {}).get("message")
    check(isinstance(msg, str) and len(msg) > 10, f"{what}: no message: {resp}")
    if rid is not None:
        check(resp.get("requestId") == rid, f"{what}: requestId {resp.get('requestId')}")
    return msg


# ----------------------------------------------------------------------
# A minimal WebSocket client (RFC 6455)
# ----------------------------------------------------------------------

class WebSocket:
    def __init__(self, srv, origin=None, host=None, cookie=True):
        """cookie: send the token the way a browser does, in its cookie."""
        self.s = socket.create_connection((srv.host, srv.port), timeout=TIMEOUT)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET /ws HTTP/1.1", f"Host: {host or f'127.0.0.1:{srv.port}'}",
                 "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        if cookie and srv.token:
            lines.append(f"Cookie: other=1; kscope_view_{srv.port}={srv.token}")
        if origin:
            lines.append(f"Origin: {origin}")
        self.s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(1)
            if not chunk:
                break
            head += chunk
        self.status_line = head.split(b"\r\n", 1)[0].decode(errors="replace")
        self.status = int(self.status_line.split()[1]) if self.status_line else 0
        self.headers = {}
        for ln in head.decode(errors="replace").split("\r\n")[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                self.headers[k.strip().lower()] = v.strip()
        if self.status == 101:
            want = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest())
            check(self.headers.get("sec-websocket-accept") == want.decode(),
                  f"WebSocket: wrong Sec-WebSocket-Accept {self.headers}")

    def send_frame(self, opcode, payload, fin=True):
        mask = os.urandom(4)
        b0 = (0x80 if fin else 0) | opcode
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", b0, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", b0, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", b0, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if n < 65536 \
            else (int.from_bytes(payload, "big") ^ int.from_bytes(
                (mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
        self.s.sendall(head + mask + masked)

    def _exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise Failure("WebSocket: the server closed the connection mid-frame")
            out += chunk
        return out

    def recv_frame(self):
        """Returns (opcode, payload); the server's frames are not masked."""
        b0, b1 = self._exact(2)
        check(not (b1 & 0x80), "WebSocket: the server masked its frame")
        n = b1 & 0x7f
        if n == 126:
            n = struct.unpack("!H", self._exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._exact(8))[0]
        return b0 & 0x0f, self._exact(n)

    def recv_message(self):
        while True:
            op, data = self.recv_frame()
            if op == 0x9 or op == 0xA:   # ping, pong
                continue
            return op, data

    def close(self):
        self.s.close()


# ----------------------------------------------------------------------
# Scenarios
# ----------------------------------------------------------------------

def sc_api(srv, d):
    """Valid and malformed requests over POST /api, on one kept-alive
    connection and on many at once."""
    c = srv.conn()
    r = srv.api(request_obj("import/action", params={}, rid=7), conn=c)
    check(r.get("result") is True, f"import/action: {r}")
    check(r.get("requestId") == 7 and r.get("command") == "import/action",
          f"import/action envelope: {r}")
    cards = r["body"].get("result")
    check(isinstance(cards, list) and len(cards) >= 1, f"import/action cards: {r}")
    # the same connection again (keep-alive), text/plain as a browser's
    # fetch sends a string by default
    r2 = srv.api(request_obj("import/action", rid="s1"), conn=c,
                 ctype="text/plain;charset=UTF-8")
    check(r2.get("result") is True and r2.get("requestId") == "s1", f"second: {r2}")
    check(r2["id"] != r["id"], "response ids repeat")
    # the trace's data comes through: its thread and its 50 slices
    th = srv.api(request_obj("unit/threads", params={"cardId": cards[0]["cardId"]}),
                 conn=c)
    check(th.get("result") is True, f"unit/threads: {th}")
    threads = [t for p in th["body"]["processes"] for t in p["threads"]]
    check([(t["name"], t["slices"]) for t in threads] == [("main", 50)],
          f"unit/threads: {threads}")
    tr = srv.api(request_obj("unit/threadTraces", params={
        "processId": "1", "threadId": "2", "startTime": 0, "endTime": 500000,
        "timePerPx": 100}), conn=c)
    check(tr.get("result") is True, f"unit/threadTraces: {tr}")
    items = [x for depth in tr["body"]["data"] for x in depth]
    check(sum(x["count"] for x in items) == 50 and
          {x["name"] for x in items} == {"step0", "step1", "step2"},
          f"unit/threadTraces: {len(items)} items")
    # malformed
    check_rejected(srv.api(b'{"id": 1, "type": "req', conn=c), "truncated JSON")
    check_rejected(srv.api(b"", conn=c), "empty body")
    check_rejected(srv.api(b"[1, 2]", conn=c), "an array")
    check_rejected(srv.api(b"\xff\xfe\x00garbage", conn=c), "binary garbage")
    check_rejected(srv.api({"id": 3, "type": "request", "command": 5,
                            "moduleName": "timeline"}, conn=c), "command not a string", 3)
    check_rejected(srv.api({"id": -1, "type": "request", "command": "import/action",
                            "moduleName": "timeline"}, conn=c), "negative id")
    check_rejected(srv.api(request_obj("no/such/command", rid=4), conn=c),
                   "unknown command", 4)
    check_rejected(srv.api(request_obj("import/action", params=[1], rid=5), conn=c),
                   "params an array", 5)
    check_rejected(srv.api(request_obj("import/action", params={"path": 3}, rid=6),
                           conn=c), "path not an array", 6)
    check_rejected(srv.api(request_obj("unit/threadTraces", params={
        "cardId": "nope", "processId": "1", "threadId": "2", "startTime": 0,
        "endTime": 100, "timePerPx": 1}, rid=8), conn=c), "unknown card", 8)
    check_rejected(srv.api(request_obj("unit/threadTraces", params={
        "processId": "1", "threadId": "2", "startTime": "x", "endTime": 100,
        "timePerPx": 1}, rid=9), conn=c), "startTime not a number", 9)
    check_rejected(srv.api(request_obj("unit/threadTraces", params={
        "processId": "1", "threadId": "2", "startTime": 0, "endTime": 100,
        "timePerPx": -1}, rid=10), conn=c), "timePerPx negative", 10)
    # deeply nested JSON is answered, not a crash
    check_rejected(srv.api(b"[" * 100000 + b"]" * 100000, conn=c), "deep nesting")
    c.close()

    # many at once: every one answered, each with its own requestId
    errors = []

    def worker(k):
        try:
            for j in range(10):
                rid = k * 100 + j
                resp = srv.api(request_obj("import/action", rid=rid))
                if resp.get("requestId") != rid or resp.get("result") is not True:
                    errors.append(f"worker {k}: {resp}")
        except Exception as ex:  # noqa: BLE001 -- reported below
            errors.append(f"worker {k}: {ex}")

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(TIMEOUT * 3)
    check(not errors, f"concurrent requests: {errors[:3]}")


def sc_limits(srv, d):
    """Sizes, methods and content types."""
    body = json.dumps(request_obj("import/action")).encode()
    # 405 with Allow
    for m in ("GET", "PUT", "DELETE", "OPTIONS"):
        st, hd, _ = srv.request(m, "/api")
        check(st == 405, f"{m} /api: status {st}")
        check("POST" in hd.get("allow", ""), f"{m} /api: Allow {hd.get('allow')}")
    # 415
    for t in ("application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
              "text/html", None):
        st, _, _ = srv.request("POST", "/api", body, {"Content-Type": t})
        check(st == 415, f"POST /api with Content-Type {t}: status {st}")
    # exactly the limit is read (and answered as JSON, not a 413)
    pad = b" " * (MAX_REQUEST - len(body))
    r = srv.api(body + pad)
    check(r.get("result") is True, f"a request of exactly 1 MiB: {r}")
    # 2 MiB with a length: 413 before the body is read
    big = b" " * (2 << 20)
    head = (f"POST /api HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(big)}\r\n\r\n").encode()
    out = srv.raw(head)
    check(out.startswith(b"HTTP/1.1 413"), f"2 MiB body: {out[:80]!r}")
    out = srv.raw(head + big)
    check(out.startswith(b"HTTP/1.1 413"), f"2 MiB body sent: {out[:80]!r}")
    # the limit plus one byte, announced: 413 without reading the body
    head = (f"POST /api HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
            f"Content-Type: application/json\r\n"
            f"Content-Length: {MAX_REQUEST + 1}\r\n\r\n").encode()
    out = srv.raw(head)
    check(out.startswith(b"HTTP/1.1 413"), f"1 MiB + 1 byte: {out[:80]!r}")
    # chunked, 2 MiB in 64 KiB chunks: 413 once past the limit
    chunk = b" " * 65536
    parts = [f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for _ in range(32)]
    head = (f"POST /api HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
            f"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    out = srv.raw(head + b"".join(parts) + b"0\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 413"), f"2 MiB chunked: {out[:80]!r}")
    # chunked and small: answered
    small = json.dumps(request_obj("import/action", rid=77)).encode()
    out = srv.raw(head.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n") +
                  f"{len(small[:10]):x}\r\n".encode() + small[:10] + b"\r\n" +
                  f"{len(small[10:]):x}\r\n".encode() + small[10:] + b"\r\n0\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 200"), f"small chunked: {out[:80]!r}")
    resp = json.loads(out.split(b"\r\n\r\n", 1)[1])
    check(resp.get("requestId") == 77 and resp.get("result") is True,
          f"small chunked: {resp}")
    # the server still answers
    check(srv.api(request_obj("import/action")).get("result") is True,
          "the server stopped answering after the limits")


def sc_page(srv, d):
    """The page's files: types, headers, "/" and nothing else."""
    types = {"/": "text/html", "/index.html": "text/html",
             "/app.js": "text/javascript", "/img/dot.svg": "image/svg+xml",
             "/app.js?v=3": "text/javascript"}
    for path, t in types.items():
        st, hd, data = srv.request("GET", path)
        check(st == 200, f"GET {path}: status {st}")
        check(hd.get("content-type", "").startswith(t),
              f"GET {path}: Content-Type {hd.get('content-type')}")
        check(hd.get("x-content-type-options") == "nosniff", f"GET {path}: nosniff")
        csp = hd.get("content-security-policy", "")
        check("default-src 'self'" in csp and "script-src 'self'" in csp and
              "unsafe-inline" not in csp, f"GET {path}: CSP {csp!r}")
        check(hd.get("referrer-policy") == "no-referrer", f"GET {path}: Referrer-Policy")
        check(hd.get("cache-control") == "no-store", f"GET {path}: Cache-Control")
    st, hd, data = srv.request("HEAD", "/app.js")
    check(st == 200 and data == b"", f"HEAD /app.js: {st} {data[:40]!r}")
    st, hd, _ = srv.request("POST", "/index.html", b"x", {"Content-Type": "text/plain"})
    check(st == 405, f"POST /index.html: status {st}")
    # API answers carry the same headers
    st, hd, _ = srv.request("POST", "/api", json.dumps(request_obj("import/action")).encode(),
                            {"Content-Type": "application/json"})
    check(hd.get("x-content-type-options") == "nosniff" and
          hd.get("cache-control") == "no-store", f"POST /api headers: {hd}")


TRAVERSALS = [
    "/../secret.txt", "/../../../../etc/passwd", "/..%2fsecret.txt",
    "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/%2e%2e%2fsecret.txt",
    "/.%2e/secret.txt", "/%252e%252e/secret.txt", "/index.html/..",
    "/index.html/../../secret.txt", "/img/../app.js", "/img/..%2f..%2fsecret.txt",
    "/img%2fdot.svg", "/img%2Fdot.svg", "/img\\dot.svg", "/..\\secret.txt",
    "/%5c..%5csecret.txt", "/index.html%00.js", "/app.js%00", "/link.txt",
    "/up/secret.txt", "/.hidden", "/./index.html", "//index.html", "//etc/passwd",
    "/%69ndex.html", "/img/", "/img", "/secret.txt", "/etc/passwd",
    "/index.html;.js", "/INDEX.HTML", "/index.html/", "/api/../index.html",
]


def sc_traversal(srv, d):
    """Every spelling of a path outside the list gets 404 and never the
    secret next to the page."""
    for path in TRAVERSALS:
        st, _, data = srv.request("GET", path)
        check(st == 404, f"GET {path}: status {st}")
        check(SECRET.encode() not in data and b"root:" not in data,
              f"GET {path}: served a file outside the page")
    # raw request lines http.client would not send: absolute URLs, NUL,
    # a bare "..", spaces
    for target in ["http://127.0.0.1:%d/../secret.txt" % srv.port,
                   "http://evil.example/index.html", "/index.html\x00",
                   "..", "../secret.txt", "*", "/a b/../../secret.txt"]:
        req = (f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
               f"Connection: close\r\n\r\n").encode()
        out = srv.raw(req)
        check(not out.startswith(b"HTTP/1.1 200"), f"GET {target!r}: {out[:60]!r}")
        check(SECRET.encode() not in out, f"GET {target!r}: served the secret")


def sc_host(srv, d):
    """DNS rebinding: only this server's loopback names are answered;
    another site's page cannot use the API or the WebSocket."""
    p = srv.port
    for host in (f"127.0.0.1:{p}", f"localhost:{p}", f"[::1]:{p}", f"LOCALHOST:{p}"):
        st, _, _ = srv.request("GET", "/", headers={"Host": host})
        check(st == 200, f"Host {host}: status {st}")
    for host in ("evil.example", f"evil.example:{p}", f"127.0.0.1:{p + 1}",
                 "127.0.0.1", f"127.0.0.1.evil.example:{p}", ""):
        st, _, data = srv.request("GET", "/", headers={"Host": host})
        check(st == 403, f"Host {host!r}: status {st}")
        st, _, _ = srv.request("POST", "/api", json.dumps(request_obj("import/action")).encode(),
                               {"Host": host, "Content-Type": "application/json"})
        check(st == 403, f"POST /api with Host {host!r}: status {st}")
    # no Host at all (HTTP/1.0)
    out = srv.raw(b"GET / HTTP/1.0\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 403") or out.startswith(b"HTTP/1.0 403"),
          f"no Host: {out[:60]!r}")
    # Origin
    body = json.dumps(request_obj("import/action")).encode()
    st, _, _ = srv.request("POST", "/api", body, {"Content-Type": "text/plain",
                                                   "Origin": "http://evil.example"})
    check(st == 403, f"POST /api from another origin: status {st}")
    st, _, _ = srv.request("POST", "/api", body, {"Content-Type": "text/plain",
                                                   "Origin": f"http://localhost:{p}"})
    check(st == 200, f"POST /api from the page's origin: status {st}")
    ws = WebSocket(srv, origin="http://evil.example")
    check(ws.status == 403, f"WebSocket from another origin: {ws.status_line}")
    ws.close()
    ws = WebSocket(srv, host="evil.example")
    check(ws.status == 403, f"WebSocket with Host evil.example: {ws.status_line}")
    ws.close()


def sc_websocket(srv, d):
    """Requests as text messages, a fragmented one, binary refused, and
    the 1 MiB limit closing with 1009."""
    ws = WebSocket(srv, origin=f"http://127.0.0.1:{srv.port}")
    check(ws.status == 101, f"WebSocket handshake: {ws.status_line}")
    for rid in (1, "two", 3):
        ws.send_frame(0x1, json.dumps(request_obj("import/action", rid=rid)).encode())
        op, data = ws.recv_message()
        check(op == 0x1, f"WebSocket answer opcode {op}")
        r = json.loads(data)
        check(r.get("requestId") == rid and r.get("result") is True, f"WebSocket: {r}")
    ws.send_frame(0x1, b"{not json")
    op, data = ws.recv_message()
    check_rejected(json.loads(data), "WebSocket bad JSON")
    # one request in three fragments
    text = json.dumps(request_obj("import/action", rid=99)).encode()
    ws.send_frame(0x1, text[:5], fin=False)
    ws.send_frame(0x0, text[5:12], fin=False)
    ws.send_frame(0x0, text[12:], fin=True)
    op, data = ws.recv_message()
    check(json.loads(data).get("requestId") == 99, f"fragmented: {data[:100]!r}")
    # ping gets a pong, and the connection goes on
    ws.send_frame(0x9, b"hi")
    ws.send_frame(0x1, json.dumps(request_obj("import/action", rid=5)).encode())
    op, data = ws.recv_message()
    check(json.loads(data).get("requestId") == 5, "after a ping")
    ws.close()
    # over the limit: closed with 1009
    ws = WebSocket(srv)
    ws.send_frame(0x1, b" " * (MAX_REQUEST + 1))
    op, data = ws.recv_message()
    check(op == 0x8 and len(data) >= 2 and struct.unpack("!H", data[:2])[0] == 1009,
          f"over 1 MiB: opcode {op}, {data[:40]!r}")
    ws.close()
    # over the limit in fragments
    ws = WebSocket(srv)
    ws.send_frame(0x1, b" " * (MAX_REQUEST // 2 + 1), fin=False)
    ws.send_frame(0x0, b" " * (MAX_REQUEST // 2 + 1), fin=True)
    op, data = ws.recv_message()
    check(op == 0x8 and struct.unpack("!H", data[:2])[0] == 1009,
          f"fragments over 1 MiB: opcode {op}, {data[:40]!r}")
    ws.close()
    # a continuation that continues nothing
    ws = WebSocket(srv)
    ws.send_frame(0x0, b"{}")
    op, data = ws.recv_message()
    check(op == 0x8 and struct.unpack("!H", data[:2])[0] == 1002,
          f"stray continuation: opcode {op}, {data[:40]!r}")
    ws.close()
    # binary frames are refused
    ws = WebSocket(srv)
    ws.send_frame(0x2, b"\x00\x01")
    op, data = ws.recv_message()
    check(op == 0x8 and struct.unpack("!H", data[:2])[0] == 1003,
          f"binary frame: opcode {op}, {data[:40]!r}")
    ws.close()
    # /ws without an upgrade
    st, _, _ = srv.request("GET", "/ws")
    check(st == 400, f"GET /ws without Upgrade: status {st}")
    # the server still answers
    check(srv.api(request_obj("import/action")).get("result") is True,
          "the server stopped answering after the WebSocket tests")


# ----------------------------------------------------------------------
# Whole runs
# ----------------------------------------------------------------------

def run_server_scenarios(names):
    d = tmpdir()
    trace = write_trace(d)
    page = write_page(d)
    srv = Server(trace, env={"KSCOPE_VIEW_PAGE_DIR": page})
    try:
        for name in names:
            globals()["sc_" + name](srv, d)
    finally:
        status, err = srv.stop(signal.SIGINT)
    check(status == 0, f"after SIGINT: exit {status}; stderr: {err}")
    check("error" not in err and "runtime error" not in err and "Sanitizer" not in err,
          f"stderr after the run: {err}")


def sc_signals():
    """SIGINT and SIGTERM stop the server with exit 0; the installed page
    (share/kscope/view next to kscope) is found without the variable."""
    d = tmpdir()
    trace = write_trace(d)
    for sig in (signal.SIGINT, signal.SIGTERM):
        srv = Server(trace)
        st, hd, data = srv.request("GET", "/")
        check(st == 200 and hd.get("content-type", "").startswith("text/html"),
              f"the installed page: GET / status {st}")
        # a WebSocket left open does not keep the server from stopping
        ws = WebSocket(srv)
        check(ws.status == 101, f"WebSocket: {ws.status_line}")
        t0 = time.monotonic()
        status, err = srv.stop(sig)
        ws.close()
        check(status == 0, f"signal {sig}: exit {status}; stderr: {err}")
        check(time.monotonic() - t0 < TIMEOUT, "stopping hung")
        try:
            socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
            raise Failure(f"port {srv.port} still accepts connections after exit")
        except OSError:
            pass


def sc_port_in_use():
    """A second kscope view on the same port says so and exits non-zero."""
    d = tmpdir()
    trace = write_trace(d)
    srv = Server(trace)
    try:
        p = subprocess.run([KSCOPE, "view", "--port", str(srv.port), trace],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
        err = p.stderr.decode(errors="replace")
        check(p.returncode not in (0, None), f"second server: exit {p.returncode}")
        check(f"{srv.port}" in err and "in use" in err,
              f"second server's message: {err!r}")
        check(p.stdout == b"", f"second server printed {p.stdout!r}")
        # the first still answers
        check(srv.api(request_obj("import/action")).get("result") is True,
              "the first server stopped answering")
    finally:
        status, _ = srv.stop()
    check(status == 0, f"first server: exit {status}")


def sc_bad_path():
    """Bad PATHs and options exit 2 with a message naming the problem,
    without serving."""
    d = tmpdir()
    junk = os.path.join(d, "junk.bin")
    with open(junk, "wb") as f:
        f.write(bytes((i * 167 + 13) % 256 for i in range(4096)))
    empty = os.path.join(d, "empty.json")
    open(empty, "w").close()
    cases = [
        ([os.path.join(d, "missing")], "does not exist"),
        ([junk], "junk.bin"),
        ([empty], "empty.json"),
        (["--port", "65536", junk], "--port"),
        (["--port", "-1", junk], "--port"),
        (["--host", "example.com", junk], "--host"),
        (["--host", "::1", junk], "--host"),
        ([], "PATH"),
    ]
    if os.geteuid() != 0:   # root reads any file
        unreadable = os.path.join(d, "unreadable.json")
        with open(unreadable, "w") as f:
            f.write("{}")
        os.chmod(unreadable, 0)
        cases.append(([unreadable], "unreadable.json"))
    for args, word in cases:
        p = subprocess.run([KSCOPE, "view", "--port", "0", *args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 2, f"view {args}: exit {p.returncode}; stderr {err!r}")
        check(err.startswith("kscope: error: ") and word in err,
              f"view {args}: message {err!r} does not name {word!r}")
        check(p.stdout == b"", f"view {args}: printed {p.stdout!r}")
    # a page directory that is not one
    p = subprocess.run([KSCOPE, "view", "--port", "0", write_trace(d)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT,
                       env=dict(os.environ, KSCOPE_VIEW_PAGE_DIR=d))
    err = p.stderr.decode(errors="replace")
    check(p.returncode != 0 and "index.html" in err,
          f"page directory without index.html: exit {p.returncode}, {err!r}")


def sc_token(srv, d):
    """Without the token nothing is answered: the page, the API, the
    WebSocket; a wrong token, one in the wrong cookie or in the query of
    anything but the page are refused.  GET /?token= sets the cookie
    (HttpOnly, SameSite=Strict) and sends the browser to / without it."""
    check(srv.token and re.fullmatch(r"[0-9a-f]{48}", srv.token),
          f"the printed URL has no random token: {srv.line!r}")
    body = json.dumps(request_obj("import/action")).encode()
    wrong = "0" * 48 if srv.token != "0" * 48 else "1" * 48
    for headers in ({"Authorization": None}, {"Authorization": f"Bearer {wrong}"},
                    {"Authorization": None, "Cookie": f"kscope_view_{srv.port}={wrong}"},
                    {"Authorization": None,
                     "Cookie": f"kscope_view_{srv.port + 1}={srv.token}"},
                    {"Authorization": None, "Cookie": f"x=kscope_view_{srv.port}={srv.token}"},
                    {"Authorization": f"Bearer {srv.token[:-1]}"},
                    {"Authorization": f"Basic {srv.token}"}):
        for method, path, b, extra in (("GET", "/", None, {}),
                                       ("GET", "/js/app.js", None, {}),
                                       ("POST", "/api", body,
                                        {"Content-Type": "application/json"})):
            st, _, data = srv.request(method, path, b, {**headers, **extra})
            check(st == 403, f"{method} {path} with {headers}: status {st}")
            check(b"token" in data, f"{method} {path}: the 403 does not say why: {data!r}")
            check(b'"traceEvents"' not in data and b"import" not in data,
                  f"{method} {path}: a refused answer carries data: {data[:200]!r}")
    for path in (f"/api?token={srv.token}", f"/js/app.js?token={srv.token}",
                 f"/?token={wrong}", f"/?token={srv.token}x"):
        st, _, _ = srv.request("GET", path, headers={"Authorization": None})
        check(st == 403, f"GET {path} without the cookie: status {st}")
    out = srv.raw(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n" % srv.port, auth=False)
    check(out.startswith(b"HTTP/1.1 403"), f"WebSocket without the token: {out[:60]!r}")
    ws = WebSocket(srv, cookie=False)
    check(ws.status == 403, f"WebSocket without the cookie: {ws.status_line}")
    ws.close()
    # The browser's way in: the printed URL, then the cookie.
    st, hd, _ = srv.request("GET", f"/?token={srv.token}", headers={"Authorization": None})
    check(st == 303 and hd.get("location") == "/", f"GET /?token=: {st} {hd}")
    cookie = hd.get("set-cookie", "")
    parts = [x.strip() for x in cookie.split(";")]
    check(parts[0] == f"kscope_view_{srv.port}={srv.token}" and "HttpOnly" in parts and
          "SameSite=Strict" in parts and "Path=/" in parts, f"Set-Cookie: {cookie!r}")
    jar = {"Authorization": None, "Cookie": parts[0]}
    st, hd, data = srv.request("GET", "/", headers=jar)
    check(st == 200 and data, f"GET / with the cookie: {st}")
    st, _, data = srv.request("POST", "/api", body,
                              {**jar, "Content-Type": "application/json"})
    check(st == 200 and json.loads(data).get("result") is True, f"API with the cookie: {st}")
    ws = WebSocket(srv, origin=f"http://127.0.0.1:{srv.port}")
    check(ws.status == 101, f"WebSocket with the cookie: {ws.status_line}")
    ws.close()


SERVER_SCENARIOS = ["api", "limits", "page", "traversal", "host", "websocket", "token"]
RUNS = ["server", "signals", "port_in_use", "bad_path", "sources", "slow_clients",
        "any_address", "token_options"]


def write_findings(d, names):
    """A memcheck report.json whose error's stack names each of names."""
    frames = [{"ip": "0x1", "fn": "f", "file": n, "line": 1} for n in names]
    rep = {"format": "kscope-memtools-report", "version": 1, "analysis": "memcheck",
           "command": "memcheck", "program": {"exe": "/bin/true", "argv": ["/bin/true"],
                                              "pid": 1},
           "exit": {"how": "exit", "code": 0}, "truncated": False, "processes": [],
           "settings": {}, "summary": {"contexts": 1},
           "errors": [{"kind": "invalid-read", "xml_kind": "InvalidRead", "what": "x",
                       "pid": 1, "tid": 1, "count": 1, "stack": frames}],
           "leaks": [], "heap": None}
    run = os.path.join(d, "memcheck_20260101_000000_1")
    os.mkdir(run)
    with open(os.path.join(run, "report.json"), "w") as f:
        json.dump(rep, f)
    return run


def sc_sources():
    """Imported data names a secret file outside the allowed directories,
    a FIFO, a device and a directory (in a memcheck report.json, a
    profile.db's frames and a 0x03 block's sources): the import does not
    hang, nothing of them is served, each "not served" with the reason;
    a file under --source-dir is served."""
    d = tmpdir()
    outside = tmpdir()
    secret = os.path.join(outside, "secret.c")
    with open(secret, "w") as f:
        f.write(SECRET + "\n")
    allowed = tmpdir()
    fifo = os.path.join(allowed, "fifo.c")
    os.mkfifo(fifo)
    ok = os.path.join(allowed, "ok.c")
    with open(ok, "w") as f:
        f.write("int ok;\n")
    link = os.path.join(allowed, "link.c")
    os.symlink(secret, link)
    names = [secret, fifo, "/dev/zero", allowed, ok, link]
    why = {secret: "outside the directories", fifo: "not a regular file",
           "/dev/zero": "not a regular file", link: "outside the directories"}
    run = write_findings(d, names)
    # a profile.db whose frames name the same files
    db = os.path.join(d, "sample_20260101_000000_2")
    os.mkdir(db)
    shutil.copy(os.path.join(SRC, "tests", "view", "samples", "sample_demo", "profile.db"),
                os.path.join(db, "profile.db"))
    import sqlite3
    c = sqlite3.connect(os.path.join(db, "profile.db"))
    ids = [r[0] for r in c.execute("SELECT DISTINCT file FROM frames WHERE file IS NOT NULL")]
    check(len(ids) >= 2, f"the sample profile.db names {len(ids)} files")
    named = {"memcheck": set(names), "sample": set(), "simulate": set()}
    for i, sid in enumerate(ids):
        c.execute("UPDATE strings SET text = ? WHERE id = ?", (names[i % len(names)], sid))
        named["sample"].add(names[i % len(names)])
    c.commit()
    c.close()
    # a visualize_data.bin whose 0x03 block's sources are these files
    vz = os.path.join(d, "simulate_20260101_000000_3")
    os.mkdir(vz)
    with open(os.path.join(SRC, "tests", "view", "samples", "simulate_matmul",
                           "visualize_data.bin"), "rb") as f:
        data = f.read()
    out, off, found = bytearray(), 0, False
    while off < len(data):
        size, typ, pad, ver, res = struct.unpack_from("<QBBBB", data, off)
        head = 12 + (4096 if typ == 1 else 0)
        if typ == 3:
            blk = json.loads(data[off + head:off + head + size - pad].rstrip(b"\0"))
            for i, fl in enumerate(blk["Files"]):
                fl["Source"] = names[i % len(names)]
                named["simulate"].add(fl["Source"])
            payload = json.dumps(blk).encode()
            npad = -len(payload) % 4
            out += struct.pack("<QBBBB", len(payload) + npad, typ, npad, ver, res)
            out += payload + b"\0" * npad
            found = True
        elif typ != 1:   # no embedded texts: only files on disk
            out += data[off:off + head + size]
        off += head + size
    check(found, "the simulate sample has no 0x03 block")
    with open(os.path.join(vz, "visualize_data.bin"), "wb") as f:
        f.write(out)
    srv = Server(d, args=["--source-dir", allowed, "--source-dir", "/dev"])
    try:
        body = srv.api(request_obj("import/action"))
        check(body.get("result") is True, f"import/action: {body}")
        cards = body["body"]["result"]
        check(len(cards) == 3, f"three cards expected: {[c['cardId'] for c in cards]}")
        for card in cards:
            listed = card["sourceList"]
            for name in (secret, fifo, "/dev/zero", allowed, link):
                check(name not in listed, f"{card['cardId']}: {name} is listed")
            mine = named[card["cardId"]]
            check(len(mine) >= 3 or card["cardId"] == "sample",
                  f"{card['cardId']} names only {mine}")
            if ok in mine:
                r = srv.api(request_obj("source/code/file", "source",
                                        {"cardId": card["cardId"], "sourceName": ok}))
                check(r.get("result") is True and r["body"]["fileContent"] == "int ok;\n",
                      f"{card['cardId']}: the file under --source-dir: {r}")
            for name, words in why.items():
                if name not in mine:
                    continue
                r = srv.api(request_obj("source/code/file", "source",
                                        {"cardId": card["cardId"], "sourceName": name}))
                msg = r.get("body", {}).get("message", "")
                check(r.get("result") is False and "is not served" in msg and words in msg,
                      f"{card['cardId']}: {name}: {msg!r}")
                check(SECRET not in json.dumps(r), f"{name}: the secret came back")
        # and without the token, not even that
        st, _, data = srv.request("POST", "/api", json.dumps(request_obj(
            "source/code/file", "source", {"sourceName": secret})).encode(),
            {"Content-Type": "application/json", "Authorization": None})
        check(st == 403 and SECRET.encode() not in data, f"no token: {st}")
    finally:
        status, err = srv.stop()
    check(status == 0, f"exit {status}: {err}")


def sc_slow_clients():
    """Twenty connections that send half a request line and then a byte
    now and then do not delay an API call by more than a second."""
    d = tmpdir()
    srv = Server(write_trace(d))
    socks = []
    try:
        for _ in range(20):
            s = socket.create_connection((srv.host, srv.port), timeout=TIMEOUT)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % srv.port)
            socks.append(s)
        time.sleep(0.3)
        for s in socks:
            s.sendall(b"a")
        t0 = time.monotonic()
        body = srv.api(request_obj("import/action"))
        took = time.monotonic() - t0
        check(body.get("result") is True, f"import/action: {body}")
        check(took < 1.0, f"an API call took {took:.2f} s behind 20 slow connections")
    finally:
        for s in socks:
            s.close()
        status, err = srv.stop()
    check(status == 0, f"exit {status}: {err}")


def sc_any_address():
    """On 0.0.0.0 the token, Host and Origin are checked as on loopback:
    this machine's names and addresses are answered, another name is not."""
    d = tmpdir()
    srv = Server(write_trace(d), args=["--host", "0.0.0.0"])
    try:
        p = srv.port
        check(srv.token, f"--host 0.0.0.0 without a token: {srv.line!r}")
        for host in (f"127.0.0.1:{p}", f"localhost:{p}", f"{socket.gethostname()}:{p}"):
            st, _, _ = srv.request("GET", "/", headers={"Host": host})
            check(st == 200, f"0.0.0.0: Host {host}: status {st}")
        for host in (f"evil.example:{p}", "evil.example", f"127.0.0.1:{p + 1}"):
            st, _, _ = srv.request("GET", "/", headers={"Host": host})
            check(st == 403, f"0.0.0.0: Host {host!r}: status {st}")
        body = json.dumps(request_obj("import/action")).encode()
        st, _, _ = srv.request("POST", "/api", body, {"Content-Type": "text/plain",
                                                       "Origin": "http://evil.example"})
        check(st == 403, f"0.0.0.0: POST /api from another origin: status {st}")
        st, _, _ = srv.request("POST", "/api", body, {"Content-Type": "text/plain",
                                                       "Origin": f"http://127.0.0.1:{p}"})
        check(st == 200, f"0.0.0.0: POST /api from the page's origin: status {st}")
        st, _, _ = srv.request("GET", "/", headers={"Authorization": None})
        check(st == 403, f"0.0.0.0: no token: status {st}")
    finally:
        status, err = srv.stop()
    check(status == 0 and "not on a loopback address" in err, f"exit {status}: {err}")


def sc_token_options():
    """--token sets the token (also KSCOPE_VIEW_TOKEN); a bad one, or
    --no-token off loopback, exits 2; --no-token on loopback asks none."""
    d = tmpdir()
    trace = write_trace(d)
    good = "abcdefghijklmnop-_.~0123"
    for args, env in ((["--token", good], None), ([], {"KSCOPE_VIEW_TOKEN": good})):
        srv = Server(trace, args=args, env=env)
        try:
            check(srv.token == good, f"{args} {env}: token {srv.token!r}")
            st, _, _ = srv.request("GET", "/")
            check(st == 200, f"--token: GET / with it: {st}")
        finally:
            srv.stop()
    for args, word in ((["--token", "short"], "--token"),
                       (["--token", "a" * 15], "--token"),
                       (["--token", "has space in it ok"], "--token"),
                       (["--token", "x" * 129], "--token"),
                       (["--no-token", "--host", "0.0.0.0"], "--no-token"),
                       (["--no-token", "--token", good], "--no-token")):
        p = subprocess.run([KSCOPE, "view", "--port", "0", *args, trace],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 2 and word in err and p.stdout == b"",
              f"view {args}: exit {p.returncode}, {err!r}")
    srv = Server(trace, args=["--no-token"])
    try:
        check(srv.token is None, f"--no-token printed a token: {srv.line!r}")
        st, _, _ = srv.request("GET", "/")
        check(st == 200, f"--no-token: GET / {st}")
    finally:
        status, err = srv.stop()
    check("every user of this machine" in err, f"--no-token gives no warning: {err!r}")


def main():
    failed = 0
    runs = [r for r in RUNS if not ONLY or r in ONLY or
            (r == "server" and any(s in ONLY for s in SERVER_SCENARIOS))]
    for run in runs:
        try:
            if run == "server":
                names = [s for s in SERVER_SCENARIOS if not ONLY or s in ONLY or
                         "server" in ONLY]
                run_server_scenarios(names)
            else:
                globals()["sc_" + run]()
            print(f"ok: {run}")
        except Failure as ex:
            failed += 1
            print(f"FAIL: {run}: {ex}")
        except Exception as ex:  # noqa: BLE001 -- a test error is a failure
            failed += 1
            print(f"FAIL: {run}: {type(ex).__name__}: {ex}")
            traceback.print_exc()
    tmpdir.remove()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
