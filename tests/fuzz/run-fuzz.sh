#!/usr/bin/env bash
# run-fuzz.sh: the long fuzzing runs (not part of the suite; the suite replays the corpora).
#
#   tests/fuzz/run-fuzz.sh [-r RUNS] [-j JOBS] [-m] [TARGET...]
#
# Builds the libFuzzer binaries in $FUZZ_BUILD_DIR (default build-fuzz: clang, the whole build
# instrumented with -fsanitize=fuzzer-no-link,address,undefined), then runs each TARGET (default:
# all) for RUNS executions in total (default 10000000), split over JOBS processes (default 1),
# from a work copy of its corpus in $FUZZ_WORK/<target> (default /tmp/mcp-execd-fuzz). Crashes,
# leaks and timeouts land in $FUZZ_WORK/artifacts/. Prints the executions reached per target.
# -m merges what the run found that adds coverage back into tests/fuzz/corpus/<target> (libFuzzer
# -merge=1 keeps only inputs with new features, so the committed corpus stays small).
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd -P)
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}
work=${FUZZ_WORK:-/tmp/mcp-execd-fuzz}
runs=10000000 jobs=1 merge=0
while getopts "r:j:m" o; do
        case $o in
        r) runs=$OPTARG ;;
        j) jobs=$OPTARG ;;
        m) merge=1 ;;
        *) sed -n '2,14p' "$0"; exit 2 ;;
        esac
done
shift $((OPTIND - 1))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz-mcp-server fuzz-mcp-http fuzz-utf8 fuzz-config)

if [ ! -f "$build/build.ninja" ]; then
        CC=clang meson setup "$build" "$src" -Dfuzzers=true -Db_sanitize=address,undefined -Db_lundef=false \
                -Dc_args=-fsanitize=fuzzer-no-link >/dev/null
fi
ninja -C "$build" "${targets[@]/#/tests/fuzz/}" >/dev/null

# Reports are fatal and name the line; leaks count (libFuzzer checks them per input).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:malloc_context_size=10}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
mkdir -p "$work/artifacts"
status=0
for t in "${targets[@]}"; do
        mkdir -p "$work/$t"
        cp -n "$src/tests/fuzz/corpus/$t/"* "$work/$t/" 2>/dev/null || true
        max_len=4096
        [ "$t" = fuzz-mcp-server ] && max_len=1024 # one line cap (1024) plus a little: messages, not blobs
        per_job=$(( (runs + jobs - 1) / jobs ))
        t0=$SECONDS
        (cd "$work" && "$build/tests/fuzz/$t" -runs="$per_job" -jobs="$jobs" -workers="$jobs" \
                -max_len="$max_len" -dict="$src/tests/fuzz/$t.dict" -print_final_stats=1 \
                -artifact_prefix="$work/artifacts/$t-" "$work/$t" >"$work/$t.log" 2>&1) || status=1
        # -jobs (always given, so always in effect) makes each process log to fuzz-<n>.log, which the
        # controlling process also copies into $t.log when that process ends: count fuzz-<n>.log alone
        # (this counted $t.log, fuzz-<n>.log and, through the glob fuzz-*.log, $t.log again: 2-3 times
        # the executions). Each run's $t.log is kept, with its executions and findings.
        execs=$(cat "$work"/fuzz-[0-9]*.log 2>/dev/null |
                awk '/stat::number_of_executed_units/ { n += $2 } END { print n + 0 }')
        rm -f "$work"/fuzz-[0-9]*.log
        mv "$work/$t.log" "$work/$t.$(date +%Y%m%d-%H%M%S).log"
        echo "$t: $execs executions in $((SECONDS - t0)) s; artifacts: $(ls "$work/artifacts" | grep -c "^$t-" || true)"
        if [ "$merge" = 1 ]; then
                "$build/tests/fuzz/$t" -merge=1 -max_len="$max_len" "$src/tests/fuzz/corpus/$t" "$work/$t" \
                        >"$work/$t.merge.log" 2>&1
                echo "$t: corpus now $(ls "$src/tests/fuzz/corpus/$t" | wc -l) files"
        fi
done
exit $status
