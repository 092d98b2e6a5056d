#!/usr/bin/env bash
# Black-box tier: drive the real mcp-execd binary over stdio with the official MCP SDK.
#
#   tests/blackbox/run.sh /abs/path/to/build/daemon/mcp-execd     (or MCP_EXECD=... run.sh)
#
# Installs the npm dependencies (npm ci, from the committed package-lock.json) when
# node_modules is missing or was installed from another lock file, runs every *.test.mjs
# here with node's test runner (BLACKBOX_JOBS files at a time, default 2, each file's lines
# printed whole when it ends; each test with a timeout), prints one line per test and ends
# with exactly one line:
#
#   tier blackbox: N passed, M failed, K skipped
#
# (skipped: tests marked skip or todo; ", K skipped" is left out when K is 0.)
# Files named *.long.test.mjs (a test that mostly waits, such as a 10-minute task) run beside
# the others, so their wait overlaps the tier instead of adding to it; their lines are printed
# after the others' and their counts added.
# Exit status 0 iff M == 0.
# Knobs: BLACKBOX_TEST_TIMEOUT_MS (per test, default 60000: tests take `test` from lib/),
# BLACKBOX_FILE_TIMEOUT_MS (per test file, default 900000: node 20 applies --test-timeout to a
# whole file), BLACKBOX_CGROUP (MCP_EXEC_CGROUP given to the daemons, default none),
# BLACKBOX_FILES (space-separated test files to run), BLACKBOX_JOBS (files run at once, default
# 2; 1 runs them one after another), BLACKBOX_TIMES (a file to write each test
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
# The files that take longest start first, so that the workers end together (seconds in a full
# run on a 2-core machine, 2026-12-05); the rest follow in name order.
first=(clients http-badinput escape-task http-limits escape-warm http-load tasks http-exec-sse escape
       http-streams http-exec-streamable py-deps-share escape-session py-deps-cache http-stall exec)
ordered=()
for n in "${first[@]}"; do
        for f in "${short[@]}"; do [ "$f" = "./$n.test.mjs" ] && ordered+=("$f"); done
done
for f in "${short[@]}"; do [[ " ${ordered[*]} " == *" $f "* ]] || ordered+=("$f"); done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/out"
# one FILE: one node test runner for one file; its lines to $tmp/out/FILE.log, its counts
# ("passed failed skipped") to $tmp/out/FILE.counts, its wall time to $tmp/out/FILE.times.
one() {
        local f=$1 base rc p fl k t0
        base=$tmp/out/${f##*/}
        t0=$(date +%s.%N)
        BLACKBOX_COUNTS=$base.counts node --test \
                --test-concurrency=1 \
                --test-timeout="${BLACKBOX_FILE_TIMEOUT_MS:-900000}" \
                --test-reporter=./lib/reporter.mjs --test-reporter-destination=stdout \
                "$f" > "$base.log" 2>&1
        rc=$?
        printf '%s\t%s\n' "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" \
                "${f##*/}" > "$base.times"
        read -r p fl k < "$base.counts" 2>/dev/null || { p=0; fl=0; k=0; }
        p=${p:-0}; fl=${fl:-0}; k=${k:-0}
        # The runner failed without a failing test to show for it (crash, bad flag): count it.
        if [ "$rc" -ne 0 ] && [ "$fl" -eq 0 ]; then
                echo "run.sh: node --test $f exited with $rc" >> "$base.log"
                fl=1
        fi
        echo "$p $fl $k" > "$base.counts"
}
# worker: takes the next file of the queue until none is left, and prints each file's lines
# whole once the file is done (so two workers' lines never interleave).
worker() {
        local i f
        while :; do
                i=$(flock "$tmp/queue" bash -c 'n=$(cat "$1"); echo $((n + 1)) > "$1"; echo "$n"' _ "$tmp/queue")
                [ "$i" -lt ${#ordered[@]} ] || return 0
                f=${ordered[$i]}
                one "$f"
                flock "$tmp/print" cat "$tmp/out/${f##*/}.log"
        done
}

echo "mcp-execd: $MCP_EXECD"
# Files named *.long.test.mjs mostly wait: they run one after another beside the workers, and
# their lines come last.
long_pid=
if [ ${#long[@]} -gt 0 ]; then
        ( for f in "${long[@]}"; do one "$f"; done ) &
        long_pid=$!
fi
# BLACKBOX_JOBS workers (default 2) take the other files: every file starts its own daemons, and
# most of a file's time is spent waiting on them (deadlines, expiries, sleeps in the runs).
echo 0 > "$tmp/queue"
jobs=${BLACKBOX_JOBS:-2}
pids=()
for _ in $(seq "$jobs"); do worker & pids+=($!); done
wait "${pids[@]}"
if [ -n "$long_pid" ]; then
        wait "$long_pid"
        for f in "${long[@]}"; do cat "$tmp/out/${f##*/}.log"; done
fi

passed=0 failed=0 skipped=0
for f in "${files[@]}"; do
        base=$tmp/out/${f##*/}
        if ! read -r p fl k < "$base.counts" 2>/dev/null; then
                echo "run.sh: $f left no counts"; p=0 fl=1 k=0
        fi
        passed=$((passed + p)) failed=$((failed + fl)) skipped=$((skipped + k))
        [ -n "${BLACKBOX_TIMES:-}" ] && cat "$base.times" >> "$BLACKBOX_TIMES" 2>/dev/null
done
summary "$passed" "$failed" "$skipped"
[ "$failed" -eq 0 ]
