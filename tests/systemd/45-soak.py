#!/usr/bin/env python3
"""The soak of issue 9 against real scopes: 1 000 runs through one daemon over stdio (the mix of
tests/soak/soak.py: ok, exits, exceptions, timeouts, floods, stdin, cancellations, pipelined
calls), each in its own transient scope. Every 250 runs the daemon's RSS, fds, processes, TMPDIR
entries, run scopes and run cgroups are sampled: after warm-up RSS drifts at most 1 MiB, and the
rest equal their baseline (no scope, no cgroup left when idle)."""
# tier-timeout: 3000
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import daemon_path, run  # noqa: E402

RUNS = int(os.environ.get("MCP_EXECD_SOAK_RUNS", "1000"))


def main():
    soak = os.path.join(os.environ["MCP_EXECD_SRC"], "tests/soak/soak.py")
    # Cold runs only: while idle the soak wants no process, scope or cgroup under the daemon, and
    # the warm pool keeps two of each (30-warm-pool.py tests the pool under systemd).
    env = dict(os.environ, SOAK_CGROUP="systemd", MCP_EXEC_WARM_POOL="0")
    every = max(RUNS // 4, 1)
    # --reply-timeout: a run under software emulation on a busy host can take many seconds.
    rc = subprocess.run([sys.executable, soak, "--runs", str(RUNS), "--every", str(every),
                         "--reply-timeout", "180", daemon_path()], env=env).returncode
    return 1 if rc else None


run(main)
