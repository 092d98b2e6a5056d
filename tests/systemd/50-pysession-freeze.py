#!/usr/bin/env python3
# tier-timeout: 600
"""A session's code cannot forge its account or outlive its call (issue 29.1), with a cgroup (the
systemd backend: a scope per session): the black-box file pysession-account.test.mjs proves the same
in rlimit mode.

1. Between calls the session's payload/ is frozen (cgroup.events "frozen 1") and its cpu.stat does
   not move, though the first call left a thread spinning; during the next call it is thawed.
2. A call whose code prints the launcher's end line itself (its nonce dug out of the launcher's
   frame, with forged CPU and memory figures), then spins 4 s of CPU: the call ends at the forged
   line with figures read from the kernel (CPU within its wall time, memory within memory.max), the
   session is frozen meanwhile, and the spin's CPU is the next call's.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, read, sc, scope_dirs, start_call, wait_reply, wait_until  # noqa: E402

MEMORY_MAX = 128 * 1024 * 1024
CPUS = os.cpu_count() or 1


def tool(d, name, arguments):
    return sc(d.call("tools/call", {"name": name, "arguments": arguments}))


def usage_usec(payload):
    for line in read(os.path.join(payload, "cpu.stat")).splitlines():
        k, v = line.split()
        if k == "usage_usec":
            return int(v)
    raise TestFailure("no usage_usec in %s/cpu.stat" % payload)


def frozen(payload):
    return "frozen 1" in read(os.path.join(payload, "cgroup.events")).splitlines()


def possible(res, what):
    cpu = res["cpu_user_us"] + res["cpu_system_us"]
    if not (0 <= cpu <= (res["duration_ms"] + 100) * 1000 * CPUS):
        raise TestFailure("%s: %d us of CPU in %d ms on %d CPUs: %r" % (what, cpu, res["duration_ms"], CPUS, res))
    if not (0 < res["memory_peak_bytes"] <= MEMORY_MAX):
        raise TestFailure("%s: memory_peak_bytes %r (memory.max %d)" % (what, res["memory_peak_bytes"], MEMORY_MAX))


def idle_frozen(payload, what):
    """The session's payload/ is frozen between calls and spends nothing."""
    if not wait_until(lambda: frozen(payload), 10):
        raise TestFailure("%s: the session's payload/ is not frozen between calls: %r"
                          % (what, read(os.path.join(payload, "cgroup.events"))))
    u0 = usage_usec(payload)
    time.sleep(2)
    spent = usage_usec(payload) - u0
    print("%s: frozen between calls; %d us of CPU in 2 s" % (what, spent))
    if spent > 20000:
        raise TestFailure("%s: the frozen session spent %d us of CPU in 2 s" % (what, spent))


def main():
    env = dict(os.environ, MCP_EXEC_MEMORY_MAX="128M", MCP_EXEC_WARM_POOL="0")
    with Daemon(env=env, verbose=False, deadline=DEADLINE) as d:
        d.initialize()
        if not wait_until(lambda: not scope_dirs(), 60):
            raise TestFailure("the probe's scope is still there: %r" % scope_dirs())
        o = tool(d, "session_open", {})
        if o.get("limits") != "cgroup":
            raise TestFailure("session_open answered %r" % o)
        h = o["session"]
        dirs = wait_until(scope_dirs, 20)
        if len(dirs) != 1:
            raise TestFailure("expected the session's scope alone, found %r" % dirs)
        payload = os.path.join(dirs[0], "payload")
        idle_frozen(payload, "after session_open")

        # --- 1. a thread left spinning runs only within calls ----------------------------------
        r = tool(d, "exec", {"session": h, "code": (
            "import threading\n"
            "def spin():\n"
            "    while True:\n"
            "        pass\n"
            "threading.Thread(target=spin, daemon=True).start()\nprint('started')")})
        if r.get("stdout") != "started\n" or r.get("session_alive") is not True:
            raise TestFailure("the call that starts the thread: %r" % r)
        possible(r, "the call that starts the thread")
        idle_frozen(payload, "with a thread left spinning")
        rid = start_call(d, "import time\nt0 = time.process_time()\n"
                            "while time.process_time() - t0 < 1.5:\n    pass\nprint('during')", session=h)
        if not wait_until(lambda: not frozen(payload), 10):
            raise TestFailure("the session's payload/ is still frozen during its call")
        r = sc(wait_reply(d, rid))
        if r.get("stdout") != "during\n":
            raise TestFailure("the second call: %r" % r)
        possible(r, "the second call")
        idle_frozen(payload, "after the second call")

        # --- 2. a forged end line ------------------------------------------------------------
        forged = ("import os, sys, time\n"
                  "f = sys._getframe(0)\n"
                  "while f is not None and 'nonce' not in f.f_locals:\n"
                  "    f = f.f_back\n"
                  "line = b'\\0MCPEXECD-END %s 7 -19689 0 9223372036854775807\\n' % f.f_locals['nonce'].encode()\n"
                  "os.write(2, line); os.write(1, line)\n"
                  "t0 = time.process_time()\n"
                  "while time.process_time() - t0 < 4:\n"
                  "    pass\n"
                  "print('spun')")
        r = tool(d, "exec", {"session": h, "code": forged, "timeout_s": 60})
        print("forged: exit %r, %d ms, CPU %d us, peak %d" % (r.get("exit_code"), r["duration_ms"],
              r["cpu_user_us"] + r["cpu_system_us"], r["memory_peak_bytes"]))
        if r.get("exit_code") != 7 or "spun" in r.get("stdout", ""):
            raise TestFailure("the forged line did not end the call: %r" % r)
        possible(r, "the forged call")
        idle_frozen(payload, "after the forged call")
        r = tool(d, "exec", {"session": h, "code": "print('two')", "timeout_s": 60})
        cpu = r["cpu_user_us"] + r["cpu_system_us"]
        print("the next call: %d ms, CPU %d us, stdout %r" % (r["duration_ms"], cpu, r.get("stdout", "")[:120]))
        possible(r, "the call after the forged one")
        if "spun" not in r.get("stdout", "") or "two" not in r.get("stdout", "") or cpu < 3000000:
            raise TestFailure("the forged call's spin was not the next call's: %r" % r)
        tool(d, "session_close", {"session": h})


if __name__ == "__main__":
    run(main)
