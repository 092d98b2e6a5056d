#!/bin/bash
# The bed itself: a pure cgroup v2 hierarchy whose root offers cpu io memory pids.
fs=$(stat -fc %T /sys/fs/cgroup)
echo "/sys/fs/cgroup is $fs"
[ "$fs" = cgroup2fs ] || { echo "not a pure cgroup v2 hierarchy"; exit 1; }
ctl=$(cat /sys/fs/cgroup/cgroup.controllers)
echo "cgroup.controllers: $ctl"
for c in cpu io memory pids; do
	grep -qw "$c" <<<"$ctl" || { echo "missing controller: $c"; exit 1; }
done
echo "our cgroup: $(cat /proc/self/cgroup)"
