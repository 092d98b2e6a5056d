// Drive the real daemon with the official MCP SDK (v1) over stdio.
//
//   const d = await startDaemon(t, { env: { MCP_EXEC_MAX_OUTPUT_BYTES: 4096 } });
//   const r = await callExec(d.client, { code: 'print(1)' });
//   assert.equal(r.sc.stdout, '1\n');
//
// startDaemon registers t.after() to close the daemon, so every test gets its own process and
// nothing leaks when an assertion fails.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { binaryPath, daemonEnv, sleep } from './env.mjs';

/**
 * Start mcp-execd under an SDK Client and connect (initialize + notifications/initialized).
 *
 * @param t        node:test context (or null); if given, the daemon is closed in t.after()
 * @param opts.env       extra environment (merged over daemonEnv(); undefined removes a key)
 * @param opts.args      command-line arguments
 * @param opts.listTools call tools/list after connecting, so the SDK validates every
 *                       structuredContent against the tool's outputSchema (default false)
 * @returns {{client, transport, pid, stderr: () => string, exited: Promise<{code, signal}>,
 *            errors: Error[], close: () => Promise<void>}}
 *          `errors` collects what the SDK reports through client.onerror (unparsable lines,
 *          responses to unknown ids, ...): a clean session leaves it empty.
 */
export async function startDaemon(t, opts = {}) {
    const transport = new StdioClientTransport({
        command: binaryPath(),
        args: opts.args ?? [],
        env: daemonEnv(opts.env),
        stderr: 'pipe',
    });
    let stderrText = '';
    transport.stderr.on('data', (b) => { stderrText += b.toString('utf8'); });

    const client = new Client({ name: 'mcp-execd-blackbox', version: '0' }, { capabilities: {} });
    const errors = [];
    client.onerror = (e) => errors.push(e);

    let exitResolve;
    const exited = new Promise((r) => { exitResolve = r; });
    const d = {
        client, transport, errors, exited,
        pid: null,
        stderr: () => stderrText,
        close: async () => {
            try { await client.close(); } catch { /* already gone */ }
        },
    };
    if (t) t.after(d.close);

    try {
        await client.connect(transport, { timeout: opts.connectTimeoutMs ?? 10000 });
    } catch (e) {
        await d.close();
        throw new Error(`connect to mcp-execd failed: ${e.message}\n--- daemon stderr ---\n${stderrText}`);
    }
    d.wire = recordWire(transport);
    d.pid = transport.pid;
    // The SDK does not expose the exit status; its (private) child handle does.
    const proc = transport._process;
    if (proc) {
        if (proc.exitCode !== null || proc.signalCode !== null) exitResolve({ code: proc.exitCode, signal: proc.signalCode });
        else proc.once('exit', (code, signal) => exitResolve({ code, signal }));
    }
    // A request that fails because the daemon went away says how it went (its exit status and the
    // end of its stderr): the SDK's own "Connection closed" says neither.
    const request = client.request.bind(client);
    client.request = async (...args) => {
        try {
            return await request(...args);
        } catch (e) {
            if (/Connection closed/.test(e?.message ?? '') && proc) {
                const how = await Promise.race([exited, sleep(2000).then(() => null)]);
                e.message += `\n--- the daemon ${how ? `exited: ${JSON.stringify(how)}` : 'is still running'}; ` +
                    `its stderr's end ---\n${stderrText.slice(-4000)}`;
            }
            throw e;
        }
    };
    if (opts.listTools) await client.listTools();
    return d;
}

/**
 * The order in which the SDK's transport delivered messages: wraps transport.onmessage (set by
 * client.connect()) and returns the list it fills, {progressToken} for a progress notification,
 * {id} for a response.
 */
export function recordWire(transport) {
    const wire = [];
    const deliver = transport.onmessage;
    transport.onmessage = (m, extra) => {
        if (m?.method === 'notifications/progress') wire.push({ progressToken: m.params?.progressToken });
        else if (m && 'id' in m && !('method' in m)) wire.push({ id: m.id });
        deliver(m, extra);
    };
    return wire;
}

/**
 * client.onerror's errors without the 1.x SDK's own race: it hands a notification to its handler
 * a microtask later but a response at once, so a progress notification that came just before its
 * call's response, in the same read, reaches a handler already gone ("Received a progress
 * notification for an unknown token"). Such an error is ours only if the notification came after
 * the response on the wire (a progress for a call already answered).
 */
export function errorsNotRaces(errors, wire) {
    return errors.filter((e) => {
        const m = /Received a progress notification for an unknown token: (\{.*\})$/s.exec(e?.message ?? '');
        if (!m) return true;
        let token;
        try { token = JSON.parse(m[1]).params.progressToken; } catch { return true; }
        const answer = wire.findIndex((w) => w.id === token);
        const before = wire.slice(0, answer).some((w) => w.progressToken === token);
        const after = wire.slice(answer + 1).some((w) => w.progressToken === token);
        return !(answer >= 0 && before && !after);
    });
}

/**
 * Call the `exec` tool.
 *
 * @param client       SDK Client (d.client)
 * @param args         the tool arguments, sent as given (may be deliberately invalid)
 * @param opts.timeoutMs SDK request timeout (default 30 s)
 * @param opts.signal  AbortSignal (aborting makes the SDK send notifications/cancelled)
 * @returns {{result, isError: boolean, sc: object|undefined, text: string|undefined,
 *            textJson: any, ms: number}}
 *          sc = structuredContent; text = the first text content item; textJson = JSON.parse(text)
 *          or undefined if it is not JSON; ms = wall time of the call as seen by the client.
 *          A JSON-RPC error throws (McpError with .code).
 */
export function callExec(client, args, opts = {}) {
    return callToolTimed(client, 'exec', args, { ...opts, timeoutMs: opts.timeoutMs ?? 30000 });
}

/**
 * Call any tool by name, with callExec()'s result. opts.timeoutMs (required here: each caller has
 * its default), opts.signal, opts.resetTimeoutOnProgress (the SDK's: progress restarts the timeout).
 */
export async function callToolTimed(client, name, args, opts) {
    const t0 = performance.now();
    const result = await client.callTool({ name, arguments: args }, undefined, {
        timeout: opts.timeoutMs,
        signal: opts.signal,
        resetTimeoutOnProgress: opts.resetTimeoutOnProgress,
    });
    const ms = performance.now() - t0;
    const text = result.content?.find((c) => c.type === 'text')?.text;
    let textJson;
    try { textJson = JSON.parse(text); } catch { textJson = undefined; }
    return { result, isError: result.isError === true, sc: result.structuredContent, text, textJson, ms };
}

/** One-line summary of a callExec() outcome, for assertion messages. */
export function summarize(r) {
    return JSON.stringify({ isError: r.isError, ms: Math.round(r.ms), sc: r.sc, text: r.sc ? undefined : r.text })
        .slice(0, 2000);
}

export const RESULT_FIELDS = {
    stdout: 'string', stderr: 'string', exit_code: 'number', duration_ms: 'number',
    truncated: 'boolean', timed_out: 'boolean', oom_killed: 'boolean', pids_limit_hit: 'boolean',
    memory_peak_bytes: 'number', cpu_user_us: 'number', cpu_system_us: 'number',
    limits: 'string', queue_ms: 'number', unbounded: 'object', warm: 'boolean', memory_at_start_bytes: 'number',
};

// What rlimit mode cannot bound (issue 15 #6): the result's `unbounded`, empty with a cgroup.
export const RLIMIT_UNBOUNDED = ['memory_total', 'memfd', 'kernel_memory', 'cpu_quota'];

// The exec result contract, the same over every transport: every field with its type, integers
// where the schema says integer, the same JSON as the one text content item.
/** r has the result's shape (assertResultShape()) and is a run that printed stdout and nothing on
 * stderr, exited 0, was not cut, timed out, signalled, OOM-killed, or stopped by its pids limit. */
export function assertCleanRun(r, stdout) {
    assertResultShape(r);
    assert.equal(r.sc.stdout, stdout);
    assert.equal(r.sc.stderr, '');
    assert.equal(r.sc.exit_code, 0);
    assert.equal(r.sc.truncated, false);
    assert.equal(r.sc.timed_out, false);
    assert.equal(r.sc.signal, null);
    assert.equal(r.sc.oom_killed, false);
    assert.equal(r.sc.pids_limit_hit, false);
}

export const ACCOUNT_FIELDS = ['cpu_pressure_some_us', 'memory_pressure_some_us', 'memory_pressure_full_us',
    'io_pressure_some_us', 'io_pressure_full_us', 'io_read_bytes', 'io_write_bytes', 'pids_peak'];

export function assertResultShape(r) {
    assert.equal(r.isError, false, `isError: ${summarize(r)}`);
    assert.ok(r.sc && typeof r.sc === 'object', `no structuredContent: ${summarize(r)}`);
    for (const [f, type] of Object.entries(RESULT_FIELDS)) {
        assert.ok(f in r.sc, `field ${f} missing: ${JSON.stringify(r.sc)}`);
        assert.equal(typeof r.sc[f], type, `field ${f} is ${JSON.stringify(r.sc[f])}, not a ${type}`);
    }
    assert.ok('signal' in r.sc, 'field signal missing');
    assert.ok(r.sc.signal === null || typeof r.sc.signal === 'string', `signal: ${JSON.stringify(r.sc.signal)}`);
    assert.ok(['cgroup', 'rlimit'].includes(r.sc.limits), `limits: ${JSON.stringify(r.sc.limits)}`);
    assert.deepEqual(r.sc.unbounded, r.sc.limits === 'cgroup' ? [] : RLIMIT_UNBOUNDED,
        `unbounded: ${JSON.stringify(r.sc.unbounded)} with limits ${r.sc.limits}`);
    for (const f of ['exit_code', 'duration_ms', 'memory_peak_bytes', 'cpu_user_us', 'cpu_system_us', 'queue_ms']) {
        assert.ok(Number.isInteger(r.sc[f]), `${f} is not an integer: ${r.sc[f]}`);
    }
    // The kernel's account (issue 33.1): always there; null with rlimits (no cgroup to read it
    // from), with a cgroup a count, or null where that kernel has no such file.
    for (const f of ACCOUNT_FIELDS) {
        assert.ok(f in r.sc, `field ${f} missing: ${JSON.stringify(r.sc)}`);
        if (r.sc.limits === 'rlimit')
            assert.equal(r.sc[f], null, `${f} is ${r.sc[f]} with limits rlimit`);
        else
            assert.ok(r.sc[f] === null || (Number.isInteger(r.sc[f]) && r.sc[f] >= 0), `${f}: ${r.sc[f]}`);
    }
    for (const f of ['duration_ms', 'memory_peak_bytes', 'cpu_user_us', 'cpu_system_us', 'queue_ms']) {
        assert.ok(r.sc[f] >= 0, `${f} is negative: ${r.sc[f]}`);
    }
    // the same JSON as one text content item, content[0]
    assert.equal(r.result.content.filter((c) => c.type === 'text').length, 1, JSON.stringify(r.result.content));
    assert.equal(r.result.content[0].type, 'text');
    assert.deepEqual(r.textJson, r.sc, 'text content is not the same JSON as structuredContent');
}

/**
 * Until the daemon's pool of ready sandboxes is full (check_environment's sandbox.warm_ready ≥
 * warm_pool), at most timeoutMs, else fail; returns the sandbox report. Ready sandboxes are made
 * after each answer, at a low CPU weight (slow on a loaded machine): wait for this instead of
 * calling until a call happens to be served warm. After it, one call of the default interpreter
 * without dependencies must be served warm (docs/ready-sandboxes.md: a call takes the oldest
 * ready one), so a test requires `warm` of that one call, and a cold answer is a failure.
 */
export async function waitPoolFull(client, timeoutMs = 60000) {
    const t0 = Date.now();
    for (;;) {
        const r = await client.callTool({ name: 'check_environment', arguments: {} });
        const sb = r.structuredContent?.sandbox;
        assert.ok(sb?.warm_pool > 0, `the daemon has no pool: ${JSON.stringify(sb)}`);
        if (sb.warm_ready >= sb.warm_pool) return sb;
        if (Date.now() - t0 > timeoutMs) assert.fail(`the pool did not fill within ${timeoutMs} ms: ${JSON.stringify(sb)}`);
        await sleep(100);
    }
}
