"""Helpers for the cgroup tests of the systemd tier: run scopes, their cgroups, processes."""
import glob
import os
import subprocess
import time

from mcpclient import TestFailure

CGROUP = "/sys/fs/cgroup"


# Slow under software emulation on a loaded host: a call may take tens of seconds.
DEADLINE = 120


# A ready sandbox's scope waits at this cpu.weight (daemon/run/pool.c POOL_CPU_WEIGHT); a call that
# takes it gives it the runs' weight (100) back.
READY_CPU_WEIGHT = "10"


def all_scope_dirs(root=CGROUP):
    """Every mcp-execd-run-*.scope cgroup anywhere below root, ready sandboxes' included
    ("mcp-execd.slice" lives in "mcp.slice": a dash in a slice name is a level of the hierarchy)."""
    return sorted(glob.glob(os.path.join(root, "**", "mcp-execd-run-*.scope"), recursive=True))


def is_ready_sandbox(path):
    try:
        with open(os.path.join(path, "cpu.weight")) as f:
            return f.read().strip() == READY_CPU_WEIGHT
    except OSError:
        return False


def scope_dirs(root=CGROUP):
    """The scopes of runs: every run scope but those of ready sandboxes waiting for a call (the
    warm pool, on by default, keeps MCP_EXEC_WARM_POOL of them while the daemon lives)."""
    return [p for p in all_scope_dirs(root) if not is_ready_sandbox(p)]


def ready_scope_dirs(root=CGROUP):
    return [p for p in all_scope_dirs(root) if is_ready_sandbox(p)]


def run_units():
    out = subprocess.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "mcp-execd-run-*"],
                         capture_output=True, text=True, timeout=30).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def read(path):
    with open(path) as f:
        return f.read().strip()


def marker_pids(marker):
    """Pids of processes whose command line contains marker."""
    found = []
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(p, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(p.split("/")[2]))
        except OSError:
            pass
    return [p for p in found if p != os.getpid()]


def wait_until(pred, timeout, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def start_call(d, code, **arguments):
    """Sends a tools/call exec without waiting; returns its id."""
    rid = d.next_id
    d.next_id += 1
    arguments["code"] = code
    d.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "exec", "arguments": arguments}})
    return rid


def start_call_in_one(d, runs, ready, code, what):
    """Waits for the interpreter probe's run to be gone (runs() empty), so the one seen after is the
    call's, and for the warm pool's two ready sandboxes (ready()), so none is being made during the
    call; then starts code as an exec call. Returns the call's id and the one entry runs() has while
    it runs. what names a run's cgroup in the messages ("run scope", "run cgroup in <dir>")."""
    if not wait_until(lambda: not runs() and len(ready()) == 2, 60):
        raise TestFailure("the probe's %s is still there, or the pool is not full: runs %s, ready %s"
                          % (what, runs(), ready()))
    rid = start_call(d, code, timeout_s=30)
    found = wait_until(runs, 20)
    if len(found) != 1:
        raise TestFailure("expected one %s during the run, found %r" % (what, found))
    return rid, found[0]


def wait_reply(d, rid, timeout=DEADLINE):
    """The result of call rid (replies to other calls are kept for them)."""
    reply = d.reply(rid, time.monotonic() + timeout)
    if "result" not in reply:
        raise TestFailure("call %d answered an error: %r" % (rid, reply))
    return reply["result"]


def check_environment(d):
    """The check_environment tool's result (structuredContent)."""
    return sc(d.call("tools/call", {"name": "check_environment", "arguments": {}}))


def wait_pool_full(d, timeout=DEADLINE):
    """Waits until the daemon's warm pool is full: check_environment's sandbox.warm_ready (sandboxes
    that have said ready, not merely been spawned: a scope or cgroup exists before its Python is up)
    equals sandbox.warm_pool. Then the next call is served by a ready sandbox, and no refill is
    running beside it (refills start only after an answer, and only while the pool is short).
    Fails if there is no pool or it is not full within timeout seconds; returns the sandbox object."""
    end = time.monotonic() + timeout
    while True:
        sb = check_environment(d).get("sandbox") or {}
        if not sb.get("warm_pool"):
            raise TestFailure("check_environment says there is no warm pool: %r" % sb)
        if sb.get("warm_ready", 0) >= sb["warm_pool"]:
            return sb
        if time.monotonic() >= end:
            raise TestFailure("the warm pool is not full after %.0f s: warm_ready %r of warm_pool %r"
                              % (timeout, sb.get("warm_ready"), sb["warm_pool"]))
        time.sleep(0.5)


def warm_exec(d, code, timeout=DEADLINE, **arguments):
    """An exec call made once the pool is full (wait_pool_full()), which must be served warm."""
    wait_pool_full(d, timeout)
    r = sc(d.exec_code(code, **arguments))
    if not r.get("warm"):
        raise TestFailure("a call made while the warm pool was full was not served warm: %r" % r)
    return r


def sc(result):
    if result.get("isError"):
        raise TestFailure("tool error: %s" % result["content"][0]["text"])
    s = result.get("structuredContent")
    if not s:
        raise TestFailure("no structuredContent in %r" % result)
    return s
