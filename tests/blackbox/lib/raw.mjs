// A line-level client: spawn mcp-execd with child_process and talk newline-delimited JSON
// by hand. For what the SDK cannot send or observe: garbage lines, invalid requests, exact
// wire content, the exit status, requests before initialize, closing stdin mid-call.
//
//   const d = RawDaemon.spawn(t, { env: { MCP_EXEC_MAX_CONCURRENT: 1 } });
//   await d.initialize();
//   const res = await d.request('ping');            // full response object {jsonrpc,id,result|error}
//   d.sendLine('this is not json');
//   const err = await d.waitFor((m) => m.error?.code === -32700, 2000);
//   d.endStdin(); const { code } = await d.waitExit(5000);
//
// Every stdout line is recorded in d.lines; lines that are not JSON go to d.badLines (a daemon
// that writes anything but protocol to stdout shows up there).

import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { binaryPath, daemonEnv } from './env.mjs';
import { afterStderr } from './proc.mjs';

export class RawDaemon {
    /**
     * @param t          node:test context (or null): the daemon is killed in t.after()
     * @param opts.env   extra environment (merged over daemonEnv())
     * @param opts.args  command-line arguments
     * @param opts.binary another copy of the daemon (default binaryPath())
     * @param opts.uid, opts.gid  run it as this user (the test must be root)
     */
    static spawn(t, opts = {}) {
        const ids = opts.uid === undefined ? {} : { uid: opts.uid, gid: opts.gid ?? opts.uid };
        const proc = spawn(opts.binary ?? binaryPath(), opts.args ?? [], {
            env: daemonEnv(opts.env),
            stdio: ['pipe', 'pipe', 'pipe'],
            ...ids,
        });
        const d = new RawDaemon(proc);
        if (t) t.after(() => d.stop());
        return d;
    }

    constructor(proc) {
        this.proc = proc;
        this.pid = proc.pid;
        this.lines = [];       // every stdout line, as text
        this.messages = [];    // every line that parsed as JSON, in order
        this.badLines = [];    // lines that did not parse
        this.stdoutBytes = 0;
        this.stderrText = '';
        this.nextId = 1;
        this._waiters = new Set();
        this._parts = []; // of the line not yet ended: joined once its newline comes (a 20 MB line
                          // arrives in hundreds of chunks; rescanning it all for each was quadratic)
        this._decoder = new StringDecoder('utf8'); // a chunk may end inside a character
        this.exit = null;      // {code, signal} once exited
        this.closed = false;   // true once the process is gone and its stdout drained
        this._exitWaiters = [];
        proc.stdout.on('data', (chunk) => this._onData(chunk));
        proc.stderr.on('data', (b) => { this.stderrText += b.toString('utf8'); });
        proc.stdin.on('error', () => { /* EPIPE when the daemon is gone: the test sees the exit */ });
        proc.on('exit', (code, signal) => afterStderr(proc, () => {
            this.exit = { code, signal };
            for (const w of this._exitWaiters) w(this.exit);
            this._exitWaiters = [];
        }));
        // Once stdout is closed and the process gone, nothing more can arrive: fail waiters now.
        proc.on('close', () => {
            this.closed = true;
            for (const w of [...this._waiters]) {
                this._waiters.delete(w); clearTimeout(w.timer);
                w.reject(new Error(`mcp-execd exited (${JSON.stringify(this.exit)}) before ${w.what}; ` +
                    `stdout lines: ${JSON.stringify(this.lines).slice(0, 1500)}; stderr: ${this.stderrText.slice(-1500)}`));
            }
        });
    }

    _onData(chunk) {
        this.stdoutBytes += chunk.length;
        let rest = this._decoder.write(chunk);
        let i;
        while ((i = rest.indexOf('\n')) >= 0) {
            this._parts.push(rest.slice(0, i));
            rest = rest.slice(i + 1);
            const line = this._parts.join('');
            this._parts = [];
            this.lines.push(line);
            let msg;
            try { msg = JSON.parse(line); } catch { this.badLines.push(line); continue; }
            this.messages.push(msg);
            for (const w of [...this._waiters]) {
                if (w.pred(msg)) { this._waiters.delete(w); clearTimeout(w.timer); w.resolve(msg); }
            }
        }
        if (rest) this._parts.push(rest);
    }

    /** Bytes received after the last newline (a daemon must end every message with \n). */
    get partialLine() { return this._parts.join(''); }

    /** Write one line (a string is sent verbatim, anything else JSON.stringify'd) plus "\n". */
    sendLine(x) {
        const s = typeof x === 'string' ? x : JSON.stringify(x);
        this.proc.stdin.write(s + '\n');
    }

    /** Send a request with a fresh numeric id (or params.id override via opts.id); returns the id. */
    send(method, params, opts = {}) {
        const id = opts.id ?? this.nextId++;
        const msg = { jsonrpc: '2.0', id, method };
        if (params !== undefined) msg.params = params;
        this.sendLine(msg);
        return id;
    }

    /** Send a notification (no id). */
    notify(method, params) {
        const msg = { jsonrpc: '2.0', method };
        if (params !== undefined) msg.params = params;
        this.sendLine(msg);
    }

    /**
     * Resolve with the first message (already received or arriving within timeoutMs) for which
     * pred(msg) is true; reject on timeout with `what` and the daemon's stderr in the message.
     */
    waitFor(pred, timeoutMs = 5000, what = 'a matching message') {
        const have = this.messages.find(pred);
        if (have) return Promise.resolve(have);
        if (this.closed) {
            return Promise.reject(new Error(`mcp-execd exited (${JSON.stringify(this.exit)}) before ${what}; stderr: ${this.stderrText.slice(-1500)}`));
        }
        return new Promise((resolve, reject) => {
            const w = { pred, resolve, reject, what };
            w.timer = setTimeout(() => {
                this._waiters.delete(w);
                reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ` +
                    `stdout lines so far: ${JSON.stringify(this.lines).slice(0, 1500)}; ` +
                    `stderr: ${this.stderrText.slice(-1500)}`));
            }, timeoutMs);
            this._waiters.add(w);
        });
    }

    /** Resolve with the response (result or error) whose id equals `id`. */
    response(id, timeoutMs = 5000) {
        return this.waitFor((m) => m.id === id && ('result' in m || 'error' in m), timeoutMs, `the response to id ${JSON.stringify(id)}`);
    }

    /** Send a request and wait for its response (the whole JSON-RPC object). */
    async request(method, params, opts = {}) {
        const id = this.send(method, params, opts);
        return this.response(id, opts.timeoutMs ?? 5000);
    }

    /**
     * Wait `ms` and resolve with the first message matching pred that arrived (before or
     * during the wait), or null if there was none. It only proves that nothing came within the
     * window: to prove that something is never sent, end the daemon, await waitClosed() and look
     * at `messages` (nothing can arrive after that).
     */
    async expectNone(pred, ms) {
        const have = this.messages.find(pred);
        if (have) return have;
        try { return await this.waitFor(pred, ms); } catch { return null; }
    }

    /**
     * initialize with `protocolVersion`, then notifications/initialized. Returns the response.
     * Throws if the answer is an error.
     */
    async initialize(protocolVersion = '2025-11-25', timeoutMs = 5000) {
        const res = await this.request('initialize', {
            protocolVersion,
            capabilities: {},
            clientInfo: { name: 'mcp-execd-blackbox-raw', version: '0' },
        }, { timeoutMs });
        if (res.error) throw new Error(`initialize failed: ${JSON.stringify(res.error)}`);
        this.notify('notifications/initialized');
        return res;
    }

    /** tools/call of `exec`; returns the id (use response(id) to wait). */
    callExec(args, opts = {}) {
        return this.send('tools/call', { name: 'exec', arguments: args }, opts);
    }

    /** Close the daemon's stdin (EOF). */
    endStdin() { this.proc.stdin.end(); }

    /** Send a signal to the daemon (ignored if it is gone). */
    kill(sig = 'SIGTERM') {
        if (this.exit) return;
        try { this.proc.kill(sig); } catch { /* gone */ }
    }

    /**
     * End the daemon the way an MCP client does: close stdin, wait 1 s, SIGTERM, wait 1 s,
     * SIGKILL (so that it can clean up after itself). Never throws.
     */
    async stop() {
        if (this.exit) return;
        try { this.endStdin(); } catch { /* closed */ }
        for (const [sig, ms] of [['SIGTERM', 1000], ['SIGKILL', 1000], [null, 1000]]) {
            try { await this.waitExit(ms); return; } catch { /* still running */ }
            if (sig) this.kill(sig);
        }
    }

    /**
     * Resolve once the daemon is gone and its stdout is drained (nothing more can arrive: after
     * this, `messages` is all it ever sent); reject after timeoutMs. The end of a negative check
     * ("no answer for this id"): wait for this instead of for a while.
     */
    waitClosed(timeoutMs = 5000) {
        // 'close' comes after 'exit' and after stdout and stderr have ended, so this.exit is set
        // by then; the process's own status stands in should it not be.
        const status = () => this.exit ?? { code: this.proc.exitCode, signal: this.proc.signalCode };
        if (this.closed) return Promise.resolve(status());
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(
                `mcp-execd's stdout was not closed within ${timeoutMs} ms; stderr: ${this.stderrText.slice(-1500)}`)), timeoutMs);
            this.proc.once('close', () => { clearTimeout(timer); resolve(status()); });
        });
    }

    /**
     * Resolve once the daemon's stderr matches re; reject after timeoutMs or when it exits first.
     * Its stdout and stderr are two pipes read in no fixed order: an answer on stdout does not
     * mean a line logged before it has been read yet.
     */
    async waitStderr(re, timeoutMs = 5000) {
        const t0 = Date.now();
        while (!re.test(this.stderrText)) {
            if (this.exit || Date.now() - t0 > timeoutMs)
                throw new Error(`no ${re} on mcp-execd's stderr within ${timeoutMs} ms: ${this.stderrText.slice(-1500)}`);
            await new Promise((r) => setTimeout(r, 20));
        }
    }

    /** Resolve with {code, signal} when the daemon exits; reject after timeoutMs. */
    waitExit(timeoutMs = 5000) {
        if (this.exit) return Promise.resolve(this.exit);
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(
                `mcp-execd did not exit within ${timeoutMs} ms; stderr: ${this.stderrText.slice(-1500)}`)), timeoutMs);
            this._exitWaiters.push((e) => { clearTimeout(timer); resolve(e); });
        });
    }
}

/**
 * Run the binary to completion with the given args/env, no protocol spoken. For --help,
 * --version and bad configuration. stdin gets `stdin` and is closed, unless keepStdinOpen
 * (then a daemon that starts serving instead of exiting runs into the timeout).
 * Returns {code, signal, stdout, stderr, timedOut, ms}; if it is still running after
 * timeoutMs it is killed and timedOut is true.
 */
export function runOnce({ args = [], env = {}, timeoutMs = 5000, stdin = '', keepStdinOpen = false } = {}) {
    return new Promise((resolve) => {
        const proc = spawn(binaryPath(), args, { env: daemonEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
        const t0 = performance.now();
        let stdout = '', stderr = '', timedOut = false;
        proc.stdout.on('data', (b) => { stdout += b; });
        proc.stderr.on('data', (b) => { stderr += b; });
        proc.stdin.on('error', () => {});
        const timer = setTimeout(() => { timedOut = true; proc.kill('SIGKILL'); }, timeoutMs);
        proc.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr, timedOut, ms: performance.now() - t0 }); });
        if (keepStdinOpen) { if (stdin) proc.stdin.write(stdin); } else proc.stdin.end(stdin);
    });
}
