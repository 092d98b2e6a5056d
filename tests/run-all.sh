#!/usr/bin/env bash
# run-all.sh: the whole test suite, as README.md's test command. On a fresh Debian 12 machine as
# root it installs what it needs, builds, and runs every tier:
#   unit      cmocka tests of each module, the sandbox's API tests, the fuzz corpora replayed,
#             and the short soak (meson test --suite unit --suite fuzz --suite soak)
#   blackbox  the real binary driven over stdio and HTTP by real MCP clients (tests/blackbox)
#   asan      a second build with -Db_sanitize=address,undefined (gcc; $ASAN_BUILD_DIR, default
#             build-asan): the meson tests and the black-box files that drive the daemon's
#             memory-owning code (asan_files below says which and why); any sanitizer report
#             (ASan, LSan, UBSan) anywhere is a failure
#   systemd   real scopes and cgroup v2: directly under systemd, else in a small VM (tests/vm).
#             It starts right after the build and runs beside the other tiers (the VM is
#             emulated and mostly waits on itself); its lines are printed when it ends
# Each tier prints its own results; then a recap of where the time went (each tier's seconds,
# the ten slowest test files), and last the total: "N passed, M failed" (", K skipped" follows
# when K > 0: skipped and todo tests of every tier). Exit status 0 iff nothing failed.
# Under CI=true a test that skips because of its own environment (meson's exit 77) fails.
#
#   tests/run-all.sh                    every tier (what CI runs)
#   tests/run-all.sh --quick            the everyday loop: unit and fuzz, and the black-box
#                                       files that finish fast (not those in slow_files below)
#   TIERS="unit blackbox" tests/run-all.sh     runs only some tiers
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd -P)
build=${BUILD_DIR:-$src/build-test}
quick=
case ${1:-} in
"") ;;
--quick) quick=1 ;;
-h|--help) sed -n '2,24s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) echo "run-all.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
esac
if [ -n "$quick" ]; then
        tiers=${TIERS:-unit blackbox}
else
        tiers=${TIERS:-unit blackbox asan systemd}
fi
passed=0 failed=0 skipped=0
t_all=$SECONDS
# The whole run's wall time above which the recap warns (it still passes): CI cuts a run off at
# 90 minutes, so growth must show long before it gets there.
warn_secs=${RUN_ALL_WARN_SECS:-2700}

# The black-box files the everyday loop (--quick) leaves out: the slowest, those that install
# packages, and the conformance suites. They wait on purpose (deadlines, expiries, slowloris),
# install with pip, or run every escape attempt again on another path (escape.test.mjs, the cold
# path, stays in). Everything else is quick, new files included, until the recap shows it slow.
slow_files=(
        # seconds in the full run of 2026-12-05, files one after another, load average 6-10
        task-10min.long.test.mjs        # 600: a ten-minute task, both eras
        http-badinput.test.mjs          # 133: the 30 s and 60 s connection deadlines
        escape-task.test.mjs            # 106: the escape suite again, as tasks
        http-limits.test.mjs            #  75: 5000 sessions, idle expiry
        escape-warm.test.mjs            #  64: the escape suite again, on ready sandboxes
        http-load.test.mjs              #  59
        tasks.test.mjs                  #  57: task expiry, 5 s runs
        http-exec-sse.test.mjs          #  51
        http-streams.test.mjs           #  47
        http-exec-streamable.test.mjs   #  46
        escape-session.test.mjs         #  46: the escape suite again, in sessions
        http-stall.test.mjs             #  41
        proto2026.test.mjs              #  35
        stream.test.mjs                 #  33: 3 s streamed runs, four clients
        http-unread.test.mjs            #  35: 64 MiB of answers nobody reads
        pysession-deps.test.mjs         #  36: installs
        py-deps-share.test.mjs py-deps-cache.test.mjs py-deps-limits.test.mjs   # 46, 44, 27
        py-deps-confine.test.mjs py-deps-index.test.mjs py-deps-wheelhouse.test.mjs  # 25, 17, 16
        py-deps-requirements.test.mjs py-deps-sources.test.mjs  # 9, 4: pip, like the others
        http-conformance.test.mjs http-conformance-2026.test.mjs http-conformance-next.test.mjs
        clients.test.mjs                # the README's clients, 1.2 GB from npm on first use
        client-matrix.long.test.mjs     # the same clients, and a 70 s call each
)

# The black-box files the asan tier runs again under the sanitizers: those whose calls go
# through the daemon's memory-owning code (JSON-RPC and HTTP parsing, bad input, the MCP
# lifecycle in both eras, faults and the fd/clone error paths, the scheduler's queue and
# cancellation, output capping and UTF-8 repair, input and output files, streamed output,
# sessions, tasks, the warm pool, the load balancer's routing header, the dependency cache's
# bookkeeping, the tenants file and its reload, OAuth access tokens, the egress proxy). The others add nothing under ASan that these do not: the escape suites exercise the sandbox (its child side runs
# after seccomp and is built without sanitizers) through the same exec path as exec.test.mjs;
# the conformance suites repeat what http-contract and proto2026 send; py-deps-* spend their
# time in pip; the ten-minute task only waits.
asan_files=(
        badinput.test.mjs http-badinput.test.mjs lifecycle.test.mjs proto2026.test.mjs
        http-contract.test.mjs http-status.test.mjs http-auth.test.mjs http-limits.test.mjs
        http-streams.test.mjs http-drain.test.mjs http-queue.test.mjs http-unread.test.mjs
        http-connections.test.mjs stdio.test.mjs tenants.test.mjs oauth.test.mjs
        faults.test.mjs robustness.test.mjs config.test.mjs
        exec.test.mjs output.test.mjs concurrency.test.mjs cancel.test.mjs deadline.test.mjs
        files-input.test.mjs files-outputs.test.mjs stream.test.mjs
        tasks.test.mjs pysession.test.mjs pysession-slots.test.mjs pysession-ops.test.mjs
        pysession-lifetime.test.mjs
        warm.test.mjs fleet-ids.test.mjs fleet-haproxy.test.mjs py-tools.test.mjs py-meta.test.mjs
        py-deps-cache.test.mjs egress.test.mjs egress-bypass.test.mjs
)

add() { passed=$((passed + $1)); failed=$((failed + $2)); skipped=$((skipped + $3)); }
# Reads the "tier X: N passed, M failed[, K skipped]" line of a tier's output file: "N M K".
tier_counts() {
        local line
        line=$(grep -E "^tier $2: [0-9]+ passed, [0-9]+ failed" "$1" | tail -n 1)
        if [ -z "$line" ]; then
                if grep -qE "^tier $2: SKIPPED" "$1"; then
                        echo "0 0 1"
                else
                        echo "0 1 0" # the tier died without a summary: that is a failure
                fi
                return
        fi
        sed -E 's/^tier [a-z]+: ([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?.*/\1 \2 \4/' <<< "$line" |
                awk '{ print $1, $2, ($3 == "" ? 0 : $3) }'
}
# counts_line P F K: "P passed, F failed", and ", K skipped" when K > 0 (the tiers' and the total's).
counts_line() { echo "$1 passed, $2 failed$([ "$3" -gt 0 ] && echo ", $3 skipped")"; }
# tier_line TIER P F K: the tier's summary line.
tier_line() { echo "tier $1: $(counts_line "$2" "$3" "$4")"; }

# meson_counts TESTLOG TIER: "P F K" of a meson test run; each test's seconds go to $out/times.
# A test's cmocka-level skips count as skipped; a whole test that skips (exit 77) does too, but
# under CI=true it fails: these tests skip only where the machine refuses namespaces, and CI's
# machine must not.
meson_counts() {
        /usr/bin/python3 - "$1" "$2" "$out/times" <<'PY'
import json, os, re, sys
log, tier, times = sys.argv[1:4]
ci = os.environ.get("CI") == "true"
ok = bad = skip = 0
try:
    with open(log) as f, open(times, "a") as t:
        for line in f:
            r = json.loads(line)
            res, name = r["result"], r["name"]
            t.write(f"{r.get('duration', 0):.1f}\t{tier}\tmeson: {name}\n")
            # cmocka prints "[  SKIPPED ] N test(s), listed below:" once per skipping binary
            m = re.search(r"\[  SKIPPED \] (\d+) test", r.get("stdout") or "")
            skip += int(m.group(1)) if m else 0
            if res in ("OK", "EXPECTEDFAIL"):
                ok += 1
            elif res == "SKIP" and not ci:
                skip += 1
            else:
                if res == "SKIP":
                    print(f"meson: {name} skipped, which CI=true does not allow", file=sys.stderr)
                bad += 1
except (OSError, ValueError, KeyError) as e:  # no log, or a broken one: the tier failed
    print(f"meson: cannot read {log}: {e}", file=sys.stderr)
    bad += 1
print(ok, bad, skip)
PY
}

# The asan tier: everything runs with reports fatal and also written to files, so a report from a
# daemon whose exit status no test looks at (a leak at exit, say) still fails the tier.
asan_build_dir=${ASAN_BUILD_DIR:-$src/build-asan}
# The asan build: started in the background right after the plain build, so that it overlaps the
# unit tier (mostly one serial test at a time) instead of adding to the asan tier. Its exit
# status and seconds go to $out/asan.build.
asan_build() {
        local b=$asan_build_dir t0=$SECONDS rc=0
        # GCC's -Wformat-truncation misfires on code instrumented by -fsanitize (false positives
        # on fixed-size snprintf buffers), so that one warning is not fatal here; the default
        # build keeps it.
        if [ ! -f "$b/build.ninja" ] &&
           ! meson setup "$b" "$src" -Db_sanitize=address,undefined -Dc_args=-Wno-format-truncation \
                >"$b.setup.log" 2>&1; then
                cp "$b.setup.log" "$b.log"; rc=1
        elif ! ninja -C "$b" >"$b.log" 2>&1; then
                rc=1
        fi
        echo "$rc $((SECONDS - t0))" > "$out/asan.build"
}

asan_tier() {
        local b=$asan_build_dir t0=$SECONDS p=0 f=0 k=0 reports rc secs
        # (a pipeline's subshell runs this, and cannot wait() for its parent's child)
        while [ ! -s "$out/asan.build" ] && kill -0 "$asan_build_pid" 2>/dev/null; do sleep 1; done
        read -r rc secs < "$out/asan.build" 2>/dev/null || rc=1
        if [ "$rc" != 0 ]; then
                tail -n 40 "$b.log"; echo "tier asan: 0 passed, 1 failed"; return
        fi
        echo "asan: built in $secs s (beside the unit tier), waited $((SECONDS - t0)) s for it"
        reports=$(mktemp -d)
        export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1:detect_leaks=1:log_path=$reports/asan"
        export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
        export LSAN_OPTIONS="log_path=$reports/lsan"
        meson test -C "$b" --suite unit --suite fuzz --suite soak --print-errorlogs --num-processes 2 \
                >"$out/asan.meson" 2>&1
        grep -E '^ *[0-9]+/[0-9]+ ' "$out/asan.meson" | sed 's/^/meson: /'
        read -r mp mf mk < <(meson_counts "$b/meson-logs/testlog.json" asan)
        mp=${mp:-0} mf=${mf:-1} mk=${mk:-0}   # nothing read: the counting itself failed
        p=$((p + mp)) f=$((f + mf)) k=$((k + mk))
        # Sanitized daemons are slower: a longer per-file budget than the plain tier's.
        local files=()
        [ -n "${ASAN_FILES:-}" ] && read -r -a asan_files <<< "$ASAN_FILES"   # to try one
        for n in "${asan_files[@]}"; do files+=("./$n"); done
        BLACKBOX_FILES="${files[*]}" BLACKBOX_TIMES="$out/asan.times" \
        BLACKBOX_PASS_ENV="ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS" \
        BLACKBOX_TEST_TIMEOUT_MS=${BLACKBOX_TEST_TIMEOUT_MS:-180000} \
                "$src/tests/blackbox/run.sh" "$b/daemon/mcp-execd" >"$out/asan.blackbox" 2>&1
        sed 's/^/blackbox: /' "$out/asan.blackbox" | grep -vE '^blackbox: (# |run.sh: npm)' || true
        read -r bp bf bk < <(tier_counts "$out/asan.blackbox" blackbox)
        p=$((p + bp)) f=$((f + bf)) k=$((k + bk))
        sed 's/\t/\tasan\tblackbox: /' "$out/asan.times" >> "$out/times" 2>/dev/null
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
        echo "$(tier_line asan $p $f $k) ($((SECONDS - t0)) s)"
}

echo "== dependencies"
t0=$SECONDS
if ! "$src/scripts/deps.sh" test; then
        echo "0 passed, 1 failed"
        exit 1
fi
t_deps=$((SECONDS - t0))

echo "== build ($build)"
t0=$SECONDS
if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$src" --werror >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
fi
if ! ninja -C "$build" >"$build.log" 2>&1; then
        tail -n 40 "$build.log"
        echo "build failed"
        echo "0 passed, 1 failed"
        exit 1
fi
t_build=$((SECONDS - t0))

out=$(mktemp -d)
sd_pid=
trap '[ -n "$sd_pid" ] && kill -- -"$sd_pid" 2>/dev/null; rm -rf "$out"' EXIT
: > "$out/times"
declare -A tier_secs=()

# The systemd tier first, in the background: most of its time is the emulated guest's, which
# would otherwise add to the host tiers' instead of overlapping them. setsid: its own process
# group, so that an interrupted run takes the VM down with it (the trap above).
case " $tiers " in
*" systemd "*)
        echo "== tier systemd (started; it runs beside the other tiers, its lines follow theirs)"
        setsid bash -c 't0=$SECONDS; "$1/tests/vm/run-tier.sh" --build-dir "$2" > "$3/systemd" 2>&1
                        echo $((SECONDS - t0)) > "$3/systemd.secs"' _ "$src" "$build" "$out" &
        sd_pid=$!
        ;;
esac

asan_build_pid=
case " $tiers " in *" asan "*) asan_build & asan_build_pid=$! ;; esac

for tier in $tiers; do
        [ "$tier" = systemd ] && continue
        echo "== tier $tier"
        t0=$SECONDS
        case $tier in
        unit)
                # The soak is a slow suite, left out of a plain `meson test` (meson.build's default
                # setup) and named here; --quick runs meson's default.
                suites=(--suite unit --suite fuzz --suite soak)
                [ -n "$quick" ] && suites=()
                meson test -C "$build" "${suites[@]}" --print-errorlogs --num-processes 2 2>&1 |
                        tee "$out/unit.raw" | grep -E '^ *[0-9]+/[0-9]+ ' || true
                read -r p f k < <(meson_counts "$build/meson-logs/testlog.json" unit)
                p=${p:-0} f=${f:-1} k=${k:-0}
                tier_line unit "$p" "$f" "$k" | tee "$out/unit"
                ;;
        blackbox)
                files=()
                if [ -n "$quick" ] && [ -z "${BLACKBOX_FILES:-}" ]; then
                        for f in "$src"/tests/blackbox/*.test.mjs; do
                                f=${f##*/}
                                [[ " ${slow_files[*]} " == *" $f "* ]] || files+=("./$f")
                        done
                fi
                BLACKBOX_FILES="${BLACKBOX_FILES:-${files[*]}}" BLACKBOX_TIMES="$out/blackbox.times" \
                        "$src/tests/blackbox/run.sh" "$build/daemon/mcp-execd" 2>&1 | tee "$out/blackbox"
                sed 's/\t/\tblackbox\t/' "$out/blackbox.times" >> "$out/times" 2>/dev/null
                ;;
        asan)
                asan_tier 2>&1 | tee "$out/asan"
                ;;
        *)
                echo "run-all.sh: unknown tier $tier" | tee "$out/$tier"
                ;;
        esac
        tier_secs[$tier]=$((SECONDS - t0))
        read -r p f k < <(tier_counts "$out/$tier" "$tier")
        add "$p" "$f" "$k"
done

if [ -n "$sd_pid" ]; then
        t0=$SECONDS
        wait "$sd_pid"
        sd_pid=
        echo "== tier systemd (the host tiers were done $((SECONDS - t0)) s before it)"
        cat "$out/systemd"
        tier_secs[systemd]=$(cat "$out/systemd.secs" 2>/dev/null || echo '?')
        # "PASS name (12.3s)", "FAIL name (exit N, 12.3s)"
        sed -nE 's/^(PASS|FAIL) ([^ ]+) \((exit [0-9]+, )?([0-9.]+)s.*/\4\tsystemd\t\2/p' "$out/systemd" >> "$out/times"
        read -r p f k < <(tier_counts "$out/systemd" systemd)
        add "$p" "$f" "$k"
fi

# A recap of what failed, then of where the time went, last before the total: when only the end
# of the output is kept (a CI log's tail), it still names each failing test and the first lines
# of its error, and what grew.
if [ "$failed" -gt 0 ]; then
        echo "== failed"
        for tier in $tiers; do
                [ -f "$out/$tier" ] || continue
                grep -A 4 -E '^(blackbox: |meson: )?(FAIL |not ok |.*[0-9]+/[0-9]+ .*(FAIL|ERROR|TIMEOUT))' \
                        "$out/$tier" | cut -c1-300 | head -n 60 | sed "s/^/$tier: /"
        done
fi
echo "== time"
echo "dependencies ${t_deps} s, build ${t_build} s"
for tier in $tiers; do
        note=
        [ "$tier" = systemd ] && note=" (beside the others)"
        echo "tier $tier: ${tier_secs[$tier]:-?} s$note"
done
echo "the ten slowest test files:"
sort -t "$(printf '\t')" -k1,1 -rn "$out/times" | head -n 10 |
        awk -F '\t' '{ printf "  %7.1f s  %-8s %s\n", $1, $2, $3 }'
total=$((SECONDS - t_all))
echo "whole run: $total s"
if [ "$total" -gt "$warn_secs" ]; then
        echo "WARNING: the whole run took $((total / 60)) minutes, more than $((warn_secs / 60)): CI cuts a run off at 90; find the time in the lines above"
fi
counts_line "$passed" "$failed" "$skipped"
[ "$failed" -eq 0 ]
