#!/bin/sh
# /init of the test bed's initramfs (run by busybox sh as the guest's first process).
# Mounts the host's root read-only over 9p, puts a tmpfs-backed overlay on top (the guest
# can write; nothing reaches the host), and switch_roots into systemd with the tier's
# oneshot unit as its only goal. The shares (checkout, build, results) are mounted later by
# that unit, after systemd-tmpfiles has run. See tests/vm/README.md.
export PATH=/bin:/sbin
msg() { echo "tier-init: $*" > /dev/console; }
die() {
	msg "FATAL: $*"
	echo o > /proc/sysrq-trigger
	sleep 5
	exit 1
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
echo 1 > /proc/sys/kernel/sysrq
msg "started at $(cut -d' ' -f1 /proc/uptime)s of uptime"

for m in $(cat /modules.order); do
	[ -f "/lib/modules/$m.ko" ] || continue
	insmod "/lib/modules/$m.ko" 2>/dev/null || msg "insmod $m failed"
done

msg "modules loaded at $(cut -d' ' -f1 /proc/uptime)s"
O9P="trans=virtio,version=9p2000.L,msize=262144"
mkdir -p /lower /upper /newroot
mount -t 9p -o "$O9P,ro,cache=loose" hostroot /lower || die "cannot mount the host root over 9p"
mount -t tmpfs -o mode=0755 tmpfs /upper || die "tmpfs"
mkdir -p /upper/data /upper/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work /newroot \
	|| die "cannot mount the overlay"

# The guest is not a container: without this systemd says "Detected virtualization docker".
rm -f /newroot/.dockerenv /newroot/run/.containerenv
# The host's fstab is not the guest's; a fresh /tmp, private to the guest.
: > /newroot/etc/fstab
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
# Boot time under emulation: no generators (nothing in fstab, no gettys, no sysv scripts), and
# none of the units that only slow the boot of a machine with no devices, clock or binfmts
# to care about. systemd, journald, dbus, tmpfiles and the cgroup tree are all real.
mkdir -p /newroot/etc/systemd/system-generators
for g in /newroot/lib/systemd/system-generators/* /newroot/usr/lib/systemd/system-generators/*; do
	[ -e "$g" ] && ln -sf /dev/null "/newroot/etc/systemd/system-generators/${g##*/}"
done
for u in $(cat /masked-units); do
	ln -sf /dev/null "/newroot/etc/systemd/system/$u"
done
# The tier's unit, its script and this run's configuration.
mkdir -p /newroot/etc/mcp-execd-tier
cp /tier/* /newroot/etc/mcp-execd-tier/
chmod 0755 /newroot/etc/mcp-execd-tier/guest-tier.sh
cp /tier/mcp-execd-tier.service /newroot/etc/systemd/system/mcp-execd-tier.service

mount --move /dev /newroot/dev 2>/dev/null || umount /dev
umount /sys /proc 2>/dev/null
msg "switching root to systemd"
export TERM=dumb   # plain status lines on the serial console (no colours, no animation)
exec switch_root /newroot /lib/systemd/systemd --unit=mcp-execd-tier.service
