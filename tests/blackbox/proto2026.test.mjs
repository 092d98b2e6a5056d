// Protocol revision 2026-07-28 beside 2025-11-25 (issue 17, first slice): the official 2.x client
// negotiates 2026-07-28 (auto and pinned) and uses the tools; in legacy mode it still gets
// 2025-11-25; raw 2026-era requests get the errors the revision names.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { RawDaemon, binaryPath, daemonEnv, test } from './lib/index.mjs';
import { initSession, mcpPost, postHeaders, rawRequest, startHttpDaemon } from './lib/http-daemon.mjs';

const MODERN = '2026-07-28';
const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** The per-request envelope of a 2026-07-28 request, with `extra` params. */
function modern(extra = {}, meta = {}) {
    return { ...extra, _meta: { [PV]: MODERN, [CAPS]: {}, ...meta } };
}

/** A 2.x client over stdio (or over HTTP to daemon d) in the given negotiation mode, closed after the test. */
async function connect2x(t, versionNegotiation, d) {
    const transport = d ? new StreamableHTTPClientTransport(new URL(d.url))
        : new StdioClientTransport({ command: binaryPath(), args: [], env: daemonEnv(), stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (b) => { stderr += b.toString('utf8'); });
    const client = new Client({ name: 'mcp-execd-blackbox-2x', version: '0' },
        versionNegotiation ? { versionNegotiation } : {});
    t.after(async () => { try { await client.close(); } catch { /* gone */ } });
    try {
        await client.connect(transport);
    } catch (e) {
        throw new Error(`connect failed: ${e.message}\n--- daemon stderr ---\n${stderr}`);
    }
    return client;
}

async function useTools(client) {
    const { tools } = await client.listTools();
    const names = tools.map((x) => x.name);
    assert.ok(names.includes('exec') && names.includes('execute_python'), JSON.stringify(names));
    const r = await client.callTool({ name: 'exec', arguments: { code: 'print(1)' } });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.structuredContent.stdout, '1\n');
    const p = await client.callTool({ name: 'execute_python', arguments: { script: 'print(6 * 7)' } });
    assert.equal(p.isError, false, JSON.stringify(p));
    assert.equal(p.structuredContent.stdout, '42\n');
}

for (const [name, mode] of [['auto', { mode: 'auto' }], ['pinned', { mode: { pin: MODERN } }]]) {
    test(`stdio: the 2.x client (${name}) negotiates 2026-07-28 and uses exec and execute_python`, async (t) => {
        const client = await connect2x(t, mode);
        assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
        await useTools(client);
    });
}

test('stdio: the 2.x client in legacy mode still gets 2025-11-25', async (t) => {
    const client = await connect2x(t, { mode: 'legacy' });
    assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
    await useTools(client);
});

test('stdio: server/discover lists 2026-07-28 first, then the initialize versions', async (t) => {
    const d = RawDaemon.spawn(t);
    const res = await d.request('server/discover', modern());
    const r = res.result;
    assert.ok(r, JSON.stringify(res));
    assert.deepEqual(r.supportedVersions, [MODERN, '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']);
    assert.deepEqual(r.capabilities, { tools: { listChanged: false }, extensions: { 'io.modelcontextprotocol/tasks': {} } });
    assert.equal(r.resultType, 'complete');
    assert.equal(r._meta[SERVER_INFO].name, 'mcp-execd');
    assert.equal(typeof r.instructions, 'string');
});

test('stdio: 2026 tools/list and tools/call need no initialize; results are stamped', async (t) => {
    const d = RawDaemon.spawn(t);
    const a = (await d.request('tools/list', modern())).result;
    const b = (await d.request('tools/list', modern())).result;
    assert.deepEqual(a, b, 'the same list, in the same order');
    assert.deepEqual(a.tools.map((x) => x.name), b.tools.map((x) => x.name));
    assert.ok(Number.isInteger(a.ttlMs) && a.ttlMs >= 0);
    assert.equal(a.cacheScope, 'public');
    assert.equal(a.resultType, 'complete');
    assert.equal(a._meta[SERVER_INFO].name, 'mcp-execd');
    const c = await d.request('tools/call', modern({ name: 'exec', arguments: { code: 'print(1)' } }),
        { timeoutMs: 20000 });
    assert.equal(c.result.structuredContent.stdout, '1\n', JSON.stringify(c));
    assert.equal(c.result.resultType, 'complete');
    assert.equal(c.result._meta[SERVER_INFO].name, 'mcp-execd');
    const e = await d.request('tools/call', modern({ name: 'exec', arguments: { code: 7 } }));
    assert.equal(e.result.isError, true);
    assert.equal(e.result.resultType, 'complete');
    // A 2025-era request on the same connection is still gated by initialize: eras do not mix.
    const l = await d.request('tools/list');
    assert.equal(l.error?.code, -32600, JSON.stringify(l));
});

test('stdio: an unsupported version gets -32022 with the supported versions', async (t) => {
    const d = RawDaemon.spawn(t);
    for (const v of ['2099-01-01', '2025-11-25']) {
        const res = await d.request('tools/list', { _meta: { [PV]: v, [CAPS]: {} } });
        assert.equal(res.error?.code, -32022, JSON.stringify(res));
        assert.equal(res.error.data.requested, v);
        assert.deepEqual(res.error.data.supported, [MODERN, '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']);
    }
});

test('stdio: ping, initialize and logging/setLevel are gone from 2026 requests (-32601)', async (t) => {
    const d = RawDaemon.spawn(t);
    for (const [method, params] of [['ping', {}], ['logging/setLevel', { level: 'info' }],
        ['initialize', { protocolVersion: MODERN, capabilities: {}, clientInfo: { name: 'x', version: '0' } }]]) {
        const res = await d.request(method, modern(params));
        assert.equal(res.error?.code, -32601, `${method}: ${JSON.stringify(res)}`);
    }
    // The connection was not initialized by the 2026 initialize.
    const l = await d.request('tools/list');
    assert.equal(l.error?.code, -32600, JSON.stringify(l));
});

test('stdio: a 2026 request without clientCapabilities is invalid params (-32602)', async (t) => {
    const d = RawDaemon.spawn(t);
    const res = await d.request('tools/list', { _meta: { [PV]: MODERN } });
    assert.equal(res.error?.code, -32602, JSON.stringify(res));
    assert.match(res.error.message, /clientCapabilities/);
});

test('stdio: a 2025-era session sees no 2026 members', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const l = (await d.request('tools/list')).result;
    assert.equal(l.resultType, undefined);
    assert.equal(l.ttlMs, undefined);
    assert.equal(l._meta, undefined);
    const c = (await d.response(d.callExec({ code: 'print(1)' }), 20000)).result;
    assert.equal(c.resultType, undefined);
    assert.equal(c._meta, undefined);
    // server/discover without an envelope: the 2025 answer (the probe of older dual-era clients).
    const p = await d.request('server/discover');
    assert.equal(p.error?.code, -32601);
});

// ---- Streamable HTTP (/mcp) ---------------------------------------------------------------------

for (const [name, mode] of [['auto', { mode: 'auto' }], ['pinned', { mode: { pin: MODERN } }]]) {
    test(`http: the 2.x client (${name}) negotiates 2026-07-28 and uses exec and execute_python`, async (t) => {
        const d = await startHttpDaemon(t);
        const client = await connect2x(t, mode, d);
        assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
        await useTools(client);
    });
}

test('http: the 2.x client in legacy mode still gets 2025-11-25 (a session)', async (t) => {
    const d = await startHttpDaemon(t);
    const client = await connect2x(t, { mode: 'legacy' }, d);
    assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
    await useTools(client);
});

/** A well-formed 2026 POST of method (params merged into the envelope), with header overrides. */
function modernPost(d, id, method, params = {}, headers = {}) {
    const h = postHeaders({ 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method,
        ...(method === 'tools/call' ? { 'Mcp-Name': params.name } : {}), ...headers });
    for (const [k, v] of Object.entries(h)) if (v === undefined) delete h[k];
    return rawRequest(d, { method: 'POST', headers: h, body: { jsonrpc: '2.0', id, method, params: modern(params) } });
}

test('http: a 2026 POST stands alone: no session issued or needed, any connection', async (t) => {
    const d = await startHttpDaemon(t);
    const disc = await modernPost(d, 1, 'server/discover');
    assert.equal(disc.status, 200, disc.body);
    assert.equal(disc.headers['mcp-session-id'], undefined);
    assert.equal(disc.json.result.supportedVersions[0], MODERN);
    assert.equal(disc.json.result._meta[SERVER_INFO].name, 'mcp-execd');
    const list = await modernPost(d, 2, 'tools/list');
    assert.equal(list.status, 200, list.body);
    assert.equal(list.headers['mcp-session-id'], undefined);
    assert.equal(list.json.result.cacheScope, 'public');
    assert.ok(Number.isInteger(list.json.result.ttlMs));
    // rawRequest opens a new connection each time: nothing ties these requests together.
    const call = await modernPost(d, 3, 'tools/call', { name: 'exec', arguments: { code: 'print(1)' } });
    assert.equal(call.status, 200, call.body);
    assert.equal(call.headers['mcp-session-id'], undefined);
    assert.equal(call.json.result.structuredContent.stdout, '1\n');
    assert.equal(call.json.result.resultType, 'complete');
    // With a progress token the answer is a stream, as in the 2025 era.
    const r = await mcpPost(d, { jsonrpc: '2.0', id: 4, method: 'tools/call',
        params: modern({ name: 'exec', arguments: { code: 'print(2)' } }, { progressToken: 'p' }) },
    { headers: { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'exec' } });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /text\/event-stream/);
    const text = await r.text();
    const last = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6))).find((m) => m.id === 4);
    assert.equal(last.result.structuredContent.stdout, '2\n');
});

test('http: Mcp-Method and Mcp-Name must be there and match the body (400, -32020)', async (t) => {
    const d = await startHttpDaemon(t);
    const call = { name: 'exec', arguments: { code: 'print(1)' } };
    for (const [what, method, params, headers] of [
        ['no Mcp-Method', 'tools/list', {}, { 'Mcp-Method': undefined }],
        ['another Mcp-Method', 'tools/list', {}, { 'Mcp-Method': 'tools/call' }],
        ['no Mcp-Name', 'tools/call', call, { 'Mcp-Name': undefined }],
        ['another Mcp-Name', 'tools/call', call, { 'Mcp-Name': 'execute_python' }],
        ['no MCP-Protocol-Version', 'tools/list', {}, { 'MCP-Protocol-Version': undefined }],
    ]) {
        const r = await modernPost(d, 9, method, params, headers);
        assert.equal(r.status, 400, `${what}: ${r.body}`);
        assert.equal(r.json?.error?.code, -32020, `${what}: ${r.body}`);
        assert.equal(r.json.id, 9, what);
    }
    // The header names one version, the body another.
    const h = postHeaders({ 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'server/discover' });
    const r = await rawRequest(d, { method: 'POST', headers: h, body: { jsonrpc: '2.0', id: 5, method: 'server/discover',
        params: { _meta: { [PV]: '2099-01-01', [CAPS]: {} } } } });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, -32020);
});

test('http: 2026 version, envelope and method errors: -32022/400, -32602/400, -32601/404', async (t) => {
    const d = await startHttpDaemon(t);
    const h = postHeaders({ 'MCP-Protocol-Version': '2099-01-01', 'Mcp-Method': 'server/discover' });
    const v = await rawRequest(d, { method: 'POST', headers: h, body: { jsonrpc: '2.0', id: 1, method: 'server/discover',
        params: { _meta: { [PV]: '2099-01-01', [CAPS]: {} } } } });
    assert.equal(v.status, 400, v.body);
    assert.equal(v.json.error.code, -32022);
    assert.equal(v.json.error.data.requested, '2099-01-01');
    assert.ok(v.json.error.data.supported.includes(MODERN) && v.json.error.data.supported.includes('2025-11-25'));
    const e = await rawRequest(d, { method: 'POST', headers: postHeaders({ 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'server/discover' }),
        body: { jsonrpc: '2.0', id: 2, method: 'server/discover', params: {} } });
    assert.equal(e.status, 400, e.body);
    assert.equal(e.json.error.code, -32602);
    for (const m of ['ping', 'initialize', 'logging/setLevel', 'no/such']) {
        const r = await modernPost(d, 3, m);
        assert.equal(r.status, 404, `${m}: ${r.body}`);
        assert.equal(r.json.error.code, -32601, m);
        assert.equal(r.json.id, 3, m);
    }
});

test('http: eras do not mix: a 2026 request on a 2025 session, a 2025 request without one', async (t) => {
    const d = await startHttpDaemon(t);
    const sid = await initSession(d);
    const r = await modernPost(d, 1, 'tools/list', {}, { 'Mcp-Session-Id': sid });
    assert.equal(r.status, 400, r.body);
    assert.equal(r.json.error.code, -32600);
    // The session is untouched and still answers in its own era.
    const ok = await rawRequest(d, { method: 'POST', headers: postHeaders({ 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' }),
        body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } });
    assert.equal(ok.status, 200);
    assert.equal(ok.json.result.resultType, undefined);
    // A 2025-era request without a session: as before, 400 -32000.
    const no = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: { jsonrpc: '2.0', id: 3, method: 'tools/list' } });
    assert.equal(no.status, 400);
    assert.equal(no.json.error.code, -32000);
    // An unknown version on a 2025-era request: as before, 400 -32000.
    const bad = await rawRequest(d, { method: 'POST', headers: postHeaders({ 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': 'garbage' }),
        body: { jsonrpc: '2.0', id: 4, method: 'ping' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, -32000);
});
