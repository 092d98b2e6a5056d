#!/usr/bin/python3
"""The cost of a transient systemd scope per run: the median round trip of an exec of print(1)
with MCP_EXEC_CGROUP=systemd against MCP_EXEC_CGROUP=none, two daemons, calls interleaved, in
the same run. Needs systemd as PID 1 with cgroup v2 (run it in the test bed's VM, see
bench/README.md).

    bench/scope-cost.py [--n 30] <path to mcp-execd>
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtt import Daemon, medians  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--n", type=int, default=30)
    a = ap.parse_args()

    scoped = Daemon(a.binary, {"MCP_EXEC_CGROUP": "systemd"})
    plain = Daemon(a.binary, {"MCP_EXEC_CGROUP": "none"})
    for _ in range(3):
        scoped.call()
        plain.call()
    t_scoped, t_plain = [], []
    for _ in range(a.n):
        dt, sc = scoped.call()
        assert sc["limits"] == "cgroup", sc
        t_scoped.append(dt)
        dt, sc = plain.call()
        assert sc["limits"] == "rlimit", sc
        t_plain.append(dt)
    scoped.close()
    plain.close()
    medians("exec print(1), backend systemd", t_scoped, "exec print(1), backend none", t_plain,
            what="ratio systemd/none")

if __name__ == "__main__":
    main()
