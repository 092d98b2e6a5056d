#!/usr/bin/env python3
"""The container image (deploy/image/build.sh, docs/container.md) run by podman and crun from Debian.

The host built it twice beside the guest (tests/vm/build-image.sh): the two archives must be the
same bytes, with the same digest. Then podman loads it and runs it with the options the doc gives,
one container per scenario:
- stdio, `podman run -i --rm`: initialize, an exec, a figure returned as an image, a session that
  keeps a variable; and the escape suite's key probes, inside the container: no network, none of
  the container's own files or environment, nothing written outside the run's /tmp, no ptrace, no
  namespaces, no mounts, no capabilities;
- HTTP, the token from a podman secret: refused without it, an exec with it, what the image holds
  (no baked token, no apt, no documentation), and `podman stop` drains and ends it cleanly.
"""
# tier-timeout: 1500
# tier-needs: container-image
import json
import os
import secrets
import sys
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
import container  # noqa: E402
import httpclient  # noqa: E402
from mcpclient import Daemon, TestFailure, expect, run, wait_for  # noqa: E402

PORT = 18080
MARKER = "tier70-" + secrets.token_hex(8)

# One run, every probe: a JSON object of what the run saw (the escape suite's verdicts, in
# tests/blackbox/escape.test.mjs, one by one there).
PROBES = r'''
import ctypes, errno, json, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def sc(*a):
    return "OK" if libc.syscall(*a) == 0 else errno.errorcode.get(ctypes.get_errno(), "?")
def err(f):
    try:
        f(); return "OK"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
out = {}
out["tcp"] = err(lambda: socket.create_connection(("127.0.0.1", %(port)d), timeout=3))
out["netdev"] = [l.split(":")[0].strip() for l in open("/proc/self/net/dev").read().splitlines()[2:]]
out["resolv"] = os.path.exists("/etc/resolv.conf")
out["marker"] = any(%(marker)r in open(f"/proc/{p}/environ", errors="replace").read()
                    for p in os.listdir("/proc") if p.isdigit() and os.access(f"/proc/{p}/environ", os.R_OK))
out["env"] = sorted(k for k in os.environ if k.startswith(("MCP_", "TIER", "CREDENTIALS")))
out["secrets"] = os.path.exists("/run/secrets") or os.path.exists("/etc/mcp-execd")
out["write_usr"] = err(lambda: open("/usr/lib/tier70", "w"))
out["write_etc"] = err(lambda: open("/etc/tier70", "w"))
out["write_tmp"] = err(lambda: open("/tmp/tier70", "w").write("x"))
pid = os.fork()
if pid == 0:
    os.pause() if hasattr(os, "pause") else None
    os._exit(0)
out["ptrace_pid1"] = sc(101, 16, 1, 0, 0)
out["ptrace_sibling"] = sc(101, 16, pid, 0, 0)
os.kill(pid, 9); os.waitpid(pid, 0)
out["unshare_user"] = sc(272, 0x10000000)
out["unshare_net"] = sc(272, 0x40000000)
out["mount"] = "OK" if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0 else errno.errorcode.get(ctypes.get_errno())
out["status"] = {l.split(":")[0]: l.split()[1] for l in open("/proc/self/status")
                 if l.startswith(("Cap", "NoNewPrivs", "Seccomp:", "Uid"))}
out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(json.dumps(out))
'''

FIGURE = '''
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt, numpy as np, pandas as pd, yaml, jinja2, PIL, packaging
s = pd.Series(np.arange(5) ** 2)
plt.plot(s.index, s.values)
plt.savefig("outputs/squares.png")
print(int(s.sum()))
'''


def reproducible():
    a, b, da, db, same, sa, sb = container.wait_builds()
    print("builds: %s in %ss, %s in %ss" % (da, sa, db, sb))
    expect("the two builds' digests", db, da)
    expect("the two builds' archives (cmp)", same, "same")
    print("reproducible: %s, %d bytes" % (da, os.path.getsize(a)))


def check_probes(v):
    expect("TCP to the guest's loopback", v["tcp"], "EAFNOSUPPORT")
    expect("the run's network devices", v["netdev"], ["lo"])
    expect("/etc/resolv.conf in the run", v["resolv"], False)
    expect("the container's environment marker seen in the run", v["marker"], False)
    expect("daemon variables in the run's environment", v["env"], [])
    expect("the container's secrets or token visible", v["secrets"], False)
    for k in ("write_usr", "write_etc"):
        if v[k] not in ("EROFS", "EACCES", "ENOENT"):
            raise TestFailure("%s: %r (a write outside the run's /tmp succeeded?)" % (k, v[k]))
    expect("writing the run's /tmp", v["write_tmp"], "OK")
    expect("PTRACE_ATTACH to PID 1", v["ptrace_pid1"], "EPERM")
    expect("PTRACE_ATTACH to a sibling process", v["ptrace_sibling"], "EPERM")
    expect("unshare(CLONE_NEWUSER)", v["unshare_user"], "EPERM")
    expect("unshare(CLONE_NEWNET)", v["unshare_net"], "EPERM")
    expect("mount tmpfs", v["mount"], "EPERM")
    st = v["status"]
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        expect(cap, st[cap], "0000000000000000")
    expect("NoNewPrivs", st["NoNewPrivs"], "1")
    expect("Seccomp", st["Seccomp"], "2")
    expect("uid", st["Uid"], "65532")
    if max(v["pids"]) > 50:
        raise TestFailure("the run sees pids %r: not its own PID namespace?" % v["pids"])


def stdio(ref):
    # The README's command as written, with a name (to remove it if the test fails), the marker
    # the probes look for, and the image as loaded here.
    readme = container.readme_stdio_command()
    print("== stdio: the README's command:", " ".join(readme))
    t0 = time.monotonic()
    d = Daemon(deadline=240)
    d.proc = container.popen(*readme[:-1], "--name", "tier70-stdio", "-e", "TIER_MARKER=" + MARKER, ref,
                             stdin=container.subprocess.PIPE, stdout=container.subprocess.PIPE,
                             stderr=container.subprocess.PIPE)
    with d:
        try:
            stdio_calls(d, t0)
        except TestFailure:
            d.kill()
            print("the container's stderr:\n" + d.stderr_tail(40))
            raise
        finally:
            container.podman("rm", "-f", "tier70-stdio", check=False)
    print("stdio scenario: %.1fs" % (time.monotonic() - t0))


def stdio_calls(d, t0):
    d.initialize()
    print("initialized in %.1fs" % (time.monotonic() - t0))
    r = d.exec_code("print(6*7)", timeout_s=120)
    sc = r["structuredContent"]
    expect("exec stdout", sc["stdout"], "42\n")
    print("limits:", sc.get("limits"))
    r = d.exec_code(FIGURE, timeout_s=240)
    expect("figure run stdout", r["structuredContent"]["stdout"], "30\n")
    # The saved file, and the open figure the daemon captures too (docs/tools.md).
    images = [c for c in r["content"] if c.get("type") == "image"]
    if not images or any(c.get("mimeType") != "image/png" for c in images):
        raise TestFailure("the figure is not returned as PNG images: %r"
                          % [{k: c.get(k) for k in ("type", "mimeType")} for c in r["content"]])
    o = d.call("tools/call", {"name": "session_open", "arguments": {}})
    sid = o["structuredContent"]["session"]
    d.exec_code("x = 41", session=sid, timeout_s=120)
    r = d.exec_code("print(x + 1)", session=sid, timeout_s=120)
    expect("the session kept x", r["structuredContent"]["stdout"], "42\n")
    d.call("tools/call", {"name": "session_close", "arguments": {"session": sid}})
    r = d.exec_code(PROBES % {"port": PORT, "marker": MARKER}, timeout_s=120)
    sc = r["structuredContent"]
    if sc["exit_code"] != 0:
        raise TestFailure("the probes' run failed: %r" % sc)
    v = json.loads(sc["stdout"])
    print("probes:", v)
    check_probes(v)
    rc = d.close_stdin_and_wait()
    expect("the container's exit status after stdin closed", rc, 0)


def http(ref):
    print("== HTTP: the token from a podman secret")
    t0 = time.monotonic()
    token = secrets.token_hex(16)
    container.podman("secret", "rm", "tier70-token", check=False)
    container.podman("secret", "create", "tier70-token", "-", input=token + "\n")
    container.podman("rm", "-f", "tier70-http", check=False)
    try:
        # --network host: the guest has no network device, so no bridge for -p; the daemon's runs
        # have their own network namespaces whatever the container's.
        container.podman("run", "-d", "--name", "tier70-http", "--network", "host", *container.RUN_OPTIONS,
                         "--secret", "tier70-token,target=auth-token,mode=0400",
                         "-e", "CREDENTIALS_DIRECTORY=/run/secrets", "-e", "MCP_EXEC_TRANSPORT=http",
                         "-e", "MCP_EXEC_ADDR=127.0.0.1:%d" % PORT, "-e", "MCP_EXEC_DRAIN_S=30", ref)
        wait_for("/health to answer 200", lambda: container.health("127.0.0.1", PORT, token) == 200, 240)
        c = container_http()
        c.request("POST", "/mcp", body="{}", headers={"Content-Type": "application/json"})
        expect("a call without the token", c.getresponse().status, 401)
        cl = httpclient.Client(token, PORT, name="tier-70")
        cl.initialize()
        r = cl.exec_code("print(6*7)", timeout_s=120)
        expect("exec over HTTP", r["structuredContent"]["stdout"], "42\n")
        # What the image holds: no token of its own, no apt, no manuals; the reserved users.
        p = container.podman("exec", "tier70-http", "/bin/sh", "-c",
                             "test ! -e /etc/mcp-execd/auth-token && echo no-token; "
                             "command -v apt-get || echo no-apt; ls /usr/share/man 2>/dev/null | wc -l; "
                             "getent passwd mcp-execd-run | cut -d: -f3")
        expect("inside the image", p.stdout.split(), ["no-token", "no-apt", "0", "65532"])
        t1 = time.monotonic()
        container.podman("stop", "--time", "60", "tier70-http", timeout=120)
        st = container.podman("inspect", "--format", "{{.State.ExitCode}}", "tier70-http").stdout.strip()
        expect("the daemon's exit status after podman stop (SIGTERM, drain)", st, "0")
        print("stopped in %.1fs" % (time.monotonic() - t1))
    except TestFailure:
        print("the daemon's log:\n" + container.podman("logs", "--tail", "40", "tier70-http", check=False).stderr)
        raise
    finally:
        container.podman("rm", "-f", "tier70-http", check=False)
        container.podman("secret", "rm", "tier70-token", check=False)
    print("HTTP scenario: %.1fs" % (time.monotonic() - t0))


def container_http():
    import http.client
    return http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)


def main():
    reproducible()
    t0 = time.monotonic()
    ref = container.image()
    print("image ready in %.1fs" % (time.monotonic() - t0))
    stdio(ref)
    http(ref)


run(main)
