#!/usr/bin/env python3
"""Leak test: code, stdin and output each carry a unique random marker; afterwards neither the
whole journal (journalctl -o export: every field of every entry) nor the daemon's stderr holds
any of them.

Two daemons over stdio: one whose stderr is a journal stream (as under systemd: records go to
the journal), one whose stderr is a pipe (records are lines on stderr). Each serves an ok run, a
failing run with a traceback, a timeout, a run that streams its output in progress notifications
with a marker as its (invalid) traceparent, tracestate and baggage, and a refused call carrying a
marker in stdin. The output marker is computed by the run (reversed), so it appears nowhere in
what was sent.
"""
# tier-timeout: 360
import json
import os
import secrets
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from journal import JournalStream, export, wait_records  # noqa: E402
from mcpclient import Daemon, TestFailure, run  # noqa: E402

FINISHED = "0a6bda1f24cf4b5188307da770817b6b"


def markers():
    return {k: "%s%s" % (k, secrets.token_hex(12)) for k in ("CODEMARK", "STDINMARK", "OUTMARK", "TRACEMARK")}


def serve(d, m):
    out_rev = m["OUTMARK"][::-1]
    code = ("import sys\n"
            "# %s\n"
            "data = sys.stdin.read()\n"
            "print(%r[::-1])\n"
            "sys.stderr.write(%r[::-1] + data + '\\n')\n"
            "print(data)\n" % (m["CODEMARK"], out_rev, out_rev))
    d.initialize()
    r = d.exec_code(code, stdin=m["STDINMARK"])["structuredContent"]
    if m["OUTMARK"] not in r["stdout"] or m["STDINMARK"] not in r["stdout"]:
        raise TestFailure("the run did not print the markers: %r" % r)
    d.exec_code("# %s\nraise RuntimeError(%r[::-1] + open(0).read())\n" % (m["CODEMARK"], out_rev),
                stdin=m["STDINMARK"])
    d.exec_code("# %s\nimport time\nprint(%r[::-1], flush=True)\ntime.sleep(60)\n" % (m["CODEMARK"], out_rev),
                timeout_s=2)
    # Issue 17.4/17.5: a call that asks for progress streams its output (printed over more than a
    # second, so notifications carry it), with trace context that is text, not a traceparent: the
    # output goes to the client only, the "traceparent" is dropped, tracestate and baggage too.
    r = d.call("tools/call", {"name": "exec", "arguments": {
        "code": "# %s\nimport time\nfor i in range(4):\n    print(%r[::-1], flush=True)\n    time.sleep(0.5)\n"
                % (m["CODEMARK"], out_rev)},
        "_meta": {"progressToken": "p", "traceparent": "00-%s-01" % m["TRACEMARK"],
                  "tracestate": "k=" + m["TRACEMARK"], "baggage": "k=" + m["TRACEMARK"]}})
    streamed = [n for n in d.notifications if n.get("method") == "notifications/progress"]
    if not any(m["OUTMARK"] in json.dumps(n) for n in streamed) or m["OUTMARK"] not in r["structuredContent"]["stdout"]:
        raise TestFailure("the output was not streamed to the client: %r" % streamed)
    bad = d.request("tools/call", {"name": "exec", "arguments": {"code": "", "stdin": m["STDINMARK"]},
                                   "_meta": {"traceparent": m["TRACEMARK"]}})
    if not bad.get("result", {}).get("isError"):
        raise TestFailure("empty code was not refused: %r" % bad)
    return d.close_stdin_and_wait()


def main():
    env = dict(os.environ)
    env.pop("JOURNAL_STREAM", None)

    m1 = markers()
    stream = JournalStream("mcp-execd-tier-42")
    jenv = dict(env, JOURNAL_STREAM=stream.env_value)
    import subprocess

    class JD(Daemon):
        def __enter__(self):
            from mcpclient import daemon_path
            self.proc = subprocess.Popen([daemon_path()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=stream.fileno(), env=self.env)
            return self

        def stderr_tail(self, n=20):
            return "(stderr went to the journal)"

    with JD(env=jenv, deadline=60, verbose=False) as d:
        pid1 = d.proc.pid
        serve(d, m1)
    stream.close()

    m2 = markers()
    with Daemon(env=env, deadline=60, verbose=False) as d:
        serve(d, m2)
        err = d.proc.stderr.read()

    recs = wait_records(4, "MESSAGE_ID=" + FINISHED, "_PID=%d" % pid1)
    if len(recs) != 4:
        raise TestFailure("expected 4 run records from the journal daemon, found %d" % len(recs))
    if err.count(("MESSAGE_ID=" + FINISHED).encode()) != 4:
        raise TestFailure("expected 4 run lines on the stderr of the second daemon:\n%s" % err.decode())

    journal = export()
    print("journal export: %d bytes; daemon stderr: %d bytes" % (len(journal), len(err)))
    if len(journal) < 1000:
        raise TestFailure("the journal export is suspiciously small")
    leaks = []
    for m in (m1, m2):
        for kind, marker in m.items():
            for where, blob in (("the journal", journal), ("the daemon's stderr", err)):
                # Also the hex-free forms: a marker split by an encoder would still show its tail.
                if marker.encode() in blob or marker[len(kind):].encode() in blob:
                    leaks.append("%s marker found in %s" % (kind, where))
    if leaks:
        raise TestFailure("; ".join(leaks))
    print("OK: no code, stdin, output or trace-context marker in the journal or on stderr (%d markers checked)" % 8)


run(main)
