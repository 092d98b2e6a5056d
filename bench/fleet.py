#!/usr/bin/env python3
"""bench/fleet.py: a fleet's throughput (issue 19.5) and its routing by free capacity (issue 33.4), in
the systemd test bed, one sitting.

Three instances behind HAProxy as shipped (the template units and units/haproxy-mcp-execd.cfg, set
up by tests/systemd/47-fleet.py's install()). First, T: THROUGHPUT_N calls of 47's mixed load (2026
stateless calls, 2025 sessions, Python sessions, tasks), 6 in flight, straight to one instance and
then through HAProxy to the three; prints calls/s of each and their ratio. Then phases, each N calls
with INFLIGHT in flight through HAProxy, every call `time.sleep(0.2)`, the result's queue_ms (time
waiting for a run slot in the instance) collected:
  A. no hog;
  B. instance 8081 kept busy: every one of its run slots by a CPU hog (a busy loop of HOG_S seconds,
     sent to it directly, not through HAProxy, again as each ends), the agent check on;
  C. the same hog, HAProxy started again without the agent check (leastconn on its own).
Prints p50/p95/max of queue_ms, how many calls waited at all, p50/p95 of the calls' wall time and
how many calls HAProxy sent each instance, for each phase; the hogged instance's STATUS= and the
hogs' own errors around C; and the ratios B/A (the issue's bound: at most 1.5) and C/A. Run as root inside the test bed (see bench/README.md, "Fleet")."""
import importlib.util
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

SRC = os.environ["MCP_EXECD_SRC"]
spec = importlib.util.spec_from_file_location("fleet_tier", os.path.join(SRC, "tests/systemd/47-fleet.py"))
tier = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tier)  # its install(), remove(), lb_up(), clients (lib/fleet.py)
fleet = tier.fleet

N = int(os.environ.get("BENCH_FLEET_N", "36"))
INFLIGHT = int(os.environ.get("BENCH_FLEET_INFLIGHT", "4"))
HOG_S = 45
THROUGHPUT_N = int(os.environ.get("BENCH_FLEET_THROUGHPUT_N", "60"))
HOGGED = 8081


def p(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def load(label):
    """N calls through HAProxy, INFLIGHT at a time: (queue_ms list, wall ms list, failures)."""
    def timed(i):
        t0 = time.monotonic()
        sc = fleet.modern_call(tier.LB, tier.TOKEN, "import time; time.sleep(0.2); print(%d)" % i,
                               rid=i + 1, timeout=600, timeout_s=300)
        return sc["queue_ms"], (time.monotonic() - t0) * 1000

    before = served()
    done, failures = fleet.in_parallel(range(N), INFLIGHT, timed)
    after = served()
    queue, wall = [q for q, _ in done], [w for _, w in done]
    print("%-34s queue_ms p50 %6d p95 %6d max %6d, %d calls queued | wall ms p50 %6d p95 %6d | failures %d | "
          "calls by instance %r" %
          (label, p(queue, .5), p(queue, .95), max(queue, default=0), sum(1 for q in queue if q > 0),
           p(wall, .5), p(wall, .95), len(failures),
           {port: after.get(port, 0) - before.get(port, 0) for port in sorted(after)}), flush=True)
    return queue, wall, failures


def throughput():
    """T: the mixed load to one instance, then through HAProxy to three (6 in flight each)."""
    def timed(port):
        t0 = time.monotonic()
        _, failures = fleet.mixed_load(port, tier.TOKEN, THROUGHPUT_N, 6)
        return time.monotonic() - t0, failures
    one, f1 = timed(tier.PORTS[0])
    three, f3 = timed(tier.LB)
    print("T. throughput, %d calls, 6 in flight: one instance %.1f calls/s, three behind HAProxy %.1f calls/s, "
          "ratio %.2f (failures %d/%d)" % (THROUGHPUT_N, THROUGHPUT_N / one, THROUGHPUT_N / three, one / three,
                                           len(f1), len(f3)), flush=True)


def per_instance(column):
    """A column of HAProxy's show stat for each instance of backend mcp_execd, by port (an integer)."""
    return {int(f[1][1:]): int(f[column]) for f in tier.show_stat()
            if len(f) > 18 and f[0] == "mcp_execd" and f[1].startswith("i")}


def served():
    """How many requests HAProxy sent each instance (stot), by port."""
    return per_instance(7)


def weights():
    """HAProxy's weight of each instance (the agent check sets it), by port."""
    return per_instance(18)


def haproxy(agent):
    cfg = open(tier.HAPROXY_CFG).read()
    if not agent:
        cfg = cfg.replace(" agent-check agent-inter 1s", "")
    path = "/run/mcp-execd-bench-haproxy.cfg"
    open(path, "w").write(cfg)
    hap = subprocess.Popen(["haproxy", "-f", path, "-db"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tier.wait_for("HAProxy to see three instances up", lambda: tier.lb_up() == set(tier.PORTS), 60)
    return hap


def stop(hap):
    hap.send_signal(signal.SIGTERM)
    hap.wait(10)


def main():
    tier.install()
    hog_stop = threading.Event()
    hap = None
    try:
        for port in tier.PORTS:
            tier.sh("systemctl", "start", "mcp-execd@%d.socket" % port, check=True)
        hap = haproxy(agent=True)
        tier.wait_for("every instance to answer /health",
                      lambda: all(tier.get(port, "/health")[0] == 200 for port in tier.PORTS), 180)
        load("warm-up")
        throughput()
        a = load("A. no hog, agent check")
        slots = int(re.search(r"runs \d+/(\d+)", tier.sh("systemctl", "show", "-P", "StatusText",
                                                          tier.unit(HOGGED))).group(1))

        hog_errors = []

        def hog():
            while not hog_stop.is_set():
                try:
                    fleet.modern_call(HOGGED, tier.TOKEN, "import time\nt = time.time()\nwhile time.time() - t < %d: pass"
                                      % HOG_S, timeout=600, timeout_s=HOG_S + 60)
                except Exception as e:  # said below: a hog that does not run makes B and C say nothing
                    hog_errors.append("%s: %s" % (type(e).__name__, e))

        def hogged():
            return "i%d: %s; hog errors %d %r" % (HOGGED, tier.sh("systemctl", "show", "-P", "StatusText",
                                                                   tier.unit(HOGGED)).strip(),
                                                  len(hog_errors), hog_errors[-1:])

        for _ in range(slots):
            threading.Thread(target=hog, daemon=True).start()
        tier.wait_for("HAProxy to weigh the hogged instance at 1", lambda: weights().get(HOGGED) == 1, 60)
        print("hog: %d busy loops on i%d; HAProxy's weights %r" % (slots, HOGGED, weights()), flush=True)
        b = load("B. i%d hogged, agent check" % HOGGED)
        stop(hap)
        hap = haproxy(agent=False)
        print(hogged(), flush=True)
        c = load("C. i%d hogged, no agent check" % HOGGED)
        print(hogged(), flush=True)
        hog_stop.set()
        base = max(p(a[0], .95), 1)
        print("p95 queue_ms ratio to the unhogged fleet: with the agent check %.2f (bound 1.5), without %.2f"
              % (p(b[0], .95) / base, p(c[0], .95) / base), flush=True)
        print("p95 wall ratio: with %.2f, without %.2f" % (p(b[1], .95) / p(a[1], .95), p(c[1], .95) / p(a[1], .95)))
    finally:
        hog_stop.set()
        if hap:
            stop(hap)
        tier.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
