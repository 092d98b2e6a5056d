#!/usr/bin/env python3
"""mcp-execd answers initialize, tools/list and an exec of print(42) over stdio.

Spawns "$MCP_EXECD" with pipes, speaks newline-delimited JSON-RPC 2.0 to it, each reply
under a deadline.
"""
# tier-timeout: 90
import json
import os
import select
import subprocess
import sys
import time

DEADLINE = 30.0  # seconds per reply (software emulation is slow)


def fail(msg, proc=None):
    print("FAIL:", msg)
    if proc is not None:
        proc.kill()
        try:
            _, err = proc.communicate(timeout=5)
            if err:
                print("daemon stderr (tail):")
                print("\n".join(err.decode(errors="replace").splitlines()[-20:]))
        except subprocess.TimeoutExpired:
            pass
    sys.exit(1)


class Client:
    def __init__(self, proc):
        self.proc = proc
        self.buf = b""
        self.next_id = 1

    def send(self, msg):
        line = json.dumps(msg) + "\n"
        print(">>", line.strip())
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()

    def readline(self, deadline):
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                fail("no reply within %.0fs" % DEADLINE, self.proc)
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    fail("the daemon closed stdout (exit %s)" % self.proc.poll(), self.proc)
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def call(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + DEADLINE
        while True:
            line = self.readline(deadline)
            if not line.strip():
                continue
            print("<<", line.decode(errors="replace")[:2000])
            try:
                msg = json.loads(line)
            except ValueError:
                fail("not JSON on stdout: %r" % line[:200], self.proc)
            if msg.get("id") == rid:
                if "error" in msg:
                    fail("%s answered an error: %s" % (method, msg["error"]), self.proc)
                if msg.get("jsonrpc") != "2.0" or "result" not in msg:
                    fail("%s: malformed reply" % method, self.proc)
                return msg["result"]
            # anything else (notifications, e.g. logging) is skipped


def main():
    exe = os.environ.get("MCP_EXECD", "")
    if not exe or not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        print("FAIL: MCP_EXECD=%r is not an executable file (is the daemon built?)" % exe)
        return 1
    env = dict(os.environ)
    env.pop("MCP_EXEC_CGROUP", None)
    proc = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    c = Client(proc)
    init = c.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}})
    if "protocolVersion" not in init or "serverInfo" not in init:
        fail("initialize: no protocolVersion/serverInfo in %r" % init, proc)
    c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = c.call("tools/list", {})
    names = [t.get("name") for t in tools.get("tools", [])]
    if "exec" not in names:
        fail("tools/list has no tool named exec: %r" % names, proc)
    res = c.call("tools/call", {"name": "exec", "arguments": {"code": "print(42)"}})
    sc = res.get("structuredContent") or {}
    if sc.get("stdout") != "42\n" or sc.get("exit_code") != 0:
        fail("exec print(42): stdout=%r exit_code=%r (isError=%r)"
             % (sc.get("stdout"), sc.get("exit_code"), res.get("isError")), proc)
    proc.stdin.close()
    try:
        rc = proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        fail("the daemon did not exit within %.0fs of stdin closing" % DEADLINE, proc)
    print("daemon exited %d after stdin closed" % rc)
    print("OK: initialize, tools/list (%s), exec print(42) -> 42" % ", ".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
