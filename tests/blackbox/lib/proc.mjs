// Looking at processes from the outside, through /proc.
//
// A run's processes live in their own PID namespace, but the host's /proc still shows them
// (with host pids), so a test can tell whether anything of a run survived. To make a run's
// process findable, give it a unique marker in its argv (see pySleeperExec()).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { binaryPath, sleep } from './env.mjs';

/** A marker nobody else has: put it in a run's argv, then look for it in /proc. */
export function uniqueMarker(prefix = 'bbmark') {
    return `${prefix}-${process.pid}-${crypto.randomBytes(6).toString('hex')}`;
}

/**
 * Memory of a process from /proc/<pid>/status, in bytes: {rss: VmRSS, hwm: VmHWM}
 * (VmHWM is the peak RSS over the process's life). null if the process is gone.
 */
export function procMemory(pid) {
    let s;
    try { s = fs.readFileSync(`/proc/${pid}/status`, 'utf8'); } catch { return null; }
    const kb = (name) => {
        const m = s.match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'));
        return m ? Number(m[1]) * 1024 : null;
    };
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** The argv of a process (array of strings), or null if it is gone / unreadable. */
export function procCmdline(pid) {
    try {
        const raw = fs.readFileSync(`/proc/${pid}/cmdline`);
        if (raw.length === 0) return [];   // zombie or kernel thread
        return raw.toString('utf8').replace(/\0$/, '').split('\0');
    } catch { return null; }
}

/** Parent pid and state letter of a process from /proc/<pid>/stat, or null. */
export function procStat(pid) {
    try {
        const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
        return { state: rest[0], ppid: Number(rest[1]) };
    } catch { return null; }
}

/** All pids currently in /proc. */
export function allPids() {
    return fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number);
}

/** When the test ends, SIGKILLs every process still carrying marker (a run a failed check left). */
export function reapMarker(t, marker) {
    t.after(() => {
        for (const p of findByMarker(marker)) try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ }
    });
}

/**
 * Processes whose argv contains `marker` (as a whole argument or inside one):
 * [{pid, argv, state}]. Zombies have an empty cmdline and are therefore not reported:
 * a zombie holds no resources but its pid, and is its parent's to reap.
 */
export function findByMarker(marker) {
    const out = [];
    for (const pid of allPids()) {
        if (pid === process.pid) continue;
        const argv = procCmdline(pid);
        if (argv && argv.some((a) => a.includes(marker))) out.push({ pid, argv, state: procStat(pid)?.state });
    }
    return out;
}

/**
 * Poll (every 25 ms) until no process carries `marker`, for at most timeoutMs.
 * Returns [] when they are gone, else the survivors (so `assert.deepEqual(await ..., [])`
 * prints them).
 */
export async function waitMarkerGone(marker, timeoutMs = 2000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
        const left = findByMarker(marker);
        if (left.length === 0 || Date.now() >= end) return left;
        await sleep(25);
    }
}

/** Poll until at least one process carries `marker`; returns them, or [] after timeoutMs. */
export async function waitMarkerPresent(marker, timeoutMs = 3000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
        const found = findByMarker(marker);
        if (found.length > 0 || Date.now() >= end) return found;
        await sleep(25);
    }
}

/** Pids of all descendants of `pid` (children, grandchildren, ...), from /proc/<n>/stat ppid. */
export function descendants(pid) {
    const children = new Map();
    for (const p of allPids()) {
        const st = procStat(p);
        if (!st) continue;
        if (!children.has(st.ppid)) children.set(st.ppid, []);
        children.get(st.ppid).push(p);
    }
    const out = [];
    const stack = [...(children.get(pid) ?? [])];
    while (stack.length) {
        const p = stack.pop();
        out.push(p);
        stack.push(...(children.get(p) ?? []));
    }
    return out;
}

// ---- Python snippets for runs ------------------------------------------------------------

/**
 * Python code that replaces itself (same pid) with a python sleeping `seconds`, whose argv
 * carries `marker`, so the run is visible in /proc as long as it lives.
 */
export function pySleeperExec(marker, seconds = 60) {
    return [
        'import os, sys',
        `exe = sys.executable or '/usr/bin/python3'`,
        `os.execv(exe, [exe, '-c', 'import time; time.sleep(${seconds})', ${JSON.stringify(marker)}])`,
    ].join('\n');
}

// A copy of the daemon that uid may execute, in a new directory below the system's temporary one
// (0755), with a private tmp/ (0700) that uid owns, for tests that run the daemon as a user of
// their own. The caller removes dir.
export function daemonCopyForUid(uid, prefix) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    fs.chmodSync(dir, 0o755);
    const binary = path.join(dir, 'mcp-execd');
    fs.copyFileSync(binaryPath(), binary);
    fs.chmodSync(binary, 0o755);
    const tmp = path.join(dir, 'tmp');
    fs.mkdirSync(tmp, { mode: 0o700 });
    fs.chownSync(tmp, uid, uid);
    return { dir, binary, tmp };
}

/** Calls done() once the process's stderr has ended, or after 1 s: what a daemon wrote just before it
 * exited may still be in the pipe when 'exit' comes (a child that keeps the pipe open only delays
 * this by the second). */
export function afterStderr(proc, done) {
    if (proc.stderr.readableEnded) { done(); return; }
    let called = false;
    const once = () => { if (!called) { called = true; clearTimeout(timer); done(); } };
    const timer = setTimeout(once, 1000);
    proc.stderr.once('end', once);
    proc.stderr.once('close', once);
}
