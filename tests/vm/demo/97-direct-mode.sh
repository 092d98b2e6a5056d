#!/bin/bash
# Check of the harness itself (MCP_EXECD_VM_CHECK_DIRECT=1): inside the VM, where systemd is
# PID 1 with cgroup v2, run-tier.sh must choose direct mode and run tests there.
# tier-timeout: 300
if ! grep -q '^tier-vm$' /etc/mcp-execd-tier/marker 2>/dev/null; then
	echo "only meaningful in the test bed's VM"
	exit 77
fi
out=$TIER_TEST_TMPDIR/direct.out
bash "$MCP_EXECD_SRC/tests/vm/run-tier.sh" --build-dir "$MCP_EXECD_BUILD" \
	--results "$TIER_TEST_TMPDIR/rr" --timeout 240 --test 01 --test 02 --test 03 > "$out" 2>&1
rc=$?
cat "$out"
echo "run-tier.sh exited $rc"
grep -q '^tier systemd: running directly on this machine' "$out" || { echo "FAIL: direct mode not chosen"; exit 1; }
grep -qx 'tier systemd: 3 passed, 0 failed' "$out" || { echo "FAIL: not 3 passed"; exit 1; }
[ $rc -eq 0 ]
