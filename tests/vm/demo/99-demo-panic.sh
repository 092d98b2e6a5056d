#!/bin/bash
# Demonstration only (MCP_EXECD_VM_DEMO_PANIC=1): crashes the guest kernel. In the VM the tier
# fails with the console's last lines; never run it directly on a real machine.
if ! grep -q '^tier-vm$' /etc/mcp-execd-tier/marker 2>/dev/null; then
	echo "refusing to panic a machine that is not the test bed's VM"
	exit 77
fi
echo "panicking the guest kernel on purpose"
sync
echo c > /proc/sysrq-trigger
sleep 60
