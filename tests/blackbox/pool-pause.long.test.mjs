// The pool's pause (docs/ready-sandboxes.md, Preload: "A preload that stops importing later (an
// upgrade) is logged and, after three failures in a row, the pool pauses for a minute (calls go
// cold meanwhile)"). A module of the test's own, put where the sandbox's Python finds it
// (/usr/local/lib/python3.X/dist-packages: the sandbox sees the host's /usr), is preloaded; once
// the pool is full the module is "upgraded" into one that raises. Each failed refill is logged;
// the third in a row logs the pause; calls then go cold. The module is mended as soon as no
// sandbox is starting any more, so a pool that kept trying would be back at the next call: it must come back only a minute after
// the last failure, and then serve warm calls with the module preloaded again.
// (.long: it mostly waits out the minute, beside the other files.)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, callExec, summarize, sleep, test, descendants } from './lib/index.mjs';
import { callTool } from './lib/files.mjs';

const PAUSE_MS = 60000; // POOL_RETRY_USEC in daemon/run/pool.c
const FAILED = /warm pool: a module of MCP_EXEC_PRELOAD no longer imports: /;
const PAUSED = /warm pool: the preload failed; 3 failures in a row, no sandbox is made ready for 60 s \(calls take the cold path meanwhile\)/;

// The directory of /usr/local that the sandbox's python3 has on sys.path (-I: no user site).
function localSitePackages() {
    const paths = execFileSync('/usr/bin/python3', ['-I', '-c', 'import sys; print("\\n".join(sys.path))'], { encoding: 'utf8' })
        .split('\n').filter((p) => /^\/usr\/local\/lib\/python3[.\d]*\/dist-packages$/.test(p));
    assert.ok(paths.length === 1, `no /usr/local dist-packages on python3's path: ${paths}`);
    fs.mkdirSync(paths[0], { recursive: true });
    return paths[0];
}

async function warmReady(client) {
    const r = await callTool(client, 'check_environment', {});
    assert.equal(r.isError, false, r.text);
    return r.sc.sandbox.warm_ready;
}

test('a preload that stops importing: logged each time, the pool pauses after three failures in a row for a minute, calls go cold meanwhile', { timeout: 180000 }, async (t) => {
    const mod = `mcpexecd_preload_${crypto.randomBytes(6).toString('hex')}`;
    const file = path.join(localSitePackages(), `${mod}.py`);
    t.after(() => {
        fs.rmSync(file, { force: true });
        // Bytecode of ours only (the sandbox's /usr is read-only, but a host python3 may import it).
        const cache = path.join(path.dirname(file), '__pycache__');
        for (const f of fs.existsSync(cache) ? fs.readdirSync(cache) : []) if (f.startsWith(`${mod}.`)) fs.rmSync(path.join(cache, f));
    });
    const GOOD = 'LOADED = True\n';
    fs.writeFileSync(file, GOOD);

    const d = await startDaemon(t, { env: { MCP_EXEC_PRELOAD: mod, MCP_EXEC_WARM_POOL: '2', MCP_EXEC_MAX_CONCURRENT: '2' } });
    // When each log line came (the pause is timed from the last failure).
    const seen = [];
    d.transport.stderr.on('data', (b) => {
        for (const l of b.toString('utf8').split('\n')) if (l) seen.push({ at: performance.now(), line: l });
    });
    const probe = `import sys\nprint(${JSON.stringify(mod)} in sys.modules)`;
    for (const t0 = Date.now(); (await warmReady(d.client)) < 2; await sleep(200))
        assert.ok(Date.now() - t0 < 60000, 'the pool did not fill');

    // The upgrade: the module now raises. The two ready sandboxes imported it before.
    fs.writeFileSync(file, 'raise ImportError("upgraded away")\n');
    for (let i = 0; i < 2; i++) {
        const r = await callExec(d.client, { code: probe, timeout_s: 30 });
        assert.equal(r.sc?.warm, true, summarize(r));
        assert.equal(r.sc.stdout, 'True\n', summarize(r));
    }
    // Each answer makes the pool refill; each refill fails. Calls go on, cold, until the pause.
    for (const t0 = Date.now(); !PAUSED.test(d.stderr()); await sleep(200)) {
        assert.ok(Date.now() - t0 < 60000, `no pause within 60 s:\n${d.stderr().slice(-3000)}`);
        const r = await callExec(d.client, { code: 'print(1)', timeout_s: 30 });
        assert.equal(r.sc?.exit_code, 0, summarize(r));
        assert.equal(r.sc.warm, false, summarize(r));
    }
    // Logged each time, and the pause comes with the third failure in a row.
    const lines = d.stderr().split('\n');
    const pausedAt = lines.findIndex((l) => PAUSED.test(l));
    const before = lines.slice(0, pausedAt).filter((l) => FAILED.test(l));
    assert.equal(before.length, 3, lines.slice(0, pausedAt + 1).join('\n'));
    assert.match(before[0], new RegExp(`no longer imports: ${mod}`));

    // A sandbox spawned before the pause may still be starting: once it fails too the daemon has
    // no process left (a success would end the pause, as it should).
    for (const t0 = Date.now(); descendants(d.pid).length > 0; await sleep(100))
        assert.ok(Date.now() - t0 < 30000, `sandboxes still starting: ${descendants(d.pid)}`);
    // Mended: only the pause keeps the pool empty now.
    fs.writeFileSync(file, GOOD);
    // Calls (each answer is when the pool may refill) until one is warm or a sandbox is ready: the
    // pool came back after the last moment it was seen empty (lastEmpty) and by `back`.
    let back = null;
    const mended = performance.now();
    let lastEmpty = mended;
    let coldCalls = 0;
    while (back === null) {
        assert.ok(performance.now() - mended < PAUSE_MS + 30000, 'the pool did not come back');
        const r = await callExec(d.client, { code: probe, timeout_s: 30 });
        assert.equal(r.sc?.exit_code, 0, summarize(r));
        if (r.sc.warm) { back = performance.now(); break; }
        assert.equal(r.sc.stdout, 'False\n', 'a cold run does not preload');
        coldCalls++;
        const now = performance.now();
        if ((await warmReady(d.client)) > 0) back = performance.now();
        else { lastEmpty = now; await sleep(500); }
    }
    const failures = seen.filter((s) => FAILED.test(s.line) && s.at < back);
    const lastFailure = failures.at(-1).at;
    t.diagnostic(`${failures.length} failures, ${coldCalls} cold calls; the pool was empty ${Math.round(lastEmpty - lastFailure)} ms ` +
                 `after the last failure and back ${Math.round(back - lastFailure)} ms after it`);
    // The daemon's clock starts a moment before the test sees the failure's line.
    assert.ok(lastEmpty - lastFailure >= PAUSE_MS - 1500,
        `the pool was back ${Math.round(lastEmpty - lastFailure)} ms after the last failure, before a minute`);
    assert.ok(back - lastFailure < PAUSE_MS + 15000, `the pool came back only ${Math.round(back - lastFailure)} ms after the last failure`);
    assert.ok(coldCalls > 0);
    assert.equal(seen.filter((s) => PAUSED.test(s.line)).length, 1, 'the pause was logged more than once');

    // Back: a warm call with the module preloaded.
    const r = await callExec(d.client, { code: probe, timeout_s: 30 });
    assert.equal(r.sc?.warm, true, summarize(r));
    assert.equal(r.sc.stdout, 'True\n');
});
