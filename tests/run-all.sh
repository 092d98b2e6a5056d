#!/usr/bin/env bash
# run-all.sh: the whole test suite, as README.md's test command. On a fresh Debian 12 machine as
# root it installs what it needs, builds, and runs every tier:
#   unit      cmocka tests of each module, and the sandbox's API tests (meson test)
#   blackbox  the real binary driven over stdio by the official MCP SDK client (tests/blackbox)
#   systemd   real scopes and cgroup v2: directly under systemd, else in a small VM (tests/vm)
#   asan      a second build with -Db_sanitize=address,undefined (gcc; $ASAN_BUILD_DIR, default
#             build-asan): the meson tests (unit, fuzz corpora) and the black-box tier again under
#             it; any sanitizer report (ASan, LSan, UBSan) anywhere is a failure
# Each tier prints its own results; the last line is the total: "N passed, M failed".
# Exit status 0 iff nothing failed.
#   TIERS="unit blackbox" tests/run-all.sh     runs only some tiers
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd -P)
build=${BUILD_DIR:-$src/build-test}
tiers=${TIERS:-unit blackbox asan systemd}
passed=0 failed=0

add() { passed=$((passed + $1)); failed=$((failed + $2)); }
# Reads the "tier X: N passed, M failed" line of a tier's output file.
tier_counts() {
        local line
        line=$(grep -E "^tier $2: [0-9]+ passed, [0-9]+ failed" "$1" | tail -n 1)
        if [ -z "$line" ]; then
                if grep -qE "^tier $2: SKIPPED" "$1"; then
                        echo "0 0"
                else
                        echo "0 1" # the tier died without a summary: that is a failure
                fi
                return
        fi
        sed -E 's/^tier [a-z]+: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/' <<< "$line"
}

# The asan tier: everything runs with reports fatal and also written to files, so a report from a
# daemon whose exit status no test looks at (a leak at exit, say) still fails the tier.
asan_tier() {
        local b=${ASAN_BUILD_DIR:-$src/build-asan} t0=$SECONDS p=0 f=0 reports
        reports=$(mktemp -d)
        # GCC's -Wformat-truncation misfires on code instrumented by -fsanitize (false positives
        # on fixed-size snprintf buffers), so that one warning is not fatal here; the default
        # build keeps it.
        if [ ! -f "$b/build.ninja" ] &&
           ! meson setup "$b" "$src" -Db_sanitize=address,undefined -Dc_args=-Wno-format-truncation \
                >"$b.setup.log" 2>&1; then
                tail -n 20 "$b.setup.log"; echo "tier asan: 0 passed, 1 failed"; return
        fi
        if ! ninja -C "$b" >"$b.log" 2>&1; then
                tail -n 40 "$b.log"; echo "tier asan: 0 passed, 1 failed"; return
        fi
        export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_leaks=1:log_path=$reports/asan"
        export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
        export LSAN_OPTIONS="log_path=$reports/lsan"
        meson test -C "$b" --print-errorlogs --num-processes 2 >"$out/asan.meson" 2>&1
        grep -E '^ *[0-9]+/[0-9]+ ' "$out/asan.meson" | sed 's/^/meson: /'
        read -r mp mf < <(/usr/bin/python3 - "$b/meson-logs/testlog.json" <<'PY'
import json, sys
ok = bad = 0
try:
    for line in open(sys.argv[1]):
        r = json.loads(line)["result"]
        ok += r in ("OK", "EXPECTEDFAIL", "SKIP")
        bad += r not in ("OK", "EXPECTEDFAIL", "SKIP")
except OSError:
    bad = 1
print(ok, bad)
PY
)
        p=$((p + mp)) f=$((f + mf))
        # Sanitized daemons are slower: a longer per-file budget than the plain tier's.
        BLACKBOX_PASS_ENV="ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS" \
        BLACKBOX_TEST_TIMEOUT_MS=${BLACKBOX_TEST_TIMEOUT_MS:-180000} \
                "$src/tests/blackbox/run.sh" "$b/daemon/mcp-execd" >"$out/asan.blackbox" 2>&1
        sed 's/^/blackbox: /' "$out/asan.blackbox" | grep -vE '^blackbox: (# |run.sh: npm)' || true
        read -r bp bf < <(tier_counts "$out/asan.blackbox" blackbox)
        p=$((p + bp)) f=$((f + bf))
        local n
        n=$(find "$reports" -type f | wc -l)
        if [ "$n" -gt 0 ]; then
                echo "asan: $n sanitizer report(s):"
                for r in "$reports"/*; do echo "--- $r"; head -n 40 "$r"; done
                f=$((f + n))
        else
                echo "asan: no sanitizer reports"
        fi
        unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
        rm -rf "$reports"
        echo "tier asan: $p passed, $f failed ($((SECONDS - t0)) s)"
}

echo "== dependencies"
if ! "$src/scripts/deps.sh" test; then
        echo "0 passed, 1 failed"
        exit 1
fi

echo "== build ($build)"
if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$src" --werror >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
fi
if ! ninja -C "$build" >"$build.log" 2>&1; then
        tail -n 40 "$build.log"
        echo "build failed"
        echo "0 passed, 1 failed"
        exit 1
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for tier in $tiers; do
        echo "== tier $tier"
        case $tier in
        unit)
                meson test -C "$build" --print-errorlogs --num-processes 2 2>&1 | tee "$out/unit.raw" |
                        grep -E '^ *[0-9]+/[0-9]+ ' || true
                log="$build/meson-logs/testlog.json"
                if [ -f "$log" ]; then
                        /usr/bin/python3 - "$log" > "$out/unit" <<'PY'
import json, sys
ok = bad = skip = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        ok += 1
    elif r == "SKIP":
        skip += 1
    else:
        bad += 1
print(f"tier unit: {ok} passed, {bad} failed" + (f", {skip} skipped" if skip else ""))
PY
                else
                        echo "tier unit: 0 passed, 1 failed" > "$out/unit"
                fi
                cat "$out/unit"
                ;;
        blackbox)
                "$src/tests/blackbox/run.sh" "$build/daemon/mcp-execd" 2>&1 | tee "$out/blackbox"
                ;;
        asan)
                asan_tier 2>&1 | tee "$out/asan"
                ;;
        systemd)
                "$src/tests/vm/run-tier.sh" --build-dir "$build" 2>&1 | tee "$out/systemd"
                ;;
        *)
                echo "run-all.sh: unknown tier $tier" | tee "$out/$tier"
                ;;
        esac
        read -r p f < <(tier_counts "$out/$tier" "$tier")
        add "$p" "$f"
done

# A recap of what failed, last before the total: when only the end of the output is kept (a CI
# log's tail), it still names each failing test and the first lines of its error.
if [ "$failed" -gt 0 ]; then
        echo "== failed"
        for tier in $tiers; do
                [ -f "$out/$tier" ] || continue
                grep -A 4 -E '^(blackbox: |meson: )?(FAIL |not ok |.*[0-9]+/[0-9]+ .*(FAIL|ERROR|TIMEOUT))' \
                        "$out/$tier" | cut -c1-300 | head -n 60 | sed "s/^/$tier: /"
        done
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
