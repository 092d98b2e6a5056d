#!/usr/bin/env python3
"""mcp-execd answers initialize, tools/list and an exec of print(42) over stdio."""
# tier-timeout: 90
import os
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402


def main():
    d = Daemon()
    with d:
        try:
            d.initialize()
            tools = d.call("tools/list", {})
            names = [t.get("name") for t in tools.get("tools", [])]
            if "exec" not in names:
                raise TestFailure("tools/list has no tool named exec: %r" % names)
            res = d.exec_code("print(42)")
            sc = res.get("structuredContent") or {}
            if sc.get("stdout") != "42\n" or sc.get("exit_code") != 0:
                raise TestFailure("exec print(42): stdout=%r exit_code=%r isError=%r"
                                  % (sc.get("stdout"), sc.get("exit_code"), res.get("isError")))
            rc = d.close_stdin_and_wait()
        except TestFailure:
            d.kill()
            tail = d.stderr_tail()
            if tail:
                print("daemon stderr (tail):\n" + tail)
            raise
    print("daemon exited %d after stdin closed" % rc)
    print("OK: initialize, tools/list (%s), exec print(42) -> 42" % ", ".join(names))


run(main)
