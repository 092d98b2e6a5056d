// A warm call whose input files do not fit in the run's /tmp (docs/ready-sandboxes.md, "Taken by
// a call"): the launcher writes the files itself, so when /tmp cannot hold them the result is
// exit 1 with "mcp-execd: the sandbox could not start the run: cannot write …" on stderr, where a
// cold run gets a tool error. The caller's code never runs either way, and the daemon goes on.
import assert from 'node:assert/strict';
import { startDaemon, callExec, summarize, test, waitPoolFull } from './lib/index.mjs';

// /tmp at its smallest (1M; also RLIMIT_FSIZE), input files allowed well past it, so the
// argument check lets the call through and only /tmp refuses it.
const ENV = { MCP_EXEC_TMP_SIZE: '1M', MCP_EXEC_MAX_INPUT_BYTES: String(4 << 20), MCP_EXEC_WARM_POOL: '1' };
const BIG = 'x'.repeat(2 << 20);
const CODE = 'print("the code ran")';
const FILES = [{ name: 'small.txt', content: 'fits' }, { name: 'big.txt', content: BIG }];

test('a warm call whose files overflow /tmp: exit 1 with the launcher\'s message, the code never runs; the next warm call works', async (t) => {
    const d = await startDaemon(t, { env: ENV });
    await waitPoolFull(d.client);
    const r = await callExec(d.client, { code: CODE, files: FILES, timeout_s: 30 });
    assert.equal(r.isError, false, summarize(r));
    assert.equal(r.sc.warm, true, `not served by the ready sandbox: ${summarize(r)}`);
    assert.equal(r.sc.exit_code, 1, summarize(r));
    assert.equal(r.sc.timed_out, false);
    assert.equal(r.sc.stdout, '', 'the caller\'s code ran');
    // The file named is the one that did not fit; /tmp full (ENOSPC) or the file past
    // RLIMIT_FSIZE (= MCP_EXEC_TMP_SIZE, EFBIG): either is "/tmp cannot hold them".
    assert.match(r.sc.stderr,
        /^mcp-execd: the sandbox could not start the run: cannot write big\.txt into \/tmp: (No space left on device|File too large)\n$/,
        summarize(r));

    // The pool refills behind the answer; the next warm call is an ordinary run.
    await waitPoolFull(d.client);
    const ok = await callExec(d.client, { code: 'print(open("small.txt").read())', files: [FILES[0]], timeout_s: 30 });
    assert.equal(ok.sc.warm, true, summarize(ok));
    assert.equal(ok.sc.exit_code, 0, summarize(ok));
    assert.equal(ok.sc.stdout, 'fits\n');
});

test('the same call on the cold path is a tool error saying the sandbox could not start the run', async (t) => {
    const d = await startDaemon(t, { env: { ...ENV, MCP_EXEC_WARM_POOL: '0' } });
    const r = await callExec(d.client, { code: CODE, files: FILES, timeout_s: 30 });
    assert.equal(r.isError, true, summarize(r));
    assert.equal(r.sc, undefined, summarize(r));
    assert.match(r.text, /^the sandbox could not start the run: copy to \/tmp\/big\.txt: (No space left on device|File too large)$/, summarize(r));
    assert.doesNotMatch(r.text, /the code ran/);
    const ok = await callExec(d.client, { code: 'print(1)', timeout_s: 30 });
    assert.equal(ok.sc.exit_code, 0, summarize(ok));
    assert.equal(ok.sc.warm, false);
});
