#!/usr/bin/env python3
"""Memory: touching 1 GiB under MemoryMax=128M ends with oom_killed true and the daemon fine; a run
that touches 100 MiB reports memory_peak_bytes within 5% of 100 MiB above a warm baseline,
both runs served by ready sandboxes."""
# tier-timeout: 420
import os
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, sc, warm_exec  # noqa: E402

MIB = 1024 * 1024


def main():
    env = dict(os.environ, MCP_EXEC_MEMORY_MAX="128M")
    with Daemon(env=env, verbose=False, deadline=DEADLINE) as d:
        d.initialize()
        r = sc(d.exec_code("b = b'\\x01' * (1024 * 1024 * 1024)\nprint(len(b))", timeout_s=60))
        print("1 GiB under 128M: exit_code=%s signal=%s oom_killed=%s memory_peak_bytes=%s"
              % (r["exit_code"], r["signal"], r["oom_killed"], r["memory_peak_bytes"]))
        if not r["oom_killed"] or r["timed_out"] or r["exit_code"] == 0:
            raise TestFailure("expected an OOM kill: %r" % r)
        # The kernel may overshoot memory.max by its per-CPU charge batches before reclaiming or
        # killing; a peak far above the limit would mean the limit was not applied.
        if r["memory_peak_bytes"] > 128 * MIB * 1.05:
            raise TestFailure("peak %d far above the 128M limit" % r["memory_peak_bytes"])
        if d.call("ping") != {}:
            raise TestFailure("ping after the OOM")

        # Page cache is charged to the cgroup that first reads a file: warm up, then take the
        # baseline of a plain run, then the 100 MiB run, both in the same conditions.
        for _ in range(2):
            sc(d.exec_code("print(1)"))
        # Both on the same path, the warm one (the default): a ready sandbox's peak counts what its
        # launcher held, a cold run's what its Python's start held. Each call waits for the pool
        # to be full (check_environment's warm_ready), so it is served warm, and must be.
        baser = warm_exec(d, "print(1)")
        big = warm_exec(d, "b = b'\\x01' * (100 * 1024 * 1024)\nprint(len(b))")
        base = baser["memory_peak_bytes"]
        if big["exit_code"] != 0 or big["oom_killed"]:
            raise TestFailure("100 MiB run failed: %r" % big)
        delta = big["memory_peak_bytes"] - base
        print("baseline %d, 100 MiB run %d, difference %.2f MiB"
              % (base, big["memory_peak_bytes"], delta / MIB))
        if abs(delta - 100 * MIB) > 5 * MIB:
            raise TestFailure("peak difference %.2f MiB is not within 5%% of 100 MiB" % (delta / MIB))


run(main)
