#!/bin/bash
# Demonstration only (MCP_EXECD_VM_DEMO_FREEZE=1): makes the tier hang beyond the reach of the
# per-test deadline (stops the runner and this test's timeout(1), then sleeps forever), as a
# guest that hangs would. Only the host's deadline on qemu (--timeout) can end it.
if ! grep -q '^tier-vm$' /etc/mcp-execd-tier/marker 2>/dev/null; then
	echo "refusing to freeze a tier that does not run in the test bed's VM"
	exit 77
fi
echo "freezing the tier on purpose"
to=$PPID                                  # timeout(1)
runner=$(ps -o ppid= -p "$to" | tr -d ' ') # the subshell of tier-runner.sh
kill -STOP "$to" "$runner" "$(ps -o ppid= -p "$runner" | tr -d ' ')"
sleep infinity
