// Issue 15, point 7 (c): a local dependency source (MCP_EXEC_WHEELHOUSE, a file:// MCP_EXEC_INDEX_URL)
// that the installer's user cannot read is refused at start (exit 2, naming the variable, the path
// and the uid) instead of failing every install with pip's "Permission denied". As root the
// installer runs as uid 65533, so a root-owned 0700 directory is the case; as another user the
// configuration check already refuses what the daemon itself cannot read.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runOnce, startDaemon, test } from './lib/index.mjs';
import { makeSources, tempDir } from './lib/pydeps.mjs';

const root = process.geteuid() === 0;
const T = { timeout: 120000 };

async function refused(t, env, variable, shownPath) {
    const r = await runOnce({ env: { MCP_EXEC_ENV_CACHE_DIR: tempDir(t, 'mcp-execd-cache-'), ...env },
        keepStdinOpen: true, timeoutMs: 15000 });
    assert.equal(r.timedOut, false, `the daemon started serving with ${JSON.stringify(env)}`);
    assert.equal(r.code, 2, `exit ${r.code} (signal ${r.signal}); stderr: ${r.stderr}`);
    assert.ok(r.stderr.includes(variable) && r.stderr.includes(shownPath) && r.stderr.includes('uid 65533'),
        `stderr must name ${variable}, ${shownPath} and uid 65533: ${r.stderr}`);
}

test('a wheelhouse in a 0700 directory of root is refused at start, naming the variable, path and uid', { ...T, skip: !root && 'needs root (the installer then runs as uid 65533)' }, async (t) => {
    const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
    src.stop();
    fs.chmodSync(src.wheelhouse, 0o700);
    await refused(t, { MCP_EXEC_WHEELHOUSE: src.wheelhouse }, 'MCP_EXEC_WHEELHOUSE', src.wheelhouse);

    // A readable wheelhouse under an unreadable parent: the same (every component is checked).
    fs.chmodSync(src.wheelhouse, 0o755);
    fs.chmodSync(src.root, 0o700);
    await refused(t, { MCP_EXEC_WHEELHOUSE: src.wheelhouse }, 'MCP_EXEC_WHEELHOUSE', src.wheelhouse);
});

test('a file:// index the installer cannot read is refused at start', { ...T, skip: !root && 'needs root' }, async (t) => {
    const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
    src.stop();
    const simple = path.join(src.root, 'simple');
    fs.chmodSync(simple, 0o700);
    await refused(t, { MCP_EXEC_INDEX_URL: `file://${simple}/` }, 'MCP_EXEC_INDEX_URL', simple);
});

test('readable local sources still start and serve', T, async (t) => {
    const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
    src.stop();
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse,
        MCP_EXEC_INDEX_URL: `file://${path.join(src.root, 'simple')}/`, MCP_EXEC_ENV_CACHE_DIR: tempDir(t, 'mcp-execd-cache-') } });
    assert.ok(d.client);
});
