// Every client snippet of the README, run as written (issue 30, points 3 and 5): the stdio
// configuration, `claude mcp add`, the one-request pipe, the curl over HTTP, the official 2.x
// client's example (auto, pinned, legacy; stdio and HTTP) and each row of the table of clients
// that send the HTTP token, with the real client wherever npm has it (Claude Code, Gemini CLI,
// Codex, the MCP Inspector, mcp-remote: pinned in clients/package.json, installed on first use).
// Cursor and VS Code are not on npm: their rows are read as those editors read them (their
// documented keys and ${env:…}/${input:…} substitutions) and connected to with the official SDK.
//
// What is changed in a snippet, and only that: the port 8080 (the tests pick a free one), the
// placeholders a reader fills in (/path/to/mcp-execd/build-release/daemon/mcp-execd, <the token>).
// A relative build-release/daemon/mcp-execd is left as is: those snippets run in a directory
// where it is the binary under test.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { binaryPath, daemonEnv, SYSTEM_PATH, test } from './lib/index.mjs';
import { startHttpDaemon } from './lib/http-daemon.mjs';
import { CLIENTS, CLIENTS_BIN, installClients, runCommand as run } from './lib/clients.mjs';
import { fencedBlocks, readDoc, REPO, section, tableRows } from './lib/snippets.mjs';

const README = readDoc('README.md');
const PLACEHOLDER = '/path/to/mcp-execd/build-release/daemon/mcp-execd';
const TOKEN = crypto.randomBytes(16).toString('hex');

/** The output a block shows in its comment ("# {…"), as a pattern: each … stands for anything. */
function shown(text) {
    const [, line] = /^# (\{.*)$/m.exec(text) ?? [];
    assert.ok(line, 'the block shows no output line ("# {…")');
    return new RegExp('^' + line.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*?'));
}

const out = (r) => `exit ${r.code}\n--- stdout ---\n${r.stdout.slice(-3000)}\n--- stderr ---\n${r.stderr.slice(-3000)}`;

before(installClients, { timeout: 900000 });

/** A home of its own for one client run, removed after the test. */
function home(t) {
    const h = fs.mkdtempSync(path.join(os.tmpdir(), 'bb-client-home-'));
    t.after(() => fs.rmSync(h, { recursive: true, force: true }));
    return h;
}

/** The environment a user's shell gives the clients: their bin first, the token exported. */
function userEnv(h, extra = {}) {
    return {
        ...daemonEnv(),
        PATH: `${CLIENTS_BIN}:${SYSTEM_PATH}`,
        HOME: h,
        MCP_EXEC_AUTH_TOKEN: TOKEN,
        // Claude Code: no update check, no telemetry (nothing here may depend on the internet)
        DISABLE_AUTOUPDATER: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        MCP_TIMEOUT: '60000', // its wait for a server to start, on a loaded machine
        ...extra,
    };
}

/** A snippet as run here: the free port for 8080, the binary under test for the placeholder. */
const asWritten = (text, d) => text.replaceAll('127.0.0.1:8080', `127.0.0.1:${d?.port ?? 8080}`).replaceAll(PLACEHOLDER, binaryPath());

/** A directory where build-release/daemon/mcp-execd is the binary under test. */
function checkout(t) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bb-checkout-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    fs.mkdirSync(path.join(dir, 'build-release/daemon'), { recursive: true });
    fs.symlinkSync(binaryPath(), path.join(dir, 'build-release/daemon/mcp-execd'));
    return dir;
}

/** Connect the official SDK over Streamable HTTP with these headers, run print(6*7), close. */
async function execOverHttp(url, headers) {
    const client = new Client({ name: 'bb-clients', version: '0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    try {
        const r = await client.callTool({ name: 'exec', arguments: { code: 'print(6*7)' } });
        assert.equal(r.structuredContent?.stdout, '42\n', JSON.stringify(r).slice(0, 500));
    } finally {
        await client.close();
    }
}

const httpDaemon = (t) => startHttpDaemon(t, { env: { MCP_EXEC_AUTH_TOKEN: TOKEN, MCP_EXEC_WARM_POOL: 0 } });

// ---- the README's fenced blocks: each one is claimed below, or the first test fails ----

const BLOCKS = fencedBlocks(README);
const block = (re) => {
    const found = BLOCKS.filter((b) => re.test(b.text));
    assert.equal(found.length, 1, `README blocks matching ${re}: ${found.length}`);
    return found[0];
};
const CLAIMED = [
    [/^\.\/scripts\/serve\.sh .*\n\.\/tests\/run-all\.sh /, 'the two commands: .ci/run runs the second, the systemd tier the first'],
    [/"mcpServers"/, 'stdio configuration: Gemini CLI runs it below'],
    [/^claude mcp add python -- /, 'Claude Code over stdio: below'],
    [/^echo '\{"jsonrpc"/, 'the one-request pipe: below'],
    [/^export MCP_EXEC_TRANSPORT=http/, 'the curl over HTTP: below'],
    [/from '@modelcontextprotocol\/client'/, 'the 2.x client: below'],
    [/^podman run -i --rm /, 'the container for a stdio client: the systemd tier\'s 70-container-image runs it as written'],
];

test('every fenced block of the README is one that a test here runs', () => {
    const unclaimed = BLOCKS.filter((b) => !CLAIMED.some(([re]) => re.test(b.text)));
    assert.deepEqual(unclaimed.map((b) => `line ${b.line}: ${b.text.split('\n')[0]}`), [],
        'a snippet no test runs: claim it in CLAIMED and run it');
    for (const [re, what] of CLAIMED) assert.equal(BLOCKS.filter((b) => re.test(b.text)).length, 1, what);
});

test('the stdio configuration (Claude Desktop, Cursor), as Gemini CLI reads the same mcpServers', async (t) => {
    const h = home(t);
    const config = JSON.parse(asWritten(block(/"mcpServers"/).text));
    fs.mkdirSync(path.join(h, '.gemini'));
    fs.writeFileSync(path.join(h, '.gemini/settings.json'), JSON.stringify(config));
    const r = await geminiList(h);
    assert.match(r.stdout + r.stderr, /✓ python: \S+mcp-execd .*\(stdio\) - Connected/, out(r));
});

test('claude mcp add over stdio: Claude Code connects', async (t) => {
    const h = home(t);
    const cmd = asWritten(block(/^claude mcp add python -- /).text);
    const add = await run('bash', ['-euc', cmd], { cwd: h, env: userEnv(h) });
    assert.equal(add.code, 0, out(add));
    const r = await claudeList(h);
    assert.match(r.stdout, /^python: \S+mcp-execd\s+- ✔ Connected/m, out(r));
});

test('the one-request pipe prints what the README says it prints', async (t) => {
    const b = block(/^echo '\{"jsonrpc"/);
    const want = shown(b.text);
    const dir = checkout(t);
    const r = await run('bash', ['-euo', 'pipefail', '-c', b.text], { cwd: dir, env: daemonEnv() });
    assert.equal(r.code, 0, out(r));
    assert.match(r.stdout, want, out(r));
});

test('the curl over HTTP prints what the README says it prints', async (t) => {
    const b = block(/^export MCP_EXEC_TRANSPORT=http/);
    const want = shown(b.text);
    const port = 20000 + crypto.randomInt(40000);
    const dir = checkout(t);
    const text = b.text.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
    const r = await run('bash', ['-euc', text], { cwd: dir, env: daemonEnv({ MCP_EXEC_ADDR: `127.0.0.1:${port}` }) });
    assert.equal(r.code, 0, out(r));
    // one 2026 answer on the response (JSON, or one SSE event carrying it)
    const json = r.stdout.split('\n').map((l) => l.replace(/^data: /, '')).find((l) => l.startsWith('{'));
    assert.match(json ?? '', want, out(r));
});

// ---- the 2.x client's example ----

/** The example with `mode` and the transport chosen, written to a file beside the SDK and run. */
async function runJsExample(t, { mode, http }) {
    let text = block(/from '@modelcontextprotocol\/client'/).text;
    if (mode) {
        // the forms the comment names, each as written there
        const forms = [...text.matchAll(/\{ mode: (?:'[a-z]+'|\{ pin: '[0-9-]+' \}) \}/g)].map((m) => m[0]);
        const form = forms.find((f) => f.includes(mode));
        assert.ok(form, `the example's comment does not show the mode ${mode}: ${forms}`);
        text = text.replace(/versionNegotiation: \{ mode: 'auto' \}\s*\}\);/, `versionNegotiation: ${form} });`);
        assert.ok(text.includes(`versionNegotiation: ${form} });`), 'the example no longer passes versionNegotiation as shown');
    }
    let d;
    if (http) {
        d = await httpDaemon(t);
        // the stdio connect goes; the commented lines after "or, over HTTP:" come in
        const lines = text.split('\n');
        const at = lines.findIndex((l) => l === '// or, over HTTP:');
        assert.ok(at > 0, 'no "// or, over HTTP:" in the example');
        assert.match(lines[at - 1], /new StdioClientTransport/);
        let end = at + 1;
        while (lines[end]?.startsWith('// ')) end++;
        text = [...lines.slice(0, at - 1), ...lines.slice(at + 1, end).map((l) => l.slice(3)), ...lines.slice(end)].join('\n');
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bb-example-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    fs.symlinkSync(path.join(REPO, 'tests/blackbox/node_modules'), path.join(dir, 'node_modules'));
    fs.writeFileSync(path.join(dir, 'example.mjs'), asWritten(text, d));
    const r = await run(process.execPath, ['example.mjs'], { cwd: dir, env: userEnv(dir) });
    assert.equal(r.code, 0, out(r));
    return r.stdout;
}

test('the 2.x client example as written (auto, stdio) prints what its comment says', async (t) => {
    const text = block(/from '@modelcontextprotocol\/client'/).text;
    const [, said] = /console\.log\(.*\); \/\/ (.*)$/m.exec(text) ?? [];
    assert.ok(said, 'the example shows no output');
    assert.equal((await runJsExample(t, {})).trim(), said);
});

test('the 2.x client example pinned, as its comment writes the pin, speaks 2026-07-28', async (t) => {
    assert.match(await runJsExample(t, { mode: 'pin' }), /^2026-07-28 42$/m);
});

test('the 2.x client example in legacy mode initializes (2025-11-25)', async (t) => {
    assert.match(await runJsExample(t, { mode: 'legacy' }), /^2025-11-25 42$/m);
});

test('the 2.x client example over HTTP, with the token as it sends it', async (t) => {
    assert.match(await runJsExample(t, { http: true }), /^2026-07-28 42$/m);
});

// ---- the table of clients that send the HTTP token ----

const ROWS = tableRows(section(README, '## Five-minute start: HTTP'));
const row = (name) => {
    const r = ROWS.find((x) => x.name === name);
    assert.ok(r, `the README's table has no row "${name}"`);
    return r.spans;
};

function claudeList(h) {
    return run('claude', ['mcp', 'list'], { cwd: h, env: userEnv(h), timeoutMs: 120000 });
}

async function geminiList(h) {
    // Gemini CLI asks, the first time, whether to trust the folder it runs in: the answer a user
    // gives, written where Gemini keeps it.
    fs.mkdirSync(path.join(h, '.gemini'), { recursive: true });
    fs.writeFileSync(path.join(h, '.gemini/trustedFolders.json'), JSON.stringify({ [h]: 'TRUST_FOLDER' }));
    // (it prints the list on stderr)
    return run('gemini', ['mcp', 'list'], { cwd: h, env: userEnv(h), timeoutMs: 120000 });
}

const RUNNERS = {
    'Claude Code': async (t, spans, d) => {
        const h = home(t);
        const add = await run('bash', ['-euc', asWritten(spans[0], d)], { cwd: h, env: userEnv(h) });
        assert.equal(add.code, 0, out(add));
        const r = await claudeList(h);
        assert.match(r.stdout, /^python: http:\S+ \(HTTP\) - ✔ Connected/m, out(r));
    },
    'Gemini CLI': async (t, spans, d) => {
        const h = home(t);
        assert.equal(spans[0], '~/.gemini/settings.json');
        fs.mkdirSync(path.join(h, '.gemini'));
        fs.writeFileSync(path.join(h, '.gemini/settings.json'), asWritten(spans[1], d));
        const r = await geminiList(h);
        assert.match(r.stdout + r.stderr, /✓ python: http:\S+ \(http\) - Connected/, out(r));
    },
    Cursor: async (t, spans, d) => {
        // Cursor reads url and headers of a remote server and substitutes ${env:NAME} in them.
        assert.equal(spans[0], '.cursor/mcp.json');
        const s = JSON.parse(asWritten(spans[1], d)).mcpServers.python;
        const env = userEnv('/nonexistent');
        const sub = (v) => v.replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, k) => env[k] ?? '');
        const headers = Object.fromEntries(Object.entries(s.headers).map(([k, v]) => [k, sub(v)]));
        assert.equal(headers.Authorization, `Bearer ${TOKEN}`);
        await execOverHttp(sub(s.url), headers);
    },
    'VS Code': async (t, spans, d) => {
        // VS Code: servers.<name> of type http; ${input:id} is asked once through the input of
        // that id (a password prompt here), and the answer substituted.
        assert.equal(spans[0], '.vscode/mcp.json');
        const cfg = JSON.parse(asWritten(spans[1], d));
        const s = cfg.servers.python;
        assert.equal(s.type, 'http');
        const headers = Object.fromEntries(Object.entries(s.headers).map(([k, v]) => [k, v.replace(/\$\{input:([^}]+)\}/g, (_, id) => {
            const input = cfg.inputs.find((i) => i.id === id);
            assert.ok(input, `no input "${id}" declared`);
            assert.equal(input.type, 'promptString');
            assert.equal(input.password, true, 'the token is asked for as a password');
            return TOKEN;
        })]));
        await execOverHttp(s.url, headers);
    },
    Codex: async (t, spans, d) => {
        const h = home(t);
        const codexHome = path.join(h, '.codex');
        fs.mkdirSync(codexHome);
        const env = userEnv(h, { CODEX_HOME: codexHome });
        const add = await run('bash', ['-euc', asWritten(spans[0], d)], { cwd: h, env });
        assert.equal(add.code, 0, out(add));
        // Codex connects only when a model session starts (it needs an account): what it stored
        // is what it will use, and the SDK connects with exactly that.
        const get = await run('codex', ['mcp', 'get', 'python', '--json'], { cwd: h, env });
        assert.equal(get.code, 0, out(get));
        const tr = JSON.parse(get.stdout).transport;
        assert.equal(tr.type, 'streamable_http', get.stdout);
        assert.equal(tr.bearer_token_env_var, 'MCP_EXEC_AUTH_TOKEN', get.stdout);
        await execOverHttp(tr.url, { Authorization: `Bearer ${env[tr.bearer_token_env_var]}` });
    },
    'MCP Inspector': async (t, spans, d) => {
        const h = home(t);
        // npx finds the Inspector installed in clients/ (no download), run by its Node 22
        const r = await run('bash', ['-euc', asWritten(spans[0], d)], { cwd: CLIENTS, env: userEnv(h), timeoutMs: 120000 });
        assert.equal(r.code, 0, out(r));
        const names = JSON.parse(r.stdout).tools.map((x) => x.name);
        assert.ok(names.includes('exec') && names.includes('session_open'), `tools: ${names}`);
    },
    'a stdio-only client, through `mcp-remote`': async (t, spans, d) => {
        // What a stdio-only client does with this: spawn the command with its args and env.
        const h = home(t);
        const s = JSON.parse(asWritten(spans[0], d).replace('<the token>', TOKEN)).mcpServers.python;
        const client = new Client({ name: 'bb-clients', version: '0' });
        await client.connect(new StdioClientTransport({ command: s.command, args: s.args, cwd: CLIENTS, env: userEnv(h, s.env), stderr: 'ignore' }));
        try {
            const r = await client.callTool({ name: 'exec', arguments: { code: 'print(6*7)' } });
            assert.equal(r.structuredContent?.stdout, '42\n', JSON.stringify(r).slice(0, 500));
        } finally {
            await client.close();
        }
    },
};

test('the table of clients lists exactly the clients run here', () => {
    assert.deepEqual(ROWS.map((r) => r.name).sort(), Object.keys(RUNNERS).sort());
});

for (const [name, runner] of Object.entries(RUNNERS)) {
    test(`${name}, configured as the README's table shows, reaches the daemon with the token`, { timeout: 180000 }, async (t) => {
        const d = await httpDaemon(t);
        await runner(t, row(name), d);
    });
}

// The other side of the rows: without the header an OAuth-capable client is told, in the error
// it shows, to send it (issue 30.3), and with a wrong one it is refused.
test('Claude Code without the header, or with a wrong token, shows why it cannot connect', { timeout: 180000 }, async (t) => {
    const d = await httpDaemon(t);
    const h = home(t);
    const add = (...args) => run('claude', ['mcp', 'add', '--transport', 'http', ...args], { cwd: h, env: userEnv(h) });
    assert.equal((await add('none', d.url)).code, 0);
    assert.equal((await add('wrong', d.url, '--header', 'Authorization: Bearer wrong')).code, 0);
    const r = await claudeList(h);
    assert.match(r.stdout, /^none: .* - ✘ .*mcp-execd takes a static bearer token, not OAuth/m, out(r));
    assert.match(r.stdout, /^wrong: .* - ✘ .*401/m, out(r));
});
