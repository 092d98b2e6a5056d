// Issue 8: the tools of mcp-python-exec-sandbox (execute_python, validate_script,
// check_environment) without dependencies: schemas, argument errors, PEP 723 metadata errors,
// requires-python, interpreter choice (python3 and pypy3), the environment report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startDaemon, callExec } from './lib/index.mjs';
import { callTool, pep723 } from './lib/pydeps.mjs';

const T = { timeout: 240000 };
const PYTHONS = 'python3=/usr/bin/python3,pypy3=/usr/bin/pypy3';
const havePypy = fs.existsSync('/usr/bin/pypy3');

test('tools/list has execute_python, validate_script and check_environment with both schemas', T, async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_PYTHONS: PYTHONS } });
    const { tools } = await d.client.listTools();
    const byName = Object.fromEntries(tools.map((x) => [x.name, x]));
    for (const n of ['exec', 'execute_python', 'validate_script', 'check_environment']) {
        assert.ok(byName[n], `missing tool ${n}`);
        assert.equal(byName[n].inputSchema.additionalProperties, false, n);
        assert.equal(byName[n].outputSchema?.type, 'object', n);
    }
    const ep = byName.execute_python.inputSchema;
    assert.deepEqual(ep.required, ['script']);
    assert.equal(ep.properties.dependencies.type, 'array');
    assert.equal(ep.properties.timeout_seconds.type, 'integer');
    assert.ok(ep.properties.python.description.includes('pypy3'));
    assert.deepEqual(Object.keys(byName.validate_script.inputSchema.properties).sort(), ['dependencies', 'python', 'script']);
    assert.deepEqual(Object.keys(byName.check_environment.inputSchema.properties), []);
    // exec's fields are all in execute_python's output, plus the interpreter and environment.
    for (const f of byName.exec.outputSchema.required) assert.ok(byName.execute_python.outputSchema.required.includes(f), f);
    assert.ok(byName.execute_python.description.includes('no source'), 'description says no source is configured');
});

test('execute_python returns exec\'s fields plus the interpreter (structured, validated by the SDK)', T, async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_PYTHONS: PYTHONS }, listTools: true });
    const r = await callTool(d.client, 'execute_python', { script: 'import sys\nprint(sys.version_info[:2])\nsys.exit(3)', timeout_seconds: 10 });
    assert.equal(r.isError, false, r.text);
    assert.equal(r.sc.exit_code, 3);
    assert.match(r.sc.stdout, /^\(3, \d+\)\n$/);
    assert.equal(r.sc.python, 'python3');
    assert.deepEqual(r.sc.dependencies, []);
    assert.equal(r.sc.environment, null);
    assert.deepEqual(r.textJson, r.sc, 'text is the same JSON');
    for (const f of ['stdout', 'stderr', 'exit_code', 'duration_ms', 'truncated', 'timed_out', 'signal', 'memory_peak_bytes', 'limits', 'queue_ms'])
        assert.ok(f in r.sc, f);
    assert.deepEqual(d.errors, []);
});

test('invalid arguments are tool errors naming the field', T, async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_PYTHONS: PYTHONS } });
    const cases = [
        ['execute_python', {}, ['script', 'required']],
        ['execute_python', { script: '   ' }, ['script', 'empty']],
        // The same NUL message as exec's, with the offset, from every tool that takes the source.
        ['execute_python', { script: 'print(1)\u0000print(2)' }, ["'script'", 'NUL', 'byte 8']],
        ['validate_script', { script: 'print(1)\u0000' }, ["'script'", 'NUL', 'byte 8']],
        ['execute_python', { script: 'print(1)', dependencies: 'numpy' }, ['dependencies', 'array']],
        ['execute_python', { script: 'print(1)', dependencies: ['ok', 3] }, ['dependencies[1]', 'string']],
        ['execute_python', { script: 'print(1)', dependencies: [''] }, ['dependencies[0]', 'empty']],
        ['execute_python', { script: 'print(1)', timeout_seconds: 1.5 }, ['timeout_seconds', 'integer']],
        ['execute_python', { script: 'print(1)', python: 'python2' }, ['python', 'python2', 'pypy3']],
        ['execute_python', { script: 'print(1)', shell: 'bash' }, ['shell', 'unknown']],
        ['validate_script', { script: 'print(1)', timeout_seconds: 5 }, ['timeout_seconds', 'unknown']],
        ['check_environment', { verbose: true }, ['verbose', 'no arguments']],
        ['exec', { code: 'print(1)', python: 7 }, ['python', 'string']],
    ];
    for (const [name, args, words] of cases) {
        const r = await callTool(d.client, name, args);
        assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}: ${r.text}`);
        for (const w of words) assert.ok(r.text.includes(w), `${name} ${JSON.stringify(args)}: "${w}" not in: ${r.text}`);
    }
    // The daemon is fine afterwards.
    const ok = await callTool(d.client, 'execute_python', { script: 'print("still here")' });
    assert.equal(ok.sc?.stdout, 'still here\n');
});

test('timeout_seconds is clamped like the seed (not an error) and applies to the run', T, async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_TIMEOUT_S: 2, MCP_EXEC_DEFAULT_TIMEOUT_S: 2 } });
    const r = await callTool(d.client, 'execute_python', { script: 'import time\ntime.sleep(30)', timeout_seconds: 600 });
    assert.equal(r.isError, false, r.text);
    assert.equal(r.sc.timed_out, true);
    assert.ok(r.ms < 20000, `took ${r.ms} ms`);
});

test('malformed PEP 723 TOML is a tool error that quotes the offending line; daemon fine', T, async (t) => {
    const d = await startDaemon(t);
    const script = '# /// script\n# dependencies = ["a"]\n# requires-python = >=3.8\n# ///\nprint(1)\n';
    const r = await callTool(d.client, 'execute_python', { script });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /TOML/);
    assert.ok(r.text.includes('line 3'), r.text);
    assert.ok(r.text.includes('# requires-python = >=3.8'), r.text);
    const unclosed = await callTool(d.client, 'execute_python', { script: '# /// script\n# dependencies = []\nprint(1)\n' });
    assert.equal(unclosed.isError, true);
    assert.match(unclosed.text, /never closed|does not start with/);
    const ok = await callTool(d.client, 'execute_python', { script: 'print(2)' });
    assert.equal(ok.sc?.stdout, '2\n');
});

