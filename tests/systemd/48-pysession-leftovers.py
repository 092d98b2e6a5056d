#!/usr/bin/env python3
# tier-timeout: 1200
"""Python sessions leave nothing behind (issue 18.5), under the shipped service (units/, over HTTP,
2026-07-28 requests): 50 sessions opened and abandoned, each with a process of its own (a marker in
its argv) and a file in its /tmp.

1. Each session has its scope (mcp-execd-run-*.scope) in mcp-execd.slice, while the daemon lives.
2. A close, and an idle expiry (idle_timeout_s), each take one session's processes and scope.
3. SIGKILL of the daemon with the other sessions open, the fd store off (FileDescriptorStoreMax=0;
   with it the sessions outlive the kill, 61-session-restart.py): every process, scope and cgroup of
   theirs goes, and the daemon's private directory (under RuntimeDirectory=) with it; the service starts
   again at the next request and has no session (the old handles get the one "unknown" answer).
4. `systemctl stop` with sessions open: the same, nothing left.
"""
import os
import secrets
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
import fleet  # noqa: E402
from mcpclient import TestFailure, run, wait_for  # noqa: E402
from scopes import all_scope_dirs, marker_pids  # noqa: E402
from service import run_units, sh, with_units  # noqa: E402

PORT = 8080
TOKEN = secrets.token_hex(16)
DROPIN_DIR = "/run/systemd/system/mcp-execd.service.d"
DROPIN = DROPIN_DIR + "/tier48-no-fdstore.conf"
N = 50


def runtime_dirs():
    try:
        return sorted(os.listdir("/run/mcp-execd"))
    except FileNotFoundError:
        return []


def open_sessions(marker, n, **open_args):
    """n sessions, 5 opened at a time; each starts a process with marker in its argv (the session's
    own, living as long as it does) and writes a file in its /tmp. Returns the handles."""
    def open_one(i):
        h = fleet.tool(PORT, TOKEN, "session_open", dict(open_args), timeout=300)["session"]
        sc = fleet.tool(PORT, TOKEN, "exec", {"session": h, "code": (
            "import subprocess\n"
            "keep = subprocess.Popen(['%s-%d', '600'], executable='/usr/bin/sleep')\n"
            "open('/tmp/kept', 'w').write('x' * 4096)\nprint('ok')" % (marker, i))}, timeout=300)
        if sc.get("stdout") != "ok\n":
            raise TestFailure("session %d: %r" % (i, sc))
        return h

    handles, errors = fleet.in_parallel(range(n), 5, open_one)
    if errors:
        raise TestFailure("%d of %d sessions failed to open: %r" % (len(errors), n, errors[:3]))
    return handles


def nothing_left(marker):
    """What is left of the sessions: processes with the marker, run scope units, run scope cgroups
    (only those: other tests leave slices of their own in mcp-execd.slice, such as the fleet's
    mcp-execd-8081.slice)."""
    left = {"processes": marker_pids(marker), "scopes": run_units(), "cgroups": all_scope_dirs()}
    return {k: v for k, v in left.items() if v}


def wait_nothing_left(marker, after, timeout=120):
    try:
        wait_for("nothing of the sessions to be left after " + after, lambda: not nothing_left(marker), timeout)
    except TestFailure as e:
        raise TestFailure("%s; left: %r" % (e, nothing_left(marker)))


def main():
    # Room for the 50 sessions; no ready sandboxes (sessions do not take them, and they would only
    # add scopes to tell apart).
    return with_units(TOKEN, [("MCP_EXEC_PY_SESSIONS_MAX", N + 10), ("MCP_EXEC_WARM_POOL", 0)], scenario, 15)


def scenario():
    # Without the fd store (FileDescriptorStoreMax=0: systemd closes what the daemon hands it), so
    # that a SIGKILL ends the sessions as it did before issue 33.3; with the store they outlive it
    # (61-session-restart.py).
    os.makedirs(DROPIN_DIR, exist_ok=True)
    with open(DROPIN, "w") as f:
        f.write("[Service]\nFileDescriptorStoreMax=0\n")
    sh("systemctl", "daemon-reload", check=True)
    try:
        leftovers()
    finally:
        os.unlink(DROPIN)
        os.rmdir(DROPIN_DIR)
        sh("systemctl", "daemon-reload")


def leftovers():
    marker = "sess-left-" + uuid.uuid4().hex[:12]
    sh("systemctl", "start", "mcp-execd.socket", check=True)
    t0 = time.monotonic()
    handles = open_sessions(marker, N)
    print("%d sessions open in %.1f s" % (len(handles), time.monotonic() - t0))

    # --- 1. each session: its process, its scope -------------------------------------------
    procs = wait_for("the %d sessions' processes" % N, lambda: len(marker_pids(marker)) == N and marker_pids(marker), 60)
    units = run_units()
    if len(units) != N:
        raise TestFailure("%d run scopes for %d sessions: %r" % (len(units), N, units[:5]))
    for u in units[:3]:
        if sh("systemctl", "show", "-P", "Slice", u) != "mcp-execd.slice":
            raise TestFailure("%s is in %s" % (u, sh("systemctl", "show", "-P", "Slice", u)))
    pid = int(sh("systemctl", "show", "-P", "MainPID", "mcp-execd.service"))
    private = runtime_dirs()
    print("%d processes, %d scopes in mcp-execd.slice; daemon %d, its directories %r" % (len(procs), len(units),
                                                                                         pid, private))

    # --- 2. a close and an idle expiry -----------------------------------------------------
    closed = handles.pop()
    if fleet.tool(PORT, TOKEN, "session_close", {"session": closed}).get("closed") is not True:
        raise TestFailure("session_close did not say closed")
    wait_for("a closed session's process and scope to go",
             lambda: len(marker_pids(marker)) == N - 1 and len(run_units()) == N - 1, 60)
    idle = "idle-" + marker
    open_sessions(idle, 1, idle_timeout_s=5)
    wait_for("the expiring session's process", lambda: marker_pids(idle), 60)
    wait_for("an idle session's process and scope to go after its idle_timeout_s",
             lambda: not marker_pids(idle) and len(run_units()) == N - 1, 90)
    print("a close and an idle expiry each took their session's process and scope")

    # --- 3. SIGKILL with the other sessions open ------------------------------------------
    t = time.monotonic()
    os.kill(pid, 9)
    wait_nothing_left(marker, "the daemon's SIGKILL")
    print("SIGKILL with %d sessions open: their processes, scopes and cgroups gone after %.1f s"
          % (len(handles), time.monotonic() - t))
    # The next request starts the service again (its socket): no session of before is there.
    try:
        r = fleet.tool(PORT, TOKEN, "exec", {"code": "print(1)", "session": handles[0]}, timeout=300)
        raise TestFailure("a handle of the killed daemon was answered: %r" % r)
    except fleet.CallError as e:
        if "unknown session" not in str(e):
            raise TestFailure("a handle of the killed daemon got %s" % e)
    new_pid = int(sh("systemctl", "show", "-P", "MainPID", "mcp-execd.service"))
    if new_pid in (0, pid):
        raise TestFailure("the service did not start again (MainPID %d)" % new_pid)
    stale = set(private) & set(runtime_dirs())
    if stale:
        raise TestFailure("the killed daemon's private directories are left: %r" % sorted(stale))
    print("restarted as %d: old handles unknown, the old private directories %r gone" % (new_pid, private))

    # --- 4. systemctl stop with sessions open -----------------------------------------------
    marker2 = "stop-" + marker
    more = open_sessions(marker2, 10)
    wait_for("the 10 sessions' processes", lambda: len(marker_pids(marker2)) == 10, 60)
    sh("systemctl", "stop", "mcp-execd.socket", "mcp-execd.service", check=True)
    wait_nothing_left(marker2, "systemctl stop")
    if runtime_dirs():
        raise TestFailure("files left under /run/mcp-execd after the stop: %r" % runtime_dirs())
    print("systemctl stop with %d sessions open: nothing left" % len(more))


if __name__ == "__main__":
    run(main)
