// The Grafana dashboard shipped for /metrics (units/examples/grafana-mcp-execd.json, issue 33.5):
// the shape Grafana's dashboard schema asks for (title, uid, schemaVersion, panels each with a type,
// a gridPos and, but for rows, targets on the Prometheus data source variable), and every metric a
// panel's expression names is one a real daemon exports: scraped from this binary after a call of a
// tenant, so that the per-tenant families are there too. The panels the issue lists are there.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from './lib/index.mjs';
import { startHttpDaemon } from './lib/http-daemon.mjs';

const FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../units/examples/grafana-mcp-execd.json');
const TOKEN = 'grafana-test-token';

test('the Grafana dashboard has Grafana\'s shape and names only metrics the daemon exports', async (t) => {
    const dash = JSON.parse(fs.readFileSync(FILE, 'utf8'));
    assert.equal(typeof dash.title, 'string');
    assert.equal(typeof dash.uid, 'string');
    assert.ok(Number.isInteger(dash.schemaVersion) && dash.schemaVersion >= 36, `schemaVersion ${dash.schemaVersion}`);
    const vars = dash.templating?.list ?? [];
    const ds = vars.find((v) => v.type === 'datasource');
    assert.equal(ds?.query, 'prometheus', 'a Prometheus data source variable');
    assert.ok(Array.isArray(dash.panels) && dash.panels.length > 0);

    const exprs = [];
    const ids = new Set();
    for (const p of dash.panels) {
        const where = `panel ${JSON.stringify(p.title)}`;
        assert.equal(typeof p.type, 'string', where);
        assert.equal(typeof p.title, 'string', where);
        assert.ok(!ids.has(p.id), `${where}: id ${p.id} twice`);
        ids.add(p.id);
        for (const k of ['x', 'y', 'w', 'h']) assert.ok(Number.isInteger(p.gridPos?.[k]), `${where}: gridPos.${k}`);
        assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${where}: wider than the grid`);
        if (p.type === 'row') continue;
        assert.equal(p.datasource?.uid, `\${${ds.name}}`, `${where}: its data source is the variable`);
        assert.ok(Array.isArray(p.targets) && p.targets.length > 0, `${where}: targets`);
        for (const tg of p.targets) {
            assert.equal(typeof tg.expr, 'string', where);
            assert.equal(typeof tg.refId, 'string', where);
            exprs.push([p.title, tg.expr]);
        }
    }
    // Panels do not overlap.
    const boxes = dash.panels.map((p) => [p.title, p.gridPos]);
    for (let i = 0; i < boxes.length; i++) {
        for (const [tb, b] of boxes.slice(i + 1)) {
            const [ta, a] = boxes[i];
            assert.ok(!(a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h), `${ta} overlaps ${tb}`);
        }
    }

    // What a real daemon exports, once a tenant (the token's, "default") has run a call.
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_AUTH_TOKEN: TOKEN, MCP_EXEC_WARM_POOL: '0' } });
    const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
                      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'exec' };
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const r = await fetch(`http://127.0.0.1:${d.port}/mcp`, { method: 'POST', headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'exec', arguments: { code: 'print(1)' }, _meta: meta } }) });
    assert.equal(r.status, 200);
    await r.text();
    const text = await (await fetch(`http://127.0.0.1:${d.port}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
    const exported = new Set();
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
        exported.add(name);
        if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exported.add(name + s);
    }
    assert.ok(exported.has('mcp_execd_tenant_runs_total'), 'the per-tenant families after a tenant\'s call');

    const named = new Set();
    for (const [title, expr] of exprs) {
        for (const [m] of expr.matchAll(/\bmcp_execd_[a-z0-9_]+/g)) {
            assert.ok(exported.has(m), `panel ${JSON.stringify(title)} names ${m}, which the daemon does not export`);
            named.add(m);
        }
    }
    // The panels the issue asks for: runs by outcome, queue wait, durations, memory, egress,
    // tenants, ready sandboxes, sessions.
    for (const m of ['mcp_execd_runs_total', 'mcp_execd_run_queue_wait_seconds_bucket', 'mcp_execd_run_duration_seconds_bucket',
                     'mcp_execd_run_memory_peak_bytes_bucket', 'mcp_execd_egress_connections_total', 'mcp_execd_tenant_runs_total',
                     'mcp_execd_pool_ready', 'mcp_execd_py_sessions_open']) {
        assert.ok(named.has(m), `no panel shows ${m}`);
    }
});
