#!/usr/bin/python3
"""`mcp-execd --report` over a journal of 100 000 run records (issue 33.2: in at most 1 s).

    bench/report.py [--records 100000] [--noise 0.5] [--n 5] [--keep DIR] <path to mcp-execd>

Makes a journal file the way journald would hold a busy day of the service: --records run records
(the fields metrics.c writes, with the trusted fields journald adds, issue 33.1's pressure and IO
fields in half of them, 2% refused calls, 0.5% errors, 10% calls in Python sessions, four tenants
and runs without one), interleaved with --noise times as many lines of other services (which the
report's matches must skip). They are written in the journal export format and turned into a
.journal file by systemd-journal-remote (Debian package systemd-journal-remote). Then times
`mcp-execd --report --json --file FILE` --n times (and the text report once), checks the counts and
p95 duration against the records it made, and prints the median wall time, records per second, and
the median CPU time (user + system) of the report's process: on a shared machine the wall time is
mostly waiting for a CPU.
"""
import argparse
import glob
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

FINISHED = "0a6bda1f24cf4b5188307da770817b6b"
REJECTED = "017048d888fb4eca8b36e2339da3a750"
JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
BOOT = "4a1c5e0d9b2f4e7a8c3d1f0e2b5a6c7d"
MACHINE = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
TENANTS = ["alpha", "beta", "gamma", "delta", None]
REASONS = ["queue-full", "invalid-arguments", "tenant-queue-full", "shutting-down"]
ERRORS = ["systemd did not create the run's scope within 5 s; the run was not started",
          "cannot start the sandbox: Cannot allocate memory",
          "the run's init ended unexpectedly (signal 9)"]


def export_entry(fields):
    out = []
    for k, v in fields:
        v = str(v)
        if "\n" in v:  # binary-safe form of the export format (none of ours have one)
            b = v.encode()
            out.append(k.encode() + b"\n" + len(b).to_bytes(8, "little") + b + b"\n")
        else:
            out.append(("%s=%s\n" % (k, v)).encode())
    out.append(b"\n")
    return b"".join(out)


def trusted(t_us, seq, pid, comm, unit):
    return [("__REALTIME_TIMESTAMP", t_us), ("__MONOTONIC_TIMESTAMP", 10_000_000 + seq * 1000),
            ("_BOOT_ID", BOOT), ("_MACHINE_ID", MACHINE), ("_HOSTNAME", "bench"), ("_TRANSPORT", "journal"),
            ("_PID", pid), ("_UID", 0), ("_GID", 0), ("_COMM", comm), ("_EXE", "/usr/bin/" + comm),
            ("_CMDLINE", "/usr/bin/" + comm), ("_CAP_EFFECTIVE", "1ffffffffff"),
            ("_SYSTEMD_CGROUP", "/system.slice/" + unit), ("_SYSTEMD_UNIT", unit),
            ("_SYSTEMD_SLICE", "system.slice"), ("_SYSTEMD_INVOCATION_ID", "9f3d0c7e1b2a4c5d8e6f7a8b9c0d1e2f"),
            ("_SOURCE_REALTIME_TIMESTAMP", t_us - 7)]


def run_record(rng, t_us, seq):
    """One record as metrics.c's metrics_run_finished() or metrics_run_rejected() writes it, and
    what the report should count of it."""
    tenant = rng.choice(TENANTS)
    base = trusted(t_us, seq, 4242, "mcp-execd", "mcp-execd.service")
    if rng.random() < 0.02:
        f = base + [("MESSAGE", "call rejected: queue-full"), ("PRIORITY", 4), ("SYSLOG_IDENTIFIER", "mcp-execd"),
                    ("MESSAGE_ID", REJECTED), ("TRANSPORT", "http"), ("OUTCOME", "rejected"),
                    ("REASON", rng.choice(REASONS)), ("CODE_BYTES", rng.randint(10, 4000)), ("STDIN_BYTES", 0),
                    ("TIMEOUT_S", 30), ("RUNS_RUNNING", 8), ("RUNS_QUEUED", 64)]
        if tenant:
            f.append(("TENANT", tenant))
        return f, {"kind": "rejected"}
    run_id = "%016x" % rng.getrandbits(64)
    unit = "mcp-execd-run-%s.scope" % run_id
    r = rng.random()
    error = None
    if r < 0.005:
        outcome, exit_code, error = "error", "", rng.choice(ERRORS)
    elif r < 0.02:
        outcome, exit_code = "timeout", -1
    elif r < 0.03:
        outcome, exit_code = "oom", -9
    elif r < 0.12:
        outcome, exit_code = "nonzero", 1
    else:
        outcome, exit_code = "ok", 0
    duration = int(rng.lognormvariate(5.0, 1.0))  # ms: median ~150
    queue = 0 if rng.random() < 0.8 else int(rng.expovariate(1 / 200))
    memory = rng.randint(12, 300) * 1024 * 1024
    warm = rng.random() < 0.7
    f = base + [
        ("MESSAGE", "run %s finished: exit code %s after %d ms" % (run_id, exit_code, duration)),
        ("PRIORITY", 6), ("SYSLOG_IDENTIFIER", "mcp-execd"), ("MESSAGE_ID", FINISHED), ("RUN_ID", run_id),
        ("UNIT", unit), ("OBJECT_SYSTEMD_UNIT", unit), ("TRANSPORT", "http"), ("OUTCOME", outcome),
        ("LIMITS", "cgroup"), ("EXIT_CODE", exit_code), ("SIGNAL", "SIGKILL" if exit_code == -9 else ""),
        ("TIMED_OUT", int(outcome == "timeout")), ("OOM_KILLED", int(outcome == "oom")), ("PIDS_LIMIT_HIT", 0),
        ("TRUNCATED", 0), ("DURATION_MS", duration), ("QUEUE_MS", queue), ("TIMEOUT_S", 30),
        ("MEMORY_PEAK_BYTES", memory), ("CPU_USER_US", duration * 700), ("CPU_SYSTEM_US", duration * 150),
        ("CODE_BYTES", rng.randint(10, 4000)), ("STDIN_BYTES", 0), ("STDOUT_BYTES", rng.randint(0, 9000)),
        ("STDERR_BYTES", 0), ("SCOPE_START_US", rng.randint(2000, 9000)), ("WARM", int(warm)),
        ("MEMORY_AT_START_BYTES", 9 * 1024 * 1024),
    ]
    if seq % 2 == 0:  # issue 33.1's fields, in the records of a daemon that writes them
        f += [("CPU_PRESSURE_SOME_US", rng.randint(0, 5000)), ("MEMORY_PRESSURE_SOME_US", rng.randint(0, 900)),
              ("MEMORY_PRESSURE_FULL_US", rng.randint(0, 300)), ("IO_PRESSURE_SOME_US", rng.randint(0, 800)),
              ("IO_PRESSURE_FULL_US", rng.randint(0, 200)), ("IO_READ_BYTES", rng.randint(0, 1 << 24)),
              ("IO_WRITE_BYTES", rng.randint(0, 1 << 20)), ("PIDS_PEAK", rng.randint(1, 12))]
    if rng.random() < 0.3:
        f.append(("TRACEPARENT", "00-%032x-%016x-01" % (rng.getrandbits(128) | 1, rng.getrandbits(64) | 1)))
    if tenant:
        f.append(("TENANT", tenant))
    if rng.random() < 0.1:
        f += [("PY_SESSION_ID", "%016x" % rng.getrandbits(64)), ("PY_SESSION_CALL", rng.randint(1, 40))]
    if error:
        f.append(("ERROR", error))
    return f, {"kind": "run", "outcome": outcome, "duration": duration}


def noise_entry(rng, t_us, seq):
    unit = rng.choice(["cron.service", "sshd.service", "nginx.service", "systemd-logind.service"])
    comm = unit.split(".")[0]
    return trusted(t_us, seq, 1000 + seq % 5000, comm, unit) + [
        ("MESSAGE", "%s: something happened %d" % (comm, seq)), ("PRIORITY", 6), ("SYSLOG_IDENTIFIER", comm),
        ("SYSLOG_FACILITY", 3)]


def make_journal(directory, records, noise, seed):
    rng = random.Random(seed)
    t_us = 1_765_000_000_000_000
    expect = []
    path = os.path.join(directory, "bench.journal")
    proc = subprocess.Popen([JOURNAL_REMOTE, "--output=" + path, "-"], stdin=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    buf, seq, carry = [], 0, 0.0
    for _ in range(records):
        carry += noise
        while carry >= 1:
            carry -= 1
            t_us += rng.randint(1000, 400_000)
            buf.append(export_entry(noise_entry(rng, t_us, seq)))
            seq += 1
        t_us += rng.randint(1000, 400_000)
        fields, what = run_record(rng, t_us, seq)
        expect.append(what)
        buf.append(export_entry(fields))
        seq += 1
        if len(buf) >= 2000:
            proc.stdin.write(b"".join(buf))
            buf = []
    proc.stdin.write(b"".join(buf))
    proc.stdin.close()
    if proc.wait() != 0:
        sys.exit("systemd-journal-remote failed")
    return expect, seq


def nearest_rank(values, pct):
    values = sorted(values)
    k = -(-len(values) * pct // 100)
    return values[max(k, 1) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--noise", type=float, default=0.5, help="other services' entries per run record")
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--keep", help="make the journal in this directory and keep it; if it holds one made by "
                    "an earlier --keep, use that")
    args = ap.parse_args()
    if not os.access(JOURNAL_REMOTE, os.X_OK):
        sys.exit("%s is missing (apt-get install systemd-journal-remote)" % JOURNAL_REMOTE)

    with tempfile.TemporaryDirectory() as tmp:
        directory = args.keep or tmp
        os.makedirs(directory, exist_ok=True)
        t = time.perf_counter()
        saved = os.path.join(directory, "expect.json")
        if args.keep and os.path.exists(saved):
            with open(saved) as f:
                expect, entries = json.load(f)
        else:
            expect, entries = make_journal(directory, args.records, args.noise, args.seed)
            with open(saved, "w") as f:
                json.dump([expect, entries], f)
        files = sorted(glob.glob(os.path.join(directory, "*.journal")))
        size = sum(os.path.getsize(f) for f in files)
        print("journal: %d entries (%d run records), %d file(s), %.1f MiB, made in %.1f s"
              % (entries, len(expect), len(files), size / 2**20, time.perf_counter() - t))

        cmd = [args.binary, "--report", "--json", "--file", os.path.join(directory, "*.journal")]
        times, cpu = [], []
        for i in range(args.n):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            times.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        rep = json.loads(out)
        runs = [e for e in expect if e["kind"] == "run"]
        durations = [e["duration"] for e in runs if e["outcome"] != "error"]
        want = {"calls": len(expect), "runs": len(runs), "rejected": len(expect) - len(runs),
                "p95": nearest_rank(durations, 95)}
        got = {"calls": rep["calls"], "runs": rep["runs"], "rejected": rep["rejected"],
               "p95": rep["measures"]["duration_ms"]["p95"]}
        if got != want:
            sys.exit("the report is wrong: %r, expected %r" % (got, want))
        t = time.perf_counter()
        subprocess.run(cmd[:2] + cmd[3:], check=True, capture_output=True)
        text_s = time.perf_counter() - t

        med = statistics.median(times)
        print("--report --json: median %.3f s (min %.3f, max %.3f) of %d; %.0f records/s; text report %.3f s"
              % (med, min(times), max(times), args.n, len(expect) / med, text_s))
        # On a shared machine the wall time is mostly waiting for a CPU; the CPU time is the work.
        print("CPU time (user + system): median %.3f s (min %.3f, max %.3f); load average %.1f"
              % (statistics.median(cpu), min(cpu), max(cpu), os.getloadavg()[0]))
        print("checked: %d calls, %d runs, %d refused, p95 duration %d ms" % (
            want["calls"], want["runs"], want["rejected"], want["p95"]))


if __name__ == "__main__":
    main()
