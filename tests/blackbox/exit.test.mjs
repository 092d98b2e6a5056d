// How a run ends (issue 16): the launcher ends Python without its module teardown (80-100 ms once
// numpy and pandas are loaded), but everything of Python's exit that the caller can see happens as
// for `python -I main.py`: non-daemon threads joined, atexit callbacks in order and their errors
// reported, __main__'s objects and the caller's own modules' objects finalized (files flushed,
// __del__ run, cycles collected), the std streams and C stdio flushed, the exit status of
// sys.exit(). Each case runs on the cold path and on a ready sandbox: both end the same way.
import assert from 'node:assert/strict';
import { startDaemon, callExec, assertResultShape, waitPoolFull, test } from './lib/index.mjs';

const CASES = [
    { name: 'a file left open in __main__ is flushed', code: "f = open('outputs/a.txt', 'w')\nf.write('x' * 10)\n",
      files: [['outputs/a.txt', 10]] },
    { name: "a file left open in the caller's own module is flushed",
      code: "open('helper.py', 'w').write(\"f = open('outputs/b.txt', 'w')\\nf.write('y' * 7)\\n\")\nimport sys\nsys.path.insert(0, '/tmp')\nimport helper\n",
      files: [['outputs/b.txt', 7]] },
    { name: "__del__ of __main__'s objects runs, after atexit, with globals gone as Python leaves them",
      code: 'import atexit\nX = 1\nclass A:\n    def __del__(self):\n        print("bye", X)\n' +
            'a = A()\natexit.register(print, "ae")\nprint("main")\n',
      stdout: 'main\nae\nbye None\n' },
    { name: 'a cycle with __del__ is collected',
      code: 'class N:\n    def __del__(self):\n        print("cyc")\nn = N()\nn.me = n\ndel n\nprint("main")\n',
      stdout: 'main\ncyc\n' },
    { name: 'a non-daemon thread is joined',
      code: 'import threading, time\ndef w():\n    time.sleep(0.3)\n    print("thread")\n' +
            'threading.Thread(target=w).start()\nprint("main")\n',
      stdout: 'main\nthread\n' },
    { name: 'sys.exit(3)', code: 'import sys\nprint("a")\nsys.exit(3)\n', stdout: 'a\n', exit: 3 },
    { name: 'sys.exit(256) is 0, sys.exit(-1) 255 (as the kernel keeps 8 bits)',
      code: 'import sys\nsys.exit(256)\n', exit: 0 },
    { name: 'sys.exit(-1)', code: 'import sys\nsys.exit(-1)\n', exit: 255 },
    { name: 'sys.exit with a message: printed, status 1', code: 'import sys\nsys.exit("no good")\n',
      stderr: 'no good\n', exit: 1 },
    { name: 'an uncaught exception: the traceback, status 1, atexit still runs',
      code: 'import atexit\natexit.register(print, "ae")\n1/0\n', stdout: 'ae\n', exit: 1,
      stderrHas: ['ZeroDivisionError', 'File "/tmp/main.py", line 3'] },
    { name: 'C stdio (printf through ctypes) is flushed after Python\'s stdout',
      code: 'import ctypes\nprint("py")\nctypes.CDLL(None).printf(b"c-out\\n")\n', stdout: 'py\nc-out\n' },
    { name: 'an atexit callback that raises is reported; the status stays 0',
      code: 'import atexit\ndef bad():\n    raise ValueError("boom")\natexit.register(bad)\n', exit: 0,
      stderrHas: ['Exception ignored in atexit callback', 'ValueError: boom'] },
    { name: 'stdout closed by the code: nothing to flush, status 0',
      code: 'import sys\nprint("gone")\nsys.stdout.flush()\nsys.stdout.close()\n', stdout: 'gone\n', exit: 0 },
];

async function check(client, c, warm) {
    // On the pooled pass, the pool refills after each answer: wait until check_environment says it
    // is full, then make the call once; it must be served warm (a cold answer fails, it is not
    // retried away).
    if (warm) await waitPoolFull(client);
    const r = await callExec(client, { code: c.code });
    assertResultShape(r);
    const what = `${c.name} (${warm ? 'warm' : 'cold'}): ${JSON.stringify(r.sc)}`;
    assert.equal(r.sc.warm, warm, what);
    assert.equal(r.sc.exit_code, c.exit ?? 0, what);
    if (c.stdout !== undefined) assert.equal(r.sc.stdout, c.stdout, what);
    if (c.stderr !== undefined) assert.equal(r.sc.stderr, c.stderr, what);
    if (c.stderr === undefined && c.stderrHas === undefined) assert.equal(r.sc.stderr, '', what);
    for (const s of c.stderrHas ?? []) assert.ok(r.sc.stderr.includes(s), what);
    if (c.files) assert.deepEqual((r.sc.files ?? []).map((f) => [f.name, f.bytes]), c.files, what);
}

for (const [label, env, warm] of [['cold path', { MCP_EXEC_WARM_POOL: '0' }, false],
                                  ['ready sandbox', {}, true]]) {
    test(`${label}: a run ends as python -I main.py ends`, { timeout: 240000 }, async (t) => {
        const d = await startDaemon(t, { listTools: true, env });
        for (const c of CASES) await check(d.client, c, warm);
        assert.deepEqual(d.errors, [], `SDK errors: ${d.errors.map(String)}`);
    });
}
