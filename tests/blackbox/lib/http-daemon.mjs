// Drive mcp-execd over HTTP: start it on a free port, connect the official SDK client over
// Streamable HTTP or legacy HTTP+SSE, or talk raw HTTP (fetch) and parse SSE by hand.
//
//   const d = await startHttpDaemon(t, { env: { MCP_EXEC_AUTH_TOKEN: 'x' } });
//   const c = await connectSdk(t, d, 'http', { headers: { Authorization: 'Bearer x' } });
//   const sid = await initSession(d, { Authorization: 'Bearer x' });
//   const res = await mcpPost(d, { jsonrpc: '2.0', id: 2, method: 'ping' }, { sessionId: sid, headers });
//
// Ports: MCP_EXEC_ADDR does not take port 0, so a random high port is tried and, if the daemon
// says the address is in use, another one (up to 8 times). The daemon logs the bound address
// ("listening on 127.0.0.1:PORT") on stderr; startHttpDaemon() waits for that line.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { binaryPath, daemonEnv, sleep } from './env.mjs';
import { afterStderr } from './proc.mjs';
import { recordWire } from './sdk.mjs';

export const MCP_ACCEPT = 'application/json, text/event-stream';

function randomPort() {
    return 20000 + Math.floor(Math.random() * 40000);
}

/**
 * Start mcp-execd serving HTTP on 127.0.0.1 (or opts.host) at a free port.
 * @param t          node:test context or null (then call d.kill() yourself)
 * @param opts.env   extra environment (MCP_EXEC_TRANSPORT defaults to http)
 * @param opts.host  host part of MCP_EXEC_ADDR (default 127.0.0.1; '[::1]' for IPv6)
 * @param opts.wrap  (port, env) => [command, args] to start the daemon through something else
 *                   (systemd-socket-activate); the daemon's argv is appended
 * @param opts.ready regexp on stderr meaning "ready" (default: the daemon's "serving MCP over")
 * @param opts.kick  connect once after `ready`, then wait for the daemon (socket activation)
 * @returns {{proc, pid, port, base, url, sseUrl, stderr: () => string, kill, waitExit, exit}}
 */
export async function startHttpDaemon(t, opts = {}) {
    let lastErr = '';
    for (let attempt = 0; attempt < 8; attempt++) {
        const port = opts.port ?? randomPort();
        const host = opts.host ?? '127.0.0.1';
        const env = daemonEnv({ MCP_EXEC_TRANSPORT: 'http', MCP_EXEC_ADDR: `${host}:${port}`, ...opts.env });
        let cmd = binaryPath(), args = [];
        if (opts.wrap) [cmd, args] = opts.wrap(port, env);
        const proc = spawn(cmd, opts.wrap ? [...args, binaryPath()] : [], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        const d = makeDaemon(proc, host, port);
        if (t) t.after(() => d.kill('SIGKILL'));
        let ok = opts.ready ? await d.waitFor(opts.ready, 10000) : await d.waitListening(10000);
        if (ok && opts.kick) {
            // socket activation: a first connection starts the daemon; then wait for it to serve
            await new Promise((res) => { const s = net.connect(port, host.replace(/^\[|\]$/g, ''), () => { s.end(); res(); }); s.on('error', res); });
            ok = await d.waitListening(10000);
        }
        if (ok) return d;
        lastErr = d.stderr();
        d.kill('SIGKILL');
        if (!/in use/i.test(lastErr) || opts.port) break;
    }
    throw new Error(`mcp-execd did not start listening; stderr:\n${lastErr}`);
}

function makeDaemon(proc, host, port) {
    let stderr = '';
    let exit = null;
    const exitWaiters = [];
    const lineWaiters = [];
    proc.stdout.on('data', () => {});
    proc.stderr.on('data', (b) => {
        stderr += b.toString('utf8');
        for (const w of [...lineWaiters]) if (w.re.test(stderr)) { lineWaiters.splice(lineWaiters.indexOf(w), 1); w.resolve(true); }
    });
    proc.on('exit', (code, signal) => afterStderr(proc, () => {
        exit = { code, signal };
        for (const w of exitWaiters) w(exit);
        for (const w of lineWaiters) w.resolve(false);
    }));
    const base = `http://${host}:${port}`;
    const d = {
        proc, pid: proc.pid, port, host, base,
        url: `${base}/mcp`,
        sseUrl: `${base}/sse`,
        get exit() { return exit; },
        stderr: () => stderr,
        kill(sig = 'SIGTERM') { if (!exit) try { proc.kill(sig); } catch { /* gone */ } },
        waitFor(re, timeoutMs = 5000) {
            if (re.test(stderr)) return Promise.resolve(true);
            if (exit) return Promise.resolve(false);
            return new Promise((resolve) => {
                // The timer is cleared once the line comes: left pending, it kept the test file's
                // process alive up to timeoutMs after its last test.
                const w = { re, resolve: (v) => { clearTimeout(w.timer); resolve(v); } };
                lineWaiters.push(w);
                w.timer = setTimeout(() => { const i = lineWaiters.indexOf(w); if (i >= 0) { lineWaiters.splice(i, 1); resolve(false); } }, timeoutMs);
            });
        },
        waitListening(timeoutMs) { return d.waitFor(/serving MCP over/, timeoutMs); },
        waitExit(timeoutMs = 5000) {
            if (exit) return Promise.resolve(exit);
            return new Promise((resolve, reject) => {
                const timer = setTimeout(() => reject(new Error(`mcp-execd did not exit within ${timeoutMs} ms; stderr: ${stderr.slice(-1500)}`)), timeoutMs);
                exitWaiters.push((e) => { clearTimeout(timer); resolve(e); });
            });
        },
    };
    return d;
}

/**
 * An SDK v1 Client connected over 'http' (StreamableHTTPClientTransport, /mcp) or 'sse'
 * (SSEClientTransport, /sse). Closed in t.after(). c.errors collects client.onerror.
 * opts: headers, connectTimeoutMs, authProvider (the SDK's OAuthClientProvider, 'http' only).
 */
export async function connectSdk(t, d, kind, opts = {}) {
    const requestInit = { headers: opts.headers ?? {} };
    const transport = kind === 'http'
        ? new StreamableHTTPClientTransport(new URL(d.url), { requestInit, authProvider: opts.authProvider })
        : new SSEClientTransport(new URL(d.sseUrl), { requestInit });
    const client = new Client({ name: `mcp-execd-blackbox-${kind}`, version: '0' }, { capabilities: {} });
    client.errors = [];
    client.onerror = (e) => client.errors.push(e);
    client.transportKind = kind;
    client.httpTransport = transport;
    await client.connect(transport, { timeout: opts.connectTimeoutMs ?? 10000 });
    client.wire = recordWire(transport);
    if (t) t.after(async () => { try { await client.close(); } catch { /* gone */ } });
    return client;
}

/** POST one JSON-RPC message (or a raw string body) to /mcp; returns the fetch Response. */
export async function mcpPost(d, body, opts = {}) {
    const headers = {
        'Content-Type': 'application/json',
        Accept: MCP_ACCEPT,
        ...(opts.sessionId ? { 'Mcp-Session-Id': opts.sessionId } : {}),
        ...(opts.protocolVersion ? { 'MCP-Protocol-Version': opts.protocolVersion } : {}),
        ...opts.headers,
    };
    for (const [k, v] of Object.entries(headers)) if (v === undefined) delete headers[k];
    return fetch(opts.url ?? d.url, {
        method: opts.method ?? 'POST',
        headers,
        body: typeof body === 'string' ? body : JSON.stringify(body),
        signal: opts.signal,
    });
}

export const INIT = {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

/** initialize + notifications/initialized over raw HTTP; returns the session id. */
export async function initSession(d, headers = {}) {
    const r = await mcpPost(d, INIT, { headers });
    if (r.status !== 200) throw new Error(`initialize: HTTP ${r.status} ${await r.text()}`);
    const sid = r.headers.get('mcp-session-id');
    await r.text();
    const n = await mcpPost(d, { jsonrpc: '2.0', method: 'notifications/initialized' },
        { sessionId: sid, protocolVersion: '2025-11-25', headers });
    await n.text();
    return sid;
}

/**
 * Read an SSE body incrementally. Returns an object with
 *   events: [{event, data, json, at}]  (at = ms since open), comments: [{text, at}]
 *   next(pred, timeoutMs): the first event matching pred (already seen or to come)
 *   done: Promise resolved when the stream ends
 *   cancel(): abort reading (closes the connection)
 */
export function readSse(response) {
    const t0 = performance.now();
    const events = [];
    const comments = [];
    const waiters = [];
    const reader = response.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let ended = false;
    const push = (ev) => {
        events.push(ev);
        for (const w of [...waiters]) if (w.pred(ev)) { waiters.splice(waiters.indexOf(w), 1); clearTimeout(w.timer); w.resolve(ev); }
    };
    const done = (async () => {
        try {
            for (;;) {
                const { value, done: d } = await reader.read();
                if (d) break;
                buf += dec.decode(value, { stream: true });
                let i;
                while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
                    const block = buf.slice(0, i);
                    buf = buf.slice(i).replace(/^\r?\n\r?\n/, '');
                    let event = 'message';
                    const data = [];
                    for (const line of block.split(/\r?\n/)) {
                        if (line.startsWith(':')) comments.push({ text: line.slice(1).trim(), at: performance.now() - t0 });
                        else if (line.startsWith('event:')) event = line.slice(6).trim();
                        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
                    }
                    if (data.length === 0) continue;
                    const text = data.join('\n');
                    let json;
                    try { json = JSON.parse(text); } catch { json = undefined; }
                    push({ event, data: text, json, at: performance.now() - t0 });
                }
            }
        } catch { /* aborted */ }
        ended = true;
        for (const w of waiters) { clearTimeout(w.timer); w.reject(new Error('stream ended')); }
    })();
    return {
        events, comments, done,
        get ended() { return ended; },
        next(pred, timeoutMs = 10000) {
            const have = events.find(pred);
            if (have) return Promise.resolve(have);
            if (ended) return Promise.reject(new Error('stream ended'));
            return new Promise((resolve, reject) => {
                const w = { pred, resolve, reject };
                w.timer = setTimeout(() => { waiters.splice(waiters.indexOf(w), 1); reject(new Error(`no matching SSE event within ${timeoutMs} ms; got ${JSON.stringify(events).slice(0, 800)}`)); }, timeoutMs);
                waiters.push(w);
            });
        },
        cancel() { return reader.cancel().catch(() => {}); },
    };
}

/**
 * A raw legacy HTTP+SSE session: GET /sse, read the endpoint event, POST messages to it.
 * Returns {sse, endpoint, post(msg) → Response, request(msg) → the response event's JSON, close()}.
 */
export async function openLegacy(d, headers = {}) {
    const ac = new AbortController();
    const r = await fetch(d.sseUrl, { headers: { Accept: 'text/event-stream', ...headers }, signal: ac.signal });
    if (r.status !== 200) throw new Error(`GET /sse: HTTP ${r.status}`);
    const sse = readSse(r);
    const ep = await sse.next((e) => e.event === 'endpoint', 5000);
    const endpoint = new URL(ep.data, d.base).toString();
    const post = (msg, extra = {}) => fetch(endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers, ...extra },
        body: typeof msg === 'string' ? msg : JSON.stringify(msg),
    });
    return {
        sse, endpoint, response: r, post,
        async request(msg, timeoutMs = 10000) {
            const p = await post(msg);
            await p.text();
            if (p.status !== 202) throw new Error(`POST ${endpoint}: HTTP ${p.status}`);
            return (await sse.next((e) => e.json && e.json.id === msg.id && ('result' in e.json || 'error' in e.json), timeoutMs)).json;
        },
        close() { ac.abort(); return sse.cancel(); },
    };
}

/** Number of open fds of a process (from /proc/<pid>/fd), or null. */
export function fdCount(pid) {
    try { return fs.readdirSync(`/proc/${pid}/fd`).length; } catch { return null; }
}

/** Poll fn() every 50 ms until it returns a truthy value or timeoutMs passes; returns the last value. */
export async function until(fn, timeoutMs = 5000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
        const v = await fn();
        if (v || Date.now() >= end) return v;
        await sleep(50);
    }
}

/** Median of an array of numbers. */
export function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
}

/**
 * One HTTP request with node:http (fetch cannot set Host): {status, headers, body, json}.
 * opts: {method, path, headers, body (string or object → JSON), chunked (no Content-Length),
 * agent}. json is the parsed body or undefined.
 */
export function rawRequest(d, opts = {}) {
    return new Promise((resolve, reject) => {
        const body = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
        const headers = { ...opts.headers };
        if (body !== undefined && !opts.chunked && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-length'))
            headers['Content-Length'] = Buffer.byteLength(body);
        const req = http.request({
            host: d.host.replace(/^\[|\]$/g, ''), port: d.port, method: opts.method ?? 'GET', path: opts.path ?? '/mcp',
            headers, agent: opts.agent ?? false, setHost: !Object.keys(headers).some((k) => k.toLowerCase() === 'host'),
        }, (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => {
                const text = Buffer.concat(chunks).toString('utf8');
                let json;
                try { json = JSON.parse(text); } catch { json = undefined; }
                resolve({ status: res.statusCode, headers: res.headers, body: text, json });
            });
            res.on('error', reject);
        });
        req.on('error', reject);
        // A client's request timeout (opts.timeoutMs): the request fails as such a client's would.
        if (opts.timeoutMs) req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`no answer within ${opts.timeoutMs} ms`)));
        if (body !== undefined) {
            if (opts.chunked) for (let i = 0; i < body.length; i += 65536) req.write(body.slice(i, i + 65536));
            else req.write(body);
        }
        req.end();
    });
}

/** Headers of a well-formed Streamable HTTP POST (plus extra). */
export function postHeaders(extra = {}) {
    return { 'Content-Type': 'application/json', Accept: MCP_ACCEPT, ...extra };
}
