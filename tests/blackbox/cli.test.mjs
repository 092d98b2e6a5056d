// Command line: --help, --version, an unknown option (issue 2, point 1).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { runOnce, test } from './lib/index.mjs';

// The version the build stamps in: meson.build's project(... version : 'X.Y.Z').
function mesonVersion() {
    const src = fs.readFileSync(new URL('../../meson.build', import.meta.url), 'utf8');
    const m = src.match(/version\s*:\s*'([^']+)'/);
    return m ? m[1] : null;
}

test('--help prints usage on stdout and exits 0 without serving', async () => {
    const r = await runOnce({ args: ['--help'], keepStdinOpen: true, timeoutMs: 3000 });
    assert.equal(r.timedOut, false, 'still running 3 s after --help (it should not start serving)');
    assert.equal(r.code, 0, `exit status; stderr: ${r.stderr}`);
    assert.match(r.stdout, /\S/, 'nothing on stdout');
    assert.match(r.stdout, /mcp-execd/i, 'usage does not name the program');
    assert.match(r.stdout, /--version/, 'usage does not mention --version');
});

test('--version prints the project version and exits 0', async () => {
    const r = await runOnce({ args: ['--version'], keepStdinOpen: true, timeoutMs: 3000 });
    assert.equal(r.timedOut, false, 'still running 3 s after --version');
    assert.equal(r.code, 0, `exit status; stderr: ${r.stderr}`);
    const v = mesonVersion();
    assert.ok(v, 'could not read the version from meson.build');
    assert.ok(r.stdout.includes(v), `stdout ${JSON.stringify(r.stdout)} does not contain the version ${v}`);
});

test('an unknown option exits 2 and names the option on stderr', async () => {
    const r = await runOnce({ args: ['--no-such-option'], keepStdinOpen: true, timeoutMs: 3000 });
    assert.equal(r.timedOut, false, 'still running 3 s after an unknown option');
    assert.equal(r.code, 2, `exit status; stderr: ${r.stderr}`);
    assert.match(r.stderr, /no-such-option/, 'stderr does not name the unknown option');
    assert.equal(r.stdout, '', 'something was written to stdout');
});
