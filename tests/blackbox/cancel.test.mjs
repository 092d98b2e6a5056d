// notifications/cancelled (issue 2, points 4 and 9): kills a running call or drops a queued
// one; no response is sent for it; the daemon goes on serving.
import assert from 'node:assert/strict';
import {
    startDaemon, callExec, RawDaemon, uniqueMarker, findByMarker, reapMarker, waitMarkerGone, waitMarkerPresent,
    pySleeperExec, sleep, test } from './lib/index.mjs';

test('SDK abort after 300 ms: the run is gone within 1 s, no response comes, ping answers', async (t) => {
    const marker = uniqueMarker('cancel-sdk');
    reapMarker(t, marker);
    const d = await startDaemon(t);
    const ac = new AbortController();
    const call = callExec(d.client, { code: pySleeperExec(marker, 60), timeout_s: 60 }, { signal: ac.signal });
    assert.ok((await waitMarkerPresent(marker, 3000)).length > 0, 'the run never started');
    await sleep(300);
    ac.abort('test cancels');
    await assert.rejects(call, 'the aborted call did not reject');
    assert.deepEqual(await waitMarkerGone(marker, 1000), [], 'the run is still there 1 s after the cancellation');
    await d.client.ping();
    // and the daemon still runs code
    const r = await callExec(d.client, { code: 'print("after")' });
    assert.equal(r.sc.stdout, 'after\n');
    // A late response for the cancelled id would reach the SDK's onerror ("unknown message ID").
    // Stop the daemon and wait until its stdout is closed: everything it ever wrote has then been
    // read by the SDK, so a response however late would be in d.errors.
    const closed = new Promise((res) => d.transport._process.once('close', res));
    process.kill(d.pid, 'SIGTERM');
    await closed;
    assert.deepEqual(d.errors.map(String), [], 'the SDK saw something unexpected (a response to the cancelled call?)');
});

test('raw notifications/cancelled: the process gone within 1 s, ping answers, no line with that id ever', async (t) => {
    const marker = uniqueMarker('cancel-raw');
    reapMarker(t, marker);
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const id = d.callExec({ code: pySleeperExec(marker, 60), timeout_s: 60 }, { id: 'to-cancel' });
    assert.ok((await waitMarkerPresent(marker, 3000)).length > 0, 'the run never started');
    await sleep(300);
    d.notify('notifications/cancelled', { requestId: id, reason: 'test' });
    const t0 = performance.now();
    assert.deepEqual(await waitMarkerGone(marker, 1000), [], 'the run is still there 1 s after the cancellation');
    const gone = performance.now() - t0;
    const ping = await d.request('ping');
    assert.deepEqual(ping.result, {});
    // Not "none within a while": end the daemon (EOF answers whatever is still in flight) and wait
    // until its stdout is closed; then d.messages is everything it ever sent.
    d.endStdin();
    assert.equal((await d.waitClosed(10000)).code, 0);
    const late = d.messages.find((m) => m.id === id);
    assert.equal(late, undefined, `a response was sent for the cancelled call: ${JSON.stringify(late)}`);
    t.diagnostic(`run gone ${Math.round(gone)} ms after the cancellation`);
    assert.deepEqual(d.badLines, []);
});

test('cancelling a queued call drops it: it never runs and gets no response', async (t) => {
    const marker = uniqueMarker('cancel-queued');
    reapMarker(t, marker);
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_MAX_CONCURRENT: 1 } });
    await d.initialize();
    // b is read before its cancellation (one stream, in order) and waits behind a (one slot).
    const a = d.callExec({ code: 'import time; time.sleep(1); print("a")', timeout_s: 10 });
    const b = d.callExec({ code: pySleeperExec(marker, 60), timeout_s: 60 });
    d.notify('notifications/cancelled', { requestId: b, reason: 'test' });
    const ra = await d.response(a, 5000);
    assert.equal(ra.result?.structuredContent?.stdout, 'a\n', JSON.stringify(ra));
    // The slot is free: a new call runs at once. Had b not been dropped, it would have taken the
    // slot when a ended (it was queued first) and held it for 60 s: c would wait behind it.
    const c = await d.response(d.callExec({ code: 'print("c")' }), 3000);
    assert.equal(c.result?.structuredContent?.stdout, 'c\n', JSON.stringify(c));
    assert.ok(c.result.structuredContent.queue_ms < 500, `queue_ms ${c.result.structuredContent.queue_ms}`);
    assert.deepEqual(findByMarker(marker), [], 'the cancelled queued call is running');
    // The end, not a while: at EOF the daemon answers what is in flight or queued, then exits with
    // its stop record. Once its stdout is closed, nothing more can come: no answer for b, and the
    // daemon counted two runs (a and c), none queued.
    d.endStdin();
    assert.equal((await d.waitClosed(10000)).code, 0);
    const late = d.messages.find((m) => m.id === b);
    assert.equal(late, undefined, `a response was sent for the cancelled queued call: ${JSON.stringify(late)}`);
    assert.match(d.stderrText, /stopping \(end-of-input\): .* RUNS_RUNNING=0 RUNS_QUEUED=0 RUNS_TOTAL=2\b/,
        'the cancelled queued call ran anyway (or the stop record changed)');
});

test('cancelling a running call frees its slot for the queued one', async (t) => {
    const marker = uniqueMarker('cancel-slot');
    reapMarker(t, marker);
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_MAX_CONCURRENT: 1 } });
    await d.initialize();
    const a = d.callExec({ code: pySleeperExec(marker, 60), timeout_s: 60 });
    const b = d.callExec({ code: 'print("b")', timeout_s: 10 });
    assert.ok((await waitMarkerPresent(marker, 3000)).length > 0, 'the run never started');
    d.notify('notifications/cancelled', { requestId: a });
    const rb = await d.response(b, 2000);
    assert.equal(rb.result?.structuredContent?.stdout, 'b\n', JSON.stringify(rb));
    // Once the daemon has exited and its stdout is closed, nothing more can come.
    d.endStdin();
    assert.equal((await d.waitClosed(10000)).code, 0);
    assert.equal(d.messages.find((m) => m.id === a), undefined, 'a response was sent for the cancelled call');
});

test('cancellations of unknown or finished ids are ignored', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const done = await d.response(d.callExec({ code: 'print(1)' }), 5000);
    assert.ok(done.result);
    d.notify('notifications/cancelled', { requestId: done.id });
    d.notify('notifications/cancelled', { requestId: 'never-sent' });
    d.notify('notifications/cancelled', {});
    const ping = await d.request('ping');
    assert.deepEqual(ping.result, {});
    // nothing but the ping's answer followed, up to the daemon's exit (then nothing more can come)
    d.endStdin();
    assert.equal((await d.waitClosed(10000)).code, 0);
    const after = d.messages.slice(d.messages.indexOf(done) + 1);
    assert.deepEqual(after.map((m) => m.id), [ping.id], JSON.stringify(after));
});
