#!/usr/bin/python3
"""The egress proxy's cost (issue 32.6): a 10 MB download and small requests, from a run through its
proxy, against the same Python code on the host straight to the server, in the same sitting,
interleaved.

    bench/egress.py [--rounds 5] [--mb 10] [--small 50] <mcp-execd>

A loopback HTTP server (this script's own thread) serves /big (--mb MB) and /small (2 bytes). One
stdio daemon with MCP_EXEC_EGRESS_ALLOW=127.0.0.1:<port>. Each round: one run downloads /big once
and /small --small times through the proxy (urllib, HTTP_PROXY), timing itself with perf_counter;
then the host does the same directly. Printed: the medians over rounds of the download's MB/s each
way and their ratio (proxied/direct), and of the time per small request each way and the
difference (what the proxy adds per connection, HTTP included).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "../tests/systemd/lib")]
from httpserver import serve  # noqa: E402
from rtt import Daemon  # noqa: E402  (stdio, initialized)

CLIENT = r"""
import json, time, urllib.request
def fetch(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return len(r.read())
t = time.perf_counter(); n = fetch(BIG); big = time.perf_counter() - t
t = time.perf_counter()
for _ in range(SMALL):
    fetch(SMALLURL)
small = (time.perf_counter() - t) / SMALL
print(json.dumps({"bytes": n, "big_s": big, "small_s": small}))
"""


def client_code(port, small):
    return (f"BIG = 'http://127.0.0.1:{port}/big'\nSMALLURL = 'http://127.0.0.1:{port}/small'\nSMALL = {small}\n"
            + CLIENT)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mb", type=int, default=10)
    ap.add_argument("--small", type=int, default=50)
    ap.add_argument("binary")
    a = ap.parse_args()
    big = os.urandom(a.mb << 20)
    srv = serve(lambda path: big if path == "/big" else b"ok")
    port = srv.server_address[1]
    code = client_code(port, a.small)
    d = Daemon(a.binary, {"MCP_EXEC_EGRESS_ALLOW": f"127.0.0.1:{port}", "MCP_EXEC_MAX_TIMEOUT_S": "300"})
    res = {"proxied": [], "direct": []}
    try:
        for _ in range(a.rounds):
            r = d.rpc({"jsonrpc": "2.0", "id": d.id(), "method": "tools/call",
                       "params": {"name": "exec", "arguments": {"code": code, "timeout_s": 300}}})
            sc = r["result"]["structuredContent"]
            if sc["exit_code"] != 0:
                raise SystemExit(f"the run failed: {sc['stderr'][-2000:]}")
            res["proxied"].append(json.loads(sc["stdout"]))
            # the run's interpreter, on the host: what differs is the way, not the Python
            out = subprocess.run(["/usr/bin/python3", "-I", "-c", code], capture_output=True, text=True, check=True,
                                 env={"PATH": "/usr/bin:/bin", "NO_PROXY": "*"})
            res["direct"].append(json.loads(out.stdout))
    finally:
        d.close()
        srv.shutdown()
    mbps = {k: statistics.median(a.mb / x["big_s"] for x in v) for k, v in res.items()}
    per = {k: statistics.median(x["small_s"] * 1000 for x in v) for k, v in res.items()}
    print(f"{a.mb} MB download, median of {a.rounds}: proxied {mbps['proxied']:.0f} MB/s, direct {mbps['direct']:.0f} MB/s, "
          f"ratio {mbps['proxied'] / mbps['direct']:.2f}")
    print(f"a small request (a new connection each), median of {a.rounds} x {a.small}: proxied {per['proxied']:.3f} ms, "
          f"direct {per['direct']:.3f} ms, added {per['proxied'] - per['direct']:.3f} ms")


if __name__ == "__main__":
    sys.exit(main())
