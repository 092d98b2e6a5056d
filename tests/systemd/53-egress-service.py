#!/usr/bin/env python3
"""Egress under the shipped service (issue 32, docs/egress.md): the unit gives the daemon no network
(PrivateNetwork=yes, IPAddressDeny=any, RestrictAddressFamilies=AF_UNIX), so with an allowlist but
without the documented drop-in a run cannot get its proxy (the answer says why, the daemon serves
on, answering); with the drop-in the run reaches the listed server on this machine's loopback through the
proxy, its scope placed as every run's, an unlisted port is refused with 403, and the decision is a
journal record of the service with its host, port and decision."""
# tier-timeout: 300
import os
import secrets
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from httpclient import Client  # noqa: E402
from httpserver import serve  # noqa: E402
from journal import wait_records  # noqa: E402
from mcpclient import TestFailure, run  # noqa: E402
from service import sh, with_units  # noqa: E402

TOKEN = secrets.token_hex(16)
DROPIN_DIR = "/run/systemd/system/mcp-execd.service.d"
DROPIN = """[Service]
PrivateNetwork=no
IPAddressDeny=
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
"""
EGRESS_MESSAGE_ID = "f3316c7fd11d4c56b82e9e2ce9db8ab2"


def fetch(port):
    return ("import urllib.request, urllib.error\n"
            "try:\n"
            "    print(urllib.request.urlopen('http://127.0.0.1:%d/', timeout=20).read().decode())\n"
            "except urllib.error.HTTPError as e:\n"
            "    print('HTTP', e.code)\n"
            "except OSError as e:\n"
            "    print('no proxy:', type(e).__name__)\n" % port)


def exec_sc(code):
    c = Client(TOKEN, name="tier-53")
    c.initialize()
    r = c.exec_code(code)
    return r, (r.get("structuredContent") or {})


def main():
    srv = serve(lambda path: b"through the service's proxy")
    port = srv.server_address[1]
    try:
        return with_units(TOKEN, (("MCP_EXEC_EGRESS_ALLOW", "127.0.0.1:%d" % port),), lambda: scenario(port), 60)
    finally:
        srv.shutdown()
        sh("rm", "-rf", DROPIN_DIR)
        sh("systemctl", "daemon-reload")


def scenario(port):
    # Without the drop-in: the run cannot make its listener (AF_INET is not the service's), and the
    # call says so; the daemon goes on serving.
    sh("systemctl", "start", "mcp-execd.socket", check=True)
    r, sc = exec_sc(fetch(port))
    text = str(r)
    if "Address family not supported" not in text and "egress" not in text:
        raise TestFailure("an egress run under the unit without the drop-in: %s" % text[:600])
    # Every run of this caller has the list, so every one is refused alike; the daemon still answers.
    c = Client(TOKEN, name="tier-53")
    c.initialize()
    env = c.request("tools/call", {"name": "check_environment", "arguments": {}})
    if "result" not in env or env["result"].get("isError"):
        raise TestFailure("after the refused egress run the daemon did not answer: %r" % env)
    print("without the drop-in: %s" % text[:200])

    # With it: the listed server is reached, an unlisted port refused, the decision recorded.
    os.makedirs(DROPIN_DIR, exist_ok=True)
    with open(os.path.join(DROPIN_DIR, "egress.conf"), "w") as f:
        f.write(DROPIN)
    sh("systemctl", "daemon-reload", check=True)
    sh("systemctl", "stop", "mcp-execd.service")
    _, sc = exec_sc(fetch(port))
    if sc.get("stdout") != "through the service's proxy\n" or (sc.get("egress") or {}).get("connections") != 1:
        raise TestFailure("an egress run with the drop-in: %r" % sc)
    if sc.get("limits") != "cgroup":
        raise TestFailure("the egress run was not placed in a scope: limits %r" % sc.get("limits"))
    _, denied = exec_sc(fetch(port + 1 if port < 65535 else port - 1))
    if not denied.get("stdout", "").startswith("HTTP 403"):
        raise TestFailure("an unlisted port: %r" % denied)
    pid = int(sh("systemctl", "show", "-P", "MainPID", "mcp-execd.service"))
    recs = wait_records(2, "MESSAGE_ID=" + EGRESS_MESSAGE_ID, "_PID=%d" % pid)
    decisions = sorted(r.get("EGRESS_DECISION") for r in recs)
    if decisions != ["allowed", "denied"] or any(r.get("EGRESS_HOST") != "127.0.0.1" for r in recs):
        raise TestFailure("the service's egress records: %r" % recs)
    print("OK: egress under the shipped unit with the drop-in: reached, refused, recorded (%s)" % decisions)


run(main)
