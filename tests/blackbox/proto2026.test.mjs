// Protocol revision 2026-07-28 beside 2025-11-25 (issue 17, first slice): the official 2.x client
// negotiates 2026-07-28 (auto and pinned) and uses the tools; in legacy mode it still gets
// 2025-11-25; raw 2026-era requests get the errors the revision names.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { RawDaemon, binaryPath, daemonEnv, test } from './lib/index.mjs';

const MODERN = '2026-07-28';
const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** The per-request envelope of a 2026-07-28 request, with `extra` params. */
function modern(extra = {}, meta = {}) {
    return { ...extra, _meta: { [PV]: MODERN, [CAPS]: {}, ...meta } };
}

/** A 2.x client over stdio in the given negotiation mode, closed after the test. */
async function connect2x(t, versionNegotiation) {
    const transport = new StdioClientTransport({ command: binaryPath(), args: [], env: daemonEnv(), stderr: 'pipe' });
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
    assert.deepEqual(r.capabilities, { tools: { listChanged: false } });
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
