// Issue 8: dependencies from a PEP 503 simple index served on 127.0.0.1 (MCP_EXEC_INDEX_URL): the
// script imports its dependency, the run itself still has no network (not even to the index that
// served it), a source that is down is a clear tool error, and two concurrent calls with the same
// new requirements install once. Run with BLACKBOX_TEST_TIMEOUT_MS=600000 on a loaded machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon } from './lib/index.mjs';
import { callTool, makeSources, pep723, tempDir, cacheState, installsLogged, freePort } from './lib/pydeps.mjs';

const T = { timeout: 600000 };

test('a dependency from an HTTP index imports; the run cannot reach the index (or anything)', T, async (t) => {
    const src = await makeSources(t, [{ name: 'netpkg', version: '2.1' }]);
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_INDEX_URL: src.indexUrl, MCP_EXEC_ENV_CACHE_DIR: cache } });
    const script = pep723(['netpkg>=2'], [
        'import netpkg, socket',
        'print(netpkg.GREETING)',
        'for fam, addr in ((socket.AF_INET, ("127.0.0.1", ' + src.port + ')), (socket.AF_INET, ("1.1.1.1", 53))):',
        '    try:',
        '        s = socket.socket(fam, socket.SOCK_STREAM)',
        '        s.settimeout(3)',
        '        s.connect(addr)',
        '        print("connected", addr)',
        '    except OSError as e:',
        '        print("refused", e.errno)',
    ].join('\n'));
    const r = await callTool(d.client, 'execute_python', { script });
    assert.equal(r.isError, false, r.text);
    const lines = r.sc.stdout.trim().split('\n');
    assert.equal(lines[0], 'hello from netpkg 2.1', r.sc.stdout + r.sc.stderr);
    assert.equal(lines.length, 3, r.sc.stdout);
    for (const l of lines.slice(1)) assert.match(l, /^refused /, 'the run reached the network: ' + r.sc.stdout);
    assert.equal(r.sc.environment.reused, false);
    const env = await callTool(d.client, 'check_environment', {});
    assert.equal(env.sc.sources.index_url, src.indexUrl);
    assert.equal(env.sc.cache.installs_completed, 1);
});

test('a source that is down is a tool error (pip\'s message), and the daemon goes on', T, async (t) => {
    const port = await freePort(); // nothing listens there
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, {
        env: { MCP_EXEC_INDEX_URL: `http://127.0.0.1:${port}/simple/`, MCP_EXEC_ENV_CACHE_DIR: cache, MCP_EXEC_INSTALL_TIMEOUT_S: 120 },
    });
    const r = await callTool(d.client, 'execute_python', { script: pep723(['hellopkg==1.0'], 'import hellopkg\n') });
    assert.equal(r.isError, true, r.text);
    assert.ok(r.text.includes(`127.0.0.1:${port}`), r.text);
    assert.match(r.text, /could not be installed/);
    assert.match(r.text, /Connection refused|No matching distribution|Could not find a version/);
    assert.deepEqual(cacheState(cache).envs, []);
    const ok = await callTool(d.client, 'execute_python', { script: 'print("fine")' });
    assert.equal(ok.sc?.stdout, 'fine\n');
});

test('two concurrent calls with the same new requirements install once', T, async (t) => {
    const src = await makeSources(t, [{ name: 'twinpkg', version: '1.0' }]);
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_INDEX_URL: src.indexUrl, MCP_EXEC_ENV_CACHE_DIR: cache } });
    const script = pep723(['twinpkg==1.0'], 'import twinpkg\nprint(twinpkg.GREETING)\n');
    const [a, b] = await Promise.all([
        callTool(d.client, 'execute_python', { script }),
        callTool(d.client, 'execute_python', { script: 'import twinpkg\nprint(twinpkg.VERSION)\n', dependencies: ['TwinPkg==1.0'] }),
    ]);
    assert.equal(a.isError, false, a.text);
    assert.equal(b.isError, false, b.text);
    assert.equal(a.sc.stdout, 'hello from twinpkg 1.0\n');
    assert.equal(b.sc.stdout, '1.0\n');
    assert.equal(a.sc.environment.key, b.sc.environment.key);
    // Both waited for the same install: neither found it ready, one install happened.
    assert.equal(a.sc.environment.reused, false);
    assert.equal(b.sc.environment.reused, false);
    assert.equal(installsLogged(d.stderr()), 1, d.stderr());
    const env = await callTool(d.client, 'check_environment', {});
    assert.equal(env.sc.cache.installs_completed, 1);
    assert.deepEqual(cacheState(cache).envs, [a.sc.environment.key]);
    t.diagnostic(`both answered: ${Math.round(a.ms)} ms and ${Math.round(b.ms)} ms, install ${a.sc.environment.install_ms} ms`);
});
