#!/usr/bin/env python3
"""SIGKILL the daemon while a run sleeps: no process of the run is left (PDEATHSIG, and the
RuntimeMaxUSec backstop); a stale run scope left by an earlier instance is stopped by the next
daemon at start."""
# tier-timeout: 420
import os
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, marker_pids, run_units, scope_dirs, start_call, wait_until  # noqa: E402


def main():
    marker = "victim-" + uuid.uuid4().hex
    d = Daemon(verbose=False, deadline=DEADLINE)
    with d:
        d.initialize()
        start_call(d, "import os\nos.execv('/usr/bin/sleep', ['%s', '300'])" % marker, timeout_s=20)
        if not wait_until(lambda: marker_pids(marker), 20):
            raise TestFailure("the run never started")
        t = time.monotonic()
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(timeout=10)
        gone = wait_until(lambda: not marker_pids(marker), 30)
        print("run processes gone %.2f s after the daemon's SIGKILL" % (time.monotonic() - t))
        if not gone:
            raise TestFailure("processes of the run outlived the daemon: %r" % marker_pids(marker))
        if not wait_until(lambda: not scope_dirs() and not run_units(), 20):
            raise TestFailure("scope left after the daemon died: %r %r" % (scope_dirs(), run_units()))

    # A stale scope of an earlier instance (as if both it and its init had survived).
    stale = "mcp-execd-run-stale%s" % uuid.uuid4().hex[:8]
    creator = subprocess.Popen(["systemd-run", "--scope", "--slice=mcp-execd.slice", "--unit=" + stale,
                                "/bin/bash", "-c", "exec -a %s sleep 300" % marker],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not wait_until(lambda: stale + ".scope" in run_units(), 60, step=0.5):
        err = b""
        if creator.poll() is not None:
            err = creator.stderr.read()
        raise TestFailure("could not create the stale scope %s: %s (units: %r)"
                          % (stale, err.decode(errors="replace"), run_units()))
    with Daemon(verbose=False, deadline=DEADLINE) as d2:
        d2.initialize()
        if not wait_until(lambda: stale + ".scope" not in run_units() and not marker_pids(marker), 20):
            raise TestFailure("the stale scope survived the daemon's start: %r" % run_units())
        print("stale scope %s stopped at start" % stale)


run(main)
