"""kscope view, started on a path and asked over HTTP: what
api_test.py and perfetto_test.py share.

    with Viewer(kscope, path) as v:
        body = v.ok("timeline", "unit/threads", {"cardId": ...})
"""
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from kstest import Failure, check  # noqa: E402

TIMEOUT = 60


class Viewer:
    """`kscope view --port 0 [ARGS] PATH`; stopped with SIGINT, which must end
    it.  Every request carries the token of the printed URL."""

    def __init__(self, kscope, path, args=()):
        self.path = path
        self.proc = subprocess.Popen([kscope, "view", "--port", "0", *args, path],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        line = self.proc.stdout.readline().decode()
        m = re.match(r"kscope: view: (http://[^/ ]+/)\?token=([0-9a-f]{48}) "
                     r"\(Ctrl\+C stops\)", line)
        if not m:
            self.proc.kill()
            err = self.proc.communicate(timeout=TIMEOUT)[1].decode(errors="replace")
            raise Failure(f"kscope view {path}: first line {line!r}; stderr: {err[-2000:]}")
        self.url = m.group(1)
        self.token = m.group(2)
        self.next_id = 1

    def raw(self, text):
        req = urllib.request.Request(self.url + "api", data=text.encode(),
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            check(r.status == 200, f"POST /api: HTTP {r.status}")
            return json.loads(r.read())

    def request(self, module, command, params=None):
        self.next_id += 1
        req = {"id": self.next_id, "moduleName": module, "type": "request",
               "command": command}
        if params is not None:
            req["params"] = params
        r = self.raw(json.dumps(req))
        check(r.get("type") == "response" and r.get("requestId") == self.next_id and
              r.get("command") == command, f"{command}: bad envelope {str(r)[:300]}")
        return r

    def ok(self, module, command, params=None):
        r = self.request(module, command, params)
        check(r["result"] is True, f"{self.path}: {command} {params}: "
              f"result false: {r['body'].get('message')}")
        return r["body"]

    def fails(self, module, command, params, message):
        """result:false with exactly message, or matching it if a pattern."""
        r = self.request(module, command, params)
        check(r["result"] is False, f"{self.path}: {command} {params}: result true")
        got = r["body"].get("message", "")
        if isinstance(message, re.Pattern):
            check(message.fullmatch(got), f"{command} {params}: message {got!r} does "
                  f"not match {message.pattern!r}")
        else:
            check(got == message, f"{command} {params}: message\n  {got!r}\n"
                  f"expected\n  {message!r}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Failure(f"kscope view {self.path} did not stop on SIGINT")
        self.proc.stdout.close()
        self.proc.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
