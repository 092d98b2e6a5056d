// Python sessions for operators (issue 18.7): a record when a session opens and when it ends (with
// why: closed, idle expiry, timeout, a crash, the interpreter's exit, the daemon's stop), each call's
// run record naming the session by the same id (derived from the handle as an operator does it:
// `systemd-id128 machine-id --app-specific=<the handle's hex>`, its first 16 hex digits), the
// handle itself never written (records here are lines on stderr: the daemon has no journal), and
// the /metrics gauges of open sessions and their memory.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { RawDaemon, startDaemon, sleep, test } from './lib/index.mjs';
import { startHttpDaemon, connectSdk, rawRequest } from './lib/http-daemon.mjs';
import { callTool } from './lib/files.mjs';

const T = { timeout: 120000 };
const ENV = { MCP_EXEC_WARM_POOL: '0' };
const OPENED = 'MESSAGE_ID=ea0c08d045c1493297cd897030e1fc14';
const CLOSED = 'MESSAGE_ID=04160dcdd87a4943ac1d71636d6bb5d1';
const RUN = 'MESSAGE_ID=0a6bda1f24cf4b5188307da770817b6b';

const errText = (r) => r.result.content?.[0]?.text ?? '';
const idOf = (handle) => execFileSync('systemd-id128', ['machine-id', `--app-specific=${handle.split('-').pop()}`],
    { encoding: 'utf8' }).trim().slice(0, 16);
const lines = (text, id) => text.split('\n').filter((l) => l.includes(id));
const field = (line, key) => new RegExp(` ${key}=("(?:[^"\\\\]|\\\\.)*"|\\S*)`).exec(line)?.[1]?.replace(/^"|"$/g, '');

async function open(client, args = {}) {
    const r = await callTool(client, 'session_open', args);
    assert.equal(r.isError, false, errText(r));
    return r.sc.session;
}

const run = (client, session, code, extra = {}) => callTool(client, 'exec', { code, session, ...extra });

async function until(fn, ms = 10000) {
    for (const t0 = Date.now(); Date.now() - t0 < ms; await sleep(100)) if (fn()) return true;
    return fn();
}

test('records: open, each call, and the end with its reason; the handle never appears, not even at debug', T, async (t) => {
    // MCP_EXECD_DEBUG: the daemon's debug lines about sessions must not carry the handle either.
    const d = await startDaemon(t, { env: { ...ENV, MCP_EXECD_DEBUG: '1' } });
    const handles = {};
    const closedOf = (h) => lines(d.stderr(), CLOSED).filter((l) => field(l, 'PY_SESSION_ID') === idOf(h));

    handles.closed = await open(d.client);
    for (const code of ['x = 1', 'print(x + 1)']) {
        const r = await run(d.client, handles.closed, code);
        assert.equal(r.sc.exit_code, 0, r.sc.stderr);
    }
    assert.equal((await callTool(d.client, 'session_close', { session: handles.closed })).isError, false);

    handles.idle = await open(d.client, { idle_timeout_s: 1 });

    handles.exited = await open(d.client);
    let r = await run(d.client, handles.exited, 'import os\nos._exit(3)');
    assert.equal(r.sc.session_alive, false);

    handles.crash = await open(d.client);
    r = await run(d.client, handles.crash, 'import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)');
    assert.equal(r.sc.session_alive, false);

    handles.timeout = await open(d.client);
    r = await run(d.client, handles.timeout,
        'import time\nwhile True:\n    try:\n        time.sleep(60)\n    except KeyboardInterrupt:\n        pass',
        { timeout_s: 1 });
    assert.equal(r.sc.session_alive, false);

    handles.stop = await open(d.client);
    assert.ok(await until(() => closedOf(handles.idle).length === 1), d.stderr());
    await d.close();
    await d.exited;
    const text = d.stderr();

    for (const [why, h] of Object.entries(handles)) {
        assert.match(h, /^[0-9a-f]{32}$/);
        assert.ok(!text.includes(h), `the handle of session '${why}' is in the daemon's stderr`);
        // Not cut up either: no 12 hex digits of it in a row appear anywhere.
        for (let i = 0; i + 12 <= h.length; i++)
            assert.ok(!text.includes(h.slice(i, i + 12)), `${h.slice(i, i + 12)} of '${why}' in stderr`);
        const id = idOf(h);
        const opened = lines(text, OPENED).filter((l) => field(l, 'PY_SESSION_ID') === id);
        assert.equal(opened.length, 1, `one open record for '${why}':\n${text}`);
        assert.match(opened[0], /^<6>mcp-execd: python session [0-9a-f]{16} opened: /);
        assert.match(field(opened[0], 'RUN_ID'), /^[0-9a-f]{16}$/);
        assert.equal(field(opened[0], 'LIMITS'), 'rlimit');
        assert.equal(field(opened[0], 'TRANSPORT'), 'stdio');
        assert.match(field(opened[0], 'OPEN_MS'), /^\d+$/);
        const closed = closedOf(h);
        assert.equal(closed.length, 1, `one close record for '${why}':\n${text}`);
        assert.equal(field(closed[0], 'RUN_ID'), field(opened[0], 'RUN_ID'));
    }
    const reason = (h) => field(closedOf(h)[0], 'REASON');
    assert.equal(reason(handles.closed), 'closed');
    assert.equal(field(closedOf(handles.closed)[0], 'CALLS'), '2');
    assert.equal(reason(handles.idle), 'idle-expiry');
    assert.equal(field(lines(text, OPENED).find((l) => l.includes(idOf(handles.idle))), 'IDLE_TIMEOUT_S'), '1');
    assert.equal(reason(handles.exited), 'exited');
    assert.equal(reason(handles.crash), 'crash');
    assert.match(closedOf(handles.crash)[0], /^<5>/, 'a crash is a notice');
    assert.equal(reason(handles.timeout), 'timeout');
    assert.equal(reason(handles.stop), 'daemon-stop');

    // Each call has a run record carrying its session's id and its number in the session.
    const calls = lines(text, RUN).filter((l) => field(l, 'PY_SESSION_ID') === idOf(handles.closed));
    assert.deepEqual(calls.map((l) => field(l, 'PY_SESSION_CALL')), ['1', '2'], text);
    assert.deepEqual(calls.map((l) => field(l, 'OUTCOME')), ['ok', 'ok']);
    assert.equal(field(calls[0], 'CODE_BYTES'), '5');
    const exited = lines(text, RUN).filter((l) => field(l, 'PY_SESSION_ID') === idOf(handles.exited));
    assert.equal(exited.length, 1, text);
    assert.equal(field(exited[0], 'EXIT_CODE'), '3');
    const timedOut = lines(text, RUN).filter((l) => field(l, 'PY_SESSION_ID') === idOf(handles.timeout));
    assert.equal(field(timedOut[0], 'OUTCOME'), 'timeout');
    // A stateless run's record has no session fields.
    assert.ok(lines(text, RUN).every((l) => l.includes(' PY_SESSION_ID=')), 'only session calls ran here');
    // Never the code: the first call's text is not in the log.
    assert.ok(!text.includes('print(x + 1)'));
});

test('traceparent: session_open\'s is in the open and close records, a call\'s in its run record', T, async (t) => {
    const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const TP2 = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';
    const d = RawDaemon.spawn(t, { env: ENV });
    await d.initialize();
    const call = async (name, args, tp) =>
        (await d.response(d.send('tools/call', { name, arguments: args, _meta: { traceparent: tp } }), 60000)).result;
    const h = (await call('session_open', {}, TP)).structuredContent.session;
    assert.equal((await call('exec', { code: 'print(1)', session: h }, TP2)).structuredContent.exit_code, 0);
    assert.equal((await call('session_close', { session: h })).isError, false);
    await d.stop();
    const text = d.stderrText;
    assert.ok(!text.includes(h), 'the handle is in the daemon\'s stderr');
    const [opened] = lines(text, OPENED);
    const [closed] = lines(text, CLOSED);
    const [ran] = lines(text, RUN);
    for (const l of [opened, closed, ran]) assert.equal(field(l, 'PY_SESSION_ID'), idOf(h), text);
    assert.equal(field(opened, 'TRACEPARENT'), TP);
    assert.equal(field(closed, 'TRACEPARENT'), TP);
    assert.equal(field(ran, 'TRACEPARENT'), TP2);
});

test('check_environment: the sessions\' bounds, and sandbox.python_sessions_open counts the open ones', T, async (t) => {
    const d = await startDaemon(t, { env: { ...ENV, MCP_EXEC_PY_SESSIONS_MAX: '5', MCP_EXEC_PY_SESSION_IDLE_S: '120',
                                            MCP_EXEC_PY_SESSION_LIFETIME_S: '600' } });
    const env = async () => (await callTool(d.client, 'check_environment', {})).sc;
    let sc = await env();
    assert.deepEqual(sc.python_sessions, { max: 5, idle_s: 120, lifetime_s: 600 });
    assert.equal(sc.sandbox.python_sessions_open, 0);
    const a = await open(d.client);
    await open(d.client);
    assert.equal((await env()).sandbox.python_sessions_open, 2);
    assert.equal((await callTool(d.client, 'session_close', { session: a })).isError, false);
    assert.equal((await env()).sandbox.python_sessions_open, 1);
});

test('HTTP /metrics: mcp_execd_py_sessions_open and mcp_execd_py_sessions_memory_bytes follow the sessions', T, async (t) => {
    const d = await startHttpDaemon(t, { env: ENV });
    const c = await connectSdk(t, d, 'http');
    const gauges = async () => {
        const m = await rawRequest(d, { path: '/metrics' });
        assert.equal(m.status, 200);
        for (const name of ['mcp_execd_py_sessions_open', 'mcp_execd_py_sessions_memory_bytes']) {
            assert.match(m.body, new RegExp(`^# HELP ${name} \\S`, 'm'));
            assert.match(m.body, new RegExp(`^# TYPE ${name} gauge$`, 'm'));
        }
        const get = (name) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(m.body)?.[1]);
        return { open: get('mcp_execd_py_sessions_open'), memory: get('mcp_execd_py_sessions_memory_bytes') };
    };
    assert.deepEqual(await gauges(), { open: 0, memory: 0 });
    const a = await open(c);
    const b = await open(c);
    assert.equal((await run(c, a, 'data = bytearray(64 << 20)')).sc.exit_code, 0);
    let g = await gauges();
    assert.equal(g.open, 2);
    // With cgroups (the systemd and VM tiers) the 64 MiB show; in rlimit mode there is no cgroup to read.
    if ((process.env.BLACKBOX_CGROUP ?? 'none') === 'none') assert.equal(g.memory, 0);
    else assert.ok(g.memory >= 64 << 20, `memory ${g.memory}`);
    assert.equal((await callTool(c, 'session_close', { session: a })).isError, false);
    g = await gauges();
    assert.equal(g.open, 1);
    assert.equal((await callTool(c, 'session_close', { session: b })).isError, false);
    assert.deepEqual(await gauges(), { open: 0, memory: 0 });
    assert.ok(!d.stderr().includes(a) && !d.stderr().includes(b), 'a handle in the daemon\'s stderr');
    assert.equal(lines(d.stderr(), OPENED).length, 2, d.stderr());
    assert.equal(lines(d.stderr(), CLOSED).length, 2, d.stderr());
});
