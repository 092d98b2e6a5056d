// Issue 8: the environment cache survives a restart, evicts the least recently used environment
// when over MCP_EXEC_ENV_CACHE_MAX, and a daemon killed in the middle of an install leaves nothing a
// later run would use. Run with BLACKBOX_TEST_TIMEOUT_MS=600000 on a loaded machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, sleep, descendants, procCmdline, procStat, findByMarker, reapMarker, uniqueMarker, waitMarkerGone, waitMarkerPresent, SYSTEM_PATH } from './lib/index.mjs';
import { callTool, makeSources, pep723, tempDir, cacheState, installsLogged } from './lib/pydeps.mjs';

const T = { timeout: 600000 };
const use = (name) => pep723([`${name}==1.0`], `import ${name}\nprint(${name}.GREETING)\n`);

test('a full cache evicts the least recently used environment; the cache survives restarts', T, async (t) => {
    // Each environment holds ~300 KiB of incompressible data (plus ~100 KiB of venv): two fit in
    // 1 MiB, three do not.
    const pkgs = ['pkga', 'pkgb', 'pkgc'].map((name) => ({ name, version: '1.0', padding: 300 * 1024 }));
    const src = await makeSources(t, pkgs);
    const cache = tempDir(t, 'mcp-execd-cache-');
    const env = { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: cache, MCP_EXEC_ENV_CACHE_MAX: '1M' };

    fs.chmodSync(cache, 0o755); // as an older version or CacheDirectoryMode=0755 left it
    let d = await startDaemon(t, { env });
    const a = await callTool(d.client, 'execute_python', { script: use('pkga') });
    assert.equal(a.sc?.stdout, 'hello from pkga 1.0\n', a.text);
    // Issue 29 #8: nobody but the daemon lists the cache; the installer passes through the root and
    // tmp/ to its own directory, runs get theirs from a descriptor.
    const mode = (p) => (fs.statSync(path.join(cache, p)).mode & 0o777).toString(8);
    assert.deepEqual(['.', 'envs', 'tmp', 'trash'].map(mode), ['711', '700', '711', '700']);
    await d.close();
    await d.exited;

    // A new daemon finds pkga's environment installed.
    d = await startDaemon(t, { env });
    const a2 = await callTool(d.client, 'execute_python', { script: use('pkga') });
    assert.equal(a2.sc.environment.reused, true, 'the cache did not survive the restart');
    const b = await callTool(d.client, 'execute_python', { script: use('pkgb') });
    assert.equal(b.sc?.stdout, 'hello from pkgb 1.0\n', b.text);
    assert.equal(cacheState(cache).envs.length, 2);
    // pkga is used again (mtime resolution: be clearly later than pkgb's install), so pkgb is now
    // the least recently used.
    await sleep(1100);
    const a3 = await callTool(d.client, 'execute_python', { script: use('pkga') });
    assert.equal(a3.sc.environment.reused, true);
    const c = await callTool(d.client, 'execute_python', { script: use('pkgc') });
    assert.equal(c.sc?.stdout, 'hello from pkgc 1.0\n', c.text);

    const keys = cacheState(cache).envs;
    assert.deepEqual(keys.sort(), [a.sc.environment.key, c.sc.environment.key].sort(), 'pkgb should have been evicted');
    assert.match(d.stderr(), new RegExp(`evicted environment ${b.sc.environment.key}`));
    const report = await callTool(d.client, 'check_environment', {});
    assert.ok(report.sc.cache.size_bytes <= 1024 * 1024, JSON.stringify(report.sc.cache));
    assert.equal(report.sc.cache.max_bytes, 1024 * 1024);
    // The evicted one is installed again when asked for.
    const b2 = await callTool(d.client, 'execute_python', { script: use('pkgb') });
    assert.equal(b2.sc.environment.reused, false);
    assert.equal(b2.sc.stdout, 'hello from pkgb 1.0\n');
});

test('a daemon killed in the middle of an install leaves no environment a later run would use', T, async (t) => {
    // The index answers wheel downloads only after 60 s: the install is caught in the middle.
    const slow = await makeSources(t, [{ name: 'slowpkg', version: '1.0' }], { delayMs: 60000 });
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_INDEX_URL: slow.indexUrl, MCP_EXEC_ENV_CACHE_DIR: cache } });
    const call = callTool(d.client, 'execute_python', { script: use('slowpkg') }).catch((e) => e);
    // Wait until the install has started (its temporary directory exists and has a venv in it).
    let tmp = [];
    for (let i = 0; i < 600 && !tmp.some((x) => fs.existsSync(path.join(cache, 'tmp', x, 'pyvenv.cfg'))); i++) {
        await sleep(100);
        tmp = cacheState(cache).tmp;
    }
    assert.ok(tmp.length > 0, 'the install never started');
    // Only a process of the killed daemon's install could still publish an environment: its
    // processes (the installer, pip) are taken now, and the check below waits until none of them,
    // and no process naming the cache, is left (the installer dies with the daemon). Nothing can
    // add an environment after that, so the look is final, not a look after a while.
    const kids = descendants(d.pid);
    assert.ok(kids.some((p) => (procCmdline(p) ?? []).some((a) => a.includes(cache))), 'no installer process found');
    process.kill(d.pid, 'SIGKILL');
    await d.exited;
    await call;
    const alive = (p) => { const st = procStat(p); return st !== null && st.state !== 'Z'; };
    let left;
    for (const t0 = Date.now(); ; await sleep(50)) {
        left = [...kids.filter(alive).map((pid) => ({ pid, argv: procCmdline(pid) })), ...findByMarker(cache)];
        if (left.length === 0 || Date.now() - t0 > 10000) break;
    }
    assert.deepEqual(left, [], 'processes of the killed install are still at work 10 s after the daemon was killed');
    assert.deepEqual(cacheState(cache).envs, [], 'an environment appeared although its install was killed');

    // The next daemon (the same cache, a fast source) cleans tmp/ and installs it properly.
    const fast = await makeSources(t, [{ name: 'slowpkg', version: '1.0' }]);
    const d2 = await startDaemon(t, { env: { MCP_EXEC_INDEX_URL: fast.indexUrl, MCP_EXEC_ENV_CACHE_DIR: cache } });
    assert.deepEqual(cacheState(cache).tmp, [], 'the killed install\'s temporary directory is still there');
    const r = await callTool(d2.client, 'execute_python', { script: use('slowpkg') });
    assert.equal(r.isError, false, r.text);
    assert.equal(r.sc.environment.reused, false, 'the half-installed environment was used');
    assert.equal(r.sc.stdout, 'hello from slowpkg 1.0\n');
    assert.equal(installsLogged(d2.stderr()), 1);
    // Only the new install's environment (nothing of the killed daemon is at work: checked above).
    assert.deepEqual(cacheState(cache).envs, [r.sc.environment.key]);
});

// A parent-death signal reaches one process: an installer's grandchild in a session of its own
// outlived a daemon killed mid-install, as uid 65533, and every other daemon on the host then
// refused to start. Here the installer (uv, found on the daemon's PATH: ours) leaves such a
// grandchild and waits; the daemon is killed; the grandchild must go with the install's PID
// namespace.
test('a daemon killed mid-install leaves no process of the install behind, not even one in a session of its own', T, async (t) => {
    const marker = uniqueMarker('orphan');
    reapMarker(t, marker);
    const bin = tempDir(t, 'mcp-execd-fake-uv-');
    fs.writeFileSync(path.join(bin, 'uv'),
        `#!/bin/sh\n/usr/bin/setsid /usr/bin/python3 -c 'import time; time.sleep(300)' ${marker} </dev/null >/dev/null 2>&1 &\nexec /bin/sleep 300\n`, { mode: 0o755 });
    const src = await makeSources(t, [{ name: 'orphanpkg', version: '1.0' }]);
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: cache, PATH: `${bin}:${SYSTEM_PATH}` } });
    const call = callTool(d.client, 'execute_python', { script: use('orphanpkg') }).catch((e) => e);
    assert.ok((await waitMarkerPresent(marker, 120000)).length > 0, 'the install never started its grandchild');
    process.kill(d.pid, 'SIGKILL');
    await d.exited;
    await call;
    assert.deepEqual(await waitMarkerGone(marker, 10000), [], 'a process of the install outlived the daemon by 10 s');
});
