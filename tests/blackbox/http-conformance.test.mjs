// The official MCP conformance suite (@modelcontextprotocol/conformance, server mode, over
// Streamable HTTP) against mcp-execd (issue 6, "How it is proven"): every scenario that applies to
// a tools-only server passes; those that cannot apply are listed with their reason in
// http-conformance-baseline.yml, and the suite itself fails on a stale or missing entry.
// Two releases: 0.1.16 (npm latest) and 0.2.0-alpha.12 (installed as conformance-next; adds
// session lifecycle, visible-ASCII session ids and wire-schema validation), with
// --spec-version 2025-11-25 (the 2026-07-28 stateless scenarios do not apply: we speak the
// handshake protocol, see mcp.md §1.11).
// On Node 20 the suite needs fs.globSync, which only Node 22 has: lib/http-node20-compat.mjs maps
// `fs` inside the suite to a shim (mcp.md §3.5); the server subcommand never calls it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHttpDaemon } from './lib/http-daemon.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const BASELINE = path.join(here, 'http-conformance-baseline.yml');

function runSuite(pkgDir, args, timeoutMs = 120000) {
    const entry = path.join(here, 'node_modules', pkgDir, 'dist', 'index.js');
    const major = Number(process.versions.node.split('.')[0]);
    const nodeArgs = major >= 22 ? [] : ['--import', path.join(here, 'lib', 'http-node20-compat.mjs')];
    return new Promise((resolve) => {
        const p = spawn(process.execPath, [...nodeArgs, entry, ...args], { cwd: here, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        p.stdout.on('data', (b) => { out += b; });
        p.stderr.on('data', (b) => { out += b; });
        const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
        p.on('close', (code) => { clearTimeout(timer); resolve({ code, out: out.replace(/\x1b\[[0-9;]*m/g, '') }); });
    });
}

/** {scenario: [{id, status}]} from the -o directory (one subdirectory per scenario run). */
function readChecks(dir) {
    const res = {};
    for (const sub of fs.readdirSync(dir)) {
        const m = sub.match(/^server-(.+)-\d{4}-\d\d-\d\dT/);
        const file = path.join(dir, sub, 'checks.json');
        if (!m || !fs.existsSync(file)) continue;
        res[m[1]] = JSON.parse(fs.readFileSync(file, 'utf8')).map((c) => ({ id: c.id, status: c.status, msg: c.errorMessage }));
    }
    return res;
}

function baselineScenarios() {
    return fs.readFileSync(BASELINE, 'utf8').split('\n').map((l) => l.match(/^\s*-\s*([\w-:]+)/)?.[1]).filter(Boolean);
}

function assertApplicablePass(checks, scenarios, out) {
    for (const s of scenarios) {
        assert.ok(checks[s], `scenario ${s} did not run:\n${out.slice(-3000)}`);
        const failed = checks[s].filter((c) => c.status === 'FAILURE');
        assert.deepEqual(failed, [], `${s} failed`);
    }
}

const APPLICABLE = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection', 'server-sse-multiple-streams'];

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
