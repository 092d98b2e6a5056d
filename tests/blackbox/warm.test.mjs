// Ready sandboxes (issue 16): the pooled path serves calls (`warm: true`), each ready sandbox serves
// exactly one call, address-space randomisation differs between calls, nothing of an earlier call is
// visible, the preload's CPU is not charged to the call, calls with dependencies or another
// interpreter take the cold path, and a preload module that does not import refuses the start.
// Behaviour only: no timed assertion (bench/rtt.py measures the speed).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startDaemon, callExec, assertResultShape, runOnce, RawDaemon, descendants, procStat, test, waitPoolFull } from './lib/index.mjs';
import { startHttpDaemon, rawRequest, connectSdk } from './lib/http-daemon.mjs';
import { callTool, makeSources, pep723, tempDir } from './lib/pydeps.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const comm = (pid) => { try { return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return null; } };
// Alive: in /proc and not a zombie (a zombie holds no namespace, memory or file).
const alive = (pid) => { const st = procStat(pid); return st !== null && st.state !== 'Z'; };

// The pool is filled once the daemon's loop runs and again after each answer: a call made right
// away may find none ready and take the cold path, and ready sandboxes are made at a low CPU weight
// (slow on a loaded machine). So wait until check_environment says the pool is full, then make the
// call once: it must be served warm, and a cold answer fails (it is never retried away).
async function callWarm(client, args) {
    await waitPoolFull(client);
    const r = await callExec(client, args);
    assertResultShape(r);
    assert.equal(r.sc.warm, true, `the pool was full, yet the call was served cold: ${JSON.stringify(r.sc)}`);
    return r;
}

// What a call can see of its sandbox's identity and of its neighbours.
const PROBE = `
import os, sys
pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
libc = stack = ''
with open('/proc/self/maps') as f:
    for line in f:
        if not libc and ('libc.so' in line or 'libc-' in line):
            libc = line.split('-')[0]
        if '[stack]' in line:
            stack = line.split('-')[0]
seen = sorted(os.listdir('/tmp'))
try:
    with open('/tmp/left-by-a-call') as f:
        left = f.read()
except OSError:
    left = None
print(repr(dict(obj=id(object()), stack=stack, libc=libc, pidns=os.readlink('/proc/self/ns/pid'),
                pids=pids, me=os.getpid(), tmp=seen, left=left, env=os.environ.get('LEFT_BY_A_CALL'),
                mods=sorted(m for m in ('numpy', 'json', 'resource') if m in sys.modules))))
with open('/tmp/left-by-a-call', 'w') as f:
    f.write('secret')
os.environ['LEFT_BY_A_CALL'] = '1'
`;

function probe(r) {
    assert.equal(r.sc.exit_code, 0, r.sc.stderr);
    // Python's repr of a dict of str/int/list/None: JSON after three substitutions.
    return JSON.parse(r.sc.stdout.trim().replace(/'/g, '"').replace(/None/g, 'null'));
}

test('the pooled path serves calls: warm true, the same result contract, memory_at_start_bytes within the peak', async (t) => {
    const d = await startDaemon(t, { listTools: true });
    const r = await callWarm(d.client, {
        code: 'import os, sys\nprint(1, sys.argv, __name__, __file__)\n' +
              'ag = open("/proc/self/autogroup").read().split()[-1] if os.path.exists("/proc/self/autogroup") else "0"\n' +
              'print("nice", os.nice(0), ag)',
        stdin: 'x',
    });
    // The refill's lower CPU weight (nice, autogroup) is given back before the call runs.
    assert.equal(r.sc.stdout, "1 ['main.py'] __main__ /tmp/main.py\nnice 0 0\n");
    assert.equal(r.sc.stderr, '');
    assert.equal(r.sc.warm, true);
    assert.equal(r.sc.limits, 'rlimit');
    assert.ok(r.sc.memory_at_start_bytes > 0, `memory_at_start_bytes ${r.sc.memory_at_start_bytes}`);
    assert.ok(r.sc.memory_at_start_bytes <= r.sc.memory_peak_bytes,
        `memory_at_start_bytes ${r.sc.memory_at_start_bytes} > memory_peak_bytes ${r.sc.memory_peak_bytes}`);
    assert.deepEqual(d.errors, [], `SDK errors: ${d.errors.map(String)}`);
});

test('a warm call gets its stdin, its files, a traceback without the launcher, outputs/ and its exit status', async (t) => {
    const d = await startDaemon(t);
    const r = await callWarm(d.client, {
        code: 'import sys, os\nprint(sys.stdin.read().upper())\nprint(open("data/in.txt").read())\n' +
              'open("outputs/o.txt", "w").write("out")\nprint(sorted(x for x in os.listdir(".") if x[0] != "."))\n',
        stdin: 'hello\nwörld',
        files: [{ name: 'data/in.txt', content: 'file content' }],
    });
    assert.equal(r.sc.stdout, "HELLO\nWÖRLD\nfile content\n['data', 'main.py', 'outputs']\n");
    assert.deepEqual(r.sc.files.map((f) => f.name), ['outputs/o.txt']);

    const e = await callWarm(d.client, { code: 'def f():\n    return 1 / 0\nf()' });
    assert.equal(e.sc.exit_code, 1);
    assert.match(e.sc.stderr, /^Traceback \(most recent call last\):\n  File "\/tmp\/main.py", line 3, in <module>\n/);
    assert.doesNotMatch(e.sc.stderr, /mcp-execd-launch/);
    assert.match(e.sc.stderr, /ZeroDivisionError/);

    const x = await callWarm(d.client, { code: 'raise SystemExit(7)' });
    assert.equal(x.sc.exit_code, 7);

    const big = 'abcdefghijklmnop'.repeat(32 * 1024);
    const b = await callWarm(d.client, { code: 'import sys; print(len(sys.stdin.buffer.read()))', stdin: big });
    assert.equal(b.sc.stdout, `${big.length}\n`);
});

test('each ready sandbox serves one call: nothing of an earlier call is visible, ASLR differs', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_CONCURRENT: '2', MCP_EXEC_WARM_POOL: '2' } });
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(probe(await callWarm(d.client, { code: PROBE })));
    for (const p of seen) {
        assert.equal(p.left, null, 'a file of an earlier call is visible');
        assert.equal(p.env, null, 'an environment variable of an earlier call is visible');
        // PID 1 (the init program) and this Python: no process of an earlier call.
        assert.deepEqual(p.pids, [1, p.me], `processes: ${JSON.stringify(p.pids)}`);
        assert.ok(!p.tmp.includes('left-by-a-call'), JSON.stringify(p.tmp));
        assert.ok(!p.tmp.includes('.mcp-execd-launch.py'), JSON.stringify(p.tmp));
    }
    // A PID namespace of its own (PID 1 is the sandbox's init, and no process of an earlier call
    // is in it: above), never the daemon's. Not compared between calls: the kernel gives a freed
    // namespace's inode number to the next one made (lowest free first), so a later sandbox may
    // show an earlier one's number once that one is gone (seen in a CI run).
    const daemonNs = fs.readlinkSync(`/proc/${d.pid}/ns/pid`);
    for (const p of seen) assert.notEqual(p.pidns, daemonNs, 'the call runs in the daemon\'s PID namespace');
    // A fresh interpreter with its own layout for each call.
    assert.equal(new Set(seen.map((p) => p.obj)).size, seen.length, `id(object()): ${seen.map((p) => p.obj)}`);
    // (python3 itself may be a non-PIE executable at a fixed address: its stack and libc move.)
    assert.equal(new Set(seen.map((p) => p.stack)).size, seen.length, `stack: ${seen.map((p) => p.stack)}`);
    assert.ok(seen[0].libc, 'no libc mapping found');
    assert.equal(new Set(seen.map((p) => p.libc)).size, seen.length, `libc: ${seen.map((p) => p.libc)}`);
});

test('a background process left by a warm call is gone before the next call; a warm call is killed at its deadline', async (t) => {
    const d = await startDaemon(t);
    const a = await callWarm(d.client, {
        code: 'import subprocess\nsubprocess.Popen(["sleep", "60"], start_new_session=True)\nprint("left")',
    });
    assert.equal(a.sc.stdout, 'left\n');
    const b = probe(await callWarm(d.client, { code: PROBE }));
    assert.deepEqual(b.pids, [1, b.me]);
    const to = await callWarm(d.client, { code: 'import time\nwhile True: time.sleep(0.05)', timeout_s: 1 });
    assert.equal(to.sc.timed_out, true);
    assert.equal(to.sc.exit_code, -1);
    assert.ok(to.sc.duration_ms >= 900 && to.sc.duration_ms < 5000, `duration_ms ${to.sc.duration_ms}`);
});

test('accounting excludes the preload: a warm call with numpy preloaded is charged less CPU than importing it', async (t) => {
    const cold = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '0' } });
    const c = await callExec(cold.client, { code: 'import numpy\nprint("numpy" in __import__("sys").modules)' });
    assertResultShape(c);
    assert.equal(c.sc.warm, false);
    assert.equal(c.sc.memory_at_start_bytes, 0);
    assert.equal(c.sc.stdout, 'True\n');
    const coldCpu = c.sc.cpu_user_us + c.sc.cpu_system_us;

    const d = await startDaemon(t, { env: { MCP_EXEC_PRELOAD: 'numpy' } });
    const w = await callWarm(d.client, { code: 'import sys\nprint("numpy" in sys.modules)' });
    assert.equal(w.sc.stdout, 'True\n', 'the preload is imported before the call');
    const warmCpu = w.sc.cpu_user_us + w.sc.cpu_system_us;
    t.diagnostic(`cold import numpy: ${coldCpu} us CPU, ${c.sc.duration_ms} ms; warm with numpy preloaded: ` +
                 `${warmCpu} us CPU, ${w.sc.duration_ms} ms, ${w.sc.memory_at_start_bytes} bytes at start`);
    // The cold run paid Python's start and numpy's import; the warm one neither.
    assert.ok(warmCpu * 2 < coldCpu, `warm ${warmCpu} us is not well below cold ${coldCpu} us`);
    // numpy is resident before the call starts, and counted in the peak as well.
    assert.ok(w.sc.memory_at_start_bytes > 10 * 1024 * 1024, `memory_at_start_bytes ${w.sc.memory_at_start_bytes}`);
    assert.ok(w.sc.memory_peak_bytes >= w.sc.memory_at_start_bytes);
    // The preload's output (if any) is not the call's.
    assert.equal(w.sc.stderr, '');
});

test('another interpreter takes the cold path; the default one through execute_python is served warm', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_PYTHONS: 'python3=python3,py311=/usr/bin/python3.11' } });
    // Ready sandboxes are there, and the call still takes the cold path.
    await waitPoolFull(d.client);
    const other = await callTool(d.client, 'execute_python', { script: 'print(2)', python: 'py311' });
    assert.equal(other.isError, false, other.text);
    assert.equal(other.sc.stdout, '2\n');
    assert.equal(other.sc.warm, false);
    await waitPoolFull(d.client);
    const def = await callTool(d.client, 'execute_python', { script: 'print(3)' });
    assert.equal(def.isError, false, def.text);
    assert.equal(def.sc.stdout, '3\n');
    assert.equal(def.sc.warm, true, JSON.stringify(def.sc));
});

test('a call with dependencies takes the cold path', { timeout: 600000 }, async (t) => {
    const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: cache } });
    await waitPoolFull(d.client); // ready sandboxes are there, and the call still takes the cold path
    const r = await callTool(d.client, 'execute_python', { script: pep723(['hellopkg==1.0'], 'import hellopkg\nprint(hellopkg.GREETING)\n') });
    assert.equal(r.isError, false, r.text);
    assert.equal(r.sc.stdout, 'hello from hellopkg 1.0\n');
    assert.equal(r.sc.warm, false);
});

test('MCP_EXEC_WARM_POOL=0: every call is cold', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '0' } });
    // The daemon's own report: no pool, none ready (check_environment is answered after the
    // start's checks, which is when a pool would be filled).
    const env = await callTool(d.client, 'check_environment', {});
    assert.equal(env.sc.sandbox.warm_pool, 0, JSON.stringify(env.sc.sandbox));
    assert.equal(env.sc.sandbox.warm_ready, 0, JSON.stringify(env.sc.sandbox));
    for (let i = 0; i < 2; i++) {
        const r = await callExec(d.client, { code: 'print(1)' });
        assertResultShape(r);
        assert.equal(r.sc.warm, false);
        assert.equal(r.sc.memory_at_start_bytes, 0);
    }
});

// Issue 16.5: the start's probe compiles the launcher with the default interpreter, and a cold run
// of that interpreter is given the bytecode instead of the source (the frame that calls the code
// is the launcher's: its module's loader tells which); another interpreter path gets the source.
// The code sees what `python main.py` gives it either way.
const LOADERS = 'import sys\nprint(type(sys._getframe(1).f_globals.get("__loader__")).__name__, ' +
    'type(__loader__).__name__, __file__, sys.argv, __name__)\n1/0';
test('a cold run of the default interpreter runs the launcher as bytecode; another interpreter gets the source', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '0', MCP_EXEC_PYTHONS: 'python3=python3,py311=/usr/bin/python3.11' } });
    const seen = {};
    for (const [name, python] of [['default', undefined], ['other', 'py311']]) {
        const r = await callTool(d.client, 'execute_python', { script: LOADERS, ...(python ? { python } : {}) });
        assert.equal(r.sc.warm, false);
        assert.equal(r.sc.exit_code, 1, r.sc.stderr);
        const [launcher, ...rest] = r.sc.stdout.trim().split(' ');
        seen[name] = launcher;
        assert.equal(rest.join(' '), "SourceFileLoader /tmp/main.py ['main.py'] __main__", name);
        assert.match(r.sc.stderr, /^Traceback \(most recent call last\):\n  File "\/tmp\/main.py", line 3, in <module>\n/, name);
        assert.doesNotMatch(r.sc.stderr, /mcp-execd-launch/, name);
    }
    assert.deepEqual(seen, { default: 'SourcelessFileLoader', other: 'SourceFileLoader' });
});

test('a preload module that does not import refuses the start (exit 2, naming it); a bad list is refused too', async () => {
    const r = await runOnce({ env: { MCP_EXEC_PRELOAD: 'json,no_such_module_xyz' }, keepStdinOpen: true, timeoutMs: 30000 });
    assert.equal(r.code, 2, `exit status ${r.code}; stderr: ${r.stderr}`);
    assert.match(r.stderr, /MCP_EXEC_PRELOAD/);
    assert.match(r.stderr, /no_such_module_xyz/);
    assert.equal(r.stdout, '');
    const bad = await runOnce({ env: { MCP_EXEC_PRELOAD: 'numpy;import os' }, keepStdinOpen: true, timeoutMs: 5000 });
    assert.equal(bad.code, 2, `exit status ${bad.code}; stderr: ${bad.stderr}`);
    assert.match(bad.stderr, /MCP_EXEC_PRELOAD/);
    const over = await runOnce({ env: { MCP_EXEC_MAX_CONCURRENT: '1', MCP_EXEC_WARM_POOL: '2' }, keepStdinOpen: true, timeoutMs: 5000 });
    assert.equal(over.code, 2, `exit status ${over.code}; stderr: ${over.stderr}`);
    assert.match(over.stderr, /MCP_EXEC_WARM_POOL/);
});

test('/metrics shows the ready count, the pool\'s memory and the warm runs', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_MAX_CONCURRENT: '2', MCP_EXEC_WARM_POOL: '2' } });
    const client = await connectSdk(t, d, 'http');
    await callWarm(client, { code: 'print(1)' });
    let m;
    const get = (name) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(m.body)?.[1]);
    for (let i = 0; i < 50; i++) {
        m = await rawRequest(d, { method: 'GET', path: '/metrics' });
        if (get('mcp_execd_pool_ready') === 2) break;
        await sleep(200);
    }
    assert.equal(get('mcp_execd_pool_ready'), 2, m.body);
    assert.ok(get('mcp_execd_pool_memory_bytes') > 2 * 1024 * 1024, m.body);
    assert.ok(get('mcp_execd_runs_warm_total') >= 1, m.body);
});

for (const sig of ['SIGTERM', 'SIGKILL']) {
    test(`${sig} of the daemon leaves no ready sandbox behind`, async (t) => {
        const d = RawDaemon.spawn(t, { env: { MCP_EXEC_MAX_CONCURRENT: '2', MCP_EXEC_WARM_POOL: '2' } });
        await d.initialize();
        // Two inits and two Pythons below the daemon once the pool is full (the condition is both).
        let kids = [];
        for (let i = 0; i < 50; i++) {
            kids = descendants(d.pid);
            const names = kids.map(comm);
            if (names.filter((n) => n === 'python3').length === 2 && names.filter((n) => n === 'sandbox-init').length === 2) break;
            await sleep(200);
        }
        const names = kids.map(comm);
        assert.equal(names.filter((n) => n === 'python3').length, 2, JSON.stringify(names));
        assert.equal(names.filter((n) => n === 'sandbox-init').length, 2, JSON.stringify(names));
        d.kill(sig);
        await d.waitExit(5000);
        let left = kids;
        for (let i = 0; i < 50 && left.length; i++) {
            left = kids.filter(alive);
            if (left.length) await sleep(100);
        }
        assert.deepEqual(left.map((p) => [p, comm(p)]), [], `left after ${sig}`);
    });
}

test('ready sandboxes wait at a lower CPU weight (root: nice 19 and their autogroup at 19), runs at the normal one', async (t) => {
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_MAX_CONCURRENT: '2', MCP_EXEC_WARM_POOL: '2' } });
    await d.initialize();
    let ready = [];
    for (let i = 0; i < 150 && ready.length < 2; i++) {
        // Ready: the launcher is blocked reading stdin (its autogroup was written before that).
        ready = descendants(d.pid).filter((p) => comm(p) === 'python3' &&
            fs.readFileSync(`/proc/${p}/wchan`, 'utf8').includes('pipe'));
        if (ready.length < 2) await sleep(200);
    }
    assert.equal(ready.length, 2, 'two ready sandboxes');
    const root = process.getuid() === 0;
    for (const p of ready) {
        const nice = Number(fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')[16]);
        assert.equal(nice, root ? 19 : 0, `nice of a ready sandbox's Python (${root ? 'root' : 'not root'})`);
        if (root && fs.existsSync(`/proc/${p}/autogroup`))
            assert.match(fs.readFileSync(`/proc/${p}/autogroup`, 'utf8'), /nice 19/);
    }
    const r = await d.response(d.callExec({ code: 'import os\nprint(os.nice(0))' }), 10000);
    assert.equal(r.result.structuredContent.stdout, '0\n', JSON.stringify(r.result.structuredContent));
});
