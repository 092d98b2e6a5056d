// The stdio tier's exec contract tests (exec.test.mjs), unchanged, over legacy HTTP+SSE (SSEClientTransport):
// lib/http-redirect-hooks.mjs makes their startDaemon() start mcp-execd with
// MCP_EXEC_TRANSPORT=http and connect the official SDK client over HTTP (lib/http-sdk-shim.mjs).
// Tests there that talk raw stdio on purpose (RawDaemon) still do.
import { register } from 'node:module';

process.env.HTTP_SHIM_TRANSPORT = 'sse';
register('./lib/http-redirect-hooks.mjs', import.meta.url);
await import('./exec.test.mjs');
