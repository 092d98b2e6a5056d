// Outputs (issue 10): what the code leaves in outputs/ comes back (images as image items, other files
// as embedded resources, text or blob), bounded: MCP_EXEC_MAX_RETURN_BYTES, 32 files returned, 1000
// listed; a 1 000+-file output and a 1 GB output file give a bounded result, listed as not returned,
// and the daemon stays fine; a symlink in outputs/ (to /etc/passwd, or outputs/ itself) is never
// followed: the host's /etc/passwd does not appear. Names that are not UTF-8 or hold control
// characters (issue 15) come back escaped (\xNN per byte), and the call is answered.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startDaemon, callExec, summarize, test } from './lib/index.mjs';
import { startHttpDaemon, connectSdk } from './lib/http-daemon.mjs';
import { items, rssKiB } from './lib/files.mjs';

test('files in outputs/ (and below) come back: text as text, bytes as blob, images by their bytes', async (t) => {
    const d = await startDaemon(t, { listTools: true });
    const code = [
        'import os, base64',
        'os.makedirs("outputs/sub", exist_ok=True)',
        'open("outputs/notes.md", "w").write("# hi\\n")',
        'open("outputs/sub/data.json", "w").write("{\\"a\\": 1}")',
        'open("outputs/blob.dat", "wb").write(b"\\x00\\x01\\x02")',
        // a tiny GIF named .txt: the bytes decide
        'open("outputs/pixel.txt", "wb").write(base64.b64decode("R0lGODlhAQABAAAAACw="))',
        'open("not-in-outputs.txt", "w").write("x")',
        'import shutil; shutil.copy("tricky.txt", "outputs/tricky.txt")',
    ].join('\n');
    // Text that JSON must escape: quotes, backslashes, controls, non-ASCII.
    const tricky = 'q"b\\t\tesc\x1b \u00e9 \u{1F600}\n';
    const r = await callExec(d.client, { code, files: [{ name: 'tricky.txt', content: tricky }] });
    assert.equal(r.isError, false, summarize(r));
    assert.deepEqual(r.sc.files, [
        { name: 'outputs/blob.dat', bytes: 3, mime: 'application/octet-stream', returned: true },
        { name: 'outputs/notes.md', bytes: 5, mime: 'text/markdown', returned: true },
        { name: 'outputs/pixel.txt', bytes: 14, mime: 'image/gif', returned: true },
        { name: 'outputs/sub/data.json', bytes: 8, mime: 'application/json', returned: true },
        { name: 'outputs/tricky.txt', bytes: Buffer.byteLength(tricky), mime: 'text/plain', returned: true },
    ]);
    const it = items(r);
    assert.equal(it.length, 5);
    assert.deepEqual(it.map((x) => x.type), ['resource', 'resource', 'image', 'resource', 'resource']);
    assert.equal(it[4].resource.text, tricky);
    assert.equal(it[0].resource.blob, 'AAEC');
    assert.equal(it[1].resource.text, '# hi\n');
    assert.equal(it[2].mimeType, 'image/gif');
    assert.match(it[3].resource.uri, /^mcp-execd:\/\/run\/[0-9a-f]{16}\/outputs\/sub\/data\.json$/);
    assert.deepEqual(r.textJson, r.sc);
    assert.ok(!r.text.includes('AAEC'), 'the bytes are in the text content');
});

test('MCP_EXEC_MAX_RETURN_BYTES: what does not fit is listed, not returned; smaller files after it still fit', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_RETURN_BYTES: '10000' } });
    const code = [
        'open("outputs/a.txt", "w").write("a" * 6000)',
        'open("outputs/b.txt", "w").write("b" * 6000)',
        'open("outputs/c.txt", "w").write("c" * 3000)',
    ].join('\n');
    const r = await callExec(d.client, { code });
    assert.deepEqual(r.sc.files.map((f) => [f.name, f.bytes, f.returned]),
        [['outputs/a.txt', 6000, true], ['outputs/b.txt', 6000, false], ['outputs/c.txt', 3000, true]]);
    assert.deepEqual(items(r).map((x) => x.resource.text.length), [6000, 3000]);
});

test('1 200 files in outputs/: 1000 listed, 200 counted, 32 returned; the daemon goes on', { timeout: 180000 }, async (t) => {
    const d = await startDaemon(t, { listTools: true });
    const code = 'for i in range(1200):\n    open(f"outputs/f{i:04}.txt", "w").write(str(i))';
    const r = await callExec(d.client, { code, timeout_s: 120 }, { timeoutMs: 150000 });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.exit_code, 0, r.sc.stderr);
    assert.equal(r.sc.files.length, 1000);
    assert.equal(r.sc.files_unlisted, 200);
    assert.equal(r.sc.files.filter((f) => f.returned).length, 32);
    assert.equal(items(r).length, 32);
    const names = r.sc.files.map((f) => f.name);
    assert.deepEqual(names, [...names].sort(), 'listing not sorted');
    const again = await callExec(d.client, { code: 'print(1)' });
    assert.equal(again.sc.stdout, '1\n');
});

test('a 1 GB output file: the tmpfs cap stops the writing, the result is bounded and says so', { timeout: 180000 }, async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_TMP_SIZE: '64M' } });
    const rss0 = await rssKiB(d.pid);
    const code = [
        'import errno',
        'open("outputs/small.txt", "w").write("kept")',
        'chunk = b"z" * (1 << 20)',
        'try:',
        '    with open("outputs/huge.bin", "wb") as f:',
        '        for _ in range(1024):',
        '            f.write(chunk)',
        'except OSError as e:',
        '    print(errno.errorcode[e.errno])',
        'try:',
        '    with open("outputs/sparse.bin", "wb") as f:',
        '        f.truncate(1 << 30)', // a 1 GB file that would take no space: RLIMIT_FSIZE (= the tmpfs size) refuses it
        'except OSError as e:',
        '    print(errno.errorcode[e.errno])',
    ].join('\n');
    const r = await callExec(d.client, { code, timeout_s: 120 }, { timeoutMs: 150000 });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.stdout, 'ENOSPC\nEFBIG\n', r.sc.stderr);
    const byName = Object.fromEntries(r.sc.files.map((f) => [f.name, f]));
    assert.ok(byName['outputs/huge.bin'].bytes > 32 << 20 && byName['outputs/huge.bin'].bytes <= 64 << 20,
        JSON.stringify(byName['outputs/huge.bin']));
    assert.equal(byName['outputs/huge.bin'].returned, false);
    assert.equal(byName['outputs/sparse.bin'].bytes, 0);
    assert.equal(byName['outputs/small.txt'].returned, true);
    assert.equal(items(r).length, 2); // small.txt and the empty sparse.bin
    assert.ok(JSON.stringify(r.result).length < 100000, 'the reply is not bounded');
    const again = await callExec(d.client, { code: 'print(1)' });
    assert.equal(again.sc.stdout, '1\n');
    const rss1 = await rssKiB(d.pid);
    assert.ok(rss1 - rss0 < 32 * 1024, `daemon RSS grew from ${rss0} to ${rss1} KiB`);
});

test('a symlink in outputs/ to /etc/passwd is listed, never followed; outputs/ as a link is not read', async (t) => {
    const d = await startDaemon(t, { listTools: true });
    const host = readFileSync('/etc/passwd', 'utf8');
    const firstLine = host.split('\n')[0];
    const code = [
        'import os',
        'os.symlink("/etc/passwd", "outputs/passwd")',
        'os.symlink("../main.py", "outputs/main")',
        'os.symlink("/etc", "outputs/etc")',
        'os.symlink("/proc/1/root/etc/passwd", "outputs/proc")',
    ].join('\n');
    let r = await callExec(d.client, { code });
    assert.equal(r.isError, false, summarize(r));
    assert.deepEqual(r.sc.files.map((f) => [f.name, f.mime, f.returned]), [
        ['outputs/etc', 'inode/symlink', false],
        ['outputs/main', 'inode/symlink', false],
        ['outputs/passwd', 'inode/symlink', false],
        ['outputs/proc', 'inode/symlink', false],
    ]);
    assert.equal(items(r).length, 0);
    const all = JSON.stringify(r.result);
    assert.ok(!all.includes(firstLine) && !all.includes(Buffer.from(host).toString('base64').slice(0, 40)), 'host /etc/passwd leaked');

    r = await callExec(d.client, { code: 'import os\nos.rmdir("outputs")\nos.symlink("/etc", "outputs")' });
    assert.equal(r.isError, false, summarize(r));
    assert.deepEqual(r.sc.files, []);
    assert.ok(!JSON.stringify(r.result).includes(firstLine), 'host /etc/passwd leaked');
});

test('MCP_EXEC_MAX_RETURN_BYTES=0: outputs are listed, nothing is returned', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_RETURN_BYTES: '0' } });
    const r = await callExec(d.client, { code: 'open("outputs/x.txt", "w").write("x")' });
    assert.deepEqual(r.sc.files, [{ name: 'outputs/x.txt', bytes: 1, mime: 'text/plain', returned: false }]);
    assert.equal(items(r).length, 0);
});

// Issue 15: a name that is not UTF-8 made building the reply fail and the call was never answered.
// Every name comes back: bytes that are not UTF-8, C0 controls, DEL, C1 controls and '\' as \xNN.
const ODD_NAMES_CODE = [
    'import os',
    'for n in [b"\\xff\\xfe.txt", b"a\\nb.txt", b"t\\tab.txt", b"esc\\x1b.txt", b"del\\x7f.txt",',
    '          "c1\\u0085.txt".encode(), b"back\\\\slash.txt", "caf\\u00e9.txt".encode()]:',
    '    open(b"outputs/" + n, "wb").write(b"hello " + n.decode("utf-8", "backslashreplace").encode())',
].join('\n');
const ODD_NAMES = {
    'outputs/\\xff\\xfe.txt': '%5Cxff%5Cxfe.txt',
    'outputs/a\\x0ab.txt': 'a%5Cx0ab.txt',
    'outputs/t\\x09ab.txt': 't%5Cx09ab.txt',
    'outputs/esc\\x1b.txt': 'esc%5Cx1b.txt',
    'outputs/del\\x7f.txt': 'del%5Cx7f.txt',
    'outputs/c1\\xc2\\x85.txt': 'c1%5Cxc2%5Cx85.txt',
    'outputs/back\\x5cslash.txt': 'back%5Cx5cslash.txt',
    'outputs/caf\u00e9.txt': 'caf%C3%A9.txt',
};

async function checkOddNames(client) {
    const r = await callExec(client, { code: ODD_NAMES_CODE }, { timeoutMs: 60000 });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.exit_code, 0, r.sc.stderr);
    const names = r.sc.files.map((f) => f.name);
    assert.deepEqual([...names].sort(), Object.keys(ODD_NAMES).sort());
    assert.ok(r.sc.files.every((f) => f.returned && f.mime === 'text/plain'), summarize(r));
    const it = items(r);
    assert.equal(it.length, names.length);
    for (let i = 0; i < names.length; i++) {
        const uri = it[i].resource.uri;
        assert.match(uri, /^mcp-execd:\/\/run\/[0-9a-f]{16}\/outputs\/[!-~]+$/, uri);
        assert.equal(uri.slice(uri.lastIndexOf('/outputs/') + 9), ODD_NAMES[names[i]], uri);
        assert.ok(it[i].resource.text.startsWith('hello '), it[i].resource.text);
    }
    assert.equal(it[names.indexOf('outputs/caf\u00e9.txt')].resource.text, 'hello caf\u00e9.txt');
    assert.deepEqual(r.textJson, r.sc);
    const again = await callExec(client, { code: 'print(2)' });
    assert.equal(again.sc.stdout, '2\n');
}

test('names not UTF-8 or with control characters: answered, escaped as \\xNN (stdio)', async (t) => {
    const d = await startDaemon(t, { listTools: true });
    await checkOddNames(d.client);
});

test('names not UTF-8 or with control characters: answered, escaped as \\xNN (Streamable HTTP)', async (t) => {
    const d = await startHttpDaemon(t);
    const c = await connectSdk(t, d, 'http');
    await c.listTools(); // the SDK then validates structuredContent against the outputSchema
    await checkOddNames(c);
});
