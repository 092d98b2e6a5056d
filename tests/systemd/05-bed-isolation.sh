#!/bin/bash
# The bed itself (VM only): the checkout and build are shared read-only and the guest's writes
# to / stay in the guest (its root is an overlay on a tmpfs).
[ -f /etc/mcp-execd-tier/marker ] || { echo "not in the test bed's VM: nothing to check"; exit 77; }
fail=0
for d in "$MCP_EXECD_SRC" "$MCP_EXECD_BUILD"; do
	if touch "$d/.tier-write-probe" 2>/dev/null; then
		echo "FAIL: $d is writable from the guest"; rm -f "$d/.tier-write-probe"; fail=1
	else
		echo "read-only as it should be: $d"
	fi
done
root=$(findmnt -no FSTYPE /)
echo "/ is $root"
[ "$root" = overlay ] || { echo "FAIL: / is not the overlay"; fail=1; }
echo "/tmp is $(findmnt -no FSTYPE /tmp)"
exit $fail
