#!/usr/bin/python3
"""What any namespace sandbox adds to Python's start on this machine (issue 16.5's floor).

    bench/floor.py [--n 60] [--env K=V ...] <path to mcp-execd>

Interleaves, --n times each, with 20 ms of quiet after each measurement:
  - bare `python3 -I -c pass`, spawned from this process (the baseline of rtt.py);
  - the same command inside bubblewrap (`bwrap`, Debian's `bubblewrap`, a bench-only tool) with the
    isolation of a cold mcp-execd run: new user, PID, network, IPC, UTS, mount and cgroup
    namespaces, uid/gid 65532, a new session, every capability dropped, a tmpfs root with /usr and
    the Python files of /etc bound read-only, /tmp a tmpfs, minimal /dev, a fresh /proc;
  - the same command inside bwrap with only a user namespace (what any sandbox pays at least);
  - an `exec` of `print(1)` through mcp-execd over stdio, every call cold (MCP_EXEC_WARM_POOL=0).
Prints the four medians and their ratios to bare. bwrap is a spawned command like the bare baseline,
so its ratio is what the kernel's namespaces, mounts and one more process cost, with no JSON-RPC.
"""
import os
import statistics
import subprocess
import time

from rtt import Daemon, bare, bench_args, env_of

ETC = ["/etc/ld.so.cache", "/etc/alternatives", "/etc/fonts", "/etc/matplotlibrc", "/etc/mime.types",
       "/etc/python3", "/etc/python3.11", "/etc/python3.12", "/etc/python3.13"]


def bwrap_full(python):
    cmd = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup", "--uid", "65532", "--gid", "65532", "--hostname", "sandbox",
           "--new-session", "--die-with-parent", "--cap-drop", "ALL",
           "--ro-bind", "/usr", "/usr", "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc"]
    for link in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink("/" + link):
            cmd += ["--symlink", os.readlink("/" + link), "/" + link]
    for p in ETC:
        if os.path.exists(p):
            cmd += ["--ro-bind", p, p]
    cmd += ["--remount-ro", "/", "--chdir", "/tmp", python, "-I", "-c", "pass"]
    return cmd


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t


def main():
    a = bench_args(60, python=True).parse_args()
    env = env_of(a.env, {"MCP_EXEC_WARM_POOL": "0"})
    full = bwrap_full(a.python)
    user = ["bwrap", "--unshare-user", "--bind", "/", "/", a.python, "-I", "-c", "pass"]
    d = Daemon(a.binary, env)
    time.sleep(0.5)
    for _ in range(5):
        d.call()
        timed(full)
        timed(user)
    res = {"bare": [], "bwrap, user namespace only": [], "bwrap, a cold run's isolation": [],
           "mcp-execd exec print(1), cold": []}
    for _ in range(a.n):
        for k, f in (("bare", lambda: bare(a.python)), ("bwrap, user namespace only", lambda: timed(user)),
                     ("bwrap, a cold run's isolation", lambda: timed(full)),
                     ("mcp-execd exec print(1), cold", lambda: d.call()[0])):
            res[k].append(f())
            time.sleep(0.02)
    d.close()
    base = statistics.median(res["bare"])
    print(f"{a.binary}, env {env}, n={a.n}, load {os.getloadavg()[0]:.2f}")
    for k, v in res.items():
        m = statistics.median(v)
        print(f"  {k:<32} median {m * 1000:7.2f} ms   ratio {m / base:.3f}   added {(m - base) * 1000:6.2f} ms")


if __name__ == "__main__":
    main()
