#!/usr/bin/python3
"""Fairness between tenants (issue 31.4): tenant B's calls while tenant A keeps 100 calls queued,
against B's calls on an idle daemon, in the same run, interleaved (idle, loaded, idle, loaded...).

    bench/fairness.py [--n 20] [--rounds 2] [--slots 2] [--a-runs 1] [--a-sleep 0.1] <mcp-execd>

One HTTP daemon, a tenants file with A and B (A's line `runs=--a-runs` when it is not 0: its share of
MCP_EXEC_MAX_CONCURRENT=--slots). A's load: 100 + slots clients, each a session of its own sending
`time.sleep(--a-sleep)` calls back to back, so that 100 of A's calls wait at all times. B: one
client sending `print(1)` --n times in a row per round. Prints, for B idle and B beside A's load:
the median and p95 of the round trip and of `queue_ms` (the daemon's own measure of its wait), and
the loaded/idle ratio of the p95 round trip. A's calls sleep rather than spin so that what is
measured is the queue, not the CPU the two tenants share (that is CPUWeight's, under systemd).
"""
import argparse
import hashlib
import http.client
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

A_QUEUED = 100


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Session:
    """A 2025 Streamable HTTP session of one tenant (its bearer token), initialized."""

    def __init__(self, port, token):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.token = token
        self.sid = None
        self.next_id = 0
        self.reconnects = 0
        self.rpc({"jsonrpc": "2.0", "id": self.id(), "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "fairness-bench", "version": "1"}}})
        self.rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def id(self):
        self.next_id += 1
        return self.next_id

    def rpc(self, msg):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {self.token}"}
        if self.sid:
            headers["Mcp-Session-Id"] = self.sid
            headers["MCP-Protocol-Version"] = "2025-11-25"
        try:
            self.conn.request("POST", "/mcp", body=json.dumps(msg), headers=headers)
            resp = self.conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # The server closed the kept-alive connection (as HTTP allows): again on a new one.
            self.reconnects += 1
            self.conn.close()
            self.conn.request("POST", "/mcp", body=json.dumps(msg), headers=headers)
            resp = self.conn.getresponse()
        body = resp.read()
        self.sid = resp.getheader("Mcp-Session-Id") or self.sid
        if "id" not in msg:
            return None
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {body[:200]!r}")
        return json.loads(body)

    def exec(self, code):
        """(round trip in seconds, the result's structuredContent)."""
        t = time.perf_counter()
        r = self.rpc({"jsonrpc": "2.0", "id": self.id(), "method": "tools/call",
                      "params": {"name": "exec", "arguments": {"code": code}}})
        dt = time.perf_counter() - t
        sc = r.get("result", {}).get("structuredContent")
        if not sc or r["result"].get("isError"):
            raise RuntimeError(f"exec failed: {json.dumps(r)[:300]}")
        return dt, sc

    def close(self):
        """Ends the session (DELETE), as a client that is done does."""
        self.conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": self.sid, "Authorization": f"Bearer {self.token}"})
        self.conn.getresponse().read()
        self.conn.close()


class Load:
    """A's clients, each sending its sleeping calls back to back until stopped."""

    def __init__(self, port, token, clients, sleep_s):
        self.stop = threading.Event()
        self.errors = []
        self.done = 0
        self.threads = [threading.Thread(target=self.client, args=(port, token, sleep_s), daemon=True)
                        for _ in range(clients)]
        for th in self.threads:
            th.start()

    def client(self, port, token, sleep_s):
        try:
            s = Session(port, token)
            while not self.stop.is_set():
                s.exec(f"import time\ntime.sleep({sleep_s})")
                self.done += 1
            s.close()
        except Exception as e:  # noqa: BLE001 (reported after the round)
            self.errors.append(str(e))

    def end(self):
        self.stop.set()
        for th in self.threads:
            th.join()


def p95(v):
    return sorted(v)[max(0, int(round(0.95 * len(v))) - 1)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20, help="B's calls per round")
    ap.add_argument("--rounds", type=int, default=2, help="idle/loaded pairs")
    ap.add_argument("--slots", type=int, default=2, help="MCP_EXEC_MAX_CONCURRENT")
    ap.add_argument("--a-runs", type=int, default=1, help="A's runs= (0: none, A may hold every slot)")
    ap.add_argument("--a-sleep", type=float, default=0.1, help="seconds each of A's calls sleeps")
    ap.add_argument("binary")
    args = ap.parse_args()

    tok = {"A": "bench-token-a", "B": "bench-token-b"}
    sha = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in tok.items()}
    with tempfile.TemporaryDirectory() as dir:
        path = os.path.join(dir, "tenants")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(f"A {sha['A']}" + (f" runs={args.a_runs}" if args.a_runs else "") + "\n")
            f.write(f"B {sha['B']}\n")
        port = free_port()
        env = {"PATH": "/usr/bin:/bin", "MCP_EXEC_TRANSPORT": "http", "MCP_EXEC_ADDR": f"127.0.0.1:{port}",
               "MCP_EXEC_TENANTS": path, "MCP_EXEC_MAX_CONCURRENT": str(args.slots),
               "MCP_EXEC_QUEUE_MAX": str(A_QUEUED + 4 * args.slots + 8),
               "MCP_EXEC_SESSION_QUEUE_MAX": "4", "MCP_EXEC_MAX_SESSIONS": "1000"}
        proc = subprocess.Popen([args.binary], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env)
        err = b""
        deadline = time.monotonic() + 30
        while b"serving MCP over" not in err:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"mcp-execd did not start: {err.decode(errors='replace')}")
            if select.select([proc.stderr], [], [], 1)[0]:
                err += os.read(proc.stderr.fileno(), 65536)
        # The daemon's records go to stderr: read them away so that it never blocks on the pipe.
        log = []
        threading.Thread(target=lambda: [log.append(c) for c in iter(lambda: proc.stderr.read1(65536), b"")],
                         daemon=True).start()
        try:
            b = Session(port, tok["B"])
            for _ in range(5):
                b.exec("print(1)")  # warm up
            res = {"idle": ([], []), "loaded": ([], [])}
            for _ in range(args.rounds):
                for kind in ("idle", "loaded"):
                    load = None
                    if kind == "loaded":
                        load = Load(port, tok["A"], A_QUEUED + args.slots, args.a_sleep)
                        # until A's calls fill every slot A may hold and 100 wait
                        time.sleep(max(2.0, 2 * args.a_sleep))
                    for _ in range(args.n):
                        dt, sc = b.exec("print(1)")
                        res[kind][0].append(dt * 1000)
                        res[kind][1].append(sc["queue_ms"])
                    if load:
                        load.end()
                        if load.errors:
                            tail = b"".join(log)[-3000:].decode(errors="replace")
                            raise SystemExit(f"A's load failed: {load.errors[:3]}\nthe daemon said:\n{tail}")
            b.close()
            if b.reconnects:
                print(f"(B's connection was closed by the daemon {b.reconnects} times and opened again)")
        finally:
            proc.terminate()
            proc.wait(timeout=60)

    print(f"slots {args.slots}, A's runs={args.a_runs or 'none'}, A's calls sleep {args.a_sleep} s, "
          f"{A_QUEUED} of A's waiting; B: {args.n} calls x {args.rounds} rounds each way")
    print(f"{'B':8} {'rtt median':>11} {'rtt p95':>9} {'queue_ms median':>16} {'queue_ms p95':>13}")
    for kind, (rtt, q) in res.items():
        print(f"{kind:8} {statistics.median(rtt):9.1f}ms {p95(rtt):7.1f}ms {statistics.median(q):16.0f} {p95(q):13.0f}")
    print(f"ratio loaded/idle of B's p95 round trip: {p95(res['loaded'][0]) / p95(res['idle'][0]):.2f}")


if __name__ == "__main__":
    sys.exit(main())
