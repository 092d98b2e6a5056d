// A busy Python session counts as a running call (issue 18.5): a session's call takes one of the
// MCP_EXEC_MAX_CONCURRENT slots while it runs, waits in the run queue (MCP_EXEC_QUEUE_MAX) like a
// run when none is free, and is refused with the queue's error when that is full; an idle session
// holds no slot. Session calls reach the daemon's queue in the order they came; a run may be taken
// before a session call sent just ahead of it (session calls are looked at on the loop's next
// turn), so where a run and a session call race, the test asserts what holds either way.
import assert from 'node:assert/strict';
import { RawDaemon, test } from './lib/index.mjs';

const T = { timeout: 120000 };
const sc = (res) => res.result?.structuredContent;
const errText = (res) => res.result?.content?.[0]?.text ?? JSON.stringify(res);

async function openRaw(d) {
    const res = await d.request('tools/call', { name: 'session_open', arguments: {} }, { timeoutMs: 60000 });
    assert.equal(res.result?.isError, false, errText(res));
    return sc(res).session;
}

const sessionCall = (d, session, code, extra = {}) =>
    d.send('tools/call', { name: 'exec', arguments: { code, session, timeout_s: 30, ...extra } });

async function daemon(t, env) {
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_WARM_POOL: '0', ...env } });
    await d.initialize();
    return d;
}

test('MCP_EXEC_MAX_CONCURRENT=1, QUEUE_MAX=0: a busy session and a run share the one slot (one of them is refused)', T, async (t) => {
    const d = await daemon(t, { MCP_EXEC_MAX_CONCURRENT: 1, MCP_EXEC_QUEUE_MAX: 0 });
    const s = await openRaw(d);
    // An idle session holds no slot: a run goes through.
    let res = await d.response(d.callExec({ code: 'print("alone")' }), 30000);
    assert.equal(sc(res)?.stdout, 'alone\n', errText(res));

    const a = sessionCall(d, s, 'import time\ntime.sleep(2)\nprint("session")');
    const b = d.callExec({ code: 'import time\ntime.sleep(2)\nprint("run")', timeout_s: 30 });
    const [ra, rb] = [await d.response(a, 60000), await d.response(b, 60000)];
    const refused = [ra, rb].filter((r) => r.result?.isError);
    assert.equal(refused.length, 1, `both ran at once with one slot: ${JSON.stringify([sc(ra), sc(rb)])}`);
    assert.match(errText(refused[0]), /queue is full.*MCP_EXEC_MAX_CONCURRENT=1.*MCP_EXEC_QUEUE_MAX=0/s);
    const ok = ra.result.isError ? rb : ra;
    assert.match(sc(ok).stdout, /^(session|run)\n$/);

    // Free again: the session's next call runs (its slot went back), and so does a run.
    res = await d.response(sessionCall(d, s, 'print("again")'), 30000);
    assert.equal(sc(res)?.stdout, 'again\n', errText(res));
    assert.equal(sc(res).session_alive, true);
    res = await d.response(d.callExec({ code: 'print("after")' }), 30000);
    assert.equal(sc(res)?.stdout, 'after\n', errText(res));
});

test('MCP_EXEC_MAX_CONCURRENT=1: a second session\'s call waits for the first (queue_ms) and its deadline starts when it runs', T, async (t) => {
    const d = await daemon(t, { MCP_EXEC_MAX_CONCURRENT: 1, MCP_EXEC_QUEUE_MAX: 4 });
    const [s1, s2] = [await openRaw(d), await openRaw(d)];
    // s1's call comes first and holds the slot for 2 s; s2's has a 1 s deadline, which must not run
    // while it waits: it ends normally.
    const a = sessionCall(d, s1, 'import time\ntime.sleep(2)\nprint("first")');
    const b = sessionCall(d, s2, 'print("second")', { timeout_s: 1 });
    const ra = await d.response(a, 60000);
    const rb = await d.response(b, 60000);
    assert.equal(sc(ra)?.stdout, 'first\n', errText(ra));
    assert.equal(sc(rb)?.stdout, 'second\n', errText(rb));
    assert.equal(sc(rb).timed_out, false, 'the waiting call\'s deadline ran while it waited');
    assert.ok(sc(rb).queue_ms >= 1000, `the waiting call reports queue_ms ${sc(rb).queue_ms}`);
    assert.ok(sc(ra).queue_ms < sc(rb).queue_ms, `queue_ms ${sc(ra).queue_ms} / ${sc(rb).queue_ms}`);
    assert.equal(sc(rb).session_calls, 1);
});

test('a session call waiting for a slot, cancelled, never runs: its session stays as it was and takes the next call', T, async (t) => {
    const d = await daemon(t, { MCP_EXEC_MAX_CONCURRENT: 1, MCP_EXEC_QUEUE_MAX: 4 });
    const [s1, s2] = [await openRaw(d), await openRaw(d)];
    let res = await d.response(sessionCall(d, s2, 'x = 1'), 30000);
    assert.equal(sc(res)?.exit_code, 0, errText(res));

    const a = sessionCall(d, s1, 'import time\ntime.sleep(3)\nprint("held")');
    const b = sessionCall(d, s2, 'x = 2\nprint("ran")');
    // Cancelled while s1's call holds the slot: no answer, and the code never runs.
    d.notify('notifications/cancelled', { requestId: b, reason: 'test' });
    const ra = await d.response(a, 60000);
    assert.equal(sc(ra)?.stdout, 'held\n', errText(ra));

    res = await d.response(sessionCall(d, s2, 'print(x)'), 30000);
    assert.equal(sc(res)?.stdout, '1\n', `the cancelled call ran: ${errText(res)}`);
    assert.equal(sc(res).session_calls, 2, 'the cancelled call was counted as one of the session\'s calls');
    // No answer for the cancelled call, ever: checked once the daemon has exited (EOF) and its
    // stdout is closed, when nothing more can come, rather than over a window.
    d.endStdin();
    assert.equal((await d.waitClosed(30000)).code, 0, d.stderrText.slice(-1500));
    assert.equal(d.messages.find((m) => m.id === b), undefined, 'the cancelled call was answered');
});

test('a session closed while its call waits for a slot: the call is answered at once, as not run', T, async (t) => {
    const d = await daemon(t, { MCP_EXEC_MAX_CONCURRENT: 1, MCP_EXEC_QUEUE_MAX: 4 });
    const [s1, s2] = [await openRaw(d), await openRaw(d)];
    const a = sessionCall(d, s1, 'import time\ntime.sleep(3)\nprint("held")');
    const b = sessionCall(d, s2, 'print("never")');
    const c = d.send('tools/call', { name: 'session_close', arguments: { session: s2 } });
    const rc = await d.response(c, 30000);
    assert.equal(rc.result?.isError, false, errText(rc));
    const rb = await d.response(b, 30000);
    assert.equal(sc(rb)?.session_alive, false, errText(rb));
    assert.equal(sc(rb).stdout, '');
    assert.equal(sc(rb).duration_ms, 0);
    const ra = await d.response(a, 60000);
    assert.equal(sc(ra)?.stdout, 'held\n', errText(ra));
});
