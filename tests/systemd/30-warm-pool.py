#!/usr/bin/env python3
"""Ready sandboxes with cgroups (issue 16.1). Under systemd, with the default pool: each ready
sandbox waits in a scope of its own with the runs' limits at a lower cpu.weight; a call takes one
(warm: true), in that scope, at the runs' weight; a memory hog is OOM-killed as in a cold run; the
CPU charged excludes Python's start and the preload (compared with a cold run of the same code);
memory_at_start_bytes <= memory_peak_bytes; SIGTERM leaves no mcp-execd-run-*.scope. Under
cgroupfs the same basics, and nothing left once the daemon has stopped."""
# tier-timeout: 900
import os
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, read, run_units, sc, start_call, wait_pool_full, wait_reply, wait_until  # noqa: E402
from scopes import all_scope_dirs as scope_dirs  # noqa: E402

LIMITS = {"MCP_EXEC_MEMORY_MAX": "128M", "MCP_EXEC_PIDS_MAX": "32", "MCP_EXEC_CPU_QUOTA": "50%"}
WANT = {"memory.max": "134217728", "pids.max": "32", "cpu.max": "50000 100000"}
REFILL_WEIGHT = "10"  # pool.c POOL_CPU_WEIGHT
RUN_WEIGHT = "100"


def readq(path):
    try:
        return read(path)
    except OSError:
        return None


def ready_dirs(dirs):
    """Cgroups whose payload/ holds a process (Python started: ready, or about to be)."""
    return [c for c in dirs if (readq(os.path.join(c, "payload/cgroup.procs")) or "").split()]


def timed_call(d, code, **arguments):
    t = time.monotonic()
    r = sc(d.exec_code(code, **arguments))
    r["_round_trip_ms"] = (time.monotonic() - t) * 1000
    return r


def warm_call(d, code, **arguments):
    """A call made once the pool is full (refills come after answers, and under emulation Python's
    start takes seconds: check_environment's warm_ready says when they are ready); it must be
    served by a ready sandbox. The round trip is the call's alone: no refill runs beside it."""
    wait_pool_full(d)
    r = timed_call(d, code, **arguments)
    if not r.get("warm"):
        raise TestFailure("a call made while the pool was full was not served warm: %r" % r)
    return r


def cpu_us(r):
    return r["cpu_user_us"] + r["cpu_system_us"]


def check_accounting(r):
    if not 0 < r["memory_at_start_bytes"] <= r["memory_peak_bytes"]:
        raise TestFailure("memory_at_start_bytes %d, memory_peak_bytes %d" % (r["memory_at_start_bytes"],
                                                                             r["memory_peak_bytes"]))


def systemd_part():
    env = dict(os.environ, MCP_EXEC_PRELOAD="json", **LIMITS)
    d = Daemon(env=env, verbose=False, deadline=DEADLINE)
    with d:
        d.initialize()
        # The probe's scope goes, the pool's two come (Python in payload/ of each).
        dirs = wait_until(lambda: len(ready_dirs(scope_dirs())) == 2 == len(scope_dirs()) and scope_dirs(), 120,
                          step=0.5)
        if len(dirs) != 2:
            raise TestFailure("expected two ready scopes, found %r" % dirs)
        for s in dirs:
            got = {k: read(os.path.join(s, k)) for k in WANT}
            weight = read(os.path.join(s, "cpu.weight"))
            print("ready scope %s: %r cpu.weight %s" % (os.path.basename(s), got, weight))
            if got != WANT or weight != REFILL_WEIGHT:
                raise TestFailure("ready scope %s: limits %r, cpu.weight %s" % (s, got, weight))

        # A call in one of them: during the call one of the two ready scopes is at the runs' weight
        # (no other scope is made before the answer: refills come after it), with its limits. A
        # scope exists before its Python has said ready: the daemon's count says when both have.
        wait_pool_full(d)
        rid = start_call(d, "import time, sys\ntime.sleep(6)\nprint('json' in sys.modules)", timeout_s=60)
        taken = wait_until(lambda: [s for s in scope_dirs() if readq(os.path.join(s, "cpu.weight")) == RUN_WEIGHT],
                           30, step=0.2)
        got = {k: readq(os.path.join(taken[0], k)) for k in WANT} if taken else None
        r = sc(wait_reply(d, rid))
        print("warm call: %r in %r" % ({k: r.get(k) for k in ("warm", "stdout", "limits")}, taken))
        if not r["warm"] or r["stdout"] != "True\n" or r["limits"] != "cgroup":
            raise TestFailure("result %r" % r)
        if len(taken) != 1 or taken[0] not in dirs:
            raise TestFailure("scopes at the runs' weight during the call: %r, ready ones before: %r" % (taken, dirs))
        if got != WANT:
            raise TestFailure("the taken scope's limits %r" % got)
        check_accounting(r)

        oom = warm_call(d, "b = b'\\x01' * (1024 * 1024 * 1024)", timeout_s=60)
        if not oom["oom_killed"] or oom["signal"] != "SIGKILL":
            raise TestFailure("no OOM kill in a warm run: %r" % oom)
        print("warm OOM: oom_killed %s, peak %d" % (oom["oom_killed"], oom["memory_peak_bytes"]))

        warm = []
        for _ in range(3):
            w = warm_call(d, "pass")
            check_accounting(w)
            warm.append(w)
        warm_cpu = min(cpu_us(w) for w in warm)
        print("warm 'pass': cpu %r us, memory_at_start %r, peak %r, round trip %r ms (no assertion)"
              % ([cpu_us(w) for w in warm], [w["memory_at_start_bytes"] for w in warm],
                 [w["memory_peak_bytes"] for w in warm], [round(w["_round_trip_ms"]) for w in warm]))

        # SIGTERM: ready sandboxes and their scopes go with the daemon (the pool full first, so
        # there are some: two scopes at the ready sandboxes' weight).
        wait_pool_full(d)
        ready = [s for s in scope_dirs() if readq(os.path.join(s, "cpu.weight")) == REFILL_WEIGHT]
        if len(ready) != 2:
            raise TestFailure("with the pool full, ready scopes before SIGTERM: %r (all: %r)" % (ready, scope_dirs()))
        d.proc.send_signal(signal.SIGTERM)
        d.proc.wait(timeout=60)
        if not wait_until(lambda: not scope_dirs() and not run_units(), 30):
            raise TestFailure("left after SIGTERM: cgroups %r units %r" % (scope_dirs(), run_units()))
        print("SIGTERM: no scope, cgroup or unit left")
        # The first call's record (stderr carries the journal fields): warm, in the scope it took.
        unit = os.path.basename(taken[0])
        recs = [ln for ln in d.proc.stderr.read().decode(errors="replace").splitlines()
                if "UNIT=%s " % unit in ln and "MESSAGE_ID=" in ln]
        if len(recs) != 1 or " WARM=1" not in recs[0] or " LIMITS=cgroup" not in recs[0]:
            raise TestFailure("the record of the run in %s: %r" % (unit, recs))
        print("its record: UNIT=%s WARM=1 LIMITS=cgroup" % unit)

    # The same code cold: Python's start and the preload are charged there, not in a warm run.
    env_cold = dict(env, MCP_EXEC_WARM_POOL="0")
    with Daemon(env=env_cold, verbose=False, deadline=DEADLINE) as c:
        c.initialize()
        cold = [timed_call(c, "pass") for _ in range(3)]
        if any(x["warm"] for x in cold):
            raise TestFailure("a call was warm with MCP_EXEC_WARM_POOL=0: %r" % cold)
        cold_cpu = min(cpu_us(x) for x in cold)
        print("cold 'pass': cpu %r us, round trip %r ms; warm/cold CPU %.3f"
              % ([cpu_us(x) for x in cold], [round(x["_round_trip_ms"]) for x in cold],
                 warm_cpu / max(cold_cpu, 1)))
        if not warm_cpu * 2 < cold_cpu:
            raise TestFailure("a warm run is charged %d us, a cold one %d us: the preload seems charged"
                              % (warm_cpu, cold_cpu))
        if c.close_stdin_and_wait() != 0:
            raise TestFailure("daemon exit status not 0")
    if not wait_until(lambda: not scope_dirs() and not run_units(), 30):
        raise TestFailure("left: cgroups %r units %r" % (scope_dirs(), run_units()))


def cgroupfs_daemon(unit, extra=()):
    """The daemon as the main process of a Delegate=yes service (systemd-run --pipe gives it our
    stdin/stdout), MCP_EXEC_CGROUP=cgroupfs; the service's cgroup, which holds its run cgroups."""
    d = Daemon(verbose=False, deadline=DEADLINE)
    cmd = ["systemd-run", "--quiet", "--pipe", "--wait", "--unit=" + unit, "-p", "Delegate=yes"] + list(extra)
    cmd += ["-E", "MCP_EXEC_CGROUP=cgroupfs"]
    for k, v in LIMITS.items():
        cmd += ["-E", "%s=%s" % (k, v)]
    d.proc = subprocess.Popen(cmd + [os.environ["MCP_EXECD"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    return d, "/sys/fs/cgroup/system.slice/%s.service" % unit


def main_pid(unit):
    out = subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", unit + ".service"],
                         capture_output=True, text=True, timeout=30).stdout.strip()
    return int(out or 0)


def run_dirs_of(base):
    return [os.path.join(base, e) for e in os.listdir(base) if e.startswith("run-")] \
        if os.path.isdir(base) else []


def wait_ready_cgroups(base):
    dirs = wait_until(lambda: len(ready_dirs(run_dirs_of(base))) == 2 == len(run_dirs_of(base)) and run_dirs_of(base),
                      120, step=0.5)
    if len(dirs) != 2:
        raise TestFailure("expected two ready run cgroups in %s, found %r" % (base, dirs))
    return dirs


def cgroupfs_part():
    # What the daemon removes itself on SIGTERM can only be seen while the service's cgroup
    # outlives it (systemd removes the whole tree once the service is over): a sleeper of ours is
    # moved into a leaf of it, and KillMode=process + RemainAfterExit=yes leave it there.
    unit = "mcp-execd-cgfs-%s" % uuid.uuid4().hex[:8]
    d, base = cgroupfs_daemon(unit, ["-p", "RemainAfterExit=yes", "-p", "KillMode=process"])
    keeper = subprocess.Popen(["sleep", "600"])
    with d:
        d.initialize()
        os.makedirs(os.path.join(base, "keep"), exist_ok=True)
        with open(os.path.join(base, "keep", "cgroup.procs"), "w") as f:
            f.write(str(keeper.pid))
        for rc in wait_ready_cgroups(base):
            got = {k: read(os.path.join(rc, k)) for k in WANT}
            weight = readq(os.path.join(rc, "cpu.weight"))
            print("ready cgroup %s: %r cpu.weight %s" % (os.path.basename(rc), got, weight))
            if got != WANT or weight not in (REFILL_WEIGHT, None):
                raise TestFailure("ready cgroup %s: limits %r, cpu.weight %s" % (rc, got, weight))
        r = warm_call(d, "print('delegated')")
        if r["stdout"] != "delegated\n" or r["limits"] != "cgroup":
            raise TestFailure("result %r" % r)
        check_accounting(r)
        oom = warm_call(d, "b = b'\\x01' * (1024 * 1024 * 1024)", timeout_s=60)
        if not oom["oom_killed"]:
            raise TestFailure("no OOM kill in a warm run: %r" % oom)
        print("cgroupfs: warm call and warm OOM kill ok")
        wait_ready_cgroups(base)
        wait_pool_full(d)  # SIGTERM with both sandboxes ready, not one still starting
        pid = main_pid(unit)
        os.kill(pid, signal.SIGTERM)
        if not wait_until(lambda: not os.path.exists("/proc/%d" % pid), 60):
            raise TestFailure("the daemon did not exit on SIGTERM")
        left = run_dirs_of(base)
        there = os.path.isdir(base)
        keeper.kill()
        keeper.wait()
        subprocess.run(["systemctl", "stop", unit + ".service"], capture_output=True, timeout=60)
        d.proc.wait(timeout=60)
        if not there:
            raise TestFailure("the service's cgroup %s went with the daemon: nothing to check" % base)
        if left:
            raise TestFailure("run cgroups left by the daemon after SIGTERM: %r" % left)
        print("cgroupfs: SIGTERM, no run cgroup left (the service's cgroup still there)")

    # SIGKILL: the ready sandboxes' inits die with the daemon (PR_SET_PDEATHSIG); their emptied
    # cgroups go with the service's, which systemd removes when its main process is gone.
    unit = "mcp-execd-cgfs-%s" % uuid.uuid4().hex[:8]
    d, base = cgroupfs_daemon(unit)
    with d:
        d.initialize()
        dirs = wait_ready_cgroups(base)
        os.kill(main_pid(unit), signal.SIGKILL)
        d.proc.wait(timeout=60)
        if not wait_until(lambda: not os.path.isdir(base), 30):
            raise TestFailure("after SIGKILL %s is still there: %r" % (base, run_dirs_of(base)))
        print("cgroupfs: SIGKILL, the ready cgroups %r went with the service's" % [os.path.basename(x) for x in dirs])


def main():
    systemd_part()
    cgroupfs_part()


run(main)
