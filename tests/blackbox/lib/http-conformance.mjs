// Running the official MCP conformance suite (server mode) and reading its results, for
// http-conformance*.test.mjs.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BASELINE = path.join(here, 'http-conformance-baseline.yml');

export function runSuite(pkgDir, args, timeoutMs = 120000) {
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
export function readChecks(dir) {
    const res = {};
    for (const sub of fs.readdirSync(dir)) {
        const m = sub.match(/^server-(.+)-\d{4}-\d\d-\d\dT/);
        const file = path.join(dir, sub, 'checks.json');
        if (!m || !fs.existsSync(file)) continue;
        res[m[1]] = JSON.parse(fs.readFileSync(file, 'utf8')).map((c) => ({ id: c.id, status: c.status, msg: c.errorMessage }));
    }
    return res;
}

export function baselineScenarios() {
    return fs.readFileSync(BASELINE, 'utf8').split('\n').map((l) => l.match(/^\s*-\s*([\w-:]+)/)?.[1]).filter(Boolean);
}

export function assertApplicablePass(checks, scenarios, out) {
    for (const s of scenarios) {
        assert.ok(checks[s], `scenario ${s} did not run:\n${out.slice(-3000)}`);
        const failed = checks[s].filter((c) => c.status === 'FAILURE');
        assert.deepEqual(failed, [], `${s} failed`);
    }
}

export const APPLICABLE = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection', 'server-sse-multiple-streams'];
