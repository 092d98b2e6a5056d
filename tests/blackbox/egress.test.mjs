// Egress by name (issue 32), end to end through the server, with servers on this machine's loopback
// only (the test's own; no other address is ever contacted). A run whose call has an allowlist
// (MCP_EXEC_EGRESS_ALLOW here) reaches what it lists through the daemon's proxy, with unmodified
// clients (urllib reads HTTP_PROXY; a CONNECT tunnel by hand); everything else is denied: another
// port, a name that resolves to loopback (rebinding), a direct connection around the proxy, UDP.
// The result's `egress` says the bytes each way and the hosts asked for, allowed or not; each
// decision is a record (on stderr without a journal), never a path. Without an allowlist a run has
// no network at all, as before, and its result has no `egress`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { RawDaemon, startDaemon, callExec, summarize, test } from './lib/index.mjs';
import { makeSources } from './lib/pydeps.mjs';
import { startHttpDaemon, connectSdk } from './lib/http-daemon.mjs';
import crypto from 'node:crypto';

/** An HTTP server on 127.0.0.1 that answers every request with its body, and remembers each
 * request's line and headers. */
async function server(t, body) {
    const seen = [];
    const s = http.createServer((req, res) => {
        seen.push({ method: req.method, url: req.url, headers: req.headers });
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
    });
    await new Promise((r) => s.listen(0, '127.0.0.1', r));
    t.after(() => new Promise((r) => s.close(r)));
    return { port: s.address().port, seen };
}

const FETCH = (url) => `
import urllib.request, urllib.error
try:
    print(urllib.request.urlopen(${JSON.stringify(url)}, timeout=20).read().decode())
except urllib.error.HTTPError as e:
    print("HTTP", e.code, e.read().decode().strip())
`;

test('a listed host is reached through the proxy with an unmodified client; the result and a record account for it', async (t) => {
    const a = await server(t, 'hello egress');
    const d = await startDaemon(t, { env: { MCP_EXEC_EGRESS_ALLOW: `127.0.0.1:${a.port}` } });
    const r = await callExec(d.client, { code: FETCH(`http://127.0.0.1:${a.port}/simple/x?y=1`) });
    assert.equal(r.sc.stdout, 'hello egress\n', summarize(r));
    // The server got the request rebuilt: origin form, no Proxy-* header, one request per connection.
    assert.equal(a.seen.length, 1);
    assert.equal(a.seen[0].url, '/simple/x?y=1');
    assert.equal(a.seen[0].headers.connection, 'close');
    assert.ok(!Object.keys(a.seen[0].headers).some((h) => h.startsWith('proxy-')), JSON.stringify(a.seen[0].headers));
    const e = r.sc.egress;
    assert.ok(e, summarize(r));
    assert.equal(e.connections, 1);
    assert.equal(e.denied, 0);
    assert.ok(e.bytes_sent > 0 && e.bytes_received > 'hello egress'.length, JSON.stringify(e));
    assert.deepEqual(e.hosts, [{ host: '127.0.0.1', port: a.port, allowed: true, connections: 1,
        bytes_sent: e.bytes_sent, bytes_received: e.bytes_received }]);
    // The decision's record: host, port, bytes; never the path or the query.
    const rec = new RegExp(`egress allowed 127\\.0\\.0\\.1:${a.port} for run [0-9a-f]{16}`);
    for (let i = 0; i < 50 && !rec.test(d.stderr()); i++) await new Promise((res) => setTimeout(res, 100));
    assert.match(d.stderr(), rec);
    assert.match(d.stderr(), /EGRESS_DECISION=allowed/);
    assert.ok(!d.stderr().includes('simple/x'), 'a path reached the log');
});

test('what the list does not name is denied: another port, a name that resolves to loopback, a direct connection, UDP', async (t) => {
    const a = await server(t, 'allowed');
    const b = await server(t, 'never');
    // localhost is listed by name, but it resolves to loopback: no name may lead there.
    const d = await startDaemon(t, { env: { MCP_EXEC_EGRESS_ALLOW: `127.0.0.1:${a.port},localhost:${b.port}` } });
    const r = await callExec(d.client, {
        code: FETCH(`http://127.0.0.1:${b.port}/`) + FETCH(`http://localhost:${b.port}/`) + `
import socket
for what, make, addr in (("direct", lambda: socket.create_connection(("127.0.0.1", ${b.port}), timeout=5), None),
                         ("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM), None),
                         ("far", lambda: socket.create_connection(("192.0.2.1", 80), timeout=5), None)):
    try:
        make()
        print(what, "open")
    except OSError as e:
        print(what, "refused", e.errno)
`,
    });
    const lines = r.sc.stdout.trim().split('\n');
    assert.match(lines[0], /^HTTP 403 mcp-execd egress: this host and port are not in the run's egress allowlist$/, summarize(r));
    assert.match(lines[1], /^HTTP 403 mcp-execd egress: the name resolves only to addresses that no name may reach/, summarize(r));
    assert.match(lines[2], /^direct refused \d+$/); // the run's own loopback has nothing there
    assert.match(lines[3], /^udp refused \d+$/);    // seccomp: TCP only
    assert.match(lines[4], /^far refused \d+$/);    // no route out of the run's namespace
    assert.equal(b.seen.length, 0, 'a denied request reached the server');
    const e = r.sc.egress;
    assert.equal(e.denied, 2, JSON.stringify(e));
    assert.equal(e.bytes_sent + e.bytes_received, 0);
    assert.deepEqual(e.hosts.map((h) => [h.host, h.port, h.allowed]).sort(),
        [['127.0.0.1', b.port, false], ['localhost', b.port, false]].sort());
});

test('CONNECT opens a tunnel to a listed host:port and passes its bytes through unread', async (t) => {
    const a = await server(t, 'through the tunnel');
    const d = await startDaemon(t, { env: { MCP_EXEC_EGRESS_ALLOW: `127.0.0.1:${a.port}` } });
    const r = await callExec(d.client, {
        code: `
import os, socket
proxy = os.environ["HTTPS_PROXY"].removeprefix("http://").rstrip("/").split(":")
s = socket.create_connection((proxy[0], int(proxy[1])), timeout=20)
s.sendall(b"CONNECT 127.0.0.1:${a.port} HTTP/1.1\\r\\nHost: 127.0.0.1:${a.port}\\r\\n\\r\\n")
head = b""
while not head.endswith(b"\\r\\n\\r\\n"):
    head += s.recv(1)
print(head.split(b"\\r\\n")[0].decode())
s.sendall(b"GET /t HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print(data.split(b"\\r\\n\\r\\n", 1)[1].decode())
print(sorted(k for k in os.environ if k.lower().endswith("_proxy")))
`,
    });
    const lines = r.sc.stdout.trim().split('\n');
    assert.equal(lines[0], 'HTTP/1.1 200 Connection established', summarize(r));
    assert.equal(lines[1], 'through the tunnel');
    assert.equal(lines[2], "['ALL_PROXY', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'all_proxy', 'http_proxy', 'https_proxy', 'no_proxy']");
    assert.equal(a.seen[0].url, '/t'); // the tunnel's own request, as the run wrote it
    assert.equal(r.sc.egress.connections, 1);
});

test('without an allowlist a run has no network and no proxy, and its result has no egress', async (t) => {
    const d = await startDaemon(t, {});
    const r = await callExec(d.client, {
        code: `
import os, socket
print(sorted(k for k in os.environ if k.lower().endswith("_proxy")))
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    print("inet open")
except OSError as e:
    print("inet refused", e.errno)
`,
    });
    assert.equal(r.sc.stdout, '[]\ninet refused 97\n', summarize(r)); // EAFNOSUPPORT
    assert.equal(r.sc.egress, undefined);
});

test('pip installs from a listed local index through the proxy, unmodified (it reads HTTP_PROXY)', async (t) => {
    const src = await makeSources(t, [{ name: 'egresspkg', version: '1.2' }]);
    const d = await startDaemon(t, { env: { MCP_EXEC_EGRESS_ALLOW: `127.0.0.1:${src.port}` } });
    const r = await callExec(d.client, {
        code: `
import subprocess, sys
p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-cache-dir", "--disable-pip-version-check",
                    "--index-url", ${JSON.stringify(src.indexUrl)}, "--target", "/tmp/t", "egresspkg"],
                   capture_output=True, text=True)
print(p.returncode, p.stderr[-500:])
sys.path.insert(0, "/tmp/t")
import egresspkg
print(egresspkg.GREETING)
`,
        timeout_s: 120,
    }, { timeoutMs: 150000 });
    assert.equal(r.sc.stdout.trim().split('\n').pop(), 'hello from egresspkg 1.2', summarize(r));
    const e = r.sc.egress;
    assert.ok(e.connections >= 2 && e.denied === 0, JSON.stringify(e)); // the index page, the wheel
    assert.deepEqual(e.hosts.map((h) => [h.host, h.port, h.allowed]), [['127.0.0.1', src.port, true]]);
});

test('an HTTPS download from a listed host goes through the tunnel, TLS end to end (the proxy never sees the plaintext)', async (t) => {
    // A certificate of the test's own for 127.0.0.1; the run trusts it and nothing else.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'egress-tls-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
        '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1',
        '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const cert = fs.readFileSync(path.join(dir, 'cert.pem'), 'utf8');
    const secret = 'the secret body of a TLS answer';
    const s = https.createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert }, (req, res) => {
        res.writeHead(200, { 'Content-Length': Buffer.byteLength(secret) });
        res.end(secret);
    });
    await new Promise((r) => s.listen(0, '127.0.0.1', r));
    t.after(() => new Promise((r) => s.close(r)));
    const port = s.address().port;
    const d = await startDaemon(t, { env: { MCP_EXEC_EGRESS_ALLOW: `127.0.0.1:${port}` } });
    const r = await callExec(d.client, {
        code: `
import ssl, urllib.request
ctx = ssl.create_default_context(cafile="ca.pem")
print(urllib.request.urlopen("https://127.0.0.1:${port}/secret", context=ctx, timeout=20).read().decode())
`,
        files: [{ name: 'ca.pem', content: cert }],
    });
    assert.equal(r.sc.stdout, `${secret}\n`, summarize(r));
    assert.equal(r.sc.egress.connections, 1);
    assert.ok(r.sc.egress.bytes_received > secret.length, JSON.stringify(r.sc.egress)); // the handshake too
    assert.ok(!d.stderr().includes(secret) && !d.stderr().includes('/secret'), 'the log holds what TLS carried');
});

test('a Python session follows the same allowlist; each call accounts for its own traffic', async (t) => {
    const a = await server(t, 'to a session');
    const d = await startDaemon(t, { env: { MCP_EXEC_EGRESS_ALLOW: `127.0.0.1:${a.port}` } });
    const opened = await d.client.callTool({ name: 'session_open', arguments: {} });
    const session = opened.structuredContent?.session;
    assert.ok(session, JSON.stringify(opened));
    const first = await callExec(d.client, { session, code: FETCH(`http://127.0.0.1:${a.port}/s`) + 'kept = 1' });
    assert.equal(first.sc.stdout, 'to a session\n', summarize(first));
    assert.equal(first.sc.egress.connections, 1);
    assert.deepEqual(first.sc.egress.hosts.map((h) => [h.host, h.port, h.allowed]), [['127.0.0.1', a.port, true]]);
    // The next call made no connection: its own account is empty, whatever the session did before.
    const second = await callExec(d.client, { session, code: 'print(kept)' });
    assert.equal(second.sc.stdout, '1\n');
    assert.deepEqual(second.sc.egress, { bytes_sent: 0, bytes_received: 0, connections: 0, denied: 0, hosts: [],
        hosts_truncated: false });
    const third = await callExec(d.client, { session, code: FETCH(`http://127.0.0.1:${a.port + 1}/`) });
    assert.match(third.sc.stdout, /^HTTP 403 /, summarize(third));
    assert.equal(third.sc.egress.denied, 1);
    assert.equal(a.seen.length, 1);
});

test('each tenant has its own allowlist (egress= on its line); a tenant without one has no network', async (t) => {
    const a = await server(t, 'for alpha');
    const sha = (x) => crypto.createHash('sha256').update(x).digest('hex');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'egress-tenants-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'tenants');
    fs.writeFileSync(file, `alpha ${sha('alpha-tok')} egress=127.0.0.1:${a.port}\nbeta ${sha('beta-tok')}\n`, { mode: 0o600 });
    // MCP_EXEC_EGRESS_ALLOW is for calls of no tenant and of default: the file's tenants have their lines.
    const d = await startHttpDaemon(t, { env: { MCP_EXEC_TENANTS: file, MCP_EXEC_EGRESS_ALLOW: `127.0.0.1:${a.port}` } });
    const alpha = await connectSdk(t, d, 'http', { headers: { Authorization: 'Bearer alpha-tok' } });
    const beta = await connectSdk(t, d, 'http', { headers: { Authorization: 'Bearer beta-tok' } });
    const ra = await callExec(alpha, { code: FETCH(`http://127.0.0.1:${a.port}/`) });
    assert.equal(ra.sc.stdout, 'for alpha\n', summarize(ra));
    assert.equal(ra.sc.egress.connections, 1);
    const rb = await callExec(beta, { code: 'import os\nprint(sorted(k for k in os.environ if k.endswith("_PROXY")))' });
    assert.equal(rb.sc.stdout, '[]\n', summarize(rb));
    assert.equal(rb.sc.egress, undefined);
    assert.equal(a.seen.length, 1);
});

test('a task follows the allowlist of the call that made it, and its result accounts for it', async (t) => {
    const a = await server(t, 'to a task');
    const d = RawDaemon.spawn(t, { env: { MCP_EXEC_EGRESS_ALLOW: `127.0.0.1:${a.port}` } });
    await d.initialize();
    const created = await d.request('tools/call', { name: 'exec', arguments: { code: FETCH(`http://127.0.0.1:${a.port}/task`) }, task: {} });
    const id = created.result?.task?.taskId;
    assert.ok(id, JSON.stringify(created));
    const res = await d.request('tasks/result', { taskId: id }, { timeoutMs: 30000 }); // waits for its end
    assert.equal(res.result?.structuredContent?.stdout, 'to a task\n', JSON.stringify(res));
    assert.equal(res.result.structuredContent.egress.connections, 1);
    assert.deepEqual(a.seen.map((s) => s.url), ['/task']);
});
