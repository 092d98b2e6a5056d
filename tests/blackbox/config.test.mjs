// Configuration from MCP_EXEC_* (issue 2, point 2): every bad value stops the daemon at start
// with exit status 2 and a message naming the variable and the value; good values are
// accepted (the daemon starts and answers initialize).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { runOnce, RawDaemon, test } from './lib/index.mjs';

const BAD = [
    ['MCP_EXEC_TRANSPORT', 'ftp'],
    ['MCP_EXEC_TRANSPORT', 'STDIO-ish'],
    ['MCP_EXEC_ALLOW_UNAUTHENTICATED_NETWORK', 'sometimes'],
    ['MCP_EXEC_ADDR', 'no-port-here'],
    ['MCP_EXEC_ADDR', '127.0.0.1:99999'],
    ['MCP_EXEC_ADDR', '127.0.0.1:http'],
    ['MCP_EXEC_DEFAULT_TIMEOUT_S', 'abc'],
    ['MCP_EXEC_DEFAULT_TIMEOUT_S', '-5'],
    ['MCP_EXEC_DEFAULT_TIMEOUT_S', '10x'],
    ['MCP_EXEC_MAX_TIMEOUT_S', 'abc'],
    ['MCP_EXEC_MAX_TIMEOUT_S', '-1'],
    ['MCP_EXEC_MAX_OUTPUT_BYTES', '0'],
    ['MCP_EXEC_MAX_OUTPUT_BYTES', 'lots'],
    ['MCP_EXEC_MAX_OUTPUT_BYTES', '99999999999999999999999999'],
    ['MCP_EXEC_MAX_STDIN_BYTES', 'abc'],
    ['MCP_EXEC_MAX_STDIN_BYTES', '-1'],
    ['MCP_EXEC_MAX_CODE_BYTES', 'abc'],
    ['MCP_EXEC_MAX_CODE_BYTES', '-1'],
    ['MCP_EXEC_MEMORY_MAX', '12Q'],
    ['MCP_EXEC_MEMORY_MAX', 'abc'],
    ['MCP_EXEC_MEMORY_MAX', '-1M'],
    ['MCP_EXEC_PIDS_MAX', 'abc'],
    ['MCP_EXEC_PIDS_MAX', '-3'],
    ['MCP_EXEC_CPU_QUOTA', 'abc'],
    ['MCP_EXEC_CPU_QUOTA', '-10%'],
    ['MCP_EXEC_CPU_QUOTA', 'x%'],
    ['MCP_EXEC_TMP_SIZE', '12Q'],
    ['MCP_EXEC_TMP_SIZE', 'big'],
    ['MCP_EXEC_MAX_CONCURRENT', '0'],
    ['MCP_EXEC_MAX_CONCURRENT', 'abc'],
    ['MCP_EXEC_QUEUE_MAX', 'abc'],
    ['MCP_EXEC_QUEUE_MAX', '-1'],
    ['MCP_EXEC_MAX_SESSIONS', '0'],
    ['MCP_EXEC_MAX_SESSIONS', 'abc'],
    ['MCP_EXEC_MAX_SESSIONS', '-1'],
    ['MCP_EXEC_MAX_SESSIONS', '100001'],
    ['MCP_EXEC_SESSION_QUEUE_MAX', 'abc'],
    ['MCP_EXEC_SESSION_QUEUE_MAX', '-1'],
    ['MCP_EXEC_SESSION_QUEUE_MAX', '65'],   // above the default MCP_EXEC_QUEUE_MAX (64)
    ['MCP_EXEC_CGROUP', 'foo'],
    ['MCP_EXEC_SLICE', 'not a slice'],
    ['MCP_EXEC_REQUIRE_CGROUP', 'maybe'],
    ['MCP_EXEC_REQUIRE_CGROUP', '2'],
];

test('a bad value stops the daemon: exit 2, stderr names the variable and the value', async (t) => {
    for (const [name, value] of BAD) {
        await t.test(`${name}=${value}`, async () => {
            const r = await runOnce({ env: { [name]: value }, keepStdinOpen: true, timeoutMs: 3000 });
            assert.equal(r.timedOut, false, `${name}=${value}: the daemon started serving instead of refusing the value`);
            assert.equal(r.code, 2, `${name}=${value}: exit status ${r.code} (signal ${r.signal}); stderr: ${r.stderr}`);
            assert.ok(r.stderr.includes(name), `stderr does not name ${name}: ${JSON.stringify(r.stderr)}`);
            assert.ok(r.stderr.includes(value), `stderr does not show the value ${JSON.stringify(value)}: ${JSON.stringify(r.stderr)}`);
            assert.equal(r.stdout, '', `stdout must stay clean, got ${JSON.stringify(r.stdout)}`);
        });
    }
});

test('MCP_EXEC_SESSION_QUEUE_MAX above MCP_EXEC_QUEUE_MAX: exit 2 naming both; the default follows a smaller queue', async () => {
    const r = await runOnce({ env: { MCP_EXEC_QUEUE_MAX: '4', MCP_EXEC_SESSION_QUEUE_MAX: '5' }, keepStdinOpen: true, timeoutMs: 3000 });
    assert.equal(r.code, 2, `exit status ${r.code}; stderr: ${r.stderr}`);
    assert.match(r.stderr, /MCP_EXEC_SESSION_QUEUE_MAX="5"/);
    assert.match(r.stderr, /MCP_EXEC_QUEUE_MAX \(4\)/);
    await startsAndAnswers({ MCP_EXEC_QUEUE_MAX: '4' });          // built-in 16 becomes 4, no error
    await startsAndAnswers({ MCP_EXEC_QUEUE_MAX: '4', MCP_EXEC_SESSION_QUEUE_MAX: '4' });
});

const GOOD = [
    ['MCP_EXEC_TRANSPORT', 'stdio'],
    ['MCP_EXEC_ADDR', '127.0.0.1:9999'],
    ['MCP_EXEC_ADDR', '0.0.0.0:8080'],
    ['MCP_EXEC_DEFAULT_TIMEOUT_S', '10'],
    ['MCP_EXEC_MAX_TIMEOUT_S', '600'],
    ['MCP_EXEC_MAX_OUTPUT_BYTES', '4096'],
    ['MCP_EXEC_MAX_STDIN_BYTES', '2048'],
    ['MCP_EXEC_MAX_CODE_BYTES', '2048'],
    ['MCP_EXEC_PYTHON', '/usr/bin/python3'],
    ['MCP_EXEC_PYTHON', 'python3'],
    ['MCP_EXEC_AUTH_TOKEN', 's3cret-token'],
    ['MCP_EXEC_ALLOW_UNAUTHENTICATED_NETWORK', '1'],
    ['MCP_EXEC_ALLOW_UNAUTHENTICATED_NETWORK', 'no'],
    ['MCP_EXEC_MEMORY_MAX', '512M'],
    ['MCP_EXEC_MEMORY_MAX', '1G'],
    ['MCP_EXEC_MEMORY_MAX', '65536K'],
    ['MCP_EXEC_MEMORY_MAX', '2T'],
    ['MCP_EXEC_MEMORY_MAX', '268435456'],
    ['MCP_EXEC_MEMORY_MAX', '50%'],
    ['MCP_EXEC_MEMORY_MAX', 'infinity'],
    ['MCP_EXEC_PIDS_MAX', '64'],
    ['MCP_EXEC_CPU_QUOTA', '50%'],
    ['MCP_EXEC_CPU_QUOTA', '200%'],
    ['MCP_EXEC_TMP_SIZE', '16M'],
    ['MCP_EXEC_TMP_SIZE', '1G'],
    ['MCP_EXEC_MAX_CONCURRENT', '1'],
    ['MCP_EXEC_MAX_CONCURRENT', '16'],
    ['MCP_EXEC_QUEUE_MAX', '1'],
    ['MCP_EXEC_QUEUE_MAX', '1000'],
    ['MCP_EXEC_MAX_SESSIONS', '1'],
    ['MCP_EXEC_MAX_SESSIONS', '50000'],
    ['MCP_EXEC_SESSION_QUEUE_MAX', '0'],
    ['MCP_EXEC_SESSION_QUEUE_MAX', '64'],
    ['MCP_EXEC_CGROUP', 'none'],
    ['MCP_EXEC_SLICE', 'blackbox-test.slice'],
    ['MCP_EXEC_REQUIRE_CGROUP', '0'],
    ['MCP_EXEC_REQUIRE_CGROUP', 'no'],
    ['MCP_EXEC_REQUIRE_CGROUP', 'false'],
    ['MCP_EXEC_REQUIRE_CGROUP', 'off'],
];

async function startsAndAnswers(env) {
    const d = RawDaemon.spawn(null, { env });
    try {
        const init = await d.request('initialize', {
            protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bb', version: '0' },
        }, { timeoutMs: 3000 }).catch((e) => { throw new Error(`${e.message}; exit: ${JSON.stringify(d.exit)}`); });
        assert.ok(init.result, `initialize answered with an error: ${JSON.stringify(init)}`);
        assert.equal(init.result.protocolVersion, '2025-11-25');
        d.notify('notifications/initialized');
        const ping = await d.request('ping', undefined, { timeoutMs: 3000 });
        assert.deepEqual(ping.result, {});
        d.endStdin();
        // stdout closed, not only the exit: badLines then holds everything the daemon wrote.
        const ex = await d.waitClosed(5000);
        assert.equal(ex.code, 0, `exit on EOF: ${JSON.stringify(ex)}; stderr: ${d.stderrText}`);
        assert.deepEqual(d.badLines, [], 'non-JSON lines on stdout');
        return d;
    } finally {
        d.kill('SIGKILL');
    }
}

// Each start probes the interpreter (~0.5 s): four at a time.
test('good values are accepted: the daemon starts and answers initialize', { concurrency: 4 }, async (t) => {
    await Promise.all(GOOD.map(([name, value]) =>
        t.test(`${name}=${value}`, async () => { await startsAndAnswers({ [name]: value }); })));
});

test('all variables at once, with good values, are accepted', async () => {
    const env = {};
    for (const [name, value] of GOOD) env[name] = value;   // the last value of each name wins
    await startsAndAnswers(env);
});

// This machine has no cgroup v2 with controllers: auto must fall back to none and say so.
const hostHasCgroup2 = (() => {
    try { return /\bmemory\b/.test(fs.readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8')); } catch { return false; }
})();

test('no MCP_EXEC_* at all: defaults work (cgroup auto falls back with a warning on stderr)', async () => {
    const d = await startsAndAnswers({ MCP_EXEC_CGROUP: undefined });
    if (!hostHasCgroup2) {
        assert.match(d.stderrText, /cgroup/i, `no warning about the cgroup fallback on stderr: ${JSON.stringify(d.stderrText)}`);
    }
});

test('MCP_EXEC_CGROUP=auto is accepted', async () => {
    await startsAndAnswers({ MCP_EXEC_CGROUP: 'auto' });
});
