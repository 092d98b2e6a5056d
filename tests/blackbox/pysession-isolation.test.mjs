// Isolation between Python sessions (issue 18.6): two sessions of one daemon, each trying to reach
// the other's state from inside. Session A leaves everything a neighbour could look for — a
// variable, a file in /tmp and in /dev/shm, a process with a marker in its argv, an abstract Unix
// socket listening — and proves each is there (from A, and the process from the host); session B
// then looks for each and finds none. A's handle given to another daemon (another credential: a
// daemon serves one) gets the one "unknown session" answer a garbage handle gets.
import assert from 'node:assert/strict';
import { findByMarker, reapMarker, startDaemon, test, uniqueMarker } from './lib/index.mjs';
import { callTool } from './lib/files.mjs';

const T = { timeout: 90000 };
const ENV = { MCP_EXEC_WARM_POOL: '0' };
const UNKNOWN = /^unknown session: the handle is not an open Python session/;
const errText = (r) => r.result.content?.[0]?.text ?? '';

async function open(client) {
    const r = await callTool(client, 'session_open', {});
    assert.equal(r.isError, false, errText(r));
    return r.sc.session;
}

async function run(client, session, code) {
    const r = await callTool(client, 'exec', { code, session });
    assert.equal(r.isError, false, errText(r));
    assert.equal(r.sc.exit_code, 0, `${code}\n--- stderr ---\n${r.sc.stderr}`);
    return JSON.parse(r.sc.stdout);
}

test('a session cannot see another session\'s variables, files, processes, memory or sockets', T, async (t) => {
    const marker = uniqueMarker('sess-iso');
    reapMarker(t, marker);
    const d = await startDaemon(t, { env: ENV });
    const a = await open(d.client);
    const b = await open(d.client);
    assert.notEqual(a, b);

    // A leaves its state where a neighbour would look, and shows it is there.
    const inA = await run(d.client, a, `
import json, os, socket, subprocess, sys
secret = "${marker}"
open("/tmp/${marker}", "w").write(secret)
shm = os.path.isdir("/dev/shm")
if shm:
    open("/dev/shm/${marker}", "w").write(secret)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "${marker}"])
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\\0${marker}")
srv.listen(1)
mine = [p for p in os.listdir("/proc") if p.isdigit()]
print(json.dumps({"shm": shm, "child": child.pid, "pids": mine, "tmp": os.listdir("/tmp")}))
`);
    assert.ok(inA.tmp.includes(marker), JSON.stringify(inA));
    // The marker process is real: the host sees it (so B's not seeing it below means something).
    const host = findByMarker(marker);
    assert.equal(host.length, 1, JSON.stringify(host));
    const hostPid = host[0].pid;
    const still = await run(d.client, a, `
import json, socket
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect("\\0${marker}")  # A itself can reach its socket
print(json.dumps({"secret": secret, "alive": child.poll() is None}))
`);
    assert.deepEqual(still, { secret: marker, alive: true });

    // The probe B runs, run first in A itself: it finds what is there (so it can fail).
    const probe = `
import json, os, socket
found = {}
found["variable"] = "secret" in globals()
found["tmp"] = os.path.exists("/tmp/${marker}") or "${marker}" in os.listdir("/tmp")
found["shm"] = os.path.exists("/dev/shm/${marker}")
procs = []
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            procs.append(open(f"/proc/{p}/cmdline", "rb").read())
        except OSError:
            pass
found["process"] = any(b"${marker}" in c for c in procs)
try:
    os.kill(${hostPid}, 0)
    found["signal"] = True
except ProcessLookupError:
    found["signal"] = False
except PermissionError:
    found["signal"] = "EPERM"
try:
    open("/proc/${hostPid}/mem", "rb").read(1)
    found["mem"] = True
except OSError as e:
    found["mem"] = False
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    c.connect("\\0${marker}")
    found["socket"] = True
except OSError:
    found["socket"] = False
found["pids"] = len(procs)
print(json.dumps(found))
`;
    const self = await run(d.client, a, probe);
    assert.deepEqual({ ...self, pids: 0 }, { variable: true, tmp: true, shm: inA.shm, process: true, signal: false,
        mem: false, socket: true, pids: 0 }, JSON.stringify(self));
    const inB = await run(d.client, b, probe);
    assert.deepEqual(inB, { variable: false, tmp: false, shm: false, process: false, signal: false, mem: false,
        socket: false, pids: inB.pids }, JSON.stringify(inB));
    // B's /proc holds B's own few processes, not A's child as well.
    assert.ok(inB.pids >= 1 && inB.pids <= inA.pids.length, JSON.stringify({ inA, inB }));

    // A's state is still whole after B looked.
    assert.deepEqual(await run(d.client, a, 'import json\nprint(json.dumps({"secret": secret, "alive": child.poll() is None}))'),
        { secret: marker, alive: true });
});

test('a session handle means nothing to another daemon: the same answer as garbage', T, async (t) => {
    const d = await startDaemon(t, { env: ENV });
    const other = await startDaemon(t, { env: ENV });
    const a = await open(d.client);
    const theirs = await callTool(other.client, 'exec', { code: 'print(1)', session: a });
    const garbage = await callTool(other.client, 'exec', { code: 'print(1)', session: 'f'.repeat(32) });
    assert.equal(theirs.isError, true);
    assert.match(errText(theirs), UNKNOWN);
    assert.equal(errText(theirs), errText(garbage));
    // And the session lives on in its own daemon.
    const r = await callTool(d.client, 'exec', { code: 'print(2)', session: a });
    assert.equal(r.sc.stdout, '2\n');
});
