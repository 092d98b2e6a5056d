// Everything lib/index.mjs exports, but startDaemon() starts mcp-execd with MCP_EXEC_TRANSPORT=http
// and connects the SDK client over HTTP ($HTTP_SHIM_TRANSPORT: 'http' = Streamable HTTP at /mcp,
// 'sse' = HTTP+SSE at /sse). With lib/http-redirect-hooks.mjs, the stdio tier's own test files run
// unchanged over HTTP (http-exec-*.test.mjs). Same return shape as lib/sdk.mjs's startDaemon:
// {client, transport, errors, exited, pid, stderr, close}.
export * from './index.mjs';
import { startHttpDaemon, connectSdk } from './http-daemon.mjs';

export async function startDaemon(t, opts = {}) {
    const kind = process.env.HTTP_SHIM_TRANSPORT ?? 'http';
    const d = await startHttpDaemon(null, { env: opts.env });
    const token = opts.env?.MCP_EXEC_AUTH_TOKEN;
    let client;
    const close = async () => {
        try { await client?.close(); } catch { /* gone */ }
        d.kill('SIGKILL');
    };
    if (t) t.after(close);
    try {
        client = await connectSdk(null, d, kind, {
            headers: token ? { Authorization: `Bearer ${token}` } : undefined,
            connectTimeoutMs: opts.connectTimeoutMs ?? 10000,
        });
    } catch (e) {
        await close();
        throw new Error(`connect to mcp-execd over ${kind} failed: ${e.message}\n--- daemon stderr ---\n${d.stderr()}`);
    }
    if (opts.listTools) await client.listTools();
    return {
        client, transport: client.httpTransport, errors: client.errors, pid: d.pid, stderr: d.stderr,
        exited: d.waitExit(24 * 3600 * 1000).catch(() => null), close,
    };
}
