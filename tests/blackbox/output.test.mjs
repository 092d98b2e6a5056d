// Output capping as it streams and UTF-8 repair (issue 2, point 7).
import assert from 'node:assert/strict';
import { startDaemon, callExec, summarize, procMemory, test } from './lib/index.mjs';

// Deterministic output: line i is the 8-digit number i and "\n" (9 bytes a line).
const linesCode = (n, stream = 'stdout') => [
    'import sys',
    `out = sys.${stream}.buffer`,
    `n = ${n}`,
    'for start in range(0, n, 10000):',
    '    out.write("".join(f"{i:08d}\\n" for i in range(start, min(n, start + 10000))).encode())',
    'out.flush()',
].join('\n');
const expectedLines = (nbytes) => {
    let s = '';
    for (let i = 0; s.length < nbytes; i++) s += `${String(i).padStart(8, '0')}\n`;
    return s.slice(0, nbytes);
};

test('20 MB of output with a 4 KiB cap: truncated, exactly the first 4096 bytes, daemon RSS bounded', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_OUTPUT_BYTES: 4096 } });
    const before = procMemory(d.pid);
    const n = Math.ceil(20_000_000 / 9);
    let peakRss = 0;
    const poll = setInterval(() => { const m = procMemory(d.pid); if (m) peakRss = Math.max(peakRss, m.rss); }, 20);
    let r;
    try {
        r = await callExec(d.client, { code: linesCode(n), timeout_s: 60 });
    } finally { clearInterval(poll); }
    const after = procMemory(d.pid);
    t.diagnostic(`daemon VmRSS before ${before?.rss} after ${after?.rss} peak-sampled ${peakRss}; VmHWM ${after?.hwm}; run ${r.sc?.duration_ms} ms`);
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.timed_out, false, 'the flood did not finish: pipes not drained?');
    assert.equal(r.sc.exit_code, 0, summarize(r));
    assert.equal(r.sc.truncated, true);
    assert.equal(Buffer.byteLength(r.sc.stdout), 4096);
    assert.equal(r.sc.stdout, expectedLines(4096));
    assert.equal(r.sc.stderr, '');
    assert.ok(after, 'the daemon is gone');
    assert.ok(after.hwm < 64 * 1024 * 1024, `daemon VmHWM ${after.hwm} bytes >= 64 MiB`);
    // and the flood did not pass through the daemon's memory: its peak grew by far less than 20 MB
    assert.ok(after.hwm - before.hwm < 8 * 1024 * 1024, `daemon VmHWM grew by ${after.hwm - before.hwm} bytes during a 20 MB flood`);
});

test('output exactly at the cap is not truncated; one byte more is', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_OUTPUT_BYTES: 4096 } });
    const exact = await callExec(d.client, { code: 'import sys; sys.stdout.write("a" * 4096)' });
    assert.equal(exact.sc.truncated, false, summarize(exact));
    assert.equal(exact.sc.stdout, 'a'.repeat(4096));
    const over = await callExec(d.client, { code: 'import sys; sys.stdout.write("a" * 4097)' });
    assert.equal(over.sc.truncated, true, summarize(over));
    assert.equal(over.sc.stdout, 'a'.repeat(4096));
});

test('one combined cap over stdout and stderr, first bytes kept', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_OUTPUT_BYTES: 4096 } });
    const code = [
        'import sys, time',
        'sys.stdout.write("o" * 3000); sys.stdout.flush()',
        'time.sleep(0.2)   # so that "first bytes" is unambiguous',
        'sys.stderr.write("e" * 3000); sys.stderr.flush()',
    ].join('\n');
    const r = await callExec(d.client, { code });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.truncated, true);
    const total = Buffer.byteLength(r.sc.stdout) + Buffer.byteLength(r.sc.stderr);
    assert.equal(total, 4096, `kept ${r.sc.stdout.length} + ${r.sc.stderr.length} bytes`);
    assert.equal(r.sc.stdout, 'o'.repeat(3000), 'stdout came first and fits: it must be kept whole');
    assert.equal(r.sc.stderr, 'e'.repeat(1096));
});

test('a flood on stderr is capped too', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_OUTPUT_BYTES: 4096 } });
    const r = await callExec(d.client, { code: linesCode(200_000, 'stderr'), timeout_s: 30 });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.exit_code, 0);
    assert.equal(r.sc.truncated, true);
    assert.equal(r.sc.stderr, expectedLines(4096));
    assert.equal(r.sc.stdout, '');
});

test('a flood that never ends is still killed at the deadline and capped', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_OUTPUT_BYTES: 4096 } });
    const before = procMemory(d.pid);
    const r = await callExec(d.client, { code: 'import sys\nwhile True: sys.stdout.write("x" * 65536)', timeout_s: 1 });
    assert.equal(r.sc.timed_out, true, summarize(r));
    assert.equal(r.sc.truncated, true);
    assert.equal(r.sc.stdout, 'x'.repeat(4096));
    assert.ok(r.sc.duration_ms >= 900 && r.sc.duration_ms < 5000, `duration_ms ${r.sc.duration_ms}: not cut at the 1 s deadline`);
    const m = procMemory(d.pid);
    assert.ok(m.hwm < 64 * 1024 * 1024, `daemon VmHWM ${m.hwm}`);
    assert.ok(m.hwm - before.hwm < 8 * 1024 * 1024, `daemon VmHWM grew by ${m.hwm - before.hwm} bytes during the flood`);
});

test('invalid UTF-8 in output becomes U+FFFD', async (t) => {
    const d = await startDaemon(t);
    const r = await callExec(d.client, {
        code: "import sys\nsys.stdout.buffer.write(b'a\\xffb')\nsys.stdout.flush()\nsys.stderr.buffer.write(b'\\xc3(z\\xe2\\x82')\nsys.stderr.flush()",
    });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.stdout, 'a\uFFFDb');
    // an invalid 2-byte lead, then a truncated 3-byte sequence at the end
    assert.ok(/^\uFFFD+\(z\uFFFD+$/.test(r.sc.stderr), `stderr ${JSON.stringify(r.sc.stderr)}`);
    assert.deepEqual(r.textJson, r.sc);
});

test('valid multi-byte UTF-8 and control characters pass through unchanged', async (t) => {
    const d = await startDaemon(t);
    const text = 'héllo wörld — ✓ 🎉 tab\there\r\nline\u0001end';
    const r = await callExec(d.client, {
        code: `import sys\nsys.stdout.write(${JSON.stringify(text)})`,
    });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.stdout, text);
});

test('a NUL byte in output is kept (as \\u0000)', async (t) => {
    const d = await startDaemon(t);
    const r = await callExec(d.client, { code: "import sys\nsys.stdout.buffer.write(b'a\\x00b')" });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.stdout, 'a\u0000b');
});

// Issue 15 #10: the cap holds in UTF-8 bytes of what the client receives. A character the cap cuts
// is dropped, not replaced with U+FFFD (3 bytes, which took 4 096 to 4 098).
test('multibyte output on both streams: the cap holds in UTF-8 bytes, a cut character is dropped', async (t) => {
    const code = [
        'import os',
        'for i in range(2000):',
        '    os.write(1, "€".encode())      # 3 bytes',
        '    os.write(2, "😀".encode())     # 4 bytes',
    ].join('\n');
    for (const cap of [4096, 4097, 4098, 4099]) {
        const d = await startDaemon(t, { env: { MCP_EXEC_MAX_OUTPUT_BYTES: cap } });
        const r = await callExec(d.client, { code, timeout_s: 60 });
        assert.equal(r.isError, false, summarize(r));
        assert.equal(r.sc.truncated, true, summarize(r));
        const bytes = Buffer.byteLength(r.sc.stdout) + Buffer.byteLength(r.sc.stderr);
        assert.ok(bytes <= cap, `cap ${cap}: stdout+stderr are ${bytes} UTF-8 bytes`);
        assert.ok(bytes > cap - 8, `cap ${cap}: only ${bytes} bytes kept`);
        assert.ok(/^€*$/.test(r.sc.stdout), `cap ${cap}: stdout ${JSON.stringify(r.sc.stdout.slice(-8))}`);
        assert.ok(/^(😀)*$/u.test(r.sc.stderr), `cap ${cap}: stderr ${JSON.stringify(r.sc.stderr.slice(-8))}`);
        assert.deepEqual(r.textJson, r.sc);
        await d.close?.();
    }
});

test('invalid bytes that become U+FFFD still fit the cap in UTF-8 bytes', async (t) => {
    const d = await startDaemon(t, { env: { MCP_EXEC_MAX_OUTPUT_BYTES: 4096 } });
    const r = await callExec(d.client, {
        code: "import sys\nsys.stdout.buffer.write(b'\\xff' * 3000)\nsys.stdout.flush()\nsys.stderr.buffer.write(b'\\xfe' * 3000)",
    });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.truncated, true);
    const bytes = Buffer.byteLength(r.sc.stdout) + Buffer.byteLength(r.sc.stderr);
    assert.ok(bytes <= 4096, `stdout+stderr are ${bytes} UTF-8 bytes`);
    assert.ok(/^\uFFFD*$/.test(r.sc.stdout + r.sc.stderr));
});
