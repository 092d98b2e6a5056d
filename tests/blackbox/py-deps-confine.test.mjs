// Issue 8: how the installer is confined. Wheels only: a source distribution (whose setup.py would
// run code at install time) is never used. As root, the installer runs as its own user (65533), in
// a user and mount namespace where the host is read-only but its own directory and home
// directories are hidden; when the only source is local, it has no network. Run with BLACKBOX_TEST_TIMEOUT_MS=600000 on a loaded machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, sleep, descendants, procCmdline } from './lib/index.mjs';
import { callTool, makeSources, pep723, tempDir, cacheState } from './lib/pydeps.mjs';

const T = { timeout: 600000 };
const root = process.getuid() === 0;

// The installer: the daemon's child running install.py (its argv carries the request JSON), looked
// for every stepMs, 300 times at the most.
async function installerPid(d, stepMs) {
    for (let i = 0; i < 300; i++) {
        const pid = descendants(d.pid).find((p) => (procCmdline(p) ?? []).some((a) => a.includes('"mode":"install"')));
        if (pid) return pid;
        await sleep(stepMs);
    }
    assert.fail('no installer process found');
}

test('a package that only exists as a source distribution is never built: no code of it runs', T, async (t) => {
    const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
    const proof = path.join(tempDir(t, 'mcp-execd-proof-'), 'setup-py-ran');
    // evilpkg-1.0.tar.gz: a setup.py that leaves a file behind if anything runs it.
    const sd = tempDir(t, 'mcp-execd-sdist-');
    const pkg = path.join(sd, 'evilpkg-1.0');
    fs.mkdirSync(pkg);
    fs.writeFileSync(path.join(pkg, 'setup.py'),
        `open(${JSON.stringify(proof)}, "w").write("ran")\nfrom setuptools import setup\nsetup(name="evilpkg", version="1.0")\n`);
    fs.writeFileSync(path.join(pkg, 'PKG-INFO'), 'Metadata-Version: 2.1\nName: evilpkg\nVersion: 1.0\n');
    execFileSync('tar', ['-czf', path.join(src.wheelhouse, 'evilpkg-1.0.tar.gz'), '-C', sd, 'evilpkg-1.0']);

    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: cache } });
    const r = await callTool(d.client, 'execute_python', { script: pep723(['evilpkg==1.0'], 'import evilpkg\n') });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /No matching distribution found for evilpkg/);
    const v = await callTool(d.client, 'validate_script', { script: pep723(['evilpkg==1.0'], 'import evilpkg\n') });
    assert.equal(v.sc.valid, false);
    assert.equal(fs.existsSync(proof), false, 'setup.py of a source distribution ran');
    assert.deepEqual(cacheState(cache).envs, []);
});

test('the installer sees the host read-only except its own directory, without home directories', { ...T, skip: !root && 'needs root (the mount namespace is made as root)' }, async (t) => {
    const slow = await makeSources(t, [{ name: 'heldpkg', version: '1.0' }], { delayMs: 8000 });
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_INDEX_URL: slow.indexUrl, MCP_EXEC_ENV_CACHE_DIR: cache } });
    const call = callTool(d.client, 'execute_python', { script: pep723(['heldpkg==1.0'], 'import heldpkg\nprint(heldpkg.GREETING)\n') });

    const pid = await installerPid(d, 100);
    // Not root: a user of its own (65533), neither the daemon's nor the runs' (65532).
    const uid = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)[1];
    assert.equal(uid, '65533');
    const tmp = path.join(cache, 'tmp', cacheState(cache).tmp[0]);
    const mounts = fs.readFileSync(`/proc/${pid}/mountinfo`, 'utf8').trim().split('\n').map((l) => {
        const f = l.split(' ');
        return { point: f[4], opts: f[5].split(','), fstype: f[f.indexOf('-') + 1] };
    });
    const at = (p) => mounts.filter((m) => m.point === p).pop();
    assert.ok(at('/').opts.includes('ro'), `/ is ${at('/').opts}`);
    assert.ok(at(tmp)?.opts.includes('rw'), `its directory ${tmp} is ${at(tmp)?.opts}`);
    assert.ok(mounts.filter((m) => m.point !== tmp).every((m) => m.opts.includes('ro')),
        'a writable mount besides its own directory: ' + JSON.stringify(mounts.filter((m) => !m.opts.includes('ro'))));
    if (fs.existsSync('/root')) assert.equal(at('/root')?.fstype, 'tmpfs', '/root is not hidden');
    // The first call still completes, and the environment it used belongs to root again.
    const r = await call;
    assert.equal(r.sc?.stdout, 'hello from heldpkg 1.0\n', r.text);
    const envDir = path.join(cache, 'envs', r.sc.environment.key);
    assert.equal(fs.statSync(envDir).uid, 0);
    assert.equal(fs.statSync(path.join(envDir, 'pyvenv.cfg')).uid, 0);
});

test('with only a local wheelhouse the installer has no network', { ...T, skip: !root && 'needs root' }, async (t) => {
    // A wheelhouse on a FUSE-less local disk needs no network: the installer gets an empty network
    // namespace. Seen from /proc: its net namespace differs from the daemon's.
    const src = await makeSources(t, [{ name: 'localpkg', version: '1.0', padding: 0 }]);
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: cache } });
    const call = callTool(d.client, 'execute_python', { script: pep723(['localpkg==1.0'], 'import localpkg\n') });
    const pid = await installerPid(d, 50);
    const ns = (p) => fs.readlinkSync(`/proc/${p}/ns/net`);
    assert.notEqual(ns(pid), ns(d.pid));
    const r = await call;
    assert.equal(r.isError, false, r.text);
});
