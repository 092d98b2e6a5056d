// Issue 8: PEP 723 metadata and requirement checks of execute_python and validate_script (no
// dependency source configured): specifiers, requires-python, the merge rule, line-by-line problems.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startDaemon, callExec } from './lib/index.mjs';
import { callTool, pep723 } from './lib/pydeps.mjs';

const T = { timeout: 240000 };
const PYTHONS = 'python3=/usr/bin/python3,pypy3=/usr/bin/pypy3';
const havePypy = fs.existsSync('/usr/bin/pypy3');

test('an invalid requirement specifier is a tool error naming it, from the block or the parameter', T, async (t) => {
    const d = await startDaemon(t);
    const r = await callTool(d.client, 'execute_python', { script: pep723(['requests>>=2'], 'print(1)\n') });
    assert.equal(r.isError, true, r.text);
    assert.ok(r.text.includes('requests>>=2') && r.text.includes('line 2'), r.text);
    const p = await callTool(d.client, 'execute_python', { script: 'print(1)', dependencies: ['ok-name', 'bad name!'] });
    assert.equal(p.isError, true);
    assert.ok(p.text.includes('dependencies[1]') && p.text.includes('bad name!'), p.text);
});

test('requires-python is checked against the chosen interpreter', T, async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_PYTHONS: havePypy ? PYTHONS : 'python3' } });
    const r = await callTool(d.client, 'execute_python', { script: pep723([], 'print(1)\n', { requiresPython: '>=4' }) });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /requires-python '>=4' is not satisfied by the interpreter python3 \(CPython 3\.\d+/);
    const ok = await callTool(d.client, 'execute_python', { script: pep723([], 'print("ok")\n', { requiresPython: '>=3.8' }) });
    assert.equal(ok.sc?.stdout, 'ok\n', ok.text);
    if (havePypy) {
        // PyPy 7.3 on Debian 12 speaks Python 3.9.
        const py = await callTool(d.client, 'execute_python', { script: pep723([], 'print(1)\n', { requiresPython: '>=3.10' }), python: 'pypy3' });
        assert.equal(py.isError, true, py.text);
        assert.match(py.text, /pypy3 \(PyPy 3\.9/);
    }
});

test('dependencies without a configured source: a tool error saying how to configure one', T, async (t) => {
    const d = await startDaemon(t);
    const r = await callTool(d.client, 'execute_python', { script: pep723(['hellopkg==1.0'], 'import hellopkg\n') });
    assert.equal(r.isError, true);
    assert.ok(r.text.includes('MCP_EXEC_INDEX_URL') && r.text.includes('MCP_EXEC_WHEELHOUSE'), r.text);
    const v = await callTool(d.client, 'validate_script', { script: 'print(1)', dependencies: ['hellopkg'] });
    assert.equal(v.isError, false);
    assert.equal(v.sc.valid, false);
    assert.ok(v.sc.problems.some((p) => p.check === 'source' && p.message.includes('MCP_EXEC_INDEX_URL')), JSON.stringify(v.sc));
});

test('validate_script reports syntax, metadata, specifier and requires-python problems line by line', T, async (t) => {
    const d = await startDaemon(t, { listTools: true });
    const good = await callTool(d.client, 'validate_script', { script: pep723([], 'print(1)\n', { requiresPython: '>=3.8' }) });
    assert.equal(good.isError, false);
    assert.equal(good.sc.valid, true, JSON.stringify(good.sc));
    assert.equal(good.sc.requires_python, '>=3.8');
    assert.deepEqual(good.sc.problems, []);

    const script = [
        '# /// script',
        '# requires-python = ">=4"',
        '# dependencies = ["numpy>=1.0", "pandas=<2"]',
        '# ///',
        'import numpy',
        'def f(:',
        '    pass',
    ].join('\n');
    const r = await callTool(d.client, 'validate_script', { script });
    assert.equal(r.isError, false, r.text);
    assert.equal(r.sc.valid, false);
    const by = (check) => r.sc.problems.filter((p) => p.check === check);
    assert.equal(by('syntax')[0]?.line, 6, JSON.stringify(r.sc.problems));
    assert.equal(by('syntax')[0]?.text, 'def f(:');
    assert.equal(by('requires-python')[0]?.line, 2);
    assert.ok(by('dependencies').some((p) => p.line === 3 && p.message.includes('pandas=<2')), JSON.stringify(r.sc.problems));

    const toml = await callTool(d.client, 'validate_script', { script: '# /// script\n# dependencies = ["a",\n# ///\nprint(1)\n' });
    assert.equal(toml.sc.valid, false);
    assert.equal(toml.sc.problems[0].check, 'metadata');
    assert.match(toml.sc.problems[0].message, /malformed TOML/);
    assert.ok(Number.isInteger(toml.sc.problems[0].line));
    assert.deepEqual(d.errors, []);
});

test('the parameter wins over the block for the same normalized name', T, async (t) => {
    const d = await startDaemon(t);
    const v = await callTool(d.client, 'validate_script', {
        script: pep723(['Foo_Bar>=1', 'other'], 'print(1)\n'), dependencies: ['foo-bar==2.0'],
    });
    assert.deepEqual(v.sc.dependencies, ['foo-bar==2.0', 'other']);
});

