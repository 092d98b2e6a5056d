"""The container image in the systemd tier (70, 71): podman with its storage on a tmpfs of its own,
the image built on the host (tests/vm/build-image.sh) waited for and loaded once per boot, and the
options docs/container.md gives a container of mcp-execd, as one list the tests and the doc share.

    sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
    import container
    ref = container.image()              # waits for the host's builds, loads the image once
    container.podman("run", ..., ref)
"""
import http.client
import os
import shlex
import shutil
import subprocess
import time

from mcpclient import TestFailure, skip

# Storage, its run state and podman's temporary files on a tmpfs of their own: the guest's root is
# an overlay (podman's overlay driver cannot use it as an upper layer) and /run is 20% of RAM.
BASE = "/run/tier-podman"
STORAGE_SIZE = "1800m"
BUILD_WAIT_S = 900  # the host's two image builds, from the tier's start; see build-image.sh

# docs/container.md, "The options, one by one": each says what it lifts and why the daemon needs it.
RUN_OPTIONS = [
    "--userns=auto:size=65536",                 # the container's root is no one on the host
    "--security-opt", "seccomp=unconfined",     # podman's profile refuses io_uring_setup, sethostname
    "--security-opt", "unmask=ALL",             # each run's own /proc; the delegated cgroup
    "--cap-drop=all", "--cap-add=setuid,setgid,chown",  # the runs' uid maps and files
    "--read-only",
]


def storage_ready():
    """podman's global options, after mounting the tmpfs the first time."""
    if not os.path.ismount(BASE):
        os.makedirs(BASE, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0700,size=" + STORAGE_SIZE, "tier-podman", BASE],
                       check=True)
        for d in ("root", "runroot", "tmp"):
            os.makedirs(os.path.join(BASE, d), exist_ok=True)
        # --userns=auto takes its ranges from the user "containers" (subuid(5)); the guest's /etc is
        # the overlay's, so this line never reaches the host.
        for f in ("/etc/subuid", "/etc/subgid"):
            with open(f, "a+") as fh:
                fh.seek(0)
                if not any(l.startswith("containers:") for l in fh):
                    fh.write("containers:2147483647:2147483648\n")
    return ["--root", os.path.join(BASE, "root"), "--runroot", os.path.join(BASE, "runroot"),
            "--storage-driver", "overlay", "--events-backend", "file"]


def podman_env():
    return dict(os.environ, TMPDIR=os.path.join(BASE, "tmp"))


def podman(*args, check=True, timeout=600, input=None):
    """Runs podman with the tier's storage; returns CompletedProcess (text), or fails the test."""
    cmd = ["podman"] + storage_ready() + list(args)
    print("$", " ".join(cmd))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input,
                           env=podman_env())
    except subprocess.TimeoutExpired:
        raise TestFailure("podman %s: no end within %ds" % (args[0], timeout))
    if check and p.returncode != 0:
        out = p.stderr or p.stdout
        # A Go panic's first lines say why; its goroutine dump follows.
        raise TestFailure("podman %s: exit %d: %s" % (args[0], p.returncode,
                                                      out if len(out) < 3000 else out[:2000] + " […] " + out[-800:]))
    return p


def readme_stdio_command():
    """The README's container command for a stdio client, as written: podman's arguments after
    "podman" (from "run" to the image's name), its lines joined. The stdio scenario of 70 runs
    exactly these (tests/blackbox/clients.test.mjs claims the block for it)."""
    with open(os.path.join(os.environ["MCP_EXECD_SRC"], "README.md")) as f:
        readme = f.read()
    blocks = [b for b in readme.split("```sh\n")[1:] if b.startswith("podman run -i --rm ")]
    if len(blocks) != 1:
        raise TestFailure("the README has %d blocks starting `podman run -i --rm`, not one" % len(blocks))
    args = shlex.split(blocks[0].split("```")[0].replace("\\\n", " "))
    if args[0] != "podman" or args[1] != "run" or not args[-1].startswith("localhost/mcp-execd:"):
        raise TestFailure("the README's container command is not `podman run … localhost/mcp-execd:…`: %r" % args)
    return args[1:]


def health(host, port, token):
    """The status of GET /health with the token (a container's daemon), None while nothing answers."""
    try:
        c = http.client.HTTPConnection(host, port, timeout=20)
        c.request("GET", "/health", headers={"Authorization": "Bearer " + token})
        r = c.getresponse()
        r.read()
        return r.status
    except OSError:
        return None


def popen(*args, **kw):
    cmd = ["podman"] + storage_ready() + list(args)
    print("$", " ".join(cmd))
    return subprocess.Popen(cmd, env=podman_env(), **kw)


def image_dir():
    return os.path.join(os.environ["MCP_EXECD_BUILD"], "image")


def wait_builds():
    """(a-archive, b-archive, a-digest, b-digest, same, a-secs, b-secs) once the host's two builds
    are done. The share is cached: only names are looked up, never listed."""
    d = image_dir()
    until = time.monotonic() + BUILD_WAIT_S
    while time.monotonic() < until:
        if os.path.exists(os.path.join(d, "failed")):
            with open(os.path.join(d, "failed")) as f:
                raise TestFailure("the image builds failed on the host: " + f.read().strip())
        if os.path.exists(os.path.join(d, "done")):
            with open(os.path.join(d, "done")) as f:
                a, b, da, db, same, sa, sb = f.read().split()
            return os.path.join(d, a), os.path.join(d, b), da, db, same, sa, sb
        time.sleep(2)
    raise TestFailure("the image builds did not finish within %ds (see build-image.log in the results)"
                      % BUILD_WAIT_S)


def image():
    """The image's reference in the tier's storage, loaded from build a's archive the first time."""
    if shutil.which("podman") is None:
        raise SystemExit(skip("podman is not installed (scripts/deps.sh test installs it)"))
    a, _, digest, _, _, _, _ = wait_builds()
    ref = "localhost/mcp-execd:" + os.path.basename(a).split("_")[1]
    have = podman("image", "inspect", "--format", "{{.Digest}}", ref, check=False)
    if have.returncode == 0 and have.stdout.strip() == digest:
        return ref
    t0 = time.monotonic()
    out = podman("load", "--input", a, timeout=900)
    print("loaded in %.1fs: %s" % (time.monotonic() - t0, out.stdout.strip()))
    got = podman("image", "inspect", "--format", "{{.Digest}}", ref).stdout.strip()
    if got != digest:
        raise TestFailure("loaded %s has digest %s, the build printed %s" % (ref, got, digest))
    return ref
