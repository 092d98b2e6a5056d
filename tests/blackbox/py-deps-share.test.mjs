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
