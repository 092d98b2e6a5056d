// Edge cases around the contract of issue 2: stdin the program never reads, NUL bytes, races
// between cancellation and completion, no fd or memory growth over many runs, exact ids.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startDaemon, callExec, summarize, RawDaemon, procMemory, sleep, test } from './lib/index.mjs';

const fdCount = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;

test('a large stdin the program never reads: the run ends normally, the daemon does not block', async (t) => {
    const d = await startDaemon(t);
    const r = await callExec(d.client, { code: 'print("ignored stdin")', stdin: 'z'.repeat(1024 * 1024), timeout_s: 10 });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.exit_code, 0, summarize(r));
    assert.equal(r.sc.stdout, 'ignored stdin\n');
    assert.equal(r.sc.timed_out, false);
    await d.client.ping();
});

test('a program that closes stdin early after reading a little', async (t) => {
    const d = await startDaemon(t);
    const r = await callExec(d.client, {
        code: 'import os, sys\nprint(sys.stdin.read(5))\nos.close(0)\nimport time; time.sleep(0.2)\nprint("end")',
        stdin: 'hello' + 'w'.repeat(1024 * 1024 - 5),
    });
    assert.equal(r.sc.exit_code, 0, summarize(r));
    assert.equal(r.sc.stdout, 'hello\nend\n');
});

test('a NUL character in stdin reaches the program', async (t) => {
    const d = await startDaemon(t);
    const r = await callExec(d.client, { code: 'import sys; print(repr(sys.stdin.read()))', stdin: 'a\u0000b' });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.stdout, "'a\\x00b'\n");
});

test('a program that closes stdout and stderr and keeps running is still answered', async (t) => {
    const d = await startDaemon(t);
    const r = await callExec(d.client, {
        code: 'import os, sys, time\nprint("bye", flush=True)\nos.close(1); os.close(2)\ntime.sleep(0.5)\nraise SystemExit(7)',
        timeout_s: 5,
    });
    assert.equal(r.sc.exit_code, 7, summarize(r));
    assert.equal(r.sc.stdout, 'bye\n');
    assert.ok(r.sc.duration_ms >= 450, `duration_ms ${r.sc.duration_ms}: answered before the program ended`);
});

test('no fd or memory growth in the daemon over 40 runs of every kind', async (t) => {
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_MAX_CONCURRENT: 4, MCP_EXEC_MAX_OUTPUT_BYTES: 65536 } });
    await d.initialize();
    // warm up once so lazily opened things are open
    await d.response(d.callExec({ code: 'print(0)' }), 10000);
    const fds0 = fdCount(d.pid);
    const mem0 = procMemory(d.pid).rss;
    const kinds = [
        { code: 'print(1)' },
        { code: 'raise SystemExit(2)' },
        { code: 'import sys; sys.stdout.write("x" * 200000)' },
        { code: 'while True: pass', timeout_s: 1 },
        { code: 'import sys; print(len(sys.stdin.read()))', stdin: 'y'.repeat(5000) },
        { code: '' },   // a tool error
    ];
    for (let round = 0; round < 5; round++) {
        const ids = kinds.map((k) => d.callExec(k));
        const cancelled = d.callExec({ code: 'import time; time.sleep(30)' });
        await sleep(100);
        d.notify('notifications/cancelled', { requestId: cancelled });
        for (const id of ids) await d.response(id, 10000);
    }
    await sleep(300);
    const fds1 = fdCount(d.pid);
    const mem1 = procMemory(d.pid).rss;
    t.diagnostic(`fds ${fds0} → ${fds1}; rss ${mem0} → ${mem1}`);
    assert.ok(fds1 <= fds0, `the daemon's fd count grew from ${fds0} to ${fds1}: ${fs.readdirSync(`/proc/${d.pid}/fd`).map((f) => { try { return fs.readlinkSync(`/proc/${d.pid}/fd/${f}`); } catch { return '?'; } }).join(' ')}`);
    assert.ok(mem1 < mem0 + 16 * 1024 * 1024, `the daemon's RSS grew from ${mem0} to ${mem1}`);
});

test('cancellations racing with completions: every other call answered once, the daemon survives', async (t) => {
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_MAX_CONCURRENT: 2 } });
    await d.initialize();
    const ids = [];
    for (let i = 0; i < 20; i++) ids.push(d.callExec({ code: `print(${i})` }, { id: `race-${i}` }));
    // cancel the odd ones at once: some are queued, some running, some may already be done
    for (let i = 1; i < 20; i += 2) d.notify('notifications/cancelled', { requestId: ids[i] });
    for (let i = 0; i < 20; i += 2) {
        const res = await d.response(ids[i], 10000);
        assert.equal(res.result?.structuredContent?.stdout, `${i}\n`, JSON.stringify(res));
    }
    await sleep(500);
    const ping = await d.request('ping');
    assert.deepEqual(ping.result, {});
    for (const id of ids) {
        const n = d.messages.filter((m) => m.id === id).length;
        assert.ok(n <= 1, `${n} responses for ${id}`);
    }
    assert.deepEqual(d.badLines, []);
});

test('numeric ids are echoed exactly, also beyond 2^53', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    d.sendLine('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}');
    d.sendLine('{"jsonrpc":"2.0","id":"9007199254740993","method":"ping"}');
    await d.waitFor((m) => m.id === '9007199254740993', 3000, 'the string-id ping');
    const line = d.lines.find((l) => /"id":\s*9007199254740993\b/.test(l));
    assert.ok(line, `the big numeric id was not echoed exactly: ${JSON.stringify(d.lines.slice(1))}`);
});

test('a request split across two writes and two requests in one write are both handled', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    d.proc.stdin.write('{"jsonrpc":"2.0","id":"split",');
    await sleep(200);
    d.proc.stdin.write('"method":"ping"}\n{"jsonrpc":"2.0","id":"second","method":"ping"}\n');
    const a = await d.response('split', 3000);
    const b = await d.response('second', 3000);
    assert.deepEqual(a.result, {});
    assert.deepEqual(b.result, {});
});
