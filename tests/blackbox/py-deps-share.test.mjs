// Issue 15, point 7 (d): one environment may not grow past MCP_EXEC_ENV_CACHE_MAX. Before, an
// install of any size completed and was kept ("a single environment larger than the limit still
// serves its run"); now the installer measures the tree while pip runs and stops it with a clear
// error, and nothing of it stays in the cache.
import assert from 'node:assert/strict';
import { startDaemon, test } from './lib/index.mjs';
import { callTool, makeSources, pep723, tempDir, cacheState } from './lib/pydeps.mjs';

test('an environment larger than MCP_EXEC_ENV_CACHE_MAX is stopped with a clear error', { timeout: 600000 }, async (t) => {
    // ~3 MiB of incompressible data in the wheel, a 1 MiB cache.
    const src = await makeSources(t, [{ name: 'bigpkg', version: '1.0', padding: 3 * 1024 * 1024 }, { name: 'smallpkg', version: '1.0' }]);
    src.stop();
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: cache, MCP_EXEC_ENV_CACHE_MAX: '1M' } });
    const r = await callTool(d.client, 'execute_python', { script: pep723(['bigpkg'], 'print("ran")\n') });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /installing stopped: the environment grew to \d+ bytes, past MCP_EXEC_ENV_CACHE_MAX \(1048576 bytes\)/, r.text);
    assert.deepEqual(cacheState(cache).envs, []);
    assert.deepEqual(cacheState(cache).tmp, []);
    // A small one still installs and runs.
    const ok = await callTool(d.client, 'execute_python', { script: pep723(['smallpkg'], 'import smallpkg\nprint("ok")\n') });
    assert.equal(ok.sc?.stdout, 'ok\n', ok.text);
});

test('installs at once are bounded by MCP_EXEC_MAX_CONCURRENT: the others wait, then run', { timeout: 600000 }, async (t) => {
    // The index answers wheel downloads after 4 s: installs overlap unless they are bounded.
    const src = await makeSources(t, ['slowa', 'slowb', 'slowc'].map((name) => ({ name, version: '1.0' })), { delayMs: 4000 });
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_INDEX_URL: src.indexUrl, MCP_EXEC_ENV_CACHE_DIR: cache, MCP_EXEC_MAX_CONCURRENT: '1' } });
    const calls = ['slowa', 'slowb', 'slowc'].map((name) =>
        callTool(d.client, 'execute_python', { script: pep723([name], `import ${name}\nprint("${name}")\n`) }, { timeoutMs: 300000 }));
    let done = false;
    let most = 0;
    const all = Promise.all(calls).finally(() => { done = true; });
    while (!done) {
        most = Math.max(most, cacheState(cache).tmp.length);
        await new Promise((r) => setTimeout(r, 100));
    }
    const rs = await all;
    for (const [i, name] of ['slowa', 'slowb', 'slowc'].entries())
        assert.equal(rs[i].sc?.stdout, `${name}\n`, rs[i].text);
    assert.ok(most <= 1, `${most} installs were in tmp/ at once with MCP_EXEC_MAX_CONCURRENT=1`);
    assert.match(d.stderr(), /installing environment [0-9a-f]+ waits: 1 installs at once \(MCP_EXEC_MAX_CONCURRENT\)/);
});
