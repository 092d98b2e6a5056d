// Injected faults that need no systemd (issue 9, point 4): the daemon's TMPDIR on a full
// filesystem, a run filling its own working directory, RLIMIT_NOFILE of the daemon exhausted,
// RLIMIT_NPROC of an unprivileged daemon exhausted (it does not bind root), clone failing (pids
// cgroup v1 of the daemon at its limit), and
// the client vanishing (stdin and stdout closed) with runs in flight. Each: a clear error where one
// is owed, the daemon alive (ping), later runs work once the fault is gone, nothing leaked (fds,
// processes, staging directories). Needs root (mount, prlimit of another process, cgroupfs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import { RawDaemon, uniqueMarker, pySleeperExec, waitMarkerPresent, waitMarkerGone, descendants, sleep, daemonCopyForUid } from './lib/index.mjs';

const isRoot = process.getuid?.() === 0;

/** The daemon's fds once a finished run has given its last ones back (after its answer, when its
 * cancelled ring operations complete: later on a loaded machine): the list once unchanged for
 * 500 ms, at most 15 s. A leak stays a leak: it never goes away. */
async function settledFds(pid) {
    let last = null;
    let since = Date.now();
    for (const t0 = Date.now(); Date.now() - t0 < 15000; await sleep(50)) {
        const now = fs.readdirSync(`/proc/${pid}/fd`).map(Number).sort((a, b) => a - b).join(',');
        if (now !== last) { last = now; since = Date.now(); } else if (Date.now() - since >= 500) break;
    }
    return last.split(',').filter((x) => x !== '').map(Number);
}

/** Everything under dir, as relative paths (the daemon's staging area must empty out). */
function listTree(dir) {
    const out = [];
    const walk = (d, rel) => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
            out.push(path.join(rel, e.name));
            if (e.isDirectory()) walk(path.join(d, e.name), path.join(rel, e.name));
        }
    };
    walk(dir, '');
    return out.sort();
}

function privateTmp(t) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-execd-faults.'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    return dir;
}

async function ping(d) {
    const p = await d.request('ping', undefined, { timeoutMs: 10000 });
    assert.deepEqual(p.result, {});
}

/** Until the start's checks are over: over stdio initialize is answered before them (issue 16.6),
 * and the interpreter probe's run stages a directory in TMPDIR meanwhile; tools/list waits for
 * them. A listing of TMPDIR taken before that may hold the probe's directory. */
async function started(d) {
    const r = await d.request('tools/list', {}, { timeoutMs: 30000 });
    assert.ok(r.result?.tools, JSON.stringify(r).slice(0, 300));
}

async function runOk(d, code = 'print(6*7)', want = '42\n') {
    const r = await d.response(d.callExec({ code }), 30000);
    assert.equal(r.result?.structuredContent?.stdout, want, JSON.stringify(r).slice(0, 500));
}

// These faults are of the cold path's start (staging, clone, fds): no ready sandbox (issue 16), which
// a call would take instead, made before the fault. warm.test.mjs covers the pool's own failures.
const COLD = { MCP_EXEC_WARM_POOL: '0' };

test('TMPDIR on a full filesystem: a tool error saying so, the daemon serves on, no staging leftovers; runs work once space is back', { skip: !isRoot && 'needs root (mount)' }, async (t) => {
    const dir = fs.mkdtempSync('/tmp/mcp-execd-fullfs.');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'mcp-execd-fullfs', dir]);
    let d;
    t.after(async () => {
        d?.kill('SIGKILL');
        if (d) await d.waitExit(5000).catch(() => {});
        try { execFileSync('umount', ['-l', dir]); } catch { /* already */ }
        fs.rmSync(dir, { recursive: true, force: true });
    });
    d = RawDaemon.spawn(t, { env: { TMPDIR: dir, ...COLD } });
    await d.initialize();
    await started(d);
    const before = listTree(dir);
    // Fill it to the last page.
    try { fs.writeFileSync(path.join(dir, 'filler'), Buffer.alloc(4 << 20)); } catch (e) { assert.equal(e.code, 'ENOSPC'); }
    for (const code of ['print(1)', 'x = 1\n' + '#'.repeat(100000)]) {
        const r = await d.response(d.callExec({ code }), 30000);
        assert.equal(r.result?.isError, true, `not a tool error: ${JSON.stringify(r).slice(0, 400)}`);
        assert.match(r.result.content[0].text, /No space left on device/);
        assert.match(r.result.content[0].text, new RegExp(dir.replace(/[.]/g, '\\.')));
    }
    await ping(d);
    assert.deepEqual(listTree(dir).filter((p) => p !== 'filler'), before, 'a failed run left something behind');
    fs.unlinkSync(path.join(dir, 'filler'));
    await runOk(d);
    assert.deepEqual(listTree(dir), before);
    d.endStdin();
    assert.equal((await d.waitExit(10000)).code, 0);
    assert.deepEqual(listTree(dir), [], 'the daemon left its state directory behind');
});

test('a run that fills its own working directory gets ENOSPC inside the run, a normal result, nothing left', async (t) => {
    const tmp = privateTmp(t);
    const d = RawDaemon.spawn(t, { env: { TMPDIR: tmp, MCP_EXEC_TMP_SIZE: '8M', ...COLD } });
    await d.initialize();
    await started(d);
    const before = listTree(tmp);
    const code = [
        'import os, errno',
        'n = 0',
        'try:',
        '    with open("fill.bin", "wb") as f:',
        '        while n < (64 << 20):',
        '            f.write(b"x" * 65536); f.flush(); n += 65536',
        'except OSError as e:',
        '    print("stopped", errno.errorcode[e.errno], n <= (8 << 20))',
    ].join('\n');
    const r = await d.response(d.callExec({ code }), 60000);
    const sc = r.result?.structuredContent;
    assert.ok(sc, JSON.stringify(r).slice(0, 400));
    assert.equal(sc.stdout, 'stopped ENOSPC True\n', JSON.stringify(sc).slice(0, 400));
    await ping(d);
    await runOk(d);
    assert.deepEqual(listTree(tmp), before);
});

test('RLIMIT_NOFILE of the daemon exhausted: calls are tool errors naming it, nothing leaks, runs work again once raised', { skip: !isRoot && 'needs root (prlimit of another process)' }, async (t) => {
    const d = RawDaemon.spawn(t, { env: { TMPDIR: privateTmp(t), ...COLD } });
    await d.initialize();
    await runOk(d);
    const fds = await settledFds(d.pid);
    // Not one more fd: the lowest free number becomes the soft limit, so pipe2() itself fails
    // (EMFILE). Only the soft limit: raising a hard limit again needs CAP_SYS_RESOURCE, which a
    // container's root may lack (and with a lowered hard limit the sandbox cannot give the run its
    // own RLIMIT_NOFILE: that start fails with "setrlimit RLIMIT_NOFILE: Operation not permitted").
    let lowestFree = 0;
    while (fds.includes(lowestFree)) lowestFree++;
    const soft = fs.readFileSync(`/proc/${d.pid}/limits`, 'utf8').match(/^Max open files\s+(\d+)/m)[1];
    execFileSync('prlimit', [`--pid=${d.pid}`, `--nofile=${lowestFree}:`]);
    // Several at once: each one fails cleanly (pipes, pidfd and control socket are all or nothing).
    const ids = [0, 1, 2].map(() => d.callExec({ code: 'print(1)' }));
    for (const id of ids) {
        const r = await d.response(id, 30000);
        assert.equal(r.result?.isError, true, `not a tool error: ${JSON.stringify(r).slice(0, 400)}`);
        assert.match(r.result.content[0].text, /Too many open files/);
        t.diagnostic(r.result.content[0].text);
    }
    await ping(d);
    assert.equal((await settledFds(d.pid)).length, fds.length, 'fds leaked by the failed starts');
    execFileSync('prlimit', [`--pid=${d.pid}`, `--nofile=${soft}:`]);
    await runOk(d);
    assert.equal((await settledFds(d.pid)).length, fds.length, 'fds leaked after the fault');
    assert.deepEqual(descendants(d.pid), []);
});

/** Tasks (threads included) whose real uid is uid: what RLIMIT_NPROC counts. */
function tasksOfUid(uid) {
    let n = 0;
    for (const p of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(p)) continue;
        let status;
        try { status = fs.readFileSync(`/proc/${p}/status`, 'utf8'); } catch { continue; }
        if (Number(status.match(/^Uid:\s+(\d+)/m)[1]) === uid) n += Number(status.match(/^Threads:\s+(\d+)/m)[1]);
    }
    return n;
}

test('RLIMIT_NPROC of an unprivileged daemon exhausted by its user\'s other processes: calls are tool errors naming it, nothing leaks, runs work again once they are gone', { skip: !isRoot && 'needs root (a uid of its own)' }, async (t) => {
    // A uid of its own, so that the count RLIMIT_NPROC compares with is known, and a copy of the
    // daemon that uid may execute wherever the build directory is. The daemon lowers its own soft
    // limit (prlimit as a wrapper: changing another process's limits needs CAP_SYS_RESOURCE, which
    // a container's root may lack); other processes of the same user then use up the count.
    const uid = 30000 + (process.pid % 20000);
    const limit = 16;
    assert.equal(tasksOfUid(uid), 0, `uid ${uid} is in use`);
    const { dir, binary, tmp } = daemonCopyForUid(uid, 'mcp-execd-nproc.');
    const holders = [];
    t.after(() => {
        for (const h of holders) h.kill('SIGKILL');
        fs.rmSync(dir, { recursive: true, force: true });
    });
    const d = RawDaemon.spawn(t, { binary: '/usr/bin/prlimit', args: [`--nproc=${limit}:`, '--', binary],
                                   uid, gid: uid, env: { TMPDIR: tmp, HOME: tmp, MCP_EXEC_CGROUP: 'none', ...COLD } });
    await d.initialize();
    await runOk(d);
    assert.match(fs.readFileSync(`/proc/${d.pid}/limits`, 'utf8'), new RegExp(`^Max processes\\s+${limit}\\s`, 'm'));
    const fds = (await settledFds(d.pid)).length;
    const before = listTree(tmp);
    const daemonTasks = tasksOfUid(uid);
    for (let i = daemonTasks; i < limit; i++)
        holders.push(spawn('/usr/bin/sleep', ['600'], { uid, gid: uid, stdio: 'ignore' }));
    for (let i = 0; i < 100 && tasksOfUid(uid) < limit; i++) await sleep(50);
    assert.equal(tasksOfUid(uid), limit, 'the holders did not start');
    const ids = [0, 1, 2].map(() => d.callExec({ code: 'print(1)' }));
    for (const id of ids) {
        const r = await d.response(id, 30000);
        assert.equal(r.result?.isError, true, `not a tool error: ${JSON.stringify(r).slice(0, 400)}`);
        assert.match(r.result.content[0].text, /Resource temporarily unavailable \(the daemon is at a process limit: RLIMIT_NPROC/);
        t.diagnostic(`daemon ${daemonTasks} tasks + ${holders.length} other processes of uid ${uid} = RLIMIT_NPROC ${limit}: ${r.result.content[0].text}`);
    }
    await ping(d);
    assert.equal((await settledFds(d.pid)).length, fds, 'fds leaked by the failed starts');
    assert.deepEqual(descendants(d.pid), [], 'a half-started run survived');
    assert.deepEqual(listTree(tmp), before, 'a failed run left its staging directory');
    for (const h of holders) h.kill('SIGKILL');
    for (let i = 0; i < 100 && tasksOfUid(uid) > daemonTasks; i++) await sleep(50);
    await runOk(d);
    assert.equal((await settledFds(d.pid)).length, fds, 'fds leaked after the fault');
});

test('clone failing (the daemon\'s pids cgroup at its limit): a tool error, no process or fd left, runs work again', { skip: (!isRoot || !fs.existsSync('/sys/fs/cgroup/pids/cgroup.procs')) && 'needs root and the pids cgroup v1 hierarchy' }, async (t) => {
    const tmp = privateTmp(t);
    const d = RawDaemon.spawn(t, { env: { TMPDIR: tmp, ...COLD } });
    await d.initialize();
    await runOk(d);
    const cg = `/sys/fs/cgroup/pids/mcp-execd-fault-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
    fs.mkdirSync(cg);
    t.after(async () => {
        d.kill('SIGKILL');
        await d.waitExit(5000).catch(() => {});
        try { fs.writeFileSync(`${cg}/pids.max`, 'max'); } catch { /* gone */ }
        for (let i = 0; i < 50; i++) {
            try { fs.rmdirSync(cg); return; } catch { await sleep(100); }
        }
    });
    fs.writeFileSync(`${cg}/cgroup.procs`, String(d.pid));
    const fds = (await settledFds(d.pid)).length;
    const before = listTree(tmp);
    fs.writeFileSync(`${cg}/pids.max`, fs.readFileSync(`${cg}/pids.current`, 'utf8').trim());
    for (let i = 0; i < 3; i++) {
        const r = await d.response(d.callExec({ code: 'print(1)' }), 30000);
        assert.equal(r.result?.isError, true, `not a tool error: ${JSON.stringify(r).slice(0, 400)}`);
        assert.match(r.result.content[0].text, /Resource temporarily unavailable|cannot start/);
        t.diagnostic(r.result.content[0].text);
    }
    await ping(d);
    assert.equal((await settledFds(d.pid)).length, fds, 'fds leaked by the failed clones');
    assert.deepEqual(descendants(d.pid), [], 'a half-started run survived');
    assert.deepEqual(listTree(tmp), before, 'a failed run left its staging directory');
    fs.writeFileSync(`${cg}/pids.max`, 'max');
    await runOk(d);
    fs.writeFileSync('/sys/fs/cgroup/pids/cgroup.procs', String(d.pid));
});

test('the client vanishes (stdin and stdout closed) with runs in flight and queued: the runs are killed, the daemon exits, nothing remains', async (t) => {
    const tmp = privateTmp(t);
    const marker = uniqueMarker('vanish');
    const d = RawDaemon.spawn(t, { env: { TMPDIR: tmp, MCP_EXEC_MAX_CONCURRENT: 2 } });
    await d.initialize();
    for (let i = 0; i < 3; i++) d.callExec({ code: pySleeperExec(marker, 120), timeout_s: 200 });
    assert.equal((await waitMarkerPresent(marker, 10000)).length > 0, true, 'the runs did not start');
    const t0 = Date.now();
    d.proc.stdout.destroy();
    d.proc.stdin.destroy();
    const exit = await d.waitExit(15000);
    t.diagnostic(`daemon exited ${JSON.stringify(exit)} ${Date.now() - t0} ms after the client vanished`);
    assert.deepEqual(await waitMarkerGone(marker, 5000), [], 'a run outlived the client');
    assert.deepEqual(listTree(tmp), [], 'the daemon left files behind');
});

test('the client closes only stdout, keeping stdin open, with a run in flight: the run is killed, the daemon stops', async (t) => {
    const tmp = privateTmp(t);
    const marker = uniqueMarker('noout');
    const d = RawDaemon.spawn(t, { env: { TMPDIR: tmp } });
    await d.initialize();
    d.callExec({ code: pySleeperExec(marker, 120), timeout_s: 200 });
    assert.equal((await waitMarkerPresent(marker, 10000)).length > 0, true, 'the run did not start');
    d.proc.stdout.destroy();
    const exit = await d.waitExit(15000);
    t.diagnostic(`daemon exited ${JSON.stringify(exit)}`);
    assert.deepEqual(await waitMarkerGone(marker, 5000), [], 'the run outlived the client');
    assert.deepEqual(listTree(tmp), []);
});
