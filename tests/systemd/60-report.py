#!/usr/bin/env python3
"""`mcp-execd --report` reads the system journal under systemd (issue 33.2).

The daemon is started over stdio the way systemd starts a service whose stderr is the journal (as
41-journal-records does), so its records are structured journal entries. Runs: ok (three), a
nonzero exit, a timeout, an OOM kill (the cgroup backend), two calls in a Python session, and a
refused call. Then, with no --file, `mcp-execd --report --json` over the test's time range must
count exactly those calls by outcome, give the percentiles of the records' durations (the plain
runs' records hold their results' own), the peak memory, CPU and ready-sandbox hits, and the
pressure measures when the records have them; the text report runs too. Records of the daemon's start and stop, and its log lines, are not counted.
"""
# tier-timeout: 300
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from journal import JournalStream, wait_records  # noqa: E402
from mcpclient import Daemon, TestFailure, daemon_path, run  # noqa: E402

FINISHED = "0a6bda1f24cf4b5188307da770817b6b"
REJECTED = "017048d888fb4eca8b36e2339da3a750"
PRESSURE = ["CPU_PRESSURE_SOME_US", "MEMORY_PRESSURE_SOME_US", "MEMORY_PRESSURE_FULL_US", "IO_PRESSURE_SOME_US",
            "IO_PRESSURE_FULL_US", "IO_READ_BYTES", "IO_WRITE_BYTES", "PIDS_PEAK"]


class JournalDaemon(Daemon):
    """Daemon whose stderr is a journal stream, as under systemd."""

    def __init__(self, stream, **kw):
        super().__init__(**kw)
        self.env["JOURNAL_STREAM"] = stream.env_value
        self.stream = stream

    def __enter__(self):
        self.proc = subprocess.Popen([daemon_path()] + self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stream.fileno(), env=self.env)
        return self

    def stderr_tail(self, n=20):
        return "(stderr went to the journal)"


def nearest_rank(values, pct):
    v = sorted(values)
    return v[max(-(-len(v) * pct // 100), 1) - 1]


def report(*args):
    p = subprocess.run([daemon_path(), "--report"] + list(args), capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise TestFailure("mcp-execd --report %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def main():
    env = dict(os.environ, MCP_EXEC_MEMORY_MAX="96M", MCP_EXEC_DEFAULT_TIMEOUT_S="20")
    env.pop("JOURNAL_STREAM", None)
    # Whole seconds on both sides: --since/--until take @SECONDS, and the range must hold every
    # record of this daemon and nothing of the tests before it.
    time.sleep(1.1 - time.time() % 1)
    since = int(time.time())
    stream = JournalStream("mcp-execd-tier-60")
    calls = [
        ("ok", "print(1)\n", {}),
        ("ok", "print(sum(range(10**6)))\n", {}),
        ("ok", "import time\ntime.sleep(0.2)\n", {}),
        ("nonzero", "import sys\nsys.exit(4)\n", {}),
        ("timeout", "import time\ntime.sleep(60)\n", {"timeout_s": 2}),
        ("oom", "b = b'\\x01' * (400 * 1024 * 1024)\nprint(len(b))\n", {}),
    ]
    results = []
    with JournalDaemon(stream, env=env, deadline=60) as d:
        pid = d.proc.pid
        d.initialize()
        for name, code, extra in calls:
            res = d.exec_code(code, **extra)
            sc = res.get("structuredContent")
            if res.get("isError") or not sc:
                raise TestFailure("%s: tool error %r" % (name, res))
            results.append((name, sc))
            print("%s: exit_code=%s duration_ms=%s memory_peak_bytes=%s warm=%s limits=%s"
                  % (name, sc["exit_code"], sc["duration_ms"], sc["memory_peak_bytes"], sc["warm"], sc["limits"]))
        # Two calls in a Python session: run records too, with PY_SESSION_ID.
        opened = d.call("tools/call", {"name": "session_open", "arguments": {}})
        handle = (opened.get("structuredContent") or {}).get("session")
        if opened.get("isError") or not handle:
            raise TestFailure("session_open: %r" % opened)
        for code in ("x = 41\n", "print(x + 1)\n"):
            res = d.exec_code(code, session=handle)
            if res.get("isError"):
                raise TestFailure("session call: %r" % res)
        d.call("tools/call", {"name": "session_close", "arguments": {"session": handle}})
        bad = d.request("tools/call", {"name": "exec", "arguments": {"code": "   "}})
        if not bad.get("result", {}).get("isError"):
            raise TestFailure("whitespace code was not a tool error: %r" % bad)
        d.close_stdin_and_wait()
    stream.close()
    runs = len(calls) + 2
    recs = wait_records(runs, "MESSAGE_ID=" + FINISHED, "_PID=%d" % pid)
    rej = wait_records(1, "MESSAGE_ID=" + REJECTED, "_PID=%d" % pid)
    if len(recs) != runs or len(rej) != 1:
        raise TestFailure("%d run records and %d refusals in the journal for %d runs and 1 refusal"
                          % (len(recs), len(rej), runs))
    if sum(1 for r in recs if "PY_SESSION_ID" in r) != 2:
        raise TestFailure("the session calls' records lack PY_SESSION_ID: %r" % [r.get("MESSAGE") for r in recs])
    time.sleep(1.1 - time.time() % 1)
    until = int(time.time())
    if results[0][1]["limits"] != "cgroup":
        raise TestFailure("limits is %r under systemd with cgroup v2" % results[0][1]["limits"])
    outcome = {name: sc for name, sc in results}
    if not outcome["oom"]["oom_killed"] or not outcome["timeout"]["timed_out"]:
        raise TestFailure("the oom or timeout run did not end as meant: %r" % results)

    rng = ["--since", "@%d" % since, "--until", "@%d" % until]
    rep = json.loads(report("--json", *rng))
    print("report:", json.dumps({k: rep[k] for k in ("calls", "runs", "rejected", "outcomes", "warm")}))
    want_outcomes = {"ok": 5, "nonzero": 1, "timeout": 1, "oom": 1, "pids": 0, "signal": 0, "cancelled": 0,
                     "rejected": 1, "error": 0}
    got = {k: rep[k] for k in ("calls", "runs", "rejected", "session_calls", "outcomes")}
    if got != {"calls": 9, "runs": 8, "rejected": 1, "session_calls": 2, "outcomes": want_outcomes}:
        raise TestFailure("the report counts %r, expected 9 calls, 8 runs (2 in a session), 1 refused, %r"
                          % (got, want_outcomes))
    if rep["rejected_reasons"] != {"invalid-arguments": 1}:
        raise TestFailure("rejected_reasons %r" % rep["rejected_reasons"])

    # The plain runs' records hold their results' numbers (41-journal-records checks it field by
    # field); the sums are the records', session calls included.
    for name, sc in results:
        if not any(r["DURATION_MS"] == str(sc["duration_ms"]) and r["CPU_USER_US"] == str(sc["cpu_user_us"])
                   for r in recs):
            raise TestFailure("no record of the %s run has its result's duration and CPU" % name)
    durations = [int(r["DURATION_MS"]) for r in recs]
    want = {"count": len(recs), "sum": sum(durations), "p50": nearest_rank(durations, 50),
            "p95": nearest_rank(durations, 95), "p99": nearest_rank(durations, 99), "max": max(durations)}
    if rep["measures"]["duration_ms"] != want:
        raise TestFailure("duration_ms %r, expected %r (from the records)" % (rep["measures"]["duration_ms"], want))
    peaks = [int(r["MEMORY_PEAK_BYTES"]) for r in recs if int(r["MEMORY_PEAK_BYTES"]) > 0]
    mem = rep["measures"]["memory_peak_bytes"]
    if not mem or mem["count"] != len(peaks) or mem["max"] != max(peaks) or \
            mem["max"] != max(sc["memory_peak_bytes"] for _, sc in results):
        raise TestFailure("memory_peak_bytes %r, the records' peaks %r" % (mem, peaks))
    cpu = sum(int(r["CPU_USER_US"]) for r in recs)
    if rep["measures"]["cpu_user_us"]["sum"] != cpu:
        raise TestFailure("cpu_user_us sum %r, the records' %d" % (rep["measures"]["cpu_user_us"], cpu))
    # The pool's hit rate is over runs of their own: a session's calls are not served by the pool.
    own = [r for r in recs if "PY_SESSION_ID" not in r]
    warm = sum(1 for r in own if r.get("WARM") == "1")
    if rep["warm"]["runs"] != len(own) or rep["warm"]["hits"] != warm:
        raise TestFailure("warm %r, records %r" % (rep["warm"], [r.get("WARM") for r in recs]))
    # Issue 33.1's measures: summed over the records that have them, null where none has.
    for field in PRESSURE:
        have = [int(r[field]) for r in recs if r.get(field, "") != ""]
        got = rep["measures"][field.lower()]
        if (got is None) != (not have) or (have and (got["count"] != len(have) or got["sum"] != sum(have))):
            raise TestFailure("%s: report %r, records %r" % (field, got, have))
        print("%s: %s" % (field, "not recorded" if got is None else got))

    # One tenant's report: these calls have none.
    if json.loads(report("--json", "--tenant", "nobody", *rng))["calls"] != 0:
        raise TestFailure("--tenant nobody counted calls")
    text = report(*rng)
    print(text)
    for line in ("9 calls: 8 runs (2 in Python sessions), 1 refused", "invalid-arguments"):
        if line not in text:
            raise TestFailure("the text report lacks %r" % line)
    print("OK: --report counts what the daemon recorded in the system journal")


run(main)
