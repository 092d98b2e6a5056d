// Issue 8: dependencies from a wheelhouse (MCP_EXEC_WHEELHOUSE): a wheel made here, a PEP 723
// script importing it, the environment installed once and reused (timed), pip's own message for an
// unknown package, and the daemon fine afterwards. Installs are slow on a loaded machine: run with
// BLACKBOX_TEST_TIMEOUT_MS=600000.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon } from './lib/index.mjs';
import { callTool, makeSources, pep723, tempDir, cacheState, installsLogged } from './lib/pydeps.mjs';

const T = { timeout: 600000 };

test('a PEP 723 script imports its dependency from the wheelhouse; the second run reuses the environment', T, async (t) => {
    const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: cache }, listTools: true });
    const script = pep723(['hellopkg==1.0'], 'import hellopkg, sys\nprint(hellopkg.GREETING)\nprint(sys.prefix)\n');

    const first = await callTool(d.client, 'execute_python', { script });
    assert.equal(first.isError, false, first.text);
    assert.equal(first.sc.exit_code, 0, first.sc.stderr);
    assert.equal(first.sc.stdout, 'hello from hellopkg 1.0\n/venv\n');
    assert.deepEqual(first.sc.dependencies, ['hellopkg==1.0']);
    assert.equal(first.sc.environment.reused, false);
    assert.ok(first.sc.environment.install_ms > 0);
    assert.equal(first.sc.environment.mount, '/venv');

    // The same requirements written differently (case, the parameter instead of the block): same key.
    const second = await callTool(d.client, 'execute_python', {
        script: 'import hellopkg\nprint(hellopkg.GREETING)\n', dependencies: ['HelloPkg==1.0'],
    });
    assert.equal(second.isError, false, second.text);
    assert.equal(second.sc.stdout, 'hello from hellopkg 1.0\n');
    assert.equal(second.sc.environment.key, first.sc.environment.key);
    assert.equal(second.sc.environment.reused, true);
    assert.equal(second.sc.environment.install_ms, 0);
    t.diagnostic(`first call ${Math.round(first.ms)} ms (install ${first.sc.environment.install_ms} ms, run ` +
                 `${first.sc.duration_ms} ms); second call ${Math.round(second.ms)} ms (run ${second.sc.duration_ms} ms)`);
    assert.ok(second.ms < first.ms, `second ${second.ms} ms is not faster than first ${first.ms} ms`);

    // Installed once: one complete environment, nothing left in tmp/, one install in the log and
    // in check_environment.
    assert.deepEqual(cacheState(cache), { envs: [first.sc.environment.key], tmp: [], trash: [] });
    assert.equal(installsLogged(d.stderr()), 1, d.stderr());
    const env = await callTool(d.client, 'check_environment', {});
    assert.equal(env.sc.cache.installs_completed, 1);
    assert.equal(env.sc.cache.count, 1);
    assert.deepEqual(env.sc.cache.entries[0].requirements, ['hellopkg==1.0']);
    assert.equal(env.sc.sources.wheelhouse, src.wheelhouse);

    // The environment is read-only inside the run.
    const w = await callTool(d.client, 'execute_python', {
        script: 'import hellopkg, os\ntry:\n    open(os.path.join(os.path.dirname(hellopkg.__file__), "x"), "w")\n    print("wrote")\nexcept OSError as e:\n    print(type(e).__name__, e.errno)\n',
        dependencies: ['hellopkg==1.0'],
    });
    assert.match(w.sc.stdout, /^(OSError|PermissionError) (30|13)\n$/, w.sc.stdout + w.sc.stderr);
});

test('an unknown package is a tool error with pip\'s message; validate_script says which line; the daemon goes on', T, async (t) => {
    const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: cache } });
    const r = await callTool(d.client, 'execute_python', { script: pep723(['nosuchpkg==1.0'], 'print(1)\n') });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /No matching distribution found for nosuchpkg==1.0/);
    assert.deepEqual(cacheState(cache).envs, [], 'a failed install leaves no environment');
    assert.deepEqual(cacheState(cache).tmp, [], 'nor its temporary directory');

    const v = await callTool(d.client, 'validate_script', {
        script: pep723(['hellopkg==1.0', 'nosuchpkg==1.0'], 'import hellopkg\n'),
    });
    assert.equal(v.sc.valid, false);
    assert.deepEqual(v.sc.problems.map((p) => [p.line, p.check]), [[2, 'source']], JSON.stringify(v.sc.problems));
    assert.match(v.sc.problems[0].message, /nosuchpkg==1.0/);
    const good = await callTool(d.client, 'validate_script', { script: pep723(['hellopkg>=1'], 'import hellopkg\n') });
    assert.equal(good.sc.valid, true, JSON.stringify(good.sc));

    const ok = await callTool(d.client, 'execute_python', { script: 'print("fine")' });
    assert.equal(ok.sc?.stdout, 'fine\n');
});
