#!/usr/bin/env python3
# tier-timeout: 900
"""The Debian package (debian/, issue 20), as an operator meets it: installed with apt, upgraded,
removed, purged.

The packages are built on the host before the guest boots (tests/vm/build-debs.sh, called by
run-tier.sh into $MCP_EXECD_BUILD/debian-pkg/): v1 is the tree as it is, v2 the same with the
version bumped (so its binary differs). The guest has no network; their dependencies are already
installed, as the guest boots from the host's root, so `apt-get install ./x.deb` resolves offline
(dpkg -i is the fallback, and is said so).

Checks, in order: lintian on v1 (no error, no warning that debian/ does not override); install v1
with apt: the token is created 0600 and the postinst says so, the reserved users 65532 and 65533
exist, the socket is enabled and listens on
127.0.0.1:8080, the service waits for its first connection; a call over HTTP without the token is
401, with it an exec works; `systemd-analyze security` scores at most docs/operations.md's figure; upgrade to
v2 with apt while one call runs and new connections keep arriving: the socket is never restarted,
the call in flight is answered, a Python session opened before keeps its variable (systemd's fd
store), every connection made during the upgrade is answered (200, or
503 "shutting down" for a request the old daemon had accepted when its SIGTERM came; one made
while no daemon accepts waits in the socket's queue and the new daemon answers it), and the new
binary serves; `apt-get
remove` with a run in flight: socket and service stopped, no run scope left, the token kept;
`apt-get purge`: /etc/mcp-execd and /var/cache/mcp-execd gone.

The host's /usr/sbin/policy-rc.d (a container's "exit 101", which would forbid the maintainer
scripts to start anything) is moved aside for the test and put back.
"""
import glob
import http.client
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import TestFailure, run, wait_for  # noqa: E402
from mcpclient import skip as skip_test  # noqa: E402

PKG_DIR = os.path.join(os.environ["MCP_EXECD_BUILD"], "debian-pkg")
PORT = 8080
TOKEN_FILE = "/etc/mcp-execd/auth-token"
POLICY = "/usr/sbin/policy-rc.d"
POLICY_ASIDE = "/usr/sbin/policy-rc.d.tier46"
ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")


def sh(*cmd, check=False, timeout=300):
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout)
    if check and r.returncode != 0:
        raise TestFailure("%s: exit %d: %s %s" % (" ".join(cmd), r.returncode, r.stdout[-800:], r.stderr[-800:]))
    return r


def prop(name, unit="mcp-execd.service"):
    return sh("systemctl", "show", "-P", name, unit).stdout.strip()


def apt(action, *args):
    """apt-get ACTION, offline; for an install of a file, dpkg -i when apt cannot resolve."""
    t0 = time.monotonic()
    # (Not --no-download: apt 2.6 then fails on a local .deb, "Pathname to install is not
    # absolute". Nothing is downloaded anyway: the dependencies are installed.)
    # No sources: apt resolves against what is installed only (offline, and minutes faster under
    # emulation than reading the host's package lists).
    os.makedirs("/run/tier46-no-sources", exist_ok=True)
    r = sh("apt-get", action, "-y", "-q", "-o", "Dpkg::Use-Pty=0", "-o", "Dir::Etc::SourceList=/dev/null",
           "-o", "Dir::Etc::SourceParts=/run/tier46-no-sources",
           "-o", "DPkg::Lock::Timeout=120", *args)
    how = "apt-get " + action
    if r.returncode != 0 and action == "install":
        print("apt-get install failed (exit %d), falling back to dpkg -i:\n%s" % (r.returncode, r.stdout[-600:] + r.stderr[-600:]))
        r = sh("dpkg", "-i", *args)
        how = "dpkg -i"
    if r.returncode != 0:
        raise TestFailure("%s %s: exit %d:\n%s\n%s" % (how, " ".join(args), r.returncode, r.stdout[-1500:], r.stderr[-1500:]))
    print("%s %s: %.1fs (triggers: %s)" % (how, " ".join(os.path.basename(a) for a in args), time.monotonic() - t0,
                                         ", ".join(re.findall(r"Processing triggers for (\S+)", r.stdout)) or "none"))
    return r.stdout + r.stderr


def token():
    return open(TOKEN_FILE).read().strip()


def post(msg, session=None, tok=None, timeout=120):
    """One POST /mcp on a new connection. Returns (status, the JSON-RPC answer or None, session)."""
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": "2025-11-25"}
    if tok:
        h["Authorization"] = "Bearer " + tok
    if session:
        h["Mcp-Session-Id"] = session
    c.request("POST", "/mcp", body=json.dumps(msg), headers=h)
    r = c.getresponse()
    body = r.read().decode(errors="replace")
    sid = r.getheader("Mcp-Session-Id") or session
    ctype = r.getheader("Content-Type") or ""
    c.close()
    if r.status != 200:
        return r.status, {"_body": body}, sid
    if ctype.startswith("text/event-stream"):
        for line in body.splitlines():
            if line.startswith("data:"):
                m = json.loads(line[5:].strip())
                if m.get("id") == msg.get("id"):
                    return 200, m, sid
        raise TestFailure("no answer in the event stream: %r" % body[:500])
    return 200, json.loads(body), sid


def initialize(tok):
    st, r, sid = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "tier-46", "version": "1"}}}, tok=tok)
    if st != 200 or "result" not in (r or {}):
        raise TestFailure("initialize: HTTP %d %r" % (st, r))
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session=sid, tok=tok)
    return r["result"], sid


def exec_code(tok, code, **args):
    _, sid = initialize(tok)
    args["code"] = code
    st, r, _ = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "exec", "arguments": args}},
                    session=sid, tok=tok, timeout=300)
    if st != 200 or "result" not in (r or {}):
        raise TestFailure("tools/call exec: HTTP %d %r" % (st, r))
    return r["result"]


def metrics(tok):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    c.request("GET", "/metrics", headers={"Authorization": "Bearer " + tok})
    r = c.getresponse()
    body = r.read().decode(errors="replace")
    c.close()
    return r.status, body


def run_scopes():
    out = sh("systemctl", "list-units", "--all", "--plain", "--no-legend", "mcp-execd-run-*").stdout
    return [l.split()[0] for l in out.splitlines() if l.strip()]


def listening():
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", PORT))
        return True
    except OSError:
        return False
    finally:
        s.close()


class InFlight(threading.Thread):
    """A call that sleeps longer than an apt-get run takes under emulation (1-3 minutes), so that it
    is still running when the package's scripts stop the daemon; it must then be answered with the
    tool error saying the server is shutting down (a result would mean it was not in flight)."""

    def __init__(self, tok):
        super().__init__()
        self.tok = tok
        self.result = self.error = None

    def run(self):
        try:
            self.result = exec_code(self.tok, "import time\nprint('started', flush=True)\ntime.sleep(290)\n", timeout_s=300)
        except Exception as e:  # noqa: BLE001 (reported by the caller)
            self.error = repr(e)

    def wait_running(self):
        wait_for("the in-flight call's run scope", lambda: run_scopes(), 90)
        time.sleep(1)

    def check_answered(self, when):
        if self.error or not self.result:
            raise TestFailure("the call in flight at %s got no answer: %s" % (when, self.error))
        text = json.dumps(self.result)
        if not self.result.get("isError") or "shutting down" not in text:
            raise TestFailure("the call in flight at %s was not answered with the shutting-down error "
                              "(was it still running?): %s" % (when, text[:400]))
        print("%s: the call in flight was answered: %s" % (when, self.result["content"][0]["text"][:160]))


def check_lintian():
    rc = open(os.path.join(PKG_DIR, "lintian.rc")).read().strip()
    tags = open(os.path.join(PKG_DIR, "lintian.txt")).read().splitlines()
    bad = [t for t in tags if t.startswith(("E:", "W:"))]
    print("lintian --pedantic (exit %s): %d tag(s)%s" % (rc, len(tags), "".join("\n  " + t for t in tags)))
    if bad or rc != "0":
        raise TestFailure("lintian reports errors or warnings not overridden in debian/: %r" % bad)


def documented_score():
    text = open(os.path.join(os.environ["MCP_EXECD_SRC"], "docs", "operations.md")).read()
    m = re.search(r"`systemd-analyze security mcp-execd\.service` scores ([0-9.]+)", text)
    if not m:
        raise TestFailure("docs/operations.md does not state the unit's systemd-analyze security score")
    return float(m.group(1))


def main():
    skip = os.path.join(PKG_DIR, "skip")
    if os.path.exists(skip):
        return skip_test("the packages were not built on the host: %s" % open(skip).read().strip())
    v1 = glob.glob(os.path.join(PKG_DIR, "v1", "mcp-execd_*.deb"))
    v2 = glob.glob(os.path.join(PKG_DIR, "v2", "mcp-execd_*.deb"))
    if len(v1) != 1 or len(v2) != 1:
        raise TestFailure("no packages in %s (tests/vm/build-debs.sh, run by run-tier.sh; see its build.log): %r %r"
                          % (PKG_DIR, v1, v2))
    check_lintian()
    if sh("dpkg-query", "-W", "mcp-execd").returncode == 0:
        raise TestFailure("mcp-execd is already installed on this machine: not touching it")
    if listening():
        raise TestFailure("something already listens on 127.0.0.1:%d" % PORT)
    if os.path.exists(POLICY):
        os.rename(POLICY, POLICY_ASIDE)
    # What an earlier test of the tier left (43 and 47 install the units by hand, with a token):
    # the package must find a machine without its configuration, and gets it back afterwards.
    aside = {}
    for p in ("/etc/mcp-execd", "/var/cache/mcp-execd"):
        if os.path.exists(p):
            aside[p] = "/run/tier46-aside-" + os.path.basename(os.path.dirname(p))
            shutil.rmtree(aside[p], ignore_errors=True)
            shutil.move(p, aside[p])  # /run is another file system
    try:
        return scenario(v1[0], v2[0])
    finally:
        print(sh("journalctl", "-u", "mcp-execd.service", "-u", "mcp-execd.socket", "-b", "--no-pager",
                 "-n", "40", "-o", "short-monotonic").stdout)
        if sh("dpkg-query", "-W", "-f", "${Status}", "mcp-execd").stdout.strip() not in ("", "unknown ok not-installed"):
            sh("dpkg", "--purge", "mcp-execd")
        shutil.rmtree("/etc/mcp-execd", ignore_errors=True)
        shutil.rmtree("/var/cache/mcp-execd", ignore_errors=True)
        shutil.rmtree("/run/tier46-no-sources", ignore_errors=True)
        if os.path.exists(POLICY_ASIDE):
            os.rename(POLICY_ASIDE, POLICY)
        for p, q in aside.items():
            shutil.rmtree(p, ignore_errors=True)
            shutil.move(q, p)
        sh("systemctl", "reset-failed", "mcp-execd.service", "mcp-execd.socket")
        sh("systemctl", "daemon-reload")


def scenario(v1, v2):
    # --- install ------------------------------------------------------------------------------
    out = apt("install", v1)
    if "created the HTTP token %s" % TOKEN_FILE not in out:
        raise TestFailure("the postinst did not say it created the token:\n%s" % out[-1500:])
    st = os.stat(TOKEN_FILE)
    if st.st_mode & 0o777 != 0o600 or st.st_uid != 0 or os.stat("/etc/mcp-execd").st_mode & 0o777 != 0o700:
        raise TestFailure("token mode %o, directory mode %o" % (st.st_mode & 0o777, os.stat("/etc/mcp-execd").st_mode & 0o777))
    tok = token()
    if not re.fullmatch(r"[0-9a-f]{64}", tok):
        raise TestFailure("the token is not 32 random bytes in hex: %d characters" % len(tok))
    print("install: token created (0600, 64 hex digits), said so: %r" %
          [l for l in out.splitlines() if "mcp-execd:" in l][:1])
    # The reserved users (issue 29.5): made by the postinst from the package's sysusers.d file.
    for name, uid in (("mcp-execd-run", 65532), ("mcp-execd-install", 65533)):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            raise TestFailure("after install there is no user %s (sysusers.d/mcp-execd.conf)" % name)
        if pw.pw_uid != uid or pw.pw_shell != "/usr/sbin/nologin":
            raise TestFailure("user %s: uid %d, shell %s (expected %d, nologin)" % (name, pw.pw_uid, pw.pw_shell, uid))
    print("install: users mcp-execd-run (65532) and mcp-execd-install (65533) made")
    for unit, want in [("mcp-execd.socket", "enabled"), ("mcp-execd.socket", "active")]:
        verb = "is-enabled" if want == "enabled" else "is-active"
        got = sh("systemctl", verb, unit).stdout.strip()
        if got != want:
            raise TestFailure("after install, %s %s: %s (expected %s)" % (verb, unit, got, want))
    if prop("ActiveState") != "inactive":
        raise TestFailure("the service is %s before any connection (it is socket-activated)" % prop("ActiveState"))
    if not listening():
        raise TestFailure("nothing listens on 127.0.0.1:%d after install" % PORT)
    print("install: mcp-execd.socket enabled and listening on 127.0.0.1:%d; service inactive" % PORT)

    # --- a call over HTTP ---------------------------------------------------------------------
    st, _, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "tier-46", "version": "1"}}})
    if st != 401:
        raise TestFailure("initialize without the token: HTTP %d (expected 401)" % st)
    res = exec_code(tok, "print(6 * 7)\n")
    sc = res.get("structuredContent") or {}
    if sc.get("stdout") != "42\n" or sc.get("exit_code") != 0 or sc.get("limits") != "cgroup":
        raise TestFailure("exec over HTTP: %r" % res)
    print("HTTP: 401 without the token; exec with it: %r (limits %s)" % (sc["stdout"], sc["limits"]))

    # --- hardening as installed -----------------------------------------------------------------
    limit = documented_score()
    sec = sh("systemd-analyze", "security", "--no-pager", "mcp-execd.service").stdout
    m = re.search(r"Overall exposure level for mcp-execd\.service: ([0-9.]+)", sec)
    if not m:
        raise TestFailure("systemd-analyze security printed no score:\n%s" % sec[-500:])
    if float(m.group(1)) > limit:
        raise TestFailure("systemd-analyze security: %s, docs/operations.md says %s" % (m.group(1), limit))
    print("systemd-analyze security mcp-execd.service: %s (docs/operations.md: %s)" % (m.group(1), limit))
    # The daemon's own cgroup is bounded (issue 29 #3): with OOMScoreAdjust=-500 an unbounded daemon
    # would make the host's other processes die first.
    if prop("MemoryMax") != str(1 << 30) or prop("OOMScoreAdjust") != "-500":
        raise TestFailure("the service's MemoryMax=%s, OOMScoreAdjust=%s (expected 1G, -500)"
                          % (prop("MemoryMax"), prop("OOMScoreAdjust")))

    # --- a Python session, kept across the upgrade's restart (issue 33.3) -------------------------
    _, sid = initialize(tok)
    st, r, _ = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "session_open", "arguments": {}}},
                    session=sid, tok=tok, timeout=300)
    handle = ((r or {}).get("result", {}).get("structuredContent") or {}).get("session")
    if st != 200 or not handle:
        raise TestFailure("session_open: HTTP %d %r" % (st, r))
    sc = exec_code(tok, "kept = 'set by v1'\nprint('ok')\n", session=handle).get("structuredContent") or {}
    if sc.get("stdout") != "ok\n":
        raise TestFailure("the session's first call: %r" % sc)

    # --- upgrade with a call in flight and connections arriving ---------------------------------
    sock_since = prop("ActiveEnterTimestampMonotonic", "mcp-execd.socket")
    old_pid = prop("MainPID")
    flight = InFlight(tok)
    flight.start()
    flight.wait_running()
    stop = threading.Event()
    pings = []  # (started monotonic, status or error)

    def pinger():
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                st, r, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                 "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                            "clientInfo": {"name": "tier-46-ping", "version": "1"}}}, tok=tok)
                if st == 503 and "shutting down" in r.get("_body", ""):
                    # Accepted by the old daemon just before its SIGTERM: answered "503 shutting
                    # down" (mcp/http-check.c), an answer the client retries on; not lost.
                    pings.append((t0, 503))
                else:
                    pings.append((t0, st if "result" in (r or {}) else "HTTP %d %r" % (st, r)))
            except Exception as e:  # noqa: BLE001
                pings.append((t0, repr(e)))
            time.sleep(0.3)
    pt = threading.Thread(target=pinger)
    pt.start()
    queued = {}

    def queued_call():
        """Connects while the old daemon is stopping: no daemon accepts, the socket queues it."""
        wait_for("the old daemon stopping", lambda: prop("ActiveState") in ("deactivating", "inactive", "activating")
                 or prop("MainPID") != old_pid, 240)
        queued["state"] = prop("ActiveState")
        try:
            queued["status"] = initialize(tok)[0]["serverInfo"]
        except Exception as e:  # noqa: BLE001
            queued["error"] = repr(e)
    qt = threading.Thread(target=queued_call)
    qt.start()
    out = apt("install", v2)
    qt.join(240)
    flight.join(240)
    time.sleep(2)
    stop.set()
    pt.join(120)
    new_pid = prop("MainPID")
    print("upgrade: service %s -> %s; %d connections during it; the queued one (made while %s): %r"
          % (old_pid, new_pid, len(pings), queued.get("state"), queued.get("status") or queued.get("error")))
    flight.check_answered("upgrade")
    failed = [p for p in pings if p[1] not in (200, 503)]
    if failed or not pings:
        raise TestFailure("connections during the upgrade not answered: %r of %d" % (failed, len(pings)))
    print("upgrade: %d connections answered 200, %d answered 503 'shutting down' by the old daemon as it stopped"
          % (sum(p[1] == 200 for p in pings), sum(p[1] == 503 for p in pings)))
    if "error" in queued or "status" not in queued:
        raise TestFailure("the connection queued on the socket during the restart: %r" % queued)
    if prop("ActiveEnterTimestampMonotonic", "mcp-execd.socket") != sock_since:
        raise TestFailure("mcp-execd.socket was restarted by the upgrade (its queue would be lost)")
    if new_pid in ("0", old_pid) or prop("ActiveState") != "active":
        raise TestFailure("the service was not restarted by the upgrade: MainPID %s -> %s, %s"
                          % (old_pid, new_pid, prop("ActiveState")))
    want = re.search(r"mcp-execd_([^_]+)_", os.path.basename(v2)).group(1)
    st, body = metrics(tok)
    if st != 200 or ('version="%s"' % want) not in body:
        raise TestFailure("after the upgrade /metrics does not show version %s: HTTP %d %s" % (
            want, st, [l for l in body.splitlines() if "build_info" in l]))
    if queued["status"].get("version") != want:
        raise TestFailure("the queued connection was answered by version %r, expected %s" % (queued["status"], want))
    res = exec_code(tok, "print('after upgrade')\n")
    if (res.get("structuredContent") or {}).get("stdout") != "after upgrade\n":
        raise TestFailure("exec after the upgrade: %r" % res)
    sc = exec_code(tok, "print(kept)\n", session=handle).get("structuredContent") or {}
    if sc.get("stdout") != "set by v1\n":
        raise TestFailure("the Python session opened under v1, after the upgrade: %r" % sc)
    print("upgrade: the Python session opened under v1 answers under %s with its variable: %r" % (want, sc["stdout"]))
    print("upgrade: socket kept (never restarted), every connection answered, %s serves" % want)

    # --- the token on a later configure (issue 29 #4) -------------------------------------------
    # A token that is there is kept, and made root-only again whoever loosened it; one that is
    # empty or blank (the daemon refuses it: never "no token") is replaced, and said so. The
    # maintainer script is run as dpkg runs it on a reconfigure: `postinst configure <version>`.
    postinst = "/var/lib/dpkg/info/mcp-execd.postinst"
    os.chmod(TOKEN_FILE, 0o644)
    os.chmod("/etc/mcp-execd", 0o755)
    r = sh(postinst, "configure", want)
    st = os.stat(TOKEN_FILE)
    if r.returncode != 0 or token() != tok or st.st_mode & 0o777 != 0o600 or \
            os.stat("/etc/mcp-execd").st_mode & 0o777 != 0o700:
        raise TestFailure("postinst configure with a loosened token: exit %d, token kept %s, modes %o/%o\n%s"
                          % (r.returncode, token() == tok, st.st_mode & 0o777,
                             os.stat("/etc/mcp-execd").st_mode & 0o777, r.stdout[-800:] + r.stderr[-800:]))
    with open(TOKEN_FILE, "w") as f:
        f.write(" \n")
    r = sh(postinst, "configure", want)
    new_tok = token()
    st = os.stat(TOKEN_FILE)
    if r.returncode != 0 or not re.fullmatch(r"[0-9a-f]{64}", new_tok) or st.st_mode & 0o777 != 0o600 \
            or "is empty or only white space" not in r.stdout:
        raise TestFailure("postinst configure with a blank token: exit %d, token %d characters, mode %o\n%s"
                          % (r.returncode, len(new_tok), st.st_mode & 0o777, r.stdout[-800:] + r.stderr[-800:]))
    tok = new_tok
    sh("systemctl", "restart", "mcp-execd.service")  # the credential is read at start
    res = exec_code(tok, "print('new token')\n")
    if (res.get("structuredContent") or {}).get("stdout") != "new token\n":
        raise TestFailure("exec with the replaced token: %r" % res)
    print("configure: a loosened token kept and made 0600/0700 again; a blank one replaced (said so), and it serves")

    # --- remove with a run in flight ------------------------------------------------------------
    with open("/var/cache/mcp-execd/tier46-env-marker", "w") as f:   # as a kept environment would be
        f.write("x\n")
    flight = InFlight(tok)
    flight.start()
    flight.wait_running()
    apt("remove", "mcp-execd")
    flight.join(120)
    flight.check_answered("remove")
    for unit in ("mcp-execd.socket", "mcp-execd.service"):
        state = sh("systemctl", "is-active", unit).stdout.strip()
        if state not in ("inactive", "unknown"):   # "unknown" once the unit file is gone
            raise TestFailure("after apt-get remove, %s is %s" % (unit, state))
    left = wait_for("no run scope", lambda: not run_scopes() and ["none"], 30) and run_scopes()
    if left:
        raise TestFailure("run scopes left after apt-get remove: %r" % left)
    if listening():
        raise TestFailure("127.0.0.1:%d still listens after apt-get remove" % PORT)
    if os.path.exists("/usr/bin/mcp-execd") or not os.path.exists(TOKEN_FILE):
        raise TestFailure("after remove: binary %s, token %s (expected gone, kept)"
                          % (os.path.exists("/usr/bin/mcp-execd"), os.path.exists(TOKEN_FILE)))
    print("remove: socket and service stopped, no run scope, nothing listens, configuration kept")

    # --- purge ----------------------------------------------------------------------------------
    apt("purge", "mcp-execd")
    for p in ("/etc/mcp-execd", "/var/cache/mcp-execd"):
        if os.path.exists(p):
            raise TestFailure("%s is still there after apt-get purge" % p)
    if sh("dpkg-query", "-W", "mcp-execd").returncode == 0 and \
            "not-installed" not in sh("dpkg-query", "-W", "-f", "${Status}", "mcp-execd").stdout:
        raise TestFailure("mcp-execd still known to dpkg after purge")
    print("purge: /etc/mcp-execd and /var/cache/mcp-execd removed")
    print("OK: lintian, install, HTTP with the token, security score, upgrade, remove, purge")
    return 0


run(main)
