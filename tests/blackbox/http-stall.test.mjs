// Stalled clients (issue 6, point 4 and "Load"): a client that opens a stream and never reads it
// neither blocks the others nor makes the loop spin, and when it finally goes, its session and
// fds go with it. Conditions, not speeds: every other call and ping is answered, and the daemon's
// own CPU time (the kernel's count) while nothing else happens stays far below what a loop retrying
// the stalled writes would burn. The round trips with and without it are printed for the record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { callExec, procMemory, sleep } from './lib/index.mjs';
import { startHttpDaemon, connectSdk, fdCount, until, median, rawRequest, postHeaders, INIT } from './lib/http-daemon.mjs';

const MiB = 1024 * 1024;

/** A legacy client that opens /sse and then never reads its socket again. */
async function stalledLegacyClient(d) {
    const sock = net.connect(d.port, '127.0.0.1');
    await new Promise((res, rej) => { sock.once('connect', res); sock.once('error', rej); });
    sock.write(`GET /sse HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAccept: text/event-stream\r\n\r\n`);
    let head = '';
    const sid = await new Promise((res, rej) => {
        const onData = (b) => {
            head += b.toString('latin1');
            const m = head.match(/sessionId=([\x21-\x7e]+?)\r?\n/);
            if (m) { sock.off('data', onData); sock.pause(); res(m[1]); }
        };
        sock.on('data', onData);
        setTimeout(() => rej(new Error(`no endpoint event: ${head}`)), 5000);
    });
    return { sock, sid };
}

test('a client that opens a stream and never reads it blocks nobody and does not make the loop spin', { timeout: 180000 }, async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_MAX_CONCURRENT: 2 } });
    const c = await connectSdk(t, d, 'http');
    const measure = async (n) => {
        const ms = [];
        for (let i = 0; i < n; i++) ms.push((await callExec(c, { code: 'print(1)' })).ms);
        const pings = [];
        for (let i = 0; i < 10; i++) { const t0 = performance.now(); await c.ping(); pings.push(performance.now() - t0); }
        return { call: median(ms), ping: median(pings) };
    };
    await measure(3);
    const before = await measure(15);

    // The stalled client: 8 calls each printing 1 MiB, answered on a stream it never reads, so
    // its socket buffer fills and ~8 MiB wait in the daemon.
    const stalled = await stalledLegacyClient(d);
    const post = (msg) => rawRequest(d, { method: 'POST', path: `/messages?sessionId=${encodeURIComponent(stalled.sid)}`,
        headers: { 'Content-Type': 'application/json' }, body: msg });
    assert.equal((await post(INIT)).status, 202);
    for (let i = 0; i < 8; i++)
        assert.equal((await post({ jsonrpc: '2.0', id: 10 + i, method: 'tools/call',
            params: { name: 'exec', arguments: { code: 'import sys; sys.stdout.write("x" * 1000000)' } } })).status, 202);
    await sleep(3000); // its runs finish; their answers pile up behind the unread socket
    const during = await measure(15);
    const rssDuring = procMemory(d.pid).rss;

    t.diagnostic(`median print(1) round trip ${before.call.toFixed(1)} ms without the stalled client, ` +
        `${during.call.toFixed(1)} ms with it; ping ${before.ping.toFixed(2)} → ${during.ping.toFixed(2)} ms; ` +
        `daemon RSS with ~8 MiB held for it: ${(rssDuring / MiB).toFixed(1)} MiB`);
    // measure() answered every call and ping: nothing waited for the stalled socket. Now the loop at
    // rest with ~8 MiB waiting for it: a retrying write would spend the whole window on CPU (half
    // of it even on a machine with a CPU kept busy); an idle loop spends milliseconds.
    const cpu = () => {
        const stat = fs.readFileSync(`/proc/${d.pid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, in ms (USER_HZ 100)
    };
    const cpu0 = cpu();
    await sleep(2000);
    const spent = cpu() - cpu0;
    t.diagnostic(`daemon CPU in 2 s at rest with the stalled client: ${spent} ms`);
    assert.ok(spent < 500, `the daemon spent ${spent} ms of CPU in 2 s with nothing to do but a stalled client`);

    // When it finally goes away, its session goes with it.
    const fdsWith = fdCount(d.pid);
    stalled.sock.destroy();
    await until(() => fdCount(d.pid) < fdsWith, 5000);
    const r = await post({ jsonrpc: '2.0', id: 99, method: 'ping' });
    assert.equal(r.status, 404, 'the stalled session survived its connection');
});

test('a Streamable HTTP client that never reads its progress stream does not block the others', { timeout: 120000 }, async (t) => {
    const d = await startHttpDaemon(t);
    const c = await connectSdk(t, d, 'http');
    const init = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: INIT });
    const sid = init.headers['mcp-session-id'];
    // raw socket: send the POST, then never read the answer
    const sock = net.connect(d.port, '127.0.0.1');
    await new Promise((res) => sock.once('connect', res));
    sock.pause();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'exec',
        arguments: { code: 'import sys, time\nfor i in range(4): sys.stdout.write("y" * 250000); time.sleep(0.2)' }, _meta: { progressToken: 1 } } });
    sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nMcp-Session-Id: ${sid}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await sleep(2000);
    const ms = [];
    for (let i = 0; i < 10; i++) ms.push((await callExec(c, { code: 'print(1)' })).ms);
    t.diagnostic(`median print(1) round trip with an unread 1 MB stream open: ${median(ms).toFixed(1)} ms`);
    assert.ok(median(ms) < 1000, `median ${median(ms)} ms`);
    sock.destroy();
});
