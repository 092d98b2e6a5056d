// The egress bypass suite (issue 32.4): a run with an allowlist tries every way around it it can,
// through the server, and each is denied. The allowlist names one test server on loopback by its
// address; a second test server, not listed, must never see a byte. Servers are this test's own, on
// 127.0.0.1 (and an abstract Unix socket of the host's namespace); no other address is ever
// reached (the probes that name far addresses are cut off inside the run, or refused by the proxy
// before it connects).
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { startDaemon, callExec, summarize, test } from './lib/index.mjs';

async function server(t, handler) {
    const seen = [];
    const s = http.createServer((req, res) => {
        seen.push(req.url);
        handler(req, res);
    });
    await new Promise((r) => s.listen(0, '127.0.0.1', r));
    t.after(() => new Promise((r) => s.close(r)));
    return { port: s.address().port, seen };
}

// Each probe prints one line: its name, then "denied <how>" or "OPEN <what>".
const PROBES = (allowed, other, abstract) => `
import errno, os, socket, urllib.request, urllib.error

PROXY = ("127.0.0.1", 3128)

def line(name, ok, how):
    print(name, "OPEN" if ok else "denied", how)

def sock_probe(name, make):
    try:
        s = make()
        line(name, True, "connected")
        s.close()
    except OSError as e:
        line(name, False, errno.errorcode.get(e.errno, str(e.errno)))

def proxy_probe(name, raw, timeout=15):
    """raw bytes to the proxy; the status line it answers."""
    s = socket.create_connection(PROXY, timeout=timeout)
    s.sendall(raw)
    data = b""
    try:
        while b"\\r\\n" not in data:
            b = s.recv(4096)
            if not b:
                break
            data += b
    except socket.timeout:
        pass
    s.close()
    status = data.split(b"\\r\\n")[0].decode(errors="replace")
    line(name, status.startswith("HTTP/1.1 2"), status or "closed")

def http_probe(name, url):
    try:
        r = urllib.request.urlopen(url, timeout=15)
        line(name, True, "%d %s" % (r.status, r.read()[:40]))
    except urllib.error.HTTPError as e:
        line(name, False, "HTTP %d" % e.code)
    except OSError as e:
        line(name, False, type(e).__name__)

# Around the proxy: sockets of the run's own.
sock_probe("tcp-direct-listed-server", lambda: socket.create_connection(("127.0.0.1", ${allowed}), timeout=5))
sock_probe("tcp-direct-other-server", lambda: socket.create_connection(("127.0.0.1", ${other}), timeout=5))
sock_probe("tcp-far-address", lambda: socket.create_connection(("192.0.2.1", 80), timeout=5))
sock_probe("tcp-metadata", lambda: socket.create_connection(("169.254.169.254", 80), timeout=5))
sock_probe("ipv6-far", lambda: socket.create_connection(("2001:db8::1", 80), timeout=5))
sock_probe("ipv6-loopback", lambda: socket.create_connection(("::1", ${other}), timeout=5))
sock_probe("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
sock_probe("quic-udp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
sock_probe("icmp-raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
sock_probe("icmp-ping-socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP))
sock_probe("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
sock_probe("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW))
try:
    socket.getaddrinfo("example.com", 443)
    line("dns", True, "resolved")
except OSError as e:
    line("dns", False, type(e).__name__)
def abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(b"\\0${abstract}")
    return s
sock_probe("abstract-unix-socket", abstract)
def ulp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_TCP, 31, b"tls")  # TCP_ULP: kernel TLS
    return s
sock_probe("tcp-ulp-ktls", ulp)
try:
    open("/etc/hosts", "a").write("127.0.0.1 example.com\\n")
    line("rewrite-etc-hosts", True, "written")
except OSError as e:
    line("rewrite-etc-hosts", False, errno.errorcode.get(e.errno, str(e.errno)))

# Through the proxy: requests it must refuse.
proxy_probe("connect-name-not-listed", b"CONNECT example.com:443 HTTP/1.1\\r\\n\\r\\n")
proxy_probe("connect-listed-other-port", b"CONNECT 127.0.0.1:${other} HTTP/1.1\\r\\n\\r\\n")
proxy_probe("connect-ip-literal", b"CONNECT 93.184.216.34:443 HTTP/1.1\\r\\n\\r\\n")
proxy_probe("connect-decimal-ip", b"CONNECT 2130706433:${allowed} HTTP/1.1\\r\\n\\r\\n")
proxy_probe("connect-userinfo", b"CONNECT evil@127.0.0.1:${allowed} HTTP/1.1\\r\\n\\r\\n")
proxy_probe("http-userinfo", b"GET http://127.0.0.1:${allowed}@127.0.0.1:${other}/ HTTP/1.1\\r\\n\\r\\n")
proxy_probe("http-host-differs", b"GET http://127.0.0.1:${allowed}/ HTTP/1.1\\r\\nHost: 127.0.0.1:${other}\\r\\n\\r\\n")
proxy_probe("http-localhost-rebinding", b"GET http://localhost:${other}/ HTTP/1.1\\r\\n\\r\\n")
proxy_probe("connect-oversized", b"CONNECT " + b"a" * 9000 + b".example:443 HTTP/1.1\\r\\n\\r\\n")
proxy_probe("connect-slow", b"CONNECT 127.0.0.1:${allowed} HT")
proxy_probe("http-chunked-smuggle", b"POST http://127.0.0.1:${allowed}/ HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\nGET http://127.0.0.1:${other}/ HTTP/1.1\\r\\n\\r\\n")
http_probe("redirect-to-unlisted", "http://127.0.0.1:${allowed}/redirect")
`;

/** Two test servers (one listed, one not, the listed one redirecting to the other) and an abstract
 * Unix socket of the host's network namespace. */
async function targets(t) {
    const other = await server(t, (req, res) => res.end('never'));
    const allowed = await server(t, (req, res) => {
        if (req.url === '/redirect') {
            res.writeHead(302, { Location: `http://127.0.0.1:${other.port}/stolen` });
            res.end();
        } else res.end('fine');
    });
    // The run's network namespace has abstract sockets of its own: this one is out of its reach.
    const abstractName = `mcp-execd-egress-bypass-${process.pid}-${Math.random().toString(16).slice(2)}`;
    const abs = net.createServer((c) => { c.end('OPEN'); });
    await new Promise((r) => abs.listen({ path: `\0${abstractName}` }, r));
    t.after(() => new Promise((r) => abs.close(r)));
    return { allowed, other, abstractName, allow: `127.0.0.1:${allowed.port},localhost:${other.port}` };
}

const EXPECTED = ['tcp-direct-listed-server', 'tcp-direct-other-server', 'tcp-far-address', 'tcp-metadata', 'ipv6-far',
    'ipv6-loopback', 'udp', 'quic-udp6', 'icmp-raw', 'icmp-ping-socket', 'packet', 'netlink', 'dns',
    'abstract-unix-socket', 'tcp-ulp-ktls', 'rewrite-etc-hosts', 'connect-name-not-listed', 'connect-listed-other-port',
    'connect-ip-literal', 'connect-decimal-ip', 'connect-userinfo', 'http-userinfo', 'http-host-differs',
    'http-localhost-rebinding', 'connect-oversized', 'connect-slow', 'http-chunked-smuggle', 'redirect-to-unlisted'];

/** Every probe denied, each the way it should be; the unlisted server untouched. */
function checkProbes(r, tg) {
    const lines = r.sc.stdout.trim().split('\n');
    const results = Object.fromEntries(lines.map((l) => { const [name, verdict, ...how] = l.split(' '); return [name, { verdict, how: how.join(' ') }]; }));
    assert.deepEqual(Object.keys(results), EXPECTED, summarize(r));
    for (const [name, { verdict, how }] of Object.entries(results))
        assert.equal(verdict, 'denied', `${name}: ${verdict} ${how}\n${summarize(r)}`);
    // How each was denied: the proxy's statuses where it was asked.
    const how = (n) => results[n].how;
    for (const n of ['connect-name-not-listed', 'connect-listed-other-port', 'connect-ip-literal', 'http-localhost-rebinding'])
        assert.match(how(n), /^HTTP\/1\.1 403 /, n);
    for (const n of ['connect-decimal-ip', 'connect-userinfo', 'http-userinfo', 'http-host-differs'])
        assert.match(how(n), /^HTTP\/1\.1 400 /, n);
    assert.match(how('connect-oversized'), /^HTTP\/1\.1 431 /);
    assert.match(how('connect-slow'), /^HTTP\/1\.1 408 /);
    assert.match(how('http-chunked-smuggle'), /^HTTP\/1\.1 501 /);
    assert.equal(how('redirect-to-unlisted'), 'HTTP 403'); // the redirect was followed, and refused
    assert.equal(how('udp'), 'EPROTONOSUPPORT'); // a family egress allows, a type it does not
    assert.equal(how('rewrite-etc-hosts'), 'EROFS');
    assert.equal(how('tcp-ulp-ktls'), 'EPERM'); // seccomp's, whether the tls module is loaded or not
    assert.deepEqual(tg.other.seen, [], 'the unlisted server saw a request');
    // The account: the one allowed request (the redirect), and the denials, each by host.
    assert.equal(r.sc.egress.connections - r.sc.egress.denied, 1, JSON.stringify(r.sc.egress));
    assert.ok(r.sc.egress.denied >= 12, JSON.stringify(r.sc.egress));
}

test('every way around the allowlist is denied, and the unlisted server never sees a byte', async (t) => {
    const tg = await targets(t);
    const d = await startDaemon(t, { env: { MCP_EXEC_EGRESS_ALLOW: tg.allow } });
    const r = await callExec(d.client, { code: PROBES(tg.allowed.port, tg.other.port, tg.abstractName), timeout_s: 60 },
        { timeoutMs: 90000 });
    checkProbes(r, tg);
    assert.deepEqual(tg.allowed.seen, ['/redirect']);
});

test('the same, from a Python session', async (t) => {
    const tg = await targets(t);
    const d = await startDaemon(t, { env: { MCP_EXEC_EGRESS_ALLOW: tg.allow } });
    const opened = await d.client.callTool({ name: 'session_open', arguments: {} });
    const session = opened.structuredContent?.session;
    assert.ok(session, JSON.stringify(opened));
    const r = await callExec(d.client, { session, code: PROBES(tg.allowed.port, tg.other.port, tg.abstractName), timeout_s: 60 },
        { timeoutMs: 90000 });
    checkProbes(r, tg);
});
