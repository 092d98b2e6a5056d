"""A small MCP client for the systemd tier's tests (Debian's python3 stdlib only).

    sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
    from mcpclient import Daemon, TestFailure

    with Daemon() as d:              # spawns $MCP_EXECD, stdio pipes
        d.initialize()               # initialize + notifications/initialized
        r = d.exec_code("print(42)") # tools/call exec -> result.structuredContent
        ...

Every reply has a deadline (DEADLINE seconds; software emulation is slow), so a stuck daemon
fails the test instead of hanging it. Failures raise TestFailure; run() turns them into exit 1
with the daemon's stderr tail.
"""
import json
import os
import select
import subprocess
import sys
import time

DEADLINE = 30.0
PROTOCOL_VERSION = "2025-11-25"


class TestFailure(Exception):
    pass


def daemon_path():
    exe = os.environ.get("MCP_EXECD", "")
    if not exe or not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        raise TestFailure("MCP_EXECD=%r is not an executable file (is the daemon built?)" % exe)
    return exe


def stable_daemon_path():
    """A copy of the daemon under /run, for processes that may not see the build directory: a
    service with PrivateTmp=yes when the checkout is below /tmp (CI may clone anywhere), or an
    unprivileged user when the build directory is a share only root may traverse."""
    src = daemon_path()
    d = "/run/mcp-execd-tier"
    dst = os.path.join(d, "mcp-execd")
    os.makedirs(d, mode=0o755, exist_ok=True)
    os.chmod(d, 0o755)
    with open(src, "rb") as f:
        data = f.read()
    tmp = dst + ".new"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o755)
    os.rename(tmp, dst)
    return dst


class Daemon:
    def __init__(self, args=(), env=None, deadline=DEADLINE, verbose=True, wrap=()):
        self.args = list(args)
        self.wrap = list(wrap)  # a command line that ends by exec'ing the daemon given as its last word
        self.env = dict(os.environ if env is None else env)
        self.env.pop("MCP_EXEC_CGROUP", None)
        self.deadline = deadline
        self.verbose = verbose
        self.proc = None
        self.buf = b""
        self.next_id = 1
        self.notifications = []
        self.replies = {}  # replies read while waiting for another id

    def __enter__(self):
        if self.proc is not None:  # a test that started the daemon its own way (another user, a unit)
            return self
        self.proc = subprocess.Popen(self.wrap + [daemon_path()] + self.args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=self.env)
        return self

    def __exit__(self, *exc):
        self.kill()
        return False

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stderr_tail(self, n=20):
        if not self.proc or self.proc.poll() is None:
            return ""
        try:
            err = self.proc.stderr.read() or b""
        except (OSError, ValueError):
            return ""
        return "\n".join(err.decode(errors="replace").splitlines()[-n:])

    def send(self, msg):
        line = json.dumps(msg) + "\n"
        if self.verbose:
            print(">>", line.strip()[:2000])
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()

    def _readline(self, until):
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = until - time.monotonic()
            if left <= 0:
                raise TestFailure("no reply within %.0fs" % self.deadline)
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    time.sleep(0.2)
                    raise TestFailure("the daemon closed stdout (exit %s)" % self.proc.poll())
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def reply(self, rid, until):
        """The reply to request rid. Replies come in any order when calls run concurrently: one to
        another id is kept for its own reply() call; a message without an id is a notification."""
        while rid not in self.replies:
            line = self._readline(until)
            if not line.strip():
                continue
            if self.verbose:
                print("<<", line.decode(errors="replace")[:2000])
            try:
                msg = json.loads(line)
            except ValueError:
                raise TestFailure("not JSON on stdout: %r" % line[:200])
            if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                raise TestFailure("not JSON-RPC 2.0: %r" % line[:200])
            if "id" in msg and ("result" in msg or "error" in msg):
                self.replies[msg["id"]] = msg
            else:
                self.notifications.append(msg)
        return self.replies.pop(rid)

    def collect(self, ids, timeout):
        """The replies to ids, by id, in whatever order they come."""
        until = time.monotonic() + timeout
        return {rid: self.reply(rid, until) for rid in ids}

    def request(self, method, params=None):
        """Sends a request; returns the whole reply (result or error)."""
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.reply(rid, time.monotonic() + self.deadline)

    def call(self, method, params=None):
        """Sends a request; returns its result, or fails on an error reply."""
        reply = self.request(method, params)
        if "error" in reply:
            raise TestFailure("%s answered an error: %s" % (method, reply["error"]))
        if "result" not in reply:
            raise TestFailure("%s: reply without result" % method)
        return reply["result"]

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self):
        res = self.call("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                       "clientInfo": {"name": "t", "version": "1"}})
        for k in ("protocolVersion", "serverInfo", "capabilities"):
            if k not in res:
                raise TestFailure("initialize: no %s in %r" % (k, res))
        self.notify("notifications/initialized")
        return res

    def exec_code(self, code, **arguments):
        """tools/call exec; returns the result (structuredContent is result["structuredContent"])."""
        arguments["code"] = code
        return self.call("tools/call", {"name": "exec", "arguments": arguments})

    def close_stdin_and_wait(self):
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=self.deadline)
        except subprocess.TimeoutExpired:
            raise TestFailure("the daemon did not exit within %.0fs of stdin closing"
                              % self.deadline)


def expect(what, got, want):
    """TestFailure naming what, got and want unless got == want."""
    if got != want:
        raise TestFailure("%s: %r, expected %r" % (what, got, want))


def wait_for(what, cond, timeout):
    """cond()'s first true value, polled every 0.5 s; TestFailure naming what after timeout s."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        v = cond()
        if v:
            return v
        time.sleep(0.5)
    raise TestFailure("timed out after %ds waiting for %s" % (timeout, what))


def skip(why):
    """The exit status of a test that cannot check anything here because the environment lacks a
    tool or input (not because the daemon misbehaved: that is a failure, never a skip). 77, the
    skip, except under CI=true: CI's machine is set up to run every test (scripts/deps.sh test), so
    a skip there means a check silently stopped running, and it fails instead."""
    if os.environ.get("CI") == "true":
        print("FAIL: %s (a skip under CI=true is a failure)" % why)
        return 1
    print("SKIP: %s" % why)
    return 77


def run(main):
    """Runs main() (which may raise TestFailure) and exits 0 / 1 / 77 (main returning 77: see skip())."""
    try:
        rc = main()
    except TestFailure as e:
        print("FAIL:", e)
        sys.exit(1)
    sys.exit(0 if rc is None else rc)
