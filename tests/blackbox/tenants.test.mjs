// Tenants by static token (issue 31.1, 31.5, 31.7): MCP_EXEC_TENANTS names a file of tenants, each
// a name and its token's SHA-256; MCP_EXEC_AUTH_TOKEN stays, as the tenant `default`. What one
// tenant made (a 2025 HTTP session, a legacy SSE session, a Python session, a 2026 task) another
// tenant cannot reach: it gets exactly the answer an unknown id gets. check_environment shows the
// caller its own tenant; run records carry TENANT=; nothing logs a token or its hash. SIGHUP reads
// the file again without dropping a call or a session, and a bad file then keeps the old tenants.
// Bad files refuse the start (exit 2) with the line and the reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { binaryPath, daemonEnv, findByMarker, pySleeperExec, reapMarker, uniqueMarker, waitMarkerPresent } from './lib/index.mjs';
import { startHttpDaemon, connectSdk, initSession, mcpPost, openLegacy, postHeaders, rawRequest } from './lib/http-daemon.mjs';
import { callTool } from './lib/files.mjs';

const sha256 = (s) => crypto.createHash('sha256').update(s).digest('hex');
const MODERN = '2026-07-28';
const modernMeta = { 'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };

/** A tenants file in a fresh directory (mode 0600 unless told), its path; removed after the test. */
function tenantsFile(t, text, mode = 0o600) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenants-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'tenants');
    fs.writeFileSync(file, text, { mode });
    fs.chmodSync(file, mode);
    return file;
}

/** Rewrites the file in place (same inode, as an editor's save would not be: a new file, renamed). */
function replaceFile(file, text, mode = 0o600) {
    const tmp = `${file}.new`;
    fs.writeFileSync(tmp, text, { mode });
    fs.chmodSync(tmp, mode);
    fs.renameSync(tmp, file);
}

const TOKENS = Object.fromEntries(['alpha', 'beta', 'gamma', 'delta'].map((n) => [n, `${n}-${uniqueMarker('tok')}`]));
const bearer = (name) => ({ Authorization: `Bearer ${TOKENS[name]}` });
const lines = (...names) => names.map((n) => `${n} ${sha256(TOKENS[n])}\n`).join('');

/** A 2026 request with a tenant's token: {status, json, body}. */
function modernPost(d, who, id, method, params) {
    const name = method === 'tools/call' ? params.name : params.taskId;
    const h = postHeaders({ 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method,
        ...(name !== undefined ? { 'Mcp-Name': name } : {}), ...(who ? bearer(who) : {}) });
    return rawRequest(d, { method: 'POST', headers: h, body: { jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta } } });
}

/** A 2025 request on session sid with a tenant's token: {status, text}. */
async function post2025(d, who, sid, msg) {
    const r = await mcpPost(d, msg, { sessionId: sid, protocolVersion: '2025-11-25', headers: bearer(who) });
    return { status: r.status, text: await r.text() };
}

async function tenantsDaemon(t, extraEnv = {}) {
    const file = tenantsFile(t, `# two teams\n${lines('alpha')}\n${lines('beta').trim()}   # a comment\n`);
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_TENANTS: file, MCP_EXEC_AUTH_TOKEN: TOKENS.gamma, ...extraEnv } });
    return { d, file };
}

test('each tenant\'s token lets it in as itself; the auth token is the tenant default; anything else is 401', async (t) => {
    const { d } = await tenantsDaemon(t);
    assert.match(d.stderr(), /tenants: 2 from \/\S+, and default \(MCP_EXEC_AUTH_TOKEN\)/);
    for (const [who, name] of [['alpha', 'alpha'], ['beta', 'beta'], ['gamma', 'default']]) {
        const c = await connectSdk(t, d, 'http', { headers: bearer(who) });
        const env = await callTool(c, 'check_environment', {});
        assert.equal(env.sc.auth.tenant, name, JSON.stringify(env.sc.auth));
        assert.equal(env.sc.auth.tenants_configured, true);
        assert.equal(env.sc.auth.token_configured, true);
        // Only the caller's own tenant: no other tenant is named in the answer.
        const limits = { runs: null, queue: null, sessions: null, tasks: null, weight: 100, memory_max_bytes: null,
            pids_max: null, slice: null, slice_bounds: null };
        assert.deepEqual(env.sc.auth, { token_configured: true, tenants_configured: true, tenant: name, limits });
        for (const other of ['alpha', 'beta'].filter((n) => n !== name))
            assert.ok(!JSON.stringify(env.sc).includes(`"${other}"`), `check_environment of ${name} names ${other}`);
        const r = await callTool(c, 'exec', { code: `print("hello ${name}")` });
        assert.equal(r.sc.stdout, `hello ${name}\n`);
    }
    for (const headers of [{}, { Authorization: 'Bearer nope' }, { Authorization: `Bearer ${TOKENS.alpha}x` },
        { Authorization: `Bearer ${sha256(TOKENS.alpha)}` }, { 'X-MCP-AUTH': TOKENS.alpha.slice(0, -1) }]) {
        const r = await mcpPost(d, { jsonrpc: '2.0', id: 1, method: 'ping' }, { headers });
        assert.equal(r.status, 401, JSON.stringify(headers));
        await r.text();
    }
    const x = await mcpPost(d, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } } },
        { headers: { 'X-MCP-AUTH': TOKENS.beta } });
    assert.equal(x.status, 200);
    await x.text();
    // /metrics counts each tenant's runs under its name (one exec each), beside the totals.
    const m = await rawRequest(d, { path: '/metrics', headers: bearer('beta') });
    assert.equal(m.status, 200);
    for (const name of ['alpha', 'beta', 'default'])
        assert.match(m.body, new RegExp(`^mcp_execd_tenant_runs_total\\{tenant="${name}",outcome="ok"\\} 1$`, 'm'), m.body);
    assert.match(m.body, /^mcp_execd_runs_total\{outcome="ok"\} 3$/m);
    // The journal records (on stderr without a journal) name the tenant, never a token or a hash.
    for (const name of ['alpha', 'beta', 'default']) // stderr is read apart from the answers: wait for it
        assert.ok(await d.waitFor(new RegExp(` TENANT=${name}( |$)`, 'm'), 5000), `no record with TENANT=${name}`);
    const err = d.stderr();
    for (const tok of Object.values(TOKENS)) {
        assert.ok(!err.includes(tok), 'a token was logged');
        assert.ok(!err.includes(sha256(tok)), 'a token\'s hash was logged');
    }
});

test('another tenant\'s 2025 session, legacy session, Python session and 2026 task answer as unknown ones do', async (t) => {
    const { d } = await tenantsDaemon(t, { MCP_EXEC_TASK_INLINE_MS: '250' }); // the 2 s call below is a task
    // 2025 Streamable HTTP session: alpha's id, used by beta, is a 404 like a made-up id.
    const sid = await initSession(d, bearer('alpha'));
    const ping = { jsonrpc: '2.0', id: 5, method: 'ping' };
    assert.equal((await post2025(d, 'alpha', sid, ping)).status, 200);
    const byBeta = await post2025(d, 'beta', sid, ping);
    const unknown = await post2025(d, 'beta', 'f'.repeat(sid.length), ping);
    assert.equal(byBeta.status, 404);
    assert.deepEqual(byBeta, unknown);
    const del = await rawRequest(d, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid, ...bearer('beta') } });
    assert.equal(del.status, 404, 'beta ended alpha\'s session');
    assert.equal((await post2025(d, 'alpha', sid, ping)).status, 200, 'alpha\'s session is gone');

    // Legacy HTTP+SSE: alpha's endpoint, posted to by beta.
    const legacy = await openLegacy(d, bearer('alpha'));
    t.after(() => legacy.close());
    const lp = await legacy.post({ jsonrpc: '2.0', id: 1, method: 'ping' }, bearer('beta'));
    const lu = await fetch(legacy.endpoint.replace(/sessionId=[^&]+/, 'sessionId=' + 'A'.repeat(32)),
        { method: 'POST', headers: { 'Content-Type': 'application/json', ...bearer('beta') }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    assert.equal(lp.status, 404);
    assert.deepEqual([lp.status, await lp.text()], [lu.status, await lu.text()]);

    // Python session: alpha's handle, used by beta (exec in it, close it), is an unknown session.
    const a = await connectSdk(t, d, 'http', { headers: bearer('alpha') });
    const b = await connectSdk(t, d, 'http', { headers: bearer('beta') });
    const opened = await callTool(a, 'session_open', {});
    const handle = opened.sc.session;
    assert.ok(handle, JSON.stringify(opened.result));
    assert.equal((await callTool(a, 'exec', { code: 'x = 41', session: handle })).sc.exit_code, 0);
    const text = (r) => r.result.content[0].text;
    const madeUp = handle.replace(/.$/, (ch) => (ch === '0' ? '1' : '0'));
    for (const [tool, args] of [['exec', { code: 'print(x)' }], ['session_close', {}]]) {
        const theirs = await callTool(b, tool, { ...args, session: handle });
        const none = await callTool(b, tool, { ...args, session: madeUp });
        assert.equal(theirs.isError, true, `${tool}: ${JSON.stringify(theirs.result)}`);
        assert.equal(text(theirs), text(none));
        assert.match(text(theirs), /unknown session/);
    }
    const still = await callTool(a, 'exec', { code: 'print(x + 1)', session: handle });
    assert.equal(still.sc.stdout, '42\n', 'beta reached alpha\'s session');

    // 2026 task: alpha's task id, asked about by beta (get, cancel, list).
    const c = await modernPost(d, 'alpha', 1, 'tools/call', { name: 'exec', arguments: { code: 'import time\ntime.sleep(2)\nprint("done")' } });
    assert.equal(c.status, 200, c.body);
    const id = c.json.result.taskId;
    assert.ok(id, c.body);
    const otherId = id.replace(/.$/, (ch) => (ch === '0' ? '1' : '0'));
    const theirs = await modernPost(d, 'beta', 2, 'tasks/get', { taskId: id });
    const none = await modernPost(d, 'beta', 2, 'tasks/get', { taskId: otherId });
    assert.equal(theirs.json.error?.code, -32602, theirs.body);
    // The same answer but for the id it names.
    assert.equal(theirs.status, none.status);
    assert.equal(theirs.body.replaceAll(id, 'ID'), none.body.replaceAll(otherId, 'ID'));
    const cancel = await modernPost(d, 'beta', 3, 'tasks/cancel', { taskId: id });
    assert.equal(cancel.json.error?.code, -32602, cancel.body);
    const mine = await modernPost(d, 'alpha', 4, 'tasks/get', { taskId: id });
    assert.ok(['working', 'completed'].includes(mine.json.result?.status), mine.body);
    // The tenant default (the auth token) is a tenant like the others.
    const byDefault = await modernPost(d, 'gamma', 2, 'tasks/get', { taskId: id });
    assert.equal(byDefault.body, theirs.body);
});

test('SIGHUP reads the file again: a removed tenant is out, a new one in, a call in flight and a session go on; a bad file keeps the old tenants', async (t) => {
    const { d, file } = await tenantsDaemon(t);
    const a = await connectSdk(t, d, 'http', { headers: bearer('alpha') });
    const opened = await callTool(a, 'session_open', {});
    const handle = opened.sc.session;
    await callTool(a, 'exec', { code: 'kept = "yes"', session: handle });
    const sid = await initSession(d, bearer('alpha'));
    // A call in flight across the reload.
    const inFlight = callTool(a, 'exec', { code: 'import time\ntime.sleep(2)\nprint("finished")' });
    // A new tenant whose token is the auth token's: refused, the 3 tenants of before stay.
    replaceFile(file, `${lines('alpha')}delta ${sha256(TOKENS.gamma)}\n`);
    process.kill(d.pid, 'SIGHUP');
    assert.ok(await d.waitFor(/received HUP: the tenants file \S+ cannot be used, the 3 tenants of before stay: tenants delta and default have the same token/, 10000), d.stderr());
    // The old set still holds: beta is in.
    const c0 = await connectSdk(t, d, 'http', { headers: bearer('beta') });
    assert.equal((await callTool(c0, 'exec', { code: 'print(1)' })).sc.stdout, '1\n');

    replaceFile(file, lines('alpha', 'delta'));
    process.kill(d.pid, 'SIGHUP');
    assert.ok(await d.waitFor(/received HUP: tenants: 2 from /, 10000), d.stderr());
    const r = await inFlight;
    assert.equal(r.sc.stdout, 'finished\n', 'the call in flight was dropped');
    assert.equal((await callTool(a, 'exec', { code: 'print(kept)', session: handle })).sc.stdout, 'yes\n');
    assert.equal((await post2025(d, 'alpha', sid, { jsonrpc: '2.0', id: 9, method: 'ping' })).status, 200);
    const gone = await mcpPost(d, { jsonrpc: '2.0', id: 1, method: 'ping' }, { headers: bearer('beta') });
    assert.equal(gone.status, 401, 'a removed tenant is still let in');
    await gone.text();
    const dl = await connectSdk(t, d, 'http', { headers: bearer('delta') });
    assert.equal((await callTool(dl, 'check_environment', {})).sc.auth.tenant, 'delta');
    const df = await connectSdk(t, d, 'http', { headers: bearer('gamma') });
    assert.equal((await callTool(df, 'check_environment', {})).sc.auth.tenant, 'default');

    // Readable by others on reload: refused, the tenants of before stay.
    fs.chmodSync(file, 0o644);
    process.kill(d.pid, 'SIGHUP');
    assert.ok(await d.waitFor(/the 3 tenants of before stay: \S+ may be read or written by other users \(mode 0644\)/, 10000), d.stderr());
    const still = await connectSdk(t, d, 'http', { headers: bearer('delta') });
    assert.equal((await callTool(still, 'exec', { code: 'print(2)' })).sc.stdout, '2\n');
    assert.equal(d.exit, null, 'the daemon stopped on SIGHUP');
});

test('a tenants file that cannot be used refuses the start (exit 2), naming the line and the reason, never a hash', async (t) => {
    const h = sha256('x-token');
    const cases = [
        { text: `alpha ${h}\n`, mode: 0o640, want: /may be read or written by other users \(mode 0640\): make it 0600/ },
        { text: `alpha ${h}\nalpha ${sha256('y')}\n`, want: /line 2: tenant alpha is named twice \(first on line 1\)/ },
        { text: `alpha ${h.slice(0, 40)}\n`, want: /line 1: tenant alpha: the token hash is not 64 lower-case hex digits \(SHA-256\) but 40 characters/ },
        { text: `alpha ${h} colour=blue\n`, want: /line 1: unknown key 'colour' \(known: runs, queue, sessions, tasks, memory, pids, weight, egress\)/ },
        { text: `alpha ${h} memory=lots\n`, want: /line 1: memory=lots: not a size/ },
        { text: `alpha ${h}\nbeta ${sha256('b')} pids=0\n`, want: /line 2: pids=0: not a number of processes, 1 to 4194304, or infinity/ },
        { text: `alpha ${h} weight=1 weight=2\n`, want: /line 1: weight is given twice/ },
        { text: `alpha ${h}\nbeta ${h}\n`, want: /line 2: tenants alpha and beta have the same token/ },
        { text: `# nobody\n`, want: /no tenant in it/ },
        { text: `default ${h}\n`, env: { MCP_EXEC_AUTH_TOKEN: 'z-token' }, want: /a tenant called default, the name of the one MCP_EXEC_AUTH_TOKEN makes/ },
    ];
    for (const c of cases) {
        const file = tenantsFile(t, c.text, c.mode ?? 0o600);
        const env = daemonEnv({ MCP_EXEC_TRANSPORT: 'http', MCP_EXEC_ADDR: '127.0.0.1:1', MCP_EXEC_TENANTS: file, ...c.env });
        const r = spawnSync(binaryPath(), [], { env, encoding: 'utf8', timeout: 20000 });
        assert.equal(r.status, 2, `${c.text}: status ${r.status}, stderr ${r.stderr}`);
        assert.match(r.stderr, /cannot use the tenants file \(MCP_EXEC_TENANTS=/);
        assert.match(r.stderr, c.want);
        assert.ok(!r.stderr.includes(h) && !r.stderr.includes(h.slice(0, 40)), `a hash was echoed: ${r.stderr}`);
    }
    // A relative path is a bad value of the variable itself.
    const r = spawnSync(binaryPath(), [], { env: daemonEnv({ MCP_EXEC_TRANSPORT: 'http', MCP_EXEC_TENANTS: 'tenants' }), encoding: 'utf8', timeout: 20000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /MCP_EXEC_TENANTS="tenants" is invalid: expected the absolute path of the tenants file/);
});

test('SIGHUP over HTTP without a tenants file changes nothing; during a drain it is the second signal that stops at once', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_AUTH_TOKEN: TOKENS.alpha, MCP_EXEC_DRAIN_S: '60' } });
    process.kill(d.pid, 'SIGHUP');
    assert.ok(await d.waitFor(/received HUP: nothing to read again \(MCP_EXEC_TENANTS is not set\)/, 10000), d.stderr());
    const c = await connectSdk(t, d, 'http', { headers: bearer('alpha') });
    const env = await callTool(c, 'check_environment', {});
    assert.equal(env.sc.auth.tenant, 'default', 'the auth token alone is the tenant default');
    assert.equal(env.sc.auth.tenants_configured, false);
    // A call in flight keeps the drain open; SIGHUP then ends it at once.
    const marker = uniqueMarker('hup-drain');
    reapMarker(t, marker);
    const running = callTool(c, 'exec', { code: pySleeperExec(marker, 60), timeout_s: 90 }).catch((e) => e);
    assert.ok((await waitMarkerPresent(marker, 30000)).length > 0, 'the run never started');
    process.kill(d.pid, 'SIGTERM');
    assert.ok(await d.waitFor(/received TERM: draining/, 10000), d.stderr());
    process.kill(d.pid, 'SIGHUP');
    assert.ok(await d.waitFor(/received HUP during the drain: stopping now/, 10000), d.stderr());
    const ex = await d.waitExit(15000);
    assert.equal(ex.code, 0, d.stderr());
    await running;
});

test('sessions= bounds a tenant\'s open Python sessions, naming the setting; another tenant is not bounded by it', async (t) => {
    const file = tenantsFile(t, `${lines('alpha').trim()} sessions=1\n${lines('beta')}`);
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_TENANTS: file } });
    const a = await connectSdk(t, d, 'http', { headers: bearer('alpha') });
    const b = await connectSdk(t, d, 'http', { headers: bearer('beta') });
    const first = await callTool(a, 'session_open', {});
    assert.ok(first.sc?.session, JSON.stringify(first.result));
    const second = await callTool(a, 'session_open', {});
    assert.equal(second.isError, true);
    assert.match(second.result.content[0].text, /^too many Python sessions open for tenant alpha: 1 of 1 \(sessions=1 on its line of the tenants file\)/);
    for (let i = 0; i < 2; i++) // beta has no bound of its own
        assert.ok((await callTool(b, 'session_open', {})).sc?.session);
    assert.equal((await callTool(a, 'session_close', { session: first.sc.session })).sc.closed, true);
    assert.ok((await callTool(a, 'session_open', {})).sc?.session, 'a closed session still counted');
});

test('runs= and queue= bound a tenant in the run queue and tasks= its tasks, each error naming the setting; another tenant is not held up', async (t) => {
    // alpha: one run at once, none waiting; beta: none of its own; gamma: one task kept.
    const file = tenantsFile(t, `${lines('alpha').trim()} runs=1 queue=0\n${lines('beta')}${lines('gamma').trim()} tasks=1\n`);
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_TENANTS: file, MCP_EXEC_MAX_CONCURRENT: '3', MCP_EXEC_TASK_INLINE_MS: '0' } });
    const a = await connectSdk(t, d, 'http', { headers: bearer('alpha') });
    const b = await connectSdk(t, d, 'http', { headers: bearer('beta') });
    const marker = uniqueMarker('runs');
    reapMarker(t, marker);
    const long = callTool(a, 'exec', { code: pySleeperExec(marker, 30), timeout_s: 40 });
    assert.ok((await waitMarkerPresent(marker, 20000)).length > 0, 'alpha\'s first run did not start');
    // A slot is free (3 in all) but alpha holds its one: its next call would wait, and queue=0.
    const refused = await callTool(a, 'exec', { code: 'print(1)' });
    assert.equal(refused.isError, true, JSON.stringify(refused.result));
    assert.equal(refused.result.content[0].text, 'the run queue holds no more calls of tenant alpha: 0 are waiting for a slot, ' +
        'its queue=0 on its line of the tenants file; running: 1 of its runs=1; retry when one has ended');
    // beta runs at once, twice over, beside alpha's run.
    const [b1, b2] = await Promise.all([callTool(b, 'exec', { code: 'print("b1")' }), callTool(b, 'exec', { code: 'print("b2")' })]);
    assert.deepEqual([b1.sc.stdout, b2.sc.stdout], ['b1\n', 'b2\n']);
    assert.ok(b1.sc.queue_ms < 1000 && b2.sc.queue_ms < 1000, `beta waited: ${b1.sc.queue_ms}, ${b2.sc.queue_ms} ms`);
    // The refusal is a run record like a full queue's, with its reason and tenant.
    assert.ok(await d.waitFor(/REASON=tenant-queue-full .*TENANT=alpha\b/, 5000),
        'no record of the refusal');
    for (const p of findByMarker(marker)) process.kill(p.pid, 'SIGKILL'); // alpha's run ends: its slot frees
    const ended = await long;
    assert.equal(ended.sc.signal, 'SIGKILL', JSON.stringify(ended.result));
    assert.equal((await callTool(a, 'exec', { code: 'print(2)' })).sc.stdout, '2\n');

    // tasks=1: gamma's second task is refused while its first is kept; beta makes two.
    const call = (who, id) => modernPost(d, who, id, 'tools/call', { name: 'exec', arguments: { code: 'import time\ntime.sleep(1)' } });
    const g1 = await call('gamma', 11);
    assert.ok(g1.json.result?.taskId, g1.body);
    const g2 = await call('gamma', 12);
    assert.equal(g2.json.error?.code, -32600, g2.body);
    assert.match(g2.json.error.message, /^too many tasks for tenant gamma: at most 1 \(tasks=1 on its line of the tenants file\)/);
    for (const id of [13, 14])
        assert.ok((await call('beta', id)).json.result?.taskId);
});

test('memory=, pids= and weight= give a tenant a slice of its own where there are cgroups; without them check_environment says they do not hold, and its counts still do', async (t) => {
    // This tier runs without systemd or a delegated cgroup (rlimit mode); the slices themselves are
    // proven in the systemd tier (tests/systemd/51-tenants.py).
    const file = tenantsFile(t, `${lines('alpha').trim()} memory=512M pids=64 weight=300 runs=2\n${lines('beta')}`);
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_TENANTS: file, MCP_EXEC_CGROUP: 'none' } });
    assert.ok(await d.waitFor(/1 tenants bound memory, processes or CPU weight, which without cgroups cannot hold/, 5000), d.stderr());
    const a = await connectSdk(t, d, 'http', { headers: bearer('alpha') });
    const env = await callTool(a, 'check_environment', {});
    assert.deepEqual(env.sc.auth.limits, { runs: 2, queue: null, sessions: null, tasks: null, weight: 300,
        memory_max_bytes: 512 * 1024 * 1024, pids_max: 64, slice: null,
        slice_bounds: 'not enforced: no cgroups here (rlimit mode), only the counts hold' });
    assert.equal((await callTool(a, 'exec', { code: 'print(7)' })).sc.stdout, '7\n');
    const b = await connectSdk(t, d, 'http', { headers: bearer('beta') });
    const benv = await callTool(b, 'check_environment', {});
    assert.equal(benv.sc.auth.limits.slice_bounds, null);
    assert.ok(!JSON.stringify(benv.sc).includes('512'), 'beta was shown alpha\'s bounds');
});
