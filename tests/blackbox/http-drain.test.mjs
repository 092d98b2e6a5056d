// Health and drain for instances behind a load balancer (issue 19.2): GET /health answers ready or
// draining without the token and without starting anything; with MCP_EXEC_DRAIN_S, SIGTERM first
// drains (new requests get 503 with Retry-After, /health says draining, the calls in flight finish
// and are answered with their real results), then stops; past the bound, or at a second signal,
// the calls left are stopped and answered as in any stop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callExec, uniqueMarker, pySleeperExec, waitMarkerPresent, waitMarkerGone } from './lib/index.mjs';
import { startHttpDaemon, connectSdk, rawRequest, postHeaders, until } from './lib/http-daemon.mjs';

const TOKEN = 'drain-test-token-0123456789';
const AUTH = { Authorization: `Bearer ${TOKEN}` };

/** Python that shows up on the host with marker in its argv, sleeps, then prints `finished`. */
function sleeperThenPrint(marker, seconds) {
    return [
        'import os, sys',
        `exe = sys.executable or '/usr/bin/python3'`,
        `os.execv(exe, [exe, '-c', 'import time; time.sleep(${seconds}); print("finished")', ${JSON.stringify(marker)}])`,
    ].join('\n');
}

/** A daemon with env and, on an SDK session (connectOpts), a call in flight: exec of code(marker), with
 * marker in the run's argv, seen started on the host. */
async function callInFlight(t, env, code, timeout_s, connectOpts) {
    const d = await startHttpDaemon(t, { env });
    const c = await connectSdk(t, d, 'http', connectOpts);
    const marker = uniqueMarker();
    const inflight = callExec(c, { code: code(marker), timeout_s }, { timeoutMs: 90000 });
    assert.ok((await waitMarkerPresent(marker, 15000)).length > 0, 'the run never started');
    return { d, marker, inflight };
}

async function health(d, method = 'GET', headers = {}) {
    return rawRequest(d, { method, path: '/health', headers });
}

async function waitDraining(d) {
    let last;
    const ok = await until(async () => {
        try { last = await health(d); } catch (e) { last = { status: String(e) }; }
        return last.status === 503;
    }, 10000);
    assert.ok(ok, `/health never said draining: ${JSON.stringify(last)}`);
    assert.deepEqual(last.json, { status: 'draining' });
}

test('/health: ready without the token, the MCP endpoints still need it; HEAD too; other methods 405; Host checked', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_AUTH_TOKEN: TOKEN } });
    const h = await health(d);
    assert.equal(h.status, 200, h.body);
    assert.deepEqual(h.json, { status: 'ready' });
    assert.equal(h.headers['cache-control'], 'no-store');
    assert.equal((await health(d, 'HEAD')).status, 200);
    const post = await rawRequest(d, { method: 'POST', path: '/health', headers: postHeaders(), body: {} });
    assert.equal(post.status, 405);
    assert.match(post.headers.allow, /GET/);
    assert.equal((await health(d, 'GET', { Host: 'evil.example' })).status, 403, 'DNS rebinding: Host is checked');
    const mcp = await rawRequest(d, { method: 'POST', path: '/mcp', headers: postHeaders(), body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    assert.equal(mcp.status, 401, 'the token is still needed for /mcp');
    const metrics = await rawRequest(d, { path: '/metrics' });
    assert.equal(metrics.status, 401, 'and for /metrics');
    assert.doesNotMatch(h.body + JSON.stringify(h.headers), new RegExp(TOKEN));
    assert.doesNotMatch(d.stderr(), /run .* started|RUNS_TOTAL=[1-9]/, 'a health check starts no run');
});

test('MCP_EXEC_DRAIN_S: SIGTERM drains: 503 + Retry-After for new requests, the call in flight gets its real result, then exit 0', async (t) => {
    const { d, inflight } = await callInFlight(t, { MCP_EXEC_AUTH_TOKEN: TOKEN, MCP_EXEC_DRAIN_S: '120' },
        (marker) => sleeperThenPrint(marker, 4), 60, { headers: AUTH });
    d.kill('SIGTERM');
    await waitDraining(d);
    const fresh = await rawRequest(d, {
        method: 'POST', path: '/mcp', headers: postHeaders({ ...AUTH, 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'exec' }),
        body: { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'exec', arguments: { code: 'print(1)' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } },
    });
    assert.equal(fresh.status, 503, fresh.body);
    assert.equal(fresh.headers['retry-after'], '1');
    assert.match(fresh.json?.error?.message ?? '', /draining/);
    const r = await inflight;
    assert.equal(r.isError, false, JSON.stringify(r.result));
    assert.equal(r.sc.stdout, "finished\n");
    const { code } = await d.waitExit(20000);
    assert.equal(code, 0, d.stderr().slice(-2000));
    // The daemon's own account (daemon.c, daemon_on_signal and daemon_drain_check): the drain began
    // with the one call in flight, and the stop came because that call finished, not because the
    // bound ran out or a second signal came.
    assert.match(d.stderr(), /received TERM: draining: new requests get 503, the 1 call\(s\) in flight finish within 120 s \(MCP_EXEC_DRAIN_S\)/);
    assert.match(d.stderr(), /drained: no call is in flight any more; stopping/);
    assert.doesNotMatch(d.stderr(), /are over with|during the drain/);
});

test('MCP_EXEC_DRAIN_S: past the bound the call left is stopped and answered, naming the variable', async (t) => {
    const { d, marker, inflight } = await callInFlight(t, { MCP_EXEC_DRAIN_S: '1' }, (m) => pySleeperExec(m, 120), 120);
    d.kill('SIGTERM');
    const r = await inflight;
    assert.equal(r.isError, true, JSON.stringify(r.result));
    assert.match(r.text, /MCP_EXEC_DRAIN_S/);
    assert.equal((await d.waitExit(20000)).code, 0, d.stderr().slice(-2000));
    assert.match(d.stderr(), /the drain's 1 s \(MCP_EXEC_DRAIN_S\) are over with 1 call\(s\) in flight: they are stopped/);
    assert.deepEqual(await waitMarkerGone(marker, 5000), []);
});

test('MCP_EXEC_DRAIN_S: a second SIGTERM during the drain stops at once', async (t) => {
    const { d, marker, inflight } = await callInFlight(t, { MCP_EXEC_DRAIN_S: '300' }, (m) => pySleeperExec(m, 120), 120);
    d.kill('SIGTERM');
    await waitDraining(d);
    d.kill('SIGTERM');
    const r = await inflight;
    assert.equal(r.isError, true, JSON.stringify(r.result));
    assert.match(r.text, /shutting down/);
    assert.equal((await d.waitExit(20000)).code, 0, d.stderr().slice(-2000));
    assert.match(d.stderr(), /received TERM during the drain: stopping now/);
    assert.deepEqual(await waitMarkerGone(marker, 5000), []);
});

test('MCP_EXEC_DRAIN_S: with nothing in flight SIGTERM stops without waiting for the bound', async (t) => {
    // startHttpDaemon returns once the daemon logs that it serves: its checks are over, so the
    // signal takes the drain's path (a daemon still starting stops without one).
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_DRAIN_S: '300' } });
    d.kill('SIGTERM');
    assert.equal((await d.waitExit(20000)).code, 0, d.stderr().slice(-2000));
    // The drain began, and ended because nothing was in flight (not at the bound: we are 300 s short of it).
    assert.match(d.stderr(), /received TERM: draining: new requests get 503, the 0 call\(s\) in flight/);
    assert.match(d.stderr(), /drained: no call is in flight any more; stopping/);
});
