#!/usr/bin/python3
"""Round trip of a tools/call exec of `print(1)` over stdio, against bare `python3 -I -c pass`,
measured in the same run. Prints the medians and their ratio.

    bench/rtt.py [--n 50] [--env K=V ...] <path to mcp-execd>

With --against OTHER (issue 16.5): a second daemon from another build, same --env, interleaved with
the first and the bare baseline (the order of the two daemons alternates): both medians against
bare, and binary/OTHER.
With --warm-vs-cold (issue 16): two daemons from the same binary and --env, the second with
MCP_EXEC_WARM_POOL=0 added (or --cold-env K=V ...), calls interleaved with the bare baseline: the
pooled, the cold and the bare medians and their ratios, and how many calls the pool served.
--code runs other code instead of print(1) (its output is not checked, its exit status is).
With --warm-vs-cold --saturate N: instead, N calls kept --inflight at a time on each daemon (pooled,
cold, pooled, cold), the throughput of each and the pooled/cold ratio (every call still pays an
interpreter start somewhere: the pool must not cost throughput).
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
        assert sc and sc["exit_code"] == 0 and (code != "print(1)" or sc["stdout"] == "1\n"), r
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

    def __init__(self, binary, env, stderr=subprocess.DEVNULL):
        full = {"PATH": "/usr/bin:/bin"}
        full.update(env)
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr, env=full)
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


def saturate(d, code, n, inflight):
    """n calls of code, at most inflight unanswered at a time; returns (seconds, calls served warm)."""
    sent = done = warm = 0
    pending = set()
    t = time.perf_counter()
    while done < n:
        while sent < n and len(pending) < inflight:
            i = d.id()
            msg = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                   "params": {"name": "exec", "arguments": {"code": code}}}
            d.proc.stdin.write((json.dumps(msg) + "\n").encode())
            pending.add(i)
            sent += 1
        d.proc.stdin.flush()
        line = d.proc.stdout.readline()
        if not line:
            raise SystemExit("mcp-execd closed stdout")
        reply = json.loads(line)
        if reply.get("id") in pending:
            pending.discard(reply["id"])
            sc = reply["result"].get("structuredContent")
            assert sc and sc["exit_code"] == 0, reply
            warm += bool(sc.get("warm"))
            done += 1
    return time.perf_counter() - t, warm


def bench_args(n, python=False):
    """An argument parser with what the benches share: the binary, --n (how many measurements,
    default n), --env K=V for the daemon (again for more) and, with python, --python (the
    interpreter run bare to compare with)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--n", type=int, default=n)
    if python:
        ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--env", action="append", default=[])
    return ap


def env_of(pairs, base=()):
    """The daemon's environment: base, then each K=V of pairs over it."""
    env = dict(base)
    env.update(kv.split("=", 1) for kv in pairs)
    return env


def warm_vs_cold(a):
    env = env_of(a.env)
    cold_env = env_of(a.cold_env, env) if a.cold_env else dict(env, MCP_EXEC_WARM_POOL="0")
    w, c = Daemon(a.binary, env), Daemon(a.binary, cold_env)
    if a.saturate:
        time.sleep(1 + a.settle)
        tw, tc, nw = [], [], 0
        for _ in range(2):
            s, k = saturate(w, a.code, a.saturate, a.inflight)
            tw.append(s)
            nw += k
            tc.append(saturate(c, a.code, a.saturate, a.inflight)[0])
        w.close()
        c.close()
        rw, rc = a.saturate / statistics.median(tw), a.saturate / statistics.median(tc)
        print(f"code: {a.code!r}; {a.saturate} calls, {a.inflight} in flight; pooled env {env}; cold env {cold_env}")
        print(f"pooled: {', '.join(f'{x:.2f} s' for x in tw)}: {rw:.1f} calls/s; served warm {nw} of {2 * a.saturate}")
        print(f"cold:   {', '.join(f'{x:.2f} s' for x in tc)}: {rc:.1f} calls/s")
        print(f"throughput pooled/cold: {rw / rc:.3f}")
        return
    time.sleep(1)  # the pool fills once the loop runs (a preload takes longer: see --settle)
    time.sleep(a.settle)
    for _ in range(5):
        w.call(a.code)
        c.call(a.code)
        bare(a.python)
    warm, cold, base = [], [], []
    served = cpu_w = cpu_c = 0
    for _ in range(a.n):
        dt, sc = w.call(a.code)
        warm.append(dt)
        served += bool(sc.get("warm"))
        cpu_w += sc["cpu_user_us"] + sc["cpu_system_us"]
        dt, sc = c.call(a.code)
        cold.append(dt)
        cpu_c += sc["cpu_user_us"] + sc["cpu_system_us"]
        base.append(bare(a.python))
    w.close()
    c.close()
    print(f"code: {a.code!r}; pooled daemon env {env}; cold daemon env {cold_env}")
    medians("pooled exec round trip", warm, f"bare {a.python} -I -c pass", base, "pooled/bare")
    medians("cold exec round trip", cold, f"bare {a.python} -I -c pass", base, "cold/bare")
    medians("pooled exec round trip", warm, "cold exec round trip", cold, "pooled/cold")
    print(f"served by a ready sandbox: {served} of {a.n}; charged CPU per call: pooled "
          f"{cpu_w / a.n / 1000:.2f} ms, cold {cpu_c / a.n / 1000:.2f} ms")


def against(a):
    env = env_of(a.env)
    d, o = Daemon(a.binary, env), Daemon(a.against, env)
    time.sleep(1)
    for _ in range(5):
        d.call(a.code)
        o.call(a.code)
        bare(a.python)
    new, old, base = [], [], []
    for i in range(a.n):
        # --pause after each: what a build does after its answer (a teardown) is not charged to
        # the next measurement, which may be the other build's or the baseline's.
        for which in ((d, new), (o, old)) if i % 2 == 0 else ((o, old), (d, new)):
            which[1].append(which[0].call(a.code)[0])
            time.sleep(a.pause)
        base.append(bare(a.python))
        time.sleep(a.pause)
    d.close()
    o.close()
    print(f"code: {a.code!r}; env {env}; pause {a.pause} s after each measurement")
    medians(f"{a.binary}", new, f"bare {a.python} -I -c pass", base, "ratio")
    medians(f"{a.against}", old, f"bare {a.python} -I -c pass", base, "ratio")
    medians(f"{a.binary}", new, f"{a.against}", old, "new/old")


def main():
    ap = bench_args(50, python=True)
    ap.add_argument("--warm-vs-cold", action="store_true")
    ap.add_argument("--cold-env", action="append", default=[])
    ap.add_argument("--code", default="print(1)")
    ap.add_argument("--settle", type=float, default=0.0, help="extra seconds before measuring")
    ap.add_argument("--saturate", type=int, default=0)
    ap.add_argument("--inflight", type=int, default=16)
    ap.add_argument("--against", help="a second build's binary, interleaved with the first")
    ap.add_argument("--pause", type=float, default=0.02, help="--against: seconds of quiet after each measurement")
    a = ap.parse_args()
    if a.against:
        return against(a)
    if a.warm_vs_cold:
        return warm_vs_cold(a)

    d = Daemon(a.binary, env_of(a.env))
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
