#!/usr/bin/python3
"""Round trip of a tools/call exec of `print(1)` over stdio, against bare `python3 -I -c pass`,
measured in the same run. Prints the medians and their ratio.

    bench/rtt.py [--n 50] [--env K=V ...] <path to mcp-execd>
"""
import argparse
import json
import statistics
import subprocess
import time


class Client:
    """What every transport's client shares: request ids, and call(), which times one exec of
    print(1) through the subclass's rpc(msg) (the reply, or None for a notification)."""

    next_id = 0

    def id(self):
        self.next_id += 1
        return self.next_id

    def call(self, code="print(1)"):
        t = time.perf_counter()
        r = self.rpc({"jsonrpc": "2.0", "id": self.id(), "method": "tools/call",
                      "params": {"name": "exec", "arguments": {"code": code}}})
        dt = time.perf_counter() - t
        sc = r["result"].get("structuredContent")
        assert sc and sc["stdout"] == "1\n" and sc["exit_code"] == 0, r
        return dt, sc

    def initialize(self):
        r = self.rpc({"jsonrpc": "2.0", "id": self.id(), "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "1"}}})
        assert "result" in r, r
        self.rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})


def medians(a_label, a, b_label, b, what="ratio"):
    """Prints both medians (ms) and their ratio; returns the medians."""
    ma, mb = statistics.median(a), statistics.median(b)
    width = max(len(a_label), len(b_label))
    print(f"{a_label + ':':<{width + 1}} median {ma * 1000:.2f} ms (n={len(a)})")
    print(f"{b_label + ':':<{width + 1}} median {mb * 1000:.2f} ms (n={len(b)})")
    print(f"{what}: {ma / mb:.3f}   added: {(ma - mb) * 1000:.2f} ms")
    return ma, mb


class Daemon(Client):
    """mcp-execd over stdio, initialized."""

    def __init__(self, binary, env):
        full = {"PATH": "/usr/bin:/bin"}
        full.update(env)
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=full)
        self.initialize()

    def rpc(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        if "id" not in msg:
            return None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("mcp-execd closed stdout")
            reply = json.loads(line)
            if reply.get("id") == msg["id"]:
                return reply

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def bare(python):
    t = time.perf_counter()
    subprocess.run([python, "-I", "-c", "pass"], check=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--env", action="append", default=[])
    a = ap.parse_args()

    d = Daemon(a.binary, dict(kv.split("=", 1) for kv in a.env))
    for _ in range(5):  # warm-up: page cache, first mounts
        d.call()
        bare(a.python)
    # Interleaved, so both see the same machine load.
    rtt, base = [], []
    for _ in range(a.n):
        rtt.append(d.call()[0])
        base.append(bare(a.python))
    d.close()

    medians("exec print(1) round trip over stdio", rtt, f"bare {a.python} -I -c pass", base)


if __name__ == "__main__":
    main()
