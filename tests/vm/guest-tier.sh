#!/bin/bash
# ExecStart of mcp-execd-tier.service inside the guest (systemd is PID 1 there).
# Mounts the shares the host gave explicitly (checkout and build read-only, results
# read-write) at the host's own paths, runs the tier, and powers the guest off.
set -u
. /etc/mcp-execd-tier/config.env
log() { echo "tier-guest: $*"; }
off() {
	sync
	umount "$TIER_GUEST_RESULTS" 2>/dev/null
	echo o > /proc/sysrq-trigger
	sleep 30
}
trap off EXIT
log "systemd $(systemctl --version | head -n1 | cut -d' ' -f2) up after $(cut -d' ' -f1 /proc/uptime)s"

O9P="trans=virtio,version=9p2000.L,msize=262144"
mkdir -p "$TIER_GUEST_RESULTS"
mount -t 9p -o "$O9P,rw" tierresults "$TIER_GUEST_RESULTS" || { log "cannot mount the results share"; exit 1; }
# Parents first (the build dir is usually inside the checkout).
printf '%s\n' "tiersrc $TIER_SRC" "tierbuild $TIER_BUILD" | awk '{ print length($0), $0 }' | sort -n |
	while read -r _ tag path; do
		mkdir -p "$path" && mount -t 9p -o "$O9P,ro,cache=loose" "$tag" "$path" \
			|| log "cannot mount $tag at $path"
	done

export MCP_EXECD="$TIER_MCP_EXECD" MCP_EXECD_SRC="$TIER_SRC" MCP_EXECD_BUILD="$TIER_BUILD"
unset MCP_EXEC_CGROUP
# What the host's run passes on to the tests: CI (a skip that could hide a regression fails under
# CI=true) and MCP_EXECD_SOAK_RUNS (45-soak's length).
[ -n "${TIER_ENV:-}" ] && eval "export $TIER_ENV"
export HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
tests=()
for t in $TIER_TESTS; do tests+=("$TIER_SRC/$t"); done
bash "$TIER_SRC/tests/vm/tier-runner.sh" --results "$TIER_GUEST_RESULTS" \
	--test-timeout "$TIER_TEST_TIMEOUT" -- "${tests[@]}"
rc=$?
if [ -n "${TIER_SHELL:-}" ]; then
	cd "$TIER_SRC" || cd /
	export TIER_TEST_TMPDIR=/tmp
	printf '%s\n' '[ -f /root/.bashrc ] && . /root/.bashrc' 'PS1="tier-vm:\w# "' > /etc/mcp-execd-tier/shellrc
	{
		echo
		echo "== tier shell: systemd PID 1, cgroup v2; MCP_EXECD=$MCP_EXECD"
		echo "== run a test: bash tests/vm/tier-runner.sh --results /tmp/r -- tests/systemd/NAME"
		echo "== results of this boot: $TIER_GUEST_RESULTS; exit to power off"
	} > /dev/ttyS0
	setsid -w -c bash --rcfile /etc/mcp-execd-tier/shellrc -i <>/dev/ttyS0 >&0 2>&1
fi
# For debugging a failure: the guest's journal of this boot.
timeout 60 journalctl -b -o short-monotonic --no-pager > "$TIER_GUEST_RESULTS/journal.txt" 2>&1
log "tier finished (exit $rc) after $(cut -d' ' -f1 /proc/uptime)s"
exit 0
