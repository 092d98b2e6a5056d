#!/usr/bin/env bash
# build.sh: the mcp-execd container image, an OCI archive built without Docker or a registry:
# Debian 12 from Debian's archive (mmdebstrap, --variant=essential: no apt, no init), the
# mcp-execd package built from this tree, and the Python stack the README promises. See
# docs/container.md (what is in it and why, how to run it).
#
#   deploy/image/build.sh [--deb FILE] [--out DIR] [--cache DIR] [--mirror URL]
#
#   --deb FILE    the mcp-execd .deb to install (default: built from this tree with
#                 dpkg-buildpackage into OUT/deb/)
#   --out DIR     where the archive goes (default: ./build-image)
#   --cache DIR   the downloaded .debs, kept between builds (default: OUT/apt-cache); two builds
#                 that share it download once
#   --mirror URL  Debian's archive (default http://deb.debian.org/debian; its security suite is
#                 URL-security, i.e. http://deb.debian.org/debian-security by default)
#
# Writes OUT/mcp-execd_<version>_<arch>.oci.tar (an OCI image layout in a tar, with a Docker
# manifest.json beside it: `podman load` and `docker load` take it) and prints its image digest.
# Reproducible: with the same SOURCE_DATE_EPOCH (default: the last commit's date, else
# debian/changelog's), the same .deb and the same archive contents, two builds give the same
# bytes. Needs root (mmdebstrap's root mode: device nodes, ownership) and mmdebstrap
# (scripts/deps.sh test installs it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
src=$(cd "$here/../.." && pwd -P)
deb= out=$PWD/build-image cache= mirror=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
	case $1 in
	--deb) deb=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--cache) cache=$2; shift 2 ;;
	--mirror) mirror=$2; shift 2 ;;
	-h|--help) sed -n '2,22s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "build.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "build.sh: needs root (mmdebstrap's root mode)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "build.sh: mmdebstrap is not installed (scripts/deps.sh test)" >&2; exit 1; }
mkdir -p "$out" && out=$(cd "$out" && pwd -P)
cache=${cache:-$out/apt-cache}
mkdir -p "$cache" && cache=$(cd "$cache" && pwd -P)

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct 2>/dev/null ||
		date -d "$(dpkg-parsechangelog -l "$src/debian/changelog" -S Date)" +%s)
fi
export SOURCE_DATE_EPOCH

if [ -z "$deb" ]; then
	# The package from a copy of the tree as a clean clone has it (no build dirs).
	work=$out/deb/src
	rm -rf "$out/deb" && mkdir -p "$work"
	(cd "$src" && git ls-files -z -co --exclude-standard | tar --null -cf - -T -) | tar -C "$work" -xf -
	(cd "$work" && DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -us -uc -b) \
		> "$out/deb/build.log" 2>&1 || { tail -n 30 "$out/deb/build.log" >&2; exit 1; }
	deb=$(ls "$out"/deb/mcp-execd_*.deb)
fi
deb=$(cd "$(dirname "$deb")" && pwd -P)/$(basename "$deb")
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)

# What the daemon and its runs use, and nothing else. The package pulls python3, pip and venv
# (execute_python's installer) and its libraries; the scientific stack is the README's. Two
# packages name the cheap side of an alternative that apt would otherwise take the first of:
# python3-fonttools (matplotlib's) depends on "python3-scipy | python3-munkres" and
# "python3-ufolib2 | python3-defcon", and scipy brings pythran, gcc, g++ and the boost headers
# (56 packages more).
python_stack=python3-numpy,python3-pandas,python3-matplotlib,python3-pil,python3-yaml,python3-jinja2,python3-packaging
python_stack+=,python3-munkres,python3-ufolib2

rootfs=$out/rootfs.tar
# The customize hook, in order: what nothing in a container reads (documentation, manuals, info
# pages, translations: the daemon and Python run in the C locale; lintian's overrides), the
# copyright files kept; removed here rather than by dpkg path excludes, which break here (the
# essential packages are unpacked by tar before dpkg installs them, and a later package's
# /usr/share/locale/*/LC_MESSAGES then fails to unpack into a shared directory dpkg skipped); the
# users the package reserves (sysusers.d, which postinst
# cannot apply without systemd); no token baked into an image every container shares (each
# container gets its own through a secret or a file, docs/container.md); no copy of the host's
# resolv.conf and hostname (they would make the image depend on the build host); the dpkg
# configuration mmdebstrap leaves (it names the excludes, and nothing installs packages later).
customize='set -e
	find "$1/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
	find "$1/usr/share/doc" -mindepth 1 -type d -empty -delete
	rm -rf "$1/usr/share/man" "$1/usr/share/info" "$1/usr/share/lintian" "$1/usr/share/locale"
	while read -r t name uid gecos; do
		[ "$t" = u ] || continue
		gecos=$(echo "$gecos" | sed -E "s/^\"([^\"]*)\".*/\\1/")
		echo "$name:x:$uid:$uid:$gecos:/nonexistent:/usr/sbin/nologin" >> "$1/etc/passwd"
		echo "$name:x:$uid:" >> "$1/etc/group"
		echo "$name:!*:0::::::" >> "$1/etc/shadow"
	done < "$1/usr/lib/sysusers.d/mcp-execd.conf"
	rm -rf "$1/etc/mcp-execd" "$1/etc/resolv.conf" "$1/etc/hostname"
	rm -f "$1/var/cache/debconf/"*-old "$1/var/lib/dpkg/"*-old "$1/etc/dpkg/dpkg.cfg.d/99mmdebstrap"'

t0=$SECONDS
mmdebstrap --mode=root --variant=essential --arch="$arch" --format=tar \
	--include="$python_stack" --include="$deb" \
	--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
	--dpkgopt=force-unsafe-io \
	--aptopt='Acquire::Languages "none"' --aptopt='APT::Install-Recommends "false"' \
	--skip=essential/unlink \
	--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
	--setup-hook="sync-in $cache /var/cache/apt/archives/" \
	--customize-hook="sync-out /var/cache/apt/archives $cache" \
	--customize-hook="$customize" \
	--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
	bookworm "$rootfs" \
	"deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
	"deb $mirror-security bookworm-security main" > "$out/mmdebstrap.log" 2>&1 || {
	tail -n 30 "$out/mmdebstrap.log" >&2
	# A failed install leaves the file-mirror-automount hook's bind mount of the .deb, and
	# mmdebstrap cannot remove its directory: undo both.
	findmnt -rn -o TARGET | grep -E "^/tmp/mmdebstrap\.[^/]+$deb\$" | while read -r m; do
		umount "$m" && rm -rf "${m%"$deb"}"
	done
	exit 1
}
echo "build.sh: root filesystem in $((SECONDS - t0)) s" >&2

t0=$SECONDS
image=$out/mcp-execd_${version}_${arch}.oci.tar
python3 "$here/oci-archive.py" --rootfs "$rootfs" --out "$image" --name "mcp-execd:$version" \
	--version "$version" --arch "$arch" --revision "$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)"
echo "build.sh: OCI archive in $((SECONDS - t0)) s" >&2
rm -f "$rootfs"
