// A session handle beyond what the load balancer reads (issue 29.8). The fleet's HAProxy
// (units/haproxy-mcp-execd.cfg as shipped, with this test's ports) buffers tune.bufsize (64 KiB)
// of a body and routes a call by the `session` argument it finds there. A call whose handle lies
// further on goes to any instance; one that lands on another instance than its session's is
// answered with an error naming that cause (from the header HAProxy adds), never "that instance is
// gone", which would send the agent to open a new session for nothing. A client's own copy of the
// header is dropped by HAProxy. (The systemd tier's 47-fleet drives the same file with units.)
// Then three tenants through the same fleet (issue 31.7).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from './lib/index.mjs';
import { startHttpDaemon, until } from './lib/http-daemon.mjs';
import { freePort } from './lib/pydeps.mjs';

const HAPROXY = '/usr/sbin/haproxy';
const CFG = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../units/haproxy-mcp-execd.cfg');
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** What HAProxy's admin socket answers to one command; '' when it cannot be reached. */
function haproxyCommand(sock, command) {
    return new Promise((resolve) => {
        let out = '';
        const c = net.connect(sock, () => c.end(`${command}\n`));
        c.on('data', (b) => { out += b; });
        c.on('error', () => resolve(''));
        c.on('close', () => resolve(out));
    });
}

/** HAProxy's "show stat" rows of backend mcp_execd: {server: {status, scur, weight}}. */
async function stats(sock) {
    const rows = {};
    for (const l of (await haproxyCommand(sock, 'show stat')).split('\n')) {
        const f = l.split(',');
        if (f[0] === 'mcp_execd' && f[1] !== 'FRONTEND' && f[1] !== 'BACKEND') rows[f[1]] = { scur: Number(f[4]), status: f[17], weight: Number(f[18]) };
    }
    return rows;
}

/** A 2026-07-28 tools/call through the load balancer: its JSON-RPC answer. */
async function call(lb, name, args, headers = {}) {
    const r = await fetch(`http://127.0.0.1:${lb}/mcp`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
                   'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': name, ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: META } }),
    });
    const text = await r.text();
    assert.equal(r.status, 200, text.slice(0, 500));
    return JSON.parse(text);
}
const answerText = (m) => m.error?.message ?? m.result?.content?.[0]?.text ?? '';

/** Two instances (with env) behind HAProxy as configured in units/haproxy-mcp-execd.cfg, a third
 * address down, each with its agent check (MCP_EXEC_AGENT_ADDR, the agent-port of its server):
 * {lb, sock, p1, p2, down, agents: {p1, p2}, daemons: {p1, p2}} once HAProxy sees both up. */
async function startFleet(t, env = {}) {
    const [p1, p2, down] = [await freePort(), await freePort(), await freePort()];
    const agents = { [p1]: await freePort(), [p2]: await freePort(), [down]: await freePort() };
    const daemons = {};
    for (const p of [p1, p2]) {
        daemons[p] = await startHttpDaemon(t, { port: p, env: { MCP_EXEC_INSTANCE: `i${p}`, MCP_EXEC_WARM_POOL: '0',
                                                                 MCP_EXEC_AGENT_ADDR: `127.0.0.1:${agents[p]}`, ...env } });
    }

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-execd-haproxy.'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const sock = path.join(dir, 'stats.sock');
    // The balancer's port is free when freePort() returns, not when HAProxy binds it: another
    // test's daemon may take it between the two (run 34: "cannot bind socket (Address already in
    // use)"). Then HAProxy exits, and it starts again on another port.
    let lb, hapOut = '';
    for (let attempt = 1; ; attempt++) {
        lb = await freePort();
        const cfg = fs.readFileSync(CFG, 'utf8')
            .replace('log /dev/log local0', `log stdout format raw local0\n\tstats socket ${sock} mode 600`)
            .replace('bind 127.0.0.1:8080', `bind 127.0.0.1:${lb}`)
            .replace('agent-port 18081', `agent-port ${agents[p1]}`).replace('agent-port 18082', `agent-port ${agents[p2]}`)
            .replace('agent-port 18083', `agent-port ${agents[down]}`)
            .replaceAll('8081', String(p1)).replaceAll('8082', String(p2)).replaceAll('8083', String(down));
        fs.writeFileSync(path.join(dir, 'haproxy.cfg'), cfg);
        const hap = spawn(HAPROXY, ['-f', path.join(dir, 'haproxy.cfg'), '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
        hapOut = '';
        hap.stdout.on('data', (b) => { hapOut += b; });
        hap.stderr.on('data', (b) => { hapOut += b; });
        t.after(() => hap.kill('SIGKILL'));
        const exited = new Promise((r) => hap.once('exit', () => r('exited')));
        const up = until(async () => { const s = await stats(sock); return s[`i${p1}`]?.status === 'UP' && s[`i${p2}`]?.status === 'UP'; }, 20000);
        const first = await Promise.race([up, exited]);
        if (first === true) break;
        if (first === 'exited' && /Address already in use/.test(hapOut) && attempt < 5) continue;
        assert.fail(`HAProxy does not see both instances up: ${JSON.stringify(await stats(sock))}\n${hapOut.slice(-2000)}`);
    }
    return { lb, sock, p1, p2, down, agents, daemons };
}

/** HAProxy's "show servers state mcp_execd": {server: srv_admin_state}, a mask of which
 * SRV_ADMF_FDRAIN is the drain an agent (or the CLI) set (HAProxy's include/haproxy/server-t.h). */
const SRV_ADMF_FDRAIN = 0x08;
async function adminState(sock) {
    const lines = (await haproxyCommand(sock, 'show servers state mcp_execd')).split('\n');
    const head = (lines.find((l) => l.startsWith('# ')) ?? '').slice(2).split(' ');
    const rows = {};
    for (const l of lines.filter((x) => /^\d+ /.test(x))) {
        const f = l.split(' ');
        rows[f[head.indexOf('srv_name')]] = Number(f[head.indexOf('srv_admin_state')]);
    }
    return rows;
}

/** The agent check's line, asked as HAProxy asks it. */
function agentLine(port) {
    return new Promise((resolve, reject) => {
        let out = '';
        const c = net.connect(port, '127.0.0.1');
        c.on('data', (b) => { out += b; });
        c.on('error', reject);
        c.on('close', () => resolve(out));
    });
}


const NO_HAPROXY = !fs.existsSync(HAPROXY) && 'haproxy is not installed (scripts/deps.sh test installs it)';

test('a session handle past the load balancer\'s buffer: the instance it reaches says the balancer did not read it', { skip: NO_HAPROXY }, async (t) => {
    const { lb, sock, p1, p2, down } = await startFleet(t);

    // A session on one instance (x); a call of it that sleeps holds a connection there, so that
    // HAProxy's leastconn sends a call it cannot route by its handle to the other one.
    const opened = await call(lb, 'session_open', {});
    const handle = opened.result?.structuredContent?.session;
    assert.match(handle ?? '', /^i\d+-[0-9a-f]{32}$/, JSON.stringify(opened));
    const x = handle.split('-')[0];
    assert.ok(x === `i${p1}` || x === `i${p2}`, handle);
    const other = x === `i${p1}` ? `i${p2}` : `i${p1}`;
    let r = await call(lb, 'exec', { code: 'kept = 6 * 7', session: handle });
    assert.equal(r.result?.isError, false, JSON.stringify(r));
    const sleeping = call(lb, 'exec', { code: 'import time; time.sleep(8)', session: handle });
    assert.ok(await until(async () => (await stats(sock))[x]?.scur === 1, 10000), `the sleeping call is not on ${x}`);

    // The handle after 100 KiB of code: past what HAProxy buffers.
    const code = `# ${'x'.repeat(100 * 1024)}\nprint(kept)`;
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'exec', arguments: { code, session: handle }, _meta: META } });
    r = await call(lb, 'exec', { code, session: handle });
    const text = answerText(r);
    assert.match(text, new RegExp(`^unknown session here: the handle was made by instance ${x}, but the load balancer read only the first (\\d+) of this request's ${Buffer.byteLength(body)} bytes, did not see the handle, and sent the call to another instance: raise its buffer \\(HAProxy's tune\\.bufsize\\)`), JSON.stringify(r).slice(0, 600));
    assert.ok(Number(/first (\d+) of/.exec(text)[1]) <= 65536, text);
    const s = await sleeping;
    assert.equal(s.result?.isError, false, JSON.stringify(s));

    // A client's own header is HAProxy's to set: dropped, so a handle of an instance that is down
    // is still said to be gone, whatever the client claims about the body.
    r = await call(lb, 'exec', { code: 'print(1)', session: `i${down}-${'0'.repeat(32)}` }, { 'Mcp-Execd-Lb-Body-Read': '5' });
    assert.match(answerText(r), new RegExp(`^unknown session: the handle was made by instance i${down}, which is gone or unreachable`), JSON.stringify(r));

    // Within the buffer the handle is seen and the call reaches its session, state and all.
    r = await call(lb, 'exec', { code: `# ${'x'.repeat(30 * 1024)}\nprint(kept)`, session: handle });
    assert.equal(r.result?.structuredContent?.stdout, '42\n', JSON.stringify(r).slice(0, 600));
});

// Issue 31.6, 31.7: three tenants through the fleet. Every instance reads the same tenants file;
// HAProxy passes each client's Authorization through, and whichever instance a call reaches tells
// the tenant by its token. A tenant's session handle and task id, used by another tenant, are
// unknown there, as a made-up one is.
test('three tenants through the fleet: each is itself on every instance; one\'s session and task are unknown to the others', { skip: NO_HAPROXY }, async (t) => {
    const tokens = Object.fromEntries(['alpha', 'beta', 'gamma'].map((n) => [n, `${n}-${crypto.randomBytes(12).toString('hex')}`]));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-execd-tenants.'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'tenants');
    fs.writeFileSync(file, Object.entries(tokens).map(([n, tok]) => `${n} ${crypto.createHash('sha256').update(tok).digest('hex')}\n`).join(''), { mode: 0o600 });
    const { lb } = await startFleet(t, { MCP_EXEC_TENANTS: file });
    const as = (n) => ({ Authorization: `Bearer ${tokens[n]}` });

    const handles = {};
    for (const n of Object.keys(tokens)) {
        const env = await call(lb, 'check_environment', {}, as(n));
        assert.equal(env.result?.structuredContent?.auth?.tenant, n, JSON.stringify(env).slice(0, 400));
        const opened = await call(lb, 'session_open', {}, as(n));
        handles[n] = opened.result?.structuredContent?.session;
        assert.match(handles[n] ?? '', /^i\d+-[0-9a-f]{32}$/, JSON.stringify(opened));
        const r = await call(lb, 'exec', { code: `who = "${n}"`, session: handles[n] }, as(n));
        assert.equal(r.result?.isError, false, JSON.stringify(r));
    }
    for (const n of Object.keys(tokens)) {
        const r = await call(lb, 'exec', { code: 'print(who)', session: handles[n] }, as(n));
        assert.equal(r.result?.structuredContent?.stdout, `${n}\n`, JSON.stringify(r).slice(0, 400));
        for (const o of Object.keys(tokens).filter((x) => x !== n)) {
            const theirs = await call(lb, 'exec', { code: 'print(who)', session: handles[n] }, as(o));
            const madeUp = await call(lb, 'exec', { code: 'print(who)', session: handles[n].replace(/.$/, (c) => (c === '0' ? '1' : '0')) }, as(o));
            assert.equal(theirs.result?.isError, true, `${o} reached ${n}'s session: ${JSON.stringify(theirs).slice(0, 400)}`);
            assert.equal(answerText(theirs), answerText(madeUp));
        }
    }
    const r = await fetch(`http://127.0.0.1:${lb}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'ping', Authorization: 'Bearer nobody' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: META } }) });
    assert.equal(r.status, 401, 'an unknown token got through the fleet');
    await r.text();
});

// Issue 33.4: routing by free capacity. Each instance answers HAProxy's agent check with its free
// run slots; the shipped configuration turns that into the server's weight. An instance whose slots
// are all taken by calls that did not come through this balancer (they went to it directly) is
// weighed at 1 of 100, and 100 again once they are over; a draining instance says drain, HAProxy
// sets it to DRAIN, and the calls sent meanwhile are all answered by the other. (What the weights
// do to the calls' queue wait is measured, not asserted: bench/fleet.py.)
test('agent check: the balancer weighs each instance by its free slots, and a drain fails no call', { skip: NO_HAPROXY }, async (t) => {
    const { lb, sock, p1, p2, agents, daemons } = await startFleet(t, { MCP_EXEC_MAX_CONCURRENT: '2', MCP_EXEC_DRAIN_S: '30' });
    assert.equal(await agentLine(agents[p1]), 'ready 100%\n');
    assert.ok(await until(async () => { const s = await stats(sock); return s[`i${p1}`]?.weight === 100 && s[`i${p2}`]?.weight === 100; }, 10000),
              JSON.stringify(await stats(sock)));

    // Both of p1's slots taken by calls straight to it: its agent says 1%, HAProxy follows.
    const direct = (port, code, signal) => fetch(`http://127.0.0.1:${port}/mcp`, {
        method: 'POST', signal,
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
                   'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'exec' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'exec', arguments: { code, timeout_s: 300 }, _meta: META } }),
    }).then((r) => r.json());
    // Cancelled once seen (their clients go away): the slots come free again.
    const abort = new AbortController();
    const hog = [1, 2].map(() => direct(p1, 'import time; time.sleep(240)', abort.signal).catch((e) => e.name));
    assert.ok(await until(async () => (await agentLine(agents[p1])) === 'ready 1%\n', 10000), 'the agent of the busy instance');
    assert.ok(await until(async () => (await stats(sock))[`i${p1}`]?.weight === 1, 10000), JSON.stringify(await stats(sock)));
    abort.abort();
    assert.deepEqual(await Promise.all(hog), ['AbortError', 'AbortError']);
    assert.ok(await until(async () => (await stats(sock))[`i${p1}`]?.weight === 100, 10000), JSON.stringify(await stats(sock)));

    // A drain: p2 gets SIGTERM with a call in flight. Its agent says drain, HAProxy sets it to
    // DRAIN; the call in flight gets its result and every call sent meanwhile is answered.
    const inFlight = direct(p2, 'import time; time.sleep(15); print("drained")');
    assert.ok(await until(async () => (await agentLine(agents[p2])) !== 'ready 100%\n', 10000));
    daemons[p2].kill('SIGTERM');
    assert.ok(await until(async () => (await agentLine(agents[p2])) === 'drain\n', 10000), 'the draining agent');
    // HAProxy read it: the server's administrative state is DRAIN as set by the agent (its
    // operational state goes DOWN too, once the health check has seen /health's 503 twice).
    assert.ok(await until(async () => ((await adminState(sock))[`i${p2}`] & SRV_ADMF_FDRAIN) !== 0, 10000),
              JSON.stringify(await adminState(sock)));
    const meanwhile = await Promise.all([...Array(6).keys()].map((i) => call(lb, 'exec', { code: `print(${i})` })));
    meanwhile.forEach((r, i) => assert.equal(r.result?.structuredContent?.stdout, `${i}\n`, JSON.stringify(r).slice(0, 400)));
    const last = await inFlight;
    assert.equal(last.result?.structuredContent?.stdout, 'drained\n', JSON.stringify(last).slice(0, 400));
});
