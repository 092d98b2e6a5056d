#!/bin/bash
# units/: systemd-analyze verify passes for mcp-execd.service, .socket and .slice, and for an
# instance of the fleet's templates mcp-execd@.service and @.socket (with the man page of
# Documentation= resolvable), and systemd-analyze security scores the service 3.0 or lower, both
# on the file (--offline) and on the unit loaded by PID 1, and so does an instance of the template.
# tier-timeout: 300
set -u
build=${MCP_EXECD_BUILD:?}
src=${MCP_EXECD_SRC:?}
tmp=$(mktemp -d)
loaded=
cleanup() {
	if [ -n "$loaded" ]; then
		rm -f /run/systemd/system/mcp-execd.service /run/systemd/system/mcp-execd.socket \
			/run/systemd/system/mcp-execd.slice /run/systemd/system/mcp-execd@.service \
			/run/systemd/system/mcp-execd@.socket
		systemctl daemon-reload
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

[ -f "$build/units/mcp-execd.service" ] || fail "$build/units/mcp-execd.service was not generated (units/meson.build)"
# The unit as meson generated it, with ExecStart= pointing at the binary under test.
exec_start=$(sed -n 's/^ExecStart=//p' "$build/units/mcp-execd.service")
echo "generated ExecStart=$exec_start"
case $exec_start in /*/mcp-execd) ;; *) fail "ExecStart= is not an absolute path to mcp-execd: $exec_start" ;; esac
sed "s|^ExecStart=.*|ExecStart=$MCP_EXECD|" "$build/units/mcp-execd.service" > "$tmp/mcp-execd.service"
cp "$src/units/mcp-execd.socket" "$src/units/mcp-execd.slice" "$tmp/"
[ -f "$build/units/mcp-execd@.service" ] || fail "$build/units/mcp-execd@.service was not generated (units/meson.build)"
sed "s|^ExecStart=.*|ExecStart=$MCP_EXECD|" "$build/units/mcp-execd@.service" > "$tmp/mcp-execd@.service"
cp "$src/units/mcp-execd@.socket" "$tmp/"
# systemd-analyze verify reads files by name: the instance 8081 of each template, specifiers
# resolved as systemd would.
sed 's/%i/8081/g' "$tmp/mcp-execd@.service" > "$tmp/mcp-execd@8081.service"
# An instance's runtime and cache directories are its own, not inside the single unit's (issue
# 29.8: stopping mcp-execd.service removes /run/mcp-execd with everything in it).
for key in RuntimeDirectory CacheDirectory; do
	single=$(sed -n "s/^$key=//p" "$tmp/mcp-execd.service")
	inst=$(sed -n "s/^$key=//p" "$tmp/mcp-execd@8081.service")
	echo "$key: $single, instance $inst"
	case $inst in "$single" | "$single"/*) fail "$key= of an instance ($inst) is inside the single unit's ($single)" ;; esac
done
sed 's/%i/8081/g' "$tmp/mcp-execd@.socket" > "$tmp/mcp-execd@8081.socket"
mkdir -p "$tmp/man/man8"
cp "$src/units/mcp-execd.8" "$tmp/man/man8/"   # so that Documentation=man:mcp-execd(8) resolves

rc=0
echo "== systemd-analyze verify"
out=$(cd "$tmp" && MANPATH="$tmp/man:" systemd-analyze verify ./mcp-execd.service ./mcp-execd.socket ./mcp-execd.slice \
	./mcp-execd@8081.service ./mcp-execd@8081.socket 2>&1) || rc=1
[ -n "$out" ] && echo "$out"
# verify exits 0 on some warnings too: any line about our files is a finding.
if grep -E 'mcp-execd\.(service|socket|slice)|man:mcp-execd' <<<"$out" | grep -v '^$' >/dev/null; then
	rc=1
fi
[ $rc -eq 0 ] && echo "verify: clean" || echo "verify: FAILED"

echo "== man page"
# Rendered with groff directly (warnings on), with a deadline: man(1) itself may wait on its cache.
page=$(timeout 30 groff -man -Tascii -ww -P-cbu "$src/units/mcp-execd.8" 2>"$tmp/groff.err") || { echo "groff failed"; rc=1; }
[ -s "$tmp/groff.err" ] && { echo "groff warnings:"; cat "$tmp/groff.err"; rc=1; }
for s in NAME SYNOPSIS ENVIRONMENT "RESULT FIELDS" "JOURNAL FIELDS" METRICS "EXIT STATUS" FILES EXAMPLES; do
	grep -q "^$s" <<<"$page" || { echo "man page lacks the section $s"; rc=1; }
done
# Every MESSAGE_ID the daemon sends is documented.
for id in $(grep -o 'METRICS_MESSAGE_[A-Z_]* "[0-9a-f]*"' "$src/metrics/metrics.h" | grep -o '[0-9a-f]\{32\}'); do
	grep -q "$id" <<<"$page" || { echo "man page lacks MESSAGE_ID $id"; rc=1; }
done

score_of() { sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' | tail -n1; }
check_score() {   # LABEL SCORE
	[ -n "$2" ] || { echo "security ($1): no score printed"; rc=1; return; }
	echo "systemd-analyze security ($1): $2 (must be <= 3.0)"
	awk -v s="$2" 'BEGIN { exit !(s <= 3.0) }' || rc=1
}
echo "== systemd-analyze security --offline=true"
sec=$(cd "$tmp" && systemd-analyze security --offline=true --no-pager ./mcp-execd.service 2>&1)
grep -E '^✗' <<<"$sec" | sed 's/^/  /'
check_score offline "$(score_of <<<"$sec")"

echo "== systemd-analyze security mcp-execd.service (loaded by PID 1)"
cp "$tmp/mcp-execd.service" "$tmp/mcp-execd.socket" "$tmp/mcp-execd.slice" /run/systemd/system/
loaded=1
systemctl daemon-reload
sec=$(systemd-analyze security --no-pager mcp-execd.service 2>&1)
check_score loaded "$(score_of <<<"$sec")"

echo "== systemd-analyze security mcp-execd@8081.service (the fleet's template, loaded by PID 1)"
cp "$tmp/mcp-execd@.service" "$tmp/mcp-execd@.socket" /run/systemd/system/
systemctl daemon-reload
sec=$(systemd-analyze security --no-pager mcp-execd@8081.service 2>&1)
check_score "template instance" "$(score_of <<<"$sec")"
exit $rc
