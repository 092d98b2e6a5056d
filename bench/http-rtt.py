#!/usr/bin/python3
"""Round trip of a tools/call exec of `print(1)` over Streamable HTTP against the same over stdio,
measured in the same run, interleaved. Also `ping` over both (the transports alone, no run).
Prints the medians and the HTTP/stdio ratios.

    bench/http-rtt.py [--n 50] [--env K=V ...] <path to mcp-execd>

The HTTP daemon listens on 127.0.0.1 at a random free port; the client keeps one connection alive
(as SDK clients do) and sends what the SDK sends (Accept, session id, protocol version).
"""
import http.client
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtt import Client, Daemon, bench_args, env_of, medians  # noqa: E402  (Daemon: stdio)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpDaemon(Client):
    """mcp-execd over Streamable HTTP, initialized."""

    def __init__(self, binary, env):
        self.port = free_port()
        full = {"PATH": "/usr/bin:/bin", "MCP_EXEC_TRANSPORT": "http",
                "MCP_EXEC_ADDR": f"127.0.0.1:{self.port}"}
        full.update(env)
        self.proc = subprocess.Popen([binary], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=full)
        err = b""
        deadline = time.monotonic() + 30
        while b"serving MCP over" not in err:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"mcp-execd did not start: {err.decode(errors='replace')}")
            r, _, _ = select.select([self.proc.stderr], [], [], 1)
            if r:
                err += os.read(self.proc.stderr.fileno(), 65536)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port)
        self.session = None
        self.initialize()

    def rpc(self, msg):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
            headers["MCP-Protocol-Version"] = "2025-11-25"
        self.conn.request("POST", "/mcp", body=json.dumps(msg), headers=headers)
        resp = self.conn.getresponse()
        body = resp.read()
        if resp.getheader("Mcp-Session-Id"):
            self.session = resp.getheader("Mcp-Session-Id")
        if "id" not in msg:
            assert resp.status == 202, resp.status
            return None
        assert resp.status == 200, (resp.status, body)
        return json.loads(body)

    def ping(self):
        t = time.perf_counter()
        r = self.rpc({"jsonrpc": "2.0", "id": self.id(), "method": "ping"})
        assert r.get("result") == {}, r
        return time.perf_counter() - t

    def close(self):
        self.conn.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


def stdio_ping(d):
    t = time.perf_counter()
    r = d.rpc({"jsonrpc": "2.0", "id": d.id(), "method": "ping"})
    assert r.get("result") == {}, r
    return time.perf_counter() - t


def main():
    a = bench_args(50).parse_args()
    env = env_of(a.env)

    s = Daemon(a.binary, env)
    h = HttpDaemon(a.binary, env)
    for _ in range(5):  # warm-up: page cache, first mounts, connection
        s.call()
        h.call()
    # Interleaved, so both see the same machine load.
    rs, rh, ps, ph = [], [], [], []
    for _ in range(a.n):
        rs.append(s.call()[0])
        rh.append(h.call()[0])
    for _ in range(a.n * 4):
        ps.append(stdio_ping(s))
        ph.append(h.ping())
    s.close()
    h.close()

    medians("exec print(1) round trip over Streamable HTTP", rh, "exec print(1) round trip over stdio", rs,
            what="ratio HTTP/stdio")
    pms, pmh = statistics.median(ps), statistics.median(ph)
    print(f"ping over stdio: median {pms * 1e6:.0f} us; over HTTP: median {pmh * 1e6:.0f} us (n={a.n * 4}); "
          f"ratio {pmh / pms:.2f}")

if __name__ == "__main__":
    main()
