#!/usr/bin/env python3
"""During a run its scope exists in mcp-execd.slice and its cgroup reads back exactly the configured
memory.max, memory.swap.max, pids.max and cpu.max; after 50 runs no scope, cgroup or process is
left; results say limits "cgroup"."""
# tier-timeout: 420
import os
import sys
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import (DEADLINE, all_scope_dirs, read, ready_scope_dirs, run_units, sc, scope_dirs,  # noqa: E402
                    start_call_in_one, wait_reply, wait_until)


def main():
    env = dict(os.environ, MCP_EXEC_MEMORY_MAX="128M", MCP_EXEC_PIDS_MAX="32", MCP_EXEC_CPU_QUOTA="50%")
    with Daemon(env=env, verbose=False, deadline=DEADLINE) as d:
        d.initialize()
        # The interpreter probe ran in a scope of its own before the daemon served; the warm pool's
        # ready sandboxes have scopes of their own, at a lower cpu.weight, which scope_dirs() leaves out.
        rid, scope = start_call_in_one(d, scope_dirs, ready_scope_dirs,
                                       "import time\ntime.sleep(4)\nprint('done')", "run scope")
        want = {"memory.max": "134217728", "memory.swap.max": "0", "pids.max": "32", "cpu.max": "50000 100000"}
        got = {k: read(os.path.join(scope, k)) for k in want}
        print("scope %s: %r" % (os.path.basename(scope), got))
        if got != want:
            raise TestFailure("limits read back %r, want %r" % (got, want))
        # systemd reports the scope's job done once its cgroup exists; the daemon makes the two
        # leaves when it hears so, a moment later (longer on a loaded host).
        for leaf in ("supervisor", "payload"):
            if not wait_until(lambda: os.path.isdir(os.path.join(scope, leaf)), 30):
                raise TestFailure("no %s/ in the scope within 30 s: %r"
                                  % (leaf, os.listdir(scope) if os.path.isdir(scope) else "the scope is gone"))
        # The scope exists as soon as systemd's job is done; Python reaches payload/ a moment later.
        procs = wait_until(lambda: read(os.path.join(scope, "payload/cgroup.procs")).split(), 30)
        sup = read(os.path.join(scope, "supervisor/cgroup.procs")).split()
        if len(sup) != 1 or not procs:
            raise TestFailure("supervisor/ holds %r, payload/ holds %r" % (sup, procs))
        res = sc(wait_reply(d, rid))
        if res["stdout"] != "done\n" or res["limits"] != "cgroup":
            raise TestFailure("result %r" % res)

        t = time.monotonic()
        for i in range(50):
            r = sc(d.exec_code("print(%d)" % i))
            if r["stdout"] != "%d\n" % i or r["exit_code"] != 0 or r["limits"] != "cgroup":
                raise TestFailure("run %d: %r" % (i, r))
        print("50 runs in %.1f s" % (time.monotonic() - t))
        # What stays is the pool: at most its two ready sandboxes, a scope and a unit each.
        left = wait_until(lambda: not scope_dirs() and len(ready_scope_dirs()) <= 2
                          and len(run_units()) == len(all_scope_dirs()), 10)
        if not left:
            raise TestFailure("leftovers after 50 runs: cgroups %r ready %r units %r"
                              % (scope_dirs(), ready_scope_dirs(), run_units()))
        print("no scope, cgroup or unit left after 50 runs but the pool's %d" % len(ready_scope_dirs()))
        if d.close_stdin_and_wait() != 0:
            raise TestFailure("daemon exit status not 0")
    if not wait_until(lambda: not all_scope_dirs() and not run_units(), 30):
        raise TestFailure("left after the daemon stopped: cgroups %r units %r" % (all_scope_dirs(), run_units()))
    print("nothing left once the daemon stopped")


run(main)
