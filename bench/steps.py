#!/usr/bin/python3
"""The cold path, step by step (issue 16.5): medians of the daemon's own step timestamps.

    bench/steps.py [--n 30] [--env K=V ...] <path to mcp-execd>

Starts the daemon with MCP_EXECD_DEBUG=1 and MCP_EXEC_WARM_POOL=0 (every call cold), makes --n calls
of print(1) one at a time after 5 warm-up calls, and reads the "run … steps" lines the daemon logs
(CLOCK_MONOTONIC, ms from the call's run_start()): when the call was staged, spawned (clone3 and
the id maps done), released, when Python was started (the init's STARTED report: mounts,
pivot_root, the copy of the staged files, the lockdown and Python's execve are before it), when
Python's exit was reported (EXITED), when the outputs were collected, both output pipes at EOF, the
init reaped (the namespace torn down), and the answer (done()). Prints the median of each, of each
step's own duration, and the client's round trip; a step that comes after the answer is reported
as such.

With --perf (root, perf(1)): the daemon runs under `perf record -k CLOCK_MONOTONIC` with the
scheduler's fork, exec and exit tracepoints and pivot_root's and umount2's returns, which time
what happens inside the sandbox on the same clock as the daemon's own steps: the init's clone, the
mount helper's fork, pivot_root, the old root's detach and its exit, the Python child's fork, the
init's exec of sandbox-init, Python's exec and exit, the init's exit.
"""
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from rtt import Daemon, bare, bench_args, env_of  # noqa: E402

STEPS = ["staged", "spawned", "released", "started", "exited", "collected", "eof", "init-reaped", "now"]


def main():
    ap = bench_args(30)
    ap.add_argument("--code", default="print(1)")
    ap.add_argument("--perf", action="store_true", help="also time the steps inside the sandbox (perf)")
    a = ap.parse_args()
    env = env_of(a.env, {"MCP_EXECD_DEBUG": "1", "MCP_EXEC_WARM_POOL": "0"})
    log = tempfile.NamedTemporaryFile(prefix="steps-", suffix=".log", delete=False)
    binary = a.binary
    if a.perf:
        perf_data = log.name + ".perf"
        wrapper = log.name + ".sh"
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec perf record -q -k CLOCK_MONOTONIC -o %s -e %s -- %s\n" % (
                perf_data, ",".join(PERF_EVENTS), a.binary))
        __import__("os").chmod(wrapper, 0o755)
        binary = wrapper
    d = Daemon(binary, env, stderr=log)
    time.sleep(0.5)
    for _ in range(5):
        d.call(a.code)
    rtts, base = [], []
    for _ in range(a.n):
        rtts.append(d.call(a.code)[0] * 1000)
        time.sleep(0.02)  # let a teardown that comes after the answer finish outside the next call
        base.append(bare("/usr/bin/python3") * 1000)  # the same machine, interleaved
    d.close()
    runs = {}
    with open(log.name) as f:
        for line in f:
            m = re.search(r"run (\w+) steps (\w+) \(ms from the call\): (.*)", line)
            if not m:
                continue
            vals = dict(re.findall(r"([a-z-]+) (-?[0-9.]+)", m.group(3)))
            runs.setdefault(m.group(1), {})[m.group(2)] = {k: float(v) for k, v in vals.items()}
            runs[m.group(1)]["call-at-usec"] = int(re.search(r"call-at-usec (\d+)", line).group(1))
            runs[m.group(1)]["init"] = int(re.search(r" init (\d+)", line).group(1))
    ids = list(runs)[-a.n:]  # not the warm-up calls, nor the start's interpreter probe
    print(f"{a.binary}, env {env}, code {a.code!r}: {len(ids)} calls (log {log.name})")
    print(f"client round trip: median {statistics.median(rtts):.2f} ms; bare /usr/bin/python3 -I -c pass, "
          f"interleaved: median {statistics.median(base):.2f} ms; ratio {statistics.median(rtts) / statistics.median(base):.3f}")
    prev = 0.0
    for s in STEPS:
        at = [runs[i]["answer"][s] for i in ids if runs[i]["answer"].get(s, -1) >= 0]
        label = "answer" if s == "now" else s
        if len(at) < len(ids) // 2:
            after = [runs[i]["reaped"][s] for i in ids if "reaped" in runs[i] and runs[i]["reaped"].get(s, -1) >= 0]
            if after:
                print(f"  {label:<12} after the answer: median {statistics.median(after):8.3f} ms from the call")
            continue
        med = statistics.median(at)
        print(f"  {label:<12} at {med:8.3f} ms   (+{med - prev:.3f})")
        prev = med
    if a.perf:
        inside(perf_data, [runs[i] for i in ids])


PERF_EVENTS = ["sched:sched_process_fork", "sched:sched_process_exec", "sched:sched_process_exit",
               "syscalls:sys_exit_pivot_root", "syscalls:sys_exit_umount", "syscalls:sys_exit_unshare",
               "syscalls:sys_exit_seccomp", "syscalls:sys_enter_execve", "syscalls:sys_enter_execveat",
               "syscalls:sys_exit_prctl"]
INSIDE = ["init cloned", "helper forked", "pivot_root", "old root detached", "helper exited",
          "python child forked", "child: own cgroup namespace", "child: seccomp loaded", "init: execveat entered",
          "init exec'd sandbox-init", "sandbox-init: first prctl", "child: execve entered", "python exec'd",
          "python exited", "init exited"]


def inside(perf_data, runs):
    """Times of the sandbox's own steps per run (ms from the call), from the perf trace."""
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "pid,time,event,trace"],
                         capture_output=True, text=True, check=True).stdout
    ev = []  # (t_usec, pid, event, trace)
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+([0-9.]+):\s+(\S+):\s*(.*)", line)
        if m:
            ev.append((float(m.group(2)) * 1e6, int(m.group(1)), m.group(3), m.group(4)))
    table = {k: [] for k in INSIDE}
    for run in runs:
        init, t0 = run["init"], run["call-at-usec"]
        kids = [int(re.search(r"child_pid=(\d+)", tr).group(1)) for t, pid, e, tr in ev
                if e == "sched:sched_process_fork" and pid == init]
        if not kids:
            continue
        # Two children: the mount helper, then Python's. One: Python's child built the root itself
        # (rlimit mode since issue 16.5's merge: SpawnPlan.mount_in_child).
        helper, python = (kids[0], kids[1]) if len(kids) > 1 else (kids[0], kids[0])
        at = {}

        def first(name, pred):
            for t, pid, e, tr in ev:
                if pred(pid, e, tr):
                    at[name] = (t - t0) / 1000
                    return

        first("init cloned", lambda pid, e, tr: e == "sched:sched_process_fork" and f"child_pid={init}" in tr)
        if helper != python:
            first("helper forked", lambda pid, e, tr: e == "sched:sched_process_fork" and f"child_pid={helper}" in tr)
        first("pivot_root", lambda pid, e, tr: pid == helper and e.endswith("pivot_root"))
        first("old root detached", lambda pid, e, tr: pid == helper and e.endswith("umount"))
        if helper != python:
            first("helper exited", lambda pid, e, tr: pid == helper and e.endswith("exit") and "sched" in e)
        first("python child forked", lambda pid, e, tr: e == "sched:sched_process_fork" and f"child_pid={python}" in tr)
        first("init exec'd sandbox-init", lambda pid, e, tr: pid == init and e.endswith("exec"))
        first("child: own cgroup namespace", lambda pid, e, tr: pid == python and e.endswith("exit_unshare"))
        first("child: seccomp loaded", lambda pid, e, tr: pid == python and e.endswith("exit_seccomp"))
        first("init: execveat entered", lambda pid, e, tr: pid == init and e.endswith("enter_execveat"))
        first("child: execve entered", lambda pid, e, tr: pid == python and e.endswith("enter_execve"))
        if "init exec'd sandbox-init" in at:
            t_exec = at["init exec'd sandbox-init"] * 1000 + t0
            for t, pid, e, tr in ev:
                if pid == init and t > t_exec and e.endswith("exit_prctl"):
                    at["sandbox-init: first prctl"] = (t - t0) / 1000
                    break
        first("python exec'd", lambda pid, e, tr: pid == python and e.endswith("exec"))
        first("python exited", lambda pid, e, tr: pid == python and e == "sched:sched_process_exit")
        first("init exited", lambda pid, e, tr: pid == init and e == "sched:sched_process_exit")
        for k, v in at.items():
            table[k].append(v)
    print(f"inside the sandbox (perf tracepoints, {len(runs)} calls; ms from the call):")
    prev = 0.0
    for k in sorted(INSIDE, key=lambda k: statistics.median(table[k]) if table[k] else 1e9):
        if table[k]:
            med = statistics.median(table[k])
            print(f"  {k:<26} at {med:8.3f} ms   (+{med - prev:.3f})   n={len(table[k])}")
            prev = med


if __name__ == "__main__":
    main()
