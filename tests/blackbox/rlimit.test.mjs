// rlimit mode end to end through the server (docs/tools.md, the result fields; SECURITY.md, "rlimit
// mode: what is not bounded"; MCP_EXEC_MEMORY_MAX / MCP_EXEC_PIDS_MAX / MCP_EXEC_TMP_SIZE): this tier's daemons
// run with MCP_EXEC_CGROUP=none, so every limit a run meets is an rlimit the sandbox set from the
// configuration. Each is hit for real by the caller's code, on the cold path and on a ready
// sandbox, and the result reports it as the docs say: an allocation past MCP_EXEC_MEMORY_MAX
// fails with MemoryError (RLIMIT_AS, per process, children too) and oom_killed stays false; a fork
// past MCP_EXEC_PIDS_MAX fails with EAGAIN (RLIMIT_NPROC) and pids_limit_hit stays false; a file
// or a memfd past MCP_EXEC_TMP_SIZE gets EFBIG (RLIMIT_FSIZE); at most 1024 fds (RLIMIT_NOFILE);
// no core files; RLIMIT_CPU per process (MCP_EXEC_MAX_TIMEOUT_S + 1 s: the deadline comes first
// for a single thread) kills a run whose threads burn more CPU than wall time; limits "rlimit" and
// unbounded lists what rlimits leave open.
import assert from 'node:assert/strict';
import { startDaemon, callExec, summarize, test, waitPoolFull, assertResultShape, RLIMIT_UNBOUNDED } from './lib/index.mjs';

const MIB = 1 << 20;
const MEMORY_MAX = 96 * MIB;
const PIDS_MAX = 8;
const TMP_SIZE = 4 * MIB;
const MAX_TIMEOUT_S = 20;
const ENV = {
    MCP_EXEC_CGROUP: 'none',
    MCP_EXEC_MEMORY_MAX: String(MEMORY_MAX),
    MCP_EXEC_PIDS_MAX: String(PIDS_MAX),
    MCP_EXEC_TMP_SIZE: '4M',
    MCP_EXEC_MAX_TIMEOUT_S: String(MAX_TIMEOUT_S),
};

// Hits each limit and prints one JSON line of what happened.
const PROBE = `
import errno, json, os, resource

out = {}
R = resource
out["rlimits"] = {n: list(R.getrlimit(getattr(R, "RLIMIT_" + n))) for n in ("AS", "NPROC", "CPU", "FSIZE", "NOFILE", "CORE")}

# Memory: RLIMIT_AS is per process. Half the limit is fine, twice it is a MemoryError, in Python
# and in a forked child alike.
def alloc(n):
    try:
        b = bytearray(n)
        b[-1] = 1
        return "ok"
    except MemoryError:
        return "MemoryError"
out["alloc_small"] = alloc(${MEMORY_MAX / 4})
out["alloc_big"] = alloc(${MEMORY_MAX * 2})
pid = os.fork()
if pid == 0:
    os._exit(7 if alloc(${MEMORY_MAX * 2}) == "MemoryError" else 0)
out["child_alloc_big"] = "MemoryError" if os.WEXITSTATUS(os.waitpid(pid, 0)[1]) == 7 else "ok"

# Processes: fork until refused; the children wait for the pipe to close, then exit.
r, w = os.pipe()
kids, err = [], None
for _ in range(${PIDS_MAX * 4}):
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode[e.errno]
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    kids.append(pid)
os.close(w)
for k in kids:
    os.waitpid(k, 0)
out["forks"], out["fork_error"] = len(kids), err

# Files: a /tmp file and a memfd may not grow past MCP_EXEC_TMP_SIZE (ftruncate takes no space).
def trunc(fd, n):
    try:
        os.ftruncate(fd, n)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
fd = os.open("/tmp/sparse", os.O_RDWR | os.O_CREAT)
out["file_at_cap"], out["file_past_cap"] = trunc(fd, ${TMP_SIZE}), trunc(fd, ${TMP_SIZE + 1})
os.close(fd)
fd = os.memfd_create("m")
out["memfd_at_cap"], out["memfd_past_cap"] = trunc(fd, ${TMP_SIZE}), trunc(fd, ${TMP_SIZE + 1})
os.close(fd)

# Descriptors: open until refused.
fds, err = [], None
while len(fds) < 5000:
    try:
        fds.append(os.open("/dev/null", os.O_RDONLY))
    except OSError as e:
        err = errno.errorcode[e.errno]
        break
out["max_fd"], out["open_error"] = max(fds), err
for fd in fds:
    os.close(fd)
print(json.dumps(out))
`;

function checkProbe(r) {
    assertResultShape(r);
    assert.equal(r.sc.exit_code, 0, summarize(r));
    assert.equal(r.sc.limits, 'rlimit');
    assert.deepEqual(r.sc.unbounded, RLIMIT_UNBOUNDED);
    const v = JSON.parse(r.sc.stdout.trim().split('\n').pop());
    const same = (n) => [n, n];
    assert.deepEqual(v.rlimits, {
        AS: same(MEMORY_MAX), NPROC: same(PIDS_MAX), CPU: same(MAX_TIMEOUT_S + 1),
        FSIZE: same(TMP_SIZE), NOFILE: same(1024), CORE: same(0),
    }, JSON.stringify(v));
    // MCP_EXEC_MEMORY_MAX: MemoryError, never an OOM kill.
    assert.equal(v.alloc_small, 'ok', JSON.stringify(v));
    assert.equal(v.alloc_big, 'MemoryError', JSON.stringify(v));
    assert.equal(v.child_alloc_big, 'MemoryError', JSON.stringify(v));
    assert.equal(r.sc.oom_killed, false);
    // the peak RSS of its largest process: what it touched (a quarter of the limit), under the limit
    assert.ok(r.sc.memory_peak_bytes >= MEMORY_MAX / 4 && r.sc.memory_peak_bytes < MEMORY_MAX, summarize(r));
    // MCP_EXEC_PIDS_MAX: the run (Python and what it forks) never exceeds it; the fork past it is
    // EAGAIN, and pids_limit_hit stays false.
    assert.equal(v.fork_error, 'EAGAIN', JSON.stringify(v));
    assert.ok(v.forks + 1 <= PIDS_MAX && v.forks >= PIDS_MAX - 2, `forked ${v.forks} under PIDS_MAX=${PIDS_MAX}`);
    assert.equal(r.sc.pids_limit_hit, false);
    // MCP_EXEC_TMP_SIZE: no file and no memfd past it.
    assert.deepEqual([v.file_at_cap, v.file_past_cap, v.memfd_at_cap, v.memfd_past_cap], ['ok', 'EFBIG', 'ok', 'EFBIG'], JSON.stringify(v));
    // 1024 descriptors: the highest is 1023.
    assert.equal(v.open_error, 'EMFILE', JSON.stringify(v));
    assert.equal(v.max_fd, 1023, JSON.stringify(v));
    return v;
}

test('rlimit mode, cold path: memory, processes, file size and descriptors are enforced and reported', async (t) => {
    const d = await startDaemon(t, { env: { ...ENV, MCP_EXEC_WARM_POOL: '0' } });
    const r = await callExec(d.client, { code: PROBE, timeout_s: 30 });
    assert.equal(r.sc?.warm, false, summarize(r));
    const v = checkProbe(r);
    t.diagnostic(`cold: ${v.forks} forks, peak ${r.sc.memory_peak_bytes} bytes`);
});

test('rlimit mode, on a ready sandbox: the same limits', async (t) => {
    const d = await startDaemon(t, { env: { ...ENV, MCP_EXEC_WARM_POOL: '1' } });
    await waitPoolFull(d.client);
    const r = await callExec(d.client, { code: PROBE, timeout_s: 30 });
    assert.equal(r.sc?.warm, true, `not served warm: ${summarize(r)}`);
    const v = checkProbe(r);
    t.diagnostic(`warm: ${v.forks} forks, peak ${r.sc.memory_peak_bytes} bytes`);
});

// RLIMIT_CPU is per process and MCP_EXEC_MAX_TIMEOUT_S + 1 s, so only a process whose threads use
// more than one CPU can reach it before the deadline. Threads hashing (hashlib lets go of the GIL)
// burn CPU on every core; the main thread prints the process's CPU time every 100 ms. Either the
// kernel kills the run at the limit (the result says SIGKILL, not timed out, and the CPU printed
// last is just under the limit), or the deadline ends it first: then the run either never got the
// CPU (a loaded machine: the check cannot be made, said as a skip) or passed the limit alive (fail).
const CPU_TIMEOUT_S = 8;
const BURN = `
import hashlib, threading, time
buf = b"x" * (1 << 20)
def burn():
    h = hashlib.sha256()
    while True:
        h.update(buf)
for _ in range(8):
    threading.Thread(target=burn, daemon=True).start()
while True:
    print(f"{time.process_time():.3f}", flush=True)
    time.sleep(0.1)
`;

test('rlimit mode: RLIMIT_CPU (MCP_EXEC_MAX_TIMEOUT_S + 1 s per process) kills a run whose threads burn more CPU than wall time', async (t) => {
    // MCP_EXEC_MEMORY_MAX=infinity: eight threads' stacks and malloc arenas are address space.
    const d = await startDaemon(t, { env: { MCP_EXEC_CGROUP: 'none', MCP_EXEC_WARM_POOL: '0', MCP_EXEC_MEMORY_MAX: 'infinity',
                                            MCP_EXEC_MAX_TIMEOUT_S: String(CPU_TIMEOUT_S) } });
    const r = await callExec(d.client, { code: BURN, timeout_s: CPU_TIMEOUT_S });
    assert.equal(r.isError, false, summarize(r));
    const cpu = r.sc.stdout.trim().split('\n').map(Number);
    const last = cpu.at(-1);
    const limit = CPU_TIMEOUT_S + 1;
    t.diagnostic(`ended after ${r.sc.duration_ms} ms, ${r.sc.signal}, timed_out ${r.sc.timed_out}, last CPU ${last} s`);
    if (r.sc.timed_out) {
        assert.ok(last < limit, `the run used ${last} s of CPU, past RLIMIT_CPU ${limit} s, and lived: ${summarize(r)}`);
        t.skip(`the machine gave the run ${last} s of CPU in ${CPU_TIMEOUT_S} s: not enough to reach RLIMIT_CPU`);
        return;
    }
    assert.equal(r.sc.signal, 'SIGKILL', summarize(r));
    assert.equal(r.sc.exit_code, -9);
    assert.equal(r.sc.oom_killed, false);
    assert.ok(r.sc.duration_ms < CPU_TIMEOUT_S * 1000, summarize(r));
    assert.ok(last < limit && last > limit - 1, `last CPU printed ${last} s, RLIMIT_CPU ${limit} s`);
});
