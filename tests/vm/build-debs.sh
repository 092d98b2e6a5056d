#!/usr/bin/env bash
# build-debs.sh: the Debian packages the systemd tier's 46-debian-package installs, built on the
# host before the guest boots (the guest builds nothing: it has no network and is 15-40 times
# slower). Called by run-tier.sh when 46 is among the tests.
#
#   build-debs.sh SRC OUT
#
# Writes into OUT (the build dir's debian-pkg/, which the guest sees read-only):
#   v1/mcp-execd_<version>_<arch>.deb   the tree as it is (debian/changelog's version)
#   v2/mcp-execd_<version>+tier1_<arch>.deb
#                                       the same tree with the version bumped in a copy of
#                                       debian/changelog and meson.build, so that the binary
#                                       differs (--version, the "started" record's VERSION)
#   lintian.txt, lintian.rc             lintian on v1's .changes (no -i: tags only)
#   build.log                           both builds
#   skip                                present when the packages cannot be built here (why)
# Both builds use DEB_BUILD_OPTIONS=nocheck: the unit tier already ran these tests on this tree
# (README's `dpkg-buildpackage -us -uc -b` runs them, through dh_auto_test).
#   MCP_EXECD_DEBS_REUSE=1 keeps the packages OUT already has (when iterating on the test only).
set -uo pipefail
src=$1 out=$2
if [ "${MCP_EXECD_DEBS_REUSE:-}" = 1 ] && [ -f "$out/lintian.rc" ] && ls "$out"/v1/*.deb "$out"/v2/*.deb 2>/dev/null; then
	echo "build-debs.sh: reusing the packages in $out (MCP_EXECD_DEBS_REUSE=1)"
	exit 0
fi
rm -rf "$out" && mkdir -p "$out" || exit 1
log="$out/build.log"
for tool in dpkg-buildpackage dh lintian fakeroot; do
	if ! command -v "$tool" >/dev/null; then
		echo "$tool is not installed (scripts/deps.sh test installs debhelper, dpkg-dev, lintian, fakeroot)" > "$out/skip"
		exit 0
	fi
done

# A copy of the tree as a clean clone would have it: tracked and untracked-but-not-ignored files
# (so no build dirs), or, outside git, the tree without build*/ and node_modules/.
copy_tree() {   # DEST
	mkdir -p "$1"
	if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
		(cd "$src" && git ls-files -z -co --exclude-standard | tar --null -cf - -T -) | tar -C "$1" -xf -
	else
		tar -C "$src" --exclude='./build*' --exclude=node_modules --exclude=./tests/vm/cache -cf - . |
			tar -C "$1" -xf -
	fi
}

build_one() {   # NAME [VERSION-SUFFIX]
	local work="$out/work-$1" tree
	tree="$work/mcp-execd"
	copy_tree "$tree" || return 1
	if [ -n "${2:-}" ]; then
		local v
		v=$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Version)
		{
			printf 'mcp-execd (%s%s) unstable; urgency=medium\n\n  * Tier test build: version bumped.\n\n' "$v" "$2"
			printf ' -- %s  %s\n\n' "$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Maintainer)" "$(date -R)"
			cat "$tree/debian/changelog"
		} > "$tree/debian/changelog.new" && mv "$tree/debian/changelog.new" "$tree/debian/changelog"
		sed -i -E "0,/version : '([^']*)'/s//version : '\\1$2'/" "$tree/meson.build"
	fi
	echo "== build $1 $(dpkg-parsechangelog -l "$tree/debian/changelog" -S Version)" >> "$log"
	(cd "$tree" && DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" nice dpkg-buildpackage -us -uc -b) >> "$log" 2>&1 ||
		{ echo "dpkg-buildpackage failed ($1); see $log" >&2; tail -n 30 "$log" >&2; return 1; }
	mkdir -p "$out/$1"
	mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out/$1/"
	rm -rf "$work"
}

build_one v1 || exit 1
build_one v2 +tier1 || exit 1
# lintian as root warns about it on stderr; the tags go to lintian.txt.
lintian --pedantic "$out"/v1/*.changes > "$out/lintian.txt" 2> "$out/lintian.err"
echo $? > "$out/lintian.rc"
ls "$out"/v1/*.deb "$out"/v2/*.deb
