// Streams and sessions over HTTP (issue 6, points 2, 4 and 5): a tools/call with a progress token
// is answered as an SSE stream whose notifications/progress arrive before the result; a closed
// stream, a dropped POST or a deleted session cancels its runs; idle sessions expire; quiet SSE
// streams get keep-alive comments; SIGTERM stops accepting, answers in-flight runs and exits.
// Also: IPv6 literals and systemd socket activation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { callExec, uniqueMarker, pySleeperExec, waitMarkerPresent, waitMarkerGone, findByMarker, sleep, skipUnlessCI } from './lib/index.mjs';
import {
    startHttpDaemon, connectSdk, mcpPost, initSession, readSse, openLegacy, rawRequest, postHeaders, INIT, until,
} from './lib/http-daemon.mjs';

const call = (id, args, meta) => ({
    jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'exec', arguments: args, ...(meta ? { _meta: meta } : {}) },
});

test('Streamable HTTP: a tools/call with _meta.progressToken is an SSE stream; progress strictly increases and comes before the result', async (t) => {
    const d = await startHttpDaemon(t);
    const sid = await initSession(d);
    const r = await mcpPost(d, call(5, { code: 'import time; time.sleep(2.5); print("done")' }, { progressToken: 'tok-1' }),
        { sessionId: sid, protocolVersion: '2025-11-25' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/event-stream');
    assert.match(r.headers.get('cache-control') ?? '', /no-cache/);
    const s = readSse(r);
    const result = await s.next((e) => e.json?.id === 5, 15000);
    await s.done;
    const progress = s.events.filter((e) => e.json?.method === 'notifications/progress');
    assert.ok(progress.length >= 3, `only ${progress.length} progress events in 2.5 s: ${JSON.stringify(s.events)}`);
    for (const p of progress) {
        assert.equal(p.json.params.progressToken, 'tok-1');
        assert.ok(p.at <= result.at, 'a progress event after the result');
    }
    const values = progress.map((p) => p.json.params.progress);
    for (let i = 1; i < values.length; i++) assert.ok(values[i] > values[i - 1], `not increasing: ${values}`);
    assert.equal(progress[0].json.params.total, 30, 'total = the applied timeout');
    assert.ok(progress[0].at < 1000, `the first progress came after ${progress[0].at} ms`);
    assert.equal(result.json.result.structuredContent.stdout, 'done\n');
    assert.equal(s.events.at(-1), result, 'the stream ends with the result');
    // an integer token keeps its type
    const r2 = await mcpPost(d, call(6, { code: 'print(2)' }, { progressToken: 42 }), { sessionId: sid });
    const s2 = readSse(r2);
    const p2 = await s2.next((e) => e.json?.method === 'notifications/progress');
    assert.equal(p2.json.params.progressToken, 42);
    await s2.next((e) => e.json?.id === 6);
    // without a token: a plain JSON answer
    const r3 = await mcpPost(d, call(7, { code: 'print(3)' }), { sessionId: sid });
    assert.match(r3.headers.get('content-type'), /^application\/json/);
    assert.equal((await r3.json()).result.structuredContent.stdout, '3\n');
});

test('SDK over Streamable HTTP: onprogress fires before the result resolves', async (t) => {
    const d = await startHttpDaemon(t);
    const c = await connectSdk(t, d, 'http');
    const seen = [];
    const t0 = performance.now();
    const r = await c.callTool({ name: 'exec', arguments: { code: 'import time; time.sleep(1.5); print(1)' } }, undefined,
        { onprogress: (p) => seen.push({ ...p, at: performance.now() - t0 }) });
    const end = performance.now() - t0;
    assert.equal(r.structuredContent.stdout, '1\n');
    assert.ok(seen.length >= 2, JSON.stringify(seen));
    assert.ok(seen.every((p) => p.at < end));
});

test('legacy HTTP+SSE: progress notifications for the token arrive on the stream before the result', async (t) => {
    const d = await startHttpDaemon(t);
    const l = await openLegacy(d);
    await l.request(INIT);
    const res = await l.request(call(3, { code: 'import time; time.sleep(2.2); print(1)' }, { progressToken: 'p' }), 10000);
    const resEv = l.sse.events.find((e) => e.json?.id === 3);
    const progress = l.sse.events.filter((e) => e.json?.method === 'notifications/progress');
    assert.ok(progress.length >= 2, JSON.stringify(l.sse.events));
    assert.ok(progress.every((p) => p.at <= resEv.at));
    assert.equal(res.result.structuredContent.stdout, '1\n');
    await l.close();
});

test('closing a legacy SSE stream cancels its session\'s runs at once', async (t) => {
    const d = await startHttpDaemon(t);
    const l = await openLegacy(d);
    await l.request(INIT);
    const marker = uniqueMarker();
    const p = await l.post(call(9, { code: pySleeperExec(marker, 60), timeout_s: 60 }));
    assert.equal(p.status, 202);
    assert.ok((await waitMarkerPresent(marker)).length > 0, 'the run never started');
    await l.close();
    // Gone well before its 60 s: the close ended it (the wait allows a loaded machine's slowness).
    assert.deepEqual(await waitMarkerGone(marker, 15000), [], 'the run outlived its stream');
});

test('a Streamable HTTP POST whose connection drops cancels its run', async (t) => {
    const d = await startHttpDaemon(t);
    const sid = await initSession(d);
    const marker = uniqueMarker();
    const ac = new AbortController();
    const pending = mcpPost(d, call(11, { code: pySleeperExec(marker, 60), timeout_s: 60 }), { sessionId: sid, signal: ac.signal }).catch(() => null);
    assert.ok((await waitMarkerPresent(marker)).length > 0, 'the run never started');
    ac.abort();
    await pending;
    assert.deepEqual(await waitMarkerGone(marker, 3000), [], 'the run outlived its request');
    // the session still works
    assert.equal((await rawRequest(d, { method: 'POST', headers: postHeaders({ 'Mcp-Session-Id': sid }), body: { jsonrpc: '2.0', id: 1, method: 'ping' } })).status, 200);
});

test('notifications/cancelled on another POST cancels the run; its POST gets no answer', async (t) => {
    const d = await startHttpDaemon(t);
    const sid = await initSession(d);
    const marker = uniqueMarker();
    const pending = mcpPost(d, call('c1', { code: pySleeperExec(marker, 60), timeout_s: 60 }), { sessionId: sid })
        .then(async (r) => ({ status: r.status, body: await r.text() }), (e) => ({ error: String(e) }));
    assert.ok((await waitMarkerPresent(marker)).length > 0);
    const n = await mcpPost(d, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1' } }, { sessionId: sid });
    assert.equal(n.status, 202);
    assert.deepEqual(await waitMarkerGone(marker, 3000), []);
    const out = await pending;
    assert.ok(!out.body || !out.body.includes('"id":"c1"'), `the cancelled call was answered: ${JSON.stringify(out)}`);
});

test('DELETE of a session cancels its runs (queued and running) and answers nothing for them', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_MAX_CONCURRENT: 1 } });
    const sid = await initSession(d);
    const m1 = uniqueMarker(), m2 = uniqueMarker();
    const p1 = mcpPost(d, call(1, { code: pySleeperExec(m1, 60), timeout_s: 60 }), { sessionId: sid }).then((r) => r.text(), () => '');
    const p2 = mcpPost(d, call(2, { code: pySleeperExec(m2, 60), timeout_s: 60 }), { sessionId: sid }).then((r) => r.text(), () => '');
    assert.ok((await waitMarkerPresent(m1)).length > 0);
    const del = await rawRequest(d, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } });
    assert.equal(del.status, 200);
    assert.deepEqual(await waitMarkerGone(m1, 3000), []);
    const [b1, b2] = await Promise.all([p1, p2]);
    assert.ok(!b1.includes('"result"') && !b2.includes('"result"'), `answered: ${b1} ${b2}`);
    // The slot is free for another session: its call runs at once. Had the queued run not been
    // dropped, it would have taken the one slot when the first was killed (it was queued first)
    // and held it for 60 s, and this call would wait behind it.
    const c = await connectSdk(t, d, 'http');
    const r = await callExec(c, { code: 'print(1)' });
    assert.equal(r.sc.stdout, '1\n');
    assert.ok(r.sc.queue_ms < 1000, `queue_ms ${r.sc.queue_ms}: the slot was taken`);
    assert.deepEqual(findByMarker(m2), [], 'the queued run started after DELETE');
    // And at the end, the daemon's own count: nothing queued, and only two runs ever started (the
    // killed one and this one), so the queued one never ran, early or late.
    d.kill('SIGTERM');
    assert.equal((await d.waitExit(10000)).code, 0, d.stderr().slice(-2000));
    assert.match(d.stderr(), /stopping \(SIGTERM\): .* RUNS_RUNNING=0 RUNS_QUEUED=0 RUNS_TOTAL=2\b/, d.stderr().slice(-2000));
});

test('an idle session expires after MCP_EXEC_SESSION_IDLE_S (then 404); a busy one does not', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_SESSION_IDLE_S: 2 } });
    const idle = await initSession(d);
    const busy = await initSession(d);
    const ping = (sid) => rawRequest(d, { method: 'POST', headers: postHeaders({ 'Mcp-Session-Id': sid }), body: { jsonrpc: '2.0', id: 1, method: 'ping' } });
    const long = mcpPost(d, call(4, { code: 'import time; time.sleep(4.5); print("ok")' }), { sessionId: busy }).then((r) => r.json());
    await sleep(1200);
    assert.equal((await ping(idle)).status, 200, 'used again before the limit: still there');
    await sleep(3800);
    assert.equal((await ping(idle)).status, 404, 'idle for longer than 2 s');
    const res = await long;
    assert.equal(res.result.structuredContent.stdout, 'ok\n');
    assert.equal((await ping(busy)).status, 200, 'a session with a run in flight is not idle');
});

test('keep-alive comments on a quiet SSE stream every MCP_EXEC_SSE_KEEPALIVE_S', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_SSE_KEEPALIVE_S: 1 } });
    const l = await openLegacy(d);
    // Two comments within 3.5 s at one a second: waited for, with that bound, not slept through.
    await until(() => l.sse.comments.length >= 2, 3500);
    assert.ok(l.sse.comments.length >= 2, `comments: ${JSON.stringify(l.sse.comments)}`);
    await l.close();
    const sid = await initSession(d);
    const r = await mcpPost(d, call(1, { code: 'import time; time.sleep(2.5)' }, { progressToken: 1 }), { sessionId: sid });
    const s = readSse(r);
    await s.done;
    assert.ok(s.events.some((e) => e.json?.id === 1));
});

test('SIGTERM: stops accepting, answers the in-flight run with a tool error on its stream, exits 0', async (t) => {
    const d = await startHttpDaemon(t);
    const c = await connectSdk(t, d, 'http');
    const l = await openLegacy(d);
    await l.request(INIT);
    const marker = uniqueMarker();
    const inflight = callExec(c, { code: pySleeperExec(marker, 60), timeout_s: 60 });
    const m2 = uniqueMarker();
    await l.post(call(77, { code: pySleeperExec(m2, 60), timeout_s: 60 }));
    assert.ok((await waitMarkerPresent(marker)).length > 0 && (await waitMarkerPresent(m2)).length > 0);
    d.kill('SIGTERM');
    const r = await inflight;
    assert.equal(r.isError, true, JSON.stringify(r.result));
    assert.match(r.text, /shutting down/);
    const legacyAnswer = await l.sse.next((e) => e.json?.id === 77, 5000);
    assert.equal(legacyAnswer.json.result.isError, true);
    // It stops without waiting out the 60 s runs (a loaded machine's slowness allowed).
    const { code } = await d.waitExit(15000);
    assert.equal(code, 0, d.stderr().slice(-2000));
    assert.deepEqual(await waitMarkerGone(marker, 10000), []);
    assert.deepEqual(await waitMarkerGone(m2, 10000), []);
    await assert.rejects(fetch(d.url, { method: 'POST' }), 'the port still accepts');
});

test('SIGTERM when idle with an open legacy stream: the stream ends and the daemon exits 0', async (t) => {
    const d = await startHttpDaemon(t);
    const l = await openLegacy(d);
    d.kill('SIGTERM');
    await l.sse.done;
    assert.equal((await d.waitExit(5000)).code, 0);
});

test('MCP_EXEC_ADDR with an IPv6 literal ([::1]:port) serves over IPv6', async (t) => {
    const probe = net.createServer();
    const v6 = await new Promise((res) => { probe.once('error', () => res(false)); probe.listen(0, '::1', () => { probe.close(); res(true); }); });
    if (!v6) { t.skip('no IPv6 loopback here'); return; }
    const d = await startHttpDaemon(t, { host: '[::1]' });
    assert.match(d.stderr(), /listening on \[::1\]:\d+/);
    const r = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: INIT });
    assert.equal(r.status, 200);
    const c = await connectSdk(t, d, 'http');
    assert.equal((await callExec(c, { code: 'print(6)' })).sc.stdout, '6\n');
});

test('a socket passed by systemd (sd_listen_fds, via systemd-socket-activate) is used', async (t) => {
    // systemd-socket-activate comes with `scripts/deps.sh test` (the systemd package): under CI its
    // absence would silently drop this check of the daemon's sd_listen_fds path, so it fails there.
    if (spawnSync('systemd-socket-activate', ['--help']).status !== 0) { skipUnlessCI(t, 'systemd-socket-activate is not installed'); return; }
    const d = await startHttpDaemon(t, {
        // MCP_EXEC_ADDR names a port nobody listens on: only the passed socket can answer.
        env: { MCP_EXEC_ADDR: '127.0.0.1:1' },
        wrap: (port, env) => ['systemd-socket-activate', ['-l', `127.0.0.1:${port}`,
            ...Object.entries(env).flatMap(([k, v]) => ['-E', `${k}=${v}`])]],
        // systemd-socket-activate starts the daemon on the first connection, as systemd does
        ready: /Listening on/,
        kick: true,
    });
    assert.match(d.stderr(), new RegExp(`listening on 127\\.0\\.0\\.1:${d.port}`));
    const c = await connectSdk(t, d, 'http');
    assert.equal((await callExec(c, { code: 'print(7)' })).sc.stdout, '7\n');
});
