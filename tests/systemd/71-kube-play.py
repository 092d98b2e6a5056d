#!/usr/bin/env python3
# tier-timeout: 1200
# tier-needs: container-image
"""deploy/kubernetes/mcp-execd.yaml run by `podman kube play`, the image name substituted.

The two Secrets the manifest says to make first (the operators' token, the tenants file) are made
the way podman reads them, then the Deployment's pod (one replica) is played twice:
1. As written. podman honours the seccomp annotation (the container is unconfined, so the daemon's
   io_uring and its runs' namespaces are allowed), the Secrets, the user namespace. podman before
   4.7 (Debian 12 has 4.3.1) does not apply `procMount: Unmasked`: the container's /proc stays
   masked, each run's own /proc mount is refused by the kernel, and the daemon must refuse to
   start saying so (its sandbox self-test) instead of serving runs that cannot work; /health
   never answers. With podman 4.7 or later the pod is checked as in 2.
2. With podman before 4.7 only: the same manifest with one change, `privileged: true` in place of
   `procMount: Unmasked` (the only way kube play 4.3 unmasks /proc): /health answers 200 once the
   daemon serves, an exec works with the token from the Secret's file and with a tenant's token,
   and stopping the daemon's container drains it: /health answers 503 and a new call is refused while the call
   in flight finishes with its result, then the daemon exits 0.
What podman ignores of the manifest (the Service, the NetworkPolicy, the PodDisruptionBudget, the
readiness probe, the grace period, per podman-kube-play(1)) is said in docs/container.md. One step
is the test's own, between `kube play --start=false` and `pod start`: the Secrets' files are given
to the pod's root with mode 0400, as the kubelet makes them and podman 4.3 does not
(secrets_to_pod_root).
"""
import hashlib
import http.client
import json
import os
import secrets
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.environ["MCP_EXECD_SRC"], "tests/systemd/lib"))
import container  # noqa: E402
import httpclient  # noqa: E402
from mcpclient import TestFailure, expect, run, wait_for  # noqa: E402

MANIFEST = os.path.join(os.environ["MCP_EXECD_SRC"], "deploy/kubernetes/mcp-execd.yaml")
IMAGE_AS_WRITTEN = "registry.example.com/mcp-execd:0.1.0"
PORT = 8080
POD = "mcp-execd-pod-0"
ADDR = {"host": "127.0.0.1"}  # the pod's address on podman's bridge, once it runs
TOKEN = secrets.token_hex(16)
TENANT_TOKEN = secrets.token_hex(16)


def health():
    return container.health(ADDR["host"], PORT, TOKEN)


def secret_object(name, key, value):
    """One of the manifest's Secrets (kubectl create secret generic NAME --from-file=KEY=…), as the
    Kubernetes object (JSON, which is YAML): podman 4.3's kube play takes no Secret kind, but a
    secret volume reads the podman secret of that name whose data is such an object. The value
    is not base64-encoded as the Kubernetes API has it: podman 4.3 writes a `data` value into
    the file as it is, without decoding it (measured), and reads no `stringData`."""
    return json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque",
                       "data": {key: value}})


SECRETS = (("mcp-execd-auth-token", "auth-token", TOKEN + "\n"),
           ("mcp-execd-tenants", "tenants", "team-a %s\n" % hashlib.sha256(TENANT_TOKEN.encode()).hexdigest()))


def host_id(mappings, inside):
    """The host's id for the container's id INSIDE, from podman's "inside:host:size" ranges."""
    for m in mappings:
        start, host, size = (int(x) for x in m.split(":"))
        if start <= inside < start + size:
            return host + inside - start
    raise TestFailure("id %d is not mapped in the pod (%r)" % (inside, mappings))


def secrets_to_pod_root(ctr):
    """What the kubelet does with a Secret volume of a pod in a user namespace and podman 4.3 does
    not: the files are the pod's root's and have the volume's defaultMode (0400). podman writes
    them as the host's root with mode 0644 whatever defaultMode says, and the host's root is no
    one inside the pod (uid 65534, the overflow id): its root could not read a 0400 file, and
    the daemon refuses a tenants file that is neither its own nor root's, or that others may read.
    The files are given to the host id that is the pod's root and made 0400, before the pod
    starts; nothing in the pod could read them before."""
    maps = json.loads(container.podman("inspect", "--format", "{{json .HostConfig.IDMappings}}", ctr).stdout)
    uid, gid = host_id(maps["UidMap"], 0), host_id(maps["GidMap"], 0)
    if uid == 0:
        raise TestFailure("the pod's root is the host's root: no user namespace (hostUsers: false)?")
    for name, key, value in SECRETS:
        mp = container.podman("volume", "inspect", "--format", "{{.Mountpoint}}", name).stdout.strip()
        path = os.path.join(mp, key)
        st = os.lstat(path)
        with open(path) as f:
            expect("the data podman wrote for " + name, f.read(), value)
        print("podman wrote %s as %d:%d mode %04o; now %d:%d mode 0400"
              % (path, st.st_uid, st.st_gid, st.st_mode & 0o7777, uid, gid))
        os.chown(path, uid, gid)
        os.chmod(path, 0o400)


UNMASK_FROM = (4, 7)  # podman applies procMount: Unmasked from 4.7.0 (commit b83485022d)
REFUSAL = ('refusing to start: the sandbox is not available: the sandbox self-test failed at "mount /proc '
           '(refused while the /proc above is partly masked')


def podman_version():
    v = container.podman("version", "--format", "{{.Client.Version}}").stdout.strip()
    return tuple(int(x) for x in v.split("-")[0].split(".")[:2]), v


def daemon_log():
    return container.podman("logs", POD + "-mcp-execd", check=False).stderr


def play(kube, t0):
    """The pod made, its Secrets' files given to its root, started; returns its address."""
    for name, key, value in SECRETS:
        container.podman("secret", "rm", name, check=False)
        container.podman("secret", "create", name, "-", input=secret_object(name, key, value))
    # Made, not started: podman 4.3 writes the Secrets' files as the host's root, where the
    # kubelet gives them to the pod's root (docs/container.md, "Kubernetes, run by podman").
    # hostUsers: false is podman's --userns=auto, whose size podman takes from the image's files
    # unless told; the kubelet gives such a pod 65536 ids, and so does this (70's containers have
    # the same range, so podman's copy of the image's layer shifted into it serves both: a copy
    # of 616 MB per range does not fit the tier's storage twice beside the image).
    p = container.podman("kube", "play", "--start=false", "--userns=auto:size=65536", kube, timeout=900)
    print(p.stdout, p.stderr)
    print("pod made in %.1fs" % (time.monotonic() - t0))
    secrets_to_pod_root(POD + "-mcp-execd")
    container.podman("pod", "start", POD, timeout=300)
    print(container.podman("ps", "-a", "--format", "{{.Names}} {{.Status}}").stdout)
    infra = container.podman("pod", "inspect", "--format", "{{.InfraContainerID}}", POD).stdout.strip()
    ADDR["host"] = container.podman("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                                    infra).stdout.strip() or "127.0.0.1"
    print("the pod's address:", ADDR["host"])


def down(kube):
    """The pod and its Secrets gone, checked: the next play makes a pod of the same name."""
    d = container.podman("kube", "down", kube, check=False)
    if container.podman("pod", "exists", POD, check=False).returncode == 0:
        # kube down stops the pod, then removes it without force (pkg/domain/infra/abi/play.go);
        # a container that exits on its own and is restarted (restartPolicy: Always: the daemon
        # refusing to start) can be running again between the two, and the removal fails. CI's
        # run of 73fb72e failed the next play this way, as far as its cut output shows.
        print("kube down left the pod: exit %d: %s" % (d.returncode, (d.stderr or d.stdout)[-1000:]))
        container.podman("pod", "rm", "--force", "--ignore", POD, check=False)
    if container.podman("pod", "exists", POD, check=False).returncode == 0:
        raise TestFailure("the pod %s is still there after kube down and pod rm --force" % POD)
    for s in ("mcp-execd-auth-token", "mcp-execd-tenants"):
        container.podman("secret", "rm", s, check=False)
        # podman keeps a Secret volume, and a later play writes into the same files.
        container.podman("volume", "rm", "-f", s, check=False)
        if container.podman("volume", "exists", s, check=False).returncode == 0:
            raise TestFailure("the Secret volume %s is still there after volume rm" % s)


def oci_config():
    """The OCI runtime configuration podman gave crun for the daemon's container."""
    path = container.podman("inspect", "--format", "{{.OCIConfigPath}}", POD + "-mcp-execd").stdout.strip()
    with open(path) as f:
        return json.load(f)


def as_written_refused():
    """podman before 4.7: the seccomp annotation applied, /proc masked, the daemon refuses."""
    linux = oci_config()["linux"]
    print("seccomp in the container's OCI configuration: %s; masked paths: %r"
          % ("none" if "seccomp" not in linux else "%d rules" % len(linux["seccomp"].get("syscalls", [])),
             linux.get("maskedPaths")))
    if "seccomp" in linux:
        raise TestFailure("podman did not apply the manifest's seccomp annotation: the container has a profile")
    if not linux.get("maskedPaths"):
        raise TestFailure("podman unmasked /proc after all: this podman applies procMount, check the pod as a whole")
    wait_for("the daemon to refuse to start, saying why", lambda: REFUSAL in daemon_log(), 300)
    log = daemon_log()
    print("the daemon said:\n" + "\n".join(l for l in log.splitlines() if "refusing" in l)[:2000])
    # It got past everything before the sandbox's check, or it would have said so instead: the
    # tenants file (its Secret, given to the pod's root), io_uring (the unconfined seccomp
    # profile), its private directory (RUNTIME_DIRECTORY on the state volume).
    for bad in ("cannot", "io_uring"):
        if bad in log:
            raise TestFailure("the daemon's log names %r:\n%s" % (bad, log[-2000:]))
    expect("/health while the daemon refuses", health(), None)


def serves_and_drains(t0):
    wait_for("/health to answer 200", lambda: health() == 200, 300)
    print("ready in %.1fs" % (time.monotonic() - t0))
    cl = httpclient.Client(TOKEN, PORT, name="tier-71", host=ADDR["host"])
    cl.initialize()
    r = cl.exec_code("print(6*7)", timeout_s=120)
    expect("exec with the Secret's token", r["structuredContent"]["stdout"], "42\n")
    t = httpclient.Client(TENANT_TOKEN, PORT, name="tier-71-team-a", host=ADDR["host"])
    t.initialize()
    r = t.exec_code("print(7*6)", timeout_s=120)
    expect("exec with a tenant's token", r["structuredContent"]["stdout"], "42\n")

    # The drain: a call in flight, then the pod is stopped (SIGTERM, as Kubernetes deletes a pod).
    slow = {}

    def call():
        try:
            slow["r"] = cl.exec_code("import time; time.sleep(15); print('finished')", timeout_s=120)
        except Exception as e:  # noqa: BLE001 (reported below)
            slow["e"] = e
    th = threading.Thread(target=call)
    th.start()
    wait_for("the slow call to be running", lambda: running() >= 1, 120)
    # The daemon's container, not the pod: podman stops a pod's containers all at once, its
    # infra container too, whose end takes the pod's network away while the daemon still drains
    # (libpod/pod_api.go: "Stopping pods is not ordered by dependency"; measured: the call in
    # flight finished in the daemon and its answer never came). The kubelet keeps a pod's
    # network until its containers have ended.
    stop = container.popen("stop", "--time", "75", POD + "-mcp-execd",
                           stdout=container.subprocess.PIPE, stderr=container.subprocess.STDOUT)
    wait_for("/health to say draining (503)", lambda: health() == 503, 120)
    try:
        t.exec_code("print(1)", timeout_s=30)
        raise TestFailure("a new call was served while draining")
    except TestFailure as e:
        if "503" not in str(e):
            raise
    th.join(180)
    if "e" in slow:
        raise TestFailure("the call in flight did not finish: %s" % slow["e"])
    expect("the call in flight", slow["r"]["structuredContent"]["stdout"], "finished\n")
    stop.wait(180)
    codes = container.podman("ps", "-a", "--filter", "pod=" + POD,
                             "--format", "{{.Names}} {{.ExitCode}}").stdout.split("\n")
    print("exit codes:", codes)
    daemon = [c for c in codes if c and not c.split()[0].endswith("-infra")]
    expect("the daemon's exit status after the drain", [c.split()[1] for c in daemon], ["0"])


def main():
    ref = container.image()
    tmp = os.environ.get("TIER_TEST_TMPDIR", "/tmp")
    version, version_text = podman_version()
    print("podman", version_text)
    with open(MANIFEST) as f:
        text = f.read()
    for what in (IMAGE_AS_WRITTEN, "  replicas: 3\n", "privileged: false\n", "procMount: Unmasked\n"):
        if text.count(what) != 1:
            raise TestFailure("the manifest no longer has %r once" % what)
    # The image, and one replica: podman makes a pod per replica (mcp-execd-pod-0, -1, -2): three
    # daemons are more than the guest's 3 GiB and two CPUs hold beside the tier.
    as_written = text.replace(IMAGE_AS_WRITTEN, ref).replace("  replicas: 3\n", "  replicas: 1\n")
    kube = os.path.join(tmp, "mcp-execd.yaml")
    steps = [("as written", as_written)]
    if version < UNMASK_FROM:
        # kube play before 4.7 unmasks /proc only for a privileged container (which also
        # unconfines seccomp and gives every capability: a stand-in for procMount, not advice).
        steps.append(("privileged: true for procMount: Unmasked",
                      as_written.replace("privileged: false\n", "privileged: true\n")
                                .replace("procMount: Unmasked\n", "# procMount: Unmasked\n")))
    for name, manifest in steps:
        print("== the manifest, %s" % name)
        with open(kube, "w") as f:
            f.write(manifest)
        t0 = time.monotonic()
        try:
            play(kube, t0)
            if name == "as written" and version < UNMASK_FROM:
                as_written_refused()
            else:
                serves_and_drains(t0)
        except TestFailure:
            print("the daemon's log:\n" + daemon_log()[-3000:])
            raise
        finally:
            down(kube)


def running():
    c = http.client.HTTPConnection(ADDR["host"], PORT, timeout=20)
    c.request("GET", "/metrics", headers={"Authorization": "Bearer " + TOKEN})
    r = c.getresponse()
    body = r.read().decode()
    for line in body.splitlines():
        if line.startswith("mcp_execd_runs_running "):
            return float(line.split()[1])
    return 0


run(main)
