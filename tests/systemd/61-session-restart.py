#!/usr/bin/env python3
# tier-timeout: 600
"""Python sessions outlive a restart of the shipped service (issue 33.3; docs/sessions.md,
"Restarts"): the daemon hands each ready session's fds to systemd's fd store
(FileDescriptorStoreMax=) and takes them back at its next start.

Two tenants (MCP_EXEC_TENANTS), alpha and beta. alpha opens a session and sets a variable.
1. `systemctl restart`: a new MainPID; the journal says the session was taken back; alpha, over a
   new HTTP session, reads the variable back and its account goes on (the session's call count
   and totals continue); beta, with alpha's handle, gets the unknown-session error. A 2026 task
   alpha ran before the restart gives its result after it (tasks/get), and beta gets none.
2. `kill -9` of the daemon (Restart=on-failure brings it back): the variable is still there. A
   second session, caught in a call by the kill (its code runs a marked process), is ended by the
   next daemon (the journal says why), its process gone and its handle unknown; the first lives.
3. A session alpha closed before a restart is not brought back (its handle is unknown after).
4. A daemon's fd store holds the session's pieces by name (`systemctl show -P NFileDescriptorStore`
   counts them, and the task's record), and they leave it when the session is closed.
5. `systemctl stop`, then start: the stop is no restart, so systemd drops the store: the
   session's scope ends, and its handle is unknown to the next daemon.
"""
import hashlib
import os
import secrets
import signal
import sys
import threading
import uuid

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
import fleet  # noqa: E402
from httpclient import Client  # noqa: E402
from journal import records  # noqa: E402
from mcpclient import TestFailure, run, wait_for  # noqa: E402
from scopes import marker_pids  # noqa: E402
from service import run_units, sh, with_units  # noqa: E402

TENANTS = "/etc/mcp-execd/tenants"
TOKENS = {name: secrets.token_hex(16) for name in ("default", "alpha", "beta")}
PIECES = 8  # a session's fds in the store (pysession/store.c)


def prop(name):
    return sh("systemctl", "show", "-P", name, "mcp-execd.service")


def write_tenants():
    with open(TENANTS, "w") as f:
        f.write("".join("%s %s\n" % (n, hashlib.sha256(TOKENS[n].encode()).hexdigest()) for n in ("alpha", "beta")))
    os.chmod(TENANTS, 0o600)


def client(name):
    c = Client(TOKENS[name], name="tier-60")
    c.initialize()
    return c


def tool(c, name, arguments):
    r = c.request("tools/call", {"name": name, "arguments": arguments})
    if "result" not in r:
        raise TestFailure("%s: %r" % (name, r))
    return r["result"]


def session_exec(c, handle, code):
    res = tool(c, "exec", {"code": code, "session": handle})
    return res, res.get("structuredContent") or {}


def stored():
    return int(prop("NFileDescriptorStore") or "0")


def new_main_pid(old):
    """The daemon that followed old, once it serves (the socket activates it on a connection)."""
    def up():
        client("alpha")
        pid = prop("MainPID")
        return pid if pid not in ("0", old) and prop("ActiveState") == "active" else None
    return wait_for("a new daemon after %s" % old, up, 120)


def gone_but_kept(gone, kept, what):
    """Session gone is unknown (what: how it ended), and session kept still holds x = 43."""
    a = client("alpha")
    res, _ = session_exec(a, gone, "print(1)\n")
    if not res.get("isError"):
        raise TestFailure("a session %s answered: %r" % (what, res))
    _, sc = session_exec(a, kept, "print(x)\n")
    if sc.get("stdout") != "43\n":
        raise TestFailure("the kept session, beside one %s: %r" % (what, sc))


def main():
    return with_units(TOKENS["default"], (("MCP_EXEC_TENANTS", TENANTS),), scenario, 80)


def scenario():
    write_tenants()
    sh("systemctl", "start", "mcp-execd.socket", check=True)
    a = client("alpha")
    opened = tool(a, "session_open", {})
    handle = (opened.get("structuredContent") or {}).get("session")
    if not handle:
        raise TestFailure("session_open as alpha: %r" % opened)
    _, sc = session_exec(a, handle, "x = 41\nprint('set')\n")
    if sc.get("stdout") != "set\n":
        raise TestFailure("first call: %r" % sc)
    calls_before = sc.get("session_calls")
    n = wait_for("the session's %d pieces in the fd store" % PIECES, lambda: stored() >= PIECES and stored(), 30)
    if n != PIECES:
        raise TestFailure("the fd store holds %d fds with one session open (expected %d)" % (n, PIECES))
    scope = [u for u in run_units() if u.endswith(".scope")]
    print("session %s… open, its scope %s, %d fds in the store" % (handle[:8], scope, n))

    # A task of alpha's (2026 requests: its owner is the tenant), ended before the restart.
    tid = fleet.task_create(8080, TOKENS["alpha"], "import time\ntime.sleep(3)\nprint('task-kept')\n")
    wait_for("alpha's task to end", lambda: fleet.task_request(8080, TOKENS["alpha"], "tasks/get", tid)
             .get("status") != "working", 120)

    # --- 1. systemctl restart ------------------------------------------------------------------
    pid = prop("MainPID")
    sh("systemctl", "restart", "mcp-execd.service", check=True)
    pid2 = new_main_pid(pid)
    taken = wait_for("the new daemon's 'taken back' line", lambda: [
        r for r in records("_PID=%s" % pid2) if "taken back from systemd's fd store" in r.get("MESSAGE", "")], 30)
    print("restart: MainPID %s -> %s; %s" % (pid, pid2, taken[0]["MESSAGE"]))
    a = client("alpha")
    _, sc = session_exec(a, handle, "x += 1\nprint(x)\n")
    if sc.get("stdout") != "42\n" or sc.get("exit_code") != 0:
        raise TestFailure("after a restart, alpha's session: %r" % sc)
    if calls_before is not None and sc.get("session_calls") != calls_before + 1:
        raise TestFailure("the session's call count did not go on: %r then %r" % (calls_before, sc.get("session_calls")))
    print("restart: alpha reads x back (42); session_calls %r -> %r" % (calls_before, sc.get("session_calls")))
    b = client("beta")
    res, _ = session_exec(b, handle, "print(x)\n")
    text = " ".join(c.get("text", "") for c in res.get("content", []))
    if not res.get("isError") or "unknown session" not in text:
        raise TestFailure("beta with alpha's handle after the restart: %r" % res)
    print("restart: beta with alpha's handle: %r" % text[:60])
    t = fleet.task_request(8080, TOKENS["alpha"], "tasks/get", tid)
    if t.get("status") != "completed" or (t.get("result", {}).get("structuredContent") or {}).get("stdout") != "task-kept\n":
        raise TestFailure("alpha's task after the restart: %r" % t)
    try:
        t = fleet.task_request(8080, TOKENS["beta"], "tasks/get", tid)
        raise TestFailure("beta got alpha's task after the restart: %r" % t)
    except fleet.CallError as e:
        print("restart: alpha's task still gives its result; beta gets %s" % str(e)[:80])

    # --- 2. kill -9 ----------------------------------------------------------------------------
    pid = prop("MainPID")
    os.kill(int(pid), signal.SIGKILL)
    pid3 = new_main_pid(pid)
    a = client("alpha")
    _, sc = session_exec(a, handle, "x += 1\nprint(x)\n")
    if sc.get("stdout") != "43\n":
        raise TestFailure("after kill -9, alpha's session: %r" % sc)
    print("kill -9: MainPID %s -> %s (Restart=on-failure); alpha reads x back (43)" % (pid, pid3))

    # --- 2b. kill -9 with a call in flight: that session ends ---------------------------------
    busy = (tool(a, "session_open", {}).get("structuredContent") or {}).get("session")
    marker = "busy-" + uuid.uuid4().hex[:12]
    code = ("import subprocess\n"
            "subprocess.run(['%s', '600'], executable='/usr/bin/sleep')\n" % marker)
    lost = {}

    def in_flight():
        try:
            lost["res"] = session_exec(client("alpha"), busy, code)[0]
        except Exception as e:  # noqa: BLE001 - the kill cuts the connection: that is the point
            lost["error"] = repr(e)
    t = threading.Thread(target=in_flight)
    t.start()
    wait_for("the call's process to run", lambda: marker_pids(marker), 60)
    pid = prop("MainPID")
    os.kill(int(pid), signal.SIGKILL)
    t.join(120)
    pid4 = new_main_pid(pid)
    why = wait_for("the new daemon's reason for ending the busy session", lambda: [
        r["MESSAGE"] for r in records("_PID=%s" % pid4) if "a call was running in it" in r.get("MESSAGE", "")], 30)
    wait_for("the busy session's process to go", lambda: not marker_pids(marker), 60)
    gone_but_kept(busy, handle, "after a kill -9 that caught it in a call")
    print("kill -9 during a call: the call got %s; %s; the idle one lives (x = 43)"
          % ("an error" if "error" in lost else "a result %r" % lost.get("res"), why[0]))

    # --- 3, 4. a closed session is not brought back; its pieces leave the store -----------------
    a = client("alpha")
    other = (tool(a, "session_open", {}).get("structuredContent") or {}).get("session")
    if not other:
        raise TestFailure("a second session_open failed")
    # (and alpha's task's record, kept until its TTL)
    wait_for("two sessions' pieces in the store", lambda: stored() == 2 * PIECES + 1, 30)
    tool(a, "session_close", {"session": other})
    wait_for("the closed session's pieces out of the store", lambda: stored() == PIECES + 1, 30)
    pid = prop("MainPID")
    sh("systemctl", "restart", "mcp-execd.service", check=True)
    new_main_pid(pid)
    gone_but_kept(other, handle, "closed before a restart")
    print("a closed session is not brought back; the open one still is (x = 43); store: %d fds" % stored())

    # --- 5. stop, then start: the store is dropped, the session ends ----------------------------
    sh("systemctl", "stop", "mcp-execd.service", check=True)
    wait_for("the session's scope to end after a stop", lambda: not [u for u in run_units() if u in scope], 60)
    a = client("alpha")  # the socket starts a new daemon
    res, _ = session_exec(a, handle, "print(x)\n")
    if not res.get("isError"):
        raise TestFailure("after a stop and a start the session still answers: %r" % res)
    if stored() != 0:
        raise TestFailure("after a stop and a start the store holds %d fds" % stored())
    print("stop + start: the session's scope ended with the stop, its handle is unknown, the store empty")


if __name__ == "__main__":
    run(main)
