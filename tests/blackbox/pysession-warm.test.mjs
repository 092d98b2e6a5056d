// The warm pool serves session_open (issue 18.7): with a ready sandbox the session is opened from it
// (`warm: true`), keeps its state, runs in a PID namespace of its own, sees the preload (never its
// output) and nothing of another call, is charged no CPU of the preload, keeps its state across a
// deadline's interrupt, and is destroyed with its close; the pool refills behind the open. Without
// a pool (MCP_EXEC_WARM_POOL=0) session_open takes the cold path (`warm: false`).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startDaemon, callExec, descendants, procStat, sleep, test } from './lib/index.mjs';
import { callTool } from './lib/files.mjs';
import { assertInterruptKeepsState } from './lib/pysession.mjs';

const T = { timeout: 90000 };
const errText = (r) => r.result.content?.[0]?.text ?? '';
const alive = (pid) => { const st = procStat(pid); return st !== null && st.state !== 'Z'; };
// The open record (one line on stderr: the daemon has no journal here) says how it was opened.
const OPENED = 'MESSAGE_ID=ea0c08d045c1493297cd897030e1fc14';
const openedWarm = (d) => d.stderr().split('\n').filter((l) => l.includes(OPENED)).map((l) => / WARM=(\S*)/.exec(l)?.[1]);
const comm = (pid) => { try { return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return null; } };

// check_environment's count of ready sandboxes, until it is n (ready sandboxes are made at a low
// CPU weight: slow on a loaded machine).
async function untilReady(client, n, ms = 30000) {
    const t0 = Date.now();
    for (;;) {
        const r = await callTool(client, 'check_environment', {});
        assert.equal(r.isError, false, errText(r));
        if (r.sc.sandbox.warm_ready === n) return;
        if (Date.now() - t0 > ms) assert.fail(`warm_ready is ${r.sc.sandbox.warm_ready}, not ${n}`);
        await sleep(200);
    }
}

async function open(client, args = {}) {
    const r = await callTool(client, 'session_open', args);
    assert.equal(r.isError, false, errText(r));
    assert.match(r.sc.session, /^[0-9a-f]{32}$/);
    return r;
}

const run = (client, session, code, extra = {}) => callTool(client, 'exec', { code, session, ...extra });

test('a ready sandbox serves session_open: warm true, state kept, its own PID namespace, the pool refills', T, async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '1' } });
    await untilReady(d.client, 1);
    // The ready sandbox's processes: the session's once it is opened, gone with its close.
    const ready = descendants(d.pid);
    assert.deepEqual(ready.map(comm).sort(), ['python3', 'sandbox-init'], JSON.stringify(ready.map(comm)));
    const o = await open(d.client);
    assert.equal(o.sc.warm, true);
    assert.ok(['rlimit', 'cgroup'].includes(o.sc.limits), o.sc.limits);
    assert.ok(o.sc.memory_at_start_bytes > 0, `memory_at_start_bytes ${o.sc.memory_at_start_bytes}`);
    const s = o.sc.session;
    let r = await run(d.client, s, "import os\nx = 41\nopen('/tmp/kept', 'w').write('hello')\n" +
                                   "print(os.readlink('/proc/self/ns/pid'), os.nice(0))");
    assert.equal(r.isError, false, errText(r));
    assert.equal(r.sc.exit_code, 0, r.sc.stderr);
    assert.equal(r.sc.stderr, '');
    assert.equal(r.sc.limits, o.sc.limits);
    const [ns, nice] = r.sc.stdout.trim().split(' ');
    assert.notEqual(ns, fs.readlinkSync(`/proc/${d.pid}/ns/pid`), "the session runs in the daemon's PID namespace");
    // The refill's lower CPU weight was given back when the session took the sandbox.
    assert.equal(nice, '0');
    assert.equal(r.sc.session_alive, true);
    r = await run(d.client, s, "x += 1\nprint(x, open('/tmp/kept').read(), __name__)");
    assert.equal(r.sc.stdout, '42 hello __main__\n', r.sc.stderr);
    assert.equal(r.sc.session_calls, 2);
    assert.deepEqual(openedWarm(d), ['1']);
    // The pool refills behind the open; a ready sandbox is not the session's.
    await untilReady(d.client, 1);
    r = await run(d.client, s, 'print(x)');
    assert.equal(r.sc.stdout, '42\n');
    // A run takes the new ready sandbox, and sees nothing of the session. The pool is full again
    // (waited for, not retried until a call happens to be warm): this one call must be warm.
    await untilReady(d.client, 1);
    const w = await callExec(d.client, { code: "import os\nprint(os.path.exists('/tmp/kept'), 'x' in globals())" });
    assert.equal(w.sc.warm, true, JSON.stringify(w.sc));
    assert.equal(w.sc.stdout, 'False False\n');
    // The taken sandbox is the session's alone: its close ends it.
    r = await callTool(d.client, 'session_close', { session: s });
    assert.equal(r.isError, false, errText(r));
    for (let i = 0; i < 100 && ready.some(alive); i++) await sleep(100);
    assert.deepEqual(ready.filter(alive).map((p) => [p, comm(p)]), [], 'the session\'s sandbox outlived its close');
});

test('MCP_EXEC_WARM_POOL=0: session_open is cold (warm false) and works', T, async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '0' } });
    const o = await open(d.client);
    assert.equal(o.sc.warm, false);
    assert.ok(o.sc.memory_at_start_bytes > 0, `memory_at_start_bytes ${o.sc.memory_at_start_bytes}`);
    await run(d.client, o.sc.session, 'y = 7');
    const r = await run(d.client, o.sc.session, 'print(y)');
    assert.equal(r.sc.stdout, '7\n', r.sc.stderr);
    assert.deepEqual(openedWarm(d), ['0']);
});

test("a session from the pool sees the preload, never the preload's output or another call's files", T, async (t) => {
    // `this` prints the Zen of Python when imported: the preload's output must reach no one.
    const d = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '1', MCP_EXEC_PRELOAD: 'json,this' } });
    // A call that leaves traces (served warm or cold, it does not matter here).
    let r = await callExec(d.client, { code: "open('/tmp/left-by-a-call', 'w').write('x')\nprint('call')" });
    assert.equal(r.sc.stdout, 'call\n');
    await untilReady(d.client, 1);
    const o = await open(d.client);
    assert.equal(o.sc.warm, true);
    r = await run(d.client, o.sc.session, "import os, sys\nprint(sorted(m for m in ('json', 'this') if m in sys.modules), " +
                                          "os.path.exists('/tmp/left-by-a-call'))");
    assert.equal(r.isError, false, errText(r));
    assert.equal(r.sc.stdout, "['json', 'this'] False\n");
    assert.equal(r.sc.stderr, '');
    assert.doesNotMatch(JSON.stringify(r.sc), /Beautiful is better than ugly/);
    // And not in a later call either (nothing was left in the pipes).
    r = await run(d.client, o.sc.session, 'print("second")');
    assert.equal(r.sc.stdout, 'second\n');
    assert.equal(r.sc.stderr, '');
});

test('a deadline interrupts a call of a session opened from the pool, and its state is kept', T, async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '1' } });
    await untilReady(d.client, 1);
    const o = await open(d.client);
    assert.equal(o.sc.warm, true);
    const s = o.sc.session;
    await assertInterruptKeepsState(d.client, s);
});

test("the preload's CPU is charged to no call: a warm session's first call with numpy preloaded costs less than importing it", T, async (t) => {
    const cold = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '0' } });
    const co = await open(cold.client);
    assert.equal(co.sc.warm, false);
    const c = await run(cold.client, co.sc.session, 'import numpy\nprint("numpy" in __import__("sys").modules)');
    assert.equal(c.sc.stdout, 'True\n', c.sc.stderr);
    const coldCpu = c.sc.cpu_user_us + c.sc.cpu_system_us;

    const d = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '1', MCP_EXEC_PRELOAD: 'numpy' } });
    await untilReady(d.client, 1);
    const o = await open(d.client);
    assert.equal(o.sc.warm, true);
    // numpy is resident before the first call.
    assert.ok(o.sc.memory_at_start_bytes > 10 * 1024 * 1024, `memory_at_start_bytes ${o.sc.memory_at_start_bytes}`);
    const w = await run(d.client, o.sc.session, 'import sys\nprint("numpy" in sys.modules)');
    assert.equal(w.sc.stdout, 'True\n', 'the preload is imported before the first call');
    const warmCpu = w.sc.cpu_user_us + w.sc.cpu_system_us;
    t.diagnostic(`cold session, import numpy: ${coldCpu} us CPU; warm session, numpy preloaded: ${warmCpu} us CPU`);
    assert.ok(warmCpu * 2 < coldCpu, `warm ${warmCpu} us is not well below cold ${coldCpu} us`);
});
