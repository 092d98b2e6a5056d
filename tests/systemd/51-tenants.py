#!/usr/bin/env python3
"""Tenants under the shipped service (issue 31.1, 31.5): MCP_EXEC_TENANTS set on the unit, the
auth-token credential beside it. Each tenant's exec is recorded in the journal with its TENANT=
(the auth token's as `default`), and no record holds a token or its hash. `systemctl reload`
(ExecReload= SIGHUP, RELOADING=1 then READY=1) reads the file again: a new tenant is in, a removed
one is out, the daemon's PID and a 2025 session opened before stay. A file that cannot be used
on reload keeps the tenants of before, the reload still succeeds and the journal says why. At
start such a file stops the service with exit status 2, and it is not restarted
(RestartPreventExitStatus=2).

Slices (issue 31.3): a tenant whose line sets memory=, pids= or weight= gets
mcp-execd-tenant-<name>.slice (a '-' in the name escaped \\x2d) with MemoryMax, TasksMax and CPUWeight
from its line; its sessions' and runs' scopes live in it, and its memory= holds for them: a run of
150 MB is OOM-killed in a tenant with memory=100M though a run may have 256M, while the same run
of another tenant completes.
"""
# tier-timeout: 600
import hashlib
import os
import secrets
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from httpclient import Client  # noqa: E402
from journal import records, sync, wait_records  # noqa: E402
from mcpclient import TestFailure, run, wait_for  # noqa: E402
from service import sh, with_units  # noqa: E402

FINISHED = "0a6bda1f24cf4b5188307da770817b6b"
TENANTS = "/etc/mcp-execd/tenants"
TOKENS = {name: secrets.token_hex(16) for name in ("default", "alpha", "beta", "team-x")}


def prop(name):
    return sh("systemctl", "show", "-P", name, "mcp-execd.service")


def sha(token):
    return hashlib.sha256(token.encode()).hexdigest()


def write_tenants(names, mode=0o600, fields=None):
    """names' lines, each with its fields (a dict of name to "key=value ...") when given."""
    tmp = TENANTS + ".new"
    fields = fields or {}
    with open(tmp, "w") as f:
        f.write("# written by test 51\n" + "".join("%s %s %s\n" % (n, sha(TOKENS[n]), fields.get(n, "")) for n in names))
    os.chmod(tmp, mode)
    os.rename(tmp, TENANTS)


def exec_as(name, code="print(1)\n", client=None):
    c = client or Client(TOKENS[name], name="tier-51")
    if not c.session:
        c.initialize()
    sc = c.exec_code(code).get("structuredContent") or {}
    if sc.get("exit_code") != 0:
        raise TestFailure("exec as %s: %r" % (name, sc))
    return c


def refused(name):
    """Whether a request with name's token gets 401."""
    try:
        Client(TOKENS[name], name="tier-51").initialize()
    except TestFailure as e:
        return "HTTP 401" in str(e)
    return False


def main():
    return with_units(TOKENS["default"], (("MCP_EXEC_TENANTS", TENANTS),), scenario, 60)


def scenario():
    write_tenants(["alpha"])
    sh("systemctl", "start", "mcp-execd.socket", check=True)
    exec_as("alpha", "print('alpha')\n")
    exec_as("default", "print('default')\n")
    pid = int(prop("MainPID"))
    for name in ("alpha", "default"):
        recs = wait_records(1, "MESSAGE_ID=" + FINISHED, "_PID=%d" % pid, "TENANT=" + name)
        if len(recs) != 1:
            raise TestFailure("%d run records with TENANT=%s for one exec" % (len(recs), name))
    if not refused("beta"):
        raise TestFailure("beta, in no file yet, was let in")
    print("alpha and default each ran, each record names its tenant; beta gets 401")

    # --- reload: beta in, alpha out, nothing in flight dropped -----------------------------
    keep = exec_as("default")  # a 2025 session across the reloads
    write_tenants(["beta"])
    sh("systemctl", "reload", "mcp-execd.service", check=True)
    if int(prop("MainPID")) != pid or prop("ActiveState") != "active":
        raise TestFailure("after reload: MainPID %s (was %d), %s" % (prop("MainPID"), pid, prop("ActiveState")))
    exec_as("beta")
    if not refused("alpha"):
        raise TestFailure("alpha, removed from the file, is still let in after the reload")
    exec_as("default", client=keep)
    print("systemctl reload: beta in, alpha out, the same daemon, a session kept")

    # --- slices: beta's bounds hold for its runs together, team-x's name is escaped ----------
    write_tenants(["beta", "team-x"], fields={"beta": "memory=100M pids=200 weight=300", "team-x": "pids=16"})
    sh("systemctl", "reload", "mcp-execd.service", check=True)
    wait_for("the slices' journal line", lambda: [
        r for r in records("_PID=%d" % pid) if "2 tenants in slices of their own" in r.get("MESSAGE", "")], 30)
    beta_slice, team_slice = "mcp-execd-tenant-beta.slice", "mcp-execd-tenant-team\\x2dx.slice"
    want = {(beta_slice, "MemoryMax"): "104857600", (beta_slice, "TasksMax"): "200",
            (beta_slice, "CPUWeight"): "300", (team_slice, "TasksMax"): "16"}
    for (unit, key), value in want.items():
        got = sh("systemctl", "show", "-P", key, unit)
        if got != value:
            raise TestFailure("%s %s=%s, expected %s" % (unit, key, got, value))
    c = Client(TOKENS["beta"], name="tier-51")
    c.initialize()
    opened = c.request("tools/call", {"name": "session_open", "arguments": {}})["result"]
    handle = (opened.get("structuredContent") or {}).get("session")
    if not handle:
        raise TestFailure("session_open as beta: %r" % opened)
    scopes = sh("systemctl", "list-units", "--plain", "--no-legend", "mcp-execd-run-*.scope").split()
    slices = {u: sh("systemctl", "show", "-P", "Slice", u) for u in scopes if u.endswith(".scope")}
    if beta_slice not in slices.values():
        raise TestFailure("no scope of beta's session in %s: %r" % (beta_slice, slices))
    eat = "x = bytearray(150 * 2**20)\nx[::4096] = b'1' * len(x[::4096])\nprint('ate')\n"
    sc = c.exec_code(eat).get("structuredContent") or {}
    if not sc.get("oom_killed"):
        raise TestFailure("150 MB in beta's slice (memory=100M): %r" % sc)
    exec_as("default", eat)  # the daemon's own slice: a run may have 256M
    c.request("tools/call", {"name": "session_close", "arguments": {"session": handle}})
    print("beta's slice: %s; its session's scope in it; 150 MB OOM-killed there, not for default" % (
        ", ".join("%s=%s" % (k, v) for (u, k), v in want.items() if u == beta_slice)))

    # --- a file that cannot be used on reload: the tenants of before stay -------------------
    os.chmod(TENANTS, 0o644)
    sh("systemctl", "reload", "mcp-execd.service", check=True)
    msg = wait_for("the refusal in the journal", lambda: [
        r for r in records("_PID=%d" % pid) if "cannot be used" in r.get("MESSAGE", "")], 30)
    if "may be read or written by other users (mode 0644)" not in msg[-1]["MESSAGE"]:
        raise TestFailure("reload refusal: %r" % msg[-1]["MESSAGE"])
    exec_as("beta")
    print("a bad file on reload: %s" % msg[-1]["MESSAGE"])

    # --- no record holds a token or a hash --------------------------------------------------
    sync()
    text = sh("journalctl", "-b", "-o", "export", "--no-pager", "_PID=%d" % pid)
    for name, tok in TOKENS.items():
        if tok in text or sha(tok) in text:
            raise TestFailure("the journal holds %s's token or its hash" % name)

    # --- at start: exit 2, no restart loop -----------------------------------------------------
    sh("systemctl", "stop", "mcp-execd.service")
    restarts = int(prop("NRestarts") or 0)
    sh("systemctl", "start", "mcp-execd.service")
    wait_for("the service failed", lambda: prop("ActiveState") == "failed", 30)
    if prop("ExecMainStatus") != "2":
        raise TestFailure("a world-readable tenants file: ExecMainStatus=%s, expected 2" % prop("ExecMainStatus"))
    if int(prop("NRestarts") or 0) != restarts:
        raise TestFailure("the refused start was restarted (NRestarts %s)" % prop("NRestarts"))
    print("OK: tenants under the service, records with TENANT=, reload, a bad file kept out")


run(main)
