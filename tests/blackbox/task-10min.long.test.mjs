// Issue 17.3, as written: a task survives its client's request timeout — a run of 10 minutes, with
// clients whose request timeout is 60 s, completes and its result is fetched. In both eras at once:
// the 1.x SDK's experimental callToolStream over stdio (2025-11-25: it polls tasks/get, then
// tasks/result), and raw 2026-07-28 requests over HTTP, each standing alone on a new connection
// with a 60 s timeout. A `.long.test.mjs` file: run.sh starts it beside the other files, so its ten
// minutes overlap theirs instead of adding to the tier. No timing is asserted but "it ran its 600 s".
import assert from 'node:assert/strict';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { sleep, startDaemon, test } from './lib/index.mjs';
import { postHeaders, rawRequest, startHttpDaemon } from './lib/http-daemon.mjs';

const RUN_S = 600;
const REQUEST_TIMEOUT_MS = 60000;
const ENV = { MCP_EXEC_MAX_TIMEOUT_S: '900' };
// The run prints how long it slept, by its own clock: the result shows it waited the whole time.
const CODE = `import time\nt0 = time.monotonic()\ntime.sleep(${RUN_S})\nprint("slept", round(time.monotonic() - t0))`;
const MODERN = '2026-07-28';
const EXT = 'io.modelcontextprotocol/tasks';
const META = { 'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': { extensions: { [EXT]: {} } } };

async function sdk1xStdio(t) {
    const d = await startDaemon(t, { env: ENV });
    const params = { name: 'exec', arguments: { code: CODE, timeout_s: RUN_S + 120 } };
    let result, polls = 0;
    for await (const m of d.client.experimental.tasks.callToolStream(params, CallToolResultSchema,
        { timeout: REQUEST_TIMEOUT_MS, task: { ttl: 3600000 } })) {
        if (m.type === 'taskStatus') polls++;
        if (m.type === 'result') result = m.result;
        if (m.type === 'error') throw m.error;
    }
    assert.ok(polls >= 2, `polled ${polls} times`);
    return result;
}

async function modernHttp(t) {
    const d = await startHttpDaemon(t, { env: ENV });
    let id = 0;
    const post = async (method, params, name) => {
        const r = await rawRequest(d, { method: 'POST', timeoutMs: REQUEST_TIMEOUT_MS,
            headers: postHeaders({ 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method, 'Mcp-Name': name }),
            body: { jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta: META } } });
        assert.equal(r.status, 200, r.body);
        return r.json.result;
    };
    const created = await post('tools/call', { name: 'exec', arguments: { code: CODE, timeout_s: RUN_S + 120 } }, 'exec');
    assert.equal(created.resultType, 'task', JSON.stringify(created));
    const end = Date.now() + (RUN_S + 240) * 1000;
    for (;;) {
        const task = await post('tasks/get', { taskId: created.taskId }, created.taskId);
        if (task.status !== 'working') return task.result ?? task;
        assert.ok(Date.now() < end, 'the task is still working long after its run should have ended');
        await sleep(5000);
    }
}

test(`a ${RUN_S} s run as a task, clients with a ${REQUEST_TIMEOUT_MS / 1000} s request timeout: 1.x over stdio and 2026 over HTTP`,
    { timeout: (RUN_S + 300) * 1000 }, async (t) => {
        const [a, b] = await Promise.all([sdk1xStdio(t), modernHttp(t)]);
        for (const [who, r] of [['1.x stdio', a], ['2026 HTTP', b]]) {
            assert.equal(r?.isError, false, `${who}: ${JSON.stringify(r).slice(0, 500)}`);
            assert.equal(r.structuredContent.stdout, `slept ${RUN_S}\n`, who);
            assert.equal(r.structuredContent.timed_out, false, who);
        }
    });
