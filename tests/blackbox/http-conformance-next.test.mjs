// The official MCP conformance suite, prerelease 0.2.0-alpha.12 (installed as conformance-next),
// with --spec-version 2025-11-25: besides the 0.1.16 scenarios (http-conformance.test.mjs) it checks
// the session lifecycle (initialized accepted, DELETE accepted, the old id then 404), that session
// ids are visible ASCII, and every wire message against the official JSON schema. The same
// baseline applies (http-conformance-baseline.yml). The 2026-07-28 run is http-conformance-2026.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHttpDaemon } from './lib/http-daemon.mjs';
import { BASELINE, runSuite, readChecks, baselineScenarios, assertApplicablePass, APPLICABLE } from './lib/http-conformance.mjs';

test('conformance 0.2.0-alpha.12 (--spec-version 2025-11-25): session lifecycle, visible-ASCII ids, wire schema', { timeout: 180000 }, async (t) => {
    const d = await startHttpDaemon(t);
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-conformance-'));
    t.after(() => fs.rmSync(out, { recursive: true, force: true }));
    const r = await runSuite('conformance-next', ['server', '--url', d.url, '--spec-version', '2025-11-25',
        '--expected-failures', BASELINE, '-o', out]);
    assert.equal(r.code, 0, r.out.slice(-4000));
    assert.match(r.out, /Baseline check passed/);
    const checks = readChecks(out);
    assertApplicablePass(checks, [...APPLICABLE, 'server-session-lifecycle'], r.out);
    const ids = Object.values(checks).flat().map((c) => `${c.id}:${c.status}`);
    for (const want of ['server-session-id-visible-ascii:SUCCESS', 'wire-schema-valid:SUCCESS'])
        assert.ok(ids.includes(want), `no ${want} in ${ids.join(' ')}`);
    assert.ok(!ids.some((c) => c.startsWith('wire-schema-valid:FAILURE')), 'a message failed the official schema');
    assert.equal(checks['server-session-lifecycle'].filter((c) => c.status === 'SUCCESS').length, 3);
    t.diagnostic(`0.2.0-alpha.12: ${r.out.match(/Total: .*/)?.[0]}`);
});
