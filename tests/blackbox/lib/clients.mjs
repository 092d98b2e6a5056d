// The MCP clients of clients/ (pinned in a lock file of their own, 1.2 GB: only the tests that run
// them install them), and a way to run a command the way a user's shell does.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { REPO } from './snippets.mjs';
import { sleep } from './env.mjs';

export const CLIENTS = path.join(REPO, 'tests/blackbox/clients');
export const CLIENTS_BIN = path.join(CLIENTS, 'node_modules/.bin');

/**
 * Run a command; resolve with { code, stdout, stderr } (code null: killed at opts.timeoutMs,
 * default 60 s). It and everything it started (a daemon a snippet leaves in the background) are
 * killed when it exits: its own process group.
 */
export function runCommand(cmd, args, opts = {}) {
    return new Promise((resolve, reject) => {
        const p = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
        let stdout = '', stderr = '', code = null;
        p.stdout.on('data', (b) => { stdout += b; });
        p.stderr.on('data', (b) => { stderr += b; });
        const killGroup = () => { try { process.kill(-p.pid, 'SIGKILL'); } catch { /* gone */ } };
        const timer = setTimeout(killGroup, opts.timeoutMs ?? 60000);
        p.on('error', reject);
        // Its exit, not the pipes' close: a daemon left in the background holds them open.
        p.on('exit', (c) => { code = c; clearTimeout(timer); killGroup(); });
        p.on('close', () => resolve({ code, stdout, stderr }));
    });
}

const stampFile = path.join(CLIENTS, 'node_modules/.clients-lock.sha256');
const lockDir = path.join(CLIENTS, '.install-lock');
const wanted = () => crypto.createHash('sha256').update(fs.readFileSync(path.join(CLIENTS, 'package-lock.json'))).digest('hex');
const installed = () => { try { return fs.readFileSync(stampFile, 'utf8').trim() === wanted(); } catch { return false; } };

/**
 * npm ci in clients/, once per lock file (a stamp, as run.sh keeps for ../node_modules). Two test
 * files may ask at once: the first takes a lock directory, the other waits for the stamp.
 */
export async function installClients() {
    if (installed()) return;
    for (;;) {
        try { fs.mkdirSync(lockDir); break; } catch (e) {
            if (e.code !== 'EEXIST') throw e;
            if (installed()) return;
            // a lock whose holder was killed (a run cut off): older than any install takes
            if (Date.now() - fs.statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs > 20 * 60000) fs.rmSync(lockDir, { recursive: true, force: true });
            await sleep(1000);
        }
    }
    try {
        if (installed()) return;
        const r = await runCommand('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'],
            { cwd: CLIENTS, env: process.env, timeoutMs: 900000 });
        assert.equal(r.code, 0, `npm ci of the clients failed: ${r.stderr.slice(-3000)}`);
        fs.writeFileSync(stampFile, wanted() + '\n');
    } finally {
        fs.rmSync(lockDir, { recursive: true, force: true });
    }
}
