# install.py: mcp-execd's installer, run outside the runs' sandbox by the daemon as a child process
# (its own process group, killed at MCP_EXEC_INSTALL_TIMEOUT_S, dies with the daemon) with
# `python3 -I -c <this> <json>`. Wheels only (--only-binary=:all:): no code of a package runs at
# install time. Modes:
#   install: a venv (--system-site-packages, the target interpreter) in the temporary directory the
#            daemon made (the only place it may write: as root it runs in a mount namespace where
#            everything else is read-only), pip (or uv) installs the requirements into it, and a
#            marker is written last; the daemon renames the directory into envs/ once we have
#            exited successfully: a half-installed environment is never visible.
#            The tree may not grow past max_bytes (MCP_EXEC_ENV_CACHE_MAX): pip is stopped.
#   check:   for each requirement, whether the source can satisfy it (pip install --dry-run
#            --no-deps), one JSON line each on stdout.
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import time

MARKER = ".mcp-execd-env.json"


def die_with_parent():
    # PR_SET_PDEATHSIG = 1: pip goes when we go (we go when the daemon goes).
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)
    except Exception:
        pass


def source_args(a, uv=False):
    args = []
    if a.get("index_url"):
        args += ["--index-url", a["index_url"]]
        if a.get("wheelhouse"):
            args += ["--find-links", a["wheelhouse"]]
    else:
        args += ["--no-index", "--find-links", a["wheelhouse"]]
    if not uv:
        args += ["--retries", "1", "--timeout", "15"]
    return args


def pip_base(a):
    return [sys.executable, "-I", "-m", "pip", "--isolated", "--disable-pip-version-check", "--no-input"]


# A requirement we hand to pip or uv: a PEP 508 string that starts with a project name, on one line of
# printable text. Checked here again although meta.py checked it (issue 15, 7b): the installer is the
# boundary where a string becomes an argument, and one starting with '-' would be read as an option
# ("--index-url=…", "-r /etc/passwd", "-e …"). They are then passed as arguments after "--", never
# through a requirements file (whose lines pip also reads as options, comments, continuations and
# ${VARIABLES}).
NAME_START = re.compile(r"[A-Za-z0-9]")


def requirement_problem(req):
    if not isinstance(req, str) or not req:
        return "is not a non-empty string"
    for ch in req:
        if ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f or ch in "\u2028\u2029":
            return f"contains the control character {ch!r}"
    if not NAME_START.match(req):
        return "does not start with a project name (a requirement starting with '-' would be an installer option)"
    return None


def requirements_checked(a):
    bad = [(r, requirement_problem(r)) for r in a["requirements"]]
    bad = [(r, p) for r, p in bad if p]
    for r, p in bad:
        print(f"refusing requirement {r!r}: it {p}", file=sys.stderr)
    return not bad


def dir_size(path):
    total = 0
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            try:
                total += os.lstat(os.path.join(root, n)).st_blocks * 512
            except OSError:
                pass
    return total


def install(a):
    if not requirements_checked(a):
        return 2
    tmp = a["tmp"]
    os.umask(0o022)
    work = os.path.join(tmp, ".mcp-execd-tmp")  # pip's TMPDIR, inside the one writable directory
    r = subprocess.run([a["interpreter"], "-m", "venv", "--without-pip", "--system-site-packages", tmp],
                       preexec_fn=die_with_parent, env={"PATH": "/usr/bin:/bin", "TMPDIR": tmp})
    if r.returncode != 0:
        print(f"creating the environment with {a['interpreter']} -m venv failed (exit {r.returncode})",
              file=sys.stderr)
        return 1
    target = os.path.join(tmp, "bin", "python")
    if a.get("uv"):
        cmd = [a["uv"], "pip", "install", "--python", target, "--no-cache", "--only-binary", ":all:"] + \
              source_args(a, uv=True) + ["--"] + a["requirements"]
    else:
        cmd = pip_base(a) + ["--python", target, "install", "--no-cache-dir", "--only-binary=:all:",
                             "--no-warn-script-location", "--progress-bar", "off"] + source_args(a) + \
              ["--"] + a["requirements"]
    os.makedirs(work, exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    # MCP_EXEC_ENV_CACHE_MAX bounds the cache, so one environment may not grow past it: the tree
    # (with pip's downloads in work/) is measured while pip runs and pip is stopped when it is over.
    max_bytes = a.get("max_bytes")
    p = subprocess.Popen(cmd, preexec_fn=die_with_parent, env=env, stdin=subprocess.DEVNULL)
    over = None
    while True:
        try:
            p.wait(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            pass
        if max_bytes is not None:
            size = dir_size(tmp)
            if size > max_bytes:
                over = size
                p.kill()
                p.wait()
                break
    if over is None and max_bytes is not None and p.returncode == 0:
        size = dir_size(tmp)
        if size > max_bytes:
            over = size
    shutil.rmtree(work, ignore_errors=True)
    if over is not None:
        held = a.get("held_bytes") or 0
        if held:
            print(f"installing stopped: the environment grew to {over} bytes, past the {max_bytes} bytes "
                  f"MCP_EXEC_ENV_CACHE_MAX ({a.get('cache_max_bytes')} bytes) leaves beside the {held} bytes "
                  f"of environments in use by Python sessions (close one, or raise the variable)", file=sys.stderr)
        else:
            print(f"installing stopped: the environment grew to {over} bytes, past MCP_EXEC_ENV_CACHE_MAX "
                  f"({max_bytes} bytes), the most one environment may take", file=sys.stderr)
        return 3
    if p.returncode != 0:
        return p.returncode
    meta = {"key": a["key"], "python": a["python_name"], "interpreter": a["interpreter"],
            "python_version": a["python_version"], "requirements": a["requirements"],
            "installed_at": int(time.time()), "install_ms": 0}
    meta["size_bytes"] = dir_size(tmp)
    with open(os.path.join(tmp, MARKER), "w") as f:
        json.dump(meta, f)
    os.chmod(tmp, 0o755)
    print(json.dumps({"installed": a["key"], "size_bytes": meta["size_bytes"]}))
    return 0


def check(a):
    if not requirements_checked(a):
        return 2
    env = {"PATH": "/usr/bin:/bin", "HOME": a["tmp"], "TMPDIR": a["tmp"], "LANG": "C.UTF-8"}
    os.makedirs(a["tmp"], exist_ok=True)
    for req in a["requirements"]:
        cmd = pip_base(a) + ["--python", a["interpreter"], "install", "--dry-run", "--no-deps",
                             "--ignore-installed", "--break-system-packages", "--only-binary=:all:",
                             "--no-cache-dir", "--quiet", "--progress-bar", "off"] + source_args(a) + ["--", req]
        r = subprocess.run(cmd, preexec_fn=die_with_parent, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=a["tmp"])
        out = r.stdout.decode("utf-8", "replace").strip()
        lines = [l for l in out.splitlines() if l.startswith("ERROR") or "Retrying" in l or "WARNING" in l]
        print(json.dumps({"requirement": req, "ok": r.returncode == 0,
                          "message": "\n".join(lines or out.splitlines()[-5:])}), flush=True)
    shutil.rmtree(a["tmp"], ignore_errors=True)
    return 0


def main():
    a = json.loads(sys.argv[1])
    return install(a) if a["mode"] == "install" else check(a)


sys.exit(main())
