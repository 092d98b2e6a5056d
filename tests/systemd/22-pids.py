#!/usr/bin/env python3
"""Tasks: a fork bomb under TasksMax=32 ends with pids_limit_hit true, contained (no process of
it left), and the daemon fine."""
# tier-timeout: 420
import os
import sys
import uuid

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, marker_pids, sc, wait_until  # noqa: E402

CODE = """
import os, sys, time
n = 0
try:
    while True:
        pid = os.fork()
        if pid == 0:
            os.execv('/usr/bin/sleep', ['%s', '300'])
        n += 1
except OSError as e:
    print('fork failed after', n, 'children:', e)
"""


def main():
    marker = "bomb-" + uuid.uuid4().hex
    env = dict(os.environ, MCP_EXEC_PIDS_MAX="32")
    with Daemon(env=env, verbose=False, deadline=DEADLINE) as d:
        d.initialize()
        r = sc(d.exec_code(CODE % marker, timeout_s=60))
        print("stdout=%r pids_limit_hit=%s exit_code=%s" % (r["stdout"], r["pids_limit_hit"], r["exit_code"]))
        if not r["pids_limit_hit"]:
            raise TestFailure("pids_limit_hit is false: %r" % r)
        if "fork failed" not in r["stdout"]:
            raise TestFailure("the fork loop was not stopped by the limit: %r" % r["stdout"])
        left = wait_until(lambda: not marker_pids(marker), 5)
        if not left:
            raise TestFailure("processes of the fork bomb remain: %r" % marker_pids(marker))
        if d.call("ping") != {}:
            raise TestFailure("ping after the fork bomb")
        ok = sc(d.exec_code("print('still fine')"))
        if ok["stdout"] != "still fine\n" or ok["pids_limit_hit"]:
            raise TestFailure("the next run: %r" % ok)


run(main)
