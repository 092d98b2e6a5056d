#!/usr/bin/env python3
# tier-timeout: 1200
"""HAProxy's agent check in the fleet as shipped (issue 33.4): mcp-execd@.socket listens on the
instance's port and on 1<port>, mcp-execd@.service sets MCP_EXEC_AGENT_ADDR to the second, and the
daemon (which has no network of its own) serves each socket systemd passed for what it is.

1. Each instance's agent answers "ready 100%" when idle; HAProxy (units/haproxy-mcp-execd.cfg, as
   47-fleet installs it) weighs each server 100.
2. Calls sent straight to one instance take all its run slots: its agent says "ready 1%", HAProxy's
   weight of it becomes 1, and its `systemctl status` line counts the slots; once they end, 100 again.
3. `systemctl stop` of an instance (socket and service) with a call in flight: its agent, on the
   socket the draining daemon still holds, says "drain", HAProxy sets the server to DRAIN, every call
   sent through HAProxy meanwhile is answered, the call in flight gets its result, and the service
   stops cleanly.
"""
import importlib.util
import os
import re
import socket
import subprocess
import sys
import threading

SRC = os.environ["MCP_EXECD_SRC"]
spec = importlib.util.spec_from_file_location("fleet_tier", os.path.join(SRC, "tests/systemd/47-fleet.py"))
tier = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tier)  # its install(), remove(), show_stat(), clients (lib/fleet.py)
fleet = tier.fleet
from mcpclient import TestFailure, skip, run, wait_for  # noqa: E402  (on the path 47-fleet set)

SRV_ADMF_FDRAIN = 0x08  # HAProxy's include/haproxy/server-t.h: the drain an agent (or the CLI) set


def agent(port):
    """The agent check's line of instance port, asked as HAProxy asks it ('' when nothing answers)."""
    try:
        with socket.create_connection(("127.0.0.1", 10000 + port), timeout=10) as s:
            out = b""
            while True:
                b = s.recv(64)
                if not b:
                    return out.decode()
                out += b
    except OSError:
        return ""


def weights():
    return {int(f[1][1:]): int(f[18]) for f in tier.show_stat()
            if len(f) > 18 and f[0] == "mcp_execd" and f[1].startswith("i")}


def admin_state(port):
    """srv_admin_state of server i<port> of backend mcp_execd (HAProxy's "show servers state")."""
    lines = tier.haproxy_cli("show servers state mcp_execd").splitlines()
    head = next((l for l in lines if l.startswith("# ")), "# ").split()[1:]
    if "srv_name" not in head:
        return None
    for l in lines:
        f = l.split()
        if f and f[0].isdigit() and len(f) == len(head) and f[head.index("srv_name")] == "i%d" % port:
            return int(f[head.index("srv_admin_state")])
    return None


def status(port):
    return tier.sh("systemctl", "show", "-P", "StatusText", tier.unit(port))


def main():
    if not os.path.exists("/usr/sbin/haproxy"):
        return skip("haproxy is not installed (scripts/deps.sh test installs it)")
    tier.install()
    hap = subprocess.Popen(["haproxy", "-f", tier.HAPROXY_CFG, "-db"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        return scenario()
    finally:
        hap.terminate()
        hap.wait(10)
        for p in tier.PORTS:
            print(tier.sh("journalctl", "-u", tier.unit(p), "-b", "--no-pager", "-n", "5", "-o", "short-monotonic"))
        tier.remove()


def scenario():
    for p in tier.PORTS:
        tier.sh("systemctl", "start", "mcp-execd@%d.socket" % p, check=True)
    wait_for("HAProxy to see three instances up", lambda: tier.lb_up() == set(tier.PORTS), 240)

    # --- 1. idle ------------------------------------------------------------------------------
    for p in tier.PORTS:
        line = wait_for("the agent of i%d" % p, lambda: agent(p) == "ready 100%\n" and agent(p), 60)
        print("i%d: agent %r; status %r" % (p, line, status(p)))
        log = tier.sh("journalctl", "-u", tier.unit(p), "-b", "--no-pager", "-o", "cat")
        if "agent check on 127.0.0.1:1%d" % p not in log:
            raise TestFailure("i%d: the journal does not say where its agent check listens" % p)
    wait_for("HAProxy to weigh every server 100", lambda: set(weights().values()) == {100}, 30)

    # --- 2. one instance's slots all taken, not through HAProxy --------------------------------
    busy = tier.PORTS[0]
    slots = int(re.search(r"runs \d+/(\d+)", status(busy)).group(1))
    results = []

    def long_call():
        try:
            sc = fleet.modern_call(busy, tier.TOKEN, "import time; time.sleep(40); print('long')", timeout=400,
                                   timeout_s=300)
            results.append(sc.get("stdout"))
        except fleet.CallError as e:
            results.append(str(e))

    threads = [threading.Thread(target=long_call) for _ in range(slots)]
    for t in threads:
        t.start()
    wait_for("the busy instance's agent to say 1%", lambda: agent(busy) == "ready 1%\n", 120)
    wait_for("HAProxy to weigh it 1", lambda: weights().get(busy) == 1, 30)
    st = status(busy)
    print("busy i%d: weights %r; status %r" % (busy, weights(), st))
    if not st.startswith("runs %d/%d, queued 0; pool off; sessions 0; tenants 1" % (slots, slots)):
        raise TestFailure("i%d's status line with its %d slots taken: %r" % (busy, slots, st))
    for t in threads:
        t.join(400)
    if results != ["long\n"] * slots:
        raise TestFailure("the long calls: %r" % results)
    wait_for("HAProxy to weigh it 100 again", lambda: weights().get(busy) == 100, 30)

    # --- 3. a drain ---------------------------------------------------------------------------
    drained = tier.PORTS[1]
    res = {}

    def in_flight():
        try:
            res["sc"] = fleet.modern_call(drained, tier.TOKEN, "import time; time.sleep(30); print('drained')",
                                          timeout=400, timeout_s=300)
        except fleet.CallError as e:
            res["error"] = str(e)

    t = threading.Thread(target=in_flight)
    t.start()
    wait_for("the call on the instance to drain", lambda: tier.running(drained) >= 1, 120)
    tier.sh("systemctl", "stop", "--no-block", "mcp-execd@%d.socket" % drained, tier.unit(drained), check=True)
    wait_for("its agent to say drain", lambda: agent(drained) == "drain\n", 30)
    wait_for("HAProxy to set it to DRAIN", lambda: (admin_state(drained) or 0) & SRV_ADMF_FDRAIN, 30)
    print("draining i%d: status %r" % (drained, status(drained)))
    if not status(drained).startswith("stopping (SIGTERM): runs 1/"):
        raise TestFailure("the draining instance's status line: %r" % status(drained))
    answered, failures = fleet.mixed_load(tier.LB, tier.TOKEN, 12, 3, sessions=1)
    if failures or answered != 12:
        raise TestFailure("calls through HAProxy during the drain: %d answered, failures %r" % (answered, failures[:3]))
    t.join(400)
    if res.get("sc", {}).get("stdout") != "drained\n":
        raise TestFailure("the call in flight during the drain: %r" % res)
    wait_for("the drained service to stop", lambda: tier.sh("systemctl", "show", "-P", "ActiveState",
                                                            tier.unit(drained)) in ("inactive", "failed"), 120)
    result = tier.sh("systemctl", "show", "-P", "Result", tier.unit(drained))
    if result != "success":
        raise TestFailure("the drained service stopped with %s" % result)
    print("OK: agent answers follow the load, HAProxy's weights follow them, a drain failed no call")
    return 0


if __name__ == "__main__":
    run(main)
