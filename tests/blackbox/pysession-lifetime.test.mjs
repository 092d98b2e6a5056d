// A Python session's lifetime (docs/sessions.md, Bounds; MCP_EXEC_PY_SESSION_LIFETIME_S:
// "a Python session ends this long after its open, busy or not"): a session that is never idle
// and one whose call is still running both end at the lifetime, its handle then gets the one
// "unknown session" error, the call in flight is answered with what it printed and
// session_alive: false, the end record says REASON=lifetime, and no process is left.
// The idle bound is far away (600 s) so that only the lifetime can end them.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startDaemon, descendants, procStat, sleep, test } from './lib/index.mjs';
import { callTool } from './lib/files.mjs';

const LIFETIME_S = 3;
// Sessions are not served by the pool here: no ready sandbox blurs the process count.
const ENV = { MCP_EXEC_WARM_POOL: '0', MCP_EXEC_PY_SESSION_LIFETIME_S: String(LIFETIME_S), MCP_EXEC_PY_SESSION_IDLE_S: '600' };
const UNKNOWN = /^unknown session: the handle is not an open Python session/;
const CLOSED = 'MESSAGE_ID=04160dcdd87a4943ac1d71636d6bb5d1';
// The sweep that ends sessions runs every second; the kill and the answer take a little more.
const SLACK_MS = 2500;

const errText = (r) => r.result.content?.[0]?.text ?? '';
const alive = (pid) => { const st = procStat(pid); return st !== null && st.state !== 'Z'; };
const field = (line, key) => new RegExp(` ${key}=("(?:[^"\\\\]|\\\\.)*"|\\S*)`).exec(line)?.[1]?.replace(/^"|"$/g, '');
const run = (client, session, code, extra = {}) => callTool(client, 'exec', { code, session, ...extra });

async function open(client) {
    // The lifetime counts from the open's start (its sandbox is made within it): time from the request.
    const at = performance.now();
    const r = await callTool(client, 'session_open', {});
    assert.equal(r.isError, false, errText(r));
    // Asked at once, it has (almost) the whole lifetime left; the idle bound is the server's.
    assert.ok(r.sc.expires_in_s <= LIFETIME_S && r.sc.expires_in_s >= LIFETIME_S - 1, JSON.stringify(r.sc));
    assert.equal(r.sc.idle_timeout_s, 600);
    return { session: r.sc.session, at };
}

async function untilNoSandbox(pid, ms = 10000) {
    for (const t0 = Date.now(); ; await sleep(100)) {
        const left = descendants(pid).filter(alive);
        if (left.length === 0) return;
        if (Date.now() - t0 > ms) assert.fail(`left behind: ${left.join(', ')}`);
    }
}

async function untilRecord(d, ms = 5000) {
    for (const t0 = Date.now(); Date.now() - t0 < ms; await sleep(100)) {
        const l = d.stderr().split('\n').filter((x) => x.includes(CLOSED));
        if (l.length) return l;
    }
    return [];
}

test('a session whose call is still running ends at its lifetime: the call is answered, session_alive false', async (t) => {
    const d = await startDaemon(t, { env: ENV });
    const s = await open(d.client);
    const r = await run(d.client, s.session,
        'import sys, time\nprint("started", flush=True)\ntime.sleep(60)\nprint("not reached")', { timeout_s: 30 });
    const ms = performance.now() - s.at;
    assert.equal(r.isError, false, errText(r));
    assert.equal(r.sc.session_alive, false, JSON.stringify(r.sc));
    assert.equal(r.sc.timed_out, false, 'the call\'s own deadline (30 s) ended it, not the lifetime');
    assert.equal(r.sc.stdout, 'started\n');
    assert.ok(ms >= LIFETIME_S * 1000 - 100 && ms < LIFETIME_S * 1000 + SLACK_MS,
        `answered ${Math.round(ms)} ms after the open, lifetime ${LIFETIME_S} s`);
    assert.match(errText(await run(d.client, s.session, 'print(1)')), UNKNOWN);
    const rec = await untilRecord(d);
    assert.equal(rec.length, 1, d.stderr());
    assert.equal(field(rec[0], 'REASON'), 'lifetime', rec[0]);
    await untilNoSandbox(d.pid);
});

test('a session used every 200 ms (never idle) still ends at its lifetime, state and all', async (t) => {
    const d = await startDaemon(t, { env: ENV });
    const s = await open(d.client);
    let r = await run(d.client, s.session, 'n = 0');
    assert.equal(r.isError, false, errText(r));
    let calls = 0;
    let ended = null;
    let inFlight = null;
    while (performance.now() - s.at < LIFETIME_S * 1000 + SLACK_MS + 2000) {
        r = await run(d.client, s.session, 'n += 1\nprint(n)');
        if (r.isError) { ended = { ms: performance.now() - s.at, text: errText(r) }; break; }
        if (r.sc.session_alive === false) {
            // The lifetime came during this call: it is answered with what it printed, as killed,
            // and the handle is unknown from then on.
            inFlight = { ms: performance.now() - s.at, sc: r.sc };
            assert.equal(r.sc.exit_code, -9, JSON.stringify(r.sc));
            assert.ok(r.sc.stdout === '' || r.sc.stdout === `${calls + 1}\n`, JSON.stringify(r.sc));
            r = await run(d.client, s.session, 'print(n)');
            assert.equal(r.isError, true, JSON.stringify(r.sc));
            ended = { ms: inFlight.ms, text: errText(r) };
            break;
        }
        assert.equal(r.sc.stdout, `${++calls}\n`, 'the session lost its state before its end');
        await sleep(200);
    }
    assert.ok(ended, `the session was still open ${LIFETIME_S * 1000 + SLACK_MS + 2000} ms after its open (${calls} calls)`);
    assert.match(ended.text, UNKNOWN);
    assert.ok(ended.ms >= LIFETIME_S * 1000 - 100 && ended.ms < LIFETIME_S * 1000 + SLACK_MS,
        `ended ${Math.round(ended.ms)} ms after the open, lifetime ${LIFETIME_S} s`);
    assert.ok(calls >= 3, `only ${calls} calls before the end`);
    const rec = await untilRecord(d);
    assert.equal(rec.length, 1, d.stderr());
    assert.equal(field(rec[0], 'REASON'), 'lifetime', rec[0]);
    assert.equal(Number(field(rec[0], 'CALLS')), calls + 1 + (inFlight ? 1 : 0), rec[0]);
    await untilNoSandbox(d.pid);
});
