// A session's code cannot forge its account or outlive its call (issue 29.1). The interpreter that
// runs the caller's code also writes each call's end line, so everything it writes is untrusted:
// the daemon freezes the session at the end line (cgroup.freeze, or in rlimit mode the init's
// SIGSTOP of every process of the run), does not read its pipes until the next call, and takes what
// a call used from the kernel. Each test runs with the machine's cgroup backend and in rlimit mode.
//
// What is measured is CPU time, never wall time: a spin of N s of CPU takes N s of CPU however busy
// the machine is, so the bounds below hold on a loaded machine too.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import { startDaemon, descendants, sleep, test } from './lib/index.mjs';
import { callTool } from './lib/files.mjs';

const T = { timeout: 120000 };
const CPUS = os.cpus().length;
const MEMORY_MAX = 256 * 1024 * 1024; // MCP_EXEC_MEMORY_MAX's default
const MODES = [
    ['the machine\'s cgroup backend', {}],
    ['rlimit mode (MCP_EXEC_CGROUP=none)', { MCP_EXEC_CGROUP: 'none' }],
];

const errText = (r) => r.result.content?.[0]?.text ?? '';

// utime + stime of a process, in ms (USER_HZ 100), or 0 once it is gone.
function cpuMs(pid) {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return (Number(f[11]) + Number(f[12])) * 10;
    } catch { return 0; }
}
const treeCpuMs = (pid) => descendants(pid).reduce((sum, p) => sum + cpuMs(p), 0);

async function open(t, env) {
    const d = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '0', ...env } });
    const r = await callTool(d.client, 'session_open', {});
    assert.equal(r.isError, false, errText(r));
    t.diagnostic(`the session's limits: ${r.sc.limits}`);
    return { d, s: r.sc.session, limits: r.sc.limits };
}

const call = (d, session, code, extra = {}) => callTool(d.client, 'exec', { code, session, ...extra });
const cpuOf = (sc) => sc.cpu_user_us + sc.cpu_system_us;
const totalOf = (sc) => sc.session_cpu_user_us + sc.session_cpu_system_us;

// Every figure of a result is one the call could have had: CPU within its wall time on every CPU
// (and a little slack for the counters' rounding), memory within the limit.
function assertPossible(sc, what) {
    for (const k of ['cpu_user_us', 'cpu_system_us', 'memory_peak_bytes', 'session_cpu_user_us', 'session_cpu_system_us'])
        assert.ok(Number.isSafeInteger(sc[k]) && sc[k] >= 0, `${what}: ${k} = ${sc[k]}`);
    assert.ok(cpuOf(sc) <= (sc.duration_ms + 100) * 1000 * CPUS,
        `${what}: ${cpuOf(sc)} us of CPU in ${sc.duration_ms} ms on ${CPUS} CPUs`);
    assert.ok(sc.memory_peak_bytes <= MEMORY_MAX, `${what}: memory_peak_bytes ${sc.memory_peak_bytes}`);
}

// The session's processes (and the daemon) spend nothing while no call runs: CPU time read from the
// host's /proc over an idle window. Unfrozen, the code below spends the whole window.
async function assertIdle(t, d, ms, what) {
    const tree0 = treeCpuMs(d.pid), self0 = cpuMs(d.pid);
    await sleep(ms);
    const tree = treeCpuMs(d.pid) - tree0, self = cpuMs(d.pid) - self0;
    t.diagnostic(`${what}: in ${ms} ms between calls the session's processes spent ${tree} ms of CPU, the daemon ${self} ms`);
    assert.ok(tree <= 100, `${what}: the session's processes ran between calls (${tree} ms of CPU in ${ms} ms)`);
    assert.ok(self <= 300, `${what}: the daemon spent ${self} ms of CPU in ${ms} ms on an idle session`);
}

for (const [mode, env] of MODES) {
    test(`${mode}: a thread left flooding stdout runs and is read only within calls, and the session's CPU counts it there`, T, async (t) => {
        const { d, s } = await open(t, env);
        let r = await call(d, s, 'import os, threading\n' +
            'def flood():\n' +
            '    while True:\n' +
            '        os.write(1, b"x" * 65536)\n' +
            'threading.Thread(target=flood, daemon=True).start()\n' +
            'print("started")');
        assert.equal(r.isError, false, errText(r));
        assertPossible(r.sc, 'the call that starts the thread');
        const total1 = totalOf(r.sc);
        await assertIdle(t, d, 2500, mode);
        // The next call: the thread runs again (within the call), and the session's total grows
        // by this call's CPU, nothing more: nothing ran between the two.
        r = await call(d, s, 'import time\ntime.sleep(0.5)\nprint("second")');
        assert.equal(r.isError, false, errText(r));
        assertPossible(r.sc, 'the second call');
        const grew = totalOf(r.sc) - total1;
        t.diagnostic(`session CPU grew by ${grew} us over the second call, whose own CPU is ${cpuOf(r.sc)} us in ${r.sc.duration_ms} ms`);
        assert.ok(Math.abs(grew - cpuOf(r.sc)) <= 1000, `the session's CPU grew by ${grew} us, the call says ${cpuOf(r.sc)} us`);
        assert.ok(grew <= (r.sc.duration_ms + 100) * 1000 * CPUS, `the session's CPU grew by ${grew} us in a ${r.sc.duration_ms} ms call`);
        await callTool(d.client, 'session_close', { session: s });
    });

    test(`${mode}: a forged end line ends its own call early and gains nothing: the rest of its code runs in the next call, on its account`, T, async (t) => {
        const { d, s } = await open(t, env);
        // The launcher's nonce is a local of a frame up the stack: the code finds it, prints the
        // end line as the launcher would, with a status of its choosing and the CPU and memory
        // figures the launcher once wrote there (forged: -19689 us, 2^63-1 bytes), then spins 4 s
        // of CPU.
        const forged = 'import os, sys, time\n' +
            'f = sys._getframe(0)\n' +
            'while f is not None and "nonce" not in f.f_locals:\n' +
            '    f = f.f_back\n' +
            'line = b"\\0MCPEXECD-END %s 7 -19689 0 9223372036854775807\\n" % f.f_locals["nonce"].encode()\n' +
            'os.write(2, line); os.write(1, line)\n' +
            't0 = time.process_time()\n' +
            'while time.process_time() - t0 < 4:\n' +
            '    pass\n' +
            'print("spun")';
        let r = await call(d, s, forged, { timeout_s: 60 });
        assert.equal(r.isError, false, errText(r));
        t.diagnostic(`the forged call: exit_code ${r.sc.exit_code}, ${r.sc.duration_ms} ms, CPU ${cpuOf(r.sc)} us, peak ${r.sc.memory_peak_bytes}`);
        assert.equal(r.sc.exit_code, 7, 'the status is the code\'s own claim, as a run\'s exit status');
        assert.ok(!r.sc.stdout.includes('spun'), 'the forged line did not end the call');
        assertPossible(r.sc, 'the forged call');
        await assertIdle(t, d, 2500, mode);
        // The next call starts while the forged code still spins: the spin's CPU is this call's.
        r = await call(d, s, 'print("two")', { timeout_s: 60 });
        assert.equal(r.isError, false, errText(r));
        assertPossible(r.sc, 'the call after the forged one');
        t.diagnostic(`the next call: ${r.sc.duration_ms} ms, CPU ${cpuOf(r.sc)} us, stdout ${JSON.stringify(r.sc.stdout.slice(0, 120))}`);
        assert.match(r.sc.stdout, /spun/, 'the forged call\'s code went on in the next call');
        assert.match(r.sc.stdout, /two/);
        assert.ok(cpuOf(r.sc) >= 3000000, `the spin's ~4 s of CPU was not the next call's: ${cpuOf(r.sc)} us`);
        await callTool(d.client, 'session_close', { session: s });
    });
}
