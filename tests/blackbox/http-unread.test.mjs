// The cap on answers a client never reads (README, "Limits": "unread answers of an event stream |
// 4 × MCP_EXEC_MAX_MESSAGE_BYTES + 64 MiB | the stream is closed and its runs cancelled (a client
// that does not read slows nobody else)"; HTTP: "its answers wait in the daemon (capped; past the
// cap the stream is closed and its runs cancelled)").
//
// A legacy HTTP+SSE client on a raw socket reads its endpoint event, then stops reading. Its
// session starts a long run (a marked sleeper) and calls whose answers are 4 MiB each (2 MiB of
// stdout, in structuredContent and again in the text item): once more than the cap waits for it,
// the daemon says so, closes the stream, the session is gone (404) and the sleeper is killed; a
// second client is served all along.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test, callExec, summarize, uniqueMarker, pySleeperExec, waitMarkerPresent, waitMarkerGone, findByMarker, procMemory } from './lib/index.mjs';
import { startHttpDaemon, connectSdk, until } from './lib/http-daemon.mjs';

const MiB = 1 << 20;
const MAX_MESSAGE = 4096;                    // the smallest MCP_EXEC_MAX_MESSAGE_BYTES
const CAP = 4 * MAX_MESSAGE + 64 * MiB;      // HTTP_STREAM_SLACK_BYTES in daemon/transport/http-stream.c
// MCP_EXEC_MAX_OUTPUT_BYTES: each big answer is about twice it (stdout in structuredContent and in
// the text item), small enough that where the daemon stops tells its cap from another.
const OUTPUT = 2 * MiB;
const ANSWER_MAX = 2 * OUTPUT + 64 * 1024;
const BIG_CALLS = 40;                        // 160 MiB of answers: past the cap and any socket buffers

// One request on a raw socket: `GET /sse`, then the endpoint event; reading stops after it.
function openUnreadLegacy(d) {
    return new Promise((resolve, reject) => {
        const s = net.connect(d.port, '127.0.0.1');
        let buf = '';
        const st = { socket: s, ended: false, endpoint: null };
        s.on('error', () => { st.ended = true; });
        s.on('close', () => { st.ended = true; });
        const onData = (b) => {
            buf += b.toString('latin1');
            const m = /event: endpoint\r?\ndata: (\S+)\r?\n/.exec(buf);
            if (!m) return;
            s.off('data', onData);
            // From here on nothing is read: what the daemon sends fills the socket buffers, then
            // waits in the daemon.
            s.pause();
            st.endpoint = new URL(m[1], d.base).toString();
            resolve(st);
        };
        s.on('data', onData);
        s.once('connect', () => s.write(`GET /sse HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAccept: text/event-stream\r\n\r\n`));
        s.once('error', reject);
    });
}

async function post(url, msg) {
    const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(msg) });
    await r.text();
    return r.status;
}

test('a legacy stream whose client stops reading is closed past 4 × MCP_EXEC_MAX_MESSAGE_BYTES + 64 MiB, its runs cancelled, others served', { timeout: 120000 }, async (t) => {
    const d = await startHttpDaemon(t, { env: {
        MCP_EXEC_MAX_MESSAGE_BYTES: MAX_MESSAGE, MCP_EXEC_MAX_OUTPUT_BYTES: OUTPUT, MCP_EXEC_MAX_CONCURRENT: 2,
        MCP_EXEC_WARM_POOL: 0, MCP_EXEC_QUEUE_MAX: 100, MCP_EXEC_SESSION_QUEUE_MAX: 100,
    } });
    const other = await connectSdk(t, d, 'http');

    const lazy = await openUnreadLegacy(d);
    t.after(() => lazy.socket.destroy());
    assert.equal(await post(lazy.endpoint, { jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'lazy', version: '0' } } }), 202);
    assert.equal(await post(lazy.endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' }), 202);

    const marker = uniqueMarker('unread');
    t.after(() => { for (const p of findByMarker(marker)) try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } });
    assert.equal(await post(lazy.endpoint, { jsonrpc: '2.0', id: 2, method: 'tools/call',
        params: { name: 'exec', arguments: { code: pySleeperExec(marker, 120), timeout_s: 120 } } }), 202);
    assert.ok((await waitMarkerPresent(marker, 15000)).length > 0, 'the long run did not start');

    for (let i = 0; i < BIG_CALLS; i++) {
        const status = await post(lazy.endpoint, { jsonrpc: '2.0', id: 10 + i, method: 'tools/call',
            params: { name: 'exec', arguments: { code: `import sys\nsys.stdout.write("x" * ${OUTPUT})`, timeout_s: 60 } } });
        // Once the stream is closed its session is gone: later posts get 404, which is the point.
        if (status === 404) break;
        assert.equal(status, 202);
    }

    // The daemon notices, says how much was pending, and closes the stream.
    const warned = /an HTTP client is not reading its event stream \((\d+) bytes pending\); closing it/;
    assert.ok(await d.waitFor(warned, 60000), `no warning; stderr:\n${d.stderr().slice(-2000)}`);
    const pending = Number(warned.exec(d.stderr())[1]);
    // Past the cap, by at most the answer that crossed it.
    assert.ok(pending > CAP && pending <= CAP + ANSWER_MAX, `${pending} bytes pending, cap ${CAP}`);
    // Its runs are cancelled: the sleeper goes long before its 120 s.
    assert.deepEqual(await waitMarkerGone(marker, 15000), [], 'the stream\'s long run was not cancelled');
    // Its session went with it.
    assert.equal(await post(lazy.endpoint, { jsonrpc: '2.0', id: 99, method: 'ping' }), 404);
    // The client's socket is closed by the daemon: read what is buffered, then the end.
    lazy.socket.resume();
    assert.ok(await until(() => lazy.ended, 15000), 'the daemon did not close the unread stream');

    // Nobody else was slowed for good: another client is served.
    const r = await callExec(other, { code: 'print("still here")', timeout_s: 30 });
    assert.equal(r.sc?.stdout, 'still here\n', summarize(r));
    assert.equal(d.exit, null, 'the daemon exited');
    t.diagnostic(`closed with ${pending} bytes pending (cap ${CAP}); daemon RSS now ${Math.round(procMemory(d.pid).rss / MiB)} MiB`);
});
