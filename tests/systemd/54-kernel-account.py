#!/usr/bin/env python3
# tier-timeout: 600
"""The kernel's account of a run beyond CPU and memory (issue 33.1), in systemd scopes:

1. Against the cgroup's own files: a Python session's payload/ lives between its calls (frozen),
   so the test reads its cpu.pressure, memory.pressure, io.pressure, io.stat and pids.peak before
   and after a call; the call's figures are the difference (its pids_peak the file's value):
   exactly for bytes and tasks, for stall time but for the moments a freeze takes. Every figure this kernel has is a number, the others null (and this kernel has PSI,
   io.stat and, from 6.1, pids.peak: each must be known here).
2. A call made to stall on memory: squeezed under memory.high (written by the test into the
   session's payload/ between its calls), its memory_pressure_some_us is above the last call's.
3. A run made to stall on CPU: more busy processes than the VM has CPUs; its cpu_pressure_some_us
   is above zero and above a plain run's.
4. The journal record has the same figures (PIDS_PEAK=…), /metrics sums them.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from journal import JournalDaemon, JournalStream, wait_records  # noqa: E402
from mcpclient import TestFailure, run  # noqa: E402
from scopes import DEADLINE, read, sc, scope_dirs, start_call, wait_reply, wait_until  # noqa: E402

FIELDS = ["cpu_pressure_some_us", "memory_pressure_some_us", "memory_pressure_full_us",
          "io_pressure_some_us", "io_pressure_full_us", "io_read_bytes", "io_write_bytes", "pids_peak"]
PRESSURE = {"cpu_pressure_some_us": ("cpu.pressure", "some"),
            "memory_pressure_some_us": ("memory.pressure", "some"),
            "memory_pressure_full_us": ("memory.pressure", "full"),
            "io_pressure_some_us": ("io.pressure", "some"),
            "io_pressure_full_us": ("io.pressure", "full")}
CPUS = os.cpu_count() or 1


def tool(d, name, arguments):
    return sc(d.call("tools/call", {"name": name, "arguments": arguments}))


def files_account(payload):
    """What the daemon is to report, read by the test from payload/'s own files."""
    a = {}
    for field, (name, line) in PRESSURE.items():
        for ln in read(os.path.join(payload, name)).splitlines():
            if ln.startswith(line + " "):
                a[field] = int(ln.rsplit("total=", 1)[1])
    rd = wr = 0
    for ln in read(os.path.join(payload, "io.stat")).splitlines():
        kv = dict(w.split("=") for w in ln.split()[1:])
        rd += int(kv["rbytes"])
        wr += int(kv["wbytes"])
    a["io_read_bytes"], a["io_write_bytes"] = rd, wr
    a["pids_peak"] = int(read(os.path.join(payload, "pids.peak")))
    return a


def known(res, what):
    for f in FIELDS:
        if not isinstance(res.get(f), int) or res[f] < 0:
            raise TestFailure("%s: %s is %r, not a count (this kernel has the file): %r" % (what, f, res.get(f), res))


def tasks(payload):
    """pids.current of payload/, 0 until it is made (just after the scope)."""
    try:
        return int(read(os.path.join(payload, "pids.current")))
    except OSError:
        return 0


def frozen(payload):
    return "frozen 1" in read(os.path.join(payload, "cgroup.events")).splitlines()


def section_session(d):
    o = tool(d, "session_open", {})
    h = o["session"]
    dirs = wait_until(scope_dirs, 20)
    if len(dirs) != 1:
        raise TestFailure("expected the session's scope alone, found %r" % dirs)
    payload = os.path.join(dirs[0], "payload")
    for f in ("cpu.pressure", "memory.pressure", "io.pressure", "io.stat", "pids.peak"):
        if not os.path.exists(os.path.join(payload, f)):
            raise TestFailure("the session's payload/ has no %s (IOAccounting, PSI or Linux >= 6.1 missing?): %r"
                              % (f, sorted(os.listdir(payload))))
    tool(d, "exec", {"session": h, "code": "x = 1"})
    if not wait_until(lambda: frozen(payload), 10):
        raise TestFailure("the session is not frozen after its call")
    before = files_account(payload)
    # Work that stalls a little and forks: four processes spinning on the VM's CPUs, then gone.
    r = tool(d, "exec", {"session": h, "code": (
        "import os, time\n"
        "kids = []\n"
        "for _ in range(4):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        t = time.time()\n"
        "        while time.time() - t < 1.5: pass\n"
        "        os._exit(0)\n"
        "    kids.append(pid)\n"
        "for k in kids: os.waitpid(k, 0)\n"
        "print('done')\n")})
    if r.get("stdout") != "done\n":
        raise TestFailure("the session call failed: %r" % r)
    if not wait_until(lambda: frozen(payload), 10):
        raise TestFailure("the session is not frozen after its second call")
    after = files_account(payload)
    known(r, "session call")
    want = {f: (after[f] if f == "pids_peak" else after[f] - before[f]) for f in FIELDS}
    got = {f: r[f] for f in FIELDS}
    print("session call: reported %s\n  the files' difference %s" % (json.dumps(got), json.dumps(want)))
    # The daemon reads payload/ as it asks the kernel to freeze the session (the tasks stop as they
    # next leave the kernel), the test once cgroup.events says frozen: a stall in those moments
    # falls on one side of the test's reading and the other of the daemon's. Counts of bytes and
    # tasks do not move then; pressure may, by the freeze's moments.
    for f in FIELDS:
        slack = 300000 + want[f] // 10 if f in PRESSURE else 0
        if abs(got[f] - want[f]) > slack:
            raise TestFailure("the call's %s is %d, its payload/'s difference %d (more than %d apart): reported %r, "
                              "files %r" % (f, got[f], want[f], slack, got, want))
    if r["pids_peak"] < 5:
        raise TestFailure("pids_peak %d, though the call had Python and 4 children at once" % r["pids_peak"])

    # Memory: between calls (frozen, nothing runs) the test lowers memory.high of the session's
    # payload/ to 4 MiB above what it holds; the next call touches up to 64 MiB in 1 MiB steps for
    # at most 3 s (no swap: MemorySwapMax=0) and is throttled in reclaim.
    current = int(read(os.path.join(payload, "memory.current")))
    with open(os.path.join(payload, "memory.high"), "w") as f:
        f.write("%d" % (current + (4 << 20)))
    squeezed = tool(d, "exec", {"session": h, "timeout_s": 30, "code": (
        "import time\n"
        "t, chunks = time.time(), []\n"
        "while time.time() - t < 3 and len(chunks) < 64:\n"
        "    b = bytearray(1 << 20)\n"
        "    for i in range(0, len(b), 4096): b[i] = 1\n"
        "    chunks.append(b)\n"
        "print(len(chunks))\n")})
    known(squeezed, "squeezed call")
    print("under memory.high (memory.current + 4 MiB): %s MiB touched, memory_pressure_some_us %d full %d "
          "(the unsqueezed call: %d)" % (squeezed["stdout"].strip(), squeezed["memory_pressure_some_us"],
                                        squeezed["memory_pressure_full_us"], r["memory_pressure_some_us"]))
    if not squeezed.get("session_alive") or squeezed["memory_pressure_some_us"] <= r["memory_pressure_some_us"]:
        raise TestFailure("a call squeezed under memory.high reports no memory stall: %r" % squeezed)
    if squeezed["memory_pressure_full_us"] > squeezed["memory_pressure_some_us"]:
        raise TestFailure("full above some: %r" % squeezed)
    tool(d, "session_close", {"session": h})


def section_stalls(d):
    plain = sc(d.exec_code("print(1)"))
    known(plain, "plain run")

    # CPU: twice as many spinning processes as CPUs, for 1.5 s.
    n = 2 * CPUS
    busy = sc(d.exec_code(
        "import os, time\nkids = []\nfor _ in range(%d):\n    pid = os.fork()\n    if pid == 0:\n"
        "        t = time.time()\n        while time.time() - t < 1.5: pass\n        os._exit(0)\n"
        "    kids.append(pid)\nfor k in kids: os.waitpid(k, 0)\nprint('done')\n" % n, timeout_s=30))
    known(busy, "contended run")
    print("%d spinning processes on %d CPUs: cpu_pressure_some_us %d (a plain run: %d), pids_peak %d"
          % (n, CPUS, busy["cpu_pressure_some_us"], plain["cpu_pressure_some_us"], busy["pids_peak"]))
    if busy["cpu_pressure_some_us"] <= plain["cpu_pressure_some_us"]:
        raise TestFailure("a run with %d busy processes on %d CPUs reports no CPU stall: %r" % (n, CPUS, busy))
    if busy["pids_peak"] < n + 1:
        raise TestFailure("pids_peak %d below the %d processes it had" % (busy["pids_peak"], n + 1))
    return busy


def section_journal(busy, pid):
    recs = wait_records(5, "MESSAGE_ID=0a6bda1f24cf4b5188307da770817b6b", "_PID=%d" % pid)
    want = busy["pids_peak"]
    mine = [r for r in recs if r.get("PIDS_PEAK") == str(want) and
            r.get("CPU_PRESSURE_SOME_US") == str(busy["cpu_pressure_some_us"])]
    if not mine:
        raise TestFailure("no run record with PIDS_PEAK=%d CPU_PRESSURE_SOME_US=%d among %d records"
                          % (want, busy["cpu_pressure_some_us"], len(recs)))
    r = mine[-1]
    for f in FIELDS:
        if r.get(f.upper()) != str(busy[f]):
            raise TestFailure("the record's %s is %r, the result's %r" % (f.upper(), r.get(f.upper()), busy[f]))
    print("journal: the run's record has the eight fields as its result")


def main():
    env = dict(os.environ, MCP_EXEC_MEMORY_MAX="256M", MCP_EXEC_WARM_POOL="0")
    stream = JournalStream("mcp-execd-54")
    with JournalDaemon(stream, env=env, verbose=False, deadline=DEADLINE) as d:
        d.initialize()
        pid = d.proc.pid
        if not wait_until(lambda: not scope_dirs(), 60):
            raise TestFailure("the probe's scope is still there: %r" % scope_dirs())
        section_session(d)
        if not wait_until(lambda: not scope_dirs(), 60):
            raise TestFailure("the session's scope is still there: %r" % scope_dirs())
        busy = section_stalls(d)
    section_journal(busy, pid)


run(main)
