#!/usr/bin/env bash
# deps.sh: installs (as root, from Debian's archive) what mcp-execd needs to build, run and test.
# Idempotent: when everything is present it does nothing and touches no network.
#   scripts/deps.sh            build + run dependencies
#   scripts/deps.sh test       plus what the test tiers need (Node.js for the MCP SDK client)
set -euo pipefail

pkgs=(
        meson ninja-build pkg-config gcc
        libsystemd-dev libjansson-dev libseccomp-dev liburing-dev libmicrohttpd-dev libzstd-dev libssl-dev
        libcjose-dev
        python3 python3-yaml python3-jinja2 python3-pil python3-numpy python3-pandas python3-matplotlib
        python3-pip python3-venv python3-packaging pypy3
)
if [ "${1:-}" = test ]; then
        # haproxy: the fleet test of the systemd tier (tests/systemd/47-fleet.py, issue 19).
        pkgs+=(libcmocka-dev haproxy)
        # openssl: egress.test.mjs makes a certificate for its HTTPS server (issue 32).
        pkgs+=(openssl)
        # systemd-socket-activate: the black-box tests of a socket passed by systemd (sd_listen_fds).
        pkgs+=(systemd)
        # systemd-journal-remote: report.test.mjs and bench/report.py make .journal files from the
        # journal export format (--report, issue 33.2; this host has no journald).
        pkgs+=(systemd-journal-remote)
        # The Debian package's build and lintian (debian/; the systemd tier's 46-debian-package).
        pkgs+=(debhelper devscripts lintian fakeroot dpkg-dev)
        # The container image (deploy/image/build.sh: mmdebstrap) and the runtime the systemd
        # tier's 70-container-image and 71-kube-play run it with (podman, crun; issue 34). The
        # guest's root is this machine's, so they are installed here.
        pkgs+=(mmdebstrap podman crun)
        # The official MCP SDK client runs on Node.js >= 18 (Debian 12 has 18.19); keep a newer
        # Node.js if the machine already has one.
        command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
        command -v npm >/dev/null 2>&1 || pkgs+=(npm)
fi

missing=()
for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
        echo "deps.sh: missing Debian packages: ${missing[*]}; run as root to install them" >&2
        exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
