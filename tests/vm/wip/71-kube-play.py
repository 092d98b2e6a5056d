#!/usr/bin/env python3
"""deploy/kubernetes/mcp-execd.yaml run as written by `podman kube play`, the image name substituted.

The two Secrets the manifest says to make first (the operators' token, the tenants file) are made
the way podman reads them; then the Deployment's pod starts, /health answers 200 once the daemon
serves, an exec works with the token from the Secret's file and with a tenant's token, and
stopping the pod drains it: /health answers 503 and a new call is refused while the call in flight
finishes with its result, then the daemon exits 0. What podman ignores of the manifest (the
Service, the NetworkPolicy, the PodDisruptionBudget, the readiness probe, procMount, seccomp and
the grace period, per podman-kube-play(1)) is said in docs/container.md. One step is the test's
own, between `kube play --start=false` and `pod start`: the Secrets' files are given to the pod's
root with mode 0400, as the kubelet makes them and podman 4.3 does not (secrets_to_pod_root).
"""
# tier-timeout: 1200
# tier-needs: container-image
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
from mcpclient import TestFailure, run, wait_for  # noqa: E402

MANIFEST = os.path.join(os.environ["MCP_EXECD_SRC"], "deploy/kubernetes/mcp-execd.yaml")
IMAGE_AS_WRITTEN = "registry.example.com/mcp-execd:0.1.0"
PORT = 8080
POD = "mcp-execd-pod-0"
ADDR = {"host": "127.0.0.1"}  # the pod's address on podman's bridge, once it runs
TOKEN = secrets.token_hex(16)
TENANT_TOKEN = secrets.token_hex(16)


def expect(what, got, want):
    if got != want:
        raise TestFailure("%s: %r, expected %r" % (what, got, want))


def health():
    try:
        c = http.client.HTTPConnection(ADDR["host"], PORT, timeout=20)
        c.request("GET", "/health", headers={"Authorization": "Bearer " + TOKEN})
        r = c.getresponse()
        r.read()
        return r.status
    except OSError:
        return None


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


def main():
    ref = container.image()
    tmp = os.environ.get("TIER_TEST_TMPDIR", "/tmp")
    with open(MANIFEST) as f:
        text = f.read()
    if text.count(IMAGE_AS_WRITTEN) != 1:
        raise TestFailure("the manifest no longer names %s once" % IMAGE_AS_WRITTEN)
    if text.count("  replicas: 3\n") != 1:
        raise TestFailure("the manifest no longer asks for 3 replicas")
    # The image, and one replica: podman makes a pod per replica (mcp-execd-pod-0, -1, -2): three
    # daemons are more than the guest's 3 GiB and two CPUs hold beside the tier.
    kube = os.path.join(tmp, "mcp-execd.yaml")
    with open(kube, "w") as f:
        f.write(text.replace(IMAGE_AS_WRITTEN, ref).replace("  replicas: 3\n", "  replicas: 1\n"))
    try:
        for name, key, value in SECRETS:
            container.podman("secret", "rm", name, check=False)
            container.podman("secret", "create", name, "-", input=secret_object(name, key, value))
        t0 = time.monotonic()
        # Made, not started: podman 4.3 writes the Secrets' files as the host's root, where the
        # kubelet gives them to the pod's root (docs/container.md, "Kubernetes, run by podman").
        p = container.podman("kube", "play", "--start=false", kube, timeout=900)
        print(p.stdout, p.stderr)
        print("pod made in %.1fs" % (time.monotonic() - t0))
        secrets_to_pod_root(POD + "-mcp-execd")
        container.podman("pod", "start", POD, timeout=300)
        print(container.podman("ps", "-a", "--format", "{{.Names}} {{.Status}}").stdout)
        print(container.podman("inspect", "--format", "{{json .HostConfig.SecurityOpt}} {{json .HostConfig.CapAdd}} "
                               "{{.HostConfig.UsernsMode}} {{json .HostConfig.ReadonlyRootfs}}",
                               POD + "-mcp-execd").stdout)
        infra = container.podman("pod", "inspect", "--format", "{{.InfraContainerID}}", POD).stdout.strip()
        ADDR["host"] = container.podman("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                                        infra).stdout.strip() or "127.0.0.1"
        print("the pod's address:", ADDR["host"])
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
        stop = container.popen("pod", "stop", "--time", "75", POD,
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
    except TestFailure:
        print("the daemon's log:\n" + container.podman("logs", "--tail", "40", POD + "-mcp-execd", check=False).stderr)
        raise
    finally:
        container.podman("kube", "down", kube, check=False)
        for s in ("mcp-execd-auth-token", "mcp-execd-tenants"):
            container.podman("secret", "rm", s, check=False)
            # podman keeps a Secret volume, and a later play writes into the same files.
            container.podman("volume", "rm", "-f", s, check=False)


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
