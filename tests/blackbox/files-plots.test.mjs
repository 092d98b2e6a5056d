// Figures without ceremony (issue 10): figures left open, plt.show() and several figures come back
// as MCP image items whose PNG has the figure's pixel size, in order; the official SDK client
// accepts the content (schema-valid) over stdio and over Streamable HTTP; the launcher that makes
// this happen leaves the code's traceback, exit status and working directory as they were.
import assert from 'node:assert/strict';
import { startDaemon, callExec, summarize, test } from './lib/index.mjs';
import { startHttpDaemon, connectSdk } from './lib/http-daemon.mjs';
import { items, pngSize, SLOW, RUN_TIMEOUT_S } from './lib/files.mjs';

const SERIES = [
    'import json',
    'import pandas as pd',
    'import matplotlib.pyplot as plt',
    's = pd.Series([1, 3, 2, 5, 4], index=pd.date_range("2024-01-01", periods=5), name="demo")',
    'ax = s.plot(figsize=(5, 3))',
    'fig = ax.get_figure()',
    'print(json.dumps([int(round(v)) for v in fig.get_size_inches() * fig.dpi]))',
].join('\n');

function assertImages(r, n) {
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.exit_code, 0, r.sc.stderr);
    const imgs = items(r).filter((c) => c.type === 'image');
    assert.equal(imgs.length, n, `expected ${n} images: ${JSON.stringify(r.sc.files)}`);
    for (const i of imgs) assert.equal(i.mimeType, 'image/png');
    const listed = r.sc.files.filter((f) => f.mime === 'image/png');
    assert.equal(listed.length, n, JSON.stringify(r.sc.files));
    for (const f of listed) assert.equal(f.returned, true);
    // The text content stays the JSON of the structured result (listing included, bytes not).
    assert.deepEqual(r.textJson, r.sc);
    return imgs.map((i) => Buffer.from(i.data, 'base64'));
}

test('a pandas series plotted and left open → one PNG image item of the figure\'s pixel size', SLOW, async (t) => {
    const d = await startDaemon(t, { listTools: true }); // the SDK validates structuredContent against outputSchema
    const r = await callExec(d.client, { code: SERIES, timeout_s: RUN_TIMEOUT_S }, { timeoutMs: 200000 });
    const [png] = assertImages(r, 1);
    const [w, h] = JSON.parse(r.sc.stdout);
    assert.deepEqual(pngSize(png), { width: w, height: h });
    assert.deepEqual([w, h], [500, 300]); // 5 × 3 inches at the default 100 dpi
    assert.deepEqual(r.sc.files.map((f) => f.name), ['outputs/figure-1.png']);
    assert.equal(r.sc.files[0].bytes, png.length);
});

test('plt.show() saves the figure (and closes it: the next plot is a new figure)', SLOW, async (t) => {
    const d = await startDaemon(t, { listTools: true });
    const code = [
        'import matplotlib.pyplot as plt',
        'plt.figure(figsize=(4, 2), dpi=50); plt.plot([1, 2, 3]); plt.show()',
        'print(len(plt.get_fignums()))',
        'plt.figure(figsize=(2, 2), dpi=50); plt.plot([3, 2, 1]); plt.show()',
    ].join('\n');
    const r = await callExec(d.client, { code, timeout_s: RUN_TIMEOUT_S }, { timeoutMs: 200000 });
    const pngs = assertImages(r, 2);
    assert.equal(r.sc.stdout, '0\n', 'show() left the figure open');
    assert.deepEqual(pngs.map(pngSize), [{ width: 200, height: 100 }, { width: 100, height: 100 }]);
    assert.ok(!/non-interactive|cannot show/i.test(r.sc.stderr), `show() warned: ${r.sc.stderr}`);
});

test('two figures open at the end → two images, in figure order', SLOW, async (t) => {
    const d = await startDaemon(t, { listTools: true });
    const code = [
        'import matplotlib',
        'matplotlib.use("Agg")', // the explicit habit of scripts works too
        'import matplotlib.pyplot as plt',
        'a = plt.figure(figsize=(3, 1), dpi=100); a.gca().bar([1, 2], [3, 4])',
        'b = plt.figure(figsize=(1, 3), dpi=100); b.gca().plot([0, 1])',
    ].join('\n');
    const r = await callExec(d.client, { code, timeout_s: RUN_TIMEOUT_S }, { timeoutMs: 200000 });
    const pngs = assertImages(r, 2);
    assert.deepEqual(pngs.map(pngSize), [{ width: 300, height: 100 }, { width: 100, height: 300 }]);
    assert.deepEqual(r.sc.files.map((f) => f.name), ['outputs/figure-1.png', 'outputs/figure-2.png']);
});

test('figures are saved also when the code fails; its traceback and exit status are its own', SLOW, async (t) => {
    const d = await startDaemon(t);
    const code = [
        'import matplotlib.pyplot as plt',
        'plt.plot([1, 2])',
        'def f():',
        '    return 1 / 0',
        'f()',
    ].join('\n');
    const r = await callExec(d.client, { code, timeout_s: RUN_TIMEOUT_S }, { timeoutMs: 200000 });
    assert.equal(r.sc.exit_code, 1);
    const tb = r.sc.stderr;
    assert.match(tb, /^Traceback \(most recent call last\):\n {2}File "\/tmp\/main.py", line 5, in <module>/, tb);
    assert.match(tb, /ZeroDivisionError: division by zero\n$/);
    assert.ok(!tb.includes('launch'), `launcher frames in the traceback: ${tb}`);
    assert.equal(items(r).filter((c) => c.type === 'image').length, 1);
});

test('the launcher is invisible: sys.exit codes, argv, __file__, a syntax error, the working directory', async (t) => {
    const d = await startDaemon(t);
    let r = await callExec(d.client, {
        code: 'import os, sys\nprint(sys.argv, __file__, __name__, sorted(os.listdir(".")))\nsys.exit(7)',
    });
    assert.equal(r.sc.exit_code, 7);
    assert.equal(r.sc.stdout, "['main.py'] /tmp/main.py __main__ ['main.py', 'outputs']\n");
    r = await callExec(d.client, { code: 'raise SystemExit("bye")' });
    assert.equal(r.sc.exit_code, 1);
    assert.equal(r.sc.stderr, 'bye\n');
    r = await callExec(d.client, { code: 'x = (' });
    assert.equal(r.sc.exit_code, 1);
    assert.match(r.sc.stderr, /^ {2}File "\/tmp\/main.py", line 1\n/);
    assert.match(r.sc.stderr, /SyntaxError/);
    // No matplotlib import, no figure, nothing listed.
    r = await callExec(d.client, { code: 'import sys\nprint("matplotlib" in sys.modules)' });
    assert.equal(r.sc.stdout, 'False\n');
    assert.deepEqual(r.sc.files, []);
    assert.equal(r.sc.files_unlisted, 0);
    assert.equal(r.result.content.length, 1);
});

test('Streamable HTTP: the SDK client accepts image and resource items (schema-valid)', SLOW, async (t) => {
    const d = await startHttpDaemon(t);
    const c = await connectSdk(t, d, 'http');
    const { tools } = await c.listTools(); // the SDK then validates structuredContent against the outputSchema
    assert.ok(tools.find((x) => x.name === 'exec').inputSchema.properties.files, 'exec has no files argument');
    const code = [
        'import matplotlib.pyplot as plt',
        'plt.figure(figsize=(2, 1), dpi=100); plt.plot([1, 2])',
        'open("outputs/table.csv", "w").write("a,b\\n1,2\\n")',
        'open("outputs/raw.bin", "wb").write(bytes(range(256)))',
        'print(open("in/data.txt").read())',
    ].join('\n');
    const r = await callExec(c, { code, timeout_s: RUN_TIMEOUT_S, files: [{ name: 'in/data.txt', content: 'over http' }] },
        { timeoutMs: 200000 });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.stdout, 'over http\n');
    const img = items(r).find((x) => x.type === 'image');
    assert.deepEqual(pngSize(Buffer.from(img.data, 'base64')), { width: 200, height: 100 });
    const res = items(r).filter((x) => x.type === 'resource').map((x) => x.resource);
    const csv = res.find((x) => x.uri.endsWith('/outputs/table.csv'));
    assert.equal(csv.mimeType, 'text/csv');
    assert.equal(csv.text, 'a,b\n1,2\n');
    const bin = res.find((x) => x.uri.endsWith('/outputs/raw.bin'));
    assert.equal(bin.mimeType, 'application/octet-stream');
    assert.deepEqual([...Buffer.from(bin.blob, 'base64')], [...Array(256).keys()]);
});
