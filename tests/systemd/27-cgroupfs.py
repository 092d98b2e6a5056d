#!/usr/bin/env python3
"""The cgroupfs backend: the daemon started inside a Delegate=yes service creates per-run child
cgroups (the same two leaves) with the limits, and passes the OOM, pids and peak checks."""
# tier-timeout: 420
import os
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import (DEADLINE, is_ready_sandbox, read, sc, start_call_in_one, wait_reply,  # noqa: E402
                    wait_until, warm_exec)


def main():
    unit = "mcp-execd-cgfs-%s" % uuid.uuid4().hex[:8]
    base = "/sys/fs/cgroup/system.slice/%s.service" % unit
    d = Daemon(verbose=False, deadline=DEADLINE)
    # systemd-run --pipe gives the service our stdin/stdout: an MCP stdio server in a delegated unit.
    d.proc = subprocess.Popen(
        ["systemd-run", "--quiet", "--pipe", "--wait", "--unit=" + unit, "-p", "Delegate=yes",
         "-E", "MCP_EXEC_CGROUP=cgroupfs", "-E", "MCP_EXEC_MEMORY_MAX=128M", "-E", "MCP_EXEC_PIDS_MAX=32",
         "-E", "MCP_EXEC_CPU_QUOTA=50%", os.environ["MCP_EXECD"]],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with d:
        d.initialize()
        # The interpreter probe's run cgroup must be gone, so the one seen below is the call's; the
        # warm pool's two ready sandboxes (run cgroups at a lower cpu.weight) made, and left out.
        def all_run_dirs():
            return [e for e in os.listdir(base) if e.startswith("run-")] if os.path.isdir(base) else []

        def ready_dirs():
            return [e for e in all_run_dirs() if is_ready_sandbox(os.path.join(base, e))]

        def run_dirs():
            return [e for e in all_run_dirs() if not is_ready_sandbox(os.path.join(base, e))]
        rid, run = start_call_in_one(d, run_dirs, ready_dirs,
                                     "import time\ntime.sleep(3)\nprint('delegated')", "run cgroup in %s" % base)
        rc = os.path.join(base, run)
        got = {k: read(os.path.join(rc, k)) for k in ("memory.max", "pids.max", "cpu.max")}
        print("run cgroup %s: %r" % (rc, got))
        if got != {"memory.max": "134217728", "pids.max": "32", "cpu.max": "50000 100000"}:
            raise TestFailure("limits %r" % got)
        for leaf in ("supervisor", "payload"):
            if not os.path.isdir(os.path.join(rc, leaf)):
                raise TestFailure("no %s/" % leaf)
        r = sc(wait_reply(d, rid))
        if r["stdout"] != "delegated\n" or r["limits"] != "cgroup":
            raise TestFailure("result %r" % r)

        oom = sc(d.exec_code("b = b'\\x01' * (1024 * 1024 * 1024)", timeout_s=60))
        if not oom["oom_killed"]:
            raise TestFailure("no OOM kill: %r" % oom)
        bomb = sc(d.exec_code("import os\ntry:\n    while True:\n        if os.fork() == 0:\n"
                              "            import time; time.sleep(60)\nexcept OSError as e:\n    print(e)",
                              timeout_s=60))
        if not bomb["pids_limit_hit"]:
            raise TestFailure("pids_limit_hit false: %r" % bomb)
        for _ in range(2):
            sc(d.exec_code("print(1)"))
        # Both on the same path, the warm one (the default): a ready sandbox's peak counts what its
        # launcher held, a cold run's what its Python's start held. Each call waits for the pool
        # to be full (check_environment's warm_ready), so it is served warm, and must be.
        baser = warm_exec(d, "print(1)")
        bigr = warm_exec(d, "b = b'\\x01' * (64 * 1024 * 1024)")
        base_peak, big = baser["memory_peak_bytes"], bigr["memory_peak_bytes"]
        delta = (big - base_peak) / 1048576
        print("oom_killed ok, pids_limit_hit ok, 64 MiB run peak difference %.2f MiB" % delta)
        if abs(delta - 64) > 3.2:
            raise TestFailure("peak difference %.2f MiB not within 5%% of 64 MiB" % delta)
        if not wait_until(lambda: not run_dirs() and len(ready_dirs()) <= 2, 5):
            raise TestFailure("run cgroups left: %r (ready: %r)" % (run_dirs(), ready_dirs()))
        d.proc.stdin.close()
        d.proc.wait(timeout=30)
        if not wait_until(lambda: not all_run_dirs(), 30):
            raise TestFailure("run cgroups left after the daemon stopped: %r" % all_run_dirs())


run(main)
