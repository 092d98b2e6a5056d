// Issue 8: the choice of interpreter (python3 and Debian's pypy3) and check_environment's report.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startDaemon, callExec, skipUnlessCI } from './lib/index.mjs';
import { callTool, pep723 } from './lib/pydeps.mjs';

const T = { timeout: 240000 };
const PYTHONS = 'python3=/usr/bin/python3,pypy3=/usr/bin/pypy3';
const havePypy = fs.existsSync('/usr/bin/pypy3');

test('pypy3 chosen by the python argument runs and reports its version; exec takes python too', T, async (t) => {
    // pypy3 comes with `scripts/deps.sh test`: under CI its absence would silently drop this check
    // of another interpreter, so it fails there.
    if (!havePypy) { skipUnlessCI(t, 'pypy3 is not installed'); return; }
    const d = await startDaemon(t, { env: { MCP_EXEC_PYTHONS: PYTHONS }, listTools: true });
    const r = await callTool(d.client, 'execute_python', {
        script: 'import platform, sys\nprint(platform.python_implementation(), sys.version.split()[0])', python: 'pypy3',
    });
    assert.equal(r.isError, false, r.text);
    assert.match(r.sc.stdout, /^PyPy 3\.\d+\.\d+\n$/);
    assert.equal(r.sc.python, 'pypy3');
    assert.equal(r.sc.stdout.trim().split(' ')[1], r.sc.python_version);
    const e = await callExec(d.client, { code: 'import sys; print(sys.implementation.name)', python: 'pypy3' });
    assert.equal(e.sc?.stdout, 'pypy\n', e.text);
    const c = await callExec(d.client, { code: 'import sys; print(sys.implementation.name)' });
    assert.equal(c.sc?.stdout, 'cpython\n');
    // Issue 29 #6: PyPy sizes its nursery from the host's /proc/cpuinfo "cache size" (a host that
    // claimed 480 MB got a nursery the run's RLIMIT_AS refused); a run gives it 4 MiB, whatever
    // the host says.
    const g = await callExec(d.client, { code: 'import gc; print(gc.get_stats()._s.nursery_size)', python: 'pypy3' });
    assert.equal(g.sc?.stdout, `${4 << 20}\n`, g.text);
    const v = await callTool(d.client, 'validate_script', { script: 'print(f"{1=}")\nmatch 1:\n    case 1: pass\n', python: 'pypy3' });
    assert.equal(v.sc.valid, false, 'match is Python 3.10 syntax; PyPy 3.9 refuses it');
    assert.equal(v.sc.problems[0].check, 'syntax');
    assert.equal(v.sc.problems[0].line, 2);
});

test('check_environment reports both interpreters, the backend, sources, cache, version; no secrets', T, async (t) => {
    // pypy3 comes with `scripts/deps.sh test`: under CI its absence would silently drop this check
    // of another interpreter, so it fails there.
    if (!havePypy) { skipUnlessCI(t, 'pypy3 is not installed'); return; }
    const secret = 'tok-' + Math.random().toString(36).slice(2);
    const d = await startDaemon(t, { env: { MCP_EXEC_PYTHONS: PYTHONS, MCP_EXEC_AUTH_TOKEN: secret }, listTools: true });
    const r = await callTool(d.client, 'check_environment', {});
    assert.equal(r.isError, false, r.text);
    const e = r.sc;
    assert.deepEqual(e.interpreters.map((i) => i.name), ['python3', 'pypy3']);
    const [cpy, pypy] = e.interpreters;
    assert.equal(cpy.implementation, 'CPython');
    assert.equal(pypy.implementation, 'PyPy');
    assert.match(pypy.version, /^3\.\d+\.\d+$/);
    assert.equal(cpy.default, true);
    // Probed, not configured: what the report lists really imports in a run.
    assert.ok(Array.isArray(cpy.packages));
    if (cpy.packages.includes('numpy')) {
        const imp = await callTool(d.client, 'execute_python', { script: 'import numpy; print("np")' });
        assert.equal(imp.sc.stdout, 'np\n');
    }
    if (!pypy.packages.includes('numpy')) {
        const imp = await callTool(d.client, 'execute_python', { script: 'import numpy', python: 'pypy3' });
        assert.notEqual(imp.sc.exit_code, 0, 'pypy3 does not list numpy, and cannot import it');
    }
    assert.equal(e.cgroup.backend, process.env.BLACKBOX_CGROUP ?? 'none');
    assert.equal(e.sandbox.network, false);
    assert.equal(e.sources.configured, false);
    assert.match(e.daemon.version, /^\d+\.\d+\.\d+/);
    assert.equal(e.auth.token_configured, true);
    assert.ok(!r.text.includes(secret), 'the token is not in the report');
    assert.equal(e.limits.max_timeout_s, 300);
});
