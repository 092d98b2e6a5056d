// Input files (issue 10): `files` of exec and execute_python are in the working directory before the
// code starts, byte for byte (text and base64, in subdirectories); bad names, bad encodings and an
// input over MCP_EXEC_MAX_INPUT_BYTES are tool errors that name the offender or the limit.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { startDaemon, callExec, summarize, test } from './lib/index.mjs';
import { callTool } from './lib/files.mjs';

const sha = (b) => createHash('sha256').update(b).digest('hex');

const HASHES = [
    'import hashlib, json, os',
    'out = {}',
    'for dp, dn, fn in os.walk("."):',
    '    for n in fn:',
    '        p = os.path.join(dp, n)[2:]',
    '        if p != "main.py":',
    '            out[p] = hashlib.sha256(open(p, "rb").read()).hexdigest()',
    'print(json.dumps(out, sort_keys=True))',
].join('\n');

test('a CSV as text and a binary as base64 are read by the code byte for byte', async (t) => {
    const d = await startDaemon(t, { listTools: true });
    const csv = 'city,temp °C\nZürich,21.5\n"a, b",-3\r\nend\n';
    const bin = Buffer.concat([Buffer.from([0, 255, 0x89, 0x50]), randomBytes(70000)]);
    const r = await callExec(d.client, {
        code: HASHES,
        files: [
            { name: 'data.csv', content: csv },
            { name: 'blobs/deep/x.bin', content: bin.toString('base64'), encoding: 'base64' },
            { name: 'empty.txt', content: '', encoding: 'utf-8' },
            { name: 'wrapped.bin', content: bin.subarray(0, 300).toString('base64').replace(/(.{76})/g, '$1\n'), encoding: 'base64' },
        ],
    });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.exit_code, 0, r.sc.stderr);
    assert.deepEqual(JSON.parse(r.sc.stdout), {
        'blobs/deep/x.bin': sha(bin),
        'data.csv': sha(Buffer.from(csv, 'utf8')),
        'empty.txt': sha(Buffer.alloc(0)),
        'wrapped.bin': sha(bin.subarray(0, 300)),
    });
    // Input files are the code's own: it can change and remove them.
    const w = await callExec(d.client, {
        code: 'import os\nopen("a/f.txt", "a").write("+")\nprint(open("a/f.txt").read())\nos.remove("a/f.txt")\nos.rmdir("a")',
        files: [{ name: 'a/f.txt', content: 'x' }],
    });
    assert.equal(w.sc.stdout, 'x+\n', w.sc.stderr);
    assert.equal(w.sc.exit_code, 0);
});

test('execute_python takes the same files argument', async (t) => {
    const d = await startDaemon(t, { listTools: true });
    const r = await callTool(d.client, 'execute_python', {
        script: 'print(open("in/a.txt").read(), open("b.bin", "rb").read())',
        files: [{ name: 'in/a.txt', content: 'hello' }, { name: 'b.bin', content: 'AAH/', encoding: 'base64' }],
    });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.stdout, "hello b'\\x00\\x01\\xff'\n", r.sc.stderr);
    const bad = await callTool(d.client, 'execute_python', { script: 'print(1)', files: [{ name: '../x', content: '' }] });
    assert.equal(bad.isError, true);
    assert.match(bad.text, /files\[0\]\.name/);
});

const BAD_NAMES = [
    { name: '/etc/x', words: ['files[1].name', '/etc/x', 'absolute'] },
    { name: '../x', words: ['files[1].name', '../x', "'..'"] },
    { name: 'a/../../x', words: ['files[1].name', 'a/../../x', "'..'"] },
    { name: 'a//b', words: ['files[1].name', 'a//b', 'empty'] },
    { name: 'a\u0000b', words: ['files[1].name', 'a\\x00b', 'NUL'] },
    { name: 'a\nb', words: ['files[1].name', 'control character'] },
    { name: './x', words: ['files[1].name', "'.'"] },
    { name: 'x/', words: ['files[1].name', 'empty'] },
    { name: '', words: ['files[1].name', 'empty'] },
    { name: 'main.py', words: ['files[1].name', 'reserved'] },
];

test('bad names are tool errors naming the offender (and nothing runs)', async (t) => {
    const d = await startDaemon(t);
    for (const b of BAD_NAMES) {
        const r = await callExec(d.client, {
            code: 'open("/tmp/ran", "w")',
            files: [{ name: 'ok.txt', content: '' }, { name: b.name, content: 'x' }],
        });
        assert.equal(r.isError, true, `${JSON.stringify(b.name)} accepted: ${summarize(r)}`);
        assert.equal(r.sc, undefined);
        for (const w of b.words) assert.ok(r.text.includes(w), `${JSON.stringify(b.name)}: no ${w} in: ${r.text}`);
    }
});

test('other bad files arguments are tool errors too', async (t) => {
    const d = await startDaemon(t);
    const cases = [
        { files: 'x', words: ["'files'", 'array'] },
        { files: [5], words: ['files[0]', 'object'] },
        { files: [{ name: 'a' }], words: ['files[0].content', 'required'] },
        { files: [{ content: 'a' }], words: ['files[0].name', 'required'] },
        { files: [{ name: 'a', content: 'a', mode: 7 }], words: ['files[0].mode', 'unknown'] },
        { files: [{ name: 'a', content: 'a', encoding: 'latin1' }], words: ['files[0].encoding', 'base64'] },
        { files: [{ name: 'a', content: 'AA!A', encoding: 'base64' }], words: ['files[0].content', 'base64', 'offset 2'] },
        { files: [{ name: 'a', content: '' }, { name: 'a', content: '' }], words: ['files[1].name', 'twice'] },
        { files: [{ name: 'a', content: '' }, { name: 'a/b', content: '' }], words: ['files[0].name', 'directory'] },
        { files: Array.from({ length: 65 }, (_, i) => ({ name: `f${i}`, content: '' })), words: ["'files'", '65 files', 'limit of 64'] },
    ];
    for (const c of cases) {
        const r = await callExec(d.client, { code: 'print(1)', files: c.files });
        assert.equal(r.isError, true, `accepted: ${JSON.stringify(c.files).slice(0, 100)}`);
        for (const w of c.words) assert.ok(r.text.includes(w), `no ${w} in: ${r.text}`);
    }
});

test('input over MCP_EXEC_MAX_INPUT_BYTES is a tool error that says so; at the limit it runs', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_INPUT_BYTES: '3000' } });
    let r = await callExec(d.client, {
        code: 'print(1)',
        files: [{ name: 'a.txt', content: 'x'.repeat(2000) }, { name: 'b.bin', content: randomBytes(1200).toString('base64'), encoding: 'base64' }],
    });
    assert.equal(r.isError, true);
    assert.match(r.text, /files/);
    assert.match(r.text, /over the limit of 3000 bytes \(MCP_EXEC_MAX_INPUT_BYTES\)/);
    r = await callExec(d.client, {
        code: 'import os\nprint(os.path.getsize("a.txt") + os.path.getsize("b.bin"))',
        files: [{ name: 'a.txt', content: 'x'.repeat(1800) }, { name: 'b.bin', content: randomBytes(1200).toString('base64'), encoding: 'base64' }],
    });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.stdout, '3000\n');
    // The description and the schema say the limit.
    const { tools } = await d.client.listTools();
    const exec = tools.find((x) => x.name === 'exec');
    assert.match(exec.inputSchema.properties.files.description, /3000 bytes/);
    assert.match(exec.description, /outputs\//);
    assert.match(exec.description, /plt\.show\(\)/);
});
