// The start (issue 16, point 6): over stdio the daemon answers initialize before its checks (the
// sandbox's self-test, the interpreter probe), and what depends on them waits for them. These
// tests prove the behaviour, never the timing (bench/start.py measures that): messages written
// all at once, right after the spawn (so they reach a daemon that has not finished starting), get
// the answers a daemon that has finished starting gives; a held call can still be cancelled; a
// client that leaves at once still gets the checks made; a failing check still exits 1 with the
// same message, and what was held is answered with it (so is a stop during the start).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { RawDaemon, binaryPath, sleep, test } from './lib/index.mjs';

const INIT = {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'mcp-execd-blackbox-start', version: '0' },
};
const STARTED = /serving MCP over stdio/;

// What may differ between two runs of the same code: timings, ids, the accounting.
function runFacts(res) {
    assert.ok(res.result, JSON.stringify(res).slice(0, 800));
    const sc = res.result.structuredContent;
    assert.ok(sc, JSON.stringify(res).slice(0, 800));
    const { stdout, stderr, exit_code, timed_out, truncated, signal, limits, python, python_version } = sc;
    return { isError: res.result.isError ?? false, stdout, stderr, exit_code, timed_out, truncated, signal, limits, python, python_version };
}

// The same requests, sent in one write before the daemon has started (early) or one by one once it
// has logged that it serves (late). Returns the answers by name.
async function session(t, early) {
    const d = RawDaemon.spawn(t);
    const calls = {
        list: ['tools/list', {}],
        exec: ['tools/call', { name: 'exec', arguments: { code: 'import sys\nprint(sys.version_info[:2], 6 * 7)' } }],
        script: ['tools/call', { name: 'execute_python', arguments: { script: 'print("script", 1 + 1)' } }],
        validate: ['tools/call', { name: 'validate_script', arguments: { script: 'def f(:\n    pass\n' } }],
        env: ['tools/call', { name: 'check_environment', arguments: {} }],
    };
    const ids = {};
    if (early) {
        // One write: initialize, and everything else right behind it.
        const lines = [{ jsonrpc: '2.0', id: 'init', method: 'initialize', params: INIT },
            { jsonrpc: '2.0', method: 'notifications/initialized' }];
        for (const [name, [method, params]] of Object.entries(calls)) {
            ids[name] = `early-${name}`;
            lines.push({ jsonrpc: '2.0', id: ids[name], method, params });
        }
        d.proc.stdin.write(lines.map((l) => JSON.stringify(l) + '\n').join(''));
        const init = await d.response('init', 10000);
        assert.ok(init.result, JSON.stringify(init));
    } else {
        await d.initialize('2025-11-25', 10000);
        await d.waitStderr(STARTED, 30000);
        for (const [name, [method, params]] of Object.entries(calls)) ids[name] = d.send(method, params);
    }
    const out = {};
    for (const [name, id] of Object.entries(ids)) out[name] = await d.response(id, 60000);
    return out;
}

test('calls sent with initialize, before the start is over, get the answers of a started daemon', async (t) => {
    const early = await session(t, true);
    const late = await session(t, false);
    assert.deepEqual(early.list.result, late.list.result, 'tools/list (the descriptions name the probe\'s findings)');
    assert.match(JSON.stringify(early.list.result), /Python \d+\.\d+/, 'the description names the probed version');
    assert.deepEqual(runFacts(early.exec), runFacts(late.exec));
    assert.equal(early.exec.result.structuredContent.exit_code, 0, JSON.stringify(early.exec).slice(0, 800));
    assert.deepEqual(runFacts(early.script), runFacts(late.script));
    assert.equal(early.script.result.structuredContent.stdout, 'script 2\n', JSON.stringify(early.script).slice(0, 800));
    assert.deepEqual(early.validate.result, late.validate.result);
    assert.equal(early.validate.result.structuredContent?.valid, false, JSON.stringify(early.validate).slice(0, 800));
    const envOf = (r) => {
        const sc = r.result?.structuredContent;
        assert.ok(sc, JSON.stringify(r).slice(0, 800));
        // warm_ready is how many ready sandboxes exist at that instant (refills run in the
        // background after each answer): a count of the moment, not an answer of the start. It
        // differed once under AddressSanitizer (0 against 1); the pool's size is compared.
        const { warm_ready: _, ...sandbox } = sc.sandbox ?? {};
        return { interpreters: sc.interpreters, sandbox, limits: sc.limits, sources: sc.sources };
    };
    assert.deepEqual(envOf(early.env), envOf(late.env));
});

test('initialize and ping are answered while a tools/list waits; the answers keep their ids', async (t) => {
    const d = RawDaemon.spawn(t);
    d.proc.stdin.write([
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', id: 2, method: 'initialize', params: INIT },
        { jsonrpc: '2.0', id: 3, method: 'tools/list' },
        { jsonrpc: '2.0', id: 4, method: 'ping' },
    ].map((l) => JSON.stringify(l) + '\n').join(''));
    for (const id of [1, 2, 3, 4]) assert.ok((await d.response(id, 30000)).result, `id ${id}`);
    // The ping before initialize, initialize, then the list: in the order they were sent.
    const order = d.messages.map((m) => m.id);
    assert.ok(order.indexOf(1) < order.indexOf(2) && order.indexOf(2) < order.indexOf(3), JSON.stringify(order));
});

test('a call held during the start can be cancelled; the daemon then exits at EOF at once', async (t) => {
    const d = RawDaemon.spawn(t);
    d.proc.stdin.write([
        { jsonrpc: '2.0', id: 'init', method: 'initialize', params: INIT },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 'sleep', method: 'tools/call', params: { name: 'exec', arguments: { code: 'import time; time.sleep(30)', timeout_s: 60 } } },
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'sleep' } },
        { jsonrpc: '2.0', id: 'after', method: 'tools/list' },
    ].map((l) => JSON.stringify(l) + '\n').join(''));
    assert.ok((await d.response('after', 30000)).result);
    // At EOF the daemon answers what is still in flight, then exits: an uncancelled 30 s sleep would
    // hold the exit past the bound. Once its stdout is closed nothing more can come, so the
    // cancelled call's absence is checked then, not over a window.
    d.endStdin();
    const { code } = await d.waitClosed(10000);
    assert.equal(code, 0);
    assert.equal(d.messages.find((m) => m.id === 'sleep'), undefined, 'a cancelled call was answered');
});

test('a client that closes stdin right after initialize: answered, and the start still completes', async (t) => {
    const d = RawDaemon.spawn(t);
    d.proc.stdin.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: INIT }) + '\n');
    assert.ok((await d.response(1, 10000)).result);
    const { code } = await d.waitExit(30000);
    assert.equal(code, 0, d.stderrText);
    assert.match(d.stderrText, STARTED, 'the checks ran and the start was recorded');
    assert.match(d.stderrText, /stopping \(end-of-input\)/);
});

test('SIGTERM right after the initialize answer (the probe likely still running): exit 0, no probe failure logged, every request read is answered', async (t) => {
    const d = RawDaemon.spawn(t);
    d.proc.stdin.write([
        { jsonrpc: '2.0', id: 'init', method: 'initialize', params: INIT },
        { jsonrpc: '2.0', id: 'list', method: 'tools/list' },
        { jsonrpc: '2.0', id: 'run', method: 'tools/call', params: { name: 'exec', arguments: { code: 'import time; time.sleep(30)' } } },
    ].map((l) => JSON.stringify(l) + '\n').join(''));
    assert.ok((await d.response('init', 10000)).result);
    d.kill('SIGTERM');
    // The answers are read below: wait until stdout is closed (everything read), not just the exit.
    const { code } = await d.waitClosed(10000);
    assert.equal(code, 0, d.stderrText);
    assert.doesNotMatch(d.stderrText, /probe failed|lacks tomllib/, 'a stopped probe was reported as a failure');
    // Held (the start not over) or not (the run killed by the stop): answered either way.
    const list = d.messages.find((m) => m.id === 'list');
    const run = d.messages.find((m) => m.id === 'run');
    assert.ok(list && (list.result || /shutting down/.test(list.error?.message)), JSON.stringify(d.lines));
    assert.equal(run?.result?.isError, true, JSON.stringify(d.lines));
    assert.match(run.result.content[0].text, /shutting down \(SIGTERM\)/);
    t.diagnostic(run.result.content[0].text);
});

// A user namespace where no further user namespace may be made: the sandbox check fails, as it
// does on a host that refuses them.
const unshareOk = spawnSync('unshare', ['--user', '--map-root-user', 'true']).status === 0;
function spawnRefused(t) {
    return RawDaemon.spawn(t, {
        binary: 'unshare',
        args: ['--user', '--map-root-user', 'sh', '-c', 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0"', binaryPath()],
    });
}
const REFUSED = /refusing to start: the sandbox is not available: the kernel refused to create a user namespace/;

test('a failing sandbox check: initialize answered, held calls answered with the failure, exit 1 with the same message', { skip: !unshareOk && 'unshare --user is refused here' }, async (t) => {
    const d = spawnRefused(t);
    d.proc.stdin.write([
        { jsonrpc: '2.0', id: 'init', method: 'initialize', params: INIT },
        { jsonrpc: '2.0', id: 'list', method: 'tools/list' },
        { jsonrpc: '2.0', id: 'run', method: 'tools/call', params: { name: 'exec', arguments: { code: 'print(1)' } } },
    ].map((l) => JSON.stringify(l) + '\n').join(''));
    // stdin stays open: the daemon exits on its own. Wait for its stdout to be closed, not only for
    // the exit: the answers it wrote just before exiting may still be in the pipe when 'exit' comes
    // (seen on a loaded machine: exit 1 observed with no line read yet).
    const { code } = await d.waitClosed(30000);
    assert.equal(code, 1, d.stderrText);
    assert.match(d.stderrText, REFUSED);
    assert.doesNotMatch(d.stderrText, STARTED);
    assert.ok(d.messages.find((m) => m.id === 'init')?.result, JSON.stringify(d.lines));
    const list = d.messages.find((m) => m.id === 'list');
    const run = d.messages.find((m) => m.id === 'run');
    assert.match(list?.error?.message ?? '', /tools\/list: mcp-execd could not start: the sandbox is not available: the kernel refused/, JSON.stringify(d.lines));
    assert.equal(run?.result?.isError, true, JSON.stringify(d.lines));
    assert.match(run.result.content[0].text, /^mcp-execd could not start: the sandbox is not available: the kernel refused/);
});

test('a failing sandbox check with stdin closed at once: still exit 1, not 0', { skip: !unshareOk && 'unshare --user is refused here' }, async (t) => {
    const d = spawnRefused(t);
    d.endStdin();
    const { code } = await d.waitExit(30000);
    assert.equal(code, 1, d.stderrText);
    assert.match(d.stderrText, REFUSED);
});

// Issue 29 #2: runs and Python sessions share the daemon user's per-user kernel budgets, and the
// start message says by how many sandboxes they are divided.
test('the start message states the runs, the sessions, and their sum sharing the per-user kernel budgets', async (t) => {
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_MAX_CONCURRENT: 3, MCP_EXEC_PY_SESSIONS_MAX: 5 } });
    await d.initialize('2025-11-25', 10000);
    await d.waitStderr(STARTED, 30000);
    assert.match(d.stderrText, /max 3 concurrent runs, queue \d+, 5 Python sessions; the per-user kernel budgets are shared by 8 sandboxes/);
});

// Issue 29 #5: the runs' and the installer's host uids (65532, 65533) are reserved. A host process
// of either, which could signal the runs (kill(2) checks uids) or trace the installer, refuses the
// start of a root daemon, naming it; one in a PID namespace of its own (a container's) cannot see
// the runs' pids and does not.
const isRoot = process.getuid() === 0;
const setprivOk = isRoot && spawnSync('setpriv', ['--reuid=65532', '--regid=65532', '--clear-groups', 'true']).status === 0;
async function withProcessAs(t, uid, ownPidNs) {
    const { spawn } = await import('node:child_process');
    const argv = ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'sleep', '120'];
    const p = ownPidNs ? spawn('unshare', ['--pid', '--fork', '--kill-child', ...argv], { stdio: 'ignore' })
        : spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
    t.after(() => p.kill('SIGKILL'));
    // the process runs as uid once its exec is done: wait until /proc says so
    const fs = await import('node:fs');
    for (let i = 0; i < 100; i++) {
        const pids = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n));
        if (pids.some((n) => { try { return /\nUid:\t(\d+)/.exec(fs.readFileSync(`/proc/${n}/status`, 'utf8'))?.[1] === String(uid); } catch { return false; } })) return p;
        await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`no process of uid ${uid} appeared`);
}

// The daemon and a process of uid that lives for seconds s, alone in a PID namespace with its own
// /proc: the daemons of the other test files, which run meanwhile, see the process one namespace
// down and start. The daemon starts once the process runs as uid.
function spawnBesideUid(t, uid, s) {
    return RawDaemon.spawn(t, {
        binary: 'unshare',
        args: ['--pid', '--fork', '--mount-proc', '--kill-child', 'sh', '-c',
            `setpriv --reuid=${uid} --regid=${uid} --clear-groups sleep ${s} & ` +
            // not exec: the process's parent is sh, not a daemon (an instance's installer is)
            `until grep -q "^Uid:.${uid}" /proc/$!/status; do :; done; "$0"`, binaryPath()],
    });
}

for (const [uid, whose] of [[65532, "the runs'"], [65533, "the dependency installer's"]]) {
    test(`a host process of uid ${uid} refuses the start, named with its uid and whose it is`, { skip: !setprivOk && 'needs root and setpriv' }, async (t) => {
        const d = spawnBesideUid(t, uid, 120);
        d.endStdin();
        const { code } = await d.waitExit(30000);
        assert.equal(code, 1, d.stderrText);
        assert.match(d.stderrText, new RegExp(`refusing to start: .*process \\d+ \\(sleep\\) runs as uid ${uid}, ${whose} uid, outside mcp-execd.*reserves uids 65532 and 65533`));
    });
}

// The loop serves while it looks again (the process may be a killed daemon's installer about to
// die): a call sent after initialize, while the process is there, is read, held, and answered with
// the refusal; never left unread when the daemon exits.
test('a call sent while a host process of uid 65532 is there is answered with the refusal, then exit 1', { skip: !setprivOk && 'needs root and setpriv' }, async (t) => {
    const d = spawnBesideUid(t, 65532, 120);
    await d.initialize('2025-11-25', 10000);
    // well after initialize, well before the refusal (the process must last 3 s)
    await sleep(1000);
    const id = d.callExec({ code: 'print(1)' });
    const { code } = await d.waitClosed(30000);
    assert.equal(code, 1, d.stderrText);
    const run = d.messages.find((m) => m.id === id);
    assert.equal(run?.result?.isError, true, JSON.stringify(d.lines));
    assert.match(run.result.content[0].text, /^mcp-execd could not start: the sandbox is not available: process \d+ \(sleep\) runs as uid 65532/);
});

// Counted only if it lasts: a process of a reserved uid that ends within the start's 3 s (a killed
// daemon's installer dying of its parent-death signal) does not refuse it, and the call sent
// meanwhile is served.
test('a host process of uid 65533 that ends within 3 s does not refuse the start', { skip: !setprivOk && 'needs root and setpriv' }, async (t) => {
    const d = spawnBesideUid(t, 65533, 1);
    await d.initialize('2025-11-25', 10000);
    const r = await d.response(d.callExec({ code: 'print(6 * 7)' }), 30000);
    assert.equal(r.result?.structuredContent?.stdout, '42\n', JSON.stringify(r));
    assert.match(d.stderrText, STARTED);
});

test('a process of uid 65532 in a PID namespace of its own (a container) does not refuse the start', { skip: !setprivOk && 'needs root and setpriv' }, async (t) => {
    await withProcessAs(t, 65532, true);
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const r = await d.response(d.callExec({ code: 'print(6 * 7)' }), 30000);
    assert.equal(r.result?.structuredContent?.stdout, '42\n', JSON.stringify(r));
});
