#!/usr/bin/env python3
# tier-timeout: 1800
"""Three mcp-execd instances behind HAProxy (issue 19.5), as shipped: the template units
(mcp-execd@8081..8083.socket/.service, each its own slice, port and cache) and
units/haproxy-mcp-execd.cfg.

1. 300 mixed calls, 6 in flight: 2026-07-28 stateless calls; 2025-11-25 sessions, whose calls must
   all land on the instance that issued the session (anywhere else they get 404); Python sessions
   (a counter that goes up by one per call: only their own instance has it) and 2026 tasks (polled
   with tasks/get, routed by the instance tag in the task id): every one answered with its own
   output, and each instance ran a share of them.
2. One instance SIGKILLed with calls in flight: those calls end with an error at the client (never
   a hang), the others complete; its runs' scopes are gone; new calls are all answered; the 2025
   sessions that lived there get a clear 404, the others go on; a Python session and a working task
   that lived there get an error (the task, from the instance restarted by systemd: lost in a
   restart; from another: that instance is gone), never another instance's state; the Python
   session, answered by its own instance restarted, has kept its state (systemd's fd store).
3. `systemctl stop` of an instance with a call in flight (the template sets MCP_EXEC_DRAIN_S): the
   call gets its real result, the calls sent through HAProxy meanwhile are all answered elsewhere,
   then the service stops. /health said draining meanwhile. Its Python session and task then get,
   from another instance, an error saying their instance is gone.
The throughput of the three instances against one is bench/fleet.py's (bench/README.md), not this
test's: a measurement costs the tier's time and proves nothing.
"""
import glob
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
import fleet  # noqa: E402
from mcpclient import TestFailure, skip, stable_daemon_path, run, wait_for  # noqa: E402

LB = 8080
PORTS = (8081, 8082, 8083)
TOKEN = secrets.token_hex(16)
HAP_LOG = []  # HAProxy's log lines (its stdout, haproxy -db), read by a thread of main()
SRC = os.environ["MCP_EXECD_SRC"]
BUILD = os.environ["MCP_EXECD_BUILD"]
HAPROXY_CFG = "/run/mcp-execd-tier-haproxy.cfg"
HAPROXY_STATS = "/run/mcp-execd-tier-haproxy.sock"


def sh(*cmd, check=False):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise TestFailure("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r.stdout.strip()


def unit(p):
    return "mcp-execd@%d.service" % p


def get(port, path, token=None, timeout=10):
    """(status, body); (0, why) when nothing answered (not listening yet, or gone)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers={"Authorization": "Bearer " + token} if token else {})
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as e:
        return 0, str(e)
    finally:
        c.close()


def runs_total(port_or_name):
    """ok + nonzero + … runs of one instance, read through HAProxy's /metrics/<server>."""
    status, text = get(LB, "/metrics/i%d" % port_or_name, TOKEN)
    if status != 200:
        raise TestFailure("/metrics/i%d through HAProxy: HTTP %d %s" % (port_or_name, status, text[:200]))
    return sum(float(m) for m in re.findall(r"(?m)^mcp_execd_runs_total\{[^}]*\} (\S+)$", text))


def haproxy_cli(command):
    """What HAProxy's stats socket answers to one command; '' when it does not answer."""
    import socket
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(HAPROXY_STATS)
            s.sendall(command.encode() + b"\n")
            with s.makefile("rb") as f:
                return f.read().decode(errors="replace")  # to the end: HAProxy closes after one answer
    except OSError:
        return ""


def show_stat():
    """HAProxy's "show stat" rows, each a list of its CSV fields."""
    return [line.split(",") for line in haproxy_cli("show stat").splitlines()]


def lb_up():
    """The servers HAProxy's backend mcp_execd has up, from its stats socket."""
    return {int(f[1][1:]) for f in show_stat()
            if len(f) > 17 and f[0] == "mcp_execd" and f[1].startswith("i") and f[17] == "UP"}


def running(port):
    """mcp_execd_runs_running of one instance, asked directly."""
    m = re.search(r"(?m)^mcp_execd_runs_running (\S+)$", get(port, "/metrics", TOKEN)[1])
    return float(m.group(1)) if m else 0


def run_scopes(slice_):
    out = sh("systemctl", "list-units", "--all", "--plain", "--no-legend", "mcp-execd-run-*")
    return [l.split()[0] for l in out.splitlines()
            if l.strip() and sh("systemctl", "show", "-P", "Slice", l.split()[0]) == slice_]


def scope_frozen(unit_name):
    """Whether the scope's payload/ is frozen (an idle Python session's, between its calls)."""
    cg = sh("systemctl", "show", "-P", "ControlGroup", unit_name)
    try:
        with open("/sys/fs/cgroup%s/payload/cgroup.events" % cg) as f:
            return "frozen 1" in f.read().splitlines()
    except OSError:
        return False


def install():
    svc = open(os.path.join(BUILD, "units/mcp-execd@.service")).read()
    svc = re.sub(r"(?m)^ExecStart=.*$", "ExecStart=" + stable_daemon_path(), svc)
    # The ready sandboxes are not what this test is about; they would triple the guest's load. The
    # tasks are (routed by their ids' tags): every call that asks is one, however short
    # (MCP_EXEC_TASK_INLINE_MS=0; by default one that ends within a second is answered inline).
    svc = svc.replace("[Service]\n", "[Service]\nEnvironment=MCP_EXEC_WARM_POOL=0 MCP_EXEC_TASK_INLINE_MS=0\n", 1)
    open("/run/systemd/system/mcp-execd@.service", "w").write(svc)
    for u in ("mcp-execd@.socket", "mcp-execd.slice"):
        open("/run/systemd/system/" + u, "w").write(open(os.path.join(SRC, "units", u)).read())
    os.makedirs("/etc/mcp-execd", mode=0o700, exist_ok=True)
    with open("/etc/mcp-execd/auth-token", "w") as f:
        f.write(TOKEN + "\n")
    os.chmod("/etc/mcp-execd/auth-token", 0o600)
    cfg = open(os.path.join(SRC, "units/haproxy-mcp-execd.cfg")).read()
    cfg = cfg.replace("log /dev/log local0", "log stderr format short local0\n\tstats socket %s mode 600" % HAPROXY_STATS)
    open(HAPROXY_CFG, "w").write(cfg)
    sh("haproxy", "-c", "-f", HAPROXY_CFG, check=True)
    sh("systemctl", "daemon-reload", check=True)


def remove():
    for p in PORTS:
        sh("systemctl", "stop", "mcp-execd@%d.socket" % p, unit(p))
        sh("systemctl", "reset-failed", unit(p))
        # The instance's slice stays after its service (systemd keeps a slice until it is stopped):
        # the next tests should find mcp-execd.slice as they would on a fresh machine.
        sh("systemctl", "stop", "mcp-execd-%d.slice" % p)
    for u in ("mcp-execd@.service", "mcp-execd@.socket", "mcp-execd.slice"):
        try:
            os.unlink("/run/systemd/system/" + u)
        except FileNotFoundError:
            pass
    shutil.rmtree("/etc/mcp-execd", ignore_errors=True)  # the token this test wrote
    for d in glob.glob("/var/cache/mcp-execd-*"):  # the instances' caches
        shutil.rmtree(d, ignore_errors=True)
    sh("systemctl", "daemon-reload")


def main():
    if not os.path.exists("/usr/sbin/haproxy"):
        return skip("haproxy is not installed (scripts/deps.sh test installs it)")
    install()
    hap = subprocess.Popen(["haproxy", "-f", HAPROXY_CFG, "-db"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    threading.Thread(target=lambda: HAP_LOG.extend(hap.stdout), daemon=True).start()
    try:
        return scenario()
    finally:
        hap.send_signal(signal.SIGTERM)
        try:
            hap.wait(10)
        except subprocess.TimeoutExpired:
            hap.kill()
        print("--- haproxy (last 25 lines)\n" + "".join(HAP_LOG[-25:]))
        for p in PORTS:
            print(sh("journalctl", "-u", unit(p), "-b", "--no-pager", "-n", "8", "-o", "short-monotonic"))
        remove()
        left = sh("systemctl", "list-units", "--all", "--plain", "--no-legend", "mcp-execd-run-*")
        if left:
            print("FAIL: run scopes left after the fleet stopped:\n" + left)
            sys.exit(1)


def on_instance(port, task_code):
    """A Python session (with state) and a task running task_code on instance port, found by the
    tag their ids carry: leastconn over idle instances takes turns, so a few tries reach it. What
    landed elsewhere is closed or cancelled."""
    tag = "i%d-" % port
    py = task = None
    for _ in range(12):
        if not py:
            h = fleet.tool(LB, TOKEN, "session_open", {})["session"]
            fleet.tool(LB, TOKEN, "exec", {"code": "n = 41", "session": h})
            if h.startswith(tag):
                py = h
            else:
                fleet.tool(LB, TOKEN, "session_close", {"session": h})
        if not task:
            tid = fleet.task_create(LB, TOKEN, task_code)
            if tid.startswith(tag):
                task = tid
            else:
                fleet.task_request(LB, TOKEN, "tasks/cancel", tid)
        if py and task:
            return py, task
    raise TestFailure("no Python session or task landed on %s in 12 tries: %r %r" % (unit(port), py, task))


def check_lost(port, py, task, allow_restarted):
    """The Python session and the task that lived on instance port, asked for through HAProxy once
    it is gone: an error, never an answer (which would be another instance's state). A live instance
    says the instance of that tag is gone; with allow_restarted, the instance itself, restarted by
    systemd, may be the one that answers: its error says a restart loses them."""
    for what, ask in (("Python session %s" % py,
                       lambda: fleet.tool(LB, TOKEN, "exec", {"code": "print(n)", "session": py})),
                      ("task %s" % task, lambda: fleet.task_request(LB, TOKEN, "tasks/get", task))):
        try:
            r = ask()
            # A Python session is kept across its own instance's restart (systemd's fd store, issue
            # 33.3): answered by that instance, with its own state, never another's.
            if allow_restarted and what.startswith("Python") and (r or {}).get("stdout") == "41\n":
                print("the %s of the restarted instance: kept across the restart (n = 41)" % what)
                continue
            raise TestFailure("the %s of the lost instance was answered: %r" % (what, r))
        except fleet.CallError as e:
            msg = str(e)
            if "i%d, which is gone or unreachable" % port not in msg and \
                    not (allow_restarted and "mcp-execd restarted" in msg):
                raise TestFailure("the %s of the lost instance got %s, not a clear gone error" % (what, msg))
            print("the %s of the lost instance: %s" % (what, msg))


def scenario():
    for p in PORTS:
        sh("systemctl", "start", "mcp-execd@%d.socket" % p, check=True)
    # HAProxy's health checks activate every instance (socket activation); then all are up.
    wait_for("every instance to answer /health", lambda: all(get(p, "/health")[0] == 200 for p in PORTS), 180)
    wait_for("HAProxy to see three instances up", lambda: lb_up() == set(PORTS), 60)
    for p in PORTS:
        if sh("systemctl", "show", "-P", "ActiveState", unit(p)) != "active":
            raise TestFailure("%s is not active" % unit(p))
        if sh("systemctl", "show", "-P", "Environment", unit(p)).find("MCP_EXEC_SLICE=mcp-execd-%d.slice" % p) < 0:
            raise TestFailure("%s: its own slice is not set" % unit(p))

    # --- 1. mixed load ------------------------------------------------------------------------
    before = {p: runs_total(p) for p in PORTS}
    t0 = time.monotonic()
    answered, failures = fleet.mixed_load(LB, TOKEN, 300, 6, pysessions=3)
    t_three = time.monotonic() - t0
    if failures or answered != 300:
        raise TestFailure("%d of 300 answered; failures: %r" % (answered, failures[:5]))
    share = {p: runs_total(p) - before[p] for p in PORTS}
    print("300 mixed calls in %.1f s; runs per instance: %r" % (t_three, share))
    # Every call is counted as a run, a Python session's too (each has a run record, issue 18.7):
    # the 300, and the call that set each of the 3 Python sessions' counter up.
    runs = 300 + 3
    if sum(share.values()) != runs or min(share.values()) < runs // 10:
        raise TestFailure("the calls were not spread over the three instances: %r" % share)
    scopes_used = {p: "mcp-execd-%d.slice" % p for p in PORTS}
    print("each instance's runs went to its own slice: %r" % scopes_used)

    # --- 1b. HAProxy's log has no session id (issue 29.8) --------------------------------------
    # A 2025 SSE client posts to /messages?sessionId=<id>: the id is that session's credential.
    secret = secrets.token_hex(16)
    status, _ = get(LB, "/messages?sessionId=" + secret, TOKEN)

    def haproxy_lines():
        # haproxy -db writes its log lines to its stdout, which main() collects
        return [l for l in list(HAP_LOG) if "/messages" in l]
    lines = wait_for("HAProxy's log line of GET /messages", haproxy_lines, 30)
    print("HAProxy logged (status %d): %s" % (status, lines[-1][-120:]))
    if any(secret in l or "sessionId" in l for l in lines):
        raise TestFailure("HAProxy's log carries the query string's session id: %r" % lines)

    # --- 2. an instance SIGKILLed mid-load ----------------------------------------------------
    victim = PORTS[1]
    sessions = [fleet.Session(LB, TOKEN).open() for _ in range(9)]
    for s in sessions:
        s.call("print('before')")
    py_victim, task_victim = on_instance(victim, "import time; time.sleep(600)")
    results, lock = [], threading.Lock()

    def long_call():
        try:
            # The emulated guest starts Python slowly: a deadline far past the sleep.
            sc = fleet.modern_call(LB, TOKEN, "import time; time.sleep(20); print('long-done')", timeout=300,
                                   timeout_s=240)
            r = ("ok", sc.get("stdout"))
        except fleet.CallError as e:
            r = ("error", str(e))
        with lock:
            results.append(r)

    threads = [threading.Thread(target=long_call) for _ in range(6)]
    for t in threads:
        t.start()
    # Its task runs too: one more than that is a long call.
    wait_for("a long call running on the victim", lambda: running(victim) >= 2, 60)
    pid = int(sh("systemctl", "show", "-P", "MainPID", unit(victim)))
    victim_scopes = set(run_scopes("mcp-execd-%d.slice" % victim))
    if not victim_scopes:
        raise TestFailure("no run scope of the victim's calls in its slice")
    os.kill(pid, signal.SIGKILL)
    print("SIGKILLed %s (pid %d) with calls in flight" % (unit(victim), pid))
    answered, failures = fleet.mixed_load(LB, TOKEN, 30, 3, sessions=2)
    if failures:
        raise TestFailure("calls sent after the kill were not all answered: %r" % failures[:5])
    for t in threads:
        t.join(180)
        if t.is_alive():
            raise TestFailure("a call in flight on the killed instance hangs")
    errors = [r for r in results if r[0] == "error"]
    oks = [r for r in results if r[0] == "ok"]
    print("long calls: %d answered, %d ended with an error: %r" % (len(oks), len(errors), errors[:3]))
    if not errors or any(r[1] != "long-done\n" for r in oks):
        raise TestFailure("the calls on the killed instance should end with an error, the others complete: %r"
                          % results)
    # The calls' scopes go; an idle Python session's stays, frozen: the fd store keeps it for the
    # restarted instance (docs/sessions.md, "Restarts").
    wait_for("the killed instance's run scopes to go (its idle sessions' stay, frozen)",
             lambda: all(scope_frozen(u) for u in victim_scopes & set(run_scopes("mcp-execd-%d.slice" % victim))),
             60)
    gone = ok = 0
    for s in sessions:
        try:
            s.call("print('after')")
            ok += 1
        except fleet.CallError as e:
            if "404" not in str(e):
                raise TestFailure("a session of the killed instance got %s, not a clear 404" % e)
            gone += 1
    print("2025 sessions after the kill: %d went on, %d got 404 (they lived on the killed instance)" % (ok, gone))
    if not gone or not ok:
        raise TestFailure("expected some sessions gone with the instance and the others alive: %d/%d" % (gone, ok))
    # systemd restarts the killed instance (Restart=on-failure; its socket too would start it):
    # by now HAProxy may route the tag to it again.
    check_lost(victim, py_victim, task_victim, allow_restarted=True)

    # --- 3. drain -----------------------------------------------------------------------------
    drained = PORTS[2]
    py_drained, task_drained = on_instance(drained, "print('kept')")
    res = {}

    def on_drained():
        try:
            res["sc"] = fleet.modern_call(drained, TOKEN, "import time; time.sleep(8); print('drained-done')",
                                          timeout=300, timeout_s=50)
        except fleet.CallError as e:
            res["error"] = str(e)

    t = threading.Thread(target=on_drained)
    t.start()
    wait_for("the call on the instance to drain", lambda: running(drained) >= 1, 60)
    # The socket too, as an operator takes an instance out: with it listening, the next connection
    # (HAProxy's health check) would start the service again at once. The draining daemon keeps
    # its own copy of the listening socket, so /health still answers it.
    sh("systemctl", "stop", "--no-block", "mcp-execd@%d.socket" % drained, unit(drained), check=True)
    wait_for("/health to say draining", lambda: get(drained, "/health")[0] == 503, 30)
    answered, failures = fleet.mixed_load(LB, TOKEN, 30, 3, sessions=1)
    if failures:
        raise TestFailure("calls during the drain were not all answered elsewhere: %r" % failures[:5])
    t.join(120)
    if res.get("sc", {}).get("stdout") != "drained-done\n":
        raise TestFailure("the call in flight during the drain: %r" % res)
    wait_for("the drained service to stop", lambda: sh("systemctl", "show", "-P", "ActiveState", unit(drained))
             in ("inactive", "failed"), 60)
    if sh("systemctl", "show", "-P", "Result", unit(drained)) != "success":
        raise TestFailure("the drained service stopped with %s" % sh("systemctl", "show", "-P", "Result", unit(drained)))
    print("drain: the call in flight got its result, 30 calls meanwhile were answered elsewhere, the service stopped")
    # Stopped with its socket, the instance stays gone: what named its state reaches another one.
    check_lost(drained, py_drained, task_drained, allow_restarted=False)


if __name__ == "__main__":
    run(main)
