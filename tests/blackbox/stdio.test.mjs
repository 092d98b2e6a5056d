// The stdio transport (issue 2, point 3): nothing but JSON lines on stdout, logs on stderr,
// exit 0 on stdin EOF after answering what is in flight, exit on SIGTERM/SIGINT.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RawDaemon, procMemory, uniqueMarker, reapMarker, waitMarkerGone, waitMarkerPresent, pySleeperExec, test } from './lib/index.mjs';

// Called once the daemon's stdout is closed (RawDaemon.waitClosed, not waitExit: the last bytes it
// wrote may still be in the pipe at 'exit'), so it judges everything the daemon ever wrote.
function assertCleanStdout(d) {
    assert.ok(d.closed, 'assertCleanStdout before the daemon\'s stdout was closed');
    assert.deepEqual(d.badLines, [], 'lines on stdout that are not JSON');
    assert.equal(d.partialLine, '', 'bytes on stdout after the last newline');
    for (const line of d.lines) {
        assert.notEqual(line.trim(), '', 'an empty line on stdout');
        assert.ok(!line.endsWith('\r'), 'a CR before the newline');
    }
    for (const m of d.messages) {
        assert.equal(m.jsonrpc, '2.0', `not a JSON-RPC 2.0 message: ${JSON.stringify(m).slice(0, 300)}`);
        assert.ok(!Array.isArray(m));
    }
}

test('stdout carries nothing but JSON-RPC lines, whatever the runs print', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    await d.request('tools/list');
    const codes = [
        'print("line1\\nline2\\n\\n")',
        'import sys; sys.stderr.write("to stderr\\n"); print("{not json")',
        'import os; os.write(1, b"raw fd 1\\n"); os.write(2, b"raw fd 2\\n")',
        // try to reach the daemon's stdout through /proc: the parent is not the daemon, or not reachable
        'import os\ntry:\n    fd = os.open(f"/proc/{os.getppid()}/fd/1", os.O_WRONLY); os.write(fd, b"INJECTED\\n")\nexcept OSError as e:\n    print("refused", e.errno)',
        'raise SystemExit(5)',
    ];
    for (const code of codes) {
        const res = await d.response(d.callExec({ code }), 10000);
        assert.ok(res.result, JSON.stringify(res));
    }
    d.endStdin();
    assert.equal((await d.waitClosed(5000)).code, 0);
    assertCleanStdout(d);
    assert.ok(!d.lines.some((l) => l.includes('INJECTED') && !l.startsWith('{')), 'a run wrote to the daemon\'s stdout');
});

test('daemon logs go to stderr and never contain caller code, stdin or output', async (t) => {
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_CGROUP: 'auto' } });
    await d.initialize();
    const canary = uniqueMarker('canary');
    const res = await d.response(d.callExec({
        code: `# ${canary}-code\nimport sys\nprint(sys.stdin.read() + "-out")\nsys.stderr.write("${canary}-err")`,
        stdin: `${canary}-stdin`,
    }), 10000);
    assert.ok(res.result?.structuredContent?.stdout?.includes(`${canary}-stdin-out`), JSON.stringify(res));
    d.endStdin();
    await d.waitClosed(5000);
    assert.ok(!d.stderrText.includes(canary), `caller data in the daemon's log: ${d.stderrText}`);
    assertCleanStdout(d);
});

test('a 900 KB request line is read whole', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const code = '#' + 'x'.repeat(900_000) + '\nprint("ok")';
    const res = await d.response(d.callExec({ code }), 15000);
    assert.ok(res.result, JSON.stringify(res).slice(0, 500));
    assert.equal(res.result.isError ?? false, false, JSON.stringify(res).slice(0, 500));
    assert.equal(res.result.structuredContent.stdout, 'ok\n', JSON.stringify(res.result.structuredContent).slice(0, 500));
    const ping = await d.request('ping');
    assert.deepEqual(ping.result, {});
});

test('stdin EOF with a call in flight: the answer still arrives, then exit 0', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const id = d.callExec({ code: 'import time; time.sleep(1); print("done")', timeout_s: 10 });
    d.endStdin();
    const res = await d.response(id, 5000);
    assert.equal(res.result?.structuredContent?.stdout, 'done\n', JSON.stringify(res));
    const ex = await d.waitClosed(5000);
    assert.deepEqual(ex, { code: 0, signal: null }, `stderr: ${d.stderrText}`);
    assertCleanStdout(d);
});

test('stdin EOF with a queued call: running and queued calls are both answered, then exit 0', async (t) => {
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_MAX_CONCURRENT: 1 } });
    await d.initialize();
    const a = d.callExec({ code: 'import time; time.sleep(0.5); print("a")', timeout_s: 10 });
    const b = d.callExec({ code: 'print("b")', timeout_s: 10 });
    d.endStdin();
    const ra = await d.response(a, 5000);
    const rb = await d.response(b, 5000);
    assert.equal(ra.result?.structuredContent?.stdout, 'a\n', JSON.stringify(ra));
    assert.equal(rb.result?.structuredContent?.stdout, 'b\n', JSON.stringify(rb));
    const ex = await d.waitExit(5000);
    assert.deepEqual(ex, { code: 0, signal: null }, `stderr: ${d.stderrText}`);
});

test('stdin EOF when idle: exit 0 at once', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const t0 = performance.now();
    d.endStdin();
    // "At once": nothing is waited for, so the stop never reaches the daemon's 5 s shutdown
    // deadline (which it would say). The bound separates the two; it is not a speed measure (an
    // ASan daemon on a loaded machine took 2.2 s).
    const ex = await d.waitExit(10000);
    const ms = Math.round(performance.now() - t0);
    assert.deepEqual(ex, { code: 0, signal: null }, `stderr: ${d.stderrText}`);
    assert.doesNotMatch(d.stderrText, /shutdown took longer than/);
    assert.ok(ms < 4500, `slow to exit on EOF: ${ms} ms (the shutdown deadline is 5 s)`);
});

// SIGHUP too: over stdio it means the terminal (or the client) hung up. Over HTTP it reloads the
// tenants file instead (tenants.test.mjs).
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    test(`${sig} when idle: clean exit (status 0)`, async (t) => {
        const d = RawDaemon.spawn(t);
        await d.initialize();
        d.kill(sig);
        const ex = await d.waitClosed(3000);
        assert.deepEqual(ex, { code: 0, signal: null }, `stderr: ${d.stderrText}`);
        assertCleanStdout(d);
    });
}

// A daemon with a run in progress (a sleeper marked with marker, killed when the test ends).
async function daemonMidRun(t, marker) {
    reapMarker(t, marker);
    const d = RawDaemon.spawn(t);
    await d.initialize();
    d.callExec({ code: pySleeperExec(marker, 120), timeout_s: 100 });
    assert.ok((await waitMarkerPresent(marker, 3000)).length > 0, 'the run never started');
    return d;
}

test('SIGTERM with a run in progress: the daemon exits promptly and the run is gone', async (t) => {
    const marker = uniqueMarker('sigterm');
    const d = await daemonMidRun(t, marker);
    d.kill('SIGTERM');
    const ex = await d.waitClosed(5000);
    t.diagnostic(`exit ${JSON.stringify(ex)}`);
    assert.equal(ex.signal, null, `killed by ${ex.signal} instead of exiting`);
    assert.deepEqual(await waitMarkerGone(marker, 2000), [], 'the run outlived the daemon');
    assertCleanStdout(d);
});

// Beyond the letter of issue 2 (which asks for clean exits), but a run must never outlive its daemon.
test('the daemon is killed (SIGKILL) mid-run: the run does not outlive it', async (t) => {
    const marker = uniqueMarker('sigkill');
    const d = await daemonMidRun(t, marker);
    d.kill('SIGKILL');
    await d.waitExit(3000);
    assert.deepEqual(await waitMarkerGone(marker, 2000), [], 'the run outlived the daemon (no PDEATHSIG / namespace kill)');
});

test('a 30 MB request line is refused with an error; the daemon keeps serving, memory bounded', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const id = d.callExec({ code: '#' + 'x'.repeat(30_000_000) + '\nprint(1)' });
    const res = await d.waitFor((m) => m.id === id || (m.error && m.id == null), 15000, 'an answer to the 30 MB line');
    assert.ok(res.error || res.result?.isError, `not refused: ${JSON.stringify(res).slice(0, 300)}`);
    const ping = await d.request('ping');
    assert.deepEqual(ping.result, {});
    const m = procMemory(d.pid);
    t.diagnostic(`VmHWM ${m.hwm}`);
    assert.ok(m.hwm < 96 * 1024 * 1024, `daemon VmHWM ${m.hwm} after a 30 MB line`);
});

// Issue 29 #8: a stdio daemon killed (SIGKILL) cannot remove its private directory, which holds its
// callers' staged code and files. The next daemon to start in the same TMPDIR removes it, and only
// it: a live daemon's directory, a directory without a lock and another user's are left alone.
test('a killed daemon\'s private directory is removed by the next start; live, lockless and foreign ones are not', async (t) => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'bb-statedirs-'));
    t.after(() => fs.rmSync(base, { recursive: true, force: true }));
    const dirs = () => fs.readdirSync(base).filter((n) => /^mcp-execd\.[A-Za-z0-9]{6}$/.test(n)).sort();
    const env = { TMPDIR: base, MCP_EXEC_WARM_POOL: 0 };

    const live = RawDaemon.spawn(t, { env });
    await live.initialize();
    const [liveDir] = dirs();
    assert.ok(liveDir, 'the live daemon has no private directory');

    const killed = RawDaemon.spawn(t, { env });
    await killed.initialize();
    const killedDir = dirs().find((n) => n !== liveDir);
    assert.ok(killedDir, `no second directory: ${dirs()}`);
    fs.writeFileSync(path.join(base, killedDir, 'staged-caller-code'), 'secret');
    killed.kill('SIGKILL');
    await killed.waitClosed(10000);
    assert.ok(dirs().includes(killedDir), 'the killed daemon\'s directory is not there to clean');

    const lockless = 'mcp-execd.nolock';
    fs.mkdirSync(path.join(base, lockless));
    const foreign = 'mcp-execd.foreig';
    fs.mkdirSync(path.join(base, foreign));
    fs.writeFileSync(path.join(base, foreign, 'lock'), '');
    fs.chownSync(path.join(base, foreign), 4242, 4242);

    const next = RawDaemon.spawn(t, { env });
    await next.initialize();
    const after = dirs();
    assert.ok(!after.includes(killedDir), `the killed daemon's directory is still there: ${after}`);
    assert.ok(after.includes(liveDir), `the live daemon's directory was removed: ${after}`);
    assert.ok(after.includes(lockless) && after.includes(foreign), `a lockless or foreign directory was removed: ${after}`);
    await next.waitStderr(/removed 1 private directory in .* that mcp-execd instances which were killed had left/);
    // the live daemon still serves, from its directory
    const ping = await live.request('ping');
    assert.deepEqual(ping.result, {});
});
