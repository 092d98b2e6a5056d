#!/usr/bin/env python3
"""Tenants' slices with the cgroupfs backend (issue 31.3): the daemon, an HTTP server inside a
Delegate=yes service, makes tenant-<name>/ below its delegated cgroup for a tenant whose line sets
memory=, pids= or weight=, with memory.max, pids.max and cpu.weight from the line; that tenant's
session and runs get their cgroups inside it, and its memory= holds for them (150 MB is OOM-killed
with memory=100M though a run may have 256M), while a tenant without such fields runs beside it,
below the delegated cgroup itself, and the same 150 MB completes."""
# tier-timeout: 300
import hashlib
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from httpclient import Client  # noqa: E402
from mcpclient import TestFailure, run, wait_for  # noqa: E402
from scopes import read  # noqa: E402

EAT = "x = bytearray(150 * 2**20)\nx[::4096] = b'1' * len(x[::4096])\nprint('ate')\n"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    tokens = {n: secrets.token_hex(16) for n in ("alpha", "beta")}
    fd, tenants = tempfile.mkstemp(prefix="tenants-52-")  # mode 0600, root's
    with os.fdopen(fd, "w") as f:
        f.write("alpha %s\n" % hashlib.sha256(tokens["alpha"].encode()).hexdigest())
        f.write("beta %s memory=100M pids=200 weight=300\n" % hashlib.sha256(tokens["beta"].encode()).hexdigest())
    unit = "mcp-execd-cgfs-tenants-%s" % uuid.uuid4().hex[:8]
    base = "/sys/fs/cgroup/system.slice/%s.service" % unit
    port = free_port()
    subprocess.run(["systemd-run", "--quiet", "--unit=" + unit, "-p", "Delegate=yes",
                    "-E", "MCP_EXEC_CGROUP=cgroupfs", "-E", "MCP_EXEC_TRANSPORT=http",
                    "-E", "MCP_EXEC_ADDR=127.0.0.1:%d" % port, "-E", "MCP_EXEC_TENANTS=" + tenants,
                    os.environ["MCP_EXECD"]], check=True)
    try:
        def up():
            try:
                Client(tokens["alpha"], port=port, name="tier-52").initialize()
                return True
            except (OSError, TestFailure):
                return False
        wait_for("the daemon's HTTP port", up, 60)
        tdir = os.path.join(base, "tenant-beta")
        got = {k: read(os.path.join(tdir, k)) for k in ("memory.max", "pids.max", "cpu.weight")}
        if got != {"memory.max": "104857600", "pids.max": "200", "cpu.weight": "300"}:
            raise TestFailure("tenant-beta/: %r" % got)
        if os.path.exists(os.path.join(base, "tenant-alpha")):
            raise TestFailure("alpha, whose line bounds no slice, has a cgroup of its own")

        beta = Client(tokens["beta"], port=port, name="tier-52")
        beta.initialize()
        opened = beta.request("tools/call", {"name": "session_open", "arguments": {}})["result"]
        handle = (opened.get("structuredContent") or {}).get("session")
        if not handle:
            raise TestFailure("session_open as beta: %r" % opened)
        runs = [e for e in os.listdir(tdir) if e.startswith("run-")]
        if len(runs) != 1:
            raise TestFailure("beta's session: run cgroups in tenant-beta/: %r" % runs)
        sc = beta.exec_code(EAT).get("structuredContent") or {}
        if not sc.get("oom_killed"):
            raise TestFailure("150 MB as beta (memory=100M): %r" % sc)
        alpha = Client(tokens["alpha"], port=port, name="tier-52")
        alpha.initialize()
        sa = alpha.exec_code(EAT).get("structuredContent") or {}
        if sa.get("stdout") != "ate\n" or sa.get("oom_killed"):
            raise TestFailure("150 MB as alpha (no memory=; runs may have 256M): %r" % sa)
        beta.request("tools/call", {"name": "session_close", "arguments": {"session": handle}})
        wait_for("beta's run cgroups gone", lambda: not [e for e in os.listdir(tdir) if e.startswith("run-")], 30)
        print("tenant-beta/: %r; its session's cgroup in it; 150 MB OOM-killed there, not for alpha" % got)
    finally:
        subprocess.run(["systemctl", "stop", unit + ".service"], check=False)
        os.unlink(tenants)


run(main)
