#!/usr/bin/env bash
# build-image.sh: the container image the systemd tier's 70-container-image and 71-kube-play run,
# built twice on the host (deploy/image/build.sh) beside the guest, which has no network: the two
# builds, of the same .deb with the same SOURCE_DATE_EPOCH (build.sh's default, from the tree's
# last commit) and sharing one download cache, must give the same archive (the image's
# reproducibility, which 70 checks). Started in the background
# by run-tier.sh once the packages are built, so that it overlaps the guest's boot and its first
# tests instead of delaying them.
#
#   build-image.sh SRC DEB OUT
#
# Writes into OUT (the build dir's image/, which the guest sees read-only):
#   a/mcp-execd_<version>_<arch>.oci.tar, b/…   the two builds
#   apt-cache/                                  the downloaded .debs (kept for the next run)
#   build.log                                   both builds' output
#   done                                        last, when both are there: "a-file b-file a-digest
#                                               b-digest same|differ a-secs b-secs" (one line;
#                                               same: the two archives are byte for byte equal)
#   failed                                      instead of done: why
# The guest polls for done or failed by name (the share is cached: never list it).
#   MCP_EXECD_IMAGE_REUSE=1 keeps the builds OUT already has (when iterating on the tests only).
set -uo pipefail
src=$1 deb=$2 out=$3
if [ "${MCP_EXECD_IMAGE_REUSE:-}" = 1 ] && [ -s "$out/done" ]; then
	echo "build-image.sh: reusing the builds in $out (MCP_EXECD_IMAGE_REUSE=1)"
	exit 0
fi
mkdir -p "$out" || exit 1
rm -f "$out/done" "$out/failed"
log="$out/build.log"
: > "$log"
fail() { echo "$*" > "$out/failed.new"; mv "$out/failed.new" "$out/failed"; echo "build-image.sh: $*" >&2; exit 1; }
[ -f "$deb" ] || fail "no package $deb (tests/vm/build-debs.sh failed?)"
res=()
for b in a b; do
	rm -rf "${out:?}/$b"
	t0=$SECONDS
	digest=$(nice "$src/deploy/image/build.sh" --deb "$deb" --out "$out/$b" --cache "$out/apt-cache" 2>>"$log") ||
		fail "build $b failed: $(tail -n 5 "$log" | tr '\n' ' ')"
	file=$(cd "$out/$b" && ls mcp-execd_*.oci.tar) || fail "build $b wrote no archive"
	res+=("$b/$file" "$digest" "$((SECONDS - t0))")
	echo "build $b: $digest in $((SECONDS - t0)) s" >> "$log"
done
same=differ
cmp -s "$out/${res[0]}" "$out/${res[3]}" && same=same
echo "${res[0]} ${res[3]} ${res[1]} ${res[4]} $same ${res[2]} ${res[5]}" > "$out/done.new" && mv "$out/done.new" "$out/done"
cat "$out/done"
