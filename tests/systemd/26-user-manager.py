#!/usr/bin/env python3
"""The user-manager path: the same exec, as an unprivileged user with its own systemd --user,
creates its scope under that user's manager (user@UID.service), with its limits."""
# tier-timeout: 420
import json
import os
import pwd
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
from mcpclient import Daemon, TestFailure, run, stable_daemon_path  # noqa: E402
from scopes import DEADLINE, read, sc, scope_dirs, start_call, wait_reply, wait_until  # noqa: E402

USER = "mcpexecd-t"


def main():
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
        pw = pwd.getpwnam(USER)
    uid = pw.pw_uid
    subprocess.run(["systemctl", "start", "user@%d.service" % uid], check=True, timeout=120)
    runtime = "/run/user/%d" % uid
    if not wait_until(lambda: os.path.exists(runtime + "/systemd/private"), 60):
        raise TestFailure("the user manager did not come up")
    mgr = "/sys/fs/cgroup/user.slice/user-%d.slice/user@%d.service" % (uid, uid)

    def drop():
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(uid)

    env = {"PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": runtime, "HOME": "/",
           "MCP_EXECD": os.environ["MCP_EXECD"], "MCP_EXEC_CGROUP": "systemd", "MCP_EXEC_MEMORY_MAX": "96M"}
    d = Daemon(env=env, verbose=False, deadline=DEADLINE)
    d.env["MCP_EXEC_CGROUP"] = "systemd"  # Daemon() drops it; this test wants it explicit
    d.proc = subprocess.Popen([stable_daemon_path()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=d.env, preexec_fn=drop)
    with d:
        d.initialize()
        # The interpreter probe ran in a scope of its own before the daemon served: wait for it to
        # go, so the scope seen below is the call's.
        if not wait_until(lambda: not scope_dirs(root=mgr), 30):
            raise TestFailure("the probe's scope is still there: %s" % scope_dirs(root=mgr))
        rid = start_call(d, "import time\ntime.sleep(3)\nprint('as user')", timeout_s=30)
        # The scope's directory shows before its limits do: the manager makes the cgroup, whose
        # memory.max reads "max" until the manager writes the unit's limits into it (clean run
        # 58 read "max" in that window). So wait for the limit to read as asked, and say what
        # was read, and what became of the run, when it never does. A run that failed at once
        # leaves only a vanishing directory.
        want = str(96 * 1024 * 1024)
        seen = {}

        def limit():
            for path in scope_dirs(root=mgr):
                try:
                    seen[path] = read(path + "/memory.max")
                except FileNotFoundError:
                    continue
                if seen[path] == want:
                    return path, seen[path]
            return None
        found = wait_until(limit, 30)
        if not found:
            try:
                reply = json.dumps(wait_reply(d, rid, timeout=10))[:2000]
            except Exception as e:  # noqa: BLE001 - a diagnostic only
                reply = "no reply (%s)" % e
            d.kill()
            raise TestFailure("no run scope under %s with memory.max %s (96M) within 30 s; memory.max read: %r "
                              "(scopes now: %s); the call: %s; daemon stderr:\n%s"
                              % (mgr, want, seen, scope_dirs(root=mgr), reply, d.stderr_tail(40)))
        print("scope under the user manager: %s, memory.max %s" % found)
        r = sc(wait_reply(d, rid))
        if r["stdout"] != "as user\n" or r["limits"] != "cgroup":
            raise TestFailure("result %r" % r)


run(main)
