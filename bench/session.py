#!/usr/bin/python3
"""Python sessions against stateless calls (issue 18): load a 100 MB CSV, then run five
aggregations on it, as six stateless calls (each one gets the data and loads it again) and as six
calls of one session (the first loads it into a variable, the next five use it). The data travels
as a gzip-compressed CSV in `files` (the way an agent hands a table over; uncompressed it would be
over MCP_EXEC_MAX_INPUT_BYTES's 64 MiB ceiling). Rounds interleaved (stateless first, then the
session, then the other way round), medians of the totals, and their ratio.

    bench/session.py [--rounds 3] [--mb 100] <path to mcp-execd>
"""
import argparse
import base64
import gzip
import io
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtt import Daemon  # noqa: E402

ENV = {
    "MCP_EXEC_MAX_INPUT_BYTES": str(64 << 20),
    "MCP_EXEC_MAX_MESSAGE_BYTES": str(128 << 20),
    "MCP_EXEC_TMP_SIZE": "512M",
    "MCP_EXEC_MEMORY_MAX": "3G",
    "MCP_EXEC_DEFAULT_TIMEOUT_S": "300",
    "MCP_EXEC_MAX_TIMEOUT_S": "300",
}
LOAD = "import pandas as pd\ndf = pd.read_csv('data.csv.gz')\n"
AGGREGATIONS = [
    "print(len(df), len(df.columns))",
    "print(df.groupby('group')['a'].mean().round(6).head(3).tolist())",
    "print(df.groupby('cat')['b'].sum().round(3).head(3).tolist())",
    "print(int((df['a'] > 0.5).sum()))",
    "print(df['a'].quantile([0.1, 0.5, 0.9]).round(6).tolist())",
    "print(round(float(df['a'].corr(df['b'])), 6))",
]


def make_csv(mb):
    """A CSV of about mb MB (seeded, so every run measures the same data), gzip-compressed."""
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(18)
    rows = mb * 1000 * 1000 // 33  # about 33 bytes a row
    cats = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"])
    df = pd.DataFrame({"id": np.arange(rows), "group": rng.integers(0, 1000, rows),
                       "a": rng.random(rows).round(6), "b": rng.normal(0, 100, rows).round(4),
                       "cat": cats[rng.integers(0, len(cats), rows)]})
    raw = df.to_csv(index=False).encode()
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=6, mtime=0) as f:
        f.write(raw)
    return len(raw), buf.getvalue()


def call(d, args):
    t = time.perf_counter()
    r = d.rpc({"jsonrpc": "2.0", "id": d.id(), "method": "tools/call", "params": {"name": "exec", "arguments": args}})
    dt = time.perf_counter() - t
    res = r.get("result") or {}
    sc = res.get("structuredContent") or {}
    if res.get("isError") or sc.get("exit_code") != 0:
        raise SystemExit("call failed: %s" % str(r)[:2000])
    return dt, sc["stdout"]


def stateless(d, files):
    total, outs = 0.0, []
    for agg in AGGREGATIONS:
        dt, out = call(d, {"code": LOAD + agg, "files": files})
        total += dt
        outs.append(out)
    return total, outs


def session(d, files):
    t = time.perf_counter()
    r = d.rpc({"jsonrpc": "2.0", "id": d.id(), "method": "tools/call",
               "params": {"name": "session_open", "arguments": {}}})
    h = r["result"]["structuredContent"]["session"]
    total, outs = time.perf_counter() - t, []
    for i, agg in enumerate(AGGREGATIONS):
        args = {"code": (LOAD if i == 0 else "") + agg, "session": h}
        if i == 0:
            args["files"] = files
        dt, out = call(d, args)
        total += dt
        outs.append(out)
    t = time.perf_counter()
    d.rpc({"jsonrpc": "2.0", "id": d.id(), "method": "tools/call",
           "params": {"name": "session_close", "arguments": {"session": h}}})
    return total + time.perf_counter() - t, outs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=100)
    a = ap.parse_args()

    t = time.perf_counter()
    raw, gz = make_csv(a.mb)
    files = [{"name": "data.csv.gz", "content": base64.b64encode(gz).decode(), "encoding": "base64"}]
    print("data: %.1f MB of CSV, %.1f MB gzip-compressed (made in %.1f s)" % (raw / 1e6, len(gz) / 1e6,
                                                                              time.perf_counter() - t))
    d = Daemon(a.binary, ENV)
    call(d, {"code": "import pandas"})  # warm the page cache for both
    st, se = [], []
    try:
        for r in range(a.rounds):
            order = [("stateless", stateless), ("session", session)]
            if r % 2:
                order.reverse()
            got = {}
            for name, fn in order:
                got[name] = fn(d, files)
            if got["stateless"][1] != got["session"][1]:
                raise SystemExit("the two ways computed different results: %r / %r" % (got["stateless"][1],
                                                                                      got["session"][1]))
            st.append(got["stateless"][0])
            se.append(got["session"][0])
            print("round %d: six stateless calls %.2f s, one session's six calls %.2f s, ratio %.3f"
                  % (r + 1, st[-1], se[-1], se[-1] / st[-1]))
    finally:
        d.close()
    ms, mse = statistics.median(st), statistics.median(se)
    print("median of %d rounds: stateless %.2f s, session %.2f s, ratio %.3f (target <= 0.25)"
          % (a.rounds, ms, mse, mse / ms))


if __name__ == "__main__":
    main()
