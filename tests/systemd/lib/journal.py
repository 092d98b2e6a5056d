"""Journal helpers for the systemd tier's tests (Debian's python3 stdlib only).

    from journal import JournalStream, cursor, records, export

JournalStream(identifier) is what systemd gives a service whose stderr goes to the journal: a
stream connected to journald (sd_journal_stream_fd(3)) and the "<st_dev>:<st_ino>" that
systemd puts in $JOURNAL_STREAM (systemd.exec(5)). A daemon started with it as fd 2 and that
variable set believes it is a service logging to the journal.
"""
import json
import os
import socket
import subprocess
import time

from mcpclient import Daemon, daemon_path


class JournalStream:
    def __init__(self, identifier, priority=6):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect("/run/systemd/journal/stdout")
        # identifier, unit id, priority, level prefix, forward to syslog, kmsg, console
        header = "%s\n\n%d\n1\n0\n0\n0\n" % (identifier, priority)
        self.sock.sendall(header.encode())
        self.sock.shutdown(socket.SHUT_RD)
        st = os.fstat(self.sock.fileno())
        self.env_value = "%d:%d" % (st.st_dev, st.st_ino)

    def fileno(self):
        return self.sock.fileno()

    def close(self):
        self.sock.close()


class JournalDaemon(Daemon):
    """Daemon whose stderr is a journal stream, as under systemd."""

    def __init__(self, stream, **kw):
        super().__init__(**kw)
        self.stream = stream
        self.env["JOURNAL_STREAM"] = stream.env_value

    def __enter__(self):
        self.proc = subprocess.Popen([self.exe()] + self.args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stream.fileno(), env=self.env)
        return self

    def exe(self):
        return daemon_path()

    def stderr_tail(self, n=20):
        return "(stderr went to the journal)"


def cursor():
    """The cursor of the journal's last entry now (so later queries can start after it)."""
    out = subprocess.run(["journalctl", "-n", "0", "--show-cursor", "-q", "--no-pager"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("-- cursor: "):
            return line[len("-- cursor: "):].strip()
    return None


def records(*matches, after=None):
    """Entries of this boot (dicts of the JSON output) matching FIELD=VALUE strings, optionally
    after a cursor (prefer a _PID= match: --after-cursor with a cursor from `-n 0` was seen to
    skip the first entry after it)."""
    cmd = ["journalctl", "-b", "-o", "json", "--no-pager", "-q"]
    if after:
        cmd.append("--after-cursor=" + after)
    cmd += list(matches)
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def sync():
    """Returns once journald has stored everything sent before the call (journalctl --sync)."""
    subprocess.run(["journalctl", "--sync"], capture_output=True, timeout=120)


def wait_records(count, *matches, after=None, timeout=30.0):
    """Polls until at least count entries match (journald works asynchronously)."""
    sync()
    until = time.monotonic() + timeout
    while True:
        got = records(*matches, after=after)
        if len(got) >= count or time.monotonic() > until:
            return got
        time.sleep(0.3)


def export():
    """The whole journal in export format (bytes): every field of every entry."""
    sync()
    return subprocess.run(["journalctl", "-o", "export", "--no-pager"], capture_output=True).stdout
