// MCP lifecycle and JSON-RPC errors (issue 2, point 4) and the tool catalogue (point 5).
import assert from 'node:assert/strict';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { RawDaemon, startDaemon, test } from './lib/index.mjs';

const initParams = (protocolVersion) => ({
    protocolVersion, capabilities: {}, clientInfo: { name: 'bb', version: '0' },
});

for (const v of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
    test(`initialize with ${v} is answered with ${v}`, async (t) => {
        const d = RawDaemon.spawn(t);
        const res = await d.request('initialize', initParams(v));
        assert.ok(res.result, `error: ${JSON.stringify(res)}`);
        assert.equal(res.jsonrpc, '2.0');
        assert.equal(res.result.protocolVersion, v);
        assert.ok(res.result.capabilities?.tools, `capabilities has no tools: ${JSON.stringify(res.result.capabilities)}`);
        assert.equal(typeof res.result.serverInfo?.name, 'string');
        assert.equal(typeof res.result.serverInfo?.version, 'string');
    });
}

test('initialize with an unknown version (2099-01-01) is answered with 2025-11-25, not an error', async (t) => {
    const d = RawDaemon.spawn(t);
    const res = await d.request('initialize', initParams('2099-01-01'));
    assert.ok(res.result, `error: ${JSON.stringify(res)}`);
    assert.equal(res.result.protocolVersion, '2025-11-25');
});

test('the SDK client connects and negotiates 2025-11-25', async (t) => {
    const d = await startDaemon(t);
    assert.equal(d.client.getServerVersion()?.name?.length > 0, true, 'no serverInfo.name');
    assert.ok(d.client.getServerCapabilities()?.tools, 'no tools capability');
    await d.client.ping();
    assert.deepEqual(d.errors, [], `SDK reported errors: ${d.errors.map(String)}`);
});

test('ping answers {} (before and after initialize), string ids echoed as strings', async (t) => {
    const d = RawDaemon.spawn(t);
    const before = await d.request('ping', undefined, { id: 'p-before' });
    assert.deepEqual(before.result, {}, JSON.stringify(before));
    await d.initialize();
    const after = await d.request('ping', undefined, { id: 'p-after' });
    assert.deepEqual(after, { jsonrpc: '2.0', id: 'p-after', result: {} });
    const numeric = await d.request('ping', undefined, { id: 42 });
    assert.strictEqual(numeric.id, 42);
    const zero = await d.request('ping', undefined, { id: 0 });
    assert.deepEqual(zero, { jsonrpc: '2.0', id: 0, result: {} });
});

test('tools/list: exec with a closed inputSchema and an outputSchema', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const res = await d.request('tools/list', {});
    assert.ok(res.result, JSON.stringify(res));
    const { tools } = res.result;
    assert.ok(Array.isArray(tools));
    assert.equal(res.result.nextCursor, undefined, 'one page only: no nextCursor');
    const exec = tools.find((x) => x.name === 'exec');
    assert.ok(exec, `no tool named exec: ${JSON.stringify(tools.map((x) => x.name))}`);
    assert.equal(typeof exec.description, 'string');
    assert.ok(exec.description.length > 20, 'description is (nearly) empty');

    const is = exec.inputSchema;
    assert.equal(is.type, 'object');
    assert.equal(is.additionalProperties, false, 'inputSchema.additionalProperties must be false');
    assert.deepEqual(is.required, ['code']);
    assert.equal(is.properties.code.type, 'string');
    assert.equal(is.properties.timeout_s.type, 'integer');
    assert.equal(is.properties.stdin.type, 'string');
    // design.md: input {code, timeout_s?, stdin?}; anything more is additive (reported, not failed)
    const extra = Object.keys(is.properties).filter((k) => !['code', 'stdin', 'timeout_s'].includes(k));
    if (extra.length) t.diagnostic(`inputSchema has more than design.md's three properties: ${extra.join(', ')}`);
    for (const k of extra) assert.ok(!is.required.includes(k), `extra property ${k} must not be required (mcp-exec clients do not send it)`);

    const os = exec.outputSchema;
    assert.ok(os, 'no outputSchema');
    assert.equal(os.type, 'object');
    const fields = ['stdout', 'stderr', 'exit_code', 'duration_ms', 'truncated', 'timed_out', 'signal',
        'oom_killed', 'pids_limit_hit', 'memory_peak_bytes', 'cpu_user_us', 'cpu_system_us', 'limits', 'queue_ms', 'unbounded'];
    for (const f of fields) assert.ok(os.properties?.[f], `outputSchema lacks ${f}`);
    for (const f of fields) assert.ok(os.required?.includes(f), `outputSchema does not require ${f}`);
});

test('tools/list with a garbage cursor is -32602', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const res = await d.request('tools/list', { cursor: 'no-such-cursor' });
    assert.equal(res.error?.code, -32602, JSON.stringify(res));
});

test('the exec description is generated from the configuration in force', async (t) => {
    const d = RawDaemon.spawn(t, { env: {
        MCP_EXEC_MAX_TIMEOUT_S: 123, MCP_EXEC_DEFAULT_TIMEOUT_S: 17,
        MCP_EXEC_MAX_OUTPUT_BYTES: 54321, MCP_EXEC_MAX_STDIN_BYTES: 7777, MCP_EXEC_MAX_CODE_BYTES: 8888,
    } });
    await d.initialize();
    const res = await d.request('tools/list');
    const exec = res.result.tools.find((x) => x.name === 'exec');
    assert.match(exec.description, /\b123\b/, `max timeout 123 not in: ${exec.description}`);
    assert.match(exec.description, /\b17\b/, `default timeout 17 not in: ${exec.description}`);
    // the byte caps, however they are written (54321 bytes, or in KiB)
    const schemaText = JSON.stringify(exec.inputSchema);
    assert.match(exec.description + schemaText, /\b54321\b|\b53(\.\d+)? ?Ki?B\b/, `output cap 54321 not in: ${exec.description}`);
    assert.match(exec.description + schemaText, /\b7777\b|\b7(\.\d+)? ?Ki?B\b/, `stdin cap 7777 not in: ${exec.description}`);
    assert.match(exec.description + schemaText, /\b8888\b|\b8(\.\d+)? ?Ki?B\b/, `code cap 8888 not in: ${exec.description}`);
    // and not the built-in defaults
    assert.doesNotMatch(exec.description, /\b300\b/, `the default max (300) is still in: ${exec.description}`);
});

test('a line that is not JSON gets -32700 (id null or absent) and the daemon keeps serving', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    d.sendLine('this is {not json');
    const err = await d.waitFor((m) => m.error?.code === -32700, 3000, 'a -32700 error');
    assert.ok(!('id' in err) || err.id === null, `id must be null or absent: ${JSON.stringify(err)}`);
    assert.equal(typeof err.error.message, 'string');
    const ping = await d.request('ping');
    assert.deepEqual(ping.result, {});
    // also a truncated object and a bare value that is JSON but not a request
    d.sendLine('{"jsonrpc":"2.0","id":5,"method":"pi');
    await d.waitFor((m) => m.error?.code === -32700 && m !== err, 3000, 'a second -32700');
    const ping2 = await d.request('ping');
    assert.deepEqual(ping2.result, {});
    assert.deepEqual(d.badLines, []);
});

test('invalid requests get -32600', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    d.sendLine('{"jsonrpc":"1.0","id":101,"method":"ping"}');
    const r1 = await d.waitFor((m) => m.error && (m.id === 101 || m.id == null), 3000, 'an error for jsonrpc 1.0');
    assert.equal(r1.error.code, -32600, JSON.stringify(r1));
    d.sendLine('{"jsonrpc":"2.0","id":102,"method":7}');
    const r2 = await d.waitFor((m) => m.error && m !== r1 && (m.id === 102 || m.id == null), 3000, 'an error for a numeric method');
    assert.equal(r2.error.code, -32600, JSON.stringify(r2));
    d.sendLine('{"jsonrpc":"2.0","id":null,"method":"ping"}');   // MCP: an id MUST NOT be null
    const r4 = await d.waitFor((m) => m.error && m !== r1 && m !== r2, 3000, 'an error for id null');
    assert.equal(r4.error.code, -32600, JSON.stringify(r4));
    d.sendLine('{"jsonrpc":"2.0","id":103}');
    const r3 = await d.waitFor((m) => m.error && m !== r1 && m !== r2 && m !== r4 && (m.id === 103 || m.id == null), 3000, 'an error for a request without method');
    assert.equal(r3.error.code, -32600, JSON.stringify(r3));
    const ping = await d.request('ping');
    assert.deepEqual(ping.result, {});
});

// JSON-RPC 2.0 spec, examples: "rpc call with an invalid Request object" (--> 1) is -32600;
// -32700 is only for text that is not JSON at all.
test('valid JSON that is not a request object (42, "str", true) gets -32600, not -32700', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    for (const line of ['42', '"str"', 'true']) {
        const n = d.messages.length;
        d.sendLine(line);
        const r = await d.waitFor((m) => m.error && d.messages.indexOf(m) >= n, 3000, `an error for ${line}`);
        assert.equal(r.error.code, -32600, `${line} → ${JSON.stringify(r)}`);
    }
    const ping = await d.request('ping');
    assert.deepEqual(ping.result, {});
});

test('an unknown method gets -32601 with the same id', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const res = await d.request('no/such/method', {}, { id: 'u1' });
    assert.equal(res.error?.code, -32601, JSON.stringify(res));
    assert.equal(res.id, 'u1');
});

test('the 2026 server/discover probe before initialize is answered at once (issue 17)', async (t) => {
    const d = RawDaemon.spawn(t);
    // Answered before any initialize (no wall-clock bound: the answer itself is the proof).
    const res = await d.request('server/discover', {
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
    }, { id: 'server-discover-probe-1', timeoutMs: 15000 });
    assert.equal(res.result?.supportedVersions?.[0], '2026-07-28', JSON.stringify(res));
    assert.ok(res.result.supportedVersions.includes('2025-11-25'));
    // and the same process can still be initialized afterwards
    await d.initialize();
});

test('a notification with an unknown method gets no answer', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    d.notify('notifications/no-such-thing', {});
    const id = d.send('ping');
    await d.response(id);
    // the ping's answer is the only message after initialize's
    assert.deepEqual(d.messages.slice(1).map((m) => m.id), [id], JSON.stringify(d.messages));
});

test('tools/call of an unknown tool is JSON-RPC error -32602', async (t) => {
    const d = await startDaemon(t);
    await assert.rejects(
        d.client.callTool({ name: 'no_such_tool', arguments: {} }),
        (e) => { assert.ok(e instanceof McpError, String(e)); assert.equal(e.code, -32602); return true; });
    await d.client.ping();
});

test('tools/call without a name is -32602', async (t) => {
    const d = RawDaemon.spawn(t);
    await d.initialize();
    const res = await d.request('tools/call', { arguments: { code: 'print(1)' } });
    assert.equal(res.error?.code, -32602, JSON.stringify(res));
});

// What the description promises must be true of the runs: the Python version and the
// packages it names as importable. Both ways: the packages it names are the ones a run finds (so a
// description that stops naming installed packages fails too, and a machine with none of them
// still checks that it names none), and the named ones import.
test('the description tells the truth about the Python version and importable packages', async (t) => {
    const d = await startDaemon(t);
    const { tools } = await d.client.listTools();
    const desc = tools.find((x) => x.name === 'exec').description;
    const r = await d.client.callTool({ name: 'exec', arguments: { code: 'import sys; print(sys.version.split()[0])' } });
    const version = r.structuredContent.stdout.trim();
    const m = desc.match(/Python (3\.\d+(\.\d+)?)/);
    assert.ok(m, `the description names no Python version: ${desc.slice(0, 300)}`);
    assert.ok(version.startsWith(m[1]), `description says Python ${m[1]}, runs have ${version}`);
    const modules = {
        PyYAML: 'yaml', Jinja2: 'jinja2', Pillow: 'PIL', numpy: 'numpy', pandas: 'pandas', matplotlib: 'matplotlib',
        scipy: 'scipy', 'scikit-learn': 'sklearn', statsmodels: 'statsmodels', networkx: 'networkx',
    };
    // "Importable: the standard library, PyYAML, numpy." (the standard library alone when the probe
    // found none of them).
    const sentence = desc.match(/Importable: the standard library((?:, [^,.]+)*)\./);
    assert.ok(sentence, `the description has no "Importable:" sentence: ${desc}`);
    const named = sentence[1].split(', ').filter(Boolean);
    for (const pkg of named) assert.ok(pkg in modules, `the description names ${pkg}, which this test does not know`);
    t.diagnostic(`description names: ${named.join(', ') || 'no packages'}`);
    const look = `import importlib.util, json\nprint(json.dumps({m: importlib.util.find_spec(m) is not None for m in ${JSON.stringify(Object.values(modules))}}))`;
    const found = await d.client.callTool({ name: 'exec', arguments: { code: look, timeout_s: 60 } }, undefined, { timeout: 70000 });
    const present = JSON.parse(found.structuredContent.stdout);
    const runsFind = Object.entries(modules).filter(([, mod]) => present[mod]).map(([pkg]) => pkg);
    assert.deepEqual(named, runsFind, 'the packages the description names are the ones a run finds');
    const code = named.map((pkg) => `import ${modules[pkg]}`).join('\n') + '\nprint("all imported")';
    const imp = await d.client.callTool({ name: 'exec', arguments: { code, timeout_s: 60 } }, undefined, { timeout: 70000 });
    assert.equal(imp.structuredContent?.stdout, 'all imported\n', JSON.stringify(imp.structuredContent));
});

// 2025-03-26 (only) says implementations MUST support receiving JSON-RPC batches; 2025-06-18
// removed them. docs/protocol.md (the daemon's own limits) documents the choice: batch arrays are -32600 in
// every version, 2025-03-26 included (no SDK client sends them). So: one -32600 (id null or
// absent), no member of the batch run or answered, and the daemon serves on.
test('a batch after negotiating 2025-03-26 is refused with one -32600; none of its members is answered', async (t) => {
    const d = RawDaemon.spawn(t);
    const init = await d.initialize('2025-03-26');
    assert.equal(init.result.protocolVersion, '2025-03-26', JSON.stringify(init));
    d.sendLine('[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"ping"}]');
    const err = await d.waitFor((m) => Array.isArray(m) || m.error, 3000, 'the batch\'s answer');
    assert.ok(!Array.isArray(err), `answered with an array: ${JSON.stringify(err)}`);
    assert.equal(err.error.code, -32600, JSON.stringify(err));
    assert.match(err.error.message, /batch/);
    assert.ok(!('id' in err) || err.id === null, `id must be null or absent: ${JSON.stringify(err)}`);
    // A ping sent after the batch is answered; the batch's pings, read before it, never are: once
    // the daemon has exited (EOF) nothing more can come.
    const ping = await d.request('ping');
    assert.deepEqual(ping.result, {});
    d.endStdin();
    assert.equal((await d.waitClosed(10000)).code, 0);
    const members = d.messages.filter((m) => !Array.isArray(m) && (m.id === 'b1' || m.id === 'b2'));
    assert.deepEqual(members, [], 'a member of the refused batch was answered');
    assert.equal(d.messages.filter((m) => m.error?.code === -32600).length, 1, JSON.stringify(d.messages));
});
