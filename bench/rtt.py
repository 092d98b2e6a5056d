#!/usr/bin/python3
"""Round trip of a tools/call exec of `print(1)` over stdio, against bare `python3 -I -c pass`,
measured in the same run. Prints the medians and their ratio.

    bench/rtt.py [--n 50] [--env K=V ...] <path to mcp-execd>
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def rpc(proc, msg):
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()
    if "id" not in msg:
        return None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("mcp-execd closed stdout")
        reply = json.loads(line)
        if reply.get("id") == msg["id"]:
            return reply


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--env", action="append", default=[])
    a = ap.parse_args()

    env = {"PATH": "/usr/bin:/bin"}
    env.update(kv.split("=", 1) for kv in a.env)
    proc = subprocess.Popen([a.binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    rpc(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "1"}}})
    rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(i):
        t = time.perf_counter()
        r = rpc(proc, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                       "params": {"name": "exec", "arguments": {"code": "print(1)"}}})
        dt = time.perf_counter() - t
        sc = r["result"]["structuredContent"]
        assert sc["stdout"] == "1\n" and sc["exit_code"] == 0, r
        return dt

    def bare():
        t = time.perf_counter()
        subprocess.run([a.python, "-I", "-c", "pass"], check=True)
        return time.perf_counter() - t

    for i in range(5):  # warm-up: page cache, first mounts
        call(1000 + i)
        bare()
    # Interleaved, so both see the same machine load.
    rtt, base = [], []
    for i in range(a.n):
        rtt.append(call(i + 1))
        base.append(bare())
    proc.stdin.close()
    proc.wait(timeout=10)

    m_rtt, m_base = statistics.median(rtt), statistics.median(base)
    print(f"exec print(1) round trip over stdio: median {m_rtt * 1000:.2f} ms (n={a.n})")
    print(f"bare {a.python} -I -c pass:        median {m_base * 1000:.2f} ms (n={a.n})")
    print(f"ratio: {m_rtt / m_base:.3f}   added: {(m_rtt - m_base) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
