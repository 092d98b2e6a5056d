// Issue 8: the installation's own timeout (MCP_EXEC_INSTALL_TIMEOUT_S), a cancelled call while
// its environment is being installed, and the daemon's stop during an install (answered, the
// install killed: under the asan tier nothing of it is left at exit). Run with
// BLACKBOX_TEST_TIMEOUT_MS=600000 on a loaded machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, RawDaemon, sleep } from './lib/index.mjs';
import { callTool, makeSources, pep723, tempDir, cacheState, installsLogged } from './lib/pydeps.mjs';

const T = { timeout: 600000 };
const use = (name) => pep723([`${name}==1.0`], `import ${name}\nprint(${name}.GREETING)\n`);

test('an install over MCP_EXEC_INSTALL_TIMEOUT_S is stopped: a tool error naming the limit, nothing cached', T, async (t) => {
    const slow = await makeSources(t, [{ name: 'stuckpkg', version: '1.0' }], { delayMs: 120000 });
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, {
        env: { MCP_EXEC_INDEX_URL: slow.indexUrl, MCP_EXEC_ENV_CACHE_DIR: cache, MCP_EXEC_INSTALL_TIMEOUT_S: 5 },
    });
    const r = await callTool(d.client, 'execute_python', { script: use('stuckpkg'), timeout_seconds: 60 });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /MCP_EXEC_INSTALL_TIMEOUT_S/);
    assert.ok(r.ms < 40000, `answered after ${Math.round(r.ms)} ms`);
    assert.deepEqual(cacheState(cache), { envs: [], tmp: [], trash: [] });
    const ok = await callTool(d.client, 'execute_python', { script: 'print("fine")' });
    assert.equal(ok.sc?.stdout, 'fine\n');
});

test('a call cancelled while its environment installs gets no answer; the install completes and serves the next call', T, async (t) => {
    const src = await makeSources(t, [{ name: 'cancelpkg', version: '1.0' }], { delayMs: 3000 });
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_INDEX_URL: src.indexUrl, MCP_EXEC_ENV_CACHE_DIR: cache } });
    const ac = new AbortController();
    const first = callTool(d.client, 'execute_python', { script: use('cancelpkg') }, { signal: ac.signal });
    // Cancel once the install is under way.
    for (let i = 0; i < 300 && cacheState(cache).tmp.length === 0; i++) await sleep(100);
    assert.ok(cacheState(cache).tmp.length > 0, 'the install never started');
    ac.abort();
    await assert.rejects(first, /abort/i);
    const second = await callTool(d.client, 'execute_python', { script: use('cancelpkg') });
    assert.equal(second.isError, false, second.text);
    assert.equal(second.sc.stdout, 'hello from cancelpkg 1.0\n');
    // One install in all: the cancelled call's install went on, and the second call used it (it
    // either waited for it or found it done).
    for (let i = 0; i < 50 && installsLogged(d.stderr()) === 0; i++) await sleep(100);
    assert.equal(installsLogged(d.stderr()), 1, d.stderr());
    const ping = await d.client.ping();
    assert.deepEqual(ping, {});
    assert.deepEqual(d.errors, [], 'the cancelled call was answered anyway');
});

test('SIGTERM during an install answers the call and exits at once: the install is killed, nothing cached', T, async (t) => {
    const slow = await makeSources(t, [{ name: 'slowpkg', version: '1.0' }], { delayMs: 60000 });
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_INDEX_URL: slow.indexUrl, MCP_EXEC_ENV_CACHE_DIR: cache } });
    await d.initialize('2025-11-25', 30000);
    const id = d.send('tools/call', { name: 'execute_python', arguments: { script: use('slowpkg') } });
    for (let i = 0; i < 300 && cacheState(cache).tmp.length === 0; i++) await sleep(100);
    assert.ok(cacheState(cache).tmp.length > 0, 'the install never started');
    const t0 = Date.now();
    d.kill('SIGTERM');
    const res = await d.response(id, 20000);
    assert.equal(res.result?.isError, true, JSON.stringify(res));
    const ex = await d.waitExit(20000);
    assert.equal(ex.code, 0, JSON.stringify(ex) + d.stderrText.slice(-1500));
    // Not after the index's 60 s: the install did not hold the teardown.
    assert.ok(Date.now() - t0 < 15000, `exited ${Date.now() - t0} ms after SIGTERM`);
    assert.deepEqual(cacheState(cache), { envs: [], tmp: [], trash: [] });
});
