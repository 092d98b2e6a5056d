#!/bin/bash
# The systemd tier of mcp-execd's test suite: runs tests/systemd/* against a real systemd
# (PID 1) with a pure cgroup v2 hierarchy, directly when this machine has one, otherwise in a
# small VM booted here (qemu, software emulation). See tests/vm/README.md.
#
#   run-tier.sh --build-dir DIR [--test NAME]... [--results DIR] [--timeout SECS]
#               [--boot-timeout SECS] [--test-timeout SECS] [--mode auto|direct|vm] [--shell]
#
# Prints one line per test (PASS/FAIL/SKIP NAME, a failing test's output tail) and ends with
# "tier systemd: N passed, M failed" (", K skipped" follows when K > 0). Exit 0 iff no test
# failed. When the tier can run neither directly nor in a VM it prints
# "tier systemd: SKIPPED (why)" and exits 0, or 1 under CI=true.
# --shell (VM only, for debugging): runs the --test ones (if any), then gives an interactive
# root shell in the guest on this terminal, with the tests' environment; exit it to power off.
set -u
set -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
src=$(cd "$here/../.." && pwd -P)
build= results= mode=${MCP_EXECD_TIER_MODE:-auto}
# The whole tier, boot included. The target is under 10 minutes on an idle 2-core machine without
# the full 1 000-run soak (MCP_EXECD_SOAK_RUNS=1000), which alone takes 10-25 minutes under emulation (the
# tier reports every test's time); this deadline only cuts off a hung guest, and leaves room for a
# loaded host, where emulation slows down several times (CI's whole run has 90 minutes).
timeout=${MCP_EXECD_TIER_TIMEOUT:-3600}
test_timeout=${MCP_EXECD_TIER_TEST_TIMEOUT:-120} # each test, unless it says otherwise
boot_timeout=${MCP_EXECD_TIER_BOOT_TIMEOUT:-240} # the VM, from qemu's start to the first test
qemu_bin=${MCP_EXECD_VM_QEMU:-qemu-system-x86_64}
selected=()
shell= timeout_given=

usage() { sed -n '2,16s/^# \{0,1\}//p' "$0"; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) build=$2; shift 2 ;;
	--test) selected+=("$2"); shift 2 ;;
	--results) results=$2; shift 2 ;;
	--timeout) timeout=$2; timeout_given=1; shift 2 ;;
	--shell) shell=1; shift ;;
	--test-timeout) test_timeout=$2; shift 2 ;;
	--boot-timeout) boot_timeout=$2; shift 2 ;;
	--mode) mode=$2; shift 2 ;;
	-h|--help) usage ;;
	*) echo "run-tier.sh: unknown argument: $1" >&2; usage ;;
	esac
done
[ -n "$build" ] || { echo "run-tier.sh: --build-dir is required" >&2; usage; }
[ -d "$build" ] || { echo "run-tier.sh: no such build dir: $build" >&2; exit 2; }
build=$(cd "$build" && pwd -P)
case $mode in auto|direct|vm) ;; *) echo "run-tier.sh: bad --mode $mode" >&2; exit 2 ;; esac
results=${results:-$build/tier-systemd}
mkdir -p "$results" && results=$(cd "$results" && pwd -P)
run="$results/run"          # written by the runner (the only share the guest may write)
console="$results/console.log"

say() { echo "tier systemd: $*"; }
t_start=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

skipped_tier() {
	say "SKIPPED ($1)"
	if [ "${CI:-}" = true ]; then
		echo "CI=true: the systemd tier may not be skipped under CI"
		say "0 passed, 1 failed"
		exit 1
	fi
	exit 0
}

# ---- the tests --------------------------------------------------------------------------
all_tests=()
for f in "$src"/tests/systemd/[0-9]*-*.sh "$src"/tests/systemd/[0-9]*-*.py; do
	[ -f "$f" ] && all_tests+=("tests/systemd/${f##*/}")
done
# Demonstrations, never part of the suite: a failing test, a hanging test, a panicking guest.
[ "${MCP_EXECD_VM_DEMO_FAIL:-}" = 1 ] && all_tests+=("tests/vm/demo/98-demo-fail.sh")
[ "${MCP_EXECD_VM_DEMO_HANG:-}" = 1 ] && all_tests+=("tests/vm/demo/98-demo-hang.sh")
[ "${MCP_EXECD_VM_DEMO_PANIC:-}" = 1 ] && all_tests+=("tests/vm/demo/99-demo-panic.sh")
[ "${MCP_EXECD_VM_DEMO_FREEZE:-}" = 1 ] && all_tests+=("tests/vm/demo/99-demo-freeze.sh")
# A check of the harness itself: in the VM, run-tier.sh must pick direct mode.
[ "${MCP_EXECD_VM_CHECK_DIRECT:-}" = 1 ] && all_tests+=("tests/vm/demo/97-direct-mode.sh")
mapfile -t all_tests < <(printf '%s\n' "${all_tests[@]}" | awk -F/ '{ print $NF "\t" $0 }' | sort | cut -f2 | awk NF)

tests=()
if [ ${#selected[@]} -eq 0 ] && [ -n "$shell" ]; then
	tests=()
elif [ ${#selected[@]} -eq 0 ]; then
	tests=("${all_tests[@]}")
else
	for want in "${selected[@]}"; do
		want=${want##*/}
		hit=
		for t in "${all_tests[@]}"; do
			b=${t##*/}
			case $want in
			"$b"|"${b%.*}"|"${b%%-*}") tests+=("$t"); hit=1 ;;
			esac
		done
		[ -n "$hit" ] || { echo "run-tier.sh: no test named $want in tests/systemd/" >&2; exit 2; }
	done
fi
[ ${#tests[@]} -gt 0 ] || [ -n "$shell" ] || { say "0 passed, 1 failed"; echo "FAIL (no tests found in tests/systemd/)"; exit 1; }
names=()
for t in "${tests[@]}"; do b=${t##*/}; names+=("${b%.*}"); done

# 46-debian-package installs Debian packages built here, on the host, before the guest boots
# (the guest has no network and emulates 15-40 times slower): tests/vm/build-debs.sh writes them
# into the build dir, which the guest sees read-only at the same path. The tests that run the
# container image (a line "# tier-needs: container-image" in their head) need the package too,
# and the image, which tests/vm/build-image.sh builds from it in the background, beside the guest.
image_tests=()
for t in "${tests[@]}"; do
	head -n 20 "$src/$t" | grep -q '^# tier-needs: container-image' && { b=${t##*/}; image_tests+=("${b%.*}"); }
done
debs_for=
for n in "${names[@]}"; do [ "$n" = 46-debian-package ] && debs_for=$n; done
[ -z "$debs_for" ] && [ ${#image_tests[@]} -gt 0 ] && debs_for=${image_tests[0]}
for n in $debs_for; do
	say "building the Debian packages for $n (tests/vm/build-debs.sh into $build/debian-pkg)"
	t_debs=$(date +%s.%N)
	if "$here/build-debs.sh" "$src" "$build/debian-pkg" > "$results/build-debs.log" 2>&1; then
		say "packages built in $(elapsed "$t_debs")s"
	else
		say "building the packages failed (see $results/build-debs.log); $n will fail"
		tail -n 20 "$results/build-debs.log" | sed 's/^/    | /'
	fi
done
image_pid=
if [ ${#image_tests[@]} -gt 0 ]; then
	say "building the container image twice for ${image_tests[*]}, beside the guest (tests/vm/build-image.sh into $build/image, log in $results/build-image.log)"
	[ "${MCP_EXECD_IMAGE_REUSE:-}" = 1 ] || rm -f "$build/image/done" "$build/image/failed"
	setsid "$here/build-image.sh" "$src" "$(ls "$build"/debian-pkg/v1/mcp-execd_*.deb 2>/dev/null | head -n 1)" \
		"$build/image" > "$results/build-image.log" 2>&1 < /dev/null &
	image_pid=$!
fi
# The image builds end with the tier: done (their times said), or cut off.
image_end() {
	[ -n "$image_pid" ] || return 0
	if kill -0 "$image_pid" 2>/dev/null; then
		kill -- -"$image_pid" 2>/dev/null
		say "the image builds were still running at the tier's end: stopped"
	elif [ -s "$build/image/done" ]; then
		read -r _ _ _ _ same sa sb < "$build/image/done"
		say "image built twice beside the guest: ${sa}s and ${sb}s, archives $same"
	fi
	image_pid=
}

# ---- reporting, the same for both modes ----------------------------------------------------
declare -A reported=()
n_pass=0 n_fail=0 n_skip=0
report_one() {   # NAME
	local name=$1 rc secs
	rc=$(cat "$run/tests/$name.rc" 2>/dev/null) || return 1
	secs=$(cat "$run/tests/$name.secs" 2>/dev/null)
	reported[$name]=1
	case $rc in
	0) n_pass=$((n_pass + 1)); echo "PASS $name (${secs}s)" ;;
	77) n_skip=$((n_skip + 1)); echo "SKIP $name ($(tail -n 1 "$run/tests/$name.log" 2>/dev/null))" ;;
	*) n_fail=$((n_fail + 1)); echo "FAIL $name (exit $rc, ${secs}s); last lines of its output:"
	   tail -n 25 "$run/tests/$name.log" 2>/dev/null | sed 's/^/    | /' ;;
	esac
}
report_new() { local n; for n in "${names[@]}"; do [ -n "${reported[$n]:-}" ] || report_one "$n" || break; done; }
report_missing() {   # WHY
	local n
	for n in "${names[@]}"; do
		[ -n "${reported[$n]:-}" ] && continue
		n_fail=$((n_fail + 1)); echo "FAIL $n (no result: $1)"
		if [ -s "$run/tests/$n.log" ]; then   # the one that was running
			echo "    its output so far:"
			tail -n 15 "$run/tests/$n.log" | sed 's/^/    | /'
		fi
	done
}
finish() {
	image_end
	local line="$n_pass passed, $n_fail failed"
	[ $n_skip -gt 0 ] && line="$line, $n_skip skipped"
	say "$line"
	[ $n_fail -eq 0 ]
	exit
}
prepare_run_dir() {
	rm -rf "$run" "$console"
	mkdir -p "$run/tests"
}

# ---- direct: this machine has systemd as PID 1 and cgroup v2 with the controllers -----------
has_controllers() {
	local c
	for c in cpu io memory pids; do grep -qw "$c" /sys/fs/cgroup/cgroup.controllers 2>/dev/null || return 1; done
}
direct_why=
if [ "$(cat /proc/1/comm 2>/dev/null)" != systemd ]; then
	direct_why="PID 1 is $(cat /proc/1/comm 2>/dev/null || echo unknown), not systemd"
elif [ "$(stat -fc %T /sys/fs/cgroup/ 2>/dev/null)" != cgroup2fs ]; then
	direct_why="/sys/fs/cgroup is not a pure cgroup v2 hierarchy"
elif ! has_controllers; then
	direct_why="/sys/fs/cgroup/cgroup.controllers lacks some of cpu io memory pids"
elif [ "$(id -u)" != 0 ]; then
	direct_why="not root (the tier starts scopes on the system manager)"
elif ! busctl --system status >/dev/null 2>&1; then
	direct_why="the system bus does not answer"
fi

if [ -n "$shell" ]; then
	mode=vm
	[ -t 0 ] || { echo "run-tier.sh: --shell needs a terminal" >&2; exit 2; }
	[ -n "$timeout_given" ] || timeout=14400
fi
if [ "$mode" = direct ] || { [ "$mode" = auto ] && [ -z "$direct_why" ]; }; then
	[ -z "$direct_why" ] || { say "cannot run directly: $direct_why"; say "0 passed, 1 failed"; exit 1; }
	prepare_run_dir
	say "running directly on this machine (systemd $(systemctl --version | head -n1 | cut -d' ' -f2), cgroup v2), ${#tests[@]} tests"
	MCP_EXECD="$build/daemon/mcp-execd" MCP_EXECD_SRC="$src" MCP_EXECD_BUILD="$build" \
	setsid -w timeout -k 10 "$timeout" bash "$here/tier-runner.sh" --results "$run" \
		--test-timeout "$test_timeout" -- "${tests[@]/#/$src/}" < /dev/null > "$results/runner.log" 2>&1 &
	pid=$!
	while kill -0 $pid 2>/dev/null; do report_new; sleep 1; done
	wait $pid; rc=$?
	report_new
	[ $rc -eq 124 ] && report_missing "the tier was cut off at its deadline of ${timeout}s"
	report_missing "the runner ended early (exit $rc)"
	say "tier took $(elapsed "$t_start")s"
	finish
fi

# ---- VM: what it needs ---------------------------------------------------------------------
vm_why=
pkgs=()
command -v "$qemu_bin" >/dev/null || pkgs+=(qemu-system-x86)
ls /boot/vmlinuz-* >/dev/null 2>&1 || pkgs+=(linux-image-amd64)
{ [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } || pkgs+=(busybox-static)
command -v cpio >/dev/null || pkgs+=(cpio)
command -v xz >/dev/null || pkgs+=(xz-utils)
command -v zstd >/dev/null || pkgs+=(zstd)
if [ ${#pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		vm_why="the VM needs ${pkgs[*]}, which only root can install (apt-get)"
	else
		say "installing ${pkgs[*]} (apt-get, log in $results/apt.log)"
		# INITRD=No: the host needs no initrd for the kernel the VM boots (saves a minute).
		export DEBIAN_FRONTEND=noninteractive INITRD=No
		inst() { timeout 600 apt-get -o DPkg::Lock::Timeout=240 install -y -q --no-install-recommends "${pkgs[@]}" >> "$results/apt.log" 2>&1; }
		inst || { timeout 300 apt-get -o DPkg::Lock::Timeout=240 update -q >> "$results/apt.log" 2>&1; inst; } \
			|| vm_why="apt-get install ${pkgs[*]} failed (see $results/apt.log)"
	fi
fi
kver=
if [ -z "$vm_why" ] && ! command -v "$qemu_bin" >/dev/null; then
	vm_why="$qemu_bin not found"
fi
if [ -z "$vm_why" ]; then
	for k in $(ls -v /boot/vmlinuz-* 2>/dev/null | tac); do
		v=${k#/boot/vmlinuz-}
		[ -d "/lib/modules/$v" ] && [ -r "$k" ] && { kver=$v; break; }
	done
	[ -n "$kver" ] || vm_why="no readable /boot/vmlinuz-* with its /lib/modules"
fi
if [ -n "$vm_why" ]; then
	[ "$mode" = vm ] && { say "cannot run in a VM: $vm_why"; say "0 passed, 1 failed"; exit 1; }
	skipped_tier "not directly: $direct_why; not in a VM: $vm_why"
fi

# ---- VM: the initramfs (cached: it depends only on the kernel, busybox and guest-init.sh) --
modules="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p overlay"
cache="$here/cache"
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache="$results/cache"
mkdir -p "$cache"
key=$( { echo "$kver $modules"; sha256sum /bin/busybox "$here/guest-init.sh" "$here/masked-units" "$0"; } | sha256sum | cut -c1-16)
base_cpio="$cache/initramfs-$kver-$key.cpio"
if [ ! -s "$base_cpio" ]; then
	stage=$(mktemp -d "$cache/stage.XXXXXX")
	(
		set -e
		cd "$stage"
		mkdir -p bin sbin proc sys dev lower upper newroot tier lib/modules tmp
		cp /bin/busybox bin/busybox
		for a in $(/bin/busybox --list); do
			[ "$a" = busybox ] || ln -s busybox "bin/$a"
		done
		cp "$here/guest-init.sh" init
		cp "$here/masked-units" masked-units
		chmod 0755 init
		: > modules.order
		find "/lib/modules/$kver/kernel" -name '*.ko*' > all-modules
		for m in $modules; do
			f=$(grep -E "/$m\.ko(\.xz|\.zst|\.gz)?\$" all-modules | head -n1)
			[ -n "$f" ] || continue   # built in
			case $f in
			*.xz) xz -dc "$f" ;;
			*.zst) zstd -qdc "$f" ;;
			*.gz) gzip -dc "$f" ;;
			*) cat "$f" ;;
			esac > "lib/modules/$m.ko"
			echo "$m" >> modules.order
		done
		rm all-modules
		find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 > "$base_cpio.tmp"
	) || { rm -rf "$stage" "$base_cpio.tmp"; say "could not build the initramfs"; say "0 passed, 1 failed"; exit 1; }
	mv "$base_cpio.tmp" "$base_cpio"
	rm -rf "$stage"
	# Stale ones (another kernel or version of these scripts), unless another run may use them.
	find "$cache" -maxdepth 1 -name 'initramfs-*.cpio' ! -name "${base_cpio##*/}" -mmin +120 -delete
	find "$cache" -maxdepth 1 -name 'stage.*' -mmin +120 -exec rm -rf {} +
fi

# This run's part: its configuration, the guest's script and unit, appended as a 2nd archive.
prepare_run_dir
q() { printf '%q' "$1"; }
stage=$(mktemp -d "$results/stage.XXXXXX")
mkdir -p "$stage/tier"
cat > "$stage/tier/config.env" <<CONF
TIER_SRC=$(q "$src")
TIER_BUILD=$(q "$build")
TIER_MCP_EXECD=$(q "$build/daemon/mcp-execd")
TIER_GUEST_RESULTS=/run/mcp-execd-tier/results
TIER_TESTS=$(q "${tests[*]}")
TIER_TEST_TIMEOUT=$(q "$test_timeout")
TIER_SHELL=$(q "$shell")
TIER_ENV=$(q "$(for v in CI MCP_EXECD_SOAK_RUNS; do [ -n "${!v:-}" ] && printf '%s=%q ' "$v" "${!v}"; done)")
CONF
cp "$here/guest-tier.sh" "$here/mcp-execd-tier.service" "$stage/tier/"
echo tier-vm > "$stage/tier/marker"
initrd="$results/initramfs.cpio"
{ cat "$base_cpio"; (cd "$stage" && find tier | cpio -o -H newc --quiet -R 0:0); } > "$initrd"
rm -rf "$stage"

vfs() { printf '%s' "$1" | sed 's/,/,,/g'; }   # qemu option values escape ',' as ',,'
mem=${MCP_EXECD_VM_MEM:-3072}
# no_timer_check: under emulation on a loaded host the kernel's IO-APIC timer check can time out
# and panic the guest at boot ("IO-APIC + timer doesn't work!"; seen here at load 20).
smp=$(nproc); [ "$smp" -gt 4 ] && smp=4
qemu=("$qemu_bin" -accel tcg -m "$mem" -smp "$smp" -nodefaults -no-user-config
	-display none -monitor none -no-reboot -serial "file:$console"
	-kernel "/boot/vmlinuz-$kver" -initrd "$initrd"
	-append "console=ttyS0 panic=1 oops=panic quiet loglevel=4 systemd.show_status=true no_timer_check ${MCP_EXECD_VM_KERNEL_ARGS:-}"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$(vfs "$src"),mount_tag=tiersrc,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$(vfs "$build"),mount_tag=tierbuild,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$(vfs "$run"),mount_tag=tierresults,security_model=none,multidevs=remap")
say "booting a VM (kernel $kver, TCG, $smp CPUs, ${mem} MiB; deadline ${timeout}s), ${#tests[@]} tests"
if [ -n "$shell" ]; then
	say "shell: the guest's console is this terminal (Ctrl-A x kills qemu); exit the shell to power off"
	qemu=("${qemu[@]/#file:$console/mon:stdio}")
	timeout --foreground -k 10 "$timeout" "${qemu[@]}"
	rc=$?
	[ -s "$run/done" ] || report_missing "the shell session ended first"
	for n in "${names[@]}"; do [ -n "${reported[$n]:-}" ] || report_one "$n"; done
	finish
fi
: > "$console"
timeout -k 10 "$timeout" "${qemu[@]}" > "$results/qemu.log" 2>&1 &
pid=$!
boot= boot_cut=
t_qemu=$(date +%s.%N)
while kill -0 $pid 2>/dev/null; do
	if [ -z "$boot" ] && [ -s "$run/started" ]; then
		boot=$(elapsed "$t_qemu")
		say "guest up after ${boot}s (guest uptime $(cut -d' ' -f1 "$run/started")s); running tests"
	elif [ -z "$boot" ] && [ -z "$boot_cut" ] && awk -v e="$(elapsed "$t_qemu")" -v l="$boot_timeout" 'BEGIN { exit !(e > l) }'; then
		boot_cut=1
		kill -TERM $pid 2>/dev/null   # timeout(1) passes it on to qemu
	fi
	report_new
	sleep 1
done
wait $pid; rc=$?
report_new
if [ ! -s "$run/done" ]; then
	if [ -n "$boot_cut" ]; then
		why="the guest did not reach the tier within the boot deadline of ${boot_timeout}s"
	elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		why="the guest was cut off at the tier's deadline of ${timeout}s"
	elif grep -q 'Kernel panic' "$console"; then
		why="the guest kernel panicked"
	else
		why="the guest stopped before the tier finished (qemu exit $rc)"
	fi
	echo "tier systemd: $why; last lines of the console ($console):"
	# (without escapes, and without systemd's animated "(1 of 3) Job ... running" lines)
	tr -d '\r' < "$console" | sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1b.//g' |
		grep -av '^M\?\[[ *]*\] ([0-9]* of [0-9]*) Job ' | tail -n 30 | sed 's/^/    > /'
	[ -s "$console" ] || echo "    (the console is empty: the kernel printed nothing yet; MCP_EXECD_VM_KERNEL_ARGS=loglevel=7 shows its boot)"
	[ -s "$results/qemu.log" ] && tail -n 5 "$results/qemu.log" | sed 's/^/    qemu: /'
	report_missing "$why"
fi
say "boot ${boot:-?}s, whole tier $(elapsed "$t_start")s (results in $results)"
finish
