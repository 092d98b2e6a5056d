// The HTTP connection cap (docs/protocol.md, "The daemon's own limits": "HTTP connections | 1024 at once (fixed) | further
// connections wait in the kernel's listen backlog until one of the 1024 ends"). 1024 idle
// connections are opened; the daemon holds exactly 1024, a 1025th waits in the listening
// socket's accept queue (seen in /proc/net/tcp) with its request unanswered, and is served as soon
// as one of the 1024 closes. Everything happens well within the 30 s a silent connection is kept.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { test } from './lib/index.mjs';
import { startHttpDaemon, until } from './lib/http-daemon.mjs';

const CAP = 1024; // HTTP_CONNECTION_LIMIT in daemon/transport/http-server.c

const hexPort = (port) => port.toString(16).toUpperCase().padStart(4, '0');

// /proc/net/tcp rows (IPv4): local and remote "ADDR:PORT" in hex, state, rx_queue, inode.
function tcpRows() {
    return fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1).filter(Boolean).map((l) => {
        const f = l.trim().split(/\s+/);
        return { local: f[1], remote: f[2], state: f[3], rxQueue: parseInt(f[4].split(':')[1], 16), inode: f[9] };
    });
}

/** Connections waiting in the accept queue of the daemon's listening socket (its rx_queue). */
function backlog(port) {
    const l = tcpRows().find((r) => r.state === '0A' && r.local.endsWith(`:${hexPort(port)}`));
    return l ? l.rxQueue : null;
}

/** Connections the daemon has accepted: its own socket fds that are established TCP on the port. */
function accepted(pid, port) {
    const inodes = new Set();
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
        try {
            const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
            if (m) inodes.add(m[1]);
        } catch { /* closed meanwhile */ }
    }
    // Distinct inodes: /proc/net/tcp is read in pieces while other sockets come and go, and a row
    // can then be read twice.
    const seen = new Set(tcpRows().filter((r) => r.state === '01' && r.local.endsWith(`:${hexPort(port)}`) && inodes.has(r.inode))
        .map((r) => r.inode));
    return seen.size;
}

function open(port) {
    return new Promise((resolve, reject) => {
        const s = net.connect(port, '127.0.0.1');
        s.once('connect', () => resolve(s));
        s.once('error', reject);
    });
}

test('1024 connections at once: the 1025th waits in the listen backlog and is served when one of them ends', async (t) => {
    const d = await startHttpDaemon(t);
    const lim = /^Max open files\s+(\d+)/m.exec(fs.readFileSync(`/proc/${d.pid}/limits`, 'utf8'));
    assert.ok(Number(lim?.[1]) > CAP + 64, `the daemon may open only ${lim?.[1]} files: it cannot hold ${CAP} connections`);

    const held = [];
    t.after(() => { for (const s of held) s.destroy(); });
    for (let i = 0; i < CAP; i++) {
        const s = await open(d.port);
        s.on('error', () => {});
        held.push(s);
    }
    assert.ok(await until(() => accepted(d.pid, d.port) === CAP && backlog(d.port) === 0, 10000),
        `the daemon did not take the ${CAP} connections: accepted ${accepted(d.pid, d.port)}, backlog ${backlog(d.port)}`);

    // One more: the kernel completes its handshake, the daemon does not accept it.
    const extra = await open(d.port);
    held.push(extra);
    let answer = '';
    let answeredAt = null;
    const answered = new Promise((resolve) => extra.on('data', (b) => {
        answer += b.toString('latin1');
        if (/\r\n\r\n[\s\S]*\}/.test(answer)) { answeredAt ??= performance.now(); resolve(); }
    }));
    extra.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    assert.ok(await until(() => backlog(d.port) === 1, 5000), `the 1025th connection is not in the backlog: ${backlog(d.port)}`);
    assert.equal(accepted(d.pid, d.port), CAP);
    assert.equal(answer, '', 'the 1025th connection was answered while 1024 were open');

    // One of the 1024 ends: the waiting connection is accepted and answered.
    const closedAt = performance.now();
    held[0].destroy();
    let timer;
    await Promise.race([answered, new Promise((_, rej) => { timer = setTimeout(() => rej(new Error('no answer within 10 s of a close')), 10000); })])
        .finally(() => clearTimeout(timer));
    assert.match(answer, /^HTTP\/1\.1 200 /, answer);
    assert.match(answer, /\{"status":"ready"\}/, answer);
    assert.ok(answeredAt >= closedAt, 'answered before a connection ended');
    assert.equal(backlog(d.port), 0);
    t.diagnostic(`answered ${Math.round(answeredAt - closedAt)} ms after a connection closed`);
});
