#!/usr/bin/env python3
"""Timeout: a run whose child calls setsid() and whose grandchild double-forks and sleeps ends
with timed_out true, and once it is answered no process of the run exists."""
# tier-timeout: 420
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, marker_pids, sc, scope_dirs, start_call, wait_reply, wait_until  # noqa: E402

# Long enough for Python and three forks under software emulation; the sleeper must exist before
# the deadline for the test to mean anything.
TIMEOUT_S = 15

CODE = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        if os.fork() == 0:
            os.execv('/usr/bin/sleep', ['%s', '300'])
        os._exit(0)
    time.sleep(300)
print('parent waits', flush=True)
time.sleep(300)
"""


def main():
    marker = "orphan-" + uuid.uuid4().hex
    with Daemon(verbose=False, deadline=DEADLINE) as d:
        d.initialize()
        rid = start_call(d, CODE % marker, timeout_s=TIMEOUT_S)
        seen = wait_until(lambda: marker_pids(marker), TIMEOUT_S)
        if not seen:
            raise TestFailure("the double-forked sleeper never appeared")
        r = sc(wait_reply(d, rid))
        left = marker_pids(marker)
        print("timed_out=%s exit_code=%s duration_ms=%s; processes of the run at the answer: %r"
              % (r["timed_out"], r["exit_code"], r["duration_ms"], left))
        if not r["timed_out"] or r["exit_code"] != -1:
            raise TestFailure("not a timeout: %r" % r)
        if left:
            raise TestFailure("processes of the run outlived its answer: %r" % left)
        if r["duration_ms"] > TIMEOUT_S * 1000 + 1000:
            raise TestFailure("answered %d ms after release for a %d s deadline" % (r["duration_ms"], TIMEOUT_S))
        if not wait_until(lambda: not scope_dirs(), 5):
            raise TestFailure("the scope outlived the run: %r" % scope_dirs())


run(main)
