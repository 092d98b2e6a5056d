#!/usr/bin/python3
"""The cost of returning a 200 KB PNG from outputs/ (issue 10), against a plain print(1) and
against writing the same bytes outside outputs/ (so the difference is the return alone: reading
back through the run's root, base64, JSON, the pipe, the client's parse). Interleaved, medians.

    bench/files.py [--n 50] [--kib 200] [--env K=V ...] <path to mcp-execd>
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtt import Daemon, bench_args, env_of  # noqa: E402

WRITE = ('import os\nprint(1)\nopen("{path}", "wb").write(b"\\x89PNG\\r\\n\\x1a\\n" + os.urandom({n} - 8))\n')


def call(d, code):
    t = time.perf_counter()
    r = d.rpc({"jsonrpc": "2.0", "id": d.id(), "method": "tools/call",
               "params": {"name": "exec", "arguments": {"code": code}}})
    dt = time.perf_counter() - t
    res = r["result"]
    sc = res["structuredContent"]
    assert sc["stdout"] == "1\n" and sc["exit_code"] == 0, r
    images = [c for c in res["content"] if c["type"] == "image"]
    return dt, images


def main():
    ap = bench_args(50)
    ap.add_argument("--kib", type=int, default=200)
    a = ap.parse_args()

    n = a.kib * 1024
    plain = "print(1)"
    kept = WRITE.format(path="/tmp/not-returned.png", n=n)
    returned = WRITE.format(path="outputs/figure.png", n=n)

    d = Daemon(a.binary, env_of(a.env))
    for _ in range(5):  # warm-up
        for code in (plain, kept, returned):
            call(d, code)
    t_plain, t_kept, t_ret = [], [], []
    for _ in range(a.n):
        t_plain.append(call(d, plain)[0])
        dt, images = call(d, kept)
        assert not images
        t_kept.append(dt)
        dt, images = call(d, returned)
        assert len(images) == 1 and len(images[0]["data"]) == (n + 2) // 3 * 4, images
        t_ret.append(dt)
    d.close()

    ms = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    p, k, r = ms(t_plain), ms(t_kept), ms(t_ret)
    print(f"print(1):                         {p:8.2f} ms")
    print(f"print(1) + {a.kib} KiB written to /tmp:  {k:8.2f} ms")
    print(f"print(1) + {a.kib} KiB PNG returned:     {r:8.2f} ms")
    print(f"returning it costs {r - k:.2f} ms (vs print(1): {r - p:+.2f} ms, ratio {r / p:.3f}); "
          f"median of {a.n} each, interleaved")


if __name__ == "__main__":
    main()
