// The client matrix (issue 30.6): each client a user is likely to point at mcp-execd, over stdio
// and over HTTP, does what an agent does with it: list the tools, run code, get a figure back as
// an image, see a tool error, keep a Python session, run a task, and make a 70 s call with the
// client's default request timeout (and its progress reset, where it has one). docs/clients.md
// holds the matrix a user reads; this file runs every cell and fails when a cell there is wrong
// either way: a "yes" that fails, or a "no" that now works (the matrix must be updated).
//
// Clients: the official 1.x SDK, the 2.x client (legacy, auto, pinned), the MCP Inspector's CLI,
// mcp-remote (a stdio-to-HTTP bridge: its stdio side driven by the 1.x SDK), and @ai-sdk/mcp.
// The Inspector and @ai-sdk/mcp want Node 22: they run on npm's node package from clients/.
// A .long file: its 70 s calls wait beside the rest of the tier, all at once.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as Client2x, StreamableHTTPClientTransport as Http2x } from '@modelcontextprotocol/client';
import { StdioClientTransport as Stdio2x } from '@modelcontextprotocol/client/stdio';
import { binaryPath, daemonEnv, SYSTEM_PATH, test, sleep } from './lib/index.mjs';
import { startHttpDaemon } from './lib/http-daemon.mjs';
import { installClients, CLIENTS, CLIENTS_BIN, runCommand } from './lib/clients.mjs';
import { readDoc, section } from './lib/snippets.mjs';
import { callThroughTasks, taskSession, TASKS_EXT } from './lib/ext-tasks.mjs';

const TOKEN = crypto.randomBytes(16).toString('hex');
const CAPS = ['list', 'exec', 'image', 'tool error', 'session', 'task', '70 s call'];
const IMAGE_CODE = 'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\n';
const LONG_CODE = "import time\ntime.sleep(70)\nprint('done after 70 s')\n";
const NO_SESSION = '0123456789abcdef0123456789abcdef';
const CLIENT_INFO = { name: 'bb-matrix-2x', version: '0' };
// Every daemon here takes all its cells' runs at once: the 70 s calls must not queue.
const DAEMON_ENV = { MCP_EXEC_MAX_CONCURRENT: 8, MCP_EXEC_WARM_POOL: 0, MCP_EXEC_MAX_TIMEOUT_S: 120 };
const anyResult = { '~standard': { version: 1, vendor: 'mcp-execd-blackbox', validate: (value) => ({ value }) } };

before(installClients, { timeout: 900000 });

// ---- what each cell checks, on a CallToolResult however the client got it --------------------

const text = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const CHECK = {
    list: (tools) => {
        const names = tools.map((x) => x.name);
        for (const n of ['exec', 'execute_python', 'session_open', 'session_close']) assert.ok(names.includes(n), `tools: ${names}`);
    },
    exec: (r) => assert.equal(r.structuredContent?.stdout, '42\n', JSON.stringify(r).slice(0, 500)),
    image: (r) => {
        const imgs = (r.content ?? []).filter((c) => c.type === 'image');
        assert.equal(imgs.length, 1, JSON.stringify(r).slice(0, 500));
        assert.equal(imgs[0].mimeType, 'image/png');
        assert.ok(Buffer.from(imgs[0].data, 'base64').subarray(1, 4).toString() === 'PNG', 'not a PNG');
    },
    'tool error': (r) => {
        assert.equal(r.isError, true, JSON.stringify(r).slice(0, 500));
        assert.match(text(r), /unknown session/);
    },
    session: (r) => assert.equal(r.structuredContent?.stdout, '42\n', JSON.stringify(r).slice(0, 500)),
    task: (r) => assert.equal(r.structuredContent?.stdout ?? JSON.parse(text(r)).stdout, 'done after 2 s\n', JSON.stringify(r).slice(0, 500)),
    '70 s call': (r) => assert.equal(r.structuredContent?.stdout, 'done after 70 s\n', JSON.stringify(r).slice(0, 500)),
};
const TASK_CODE = "import time\ntime.sleep(2)\nprint('done after 2 s')\n";

// ---- the clients: connect(via) gives an object with a method per capability it has ------------

/** The capabilities every client with callTool(params, options) and listTools() does the same way. */
function byCallTool(call, list) {
    return {
        list: async () => CHECK.list((await list()).tools),
        exec: async () => CHECK.exec(await call({ name: 'exec', arguments: { code: 'print(6*7)' } })),
        image: async () => CHECK.image(await call({ name: 'exec', arguments: { code: IMAGE_CODE } })),
        'tool error': async () => CHECK['tool error'](await call({ name: 'exec', arguments: { code: 'print(1)', session: NO_SESSION } })),
        session: async () => {
            const h = (await call({ name: 'session_open', arguments: {} })).structuredContent.session;
            await call({ name: 'exec', arguments: { code: 'x = 41', session: h } });
            CHECK.session(await call({ name: 'exec', arguments: { code: 'print(x + 1)', session: h } }));
            await call({ name: 'session_close', arguments: { session: h } });
        },
    };
}

async function sdk1(t, via, d) {
    const transport = via === 'http'
        ? new StreamableHTTPClientTransport(new URL(d.url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } })
        : new StdioClientTransport({ command: binaryPath(), env: daemonEnv(DAEMON_ENV), stderr: 'ignore' });
    return sdk1Over(t, transport);
}

async function sdk1Over(t, transport) {
    const c = new Client({ name: 'bb-matrix-1x', version: '0' });
    await c.connect(transport);
    t.after(() => c.close().catch(() => {}));
    return {
        ...byCallTool((p) => c.callTool(p), () => c.listTools()),
        task: async () => {
            let result;
            for await (const m of c.experimental.tasks.callToolStream({ name: 'exec', arguments: { code: TASK_CODE } },
                CallToolResultSchema, { task: { ttl: 60000 } })) {
                if (m.type === 'error') throw m.error;
                if (m.type === 'result') result = m.result;
            }
            CHECK.task(result);
        },
        '70 s call': async () => CHECK['70 s call'](await c.callTool({ name: 'exec', arguments: { code: LONG_CODE, timeout_s: 100 } },
            CallToolResultSchema, { onprogress: () => {}, resetTimeoutOnProgress: true })),
    };
}

function sdk2(mode) {
    return async (t, via, d) => {
        const open = async (capabilities) => {
            const transport = via === 'http'
                ? new Http2x(new URL(d.url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } })
                : new Stdio2x({ command: binaryPath(), args: [], env: daemonEnv(DAEMON_ENV), stderr: 'ignore' });
            const c = new Client2x(CLIENT_INFO, { versionNegotiation: { mode }, capabilities });
            await c.connect(transport);
            t.after(() => c.close().catch(() => {}));
            return { c, transport };
        };
        const { c } = await open(undefined);
        const cells = {
            ...byCallTool((p) => c.callTool(p), () => c.listTools()),
            '70 s call': async () => CHECK['70 s call'](await c.callTool({ name: 'exec', arguments: { code: LONG_CODE, timeout_s: 100 } },
                { onprogress: () => {}, resetTimeoutOnProgress: true })),
        };
        if (mode === 'legacy') {
            // Its tools/call takes no CreateTaskResult; request() with its schema overload does.
            cells.task = async () => {
                const created = await c.request({ method: 'tools/call', params: { name: 'exec', arguments: { code: TASK_CODE }, task: {} } }, anyResult);
                const taskId = created.task?.taskId;
                assert.ok(taskId, JSON.stringify(created));
                for (let i = 0; (await c.request({ method: 'tasks/get', params: { taskId } }, anyResult)).status === 'working'; i++) {
                    assert.ok(i < 600, 'the task never ended');
                    await sleep(100);
                }
                CHECK.task(await c.request({ method: 'tasks/result', params: { taskId } }, anyResult));
            };
        } else {
            // 2026: declaring the tasks extension lets the daemon answer a long call as a task, which
            // the client's callTool() refuses ("Unsupported result type 'task'": tasks.test.mjs);
            // @modelcontextprotocol/ext-tasks, the client's tasks package, polls it to its end.
            cells.task = async () => {
                const capabilities = { extensions: { [TASKS_EXT]: {} } };
                const { c: ct, transport } = await open(capabilities);
                const session = taskSession(ct, transport, CLIENT_INFO, capabilities);
                try {
                    CHECK.task(await callThroughTasks(session, 'exec', { code: TASK_CODE }));
                } finally {
                    await session.close();
                }
            };
        }
        return cells;
    };
}

/** The Inspector's CLI: one process per call, as a user runs it. */
async function inspector(t, via, d) {
    const target = via === 'http'
        ? [d.url, '--transport', 'http', '--header', `Authorization: Bearer ${TOKEN}`]
        : ['--transport', 'stdio', ...Object.entries(daemonEnv(DAEMON_ENV)).flatMap(([k, v]) => ['-e', `${k}=${v}`]), binaryPath()];
    const cli = async (...args) => {
        const r = await runCommand('npx', ['--no-install', '@modelcontextprotocol/inspector', '--cli', ...target, '--format', 'json', ...args],
            { cwd: CLIENTS, env: { ...daemonEnv(), PATH: `${CLIENTS_BIN}:${SYSTEM_PATH}` }, timeoutMs: 150000 });
        // --format json: {"result": …} on stdout, also for a tool error (which exits 1 and adds an
        // error envelope on stderr); a failure of the CLI itself is only on stderr.
        const out = r.stdout.trim() ? JSON.parse(r.stdout) : null;
        if (!out?.result) throw new Error(`inspector exited ${r.code}: ${r.stderr.slice(-1500)}`);
        return out.result;
    };
    const call = (name, args) => cli('--method', 'tools/call', '--tool-name', name, '--tool-args-json', JSON.stringify(args));
    return {
        ...byCallTool((p) => call(p.name, p.arguments), () => cli('--method', 'tools/list')),
        '70 s call': async () => CHECK['70 s call'](await call('exec', { code: LONG_CODE, timeout_s: 100 })),
    };
}

/** mcp-remote, as a stdio-only client runs it: the README's row, driven by the 1.x SDK. */
async function mcpRemote(t, via, d, home) {
    assert.equal(via, 'http');
    return sdk1Over(t, new StdioClientTransport({
        command: 'npx', args: ['--no-install', 'mcp-remote', d.url, '--header', 'Authorization:${AUTH_HEADER}'],
        cwd: CLIENTS, env: { ...daemonEnv(), PATH: `${CLIENTS_BIN}:${SYSTEM_PATH}`, HOME: home, AUTH_HEADER: `Bearer ${TOKEN}` },
        stderr: 'ignore',
    }));
}

/** @ai-sdk/mcp on Node 22: clients/matrix-aisdk.mjs, one client per process, prints what it got. */
async function aiSdk(t, via, d) {
    const conf = via === 'http'
        ? { transport: { type: 'http', url: d.url, headers: { Authorization: `Bearer ${TOKEN}` } } }
        : { stdio: { command: binaryPath(), env: daemonEnv(DAEMON_ENV) } };
    const script = path.join(CLIENTS, 'matrix-aisdk.mjs');
    const step = async (steps) => {
        const r = await runCommand(path.join(CLIENTS_BIN, 'node'), [script, JSON.stringify({ ...conf, steps })],
            { cwd: CLIENTS, env: { ...daemonEnv(), PATH: `${CLIENTS_BIN}:${SYSTEM_PATH}` }, timeoutMs: 150000 });
        if (r.code !== 0) throw new Error(`@ai-sdk/mcp exited ${r.code}: ${r.stderr.slice(-1500)}`);
        return JSON.parse(r.stdout);
    };
    const call = async (p) => (await step([p])).at(-1);
    return {
        list: async () => CHECK.list((await step(['list']))[0].tools),
        exec: async () => CHECK.exec(await call({ name: 'exec', arguments: { code: 'print(6*7)' } })),
        image: async () => CHECK.image(await call({ name: 'exec', arguments: { code: IMAGE_CODE } })),
        'tool error': async () => CHECK['tool error'](await call({ name: 'exec', arguments: { code: 'print(1)', session: NO_SESSION } })),
        // one client, one process: the session's handle goes from one call to the next
        session: async () => CHECK.session((await step(['session']))[0]),
        '70 s call': async () => CHECK['70 s call'](await call({ name: 'exec', arguments: { code: LONG_CODE, timeout_s: 100 } })),
    };
}

const CLIENT_TABLE = [
    // [name in docs/clients.md, connect, the transports it has]
    ['1.x SDK', sdk1, ['stdio', 'http']],
    ['2.x client, legacy', sdk2('legacy'), ['stdio', 'http']],
    ['2.x client, auto', sdk2('auto'), ['stdio', 'http']],
    ['2.x client, pinned', sdk2({ pin: '2026-07-28' }), ['stdio', 'http']],
    ['MCP Inspector CLI', inspector, ['stdio', 'http']],
    ['mcp-remote', mcpRemote, ['http']],
    ['@ai-sdk/mcp', aiSdk, ['stdio', 'http']],
];

// ---- the matrix as docs/clients.md states it ------------------------------------------------

/** { 'client|via': { cap: true | false } } from the doc's table (a cell "yes" or "no", maybe with a note's number). */
function docMatrix() {
    const rows = section(readDoc('docs/clients.md'), '## The matrix').split('\n').filter((l) => l.startsWith('|'));
    const head = rows[0].slice(1, -1).split('|').map((s) => s.trim());
    assert.deepEqual(head, ['client', 'via', ...CAPS], 'the matrix\'s columns');
    const m = {};
    for (const row of rows.slice(2)) {
        const cells = row.slice(1, -1).split('|').map((s) => s.trim());
        const [client, via, ...rest] = cells;
        m[`${client}|${via}`] = Object.fromEntries(CAPS.map((cap, i) => {
            assert.match(rest[i] ?? '', /^(yes|no)( \(\d+\))?$/, `${client} over ${via}, ${cap}: "${rest[i]}"`);
            return [cap, rest[i].startsWith('yes')];
        }));
    }
    return m;
}

const DOC = docMatrix();

test('the matrix in docs/clients.md has a row for each client and transport run here, and no other', () => {
    const here = CLIENT_TABLE.flatMap(([name, , vias]) => vias.map((via) => `${name}|${via}`));
    assert.deepEqual(Object.keys(DOC).sort(), here.sort());
});

// One test, its rows at once (most of their time is the 70 s call's wait), each row a subtest.
test('the client matrix: every cell as docs/clients.md states it', { timeout: 900000, concurrency: true }, async (t) => {
    const rows = CLIENT_TABLE.flatMap(([name, connect, vias]) => vias.map((via) => [name, connect, via]));
    await Promise.all(rows.map(([name, connect, via]) => t.test(`${name} over ${via}`, { timeout: 600000 }, async (t) => {
        const home = fs.mkdtempSync(path.join(os.tmpdir(), 'bb-matrix-home-'));
        t.after(() => fs.rmSync(home, { recursive: true, force: true }));
        const d = via === 'http' ? await startHttpDaemon(t, { env: { MCP_EXEC_AUTH_TOKEN: TOKEN, ...DAEMON_ENV } }) : null;
        const cells = await connect(t, via, d, home);
        const want = DOC[`${name}|${via}`];
        const run = async (cap) => {
            const fn = cells[cap];
            if (!fn) return { cap, ok: false, why: 'the client has no way to do it' };
            try { await fn(); return { cap, ok: true }; } catch (e) { return { cap, ok: false, why: String(e?.message ?? e).slice(0, 300) }; }
        };
        // The 70 s call beside the others: its wait is most of the row's time.
        const long = run('70 s call');
        const got = [];
        for (const cap of CAPS.filter((c) => c !== '70 s call')) got.push(await run(cap));
        got.push(await long);
        t.diagnostic(got.map((g) => `${g.cap}: ${g.ok ? 'yes' : `no (${g.why})`}`).join('; '));
        const wrong = got.filter((g) => g.ok !== want[g.cap]);
        assert.deepEqual(wrong.map((g) => `${g.cap}: docs/clients.md says ${want[g.cap] ? 'yes' : 'no'}, got ${g.ok ? 'yes' : `no: ${g.why}`}`), []);
    })));
});
