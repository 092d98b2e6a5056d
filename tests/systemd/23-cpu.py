#!/usr/bin/env python3
"""CPU: a 2-second busy loop at quota 50% uses within 10% of half its wall time in
cpu_user_us + cpu_system_us; at 100%, within 10% of its wall time. The interpreter's own start
costs CPU too (a lot of it under software emulation), so the loop's CPU is the run's minus that of
the same script without the loop, measured in the same daemon (medians of three)."""
# tier-timeout: 420
import os
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, sc  # noqa: E402

LOOP = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 2:\n    pass\n"
IDLE = "import time\nt = time.monotonic()\n"


def main():
    for quota, share in (("50%", 0.5), ("100%", 1.0)):
        env = dict(os.environ, MCP_EXEC_CPU_QUOTA=quota)
        with Daemon(env=env, verbose=False, deadline=DEADLINE) as d:
            d.initialize()
            base = []
            for _ in range(3):
                b = sc(d.exec_code(IDLE, timeout_s=60))
                base.append((b["cpu_user_us"] + b["cpu_system_us"]) / 1000.0)
            base.sort()
            loops = []
            for _ in range(3):
                r = sc(d.exec_code(LOOP, timeout_s=60))
                loops.append((r["cpu_user_us"] + r["cpu_system_us"]) / 1000.0)
            loops.sort()
            cpu = loops[1] - base[1]
            wall = 2000.0
            ratio = cpu / wall
            print("quota %s: run cpu %.0f ms - start %.0f ms = %.0f ms over the loop's 2000 ms: %.3f"
                  % (quota, cpu + base[1], base[1], cpu, ratio))
            if abs(ratio - share) > 0.1 * share:
                raise TestFailure("quota %s: CPU share %.3f is not within 10%% of %.2f" % (quota, ratio, share))


run(main)
