#!/usr/bin/env python3
# tier-timeout: 600
"""Python sessions (issue 18) under the cgroupfs backend: the daemon in a Delegate=yes service
(MCP_EXEC_CGROUP=cgroupfs, as 27-cgroupfs) gives each session one child cgroup run-<id>/ of its own
with the run limits and the two leaves, for the session's whole life; run with the warm pool
(sessions served by ready sandboxes) and without it.

1. session_open: a run-* cgroup of its own, the one the call's file URIs name
   (mcp-execd://run/<id>/...): a ready sandbox's when the pool served it (warm), else a new one; memory.max, pids.max, cpu.max are the configured
   limits; supervisor/ and payload/ exist, the interpreter is in payload/.
2. State persists: x = 41 (exec), then print(x + 1) (execute_python) prints 42; the results say
   limits "cgroup", a memory peak > 0, session_alive true, session_calls 1 and 2.
3. An allocation above memory.max: oom_killed true, session_alive false; the handle is unknown
   after it, and the session's cgroup is gone.
4. session_close: {closed: true}; the session's cgroup is gone within a bounded wait while the
   daemon lives.
5. A third session with a process of its own (a marker in its argv), then `systemctl stop` of the
   unit. The unit has KillMode=process, so systemd signals only the daemon: no process of the
   session may be left. The session's run-<id>/ must be removed by the daemon before its exit (an
   inotify queue orders the rmdir before the daemon's leaf empties; systemd's trim of the unit's
   cgroup would come after), and no run-* cgroup may be left.
"""
import ctypes
import errno
import os
import re
import struct
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, is_ready_sandbox, marker_pids, read, sc, wait_until  # noqa: E402

LIMITS = {"memory.max": "134217728", "pids.max": "32", "cpu.max": "50000 100000"}


def systemctl(*args):
    return subprocess.run(["systemctl"] + list(args), capture_output=True, text=True, timeout=120)


class Bed:
    def __init__(self, unit):
        self.unit = unit
        self.base = "/sys/fs/cgroup/system.slice/%s.service" % unit

    def all_run_dirs(self):
        try:
            return sorted(e for e in os.listdir(self.base) if e.startswith("run-"))
        except FileNotFoundError:
            return []

    def ready_dirs(self):
        return [e for e in self.all_run_dirs() if is_ready_sandbox(os.path.join(self.base, e))]

    def run_dirs(self):
        return [e for e in self.all_run_dirs() if not is_ready_sandbox(os.path.join(self.base, e))]


class Events:
    """One inotify queue, read after the fact: the rmdirs of run-* cgroups in the unit's cgroup
    (IN_DELETE on it) and the daemon's leaf daemon/ emptying (its cgroup.events changes when the
    daemon exits: cgroup-v2.rst's "file modified event"). One queue keeps their order, so a
    session cgroup removed before that change was removed by the daemon, not by systemd's trim of
    the unit's cgroup after the daemon's exit."""
    IN_MODIFY, IN_DELETE, IN_ISDIR = 0x2, 0x200, 0x40000000

    def __init__(self, base):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise TestFailure("inotify_init1: %s" % os.strerror(ctypes.get_errno()))
        self.wd_base = self.watch(base, self.IN_DELETE)
        self.wd_daemon = self.watch(os.path.join(base, "daemon", "cgroup.events"), self.IN_MODIFY)

    def watch(self, path, mask):
        wd = self.libc.inotify_add_watch(self.fd, path.encode(), mask)
        if wd < 0:
            raise TestFailure("inotify_add_watch %s: %s" % (path, os.strerror(ctypes.get_errno())))
        return wd

    def read(self):
        """The events so far, in order: ("rmdir", name) or ("daemon-leaf", None)."""
        out, buf = [], b""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError as e:
                if e.errno == errno.EAGAIN:
                    break
                raise
            buf += chunk
        while len(buf) >= 16:
            wd, mask, _, n = struct.unpack("iIII", buf[:16])
            name = buf[16:16 + n].rstrip(b"\0").decode()
            buf = buf[16 + n:]
            if wd == self.wd_base and mask & self.IN_DELETE and mask & self.IN_ISDIR:
                out.append(("rmdir", name))
            elif wd == self.wd_daemon and mask & self.IN_MODIFY:
                out.append(("daemon-leaf", None))
        return out

    def close(self):
        os.close(self.fd)


def tool(d, name, arguments):
    return d.call("tools/call", {"name": name, "arguments": arguments})


def tool_error(result):
    if not result.get("isError"):
        return None
    return result["content"][0]["text"]


def open_session(d, bed):
    """session_open; returns (handle, run cgroup name, warm). The run cgroup is the one a call's returned
    file names by its run id: a ready sandbox's when the pool served the open (warm: true; its CPU
    weight given back, so no longer a ready one), else a new one; never another run's."""
    before_ready, before_runs = set(bed.ready_dirs()), set(bed.run_dirs())
    o = sc(tool(d, "session_open", {}))
    if o.get("limits") != "cgroup" or not o.get("session"):
        raise TestFailure("session_open answered %r" % o)
    h = o["session"]
    r = tool(d, "exec", {"session": h, "code": "open('outputs/id.txt', 'w').write('id')"})
    s = sc(r)
    if not s.get("session_alive"):
        raise TestFailure("the session died writing a file: %r" % s)
    uris = [c["resource"]["uri"] for c in r["content"] if c.get("type") == "resource"]
    ids = [m.group(1) for m in (re.match(r"mcp-execd://run/([0-9a-z]+)/outputs/id\.txt$", u) for u in uris) if m]
    if len(ids) != 1:
        raise TestFailure("no file URI naming the session's run id in %r" % r["content"])
    name = "run-" + ids[0]
    path = os.path.join(bed.base, name)
    print("session %s: warm %s, cgroup %s" % (h[:6], o.get("warm"), name))
    if name in before_runs:
        raise TestFailure("the session's cgroup %s was another run's" % name)
    # A cold session's cgroup is made for it, never a ready sandbox's. (A warm one's was a ready
    # sandbox's, usually one seen just before; a refill that became ready in between is not, so
    # that is not asserted.)
    if not o.get("warm") and name in before_ready:
        raise TestFailure("warm false, but its cgroup %s was a ready sandbox's (ready before: %r)"
                          % (name, sorted(before_ready)))
    if not os.path.isdir(path) or is_ready_sandbox(path):
        raise TestFailure("the session's cgroup %s is missing or still weighted as a ready sandbox" % path)
    return h, name, o.get("warm")


def check_unknown(d, h, after):
    err = tool_error(tool(d, "exec", {"session": h, "code": "print(1)"}))
    if not err or "unknown session" not in err:
        raise TestFailure("a handle after %s was not unknown: %r" % (after, err))


def main():
    # Twice: with the warm pool (the default: sessions are served by ready sandboxes, whose cgroups
    # they take over) and without it (each session's cgroup made for it).
    for pool in (2, 0):
        print("--- MCP_EXEC_WARM_POOL=%d" % pool)
        bed = Bed("mcp-execd-cgfs-sess-%s" % uuid.uuid4().hex[:8])
        try:
            scenario(bed, pool)
        finally:
            cleanup(bed)


def cleanup(bed):
    """Whatever a failure left: the unit stopped, and a populated cgroup (KillMode=process leaves
    processes a broken daemon did not kill) killed and removed."""
    if systemctl("is-active", "--quiet", bed.unit).returncode == 0:
        systemctl("stop", bed.unit)
    if os.path.isdir(bed.base):
        print("cleanup: %s is still there: %r" % (bed.base, os.listdir(bed.base)))
        try:
            with open(os.path.join(bed.base, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError as e:
            print("cleanup: cgroup.kill: %s" % e)
        def empty():
            try:
                return "populated 0" in read(os.path.join(bed.base, "cgroup.events"))
            except OSError:
                return True
        wait_until(empty, 30, 0.2)
        for root, dirs, _ in os.walk(bed.base, topdown=False):
            for name in dirs:
                try:
                    os.rmdir(os.path.join(root, name))
                except OSError:
                    pass
    systemctl("reset-failed", bed.unit)


def scenario(bed, pool):
    d = Daemon(verbose=False, deadline=DEADLINE)
    # As 27: systemd-run --pipe gives the service our stdin/stdout. KillMode=process: at the stop
    # systemd signals only the daemon, so whatever of the sessions is gone, the daemon removed.
    d.proc = subprocess.Popen(
        ["systemd-run", "--quiet", "--pipe", "--wait", "--unit=" + bed.unit, "-p", "Delegate=yes",
         "-p", "KillMode=process",
         "-E", "MCP_EXEC_CGROUP=cgroupfs", "-E", "MCP_EXEC_MEMORY_MAX=128M", "-E", "MCP_EXEC_PIDS_MAX=32",
         "-E", "MCP_EXEC_CPU_QUOTA=50%", "-E", "MCP_EXEC_WARM_POOL=%d" % pool, os.environ["MCP_EXECD"]],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with d:
        d.initialize()
        # The probe's run cgroup gone and the warm pool full (its ready sandboxes: run-* cgroups too).
        if not wait_until(lambda: not bed.run_dirs() and len(bed.ready_dirs()) == pool, 90, 0.2):
            raise TestFailure("the probe's run cgroup is still there, or the pool is not full: runs %s, ready %s"
                              % (bed.run_dirs(), bed.ready_dirs()))
        # A ready sandbox's cgroup is there before its interpreter has said ready, and only then may
        # a call or a session take it: the daemon's own count says when the pool is full.
        def warm_ready():
            return sc(tool(d, "check_environment", {})).get("sandbox", {}).get("warm_ready")
        if not wait_until(lambda: warm_ready() == pool, 90, 0.5):
            raise TestFailure("check_environment's warm_ready is %r, not %d" % (warm_ready(), pool))

        # --- 1. the session's cgroup ---------------------------------------------------------
        t = time.monotonic()
        h, name, warm = open_session(d, bed)
        if warm != (pool > 0):  # the pool is full: the first open takes a ready sandbox if there is a pool
            raise TestFailure("with MCP_EXEC_WARM_POOL=%d the first session_open said warm %r" % (pool, warm))
        rc = os.path.join(bed.base, name)
        got = {k: read(os.path.join(rc, k)) for k in LIMITS}
        print("session open in %.1f s, its cgroup %s: %r" % (time.monotonic() - t, rc, got))
        if got != LIMITS:
            raise TestFailure("the session's cgroup limits %r, configured %r" % (got, LIMITS))
        for leaf in ("supervisor", "payload"):
            if not os.path.isdir(os.path.join(rc, leaf)):
                raise TestFailure("the session's cgroup has no %s/: %r" % (leaf, os.listdir(rc)))
        if not read(os.path.join(rc, "payload", "cgroup.procs")):
            raise TestFailure("no process in the session's payload/")

        # --- 2. state persists across calls --------------------------------------------------
        a = sc(tool(d, "exec", {"session": h, "code": "x = 41"}))
        b = sc(tool(d, "execute_python", {"session": h, "script": "print(x + 1)"}))
        for res, calls in ((a, 2), (b, 3)):  # the first call wrote outputs/id.txt
            if (res.get("limits") != "cgroup" or not res.get("memory_peak_bytes", 0) > 0 or
                    res.get("session_alive") is not True or res.get("session_calls") != calls or
                    res.get("session") != h or res.get("exit_code") != 0):
                raise TestFailure("call %d's result %r" % (calls, res))
        if b.get("stdout") != "42\n":
            raise TestFailure("x = 41 then print(x + 1) printed %r (stderr %r)" % (b.get("stdout"), b.get("stderr")))
        if os.path.join(bed.base, name) != rc or not os.path.isdir(rc):
            raise TestFailure("the session's cgroup changed between calls")
        print("state kept: 42; limits cgroup, peak %d bytes" % b["memory_peak_bytes"])

        # --- 3. OOM in the session ----------------------------------------------------------
        oom = sc(tool(d, "exec", {"session": h, "code": "b = b'\\x01' * (256 * 1024 * 1024)\nprint('no')",
                                  "timeout_s": 60}))
        if oom.get("oom_killed") is not True or oom.get("session_alive") is not False:
            raise TestFailure("an allocation above memory.max: %r" % oom)
        if not wait_until(lambda: not os.path.exists(rc), 30, 0.1):
            raise TestFailure("the OOM-killed session's cgroup %s is still there: %r" % (rc, os.listdir(rc)))
        check_unknown(d, h, "its OOM kill")
        print("OOM: oom_killed, session_alive false, its cgroup gone, the handle unknown")

        # --- 4. session_close ---------------------------------------------------------------
        h2, name2, _ = open_session(d, bed)
        rc2 = os.path.join(bed.base, name2)
        c = sc(tool(d, "session_close", {"session": h2}))
        if c.get("closed") is not True:
            raise TestFailure("session_close answered %r" % c)
        t = time.monotonic()
        if not wait_until(lambda: not os.path.exists(rc2), 30, 0.1):
            raise TestFailure("the closed session's cgroup %s is still there after 30 s: %r" % (rc2, os.listdir(rc2)))
        check_unknown(d, h2, "session_close")
        print("session_close: its cgroup gone after %.1f s, the handle unknown" % (time.monotonic() - t))

        # --- 5. the daemon's stop with a session open ---------------------------------------
        marker = "cgfs-sess-%s" % uuid.uuid4().hex[:12]
        h3, name3, _ = open_session(d, bed)
        rc3 = os.path.join(bed.base, name3)
        k = sc(tool(d, "exec", {"session": h3, "code": (
            "import subprocess\n"
            "keep = subprocess.Popen(['%s', '600'], executable='/usr/bin/sleep')\nprint('ok')" % marker)}))
        if k.get("stdout") != "ok\n" or k.get("session_alive") is not True:
            raise TestFailure("the third session's process: %r" % k)
        procs = wait_until(lambda: marker_pids(marker), 20)
        if not procs:
            raise TestFailure("the third session's marker process is not there")
        pid = int(systemctl("show", "-P", "MainPID", bed.unit).stdout.strip() or 0)
        if str(pid) not in read(os.path.join(bed.base, "daemon", "cgroup.procs")).split():
            raise TestFailure("the daemon %d is not in its leaf %s/daemon" % (pid, bed.base))
        print("third session %s with process %r; stopping %s (daemon %d)" % (name3, procs, bed.unit, pid))
        ev = Events(bed.base)
        t = time.monotonic()
        r = systemctl("stop", bed.unit)
        if r.returncode != 0:
            raise TestFailure("systemctl stop %s: %s" % (bed.unit, r.stderr.strip()))
        try:
            d.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise TestFailure("systemd-run did not end within 60 s of the unit's stop")

        def left():
            out = {"processes": marker_pids(marker), "run cgroups": bed.all_run_dirs()}
            if os.path.isdir(rc3):
                out["session cgroup"] = rc3
            if pid and os.path.exists("/proc/%d" % pid):
                out["daemon"] = pid
            return {k: v for k, v in out.items() if v}
        if not wait_until(lambda: not left(), 30, 0.2):
            raise TestFailure("left after the daemon's stop (KillMode=process: the daemon's to remove): %r" % left())
        state = systemctl("is-active", bed.unit).stdout.strip()
        if state == "active":
            raise TestFailure("%s is still active after its stop" % bed.unit)
        events = ev.read()
        ev.close()
        print("stop with a session open: nothing left after %.1f s (unit %s); events in order: %r"
              % (time.monotonic() - t, state, events))
        # Who removed the session's cgroup: the daemon (before its leaf emptied) or systemd's trim.
        leaf = events.index(("daemon-leaf", None)) if ("daemon-leaf", None) in events else None
        if ("rmdir", name3) not in events:
            raise TestFailure("no rmdir of the session's cgroup %s was seen: %r" % (name3, events))
        if leaf is None:
            raise TestFailure("the daemon's leaf never reported its exit (cgroup.events): %r" % events)
        if events.index(("rmdir", name3)) > leaf:
            raise TestFailure("the session's cgroup %s was removed after the daemon exited (by systemd, not the "
                              "daemon): %r" % (name3, events))
        late = [n for k, n in events[leaf:] if k == "rmdir" and n.startswith("run-")]
        print("the daemon removed %s itself, before its exit%s" % (
            name3, "; run cgroups removed only after it: %r" % late if late else ", and every run-* cgroup"))


run(main)
