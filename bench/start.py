#!/usr/bin/python3
"""Start and idle of mcp-execd over stdio (issue 16, point 6): the time from exec to the answer of
`initialize`, and the idle daemon's own RSS. Prints the medians.

    bench/start.py [--n 20] [--idle 1.0] [--list] [--env K=V ...] <path to mcp-execd> [<another> ...]

For each of N rounds, and each binary in turn (interleaved, so that two builds meet the same load):
spawns the daemon with stdin and stdout as pipes and the initialize request already written into
its stdin (so it is waiting when the daemon first reads), and times from just before the spawn
(fork and exec included, a fraction of a millisecond) to the answer's line on stdout. Then sends
notifications/initialized and a tools/list (whose answer waits for the start's checks), waits
--idle seconds after its answer with nothing to do, and reads VmRSS and VmHWM from
/proc/<pid>/status: the daemon's own process only, not its runs or anything it started. Then
closes stdin and waits for it to exit. With --list, a tools/list is written right behind the
initialize request and the time to its answer is reported too: it waits for the start's checks
(the sandbox's self-test, the interpreter probe), so it says when the daemon is ready for calls.
"""
import argparse
import json
import os
import statistics
import subprocess
import time

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench-start", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def one(binary, env, idle, with_list):
    r, w = os.pipe()
    os.write(w, (json.dumps(INIT) + "\n").encode())
    if with_list:
        os.write(w, (json.dumps(LIST) + "\n").encode())
    t = time.perf_counter()
    proc = subprocess.Popen([binary], stdin=r, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    line = proc.stdout.readline()
    dt = time.perf_counter() - t
    os.close(r)
    reply = json.loads(line)
    assert reply.get("id") == 1 and "result" in reply, reply
    dt_list = None
    if not with_list:
        # Idle means started: the checks over (tools/list waits for them), nothing in flight.
        os.write(w, (json.dumps(LIST) + "\n").encode())
    reply = json.loads(proc.stdout.readline())
    if with_list:
        dt_list = time.perf_counter() - t
    assert reply.get("id") == 2 and "result" in reply, reply
    os.write(w, (json.dumps(INITIALIZED) + "\n").encode())
    time.sleep(idle)
    rss, hwm = status_kib(proc.pid, "VmRSS"), status_kib(proc.pid, "VmHWM")
    os.close(w)
    proc.wait(timeout=30)
    return dt, rss, hwm, dt_list


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--idle", type=float, default=1.0, help="seconds idle before reading VmRSS")
    ap.add_argument("--env", action="append", default=[], metavar="K=V")
    ap.add_argument("--list", action="store_true", help="also time a tools/list sent with initialize")
    ap.add_argument("binary", nargs="+")
    a = ap.parse_args()
    env = {"PATH": "/usr/bin:/bin"}
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    res = {b: [] for b in a.binary}
    for _ in range(a.n):
        for b in a.binary:
            res[b].append(one(b, env, a.idle, a.list))
    for b, rows in res.items():
        lat = [x[0] * 1000 for x in rows]
        rss = [x[1] / 1024 for x in rows]
        hwm = [x[2] / 1024 for x in rows]
        print(f"{b}: initialize answered after median {statistics.median(lat):.1f} ms "
              f"(min {min(lat):.1f}, max {max(lat):.1f}, n={len(lat)}); idle VmRSS median "
              f"{statistics.median(rss):.2f} MiB (max {max(rss):.2f}), VmHWM median {statistics.median(hwm):.2f} MiB")
        if a.list:
            ready = [x[3] * 1000 for x in rows]
            print(f"    tools/list answered after median {statistics.median(ready):.1f} ms "
                  f"(min {min(ready):.1f}, max {max(ready):.1f})")


if __name__ == "__main__":
    main()
