#!/bin/bash
# The bed itself: a transient scope with MemoryMax=64M around a 200 MB allocation ends with
# the scope's Result oom-kill.
# tier-timeout: 120
unit=tier-oom-$$-$RANDOM.scope
cleanup() { systemctl reset-failed "$unit" 2>/dev/null; systemctl stop "$unit" 2>/dev/null; }
trap cleanup EXIT
systemd-run --quiet --scope --unit="$unit" -p MemoryMax=64M -p MemorySwapMax=0 \
	python3 -c 'b = bytearray(b"\x01") * (200 * 1024 * 1024); print("allocated", len(b))'
rc=$?
echo "systemd-run exited $rc"
props=$(systemctl show -p Result -p ActiveState -p MemoryMax "$unit")
echo "$props"
grep -qx 'Result=oom-kill' <<<"$props" || { echo "expected Result=oom-kill"; exit 1; }
[ $rc -ne 0 ] || { echo "the allocation was not killed"; exit 1; }
