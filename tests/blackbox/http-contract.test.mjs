// The exec contract over HTTP (issue 6, "How it is proven"): the official SDK client over
// StreamableHTTPClientTransport (/mcp) and SSEClientTransport (/sse) runs the same checks as the
// stdio tier: print(1) with every result field, stdin, a non-zero exit, a timeout, tool errors,
// an unknown tool, the catalogue, ping. One daemon serves both transports (MCP_EXEC_TRANSPORT=http).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callExec, callExecTimedOut, summarize, assertResultShape, assertCleanRun } from './lib/index.mjs';
import { startHttpDaemon, connectSdk } from './lib/http-daemon.mjs';

for (const kind of ['http', 'sse']) {
    const name = kind === 'http' ? 'Streamable HTTP' : 'HTTP+SSE';

    test(`${name}: connect, ping, tools/list (exec among them, with input and output schemas)`, async (t) => {
        const d = await startHttpDaemon(t);
        const c = await connectSdk(t, d, kind);
        assert.deepEqual(await c.ping(), {});
        const { tools } = await c.listTools();
        const exec = tools.find((x) => x.name === 'exec');
        assert.ok(exec, `no exec tool in ${tools.map((x) => x.name)}`);
        assert.equal(exec.inputSchema.additionalProperties, false);
        assert.ok(exec.outputSchema, 'no outputSchema');
        assert.equal(c.getServerVersion().name, 'mcp-execd');
        if (kind === 'http') assert.match(c.httpTransport.sessionId ?? '', /^[\x21-\x7e]{16,}$/);
        assert.deepEqual(c.errors.map(String), []);
    });

    test(`${name}: print(1) → stdout "1\\n", exit 0, every field, validated against outputSchema`, async (t) => {
        const d = await startHttpDaemon(t);
        const c = await connectSdk(t, d, kind);
        await c.listTools(); // the SDK then validates structuredContent against the outputSchema
        const r = await callExec(c, { code: 'print(1)' });
        assertCleanRun(r, '1\n');
    });

    test(`${name}: stdin is fed to the program`, async (t) => {
        const d = await startHttpDaemon(t);
        const c = await connectSdk(t, d, kind);
        const r = await callExec(c, { code: 'import sys; print(sys.stdin.read().upper())', stdin: 'hello\nwörld' });
        assertResultShape(r);
        assert.equal(r.sc.stdout, 'HELLO\nWÖRLD\n');
    });

    test(`${name}: a non-zero exit is a normal result (exit_code 3, isError false)`, async (t) => {
        const d = await startHttpDaemon(t);
        const c = await connectSdk(t, d, kind);
        const r = await callExec(c, { code: 'print("before")\nraise SystemExit(3)' });
        assertResultShape(r);
        assert.equal(r.sc.exit_code, 3);
        assert.equal(r.sc.stdout, 'before\n');
    });

    test(`${name}: an endless loop past its timeout_s → timed_out, exit_code -1, its output kept`, async (t) => {
        const d = await startHttpDaemon(t);
        const c = await connectSdk(t, d, kind);
        const r = await callExecTimedOut(c, 'print("x", flush=True)\nwhile True: pass');
        assertResultShape(r);
        assert.equal(r.sc.timed_out, true);
        assert.equal(r.sc.exit_code, -1);
        assert.equal(r.sc.stdout, 'x\n', summarize(r));
        // an endless loop answered at all was cut; its own duration says not before the deadline
        assert.ok(r.sc.duration_ms >= 900, `duration_ms ${r.sc.duration_ms}`);
    });

    test(`${name}: invalid arguments are tool errors naming the field`, async (t) => {
        const d = await startHttpDaemon(t, { env: { MCP_EXEC_MAX_CODE_BYTES: 1000 } });
        const c = await connectSdk(t, d, kind);
        for (const [args, word] of [[{ code: '' }, 'code'], [{ code: 5 }, 'code'], [{ code: 'print(1)', shell: 'x' }, 'shell'],
            [{ code: 'print(1)', timeout_s: 'x' }, 'timeout_s'], [{ code: '#'.repeat(1001) }, '1000']]) {
            const r = await callExec(c, args);
            assert.equal(r.isError, true, `not a tool error for ${JSON.stringify(args).slice(0, 60)}: ${summarize(r)}`);
            assert.ok(r.text.includes(word), `message does not mention ${word}: ${r.text}`);
        }
        await c.ping();
    });

    test(`${name}: an unknown tool is JSON-RPC error -32602`, async (t) => {
        const d = await startHttpDaemon(t);
        const c = await connectSdk(t, d, kind);
        await assert.rejects(c.callTool({ name: 'nope', arguments: {} }), (e) => e.code === -32602);
        await c.ping();
    });

    test(`${name}: a run's output never appears in the daemon's log`, async (t) => {
        const d = await startHttpDaemon(t, { env: { MCP_EXECD_DEBUG: 1 } });
        const c = await connectSdk(t, d, kind);
        const secret = `leak-${Math.random().toString(36).slice(2)}`;
        const r = await callExec(c, { code: `import sys; print(${JSON.stringify(secret)} + sys.stdin.read())`, stdin: 'IN' });
        assert.equal(r.sc.stdout, `${secret}IN\n`);
        assert.ok(!d.stderr().includes(secret), 'caller data in the log');
    });
}

test('both transports at once from one daemon: results go to the right client', async (t) => {
    const d = await startHttpDaemon(t);
    const a = await connectSdk(t, d, 'http');
    const b = await connectSdk(t, d, 'sse');
    const [ra, rb] = await Promise.all([
        callExec(a, { code: 'import time; time.sleep(0.3); print("A")' }),
        callExec(b, { code: 'print("B")' }),
    ]);
    assert.equal(ra.sc.stdout, 'A\n');
    assert.equal(rb.sc.stdout, 'B\n');
});
