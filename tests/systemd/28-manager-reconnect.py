#!/usr/bin/env python3
"""systemd goes away under the daemon with runs in flight: `systemctl daemon-reexec` (PID 1 closes
its private connections and comes back) and a restart of dbus-daemon; once with the daemon on the
manager's private socket (how root connects) and once on the system bus (the private socket masked
in the daemon's mount namespace). Every call is answered: a normal result, or a tool error that
names systemd; the daemon stays up, reconnects, and later runs work in scopes; nothing of the runs
remains, and the daemon's fds are back to their number before the fault."""
# tier-timeout: 900
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, marker_pids, run_units, scope_dirs, start_call, wait_until  # noqa: E402

# The daemon's mount namespace with /run/systemd/private masked: connecting there fails, so it
# falls back to the system bus (dbus-daemon), as it would where the private socket is not reachable.
BUS_ONLY = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind /dev/null /run/systemd/private && exec "$0"']
FAULTS = {
    "daemon-reexec": ["systemctl", "daemon-reexec"],
    "dbus-restart": ["systemctl", "restart", "dbus.service"],
}
IN_FLIGHT = 3
DURING = 2


def fds_of(pid):
    out = []
    for n in sorted(os.listdir("/proc/%d/fd" % pid), key=int):
        try:
            out.append("%s→%s" % (n, os.readlink("/proc/%d/fd/%s" % (pid, n))))
        except OSError:
            pass
    return out


def fd_count(pid):
    return len(fds_of(pid))


def outcome(reply, want_stdout):
    """"ok" or "tool error: ..."; anything else fails the test."""
    if "result" not in reply:
        raise TestFailure("a JSON-RPC error instead of a result: %r" % reply)
    r = reply["result"]
    if r.get("isError"):
        text = r["content"][0]["text"]
        if "systemd" not in text:
            raise TestFailure("a tool error that does not say what failed: %r" % text)
        return "tool error: " + text
    sc = r["structuredContent"]
    if sc["exit_code"] != 0 or sc["stdout"] != want_stdout or sc["limits"] != "cgroup":
        raise TestFailure("a wrong result: %r" % sc)
    return "ok"


def manager_answers():
    ping = ["busctl", "--timeout=5", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
            "org.freedesktop.DBus.Peer", "Ping"]
    return subprocess.run(ping, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0 and \
        subprocess.run(["systemctl", "is-system-running"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30).returncode in (0, 1)


def one(via, fault):
    marker = "reconnect-%s-%s" % (via, fault)
    # Cold runs only: the daemon's fds are compared before and after the fault, and ready
    # sandboxes (the warm pool) hold fds and scopes of their own that come and go with refills;
    # 30-warm-pool.py tests the pool under systemd.
    env = dict(os.environ, MCP_EXEC_MAX_CONCURRENT="8", MCP_EXEC_WARM_POOL="0")
    with Daemon(env=env, verbose=False, deadline=DEADLINE, wrap=BUS_ONLY if via == "bus" else ()) as d:
        d.initialize()
        first = d.exec_code("print('before')")
        outcome({"result": first}, "before\n")
        if not wait_until(lambda: not scope_dirs(), 30, step=0.2):
            raise TestFailure("the first run's scope stays: %r" % scope_dirs())
        fds_before = fds_of(d.proc.pid)
        fds = len(fds_before)

        code = ("import os\npid = os.fork()\nif pid == 0:\n    os.execv('/usr/bin/sleep', [%r, '4'])\n"
                "os.waitpid(pid, 0)\nprint('slept')" % marker)
        ids = [start_call(d, code, timeout_s=120) for _ in range(IN_FLIGHT)]
        if not wait_until(lambda: len(scope_dirs()) >= IN_FLIGHT, DEADLINE, step=0.2):
            raise TestFailure("the runs never got their scopes: %r" % scope_dirs())
        t = time.monotonic()
        f = subprocess.Popen(FAULTS[fault], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(0.1)
        during = [start_call(d, "print('during')", timeout_s=120) for _ in range(DURING)]
        out, _ = f.communicate(timeout=180)
        if f.returncode != 0:
            raise TestFailure("%s failed: %s" % (" ".join(FAULTS[fault]), out.decode(errors="replace")))
        print("%s (%s): done in %.1f s" % (fault, via, time.monotonic() - t))

        got = d.collect(set(ids + during), DEADLINE)
        results = [outcome(got[i], "slept\n") for i in ids] + [outcome(got[i], "during\n") for i in during]
        for i, res in zip(ids + during, results):
            print("  call %d: %s" % (i, res))
        if d.proc.poll() is not None:
            raise TestFailure("the daemon died: %s" % d.stderr_tail())

        if not wait_until(manager_answers, 120, step=0.5):
            raise TestFailure("systemd does not answer on the bus after %s" % fault)
        for k in range(3):
            res = outcome({"result": d.exec_code("print('after %d')" % k)}, "after %d\n" % k)
            if res != "ok":
                raise TestFailure("a run after %s (%s) failed: %s" % (fault, via, res))
        print("  3 runs after it: ok, in scopes")

        if not wait_until(lambda: not scope_dirs() and not run_units() and not marker_pids(marker), 60, step=0.2):
            raise TestFailure("left behind: scopes %r, units %r, processes %r"
                              % (scope_dirs(), run_units(), marker_pids(marker)))
        if not wait_until(lambda: fd_count(d.proc.pid) == fds, 10, step=0.2):
            raise TestFailure("the daemon holds %r, before the fault %r" % (fds_of(d.proc.pid), fds_before))
        code = d.close_stdin_and_wait()
        if code != 0:
            raise TestFailure("the daemon exited %d at EOF" % code)
        err = d.proc.stderr.read().decode(errors="replace")
        lost = [line for line in err.splitlines() if "connection to systemd was lost" in line]
        print("  daemon log: %s" % (lost[0] if lost else "no connection loss logged"))


def main():
    for via in ("private", "bus"):
        for fault in ("daemon-reexec", "dbus-restart"):
            one(via, fault)


run(main)
