// `test` from node:test with a default per-test timeout.
//
// node 20's --test-timeout (run.sh) applies to each test FILE as a whole (and is inherited by
// its tests), so run.sh sets it to a generous per-file budget; the per-test limit comes from
// here: import { test } from './lib/index.mjs' instead of from 'node:test'. An explicit
// { timeout } in a test's options still wins.

import { test as nodeTest } from 'node:test';

/** Per-test timeout in ms: $BLACKBOX_TEST_TIMEOUT_MS, default 60000. */
export const TEST_TIMEOUT_MS = Number(process.env.BLACKBOX_TEST_TIMEOUT_MS) || 60000;

/** test(name[, options], fn) as node:test's, with { timeout: TEST_TIMEOUT_MS } by default. */
export function test(name, options, fn) {
    if (typeof options === 'function') { fn = options; options = {}; }
    return nodeTest(name, { timeout: TEST_TIMEOUT_MS, ...options }, fn);
}
