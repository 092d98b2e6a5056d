// The run queue is shared by every HTTP session, whatever its transport (issue 6, point 4): runs
// of all clients share MCP_EXEC_MAX_CONCURRENT and MCP_EXEC_QUEUE_MAX, and a full queue is a tool
// error that says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callExec, sleep } from './lib/index.mjs';
import { startHttpDaemon, connectSdk } from './lib/http-daemon.mjs';

test('the queue is shared by every session: a full queue is a tool error that says so', async (t) => {
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_MAX_CONCURRENT: 1, MCP_EXEC_QUEUE_MAX: 1 } });
    const cs = await Promise.all([connectSdk(t, d, 'http'), connectSdk(t, d, 'sse'), connectSdk(t, d, 'http')]);
    const slow = 'import time; time.sleep(1.5); print("slow")';
    const first = callExec(cs[0], { code: slow });
    await sleep(300);
    const second = callExec(cs[1], { code: slow });
    await sleep(300);
    const third = await callExec(cs[2], { code: 'print(3)' });
    assert.equal(third.isError, true, JSON.stringify(third.result));
    assert.match(third.text, /queue is full/);
    assert.match(third.text, /MCP_EXEC_QUEUE_MAX=1/);
    assert.equal((await first).sc.stdout, 'slow\n');
    const s = await second;
    assert.equal(s.sc.stdout, 'slow\n');
    assert.ok(s.sc.queue_ms >= 500, `the second call was not queued behind the first: queue_ms ${s.sc.queue_ms}`);
});
