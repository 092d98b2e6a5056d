#!/usr/bin/env python3
"""mcp-execd as the systemd service it ships as (units/), over HTTP.

Units installed into /run/systemd/system (ExecStart= pointing at the binary under test), an auth
token as the credential, the socket started: the first HTTP request activates the service
(Type=notify: active only after READY=1), an exec succeeds, the journal holds exactly one run
record for it from the service (TRANSPORT=http, its scope in UNIT), systemctl's StatusText is the
one-line STATUS, /metrics (same auth) passes the strict exposition check and its counters moved by
exactly the runs made. Then `systemctl stop` during a run: the run is answered or its connection
closed, the service stops cleanly and nothing of the run remains. Then the watchdog: SIGSTOP
the daemon and systemd restarts it within WatchdogSec + TimeoutAbortSec.

A binary that refuses MCP_EXEC_TRANSPORT=http fails the test: the daemon serves HTTP (README), so a
refusal is a regression, never a reason to skip.
"""
# tier-timeout: 600
import http.client
import os
import re
import secrets
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
import httpclient  # noqa: E402
import prometheus  # noqa: E402
from journal import wait_records  # noqa: E402
from mcpclient import TestFailure, daemon_path, run, wait_for  # noqa: E402
from service import run_units, sh, with_units  # noqa: E402
from scopes import scope_dirs  # noqa: E402

FINISHED = "0a6bda1f24cf4b5188307da770817b6b"
PORT = 8080
TOKEN = secrets.token_hex(16)


def prop(name, unit="mcp-execd.service"):
    return sh("systemctl", "show", "-P", name, unit)


def http_refused():
    """The binary says it serves stdio only: returns its message, else None."""
    env = dict(os.environ, MCP_EXEC_TRANSPORT="http", MCP_EXEC_ADDR="127.0.0.1:18089", MCP_EXEC_CGROUP="none")
    p = subprocess.Popen([daemon_path()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=env)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None
    err = err.decode(errors="replace")
    return err.strip() if "stdio only" in err or "not available yet" in err else None


class Client(httpclient.Client):
    def __init__(self, token=TOKEN):
        super().__init__(token, PORT)


def get(path, token=TOKEN):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    h = {"Authorization": "Bearer " + token} if token else {}
    c.request("GET", path, headers=h)
    r = c.getresponse()
    body = r.read().decode(errors="replace")
    c.close()
    return r.status, r.getheader("Content-Type"), body


def readq(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def pool_full(c):
    """check_environment's sandbox when its warm pool is full (warm_ready == warm_pool > 0), else None."""
    r = c.request("tools/call", {"name": "check_environment", "arguments": {}})
    sb = ((r.get("result") or {}).get("structuredContent") or {}).get("sandbox")
    if not sb or not sb.get("warm_pool"):
        raise TestFailure("check_environment: no warm pool under the service: %r" % r)
    return sb if sb.get("warm_ready", 0) >= sb["warm_pool"] else None


def main():
    why = http_refused()
    if why:
        raise TestFailure("the binary refuses MCP_EXEC_TRANSPORT=http (%s)" % why.splitlines()[-1])
    return with_units(TOKEN, (), scenario, 40)


def scenario():
    sh("systemctl", "start", "mcp-execd.socket", check=True)
    if prop("ActiveState") != "inactive":
        raise TestFailure("the service is %s before any request" % prop("ActiveState"))

    # --- socket activation, one exec, its record, STATUS, /metrics ---------------------------
    c = Client()
    c.initialize()
    if prop("ActiveState") != "active":
        raise TestFailure("the service is %s after initialize (Type=notify: READY=1?)" % prop("ActiveState"))
    res = c.exec_code("print(6 * 7)\n")
    sc = res.get("structuredContent") or {}
    if sc.get("stdout") != "42\n" or sc.get("exit_code") != 0:
        raise TestFailure("exec over HTTP: %r" % res)
    print("exec over HTTP: %r (limits %s)" % (sc["stdout"], sc["limits"]))
    pid = int(prop("MainPID"))
    recs = wait_records(1, "MESSAGE_ID=" + FINISHED, "_SYSTEMD_UNIT=mcp-execd.service", "_PID=%d" % pid)
    if len(recs) != 1:
        raise TestFailure("%d run records from the service for one exec" % len(recs))
    rec = recs[0]
    for f, want in [("TRANSPORT", "http"), ("EXIT_CODE", "0"), ("STDOUT_BYTES", "3"),
                    ("DURATION_MS", str(sc["duration_ms"])), ("LIMITS", sc["limits"]), ("_PID", str(pid))]:
        if rec.get(f) != want:
            raise TestFailure("record %s=%r, expected %r" % (f, rec.get(f), want))
    if sc["limits"] == "cgroup" and not re.fullmatch(r"mcp-execd-run-.*\.scope", rec.get("UNIT", "")):
        raise TestFailure("record UNIT=%r" % rec.get("UNIT"))
    print("record: %s (UNIT=%s)" % (rec["MESSAGE"], rec.get("UNIT")))
    status = wait_for("STATUS with 1 total", lambda: re.fullmatch(r"runs 0/\d+, queued 0; pool \d+/\d+ ready; sessions 0; tenants 0; 1 total",
                                                                  prop("StatusText")) and prop("StatusText"), 10)
    print("systemctl status: Status: %r" % status)

    st, ctype, body = get("/metrics", token=None)
    if st != 401:
        raise TestFailure("GET /metrics without the token: HTTP %d (expected 401)" % st)
    # The route is the daemon's (MCP_HTTP_METRICS_GET in daemon/transport/http-server.c): a 404 is
    # a regression like any other answer but 200.
    st, ctype, body = get("/metrics")
    if st != 200 or not (ctype or "").startswith("text/plain; version=0.0.4"):
        raise TestFailure("GET /metrics: HTTP %d, Content-Type %r" % (st, ctype))
    try:
        _, before = prometheus.parse(body)
    except ValueError as e:
        raise TestFailure("/metrics is not valid exposition text: %s" % e)
    c.exec_code("import sys\nsys.exit(4)\n")
    c.exec_code("   ")
    _, after = prometheus.parse(get("/metrics")[2])
    for key, delta in [('mcp_execd_runs_total{outcome="ok"}', 0), ('mcp_execd_runs_total{outcome="nonzero"}', 1),
                       ('mcp_execd_runs_total{outcome="rejected"}', 1), ("mcp_execd_run_duration_seconds_count", 1)]:
        if after[key] - before[key] != delta:
            raise TestFailure("%s moved by %s, expected %d" % (key, after[key] - before[key], delta))
    if before['mcp_execd_runs_total{outcome="ok"}'] != 1:
        raise TestFailure("runs_total{outcome=ok} is %s after one ok run" % before['mcp_execd_runs_total{outcome="ok"}'])
    print("/metrics: valid, counters moved by exactly the runs made")

    # outputs/ comes back under the unit's hardening too (RestrictSUIDSGID= refuses openat2).
    out = c.exec_code("open('outputs/r.txt', 'w').write('hi')\n")
    files = (out.get("structuredContent") or {}).get("files") or []
    if [f.get("name") for f in files] != ["outputs/r.txt"]:
        raise TestFailure("outputs/ under the service: %r" % out)
    # The ready sandboxes work under the unit's hardening too: the launcher once died at its start
    # on os.nice(0) (setpriority is refused by SystemCallFilter=~@resources) and every call was cold.
    # Once the daemon says its pool is full (check_environment's warm_ready), one call must be warm.
    sb = wait_for("the warm pool full (check_environment)", lambda: pool_full(c), 90)
    w = c.exec_code("print(1)\n").get("structuredContent") or {}
    if not w.get("warm") or w.get("stdout") != "1\n":
        raise TestFailure("with the pool full (%r), a call was not served warm under the service: %r" % (sb, w))
    print("a call was served warm under the service (warm_ready %d of warm_pool %d)" % (sb["warm_ready"], sb["warm_pool"]))

    # --- systemctl stop during a run ---------------------------------------------------------
    answer = {}

    def long_run():
        try:
            answer["r"] = c.exec_code("import time\nprint('started', flush=True)\ntime.sleep(120)\n", timeout_s=200)
        except Exception as e:  # a closed connection is an acceptable end too
            answer["e"] = repr(e)
    t = threading.Thread(target=long_run)
    t.start()
    # The run's own scope, with its Python in payload/: not run_units(), which the ready sandboxes'
    # scopes (mcp-execd-run-* too) satisfy before the call has even reached the daemon.
    wait_for("the long run in its scope", lambda: sc["limits"] != "cgroup" or [
        s for s in scope_dirs() if (readq(os.path.join(s, "payload/cgroup.procs")) or "").split()], 60)
    stop_pid = int(prop("MainPID"))
    t0 = time.monotonic()
    sh("systemctl", "stop", "mcp-execd.service", check=True)
    stop_s = time.monotonic() - t0
    t.join(60)
    print("systemctl stop took %.1fs; the call got %r" % (stop_s, answer))
    if "r" in answer and not answer["r"].get("isError"):
        raise TestFailure("the run stopped by systemctl stop was answered as a normal result: %r" % answer["r"])
    if prop("Result") != "success" or prop("ActiveState") != "inactive":
        raise TestFailure("after stop: ActiveState=%s Result=%s" % (prop("ActiveState"), prop("Result")))
    left = wait_for("no run scope left", lambda: not run_units() and "none", 30) and run_units()
    if left:
        raise TestFailure("run scopes left after stop: %r" % left)
    stopping = wait_records(1, "MESSAGE_ID=d7e9c809b4394488b008f4de98b169f6", "_SYSTEMD_UNIT=mcp-execd.service",
                            "_PID=%d" % stop_pid)
    if not stopping or stopping[-1].get("REASON") != "SIGTERM":
        raise TestFailure("no 'stopping' record with REASON=SIGTERM: %r" % stopping)

    # --- the watchdog --------------------------------------------------------------------------
    c = Client()
    c.initialize()
    pid = int(prop("MainPID"))
    restarts = int(prop("NRestarts") or 0)
    wd = prop("WatchdogUSec")
    print("watchdog %s; SIGSTOP to %d" % (wd, pid))
    os.kill(pid, 19)
    t0 = time.monotonic()
    new = wait_for("a restarted daemon", lambda: (prop("ActiveState") == "active" and prop("MainPID") not in
                                                  ("0", str(pid)) and prop("MainPID")), 90)
    print("restarted as %s after %.1fs (NRestarts %s -> %s)" % (new, time.monotonic() - t0, restarts,
                                                               prop("NRestarts")))
    if int(prop("NRestarts")) <= restarts:
        raise TestFailure("NRestarts did not grow")
    c = Client()
    c.initialize()
    if c.exec_code("print(1)\n").get("structuredContent", {}).get("stdout") != "1\n":
        raise TestFailure("the restarted daemon does not serve")
    print("OK: socket activation, exec, one record, STATUS, stop during a run, watchdog restart")


run(main)
