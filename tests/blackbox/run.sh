#!/usr/bin/env bash
# Black-box tier: drive the real mcp-execd binary over stdio with the official MCP SDK.
#
#   tests/blackbox/run.sh /abs/path/to/build/daemon/mcp-execd     (or MCP_EXECD=... run.sh)
#
# Installs the npm dependencies (npm ci, from the committed package-lock.json) when
# node_modules is missing or was installed from another lock file, runs every *.test.mjs
# here with node's test runner (files one after another, each test with a timeout), prints
# one line per test and ends with exactly one line:
#
#   tier blackbox: N passed, M failed, K skipped
#
# (skipped: tests marked skip or todo; ", K skipped" is left out when K is 0.)
# Files named *.long.test.mjs (a test that mostly waits, such as a 10-minute task) run in a
# second test runner beside the others, so their wait overlaps the tier instead of adding to it;
# their lines are printed after the others' and their counts added.
# Exit status 0 iff M == 0.
# Knobs: BLACKBOX_TEST_TIMEOUT_MS (per test, default 60000: tests take `test` from lib/),
# BLACKBOX_FILE_TIMEOUT_MS (per test file, default 900000: node 20 applies --test-timeout to a
# whole file), BLACKBOX_CGROUP (MCP_EXEC_CGROUP given to the daemons, default none),
# BLACKBOX_FILES (space-separated test files to run), BLACKBOX_TIMES (a file to write each test
# file's wall time to, "seconds<TAB>file" a line).
set -uo pipefail

summary() { echo "tier blackbox: $1 passed, $2 failed$([ "${3:-0}" -gt 0 ] && echo ", $3 skipped")"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${1:-${MCP_EXECD:-}}
if [ -z "$bin" ]; then
        echo "usage: $0 <path to mcp-execd>  (or set MCP_EXECD)" >&2
        summary 0 1; exit 1
fi
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
if [ ! -x "$bin" ] || [ -d "$bin" ]; then
        echo "run.sh: $bin is not an executable file" >&2
        summary 0 1; exit 1
fi
export MCP_EXECD=$bin

cd "$here" || exit 1

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "run.sh: node and npm are needed (Debian: apt-get install nodejs npm)" >&2
        summary 0 1; exit 1
fi

stamp=node_modules/.blackbox-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -d node_modules ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "run.sh: npm ci" >&2
        if ! npm ci --no-audit --no-fund --loglevel=error >&2; then
                echo "run.sh: npm ci failed" >&2
                summary 0 1; exit 1
        fi
        echo "$want" > "$stamp"
fi

if [ -n "${BLACKBOX_FILES:-}" ]; then
        read -r -a files <<< "$BLACKBOX_FILES"
else
        files=(./*.test.mjs)
fi
if [ ! -e "${files[0]}" ]; then
        echo "run.sh: no test files" >&2
        summary 0 1; exit 1
fi

short=() long=()
for f in "${files[@]}"; do
        case $f in *.long.test.mjs) long+=("$f") ;; *) short+=("$f") ;; esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# runner NAME FILES...: one node test runner, its lines to stdout, its counts to $tmp/NAME.
runner() {
        local name=$1 rc p f k; shift
        BLACKBOX_COUNTS=$tmp/$name BLACKBOX_TIMES=$tmp/$name.times node --test \
                --test-concurrency=1 \
                --test-timeout="${BLACKBOX_FILE_TIMEOUT_MS:-900000}" \
                --test-reporter=./lib/reporter.mjs --test-reporter-destination=stdout \
                "$@"
        rc=$?
        read -r p f k < "$tmp/$name" 2>/dev/null || { p=0; f=0; k=0; }
        p=${p:-0}; f=${f:-0}; k=${k:-0}
        # The runner failed without a failing test to show for it (crash, bad flag): count it.
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
                echo "run.sh: node --test ($name) exited with $rc" >&2
                f=1
        fi
        echo "$p $f $k" > "$tmp/$name"
}

echo "mcp-execd: $MCP_EXECD"
long_pid=
if [ ${#long[@]} -gt 0 ]; then
        runner long "${long[@]}" > "$tmp/long.out" 2>&1 &
        long_pid=$!
fi
[ ${#short[@]} -gt 0 ] && runner short "${short[@]}"
if [ -n "$long_pid" ]; then
        wait "$long_pid"
        cat "$tmp/long.out"
fi

passed=0 failed=0 skipped=0
for name in short long; do
        [ -f "$tmp/$name" ] || continue
        read -r p f k < "$tmp/$name"
        passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
        [ -n "${BLACKBOX_TIMES:-}" ] && cat "$tmp/$name.times" >> "$BLACKBOX_TIMES" 2>/dev/null
done
summary "$passed" "$failed" "$skipped"
[ "$failed" -eq 0 ]
