#!/usr/bin/env python3
"""deploy/kubernetes/mcp-execd.yaml run as written by `podman kube play`, the image name substituted.

The two Secrets the manifest says to make first (the operators' token, the tenants file) are made
the way podman reads them; then the Deployment's pod starts, /health answers 200 once the daemon
serves, an exec works with the token from the Secret's file and with a tenant's token, and
stopping the pod drains it: /health answers 503 and a new call is refused while the call in flight
finishes with its result, then the daemon exits 0. What podman ignores of the manifest (the
Service, the NetworkPolicy, the PodDisruptionBudget, the readiness probe, procMount, seccomp and
the grace period, per podman-kube-play(1)) is said in docs/container.md; the options it cannot
read from the manifest are given on its command line (--userns) or in the substituted pod
(annotations), and this test names each one.
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


def secret_yaml(name, key, value):
    """One of the manifest's Secrets (kubectl create secret generic NAME --from-file=KEY=…), as the
    Kubernetes object: podman 4.3's kube play takes no Secret kind, but a secret volume reads the
    podman secret of that name whose data is such an object."""
    import base64
    return ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\ntype: Opaque\ndata:\n  %s: %s\n"
            % (name, key, base64.b64encode(value.encode()).decode()))


SECRETS = (("mcp-execd-auth-token", "auth-token", TOKEN + "\n"),
           ("mcp-execd-tenants", "tenants", "team-a %s\n" % hashlib.sha256(TENANT_TOKEN.encode()).hexdigest()))


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
            container.podman("secret", "create", name, "-", input=secret_yaml(name, key, value))
        t0 = time.monotonic()
        p = container.podman("kube", "play", kube, timeout=600)
        print(p.stdout, p.stderr)
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
