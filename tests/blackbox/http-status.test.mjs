// Every status code of the HTTP transports (issue 6, points 1–3), over raw HTTP: what real clients
// and the spec expect (mcp.md §2.2, §2.3, §6), with the JSON-RPC error body, and never a 5xx for a
// protocol error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
    startHttpDaemon, rawRequest, postHeaders, initSession, INIT, MCP_ACCEPT, openLegacy,
} from './lib/http-daemon.mjs';

function assertRpcError(r, code) {
    assert.ok(r.json, `no JSON body: ${r.status} ${r.body}`);
    assert.equal(r.json.jsonrpc, '2.0');
    assert.equal(typeof r.json.error?.message, 'string', r.body);
    if (code !== undefined) assert.equal(r.json.error.code, code, r.body);
}

const PING = { jsonrpc: '2.0', id: 7, method: 'ping' };

test('initialize → 200 application/json with a visible-ASCII Mcp-Session-Id; each initialize a new id', async (t) => {
    const d = await startHttpDaemon(t);
    const a = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: INIT });
    assert.equal(a.status, 200, a.body);
    assert.match(a.headers['content-type'], /^application\/json/);
    assert.equal(a.json.result.protocolVersion, '2025-11-25');
    const sid = a.headers['mcp-session-id'];
    assert.match(sid, /^[\x21-\x7e]{32}$/);
    const b = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: INIT });
    assert.notEqual(b.headers['mcp-session-id'], sid);
});

test('notification and response → 202 with an empty body; request → 200 with its answer', async (t) => {
    const d = await startHttpDaemon(t);
    const sid = await initSession(d);
    const h = postHeaders({ 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' });
    const n = await rawRequest(d, { method: 'POST', headers: h, body: { jsonrpc: '2.0', method: 'notifications/whatever' } });
    assert.equal(n.status, 202);
    assert.equal(n.body, '');
    const resp = await rawRequest(d, { method: 'POST', headers: h, body: { jsonrpc: '2.0', id: 99, result: {} } });
    assert.equal(resp.status, 202);
    const p = await rawRequest(d, { method: 'POST', headers: h, body: PING });
    assert.equal(p.status, 200);
    assert.deepEqual(p.json, { jsonrpc: '2.0', id: 7, result: {} });
    const u = await rawRequest(d, { method: 'POST', headers: h, body: { jsonrpc: '2.0', id: 8, method: 'no/such' } });
    assert.equal(u.status, 200, 'an unknown method inside a session is a JSON-RPC error in a 200');
    assert.equal(u.json.error.code, -32601);
});

test('a request without a session → 400 with a JSON-RPC error; the 2026 server/discover probe too', async (t) => {
    const d = await startHttpDaemon(t);
    const r = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: PING });
    assert.equal(r.status, 400);
    assertRpcError(r, -32000);
    const probe = await rawRequest(d, {
        method: 'POST',
        headers: postHeaders({ 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'server/discover' }),
        body: { jsonrpc: '2.0', id: 'server-discover-probe-1', method: 'server/discover', params: {} },
    });
    assert.equal(probe.status, 400, 'a dual-era client falls back to initialize only on a 4xx (not 401/403/5xx)');
    assertRpcError(probe);
    const probe2 = await rawRequest(d, { method: 'POST', headers: postHeaders(),
        body: { jsonrpc: '2.0', id: 'p', method: 'server/discover', params: {} } });
    assert.equal(probe2.status, 400);
    assertRpcError(probe2);
});

test('an unknown session → 404 -32001; DELETE → 200, then the id is 404 for every method', async (t) => {
    const d = await startHttpDaemon(t);
    const r = await rawRequest(d, { method: 'POST', headers: postHeaders({ 'Mcp-Session-Id': 'no-such-session' }), body: PING });
    assert.equal(r.status, 404);
    assertRpcError(r, -32001);
    const sid = await initSession(d);
    const h = postHeaders({ 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' });
    assert.equal((await rawRequest(d, { method: 'POST', headers: h, body: PING })).status, 200);
    const del = await rawRequest(d, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' } });
    assert.equal(del.status, 200);
    const again = await rawRequest(d, { method: 'POST', headers: h, body: PING });
    assert.equal(again.status, 404);
    assertRpcError(again, -32001);
    const notif = await rawRequest(d, { method: 'POST', headers: h, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    assert.equal(notif.status, 404);
    const del2 = await rawRequest(d, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } });
    assert.equal(del2.status, 404);
    const noId = await rawRequest(d, { method: 'DELETE', headers: {} });
    assert.equal(noId.status, 400);
    // a fresh initialize works after the 404, as the spec tells clients to do
    const sid2 = await initSession(d);
    assert.notEqual(sid2, sid);
});

test('MCP-Protocol-Version: absent → accepted (2025-03-26), supported → accepted, unsupported → 400, 2026-07-28 → its era', async (t) => {
    const d = await startHttpDaemon(t);
    const sid = await initSession(d);
    const base = postHeaders({ 'Mcp-Session-Id': sid });
    assert.equal((await rawRequest(d, { method: 'POST', headers: base, body: PING })).status, 200);
    for (const v of ['2025-11-25', '2025-06-18', '2025-03-26'])
        assert.equal((await rawRequest(d, { method: 'POST', headers: { ...base, 'MCP-Protocol-Version': v }, body: PING })).status, 200, v);
    for (const v of ['1999-01-01', 'garbage']) {
        const r = await rawRequest(d, { method: 'POST', headers: { ...base, 'MCP-Protocol-Version': v }, body: PING });
        assert.equal(r.status, 400, v);
        assertRpcError(r, -32000);
    }
    // 2026-07-28 names a request that stands alone: without its _meta envelope it is invalid params
    // (proto2026.test.mjs has the rest of that era).
    const r = await rawRequest(d, { method: 'POST', headers: { ...base, 'MCP-Protocol-Version': '2026-07-28' }, body: PING });
    assert.equal(r.status, 400);
    assertRpcError(r, -32602);
});

test('Accept without both media types → 406; Content-Type not JSON → 415', async (t) => {
    const d = await startHttpDaemon(t);
    for (const accept of ['application/json', 'text/event-stream', 'text/html', undefined]) {
        const h = postHeaders({ Accept: accept });
        if (accept === undefined) delete h.Accept;
        const r = await rawRequest(d, { method: 'POST', headers: h, body: INIT });
        assert.equal(r.status, 406, `Accept: ${accept}`);
        assertRpcError(r);
    }
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
        const h = postHeaders({ 'Content-Type': ct });
        if (ct === undefined) delete h['Content-Type'];
        const r = await rawRequest(d, { method: 'POST', headers: h, body: INIT });
        assert.equal(r.status, 415, `Content-Type: ${ct}`);
        assertRpcError(r);
    }
    const ok = await rawRequest(d, { method: 'POST', headers: postHeaders({ 'Content-Type': 'application/json; charset=utf-8', Accept: 'text/event-stream, application/json;q=0.9' }), body: INIT });
    assert.equal(ok.status, 200);
});

test('a body over MCP_EXEC_MAX_MESSAGE_BYTES → 413, with or without Content-Length; at the cap it is read', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_MAX_MESSAGE_BYTES: 8192 } });
    const big = JSON.stringify({ ...INIT, params: { ...INIT.params, pad: 'x'.repeat(9000) } });
    const r = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: big });
    assert.equal(r.status, 413);
    assertRpcError(r);
    const c = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: big, chunked: true });
    assert.equal(c.status, 413, 'chunked body over the cap');
    assertRpcError(c);
    const atCap = JSON.stringify({ ...INIT, params: { ...INIT.params, pad: '' } });
    const padded = atCap.replace('"pad":""', `"pad":"${'y'.repeat(8192 - atCap.length)}"`);
    assert.equal(Buffer.byteLength(padded), 8192);
    const ok = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: padded });
    assert.equal(ok.status, 200, ok.body);
    // the daemon still serves
    assert.equal((await rawRequest(d, { method: 'POST', headers: postHeaders(), body: INIT })).status, 200);
});

test('GET /mcp → 405 (no GET stream) and other methods → 405, both with Allow', async (t) => {
    const d = await startHttpDaemon(t);
    const sid = await initSession(d);
    const g = await rawRequest(d, { method: 'GET', headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sid } });
    assert.equal(g.status, 405);
    assert.match(g.headers.allow, /POST/);
    assert.doesNotMatch(g.headers.allow, /GET/);
    for (const m of ['PUT', 'PATCH', 'OPTIONS', 'HEAD']) {
        const r = await rawRequest(d, { method: m, headers: postHeaders() });
        assert.equal(r.status, 405, m);
        assert.ok(r.headers.allow, `${m}: no Allow`);
    }
    const s = await rawRequest(d, { method: 'POST', path: '/sse', headers: postHeaders(), body: PING });
    assert.equal(s.status, 405);
    assert.equal(s.headers.allow, 'GET');
    const m = await rawRequest(d, { method: 'GET', path: '/messages' });
    assert.equal(m.status, 405);
    assert.equal(m.headers.allow, 'POST');
});

test('unknown paths → 404; OAuth metadata is not served (a static-token server must not advertise OAuth)', async (t) => {
    const d = await startHttpDaemon(t);
    for (const p of ['/', '/mcpx', '/.well-known/oauth-protected-resource', '/.well-known/oauth-authorization-server']) {
        const r = await rawRequest(d, { method: 'GET', path: p });
        assert.equal(r.status, 404, p);
    }
});

test('bad JSON → 400 -32700; not a JSON-RPC object → 400 -32600; a second initialize → 400', async (t) => {
    const d = await startHttpDaemon(t);
    const r = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: '{"jsonrpc":' });
    assert.equal(r.status, 400);
    assertRpcError(r, -32700);
    const a = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: '[1,2]' });
    assert.equal(a.status, 400);
    assertRpcError(a, -32600);
    const sid = await initSession(d);
    const h = postHeaders({ 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' });
    const bad = await rawRequest(d, { method: 'POST', headers: h, body: 'nope' });
    assert.equal(bad.status, 400);
    assertRpcError(bad, -32700);
    const re = await rawRequest(d, { method: 'POST', headers: h, body: INIT });
    assert.equal(re.status, 400);
    assertRpcError(re, -32600);
    const bad2 = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} } });
    assert.equal(bad2.status, 400, 'initialize without protocolVersion creates no session');
    assert.equal(bad2.headers['mcp-session-id'], undefined);
});

test('Host or Origin not allowed → 403 before anything else; loopback names and configured ones pass', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_ALLOWED_HOSTS: 'mcp.example.test', MCP_EXEC_ALLOWED_ORIGINS: 'https://app.example.test' } });
    const evil = [
        { Host: 'evil.example.com' },
        { Host: `evil.example.com:${d.port}`, Origin: 'http://evil.example.com' },
        { Origin: 'http://evil.example.com' },
        { Origin: 'null' },
        { Host: `localhost.evil.example.com:${d.port}` },
    ];
    for (const h of evil) {
        // a broken request otherwise (wrong method, path, media type): 403 still comes first
        for (const [method, path] of [['POST', '/mcp'], ['PUT', '/mcp'], ['GET', '/nope'], ['GET', '/sse']]) {
            const r = await rawRequest(d, { method, path, headers: { ...postHeaders(), ...h }, body: method === 'POST' ? INIT : undefined });
            assert.equal(r.status, 403, `${method} ${path} ${JSON.stringify(h)}`);
            assertRpcError(r);
        }
    }
    const good = [
        { Host: `127.0.0.1:${d.port}`, Origin: `http://127.0.0.1:${d.port}` },
        { Host: `localhost:${d.port}`, Origin: 'http://localhost:3000' },
        { Host: `[::1]:${d.port}` },
        { Host: 'mcp.example.test' },
        { Origin: 'https://app.example.test' },
    ];
    for (const h of good) {
        const r = await rawRequest(d, { method: 'POST', headers: { ...postHeaders(), ...h }, body: INIT });
        assert.equal(r.status, 200, JSON.stringify(h));
    }
});

test('legacy HTTP+SSE: endpoint event, 202 Accepted, 400 without sessionId, 404 unknown, 400 bad JSON, 415', async (t) => {
    const d = await startHttpDaemon(t);
    const l = await openLegacy(d);
    assert.equal(l.response.headers.get('content-type'), 'text/event-stream');
    assert.match(new URL(l.endpoint).pathname, /^\/messages$/);
    assert.match(new URL(l.endpoint).searchParams.get('sessionId'), /^[\x21-\x7e]{32}$/);
    const init = await l.request(INIT);
    assert.equal(init.result.protocolVersion, '2025-11-25');
    const p = await l.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(p.status, 202);
    assert.equal(await p.text(), 'Accepted');
    assert.deepEqual((await l.request(PING)).result, {});
    const q = await rawRequest(d, { method: 'POST', path: '/messages', headers: { 'Content-Type': 'application/json' }, body: PING });
    assert.equal(q.status, 400);
    assertRpcError(q);
    const u = await rawRequest(d, { method: 'POST', path: '/messages?sessionId=nonexistent', headers: { 'Content-Type': 'application/json' }, body: PING });
    assert.equal(u.status, 404);
    assertRpcError(u);
    const bad = await l.post('{nope');
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.code, -32700);
    const ct = await l.post(PING, { 'Content-Type': 'text/plain' });
    assert.equal(ct.status, 415);
    // a Streamable session id is not a legacy one and vice versa
    const sid = new URL(l.endpoint).searchParams.get('sessionId');
    const x = await rawRequest(d, { method: 'POST', headers: postHeaders({ 'Mcp-Session-Id': sid }), body: PING });
    assert.equal(x.status, 404);
    await l.close();
    // the stream closed: its session is gone
    const after = await rawRequest(d, { method: 'POST', path: `/messages?sessionId=${sid}`, headers: { 'Content-Type': 'application/json' }, body: PING });
    assert.equal(after.status, 404);
});

test('MCP_EXEC_TRANSPORT=sse serves only the legacy transport: /mcp is 404', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_TRANSPORT: 'sse' } });
    const r = await rawRequest(d, { method: 'POST', headers: postHeaders(), body: INIT });
    assert.equal(r.status, 404);
    const l = await openLegacy(d);
    assert.equal((await l.request(INIT)).result.serverInfo.name, 'mcp-execd');
    await l.close();
});

test('no request in this file got a 5xx: a sweep of malformed requests', async (t) => {
    const d = await startHttpDaemon(t);
    const sid = await initSession(d);
    const bodies = ['', 'null', '{}', '[]', '"x"', '{"jsonrpc":"2.0"}', '{"jsonrpc":"1.0","id":1,"method":"ping"}',
        '{"jsonrpc":"2.0","id":{},"method":"ping"}', '{"jsonrpc":"2.0","id":1,"method":5}', '\u0000', 'x'.repeat(5000)];
    for (const withSession of [false, true]) {
        for (const b of bodies) {
            const h = postHeaders(withSession ? { 'Mcp-Session-Id': sid } : {});
            const r = await rawRequest(d, { method: 'POST', headers: h, body: b });
            assert.ok(r.status >= 200 && r.status < 500, `${r.status} for ${JSON.stringify(b).slice(0, 40)}`);
            if (r.status >= 400) assertRpcError(r);
        }
    }
    for (const p of ['/sse', '/messages', '/messages?sessionId=', '/mcp?x=1']) {
        for (const m of ['GET', 'POST', 'DELETE']) {
            if (p === '/sse' && m === 'GET') continue; // a stream: openLegacy() covers it
            const r = await rawRequest(d, { method: m, path: p, headers: { Accept: MCP_ACCEPT, 'Content-Type': 'application/json' }, body: m === 'POST' ? '{}' : undefined });
            assert.ok(r.status < 500, `${m} ${p}: ${r.status}`);
        }
    }
});
