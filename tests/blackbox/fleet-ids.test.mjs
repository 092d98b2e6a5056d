// MCP_EXEC_INSTANCE (issue 19.1): the ids that name state kept on one instance — a task's id and a
// Python session's handle — carry the instance's tag, so a load balancer (units/haproxy-mcp-execd.cfg)
// sends what names them to that instance; they work as before, and without the variable they are
// the bare 128-bit hex. A bad tag is refused at start naming the variable.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { RawDaemon, startDaemon, binaryPath, daemonEnv, test } from './lib/index.mjs';
import { callTool } from './lib/files.mjs';

const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const EXT = 'io.modelcontextprotocol/tasks';
const modern = (extra = {}) => ({ ...extra, _meta: { [PV]: '2026-07-28', [CAPS]: { extensions: { [EXT]: {} } } } });

test('MCP_EXEC_INSTANCE: a task id is "<tag>-<hex>" and works for tasks/get until the result', async (t) => {
    // MCP_EXEC_TASK_INLINE_MS=0: a short call is a task too (else it is answered inline, no task).
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_INSTANCE: 'i8081', MCP_EXEC_TASK_INLINE_MS: '0' } });
    const created = (await d.request('tools/call', modern({ name: 'exec', arguments: { code: 'print(6 * 7)' } }))).result;
    assert.match(created.taskId, /^i8081-[0-9a-f]{32}$/, JSON.stringify(created));
    let task;
    for (let i = 0; i < 300; i++) {
        task = (await d.request('tasks/get', modern({ taskId: created.taskId }))).result;
        if (task.status !== 'working') break;
        await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(task.status, 'completed', JSON.stringify(task));
    assert.equal(task.result.structuredContent.stdout, '42\n');
    // The hex alone names nothing; another instance's tag (what HAProxy sends here when that
    // instance is down) gets an error saying the instance is gone, repeating only the caller's id.
    const hex = created.taskId.slice('i8081-'.length);
    const bare = await d.request('tasks/get', modern({ taskId: hex }));
    assert.equal(bare.error?.code, -32602, JSON.stringify(bare));
    assert.match(bare.error.message, /unknown, expired, not yours, or lost when mcp-execd restarted/);
    const other = await d.request('tasks/get', modern({ taskId: `i8083-${hex}` }));
    assert.equal(other.error?.code, -32602, JSON.stringify(other));
    assert.match(other.error.message, /made by instance i8083, which is gone or unreachable/);
    const own = await d.request('tasks/get', modern({ taskId: `i8081-${'0'.repeat(32)}` }));
    assert.match(own.error?.message ?? '', /unknown, expired, not yours, or lost when mcp-execd restarted/, JSON.stringify(own));
});

test('MCP_EXEC_INSTANCE: a session handle is "<tag>-<hex>" and keeps its state', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_INSTANCE: 'i8082', MCP_EXEC_WARM_POOL: '0' } });
    const o = await callTool(d.client, 'session_open', {});
    assert.equal(o.isError, false, JSON.stringify(o.result));
    assert.match(o.sc.session, /^i8082-[0-9a-f]{32}$/);
    assert.equal((await callTool(d.client, 'exec', { code: 'x = 5', session: o.sc.session })).isError, false);
    const r = await callTool(d.client, 'exec', { code: 'print(x * 2)', session: o.sc.session });
    assert.equal(r.sc.stdout, '10\n');
    const wrong = await callTool(d.client, 'exec', { code: 'print(x)', session: o.sc.session.replace('i8082', 'i8083') });
    assert.equal(wrong.isError, true);
    assert.match(wrong.text, /made by instance i8083, which is gone or unreachable/);
    // One of this instance's form that it does not have: the one answer for every unknown handle.
    const closed = await callTool(d.client, 'session_close', { session: `i8082-${'0'.repeat(32)}` });
    assert.equal(closed.isError, true);
    assert.match(closed.text, /^unknown session: the handle is not an open Python session/);
    assert.equal((await callTool(d.client, 'session_close', { session: o.sc.session })).isError, false);
});

test('MCP_EXEC_INSTANCE without it: ids are the bare hex; a bad tag exits 2 naming the variable', async () => {
    for (const bad of ['I8081', 'a-b', 'x'.repeat(17), 'i 1']) {
        const r = spawnSync(binaryPath(), [], { env: daemonEnv({ MCP_EXEC_INSTANCE: bad }), input: '', timeout: 20000 });
        assert.equal(r.status, 2, `${bad}: ${r.stderr}`);
        assert.match(r.stderr.toString(), /MCP_EXEC_INSTANCE/);
    }
});
