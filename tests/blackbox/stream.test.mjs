// Output while it happens, and the trace context (issue 17, points 4 and 5): a call that asked for
// progress (a progressToken) gets notifications/progress each second on its own stream, over stdio
// and Streamable HTTP, from the 1.x SDK (2025-11-25) and the 2.x client (auto, and pinned to 2026-07-28); each
// carries the output new since the last one in params._meta["io.github.mcp-execd/output"]. The
// pieces put together are a prefix of the final stdout/stderr, never more than the output cap, and
// the result is the same as without streaming. A valid `traceparent` (_meta, or the HTTP header)
// ends up in the run's record (here: the record's line on stderr, the daemon has no journal);
// anything else never does. No timing is asserted beyond "a 3 s run sees two seconds go by".
import assert from 'node:assert/strict';
import { Client as Client2 } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport as Http2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as Stdio2 } from '@modelcontextprotocol/client/stdio';
import { RawDaemon, binaryPath, daemonEnv, errorsNotRaces, startDaemon, test } from './lib/index.mjs';
import { connectSdk, startHttpDaemon } from './lib/http-daemon.mjs';

const KEY = 'io.github.mcp-execd/output';
const MODERN = '2026-07-28';

// 3 s, a line on each stream every 0.5 s, flushed as it goes.
const TICKER = [
    'import sys, time',
    'for i in range(6):',
    '    print(f"out {i} \\u00e9\\u20ac", flush=True)',
    '    sys.stderr.write(f"err {i}\\n"); sys.stderr.flush()',
    '    time.sleep(0.5)',
].join('\n');
const TICKER_STDOUT = [0, 1, 2, 3, 4, 5].map((i) => `out ${i} é€\n`).join('');
const TICKER_STDERR = [0, 1, 2, 3, 4, 5].map((i) => `err ${i}\n`).join('');

/** Calls exec with an onprogress handler; returns the result and every progress params seen. */
async function streamedCall(client, args, era2 = false) {
    const notes = [];
    const onprogress = (p) => notes.push(p);
    const params = { name: 'exec', arguments: args };
    const result = era2
        ? await client.callTool(params, { onprogress, timeout: 60000 })
        : await client.callTool(params, undefined, { onprogress, timeout: 60000 });
    return { result, notes };
}

/** The streamed pieces of each stream put together, and how many bytes (UTF-8) came in all. */
function joined(notes) {
    let stdout = '', stderr = '', truncated = false;
    for (const n of notes) {
        const o = n._meta?.[KEY];
        if (!o) continue;
        stdout += o.stdout ?? '';
        stderr += o.stderr ?? '';
        truncated ||= o.truncated === true;
    }
    return { stdout, stderr, truncated, bytes: Buffer.byteLength(stdout) + Buffer.byteLength(stderr) };
}

function checkTicker({ result, notes }) {
    const sc = result.structuredContent;
    assert.equal(result.isError, false, JSON.stringify(result).slice(0, 1500));
    // The result is unchanged by the streaming.
    assert.equal(sc.stdout, TICKER_STDOUT);
    assert.equal(sc.stderr, TICKER_STDERR);
    assert.equal(sc.truncated, false);
    const timed = notes.filter((n) => n.progress >= 1);
    assert.ok(timed.length >= 2, `want >= 2 progress notifications after the first second: ${JSON.stringify(notes)}`);
    for (let i = 1; i < notes.length; i++) assert.ok(notes[i].progress > notes[i - 1].progress, JSON.stringify(notes));
    const j = joined(notes);
    assert.ok(sc.stdout.startsWith(j.stdout), `streamed stdout ${JSON.stringify(j.stdout)} is no prefix of ${JSON.stringify(sc.stdout)}`);
    assert.ok(sc.stderr.startsWith(j.stderr), `streamed stderr ${JSON.stringify(j.stderr)} is no prefix of ${JSON.stringify(sc.stderr)}`);
    // The run prints for 3 s and progress comes each second while it runs: some of it streamed.
    assert.ok(j.stdout.length > 0, `no output streamed: ${JSON.stringify(notes)}`);
    assert.equal(j.truncated, false);
}

/** A 2.x client in auto mode, or pinned to 2026-07-28, over stdio or HTTP (to daemon d); either
 * way it must negotiate 2026-07-28. */
async function connect2x(t, mode, d) {
    const transport = d ? new Http2(new URL(d.url))
        : new Stdio2({ command: binaryPath(), args: [], env: daemonEnv(), stderr: 'pipe' });
    const client = new Client2({ name: 'mcp-execd-blackbox-stream', version: '0' },
        { versionNegotiation: { mode } });
    t.after(async () => { try { await client.close(); } catch { /* gone */ } });
    await client.connect(transport);
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    return client;
}

test('stdio, 1.x (2025-11-25): a 3 s run streams its output in progress notifications', async (t) => {
    const d = await startDaemon(t);
    checkTicker(await streamedCall(d.client, { code: TICKER, timeout_s: 30 }));
    assert.deepEqual(errorsNotRaces(d.errors, d.wire), []);
});

const MODES_2X = [['auto', 'auto'], ['pinned to 2026-07-28', { pin: MODERN }]];

for (const [name, mode] of MODES_2X) {
    test(`stdio, 2.x ${name}: the same`, async (t) => {
        const client = await connect2x(t, mode);
        checkTicker(await streamedCall(client, { code: TICKER, timeout_s: 30 }, true));
    });
}

test('Streamable HTTP, 1.x (2025-11-25): the same, on the POST\'s event stream', async (t) => {
    const d = await startHttpDaemon(t);
    const client = await connectSdk(t, d, 'http');
    checkTicker(await streamedCall(client, { code: TICKER, timeout_s: 30 }));
    assert.deepEqual(errorsNotRaces(client.errors, client.wire), []);
});

for (const [name, mode] of MODES_2X) {
    test(`Streamable HTTP, 2.x ${name}: the same (no session)`, async (t) => {
        const d = await startHttpDaemon(t);
        const client = await connect2x(t, mode, d);
        checkTicker(await streamedCall(client, { code: TICKER, timeout_s: 30 }, true));
    });
}

// Issue 30.1: a call waiting for a slot says so in its progress (its deadline has not started), then
// counts its run's seconds once it runs.
test('a queued call\'s progress says it is queued and how many are ahead, then that it runs', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_CONCURRENT: '1' } });
    // Over stdio the daemon reads them in order: the first takes the one slot, the second waits for
    // it (3 s), then runs 2.5 s, which holds at least one whole second after its run starts.
    const first = d.client.callTool({ name: 'exec', arguments: { code: 'import time; time.sleep(3)' } });
    const second = streamedCall(d.client, { code: 'import time; time.sleep(2.5); print("ran")' });
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.isError, false);
    assert.equal(b.result.structuredContent.stdout, 'ran\n');
    const messages = b.notes.map((n) => n.message);
    assert.equal(messages[0], 'accepted');
    const queued = messages.filter((m) => /^queued for \d+ s, 0 calls ahead \(at most 1 run at once\); its \d+ s deadline starts when it runs$/.test(m));
    const running = messages.filter((m) => /^\d+ s elapsed of the \d+ s deadline$/.test(m));
    assert.ok(queued.length >= 1, `no queued progress: ${JSON.stringify(messages)}`);
    assert.ok(running.length >= 1, `no running progress after the queue: ${JSON.stringify(messages)}`);
    assert.ok(messages.lastIndexOf(queued.at(-1)) < messages.indexOf(running[0]), JSON.stringify(messages));
});

test('the streamed output never passes MCP_EXEC_MAX_OUTPUT_BYTES; the result is the capped one', async (t) => {
    const cap = 1000;
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_OUTPUT_BYTES: String(cap) } });
    // 3000 bytes in the first second and a half (a two-byte character in each line), then quiet.
    const code = [
        'import sys, time',
        'for i in range(30):',
        '    print("é" * 49, flush=True)',
        '    if i % 3 == 0: sys.stderr.write("x" * 9 + "\\n"); sys.stderr.flush()',
        '    time.sleep(0.05)',
        'time.sleep(2)',
    ].join('\n');
    const { result, notes } = await streamedCall(d.client, { code, timeout_s: 30 });
    const sc = result.structuredContent;
    assert.equal(sc.truncated, true);
    assert.ok(Buffer.byteLength(sc.stdout) + Buffer.byteLength(sc.stderr) <= cap);
    const j = joined(notes);
    assert.ok(j.bytes <= cap, `streamed ${j.bytes} bytes, cap ${cap}`);
    assert.ok(sc.stdout.startsWith(j.stdout), 'streamed stdout is a prefix of the result');
    assert.ok(sc.stderr.startsWith(j.stderr), 'streamed stderr is a prefix of the result');
    assert.ok(j.truncated, `the cap was announced once the output passed it: ${JSON.stringify(notes).slice(0, 1500)}`);
    assert.equal(notes.filter((n) => n._meta?.[KEY]?.truncated).length, 1, 'truncated is said once');
    // After it, progress goes on without output.
    const after = notes.slice(notes.findIndex((n) => n._meta?.[KEY]?.truncated) + 1);
    assert.ok(after.every((n) => !n._meta?.[KEY]), JSON.stringify(after));
});

test('no progress for a call without a progress token; the result equals the streamed call\'s', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const plain = d.callExec({ code: TICKER, timeout_s: 30 });
    const streamed = d.send('tools/call', { name: 'exec', arguments: { code: TICKER, timeout_s: 30 }, _meta: { progressToken: 'tok' } });
    const [a, b] = await Promise.all([d.response(plain, 30000), d.response(streamed, 30000)]);
    const progress = d.messages.filter((m) => m.method === 'notifications/progress');
    assert.ok(progress.length >= 3, JSON.stringify(progress));
    assert.ok(progress.every((m) => m.params.progressToken === 'tok'), 'progress only for the call that asked');
    // Which path served each (a ready sandbox or the cold one: two calls at once on a loaded
    // machine may find one ready sandbox) is not the result; the measurements are not either.
    const pick = (r) => {
        const { duration_ms, cpu_user_us, cpu_system_us, memory_peak_bytes, queue_ms, warm, memory_at_start_bytes, ...rest } =
            r.result.structuredContent;
        return rest;
    };
    assert.deepEqual(pick(b), pick(a));
    assert.equal(b.result.structuredContent.stdout, TICKER_STDOUT);
    // Nothing of the output reaches the daemon's log (records hold sizes only).
    assert.ok(!d.stderrText.includes('out 3'), d.stderrText);
});

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const TP2 = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';

test('traceparent from _meta goes into the run\'s record; text in its place never does', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const canary = `canary${process.pid}x${Date.now()}`;
    const good = d.send('tools/call', { name: 'exec', arguments: { code: 'print(1)' }, _meta: { traceparent: TP } });
    const bad = d.send('tools/call', { name: 'exec', arguments: { code: 'print(2)' },
        _meta: { traceparent: `00-${canary}-x-01`, tracestate: canary, baggage: canary } });
    const zero = d.send('tools/call', { name: 'exec', arguments: { code: 'print(3)' },
        _meta: { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' } });
    for (const id of [good, bad, zero]) assert.equal((await d.response(id, 30000)).result.isError, false);
    const refused = d.send('tools/call', { name: 'exec', arguments: {}, _meta: { traceparent: TP2 } });
    assert.equal((await d.response(refused, 30000)).result.isError, true);
    await d.stop();
    const rejected = d.stderrText.split('\n').filter((l) => l.includes('MESSAGE_ID=017048d888fb4eca8b36e2339da3a750'));
    assert.equal(rejected.length, 1, d.stderrText);
    assert.ok(rejected[0].includes(` TRACEPARENT=${TP2}`), rejected[0]);
    const records = d.stderrText.split('\n').filter((l) => l.includes('MESSAGE_ID=0a6bda1f24cf4b5188307da770817b6b'));
    assert.equal(records.length, 3, d.stderrText);
    assert.equal(records.filter((l) => l.includes(` TRACEPARENT=${TP}`)).length, 1, records.join('\n'));
    assert.equal(records.filter((l) => l.includes('TRACEPARENT=')).length, 1, records.join('\n'));
    assert.ok(!d.stderrText.includes(canary), `caller text in the log: ${d.stderrText}`);
});

test('HTTP: the W3C traceparent header is taken when _meta has none; _meta wins over it', async (t) => {
    const d = await startHttpDaemon(t);
    const client = await connectSdk(t, d, 'http', { headers: { traceparent: TP2 } });
    await client.callTool({ name: 'exec', arguments: { code: 'print(1)' } });
    await client.callTool({ name: 'exec', arguments: { code: 'print(2)' }, _meta: { traceparent: TP } });
    const bad = await connectSdk(t, d, 'http', { headers: { traceparent: 'not-a-trace secret words' } });
    await bad.callTool({ name: 'exec', arguments: { code: 'print(3)' } });
    const records = () => d.stderr().split('\n').filter((l) => l.includes('MESSAGE_ID=0a6bda1f24cf4b5188307da770817b6b'));
    for (let i = 0; i < 50 && records().length < 3; i++) await new Promise((r) => setTimeout(r, 100));
    const rs = records();
    assert.equal(rs.length, 3, d.stderr());
    assert.ok(rs[0].includes(` TRACEPARENT=${TP2}`), rs[0]);
    assert.ok(rs[1].includes(` TRACEPARENT=${TP}`), rs[1]);
    assert.ok(!rs[2].includes('TRACEPARENT='), rs[2]);
    assert.ok(!d.stderr().includes('secret words'));
});
