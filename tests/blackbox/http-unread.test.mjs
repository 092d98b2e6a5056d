// The cap on answers a client never reads (docs/protocol.md, "The daemon's own limits": "unread answers of an event stream |
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
import http from 'node:http';
import { test, callExec, summarize, uniqueMarker, pySleeperExec, waitMarkerPresent, waitMarkerGone, reapMarker, procMemory } from './lib/index.mjs';
import { startHttpDaemon, connectSdk, until } from './lib/http-daemon.mjs';

const MiB = 1 << 20;
const MAX_MESSAGE = 4096;                    // the smallest MCP_EXEC_MAX_MESSAGE_BYTES
const CAP = 4 * MAX_MESSAGE + 64 * MiB;      // HTTP_STREAM_SLACK_BYTES in daemon/transport/http-stream.c
// MCP_EXEC_MAX_OUTPUT_BYTES: each big answer is about twice it (stdout in structuredContent and in
// the text item), an eighth of the cap, so that where the daemon stops still shows the cap; large
// enough that ~10 runs reach it: with the systemd tier's VM and a busy CPU beside the ASan tier, one
// run took 30 s (2 MiB outputs needed ~19 of them, and 600 s saw 17).
const OUTPUT = 4 * MiB;
const ANSWER_MAX = 2 * OUTPUT + 64 * 1024;
const BIG_CALLS = 24;                        // 192 MiB of answers: past the cap and any socket buffers

// `GET /sse` with node:http (it undoes the chunked framing), then the endpoint event; reading stops
// after it (the response is paused: node then stops reading the socket) unless `keepReading`,
// when everything that comes is kept in st.chunks.
function openUnreadLegacy(d, keepReading = false) {
    return new Promise((resolve, reject) => {
        const st = { socket: null, res: null, ended: false, endpoint: null, chunks: [], bytes: 0 };
        const req = http.request({ host: '127.0.0.1', port: d.port, path: '/sse', headers: { Accept: 'text/event-stream' }, agent: false }, (res) => {
            st.res = res;
            let buf = '';
            const onData = (b) => {
                buf += b.toString('latin1');
                const m = /event: endpoint\r?\ndata: (\S+)\r?\n/.exec(buf);
                if (!m) return;
                res.off('data', onData);
                if (keepReading) res.on('data', (c) => { st.chunks.push(c); st.bytes += c.length; });
                // From here on nothing is read: what the daemon sends fills the socket buffers,
                // then waits in the daemon.
                else res.pause();
                st.endpoint = new URL(m[1], d.base).toString();
                resolve(st);
            };
            res.on('data', onData);
            res.on('end', () => { st.ended = true; });
            res.on('error', () => { st.ended = true; });
            res.on('close', () => { st.ended = true; });
        });
        req.on('socket', (sock) => { st.socket = sock; });
        req.on('error', (e) => { st.ended = true; reject(e); });
        req.end();
    });
}

async function post(url, msg) {
    const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(msg) });
    await r.text();
    return r.status;
}

test('a legacy stream whose client stops reading is closed past 4 × MCP_EXEC_MAX_MESSAGE_BYTES + 64 MiB, its runs cancelled, others served', { timeout: 720000 }, async (t) => {
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
    reapMarker(t, marker);
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

    // The daemon notices, says how much was pending, and closes the stream. Wait for the warning,
    // or for every big call to have finished without one (the failure), not for a fixed time: the
    // answers come one run at a time, slowly under the sanitizers on a busy machine (60 s was not
    // enough there; with a CPU kept busy an ASan daemon made one run in 14 s, and 240 s saw 17 of
    // the ~19 the cap takes). The bound only ends a daemon that stops making progress.
    const warned = /an HTTP client is not reading its event stream \((\d+) bytes pending\); closing it/;
    const finished = () => (d.stderr().match(/run [0-9a-f]+ finished: /g) || []).length;
    await until(() => warned.test(d.stderr()) || finished() >= BIG_CALLS, 600000);
    assert.ok(warned.test(d.stderr()), `no warning after ${finished()} of ${BIG_CALLS} big answers; stderr:\n${d.stderr().slice(-2000)}`);
    const pending = Number(warned.exec(d.stderr())[1]);
    // Past the cap, by at most the answer that crossed it.
    assert.ok(pending > CAP && pending <= CAP + ANSWER_MAX, `${pending} bytes pending, cap ${CAP}`);
    // Its runs are cancelled: the sleeper goes long before its 120 s.
    assert.deepEqual(await waitMarkerGone(marker, 15000), [], 'the stream\'s long run was not cancelled');
    // Its session went with it.
    assert.equal(await post(lazy.endpoint, { jsonrpc: '2.0', id: 99, method: 'ping' }), 404);
    // The client's socket is closed by the daemon: read what is buffered, then the end.
    lazy.res.resume();
    assert.ok(await until(() => lazy.ended, 15000), 'the daemon did not close the unread stream');

    // Nobody else was slowed for good: another client is served.
    const r = await callExec(other, { code: 'print("still here")', timeout_s: 30 });
    assert.equal(r.sc?.stdout, 'still here\n', summarize(r));
    assert.equal(d.exit, null, 'the daemon exited');
    t.diagnostic(`closed with ${pending} bytes pending (cap ${CAP}); daemon RSS now ${Math.round(procMemory(d.pid).rss / MiB)} MiB`);
});

test('a client that reads gets an answer larger than the cap: the cap counts what is left unread', { timeout: 300000 }, async (t) => {
    const BIG = 34 * MiB; // an answer of about 68 MiB, past the 64 MiB cap
    const d = await startHttpDaemon(t, { env: {
        MCP_EXEC_MAX_MESSAGE_BYTES: MAX_MESSAGE, MCP_EXEC_MAX_OUTPUT_BYTES: BIG, MCP_EXEC_WARM_POOL: 0,
    } });
    const reader = await openUnreadLegacy(d, true);
    t.after(() => reader.socket.destroy());
    assert.equal(await post(reader.endpoint, { jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'reader', version: '0' } } }), 202);
    assert.equal(await post(reader.endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' }), 202);
    assert.equal(await post(reader.endpoint, { jsonrpc: '2.0', id: 2, method: 'tools/call',
        params: { name: 'exec', arguments: { code: `import sys\nsys.stdout.write("x" * ${BIG})`, timeout_s: 60 } } }), 202);
    // The answer is in once more than twice BIG came and the last event is complete.
    const whole = () => reader.bytes > 2 * BIG && reader.chunks.at(-1).toString('latin1').endsWith('\n\n');
    // (bounded so that the test's own timeout is not what ends a stalled stream; 240 s because the
    // 68 MiB answer under the sanitizers on a busy machine takes most of a minute)
    assert.ok(await until(() => whole() || reader.ended, 240000), `${reader.bytes} bytes came`);
    assert.equal(reader.ended, false, `the stream was closed after ${reader.bytes} bytes; stderr:\n${d.stderr().slice(-1000)}`);
    const events = Buffer.concat(reader.chunks).toString('latin1').split(/\r?\n\r?\n/);
    const answer = events.map((e) => /^data: (.*)$/m.exec(e)?.[1]).filter(Boolean).map((x) => JSON.parse(x)).find((m) => m.id === 2);
    assert.ok(answer, 'no answer to the call on the stream');
    assert.equal(answer.result.structuredContent.stdout.length, BIG);
    assert.equal(answer.result.structuredContent.truncated, false);
    assert.doesNotMatch(d.stderr(), /not reading its event stream/);
});
