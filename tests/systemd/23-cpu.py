#!/usr/bin/env python3
"""CPU: a 2-second busy loop at quota 50% uses within 10% of half its wall time in
cpu_user_us + cpu_system_us; at 100%, within 10% of its wall time."""
# tier-timeout: 240
import os
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import sc  # noqa: E402

LOOP = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 2:\n    pass\n"


def main():
    for quota, share in (("50%", 0.5), ("100%", 1.0)):
        env = dict(os.environ, MCP_EXEC_CPU_QUOTA=quota)
        with Daemon(env=env, verbose=False) as d:
            d.initialize()
            r = sc(d.exec_code(LOOP, timeout_s=60))
            cpu = (r["cpu_user_us"] + r["cpu_system_us"]) / 1000.0
            wall = r["duration_ms"]
            ratio = cpu / wall
            print("quota %s: cpu %.0f ms over %d ms wall: %.3f of the wall time" % (quota, cpu, wall, ratio))
            if abs(ratio - share) > 0.1 * share:
                raise TestFailure("quota %s: CPU share %.3f is not within 10%% of %.2f" % (quota, ratio, share))


run(main)
