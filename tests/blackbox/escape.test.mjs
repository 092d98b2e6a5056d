// The escape suite (issue 4, "How it is proven"): hostile code sent through the server, one
// attempt per test; each fails if the sandbox invariant it attacks breaks. The code prints one
// JSON verdict line that the test checks, so a failure shows what the run actually saw.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execFile, spawn } from 'node:child_process';
import { startDaemon, callExec, summarize, uniqueMarker, sleep, daemonCopyForUid } from './lib/index.mjs';
import { RawDaemon } from './lib/raw.mjs';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

// One daemon for the attempts that need nothing of their own (a daemon per test made this file
// outlive the runner's per-file timeout on a loaded machine). Its environment carries a token and
// a marker that no run may see, a small /tmp cap and room for two concurrent runs.
//
// The suite runs twice (issue 16: a ready sandbox is exactly as isolated as a cold run): here
// every daemon of this file has no pool, so each attempt is a cold run; escape-warm.test.mjs sets
// BLACKBOX_ESCAPE_PATH=warm, and then each attempt made through run() waits for a ready sandbox
// and must be served by it (warm: true).
const WARM = process.env.BLACKBOX_ESCAPE_PATH === 'warm';
// escape-session.test.mjs sets BLACKBOX_ESCAPE_PATH=session (issue 18.6): each attempt made through
// run() gets a Python session of its own (opened before, closed after), and runs in it.
const SESSION = process.env.BLACKBOX_ESCAPE_PATH === 'session';
// escape-task.test.mjs sets BLACKBOX_ESCAPE_PATH=task (issue 17.3): each attempt made through run()
// is a task (the 1.x SDK's experimental callToolStream: created, polled, its result fetched).
const TASK = process.env.BLACKBOX_ESCAPE_PATH === 'task';
if (!WARM) process.env.BLACKBOX_POOL = 'off';
const MARKER = uniqueMarker('bb-env');
const TOKEN = uniqueMarker('bb-token');
let shared;
before(async () => {
    shared = await startDaemon(null, {
        env: { MCP_EXEC_MAX_CONCURRENT: 2, MCP_EXEC_TMP_SIZE: '8M', MCP_EXEC_AUTH_TOKEN: TOKEN, BLACKBOX_ESCAPE_MARKER: MARKER,
            // Every attempt of the task path keeps its result for the TTL: room for all of them.
            ...(TASK ? { MCP_EXEC_TASKS_PER_CLIENT: 256, MCP_EXEC_TASKS_MAX: 1000 } : {}) },
    });
});
after(async () => { await shared?.close(); });

/** Runs code, expects a normal result (no tool error) and returns it. */
async function run(d, code, args = {}) {
    const a = { code, timeout_s: 20, ...args };
    const pooled = WARM && !a.python;
    if (pooled) await readyTogether(d);
    // A session takes neither another interpreter nor stdin (first slice): those stay cold runs.
    const inSession = SESSION && !a.python && !a.stdin;
    if (inSession) {
        const o = await d.client.callTool({ name: 'session_open', arguments: {} });
        assert.equal(o.isError, false, JSON.stringify(o));
        a.session = o.structuredContent.session;
    }
    const r = TASK ? await callExecAsTask(d.client, a, (a.timeout_s + 30) * 1000)
        : await callExec(d.client, a, { timeoutMs: (a.timeout_s + 30) * 1000 });
    if (inSession)
        await d.client.callTool({ name: 'session_close', arguments: { session: a.session } });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.warm, pooled, `served ${r.sc.warm ? 'warm' : 'cold'}, expected the other: ${summarize(r)}`);
    if (inSession) assert.equal(r.sc.session, a.session);
    return r;
}

/** callExec()'s result, the call made as a task: it must be created as one, polled, and end with
 * its result (a task that ended otherwise fails the attempt). */
async function callExecAsTask(client, args, timeoutMs) {
    const kinds = [];
    let result;
    for await (const m of client.experimental.tasks.callToolStream({ name: 'exec', arguments: args },
        CallToolResultSchema, { timeout: timeoutMs, task: { ttl: 600000 } })) {
        kinds.push(m.type);
        if (m.type === 'result') result = m.result;
        if (m.type === 'error') throw m.error;
    }
    assert.equal(kinds[0], 'taskCreated', `not run as a task: ${kinds.join(',')}`);
    assert.ok(result, `no result: ${kinds.join(',')}`);
    const text = result.content?.find((c) => c.type === 'text')?.text;
    let textJson;
    try { textJson = JSON.parse(text); } catch { textJson = undefined; }
    return { result, isError: result.isError === true, sc: result.structuredContent, text, textJson, ms: 0 };
}

/** Attempts started in the same turn (Promise.all) share one wait and then all call at once, so
 * each finds a ready sandbox: waiting each on its own, the first took one before the second saw
 * the pool full, and the second waited for the first's answer (a run that was to overlap it ran
 * after it). The pool (2) is as large as the shared daemon's concurrency. */
const readyWaits = new Map();
function readyTogether(d) {
    if (!readyWaits.has(d)) readyWaits.set(d, waitReady(d).finally(() => readyWaits.delete(d)));
    return readyWaits.get(d);
}

/** Until the daemon's pool is full (check_environment's sandbox.warm_ready = warm_pool; refills
 * are made at a low CPU weight after each answer, slow on a loaded machine), at most 60 s. */
async function waitReady(d) {
    let sb;
    for (const t0 = Date.now(); Date.now() - t0 < 60000; await sleep(100)) {
        sb = (await d.client.callTool({ name: 'check_environment', arguments: {} })).structuredContent?.sandbox;
        if (sb?.warm_pool > 0 && sb.warm_ready >= sb.warm_pool) return;
    }
    assert.fail(`the pool did not fill within 60 s: ${JSON.stringify(sb)}`);
}

/** Runs code whose last stdout line is JSON; returns it parsed. */
async function verdict(d, code, args = {}) {
    const r = await run(d, code, args);
    const last = r.sc.stdout.trim().split('\n').pop();
    try {
        return JSON.parse(last);
    } catch {
        assert.fail(`no JSON verdict: ${summarize(r)}`);
    }
}

// Python helper prepended to attempts: call a syscall through libc and return errno (0 = it worked).
const SYSCALL = [
    'import ctypes, errno, json, os',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'def sc(nr, *a):',
    '    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])',
    '    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())) if r == -1 else "OK"',
].join('\n');

// What the system calls of calls (name → a Python expression over sc()) give, run after the Python
// lines of prelude: { name: errno name, or "OK" }.
function syscallVerdicts(d, calls, prelude = []) {
    const entries = Object.entries(calls).map(([name, expr]) => `${JSON.stringify(name)}: ${expr}`);
    return verdict(d, [SYSCALL, ...prelude, `print(json.dumps({${entries.join(', ')}}))`].join('\n'));
}

// Python: try something, print {"ok": false, "err": name} if it raised OSError, {"ok": true} if not.
const tryIt = (stmt) => [
    'import json, errno',
    'try:',
    ...stmt.split('\n').map((l) => `    ${l}`),
    '    print(json.dumps({"ok": True}))',
    'except OSError as e:',
    '    print(json.dumps({"ok": False, "err": errno.errorcode.get(e.errno, str(e.errno)), "msg": str(e)}))',
].join('\n');

// ---- network --------------------------------------------------------------------------------

test('TCP connect to a listener the test opens on 127.0.0.1 fails, and the listener sees nothing', async (t) => {
    let accepted = 0;
    const server = net.createServer((s) => { accepted++; s.destroy(); });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    t.after(() => server.close());
    const { port } = server.address();
    const d = shared;
    const v = await verdict(d, tryIt(`import socket\nsocket.create_connection(("127.0.0.1", ${port}), timeout=3)`));
    assert.equal(v.ok, false, JSON.stringify(v));
    assert.equal(v.err, 'EAFNOSUPPORT', JSON.stringify(v));
    await sleep(100);
    assert.equal(accepted, 0, 'the listener accepted a connection from the run');
});

test('UDP datagram to a socket the test opens on 127.0.0.1 never arrives', async (t) => {
    let received = 0;
    const sock = dgram.createSocket('udp4');
    sock.on('message', () => { received++; });
    await new Promise((r) => sock.bind(0, '127.0.0.1', r));
    t.after(() => sock.close());
    const { port } = sock.address();
    const d = shared;
    const v = await verdict(d, tryIt(
        `import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b"escape", ("127.0.0.1", ${port}))`));
    assert.equal(v.ok, false, JSON.stringify(v));
    await sleep(200);
    assert.equal(received, 0, 'a datagram from the run arrived');
});

test('IPv6 TCP to ::1 is refused', async (t) => {
    const d = shared;
    const v = await verdict(d, tryIt('import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_STREAM).connect(("::1", 22))'));
    assert.equal(v.ok, false, JSON.stringify(v));
    assert.equal(v.err, 'EAFNOSUPPORT', JSON.stringify(v));
});

test('DNS lookup of a public name fails (no resolver, no network)', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        'import json, socket, os',
        'try:',
        '    socket.getaddrinfo("example.com", 80)',
        '    print(json.dumps({"ok": True}))',
        'except OSError as e:',
        '    print(json.dumps({"ok": False, "msg": str(e), "resolv": os.path.exists("/etc/resolv.conf")}))',
    ].join('\n'));
    assert.equal(v.ok, false, JSON.stringify(v));
    assert.equal(v.resolv, false, '/etc/resolv.conf is visible');
});

test('raw IP socket is refused', async (t) => {
    const d = shared;
    const v = await verdict(d, tryIt('import socket\nsocket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)'));
    assert.deepEqual([v.ok, v.err], [false, 'EAFNOSUPPORT'], JSON.stringify(v));
});

test('netlink socket (route) is refused', async (t) => {
    const d = shared;
    const v = await verdict(d, tryIt('import socket\nsocket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)'));
    assert.deepEqual([v.ok, v.err], [false, 'EAFNOSUPPORT'], JSON.stringify(v));
});

test('packet socket is refused', async (t) => {
    const d = shared;
    const v = await verdict(d, tryIt('import socket\nsocket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)'));
    assert.deepEqual([v.ok, v.err], [false, 'EAFNOSUPPORT'], JSON.stringify(v));
});

// socketpair() creates a socket of the family before asking it for a pair: every family but
// AF_UNIX must stop at the filter (EAFNOSUPPORT), not in the kernel. A type with unknown flag bits
// tells the two apart: the kernel answers EINVAL before it looks at the family, the filter first.
test('socketpair of AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK, AF_XDP is refused by the filter; AF_UNIX works', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        'import ctypes, errno, json, socket',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'def pair(fam, typ):',
        '    sv = (ctypes.c_int * 2)()',
        '    if libc.socketpair(fam, typ, 0, sv) == 0:',
        '        return "OK"',
        '    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))',
        'BAD_FLAGS = 0x40000000',
        'fams = {"AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16, "AF_PACKET": 17, "AF_VSOCK": 40, "AF_XDP": 44}',
        'out = {n: [pair(f, socket.SOCK_STREAM), pair(f, socket.SOCK_DGRAM), pair(f, socket.SOCK_RAW), pair(f, socket.SOCK_STREAM | BAD_FLAGS)] for n, f in fams.items()}',
        'out["AF_UNIX_flags"] = pair(1, socket.SOCK_STREAM | BAD_FLAGS)',
        'a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM); a.sendall(b"x")',
        'c, e = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); c.send(b"y")',
        'out["AF_UNIX"] = (b.recv(1) + e.recv(1)).decode()',
        'print(json.dumps(out))',
    ].join('\n'));
    for (const f of ['AF_INET', 'AF_INET6', 'AF_NETLINK', 'AF_PACKET', 'AF_VSOCK', 'AF_XDP'])
        assert.deepEqual(v[f], ['EAFNOSUPPORT', 'EAFNOSUPPORT', 'EAFNOSUPPORT', 'EAFNOSUPPORT'], `${f}: ${JSON.stringify(v[f])}`);
    assert.equal(v.AF_UNIX_flags, 'EINVAL');
    assert.equal(v.AF_UNIX, 'xy');
});

test('multiprocessing (AF_UNIX socketpairs, semaphores) and asyncio (its self-pipe socketpair) still work', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        'import asyncio, json, multiprocessing as mp',
        'def sq(x):',
        '    return x * x',
        'if __name__ == "__main__":',
        '    with mp.get_context("fork").Pool(2) as p:',
        '        r = p.map(sq, range(5))',
        '    a, b = mp.Pipe(); a.send("ping"); got = b.recv()',
        '    async def main():',
        '        import socket',
        '        s1, s2 = socket.socketpair()',
        '        r1, w1 = await asyncio.open_connection(sock=s1)',
        '        r2, w2 = await asyncio.open_connection(sock=s2)',
        '        w1.write(b"ok\\n"); await w1.drain()',
        '        return (await r2.readline()).decode().strip()',
        '    print(json.dumps([r, got, asyncio.run(main())]))',
    ].join('\n'), { timeout_s: 60 });
    assert.deepEqual(v, [[0, 1, 4, 9, 16], 'ping', 'ok']);
});

test('the run\'s network namespace has only lo', async (t) => {
    const d = shared;
    const v = await verdict(d, 'import json\nprint(json.dumps([l.split(":")[0].strip() for l in open("/proc/self/net/dev").read().splitlines()[2:]]))');
    assert.deepEqual(v, ['lo']);
});

test('an abstract AF_UNIX socket the test listens on is unreachable (own network namespace)', async (t) => {
    const name = uniqueMarker('bb-abstract');
    let accepted = 0;
    const server = net.createServer((s) => { accepted++; s.destroy(); });
    await new Promise((r, j) => { server.once('error', j); server.listen(`\0${name}`, r); });
    t.after(() => server.close());
    const d = shared;
    const v = await verdict(d, tryIt(`import socket\nsocket.socket(socket.AF_UNIX).connect("\\0${name}")`));
    assert.equal(v.ok, false, JSON.stringify(v));
    assert.equal(v.err, 'ECONNREFUSED', JSON.stringify(v));
    assert.equal(accepted, 0);
});

for (const p of ['/run/dbus/system_bus_socket', '/run/systemd/private', '/run/systemd/journal/socket']) {
    test(`AF_UNIX connect to the host's ${p} fails: it does not even exist`, async (t) => {
        const d = shared;
        const v = await verdict(d, [
            'import json, os, socket, errno',
            `p = ${JSON.stringify(p)}`,
            'out = {"exists": os.path.exists(p)}',
            'try:',
            '    socket.socket(socket.AF_UNIX).connect(p); out["connected"] = True',
            'except OSError as e:',
            '    out["err"] = errno.errorcode[e.errno]',
            'print(json.dumps(out))',
        ].join('\n'));
        assert.deepEqual(v, { exists: false, err: 'ENOENT' });
    });
}

// ---- the host's files -----------------------------------------------------------------------

test('a secret planted in /root is not readable (no /root at all)', async (t) => {
    const marker = uniqueMarker('bb-secret');
    const file = path.join(os.homedir(), `${marker}.txt`);
    try {
        fs.writeFileSync(file, marker, { mode: 0o644 });
    } catch (e) {
        t.skip(`cannot plant a secret in ${os.homedir()}: ${e.message}`);
        return;
    }
    t.after(() => fs.rmSync(file, { force: true }));
    const d = shared;
    const r = await run(d, [
        'import os',
        `M = ${JSON.stringify(marker)}`,
        `for p in (${JSON.stringify(file)}, "/root/" + M + ".txt", "/proc/1/root/root/" + M + ".txt"):`,
        '    try:',
        '        print("LEAK" if open(p).read() == M else "other")',
        '    except OSError as e:',
        '        print("refused", e.errno)',
        'print(os.path.exists("/root"), os.path.exists("/home"))',
    ].join('\n'));
    assert.ok(!r.sc.stdout.includes('LEAK'), summarize(r));
    assert.match(r.sc.stdout, /False False\n/, summarize(r));
});

test('a secret in the daemon\'s working directory is not readable', async (t) => {
    const marker = uniqueMarker('bb-cwd-secret');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bb-escape-'));
    fs.writeFileSync(path.join(dir, 'secret.txt'), marker, { mode: 0o644 });
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const old = process.cwd();
    process.chdir(dir);   // the daemon inherits it
    let d;
    try {
        d = await startDaemon(t);
    } finally {
        process.chdir(old);
    }
    const r = await run(d, [
        'import os',
        `for p in (${JSON.stringify(path.join(dir, 'secret.txt'))}, "secret.txt", "/proc/1/cwd/secret.txt"):`,
        '    try:',
        '        print(open(p).read())',
        '    except OSError as e:',
        '        print("refused", e.errno)',
        'print(os.getcwd(), sorted(os.listdir(".")))',
    ].join('\n'));
    assert.ok(!r.sc.stdout.includes(marker), `the secret leaked: ${summarize(r)}`);
    assert.match(r.sc.stdout, /^\/tmp \[/m, summarize(r));
});

for (const p of ['/usr/bin/escape', '/usr/lib/python3/dist-packages/escape.py', '/etc/escape', '/etc/passwd', '/escape']) {
    test(`writing ${p} fails (read-only view of the system)`, async (t) => {
        const d = shared;
        const v = await verdict(d, tryIt(`open(${JSON.stringify(p)}, "a").write("x")`));
        assert.equal(v.ok, false, JSON.stringify(v));
        assert.ok(['EROFS', 'EACCES'].includes(v.err), JSON.stringify(v));
    });
}

test('nothing of the host\'s /run, /home, /root, /var, /srv, /mnt, /media, /boot, /sys is visible', async (t) => {
    const d = shared;
    const v = await verdict(d, 'import json, os\nprint(json.dumps([p for p in ("/run", "/home", "/root", "/var", "/srv", "/mnt", "/media", "/boot", "/sys", "/opt") if os.path.exists(p)]))');
    assert.deepEqual(v, []);
});

test('/dev holds only null zero full random urandom', async (t) => {
    const d = shared;
    const v = await verdict(d, 'import json, os\nprint(json.dumps(sorted(n for n in os.listdir("/dev") if not os.path.islink("/dev/" + n))))');
    assert.deepEqual(v, ['full', 'null', 'random', 'urandom', 'zero']);
});

test('/proc/sys and /proc/sysrq-trigger cannot be written', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        'import json, errno',
        'out = {}',
        'for p in ("/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger"):',
        '    try:',
        '        open(p, "w").write("1"); out[p] = "written"',
        '    except OSError as e:',
        '        out[p] = errno.errorcode[e.errno]',
        'print(json.dumps(out))',
    ].join('\n'));
    for (const [p, e] of Object.entries(v)) assert.ok(['EROFS', 'EACCES', 'ENOENT'].includes(e), `${p}: ${e}`);
});

// Docker's masked paths, plus /proc/cmdline (the host's kernel command line) and /proc/config.gz:
// each either absent on this kernel or empty (an empty read-only tmpfs, /dev/null).
test('/proc/kcore, keys, timer_list, sched_debug, cmdline, config.gz, acpi, scsi… are masked: empty or absent', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        'import json, os',
        'out = {}',
        'for p in ("/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/key-users", "/proc/latency_stats",',
        '          "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/proc/cmdline", "/proc/config.gz"):',
        '    if not os.path.lexists(p):',
        '        out[p] = "absent"',
        '    elif os.path.isdir(p):',
        '        out[p] = "empty dir" if not os.listdir(p) else "dir: " + ",".join(os.listdir(p)[:3])',
        '    else:',
        '        try:',
        '            data = open(p, "rb").read(64)',
        '            out[p] = "empty file" if not data else "read: " + repr(data[:32])',
        '        except OSError as e:',
        '            out[p] = "unreadable: " + e.strerror',
        '    if out[p].startswith("empty dir"):',
        '        try:',
        '            open(p + "/x", "w"); out[p] = "writable"',
        '        except OSError:',
        '            pass',
        'print(json.dumps(out))',
    ].join('\n'));
    for (const [p, what] of Object.entries(v))
        assert.ok(['absent', 'empty dir', 'empty file'].includes(what), `${p}: ${what}`);
    // What the host's kernel has must be there in the run and masked, not merely missing.
    for (const [p, what] of Object.entries(v))
        if (fs.existsSync(p)) assert.notEqual(what, 'absent', `${p} exists on the host`);
    assert.equal(v['/proc/cmdline'], 'empty file');
});

test('/proc/self/mountinfo shows only the run\'s own mounts (no host root, /home, /var, /run)', async (t) => {
    const d = shared;
    const v = await verdict(d, 'import json\nprint(json.dumps([l.split()[4] for l in open("/proc/self/mountinfo")]))');
    assert.ok(v.includes('/') && v.includes('/usr') && v.includes('/proc') && v.includes('/tmp'), JSON.stringify(v));
    for (const m of v) assert.ok(!/^\/(home|var|run|root|srv|boot)(\/|$)/.test(m), `mount point ${m}: ${JSON.stringify(v)}`);
});

// ---- processes: the daemon, PID 1, ptrace ---------------------------------------------------

test('/proc/1 is the run\'s own init: its root, environ and memory are closed to the run', async (t) => {
    const d = shared;
    const r = await run(d, [
        'import json, errno, os',
        'out = {}',
        'for p in ("/proc/1/root/etc/hostname", "/proc/1/environ", "/proc/1/mem", "/proc/1/cwd"):',
        '    try:',
        '        out[p] = "opened: " + (os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(4096).decode("latin1"))',
        '    except OSError as e:',
        '        out[p] = errno.errorcode[e.errno]',
        'print(json.dumps(out))',
    ].join('\n'));
    assert.ok(!r.sc.stdout.includes(TOKEN), `the token leaked: ${summarize(r)}`);
    const v = JSON.parse(r.sc.stdout);
    for (const [p, e] of Object.entries(v)) assert.equal(e, 'EACCES', `${p}: ${e}`);
});

// Issue 15.4: from the host, as root, every process between the daemon and the run's Python (the
// run's init, Python itself) is read whole (environ, cmdline, every readable mapping through
// /proc/<pid>/mem) while the run's code is running. Neither the daemon's token nor the code of an
// earlier call may be there. The daemon itself must show the token (its environment): the scan
// can see what it looks for. The daemon's memory is not read: under ASan its shadow is terabytes
// of readable mappings; mappings over 1 GiB are skipped for the same reason.
const SCAN = [
    'import json, os, re, sys',
    'needles = [n.encode() for n in sys.argv[2:]]',
    'def scan(pid, memory=True):',
    '    found = set()',
    '    for f in ("environ", "cmdline"):',
    '        data = open(f"/proc/{pid}/{f}", "rb").read()',
    '        found |= {f"{f}:{n.decode()}" for n in needles if n in data}',
    '    if not memory: return sorted(found)',
    '    mem = open(f"/proc/{pid}/mem", "rb", 0)',
    '    for line in open(f"/proc/{pid}/maps"):',
    '        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)',
    '        if not m or "[vsyscall]" in line or "[vvar]" in line or int(m[2], 16) - int(m[1], 16) > 1 << 30: continue',
    '        try:',
    '            mem.seek(int(m[1], 16)); data = mem.read(int(m[2], 16) - int(m[1], 16))',
    '        except OSError: continue',
    '        found |= {f"mem:{n.decode()}" for n in needles if n in data}',
    '    return sorted(found)',
    'def children(pid):',
    '    out = []',
    '    for p in os.listdir("/proc"):',
    '        try:',
    '            if p.isdigit() and int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]) == pid: out.append(int(p))',
    '        except OSError: pass',
    '    return out',
    'daemon = int(sys.argv[1])',
    'procs, todo = [], children(daemon)',
    'while todo:',
    '    p = todo.pop(0); todo += children(p)',
    '    procs.append({"pid": p, "comm": open(f"/proc/{p}/comm").read().strip(), "found": scan(p)})',
    'print(json.dumps({"daemon": scan(daemon, memory=False), "run": procs}))',
].join('\n');

test('the token and earlier calls\' code are in no process between the daemon and the run\'s Python (host view: environ, cmdline, memory)', { skip: process.getuid?.() !== 0 && 'needs root (reads the run\'s memory from the host)' }, async (t) => {
    const d = shared;
    const earlier = uniqueMarker('bb-earlier-call');
    await run(d, `s = "${earlier}"\nprint(len(s))`);
    const started = uniqueMarker('bb-started');
    const call = run(d, `import sys, time\nprint("${started}", flush=True)\ntime.sleep(12)`, { timeout_s: 40 });
    // The run is up once its Python is there: a descendant of the daemon named python3.
    let v;
    for (let i = 0; i < 100; i++) {
        v = await new Promise((resolve, reject) =>
            execFile('python3', ['-c', SCAN, String(d.pid), TOKEN, earlier], { timeout: 60000, maxBuffer: 1 << 20 },
                (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout)))));
        if (v.run.some((p) => /^python/.test(p.comm))) break;
        await sleep(100);
    }
    await call;
    t.diagnostic(JSON.stringify(v));
    assert.ok(v.daemon.includes(`environ:${TOKEN}`), `the scan does not find the token in the daemon: ${JSON.stringify(v)}`);
    const comms = v.run.map((p) => p.comm);
    assert.ok(comms.includes('sandbox-init') && comms.some((c) => /^python/.test(c)), `the run's processes: ${JSON.stringify(v.run)}`);
    for (const p of v.run) assert.deepEqual(p.found, [], `${p.comm} (pid ${p.pid}) holds the daemon's data: ${JSON.stringify(v.run)}`);
});

// Issue 15.4: an unprivileged daemon's runs share its uid with their PID 1 (65532 inside maps to
// the daemon's uid), so ptrace rules alone would let a run open /proc/1/mem read-write and make
// PID 1 report whatever exit and accounting it likes. PID 1 is not dumpable before Python runs.
test('as an unprivileged daemon (the run shares PID 1\'s uid): /proc/1/mem, environ, fd and root are closed to the run', { skip: process.getuid?.() !== 0 && 'needs root (a uid of its own)' }, async (t) => {
    const uid = 30000 + ((process.pid + 11) % 20000);
    const { dir, binary, tmp } = daemonCopyForUid(uid, 'mcp-execd-pid1.');
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const d = RawDaemon.spawn(t, { binary, uid, gid: uid, env: { TMPDIR: tmp, HOME: tmp, MCP_EXEC_CGROUP: 'none' } });
    await d.initialize('2025-11-25', 30000);
    const id = d.callExec({ code: [
        'import errno, json, os',
        'out = {"same_uid": int(open("/proc/1/status").read().split("Uid:")[1].split()[0]) == os.getuid()}',
        'for p, mode in (("/proc/1/mem", "r+b"), ("/proc/1/environ", "rb"), ("/proc/1/fd", None), ("/proc/1/root/", None)):',
        '    try:',
        '        os.listdir(p) if mode is None else open(p, mode)',
        '        out[p] = "opened"',
        '    except OSError as e:',
        '        out[p] = errno.errorcode[e.errno]',
        // Issue 29.8: the same uid is all prlimit(2) asks; PID 1 with no files could not read the
        // run's account. Setting one's own limits, and reading PID 1's, stay allowed.
        'import resource',
        'try:',
        '    resource.prlimit(1, resource.RLIMIT_NOFILE, (0, 0))',
        '    out["prlimit_pid1"] = "set"',
        'except OSError as e:',
        '    out["prlimit_pid1"] = errno.errorcode[e.errno]',
        'out["prlimit_pid1_read"] = resource.prlimit(1, resource.RLIMIT_NOFILE)[0] > 0',
        'resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))',
        'out["own"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]',
        'print(json.dumps(out))',
    ].join('\n') });
    const r = await d.response(id, 60000);
    assert.equal(r.result?.isError, false, JSON.stringify(r).slice(0, 600));
    const v = JSON.parse(r.result.structuredContent.stdout);
    t.diagnostic(JSON.stringify(v));
    assert.equal(v.same_uid, true);
    for (const p of ['/proc/1/mem', '/proc/1/environ', '/proc/1/fd', '/proc/1/root/'])
        assert.equal(v[p], 'EACCES', `${p}: ${JSON.stringify(v)}`);
    assert.equal(v.prlimit_pid1, 'EPERM', JSON.stringify(v));
    assert.equal(v.prlimit_pid1_read, true, JSON.stringify(v));
    assert.equal(v.own, 64, JSON.stringify(v));
    // and PID 1 still reads the account: the run's CPU is there
    const again = await d.response(d.callExec({ code: 'sum(i * i for i in range(3000000))' }), 60000);
    assert.ok(again.result.structuredContent.cpu_user_us + again.result.structuredContent.cpu_system_us > 0, JSON.stringify(again.result.structuredContent));
});

test('the daemon\'s pid is not visible in the run\'s /proc, and kill(daemon pid) does not reach it', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        'import json, os, signal',
        `pid = ${d.pid}`,
        'pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())',
        'try:',
        '    os.kill(pid, signal.SIGKILL); k = "sent"',
        'except ProcessLookupError:',
        '    k = "ESRCH"',
        'print(json.dumps({"pids": pids, "self": os.getpid(), "kill": k}))',
    ].join('\n'));
    assert.deepEqual(v.pids, [1, v.self], `the run sees other processes: ${JSON.stringify(v)}`);
    if (d.pid !== 1 && d.pid !== v.self) assert.equal(v.kill, 'ESRCH', JSON.stringify(v));
    await d.client.ping();   // the daemon is alive
    const again = await run(d, 'print("still serving")');
    assert.equal(again.sc.stdout, 'still serving\n');
});

test('SIGKILL to PID 1 and kill(-1) from the run leave the daemon and the run\'s init standing', async (t) => {
    const d = shared;
    const r = await run(d, [
        'import os, signal, sys',
        'try:',
        '    os.kill(1, signal.SIGKILL)',
        '    print("pid1: sent", flush=True)',   // same host uid (unprivileged daemon): sent, and dropped
        'except PermissionError:',
        '    print("pid1: EPERM", flush=True)',
        'print("pid1 alive:", os.path.exists("/proc/1/status"), flush=True)',
        'import subprocess',
        'p = subprocess.Popen(["sleep", "30"])',
        'os.kill(-1, signal.SIGKILL)',         // every process the run may signal but itself and PID 1
        'print("sleeper:", p.wait(), flush=True)',
    ].join('\n'));
    assert.match(r.sc.stdout, /^pid1: (EPERM|sent)\npid1 alive: True\nsleeper: -9\n$/, summarize(r));
    assert.equal(r.sc.exit_code, 0, summarize(r));
    await d.client.ping();
    const again = await run(d, 'print("alive")');
    assert.equal(again.sc.stdout, 'alive\n');
});

test('ptrace: PTRACE_ATTACH to PID 1 and PTRACE_TRACEME are refused', async (t) => {
    const d = shared;
    const v = await syscallVerdicts(d, { attach: 'sc(101, 16, 1, 0, 0)', traceme: 'sc(101, 0, 0, 0, 0)' });
    assert.deepEqual(v, { attach: 'EPERM', traceme: 'EPERM' });
});

test('mount (tmpfs, bind, proc) is refused', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        SYSCALL,
        'r = {}',
        'for args in ((b"none", b"/tmp", b"tmpfs", 0), (b"/usr", b"/tmp", None, 4096), (b"proc", b"/tmp", b"proc", 0)):',
        '    r[str(args[1:3])] = errno.errorcode.get(-libc.mount(*args, None) and ctypes.get_errno(), "OK")',
        'print(json.dumps(sorted(set(r.values()))))',
    ].join('\n'));
    assert.deepEqual(v, ['EPERM']);
});

test('unshare of every namespace kind is refused', async (t) => {
    const d = shared;
    const flags = { user: 0x10000000, net: 0x40000000, mnt: 0x00020000, pid: 0x20000000, ipc: 0x08000000, uts: 0x04000000, cgroup: 0x02000000, time: 0x80 };
    const v = await syscallVerdicts(d, Object.fromEntries(Object.entries(flags).map(([k, f]) => [k, `sc(272, ${f})`])));
    for (const [k, e] of Object.entries(v)) assert.equal(e, 'EPERM', `unshare ${k}: ${e}`);
});

test('setns into PID 1\'s namespaces is refused', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        SYSCALL,
        'out = {}',
        'for ns in ("net", "mnt", "user", "pid"):',
        '    try:',
        '        fd = os.open(f"/proc/self/ns/{ns}", os.O_RDONLY)',
        '    except OSError as e:',
        '        out[ns] = "open " + errno.errorcode[e.errno]; continue',
        '    out[ns] = sc(308, fd, 0)',
        'print(json.dumps(out))',
    ].join('\n'));
    for (const [k, e] of Object.entries(v)) assert.ok(e === 'EPERM' || e.startsWith('open '), `setns ${k}: ${e}`);
});

test('clone3 is ENOSYS and clone() with namespace flags is refused; plain threads still work', async (t) => {
    const d = shared;
    const v = await syscallVerdicts(d, {
        clone3: 'sc(435, 0, 0)',
        clone_newuser: 'sc(56, 0x10000000 | 17, 0, 0, 0, 0)',
        clone_newnet: 'sc(56, 0x40000000 | 17, 0, 0, 0, 0)',
    }, ['import threading', 'th = threading.Thread(target=lambda: None); th.start(); th.join()']);
    assert.deepEqual(v, { clone3: 'ENOSYS', clone_newuser: 'EPERM', clone_newnet: 'EPERM' });
});

test('io_uring_setup is refused (IORING_OP_SOCKET would bypass the socket filter)', async (t) => {
    const d = shared;
    const v = await syscallVerdicts(d, {
        setup: 'sc(425, 8, ctypes.addressof(params))',
        enter: 'sc(426, 0, 1, 0, 0, 0, 0)',
        register: 'sc(427, 0, 0, 0, 0)',
    }, ['params = ctypes.create_string_buffer(120)']);
    assert.deepEqual(v, { setup: 'EPERM', enter: 'EPERM', register: 'EPERM' });
});

test('keyctl, bpf, perf_event_open, userfaultfd, kexec, init_module, open_by_handle_at are refused', async (t) => {
    const d = shared;
    const v = await syscallVerdicts(d, {
        keyctl: 'sc(250, 0, 0)',
        add_key: 'sc(248, 0, 0, 0, 0, 0)',
        bpf: 'sc(321, 0, 0, 0)',
        perf_event_open: 'sc(298, 0, 0, -1, -1, 0)',
        userfaultfd: 'sc(323, 0)',
        kexec_load: 'sc(246, 0, 0, 0, 0)',
        init_module: 'sc(175, 0, 0, 0)',
        open_by_handle_at: 'sc(304, 0, 0, 0)',
    });
    for (const [k, e] of Object.entries(v)) assert.equal(e, 'EPERM', `${k}: ${e}`);
});

test('memfd_secret is refused', async (t) => {
    const d = shared;
    const v = await syscallVerdicts(d, { memfd_secret: 'sc(447, 0)' });
    assert.deepEqual(v, { memfd_secret: 'EPERM' });
});

test('an x32 system call kills the run with SIGSYS', async (t) => {
    const d = shared;
    const r = await run(d, 'import ctypes\nprint("before", flush=True)\nctypes.CDLL(None).syscall(0x40000000 | 39)\nprint("survived")');
    assert.equal(r.sc.stdout, 'before\n', summarize(r));
    assert.equal(r.sc.signal, 'SIGSYS', summarize(r));
    assert.equal(r.sc.exit_code, -31, summarize(r));
});

test('an ia32 system call (int 0x80) kills the run with SIGSYS', async (t) => {
    const d = shared;
    // mmap an executable page holding: mov eax, 20 (getpid); int 0x80; ret
    const r = await run(d, [
        'import ctypes, mmap',
        'code = bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])',
        'm = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)',
        'm.write(code)',
        'f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))',
        'print("before", flush=True)',
        'f()',
        'print("survived")',
    ].join('\n'));
    assert.equal(r.sc.stdout, 'before\n', summarize(r));
    // SIGSYS from the filter's bad-architecture action; SIGSEGV on a kernel without ia32 emulation.
    t.diagnostic(`signal ${r.sc.signal}`);
    assert.ok(['SIGSYS', 'SIGSEGV'].includes(r.sc.signal), summarize(r));
});

// ---- privileges -----------------------------------------------------------------------------

test('a setuid-root binary gains nothing (nosuid, no_new_privs)', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        'import json, os, subprocess',
        'b = "/usr/bin/mount"',
        'suid = os.path.exists(b) and bool(os.stat(b).st_mode & 0o4000)',
        'r = subprocess.run([b, "-t", "tmpfs", "none", "/tmp"], capture_output=True, text=True) if suid else None',
        'mounts = [l.split()[4] for l in open("/proc/self/mountinfo")].count("/tmp")',
        'print(json.dumps({"suid": suid, "rc": r and r.returncode, "tmp_mounts": mounts, "nosuid": bool(os.statvfs("/usr").f_flag & os.ST_NOSUID)}))',
    ].join('\n'));
    assert.equal(v.nosuid, true, JSON.stringify(v));
    assert.equal(v.tmp_mounts, 1, JSON.stringify(v));
    if (v.suid) assert.notEqual(v.rc, 0, JSON.stringify(v));
});

test('no capabilities in any set (effective, permitted, inheritable, ambient, bounding)', async (t) => {
    const d = shared;
    const v = await verdict(d, 'import json\nprint(json.dumps({l.split(":")[0]: l.split()[1] for l in open("/proc/self/status") if l.startswith("Cap")}))');
    assert.deepEqual(v, { CapInh: '0000000000000000', CapPrm: '0000000000000000', CapEff: '0000000000000000', CapBnd: '0000000000000000', CapAmb: '0000000000000000' });
});

test('no_new_privs is set and seccomp is in filter mode', async (t) => {
    const d = shared;
    const v = await verdict(d, 'import json\nprint(json.dumps({l.split(":")[0]: l.split()[1] for l in open("/proc/self/status") if l.startswith(("NoNewPrivs", "Seccomp:"))}))');
    assert.deepEqual(v, { NoNewPrivs: '1', Seccomp: '2' });
});

test('uid and gid are 65532 ("sandbox"), with no supplementary groups, and not root', async (t) => {
    const d = shared;
    const v = await verdict(d, 'import json, os, pwd\nprint(json.dumps([os.getresuid(), os.getresgid(), os.getgroups(), pwd.getpwuid(os.getuid()).pw_name]))');
    assert.deepEqual(v, [[65532, 65532, 65532], [65532, 65532, 65532], [], 'sandbox']);
});

test('the environment holds none of the daemon\'s variables', async (t) => {
    const d = shared;
    const r = await run(d, 'import os\nprint(sorted(os.environ))\nprint(open("/proc/self/environ", "rb").read())');
    assert.ok(!r.sc.stdout.includes(MARKER) && !r.sc.stdout.includes(TOKEN), `the marker leaked: ${summarize(r)}`);
    assert.ok(!/MCP_EXEC|BLACKBOX/.test(r.sc.stdout), summarize(r));
});

test('the fd table holds only 0, 1 and 2', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        'import fcntl, json',
        'def is_open(fd):',
        '    try:',
        '        fcntl.fcntl(fd, fcntl.F_GETFD); return True',
        '    except OSError:',
        '        return False',
        'print(json.dumps([fd for fd in range(4096) if is_open(fd)]))',
    ].join('\n'));
    // In a session, fd 3 is the launcher's private copy of the session's own stdin pipe (its next
    // call's message; fd 0 is /dev/null for the code), close-on-exec: no fd of the daemon either.
    assert.deepEqual(v, SESSION ? [0, 1, 2, 3] : [0, 1, 2]);
});

test('hostname is "sandbox" and cannot be changed', async (t) => {
    const d = shared;
    const v = await verdict(d, `${SYSCALL}\nimport socket\nr = libc.sethostname(b"pwned", 5)\nprint(json.dumps([socket.gethostname(), errno.errorcode[ctypes.get_errno()] if r else "OK"]))`);
    assert.deepEqual(v, ['sandbox', 'EPERM']);
});

// ---- runs and each other --------------------------------------------------------------------

test('a file written in one run is gone in the next', async (t) => {
    const d = shared;
    const marker = uniqueMarker('bb-left');
    await run(d, `open("/tmp/${marker}", "w").write("x")\nopen("${marker}-cwd", "w").write("x")`);
    const v = await verdict(d, `import json, os\nprint(json.dumps([os.path.exists("/tmp/${marker}"), os.path.exists("${marker}-cwd"), sorted(os.listdir("/tmp"))]))`);
    assert.equal(v[0], false);
    assert.equal(v[1], false);
    assert.ok(!v[2].some((n) => n.includes(marker)), JSON.stringify(v));
});

test('two concurrent runs see neither each other\'s files nor processes', async (t) => {
    const d = shared;   // MCP_EXEC_MAX_CONCURRENT=2
    const look = (me, other) => [
        'import json, os, time',
        `open("/tmp/${me}", "w").write("${me}")`,
        'seen = {"files": set(), "pids": set()}',
        'for _ in range(15):',
        '    seen["files"] |= set(os.listdir("/tmp"))',
        '    seen["pids"] |= {p for p in os.listdir("/proc") if p.isdigit()}',
        '    time.sleep(0.1)',
        `print(json.dumps({"other": "${other}" in seen["files"], "pids": sorted(seen["pids"]), "me": os.getpid()}))`,
    ].join('\n');
    const [a, b] = await Promise.all([run(d, look('run-a', 'run-b')), run(d, look('run-b', 'run-a'))]);
    for (const r of [a, b]) {
        const v = JSON.parse(r.sc.stdout);
        assert.equal(v.other, false, summarize(r));
        assert.deepEqual(v.pids, ['1', String(v.me)], summarize(r));
    }
});

test('filling /tmp stops at MCP_EXEC_TMP_SIZE with ENOSPC', async (t) => {
    const d = shared;   // MCP_EXEC_TMP_SIZE=8M
    const v = await verdict(d, [
        'import json, errno',
        'n = 0',
        'try:',
        '    with open("/tmp/fill", "wb") as f:',
        '        while n < 64 << 20:',
        '            f.write(b"x" * 65536); f.flush(); n += 65536',
        '    e = None',
        'except OSError as ex:',
        '    e = errno.errorcode[ex.errno]',
        'print(json.dumps({"err": e, "mib": n / 1048576}))',
    ].join('\n'));
    // A session's /tmp holds no main.py: the file reaches exactly the tmpfs size, which is also
    // RLIMIT_FSIZE in rlimit mode, so the write past it may meet EFBIG first. The cap holds alike.
    if (SESSION && v.err === 'EFBIG') assert.equal(v.mib, 8, JSON.stringify(v));
    else assert.equal(v.err, 'ENOSPC', JSON.stringify(v));
    assert.ok(v.mib >= 7 && v.mib <= 8, JSON.stringify(v));
});

// Issue 15 #6: what size= does not count. The shared daemon's /tmp is 8M, so nr_inodes is 2048
// (one per 4 KiB); without it the run made 300 000 empty files (306 MB of kernel memory).
test('empty files in /tmp stop at the inode bound with ENOSPC (not 20 000), and the daemon runs the next call', async (t) => {
    const d = shared;
    const v = await verdict(d, [
        'import errno, json, os',
        'os.mkdir("/tmp/many")',
        'n, e = 0, None',
        'try:',
        '    while n < 20000:',
        '        os.close(os.open("/tmp/many/%d" % n, os.O_CREAT | os.O_WRONLY, 0o600)); n += 1',
        'except OSError as ex:',
        '    e = errno.errorcode[ex.errno]',
        'print(json.dumps({"err": e, "n": n}))',
    ].join('\n'));
    assert.equal(v.err, 'ENOSPC', JSON.stringify(v));
    assert.ok(v.n > 1500 && v.n <= 2048, JSON.stringify(v));
    const r = await run(d, 'print("after")');
    assert.equal(r.sc.stdout, 'after\n', summarize(r));
});

// Issue 15 #6: in rlimit mode nothing charges SysV IPC or POSIX message queues to the run (a run
// held 128 MiB of SysV shm under MCP_EXEC_MEMORY_MAX=128M): they are refused with ENOSPC.
const rlimitMode = (process.env.BLACKBOX_CGROUP ?? 'none') === 'none';
test('rlimit mode: SysV shm (512 MiB over a 128M memory limit), msgget and semget are refused with ENOSPC; the daemon runs the next call', { skip: !rlimitMode && 'a cgroup charges them to memory.max' }, async (t) => {
    const d = await startDaemon(null, { env: { MCP_EXEC_MEMORY_MAX: '128M' } });
    t.after(() => d.close());
    const r = await run(d, [
        'import ctypes, errno, json',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'IPC_PRIVATE, IPC_CREAT = 0, 0o1000',
        'def err(r):',
        '    return "OK" if r >= 0 else errno.errorcode[ctypes.get_errno()]',
        'libc.shmat.restype = ctypes.c_void_p',
        'shm = []',
        'for i in range(8):',  // 8 x 64 MiB, each attached and touched
        '    sid = libc.shmget(IPC_PRIVATE, ctypes.c_size_t(64 << 20), IPC_CREAT | 0o600)',
        '    shm.append(err(sid))',
        '    if sid < 0: break',
        '    a = libc.shmat(sid, None, 0)',
        '    if a not in (None, ctypes.c_void_p(-1).value): ctypes.memset(a, 1, 64 << 20)',
        'print(json.dumps({"shm": shm, "msg": err(libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600)),',
        '                  "sem": err(libc.semget(IPC_PRIVATE, 1, IPC_CREAT | 0o600))}))',
    ].join('\n'));
    assert.equal(r.sc.limits, 'rlimit');
    const v = JSON.parse(r.sc.stdout.trim().split('\n').pop());
    assert.deepEqual(v, { shm: ['ENOSPC'], msg: 'ENOSPC', sem: 'ENOSPC' }, summarize(r));
    const after = await run(d, 'print("after")');
    assert.equal(after.sc.stdout, 'after\n', summarize(after));
});

test('rlimit mode: POSIX mq_open is refused with ENOSPC; the daemon runs the next call', { skip: !rlimitMode && 'a cgroup charges them to memory.max' }, async (t) => {
    const d = shared;
    const r = await run(d, [
        'import ctypes, errno, json, os',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'out = []',
        'for i in range(64):',
        '    q = libc.mq_open(b"/bb-q%d" % i, os.O_CREAT | os.O_RDWR, 0o600, None)',
        '    out.append("OK" if q >= 0 else errno.errorcode[ctypes.get_errno()])',
        '    if q < 0: break',
        'print(json.dumps(out))',
    ].join('\n'));
    assert.equal(r.sc.limits, 'rlimit');
    assert.deepEqual(JSON.parse(r.sc.stdout.trim().split('\n').pop()), ['ENOSPC'], summarize(r));
    const after = await run(d, 'print("after")');
    assert.equal(after.sc.stdout, 'after\n', summarize(after));
});

// ---- it still works -------------------------------------------------------------------------

// matplotlib builds its font cache on first import (seconds; minutes on a loaded machine).
test('the scientific stack imports; numpy, pandas and matplotlib (Agg, savefig to /tmp) work', { timeout: 300000 }, async (t) => {
    const d = shared;
    const r = await run(d, [
        'import json, os, yaml, jinja2, PIL.Image, numpy, pandas, matplotlib',
        'import matplotlib.pyplot as plt',
        'a = numpy.arange(6.0).reshape(2, 3)',
        'df = pandas.DataFrame({"x": [1, 2, 3]})',
        'plt.plot(df.x); plt.savefig("/tmp/fig.png")',
        'print(json.dumps({"backend": matplotlib.get_backend().lower(), "dot": float((a @ a.T).sum()), "sum": int(df.x.sum()),',
        '                  "png": os.path.getsize("/tmp/fig.png") > 1000, "size": PIL.Image.open("/tmp/fig.png").size[0] > 100,',
        '                  "yaml": yaml.safe_load("a: 1"), "jinja": jinja2.Template("{{ x }}").render(x=5)}))',
    ].join('\n'), { timeout_s: 240 });
    assert.deepEqual(JSON.parse(r.sc.stdout), { backend: 'agg', dot: 83, sum: 6, png: true, size: true, yaml: { a: 1 }, jinja: '5' }, summarize(r));
});

// Issue 15.1: the kernel charges a run's inotify instances and watches, POSIX message-queue bytes
// and queued signals to the daemon's user (here root) at every level up to the host. Runs hold all
// they can (as many at once as the daemon allows, MCP_EXEC_MAX_CONCURRENT = 2 here) while the test
// calls inotify_init1 and mq_open as that user on the host, over and over; each run says when it
// held everything and when it let go (wall clock: no time namespace), so the test knows which of
// its checks overlapped all runs holding instead of guessing a delay.
const HOLD_ALL = [
    'import ctypes, errno, json, os, resource, sys, time',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'def en(): return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))',
    'ino, ino_err = [], None',
    'while len(ino) < 4096:',
    '    fd = libc.inotify_init1(os.O_CLOEXEC)',
    '    if fd < 0: ino_err = en(); break',
    '    ino.append(fd)',
    'try: rt = ctypes.CDLL("librt.so.1", use_errno=True); rt.mq_open',
    'except (OSError, AttributeError): rt = libc',
    'rt.mq_open.restype = ctypes.c_int',
    'mq, mq_err = [], None',
    'while len(mq) < 1024:',
    '    fd = rt.mq_open(("/h15d-%d" % len(mq)).encode(), os.O_CREAT | os.O_RDWR, ctypes.c_int(0o600), None)',
    '    if fd < 0: mq_err = en(); break',
    '    mq.append(fd)',
    'lim = open("/proc/sys/user/max_inotify_instances").read().strip()',
    'wlim = open("/proc/sys/user/max_inotify_watches").read().strip()',
    'held = time.time()',
    'time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 8)',
    'print(json.dumps({"ino": len(ino), "ino_err": ino_err, "mq": len(mq), "mq_err": mq_err,',
    '                  "ino_lim": int(lim), "watch_lim": int(wlim),',
    '                  "sigpending": resource.getrlimit(resource.RLIMIT_SIGPENDING)[0],',
    '                  "msgqueue": resource.getrlimit(resource.RLIMIT_MSGQUEUE)[0],',
    '                  "held": held, "released": time.time()}))',
].join('\n');

// On the host, as the test's (the daemon's) user: one inotify_init1 and one mq_open every 0.1 s, a
// JSON line each, until its stdin closes. One process, started (and its first check seen) before
// the runs: a check of its own per moment would pay Python's start each time, and on a loaded
// machine none might land while the runs hold.
const HOST_CHECKER = [
    'import ctypes, errno, json, os, select, sys, time',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'def en(): return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))',
    'try: rt = ctypes.CDLL("librt.so.1", use_errno=True); rt.mq_open',
    'except (OSError, AttributeError): rt = libc',
    'name = ("/bb-h15d-%d" % os.getpid()).encode()',
    'while True:',
    '    t = time.time()',
    '    fd = libc.inotify_init1(os.O_CLOEXEC)',
    '    ino = "OK" if fd >= 0 else en()',
    '    if fd >= 0: os.close(fd)',
    '    q = rt.mq_open(name, os.O_CREAT | os.O_RDWR, ctypes.c_int(0o600), None)',
    '    mq = "OK" if q >= 0 else en()',
    '    if q >= 0: os.close(q); rt.mq_unlink(name)',
    '    print(json.dumps({"t": t, "inotify": ino, "mq": mq}), flush=True)',
    '    if select.select([sys.stdin], [], [], 0.1)[0] and not sys.stdin.read(1): break',
].join('\n');

// Starts the checker and resolves once its first check is in; stop() ends it and gives every check.
function hostChecker(ids = {}) {
    const p = spawn('python3', ['-c', HOST_CHECKER], { cwd: '/', stdio: ['pipe', 'pipe', 'inherit'], ...ids });
    const checks = [];
    let buf = '';
    let first;
    const ready = new Promise((resolve, reject) => { first = resolve; p.on('error', reject); });
    p.stdout.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
            checks.push(JSON.parse(buf.slice(0, i)));
            buf = buf.slice(i + 1);
            first();
        }
    });
    const exited = new Promise((resolve) => p.on('close', resolve));
    return ready.then(() => ({
        stop: async () => { p.stdin.end(); await exited; return checks; },
    }));
}

test('runs holding all the inotify instances and message queues they can leave the host user\'s inotify_init1 and mq_open working', async (t) => {
    const runs = 2; // the shared daemon's MCP_EXEC_MAX_CONCURRENT
    // Every sandbox that may hold caller code at once shares the budgets: the runs and the Python
    // sessions (MCP_EXEC_PY_SESSIONS_MAX, its default 8 here; issue 29 #2).
    const sandboxes = runs + 8;
    const hostInstances = Number(fs.readFileSync('/proc/sys/fs/inotify/max_user_instances', 'utf8'));
    const hostWatches = Number(fs.readFileSync('/proc/sys/fs/inotify/max_user_watches', 'utf8'));
    // The daemon inherits the test's rlimits: its user's budgets as the sandbox sees them.
    const limits = fs.readFileSync('/proc/self/limits', 'utf8');
    const soft = (name) => Number(limits.split('\n').find((l) => l.startsWith(name)).slice(26).trim().split(/\s+/)[0]);
    const hostMsgqueue = soft('Max msgqueue size');
    const hostSigpending = soft('Max pending signals');
    const share = Math.floor(hostInstances / 2 / sandboxes);

    const checker = await hostChecker();
    const vs = await Promise.all(Array.from({ length: runs }, () => verdict(shared, HOLD_ALL, { timeout_s: 30 })));
    const checks = await checker.stop();
    const from = Math.max(...vs.map((v) => v.held));
    const to = Math.min(...vs.map((v) => v.released));
    const during = checks.filter((c) => c.t > from && c.t < to);
    t.diagnostic(`runs: ${JSON.stringify(vs)}; ${during.length} of ${checks.length} host checks while all held`);
    assert.ok(during.length > 0, `no host check ran while all ${runs} runs held (held ${from}, released ${to}): the checker ran every 0.1 s from before the runs`);
    for (const c of during)
        assert.deepEqual({ inotify: c.inotify, mq: c.mq }, { inotify: 'OK', mq: 'OK' }, `host check at ${c.t}: ${JSON.stringify(c)}`);

    for (const v of vs) {
        // Each run stopped at its own share with a clear error, not a crash.
        assert.equal(v.ino_lim, share, JSON.stringify(v));
        assert.equal(v.watch_lim, Math.floor(hostWatches / 2 / sandboxes), JSON.stringify(v));
        assert.ok(v.ino <= share, JSON.stringify(v));
        assert.equal(v.ino_err, 'EMFILE', JSON.stringify(v));
        // In rlimit mode the filter refuses mq_open outright (issue 15 #6); with a cgroup the run
        // gets its share and then EMFILE.
        assert.equal(v.mq_err, rlimitMode ? 'ENOSPC' : 'EMFILE', JSON.stringify(v));
        assert.equal(v.msgqueue, Math.floor(hostMsgqueue / 2 / sandboxes), JSON.stringify(v));
        assert.ok(v.mq * 10 * 8192 <= v.msgqueue, JSON.stringify(v));
        assert.equal(v.sigpending, Math.floor(hostSigpending / 2 / sandboxes), JSON.stringify(v));
    }
});

test('the same as an unprivileged daemon: its user keeps inotify_init1 and mq_open while a run holds all it can', { skip: process.getuid?.() !== 0 && 'needs root (a uid of its own)' }, async (t) => {
    // A uid of its own (its budgets then are the run's and the test's only) and a copy of the
    // daemon it may execute; one run at a time and no sessions, so the run's share is half the
    // user's budget.
    const uid = 30000 + ((process.pid + 7) % 20000);
    const { dir, binary, tmp } = daemonCopyForUid(uid, 'mcp-execd-budget.');
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const d = RawDaemon.spawn(t, { binary, uid, gid: uid,
                                   env: { TMPDIR: tmp, HOME: tmp, MCP_EXEC_CGROUP: 'none', MCP_EXEC_MAX_CONCURRENT: 1, MCP_EXEC_PY_SESSIONS_MAX: 0 } });
    await d.initialize('2025-11-25', 30000);
    const share = Math.floor(Number(fs.readFileSync('/proc/sys/fs/inotify/max_user_instances', 'utf8')) / 2);

    const checker = await hostChecker({ uid, gid: uid });
    const id = d.callExec({ code: HOLD_ALL, timeout_s: 30 });
    const r = await d.response(id, 60000);
    const checks = await checker.stop();
    const sc = r.result?.structuredContent;
    assert.equal(r.result?.isError, false, JSON.stringify(r).slice(0, 600));
    const v = JSON.parse(sc.stdout.trim().split('\n').pop());
    const during = checks.filter((c) => c.t > v.held && c.t < v.released);
    t.diagnostic(`run: ${JSON.stringify(v)}; ${during.length} of ${checks.length} host checks as uid ${uid} while it held`);
    assert.ok(during.length > 0, 'no host check ran while the run held, though the checker ran every 0.1 s from before it');
    for (const c of during)
        assert.deepEqual({ inotify: c.inotify, mq: c.mq }, { inotify: 'OK', mq: 'OK' }, `host check at ${c.t}: ${JSON.stringify(c)}`);
    assert.equal(v.ino_lim, share, JSON.stringify(v));
    assert.ok(v.ino <= share, JSON.stringify(v));
    assert.equal(v.ino_err, 'EMFILE', JSON.stringify(v));
    assert.equal(v.mq_err, rlimitMode ? 'ENOSPC' : 'EMFILE', JSON.stringify(v));
});
