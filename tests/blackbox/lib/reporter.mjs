// node:test reporter used by run.sh: one line per test (leaf tests only: a test that has
// subtests is not counted itself), failures with their error, diagnostics written with
// t.diagnostic(), the counts written to $BLACKBOX_COUNTS as "passed failed skipped" (a skipped
// or todo test counts as skipped: nothing the runner saw is left out of the total).
//
// node reports a test's result after its subtests' results, in order; so a result at nesting
// n directly after one at nesting n+1 belongs to a parent.

import fs from 'node:fs';
import path from 'node:path';

export default async function* reporter(source) {
    let passed = 0, failed = 0, skipped = 0;
    let prevNesting = -1;
    const names = [];   // names[n] = name of the latest test at nesting n (for the breadcrumb)
    let current = null; // the test file being run (files run one at a time)
    for await (const ev of source) {
        const d = ev.data ?? {};
        if (ev.type === 'test:dequeue' && d.nesting === 0 && d.file && d.name === d.file) {
            current = d.file;
            continue;
        }
        if (ev.type === 'test:start') {
            names[d.nesting] = d.name;
            names.length = d.nesting + 1;
            continue;
        }
        if (ev.type === 'test:diagnostic') {
            if (d.file) yield `      # ${d.message}\n`;
            continue;
        }
        if (ev.type === 'test:stderr' || ev.type === 'test:stdout') {
            const msg = String(d.message ?? '').replace(/\n$/, '');
            if (msg) yield msg.split('\n').map((l) => `      | ${l}`).join('\n') + '\n';
            continue;
        }
        if (ev.type !== 'test:pass' && ev.type !== 'test:fail') continue;
        const isParent = prevNesting === d.nesting + 1;
        prevNesting = d.nesting;
        if (isParent) {
            // A parent that failed by itself (not because of a child) still shows its error.
            const err = d.details?.error;
            if (ev.type === 'test:fail' && err && err.failureType !== 'subtestsFailed') {
                failed++;
                yield `FAIL  ${label(d, names, current)}\n${formatError(err)}`;
            }
            continue;
        }
        const ms = Math.round(d.details?.duration_ms ?? 0);
        if (d.skip !== undefined && d.skip !== false) {
            skipped++;
            yield `skip  ${label(d, names, current)}${typeof d.skip === 'string' ? ` (${d.skip})` : ''}\n`;
            continue;
        }
        if (d.todo !== undefined && d.todo !== false) {
            // a todo test counts as skipped whatever it does; its outcome is shown for information
            skipped++;
            yield `todo  ${label(d, names, current)} (${ev.type === 'test:pass' ? 'passes' : 'fails'}: ${d.todo})\n` +
                (ev.type === 'test:fail' ? formatError(d.details?.error) : '');
            continue;
        }
        if (ev.type === 'test:pass') {
            passed++;
            yield `ok    ${label(d, names, current)} (${ms} ms)\n`;
        } else {
            failed++;
            yield `FAIL  ${label(d, names, current)} (${ms} ms)\n${formatError(d.details?.error)}`;
        }
    }
    const out = process.env.BLACKBOX_COUNTS;
    if (out) fs.writeFileSync(out, `${passed} ${failed} ${skipped}\n`);
}

// "<file run> › <parent> › <test>"; a test defined in another file that the running file
// imports is shown as "<file run> › [<defining file>] › ...". A failure of a whole file (it
// did not load, crashed or ran out of time) is shown as "<file> (whole file)".
function label(d, names, current) {
    const run = current ? path.basename(current) : (d.file ? path.basename(d.file) : '');
    if (d.file && d.name === d.file) return `${path.basename(d.file)} (whole file)`;
    // (tests created through lib/test.mjs carry lib/test.mjs as their location: not a file of its own)
    const from = d.file && current && d.file !== current && d.file.endsWith('.test.mjs') ? `[${path.basename(d.file)}]` : '';
    const crumbs = names.slice(0, d.nesting).concat(d.name);
    return [run, from, ...crumbs].filter(Boolean).join(' › ');
}

function formatError(err) {
    if (!err) return '';
    let e = err;
    // node wraps the test's error: the useful one is the cause.
    if (e.cause && (e.code === 'ERR_TEST_FAILURE' || e.failureType)) e = e.cause;
    let text = e?.message ?? String(e);
    if (e?.failureType === 'testTimeoutFailure' || err.failureType === 'testTimeoutFailure') text = `timeout: ${text}`;
    return text.split('\n').slice(0, 40).map((l) => `      ${l}`).join('\n') + '\n';
}
