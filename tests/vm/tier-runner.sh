#!/bin/bash
# Runs the systemd tier's tests one after another, each under its own deadline, and records
# each result in a directory. Used the same way in the guest (by guest-tier.sh) and on a
# machine that has systemd and cgroup v2 itself (by run-tier.sh, "direct" mode).
#
#   tier-runner.sh --results DIR [--test-timeout SECS] TEST_FILE...
#
# Environment: MCP_EXECD (daemon binary) and MCP_EXECD_SRC (checkout), passed on to tests.
# Writes into DIR:  started (uptime, epoch), tests/NAME.{rc,log,secs}, done.
# A test's own deadline can be set by a line "# tier-timeout: SECS" in its first 20 lines.
set -u
results= test_timeout=120
while [ $# -gt 0 ]; do
	case $1 in
	--results) results=$2; shift 2 ;;
	--test-timeout) test_timeout=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ -n "$results" ] || { echo "tier-runner: --results is required" >&2; exit 2; }
mkdir -p "$results/tests"
now() { cut -d' ' -f1 /proc/uptime; }
echo "$(now) $(date +%s)" > "$results/started"

export MCP_EXECD MCP_EXECD_SRC MCP_EXECD_BUILD
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
export LC_ALL=C.UTF-8
passed=0 failed=0 skipped=0
for t in "$@"; do
	base=${t##*/}
	name=${base%.*}
	case $base in
	*.py) interp=python3 ;;
	*) interp=bash ;;
	esac
	limit=$(head -n 20 "$t" 2>/dev/null | sed -n 's/^#[[:space:]]*tier-timeout:[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -n1)
	limit=${limit:-$test_timeout}
	work=$(mktemp -d "${TMPDIR:-/tmp}/tier-$name.XXXXXX")
	t0=$(now)
	echo "tier: RUN  $name (deadline ${limit}s)"
	( cd "$work" && TIER_TEST_TMPDIR=$work exec timeout -k 5 "$limit" "$interp" "$t" ) \
		</dev/null > "$results/tests/$name.log" 2>&1
	rc=$?
	t1=$(now)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "tier-runner: test cut off at its deadline of ${limit}s (exit $rc)" >> "$results/tests/$name.log"
	fi
	rm -rf "$work"
	echo "$secs" > "$results/tests/$name.secs"
	echo "$rc" > "$results/tests/$name.rc.tmp" && mv "$results/tests/$name.rc.tmp" "$results/tests/$name.rc"
	case $rc in
	0) passed=$((passed + 1)); word=PASS ;;
	77) skipped=$((skipped + 1)); word=SKIP ;;
	*) failed=$((failed + 1)); word=FAIL ;;
	esac
	echo "tier: $word $name (${secs}s, exit $rc)"
done
echo "$(now) $passed $failed $skipped" > "$results/done"
sync
[ $failed -eq 0 ]
