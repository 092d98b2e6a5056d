#!/usr/bin/env bash
# run-all.sh: the whole test suite, as README.md's test command. On a fresh Debian 12 machine as
# root it installs what it needs, builds, and runs every tier:
#   unit      cmocka tests of each module, and the sandbox's API tests (meson test)
#   blackbox  the real binary driven over stdio by the official MCP SDK client (tests/blackbox)
#   systemd   real scopes and cgroup v2: directly under systemd, else in a small VM (tests/vm)
# Each tier prints its own results; the last line is the total: "N passed, M failed".
# Exit status 0 iff nothing failed.
#   TIERS="unit blackbox" tests/run-all.sh     runs only some tiers
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd -P)
build=${BUILD_DIR:-$src/build-test}
tiers=${TIERS:-unit blackbox systemd}
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

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
