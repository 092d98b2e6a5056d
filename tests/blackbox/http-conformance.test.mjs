// The official MCP conformance suite (@modelcontextprotocol/conformance, server mode, over
// Streamable HTTP) against mcp-execd (issue 6, "How it is proven"): every scenario that applies to
// a tools-only server passes; those that cannot apply are listed with their reason in
// http-conformance-baseline.yml, and the suite itself fails on a stale or missing entry.
// Release 0.1.16 (npm latest) here; 0.2.0-alpha.12 (session lifecycle, visible-ASCII session ids,
// wire-schema validation) in http-conformance-next.test.mjs (one file each: each file must finish
// within the tier's per-file timeout, even on a loaded machine).
// On Node 20 the suite needs fs.globSync, which only Node 22 has: lib/http-node20-compat.mjs maps
// `fs` inside the suite to a shim (mcp.md §3.5); the server subcommand never calls it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHttpDaemon } from './lib/http-daemon.mjs';
import { BASELINE, runSuite, readChecks, baselineScenarios, assertApplicablePass, APPLICABLE } from './lib/http-conformance.mjs';

test('conformance 0.1.16: every applicable server scenario passes; the rest is the baseline', { timeout: 180000 }, async (t) => {
    const d = await startHttpDaemon(t);
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-conformance-'));
    t.after(() => fs.rmSync(out, { recursive: true, force: true }));
    const r = await runSuite('@modelcontextprotocol/conformance', ['server', '--url', d.url, '--expected-failures', BASELINE, '-o', out]);
    assert.equal(r.code, 0, r.out.slice(-4000));
    assert.match(r.out, /Baseline check passed/);
    const checks = readChecks(out);
    assertApplicablePass(checks, APPLICABLE, r.out);
    for (const s of ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams'])
        assert.ok(checks[s].some((c) => c.status === 'SUCCESS'), `${s}: no successful check`);
    assert.equal(checks['dns-rebinding-protection'].filter((c) => c.status === 'SUCCESS').length, 2);
    // every baselined scenario really ran and failed (the suite also refuses a stale baseline)
    for (const s of baselineScenarios()) assert.ok(checks[s]?.some((c) => c.status === 'FAILURE'), `${s} is baselined but did not fail`);
    // SHOULD-level scenario, not in the default run: no failure allowed
    const poll = await runSuite('@modelcontextprotocol/conformance', ['server', '--url', d.url, '--scenario', 'server-sse-polling', '-o', out]);
    assert.equal(poll.code, 0, poll.out.slice(-3000));
    assert.match(poll.out, /0 failed/);
    t.diagnostic(`0.1.16: ${r.out.match(/Total: .*/)?.[0]}, baseline ${baselineScenarios().length} scenarios`);
});
