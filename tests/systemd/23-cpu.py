#!/usr/bin/env python3
"""CPU: a 2-second busy loop at quota 50% uses within 10% of half its wall time; at 100%, within 10%
of its wall time; and the result's cpu_user_us + cpu_system_us accounts for at least the loop.

The loop measures its own CPU (time.process_time() around it, inside the run), so the interpreter's
start, whose cost swings widely under software emulation on a loaded host, is not part of the
share. That start made this test fail in CI once (share 0.849 at 50%: the loop's run started slower
than the median of three runs without the loop). Timing under emulation still varies with the host's
load, so a share outside the tolerance is measured again, at most ATTEMPTS times, and every attempt
is printed."""
# tier-timeout: 600
import json
import os
import sys

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run  # noqa: E402
from scopes import DEADLINE, sc  # noqa: E402

LOOP = (
    "import json, time\n"
    "c, t = time.process_time(), time.monotonic()\n"
    "while time.monotonic() - t < 2:\n"
    "    pass\n"
    "print(json.dumps({'cpu_ms': (time.process_time() - c) * 1000, 'wall_ms': (time.monotonic() - t) * 1000}))\n"
)
ATTEMPTS = 3


def measure(d):
    """Median of three loops: (share of the loop's wall time, loop cpu ms, the result's cpu ms)."""
    rows = []
    for _ in range(3):
        r = sc(d.exec_code(LOOP, timeout_s=60))
        inner = json.loads(r["stdout"])
        accounted = (r["cpu_user_us"] + r["cpu_system_us"]) / 1000.0
        rows.append((inner["cpu_ms"] / inner["wall_ms"], inner["cpu_ms"], accounted))
    rows.sort()
    return rows[1]


def main():
    for quota, share in (("50%", 0.5), ("100%", 1.0)):
        env = dict(os.environ, MCP_EXEC_CPU_QUOTA=quota)
        with Daemon(env=env, verbose=False, deadline=DEADLINE) as d:
            d.initialize()
            for attempt in range(1, ATTEMPTS + 1):
                ratio, loop_ms, accounted_ms = measure(d)
                print("quota %s, attempt %d: the loop used %.0f ms of CPU, share %.3f; the result accounts %.0f ms"
                      % (quota, attempt, loop_ms, ratio, accounted_ms))
                # The cgroup's counters hold the whole run: at least the loop (5 ms for rounding).
                if accounted_ms + 5 < loop_ms:
                    raise TestFailure("quota %s: the result accounts %.0f ms of CPU, less than the loop's %.0f ms"
                                      % (quota, accounted_ms, loop_ms))
                if abs(ratio - share) <= 0.1 * share:
                    break
                if attempt == ATTEMPTS:
                    raise TestFailure("quota %s: CPU share %.3f is not within 10%% of %.2f (%d attempts)"
                                      % (quota, ratio, share, ATTEMPTS))


run(main)
