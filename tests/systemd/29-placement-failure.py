#!/usr/bin/env python3
"""systemd refuses the run's scope (its slice is masked): every call is a tool error that says
what systemd answered, the daemon serves on (no crash, no use-after-free: a run that fails before
its release has no timer in flight, and its answer once freed it under the handler that finished
it), nothing of the runs remains, and runs work once the slice is unmasked. Uses the ASan build
of the suite's asan tier when it is there and current, with any sanitizer report a failure."""
# tier-timeout: 600
import glob
import re
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, daemon_path, run  # noqa: E402
from scopes import DEADLINE, run_units, scope_dirs, start_call, wait_until  # noqa: E402

SLICE = "mcpexecdmasked.slice"


def binary():
    asan = os.path.join(os.environ["MCP_EXECD_SRC"], "build-asan", "daemon", "mcp-execd")
    if os.path.isfile(asan) and os.path.getmtime(asan) >= os.path.getmtime(daemon_path()):
        return asan, True
    return daemon_path(), False


def main():
    exe, asan = binary()
    print("daemon: %s%s" % (exe, " (ASan)" if asan else ""))
    os.environ["MCP_EXECD"] = exe  # what Daemon spawns
    reports = tempfile.mkdtemp(prefix="mcp-execd-asan.")
    env = dict(os.environ, MCP_EXECD=exe, MCP_EXEC_SLICE=SLICE, MCP_EXEC_MAX_CONCURRENT="4",
               ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_leaks=1:log_path=%s/asan" % reports,
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=%s/ubsan" % reports)
    subprocess.run(["systemctl", "mask", "--runtime", SLICE], check=True, capture_output=True)
    try:
        with Daemon(env=env, verbose=True, deadline=DEADLINE) as d:
            d.initialize()
            texts = []
            for k in range(6):
                r = d.call("tools/call", {"name": "exec", "arguments": {"code": "print(%d)" % k}})
                texts.append(r["content"][0]["text"] if r.get("isError") else None)
            ids = [start_call(d, "print(1)") for _ in range(6)]
            got = d.collect(ids, DEADLINE)  # concurrent failures are answered in any order
            for rid in ids:
                r = got[rid].get("result") or {}
                texts.append(r["content"][0]["text"] if r.get("isError") else None)
            print("answer: %s" % texts[0])
            for t in texts:
                if not t or not re.search(r"systemd (refused to create|could not start) the run's scope", t):
                    raise TestFailure("not the tool error owed: %r" % t)
            d.call("ping")
            if not wait_until(lambda: not scope_dirs() and not run_units(), 30, step=0.2):
                raise TestFailure("left behind: %r %r" % (scope_dirs(), run_units()))

            subprocess.run(["systemctl", "unmask", "--runtime", SLICE], check=True, capture_output=True)
            res = d.exec_code("print('unmasked')")
            sc = res.get("structuredContent") or {}
            if res.get("isError") or sc.get("stdout") != "unmasked\n" or sc.get("limits") != "cgroup":
                raise TestFailure("a run after unmasking: %r" % res)
            code = d.close_stdin_and_wait()
            if code != 0:
                raise TestFailure("the daemon exited %d at EOF: %s" % (code, d.stderr_tail()))
        found = glob.glob(os.path.join(reports, "*"))
        if found:
            with open(found[0], errors="replace") as f:
                raise TestFailure("sanitizer report %s:\n%s" % (found[0], f.read()[:3000]))
        print("12 refused runs answered, daemon alive, a later run ok; no sanitizer report")
    finally:
        subprocess.run(["systemctl", "unmask", "--runtime", SLICE], capture_output=True)
        shutil.rmtree(reports, ignore_errors=True)


run(main)
