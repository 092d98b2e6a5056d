// Helpers for the dependency tests (issue 8, py-*.test.mjs): the parity tools, wheels made at
// test time, a wheelhouse directory and a PEP 503 simple index served on 127.0.0.1.
//
//   const src = await makeSources(t, [{ name: 'hellopkg', version: '1.0' }]);
//   src.wheelhouse  // directory of .whl files
//   src.indexUrl    // http://127.0.0.1:<port>/simple/ (python3 -m http.server over a generated tree)
//   const r = await callTool(d.client, 'execute_python', { script, dependencies: ['hellopkg'] });

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sleep } from './env.mjs';
import { callToolTimed } from './sdk.mjs';

const PY = '/usr/bin/python3';

/** tools/call of any tool; the same shape as callExec(). */
export function callTool(client, name, args, opts = {}) {
    return callToolTimed(client, name, args,
        { timeoutMs: opts.timeoutMs ?? 120000, signal: opts.signal, resetTimeoutOnProgress: true });
}

/** A fresh directory (mode 0755, removed in t.after()). */
export function tempDir(t, prefix) {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    fs.chmodSync(d, 0o755);
    if (t) t.after(() => fs.rmSync(d, { recursive: true, force: true }));
    return d;
}

// A wheel made by hand (a zip with the package, METADATA, WHEEL and RECORD): no pip, no network.
const wheelMaker = `
import base64, hashlib, json, os, sys, zipfile
spec = json.loads(sys.argv[1])
name, version, out = spec["name"], spec["version"], spec["out"]
files = {f"{name}/__init__.py": f"GREETING = {('hello from ' + name + ' ' + version)!r}\\nVERSION = {version!r}\\n"}
if spec.get("padding"):
    files[f"{name}/padding.bin"] = os.urandom(spec["padding"])
di = f"{name}-{version}.dist-info"
files[f"{di}/METADATA"] = f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n" + \\
    (f"Requires-Python: {spec['requires_python']}\\n" if spec.get("requires_python") else "")
files[f"{di}/WHEEL"] = "Wheel-Version: 1.0\\nGenerator: mcp-execd-tests\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
def digest(b):
    b = b.encode() if isinstance(b, str) else b
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode(), len(b)
record = "".join(f"{p},{digest(c)[0]},{digest(c)[1]}\\n" for p, c in files.items()) + f"{di}/RECORD,,\\n"
files[f"{di}/RECORD"] = record
path = os.path.join(out, f"{name}-{version}-py3-none-any.whl")
with zipfile.ZipFile(path, "w") as z:
    for p, c in files.items():
        z.writestr(p, c)
print(path)
`;

/** Writes name-version-py3-none-any.whl into dir; returns its path. */
export function makeWheel(dir, { name, version = '1.0', padding = 0, requiresPython }) {
    return execFileSync(PY, ['-c', wheelMaker, JSON.stringify({ name, version, out: dir, padding, requires_python: requiresPython })],
        { encoding: 'utf8' }).trim();
}

/** A free TCP port on 127.0.0.1 (nothing listens on it when this returns). */
export async function freePort() {
    return await new Promise((resolve, reject) => {
        const s = net.createServer();
        s.once('error', reject);
        s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
    });
}

// A static server; with delayMs it waits that long before answering any .whl request (to catch
// an install in the middle).
const serverCode = `
import functools, http.server, sys, time
port, root, delay = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.endswith(".whl") and delay:
            time.sleep(delay)
        return super().do_GET()
http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(H, directory=root)).serve_forever()
`;

/**
 * Wheels for `packages`, in a wheelhouse directory and behind a PEP 503 simple index on 127.0.0.1.
 * @returns {{wheelhouse, root, indexUrl, port, stop: () => void, requests: () => number}}
 */
export async function makeSources(t, packages, { delayMs = 0 } = {}) {
    const root = tempDir(t, 'mcp-execd-src-');
    const wheelhouse = path.join(root, 'wheels');
    fs.mkdirSync(wheelhouse, { mode: 0o755 });
    const wheels = packages.map((p) => makeWheel(wheelhouse, p));
    // PEP 503: /simple/ lists projects, /simple/<normalized>/ links their files.
    const simple = path.join(root, 'simple');
    fs.mkdirSync(simple);
    const names = [...new Set(packages.map((p) => p.name.toLowerCase().replace(/[-_.]+/g, '-')))];
    fs.writeFileSync(path.join(simple, 'index.html'),
        `<!DOCTYPE html><html><body>${names.map((n) => `<a href="${n}/">${n}</a>`).join('\n')}</body></html>\n`);
    for (const n of names) {
        fs.mkdirSync(path.join(simple, n));
        const links = wheels.filter((w) => path.basename(w).split('-')[0].toLowerCase().replace(/[-_.]+/g, '-') === n)
            .map((w) => `<a href="../../wheels/${path.basename(w)}">${path.basename(w)}</a>`);
        fs.writeFileSync(path.join(simple, n, 'index.html'), `<!DOCTYPE html><html><body>${links.join('\n')}</body></html>\n`);
    }
    const port = await freePort();
    const server = spawn(PY, ['-c', serverCode, String(port), root, String(delayMs / 1000)], { stdio: 'ignore' });
    const stop = () => { try { server.kill('SIGKILL'); } catch { /* gone */ } };
    if (t) t.after(stop);
    // Wait until it answers.
    for (let i = 0; i < 100; i++) {
        const ok = await new Promise((resolve) => {
            const s = net.connect(port, '127.0.0.1', () => { s.end(); resolve(true); });
            s.on('error', () => resolve(false));
        });
        if (ok) break;
        await sleep(100);
    }
    return { wheelhouse, root, wheels, port, indexUrl: `http://127.0.0.1:${port}/simple/`, stop };
}

/** "# /// script" block + body. */
export function pep723(deps, body, { requiresPython } = {}) {
    const lines = ['# /// script'];
    if (requiresPython) lines.push(`# requires-python = ${JSON.stringify(requiresPython)}`);
    lines.push(`# dependencies = [${deps.map((d) => JSON.stringify(d)).join(', ')}]`);
    lines.push('# ///');
    return lines.join('\n') + '\n' + body;
}

/** Names of the complete environments in a cache directory, and what is in its tmp/. */
export function cacheState(cacheDir) {
    const ls = (d) => { try { return fs.readdirSync(path.join(cacheDir, d)).sort(); } catch { return []; } };
    return { envs: ls('envs'), tmp: ls('tmp'), trash: ls('trash') };
}

/** Count of "installed environment" lines in a daemon's log. */
export function installsLogged(stderrText) {
    return (stderrText.match(/installed environment [0-9a-f]+ in \d+ ms/g) ?? []).length;
}
