#!/usr/bin/env python3
"""The shipped hardening does not break a run: the [Service] section of units/mcp-execd.service,
as meson generated it (capability bounding set, system call filter, PrivateNetwork, ProtectSystem,
…), run as socket-activated stdio instances (Accept=yes, stdin/stdout the connection, stderr the
journal): an ok run, a run that imports numpy, a timeout and an OOM kill are answered with the
results they should have, under cgroup limits, and each leaves one journal record from the
service instance. Works without the HTTP transport.
"""
# tier-timeout: 420
import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from journal import records, sync  # noqa: E402
from mcpclient import TestFailure, daemon_path, run, stable_daemon_path  # noqa: E402

FINISHED = "0a6bda1f24cf4b5188307da770817b6b"
NAME = "mcp-execd-tier44"
SOCK = "/run/%s.sock" % NAME


def service_section():
    unit = open(os.path.join(os.environ["MCP_EXECD_BUILD"], "units/mcp-execd.service")).read()
    svc = unit.split("[Service]", 1)[1].split("[Install]", 1)[0]
    keep = [l for l in svc.splitlines()
            if not l.startswith(("ExecStart=", "LoadCredential=", "Environment=MCP_EXEC_TRANSPORT=", "RuntimeDirectory="))]
    return "\n".join(keep)


def install():
    body = ("[Unit]\nDescription=mcp-execd hardened, stdio (tier test 44)\n[Service]\n%s\n"
            "ExecStart=%s\nEnvironment=MCP_EXEC_TRANSPORT=stdio\nEnvironment=MCP_EXEC_MEMORY_MAX=96M\n"
            "Environment=MCP_EXEC_DEFAULT_TIMEOUT_S=60\nRuntimeDirectory=%s-%%i\n"
            "StandardInput=socket\nStandardOutput=socket\nStandardError=journal\n"
            % (service_section(), stable_daemon_path(), NAME))
    open("/run/systemd/system/%s@.service" % NAME, "w").write(body)
    open("/run/systemd/system/%s.socket" % NAME, "w").write(
        "[Unit]\nDescription=mcp-execd hardened, stdio (tier test 44)\n[Socket]\nListenStream=%s\nAccept=yes\n" % SOCK)
    subprocess.run(["systemctl", "daemon-reload"], check=True)
    subprocess.run(["systemctl", "start", NAME + ".socket"], check=True)


def remove():
    subprocess.run(["systemctl", "stop", NAME + ".socket"], capture_output=True)
    for f in ("%s@.service" % NAME, "%s.socket" % NAME):
        try:
            os.unlink("/run/systemd/system/" + f)
        except FileNotFoundError:
            pass
    subprocess.run(["systemctl", "daemon-reload"], capture_output=True)


class Conn:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(120)
        self.s.connect(SOCK)
        self.f = self.s.makefile("rwb")
        self.n = 0

    def request(self, method, params):
        self.n += 1
        self.f.write((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n").encode())
        self.f.flush()
        while True:
            line = self.f.readline()
            if not line:
                raise TestFailure("the service closed the connection (did it start? see its journal)")
            r = json.loads(line)
            if r.get("id") == self.n:
                return r

    def exec_code(self, code, **args):
        args["code"] = code
        r = self.request("tools/call", {"name": "exec", "arguments": args})
        sc = r.get("result", {}).get("structuredContent")
        if not sc:
            raise TestFailure("exec %r: %r" % (code[:40], r))
        return sc

    def close(self):
        self.s.close()


def main():
    install()
    try:
        c = Conn()
        c.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "tier-44", "version": "1"}})
        c.f.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        c.f.flush()
        ok = c.exec_code("import os\nprint('uid', os.getuid(), 'in', os.getcwd())\n")
        print("ok:", ok["stdout"].strip(), "limits", ok["limits"])
        if ok["exit_code"] != 0 or not ok["stdout"].startswith("uid "):
            raise TestFailure("ok run: %r" % ok)
        # The shipped unit sets MCP_EXEC_REQUIRE_CGROUP=1, and this tier has systemd with cgroup v2:
        # limits other than "cgroup" is a regression, and would leave the OOM kill unchecked.
        if ok["limits"] != "cgroup":
            raise TestFailure("limits is %r under the shipped unit (MCP_EXEC_REQUIRE_CGROUP=1)" % ok["limits"])
        npy = c.exec_code("import numpy\nprint(int(numpy.arange(10).sum()))\n")
        if npy["stdout"] != "45\n":
            raise TestFailure("numpy run: %r" % npy)
        to = c.exec_code("import time\ntime.sleep(60)\n", timeout_s=2)
        if not to["timed_out"]:
            raise TestFailure("timeout run: %r" % to)
        oom = c.exec_code("b = b'\\x01' * (400 * 1024 * 1024)\n")
        print("oom run: exit_code=%s oom_killed=%s" % (oom["exit_code"], oom["oom_killed"]))
        if not oom["oom_killed"]:
            raise TestFailure("the 400 MB run under MemoryMax=96M was not OOM-killed: %r" % oom)
        c.close()
        sync()
        until = time.monotonic() + 30
        while True:
            recs = [r for r in records("MESSAGE_ID=" + FINISHED) if r.get("_SYSTEMD_UNIT", "").startswith(NAME + "@")]
            if len(recs) >= 4 or time.monotonic() > until:
                break
            time.sleep(0.5)
        if len(recs) != 4:
            raise TestFailure("%d run records from the service instance for 4 runs" % len(recs))
        print("records:", [r["OUTCOME"] for r in recs], "units:", sorted({r["_SYSTEMD_UNIT"] for r in recs}))
        if [r["OUTCOME"] for r in recs][:3] != ["ok", "ok", "timeout"]:
            raise TestFailure("outcomes %r" % [r["OUTCOME"] for r in recs])
        print("OK: the hardened service runs Python (numpy too), times out and OOM-kills runs, one record each")
    except TestFailure:
        time.sleep(1)
        print(subprocess.run(["journalctl", "-b", "--no-pager", "-n", "30", "-u", NAME + "@*"],
                             capture_output=True, text=True).stdout)
        raise
    finally:
        remove()


run(main)
