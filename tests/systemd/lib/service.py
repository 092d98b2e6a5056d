"""The shipped single-instance service (units/mcp-execd.{service,socket,slice}) installed into
/run/systemd/system for a test, with ExecStart= pointing at the binary under test and a token in
/etc/mcp-execd/auth-token; and removed again. Tests 43 and 48."""
import os
import re
import shutil
import subprocess

from mcpclient import TestFailure, stable_daemon_path

UNITS = ("mcp-execd.service", "mcp-execd.socket", "mcp-execd.slice")


def sh(*cmd, check=False):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise TestFailure("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r.stdout.strip()


def install_units(token, env=()):
    """env: (name, value) pairs added to the service's [Service] section."""
    build, src = os.environ["MCP_EXECD_BUILD"], os.environ["MCP_EXECD_SRC"]
    svc = open(os.path.join(build, "units/mcp-execd.service")).read()
    svc = re.sub(r"(?m)^ExecStart=.*$", "ExecStart=" + stable_daemon_path(), svc)
    if env:
        svc = svc.replace("[Service]\n", "[Service]\n" + "".join("Environment=%s=%s\n" % kv for kv in env), 1)
    open("/run/systemd/system/mcp-execd.service", "w").write(svc)
    for u in UNITS[1:]:
        open("/run/systemd/system/" + u, "w").write(open(os.path.join(src, "units", u)).read())
    os.makedirs("/etc/mcp-execd", mode=0o700, exist_ok=True)
    with open("/etc/mcp-execd/auth-token", "w") as f:
        f.write(token + "\n")
    os.chmod("/etc/mcp-execd/auth-token", 0o600)
    sh("systemctl", "daemon-reload", check=True)


def remove_units():
    sh("systemctl", "stop", "mcp-execd.socket", "mcp-execd.service")
    sh("systemctl", "reset-failed", "mcp-execd.service")
    for u in UNITS:
        try:
            os.unlink("/run/systemd/system/" + u)
        except FileNotFoundError:
            pass
    shutil.rmtree("/etc/mcp-execd", ignore_errors=True)  # the token the test wrote
    sh("systemctl", "daemon-reload")


def with_units(token, env, scenario, journal_lines):
    """Installs the units (install_units()), returns what scenario() does, and whatever it did prints
    the service's last journal_lines lines and removes the units."""
    install_units(token, env)
    try:
        return scenario()
    finally:
        print(sh("journalctl", "-u", "mcp-execd.service", "-b", "--no-pager", "-n", str(journal_lines),
                 "-o", "short-monotonic"))
        remove_units()


def run_units():
    """The run scopes systemd knows (mcp-execd-run-*), loaded or not."""
    return [l.split()[0] for l in sh("systemctl", "list-units", "--all", "--plain", "--no-legend",
                                     "mcp-execd-run-*").splitlines() if l.strip()]
