// Issue 15, point 7 (a, b): what a requirement may be when it reaches the installer. A marker
// string with an escape comes out of `packaging` with the character itself (a real newline), and a
// string starting with '-' is an option to pip: neither may reach pip as anything but one
// requirement. The daemon refuses the first with a tool error naming it; install.py, the boundary
// where strings become pip's arguments, refuses both on its own (tested directly here, since
// packaging already refuses "-r …" before the daemon would hand it on).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from './lib/index.mjs';
import { callTool, makeSources, pep723, tempDir, cacheState } from './lib/pydeps.mjs';

const T = { timeout: 600000 };
const PY = '/usr/bin/python3';

// The install.py of the tree the binary under test was built from (build/ inside the source tree,
// as in the README), else this checkout's.
function installPy() {
    const fromBin = path.resolve(path.dirname(process.env.MCP_EXECD ?? '.'), '../../daemon/python/py/install.py');
    if (fs.existsSync(fromBin)) return fromBin;
    return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../daemon/python/py/install.py');
}

// In the TOML of the block, "a\\nb" is a backslash and an n; packaging's marker parser turns it into
// a newline (str(Requirement(...)) has a real '\n').
const NEWLINE_MARKER = 'hellopkg; python_version >= "3" and extra == "a\\nb"';

test('a requirement that packaging turns into one with a newline is a tool error naming it', T, async (t) => {
    const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
    const cache = tempDir(t, 'mcp-execd-cache-');
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: cache } });

    const r = await callTool(d.client, 'execute_python', { script: pep723([NEWLINE_MARKER], 'print("ran")\n') });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /control character '\\n'/, r.text);
    assert.ok(r.text.includes('hellopkg; python_version'), r.text);
    assert.equal(r.sc?.stdout, undefined, 'the script must not run');

    const p = await callTool(d.client, 'execute_python', { script: 'print(1)\n', dependencies: ['hellopkg', NEWLINE_MARKER] });
    assert.equal(p.isError, true, p.text);
    assert.ok(p.text.includes('dependencies[1]') && /control character '\\n'/.test(p.text), p.text);

    // A raw control character from the block (TOML's "\r" escape; packaging 23 raises SyntaxError
    // for it, not InvalidRequirement): refused the same way, not a crash of the parser. (In the
    // parameter the argument check refuses it earlier: "must be one line".)
    const raw = await callTool(d.client, 'execute_python', { script: pep723(['hellopkg; os_name == "a\rb"'], 'print(1)\n') });
    assert.equal(raw.isError, true, raw.text);
    assert.ok(raw.text.includes('hellopkg; os_name') && /control character '\\r'/.test(raw.text), raw.text);

    const v = await callTool(d.client, 'validate_script', { script: pep723([NEWLINE_MARKER], 'print(1)\n') });
    assert.equal(v.isError, false, v.text);
    assert.equal(v.sc.valid, false);
    assert.ok(v.sc.problems.some((q) => q.check === 'dependencies' && q.message.includes('control character')),
        JSON.stringify(v.sc.problems));

    // Nothing was installed for any of them.
    assert.deepEqual(cacheState(cache).envs, []);
    assert.deepEqual(d.errors ?? [], []);
});

test('a dependency that looks like a pip option is refused before the installer', T, async (t) => {
    const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
    const d = await startDaemon(t, { env: { MCP_EXEC_WHEELHOUSE: src.wheelhouse, MCP_EXEC_ENV_CACHE_DIR: tempDir(t, 'mcp-execd-cache-') } });
    for (const dep of ['-r /etc/passwd', '--index-url=http://127.0.0.1:9/simple/', '-e .']) {
        const r = await callTool(d.client, 'execute_python', { script: 'print(1)\n', dependencies: [dep] });
        assert.equal(r.isError, true, r.text);
        assert.ok(r.text.includes(dep) && !r.text.includes('root:x:0'), r.text);
    }
});

function runInstallPy(t, a) {
    const tmp = tempDir(t, 'mcp-execd-installpy-');
    const wheels = tempDir(t, 'mcp-execd-wheels-');
    const arg = JSON.stringify({ tmp: path.join(tmp, 'env'), interpreter: PY, wheelhouse: wheels, key: 'k',
        python_name: 'python3', python_version: '3', ...a });
    return spawnSync(PY, ['-I', installPy(), arg], { encoding: 'utf8', timeout: 300000, cwd: tmp });
}

test('install.py hands no requirement to pip as an option, in check and install modes', T, async (t) => {
    for (const mode of ['check', 'install']) {
        for (const req of ['-r/etc/passwd', '-r /etc/passwd', '--index-url=http://127.0.0.1:9/simple/']) {
            const r = runInstallPy(t, { mode, requirements: ['hellopkg', req] });
            const out = r.stdout + r.stderr;
            // pip reading /etc/passwd as a requirements file names its lines in its errors.
            assert.ok(!out.includes('root:x:0'), `${mode} ${req}: pip read /etc/passwd:\n${out}`);
            assert.notEqual(r.status, 0, `${mode} ${req}: exit ${r.status}\n${out}`);
            assert.ok(out.includes(`refusing requirement '${req}'`) && out.includes("starting with '-'"),
                `${mode} ${req}:\n${out}`);
        }
        const nl = runInstallPy(t, { mode, requirements: ['hellopkg; extra == "a\n-r /etc/passwd"'] });
        assert.ok(!(nl.stdout + nl.stderr).includes('root:x:0'), nl.stdout + nl.stderr);
        assert.match(nl.stderr, /refusing requirement .*control character '\\n'/, nl.stderr);
    }
});
