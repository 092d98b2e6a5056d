// `test` from node:test with a default per-test timeout.
//
// node 20's --test-timeout (run.sh) applies to each test FILE as a whole (and is inherited by
// its tests), so run.sh sets it to a generous per-file budget; the per-test limit comes from
// here: import { test } from './lib/index.mjs' instead of from 'node:test'. An explicit
// { timeout } in a test's options still wins.

import assert from 'node:assert/strict';
import { test as nodeTest } from 'node:test';

/** Per-test timeout in ms: $BLACKBOX_TEST_TIMEOUT_MS, default 60000. */
export const TEST_TIMEOUT_MS = Number(process.env.BLACKBOX_TEST_TIMEOUT_MS) || 60000;

/** test(name[, options], fn) as node:test's, with { timeout: TEST_TIMEOUT_MS } by default. */
export function test(name, options, fn) {
    if (typeof options === 'function') { fn = options; options = {}; }
    return nodeTest(name, { timeout: TEST_TIMEOUT_MS, ...options }, fn);
}

/**
 * Skip a test whose premise is missing here, when that absence could itself be a regression (the
 * daemon no longer doing what the test observes): locally it is a skip, but under CI=true it fails,
 * so a CI run never counts as passed what it did not check. Call it and return:
 *   if (!seen) { skipUnlessCI(t, 'the daemon does not stage runs under $TMPDIR'); return; }
 * A skip for an environment feature that is genuinely absent (no root, no IPv6, no pypy3) stays a
 * plain t.skip / { skip }.
 */
export function skipUnlessCI(t, why) {
    if (process.env.CI === 'true') assert.fail(`would be skipped, but CI=true: a skip here can hide a regression: ${why}`);
    t.skip(why);
}
