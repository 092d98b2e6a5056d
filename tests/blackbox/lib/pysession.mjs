// What the Python session tests share (issue 18): a call in a session, and the deadline's check.
import assert from 'node:assert/strict';
import { callTool } from './files.mjs';

/** exec with `session`; the tool result as callTool gives it ({ isError, sc, ... }). */
export const sessionRun = (client, session, code, extra = {}) => callTool(client, 'exec', { code, session, ...extra });

/**
 * A call past its 1 s deadline is interrupted (KeyboardInterrupt: it prints, re-raises) and ends
 * timed_out within the grace; the session lives on and keeps what an earlier call set.
 */
export async function assertInterruptKeepsState(client, session) {
    await sessionRun(client, session, 'z = "kept"');
    const r = await sessionRun(client, session,
        'import time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print("interrupted")\n    raise',
        { timeout_s: 1 });
    assert.equal(r.sc.timed_out, true);
    assert.equal(r.sc.exit_code, -1);
    assert.equal(r.sc.session_alive, true);
    assert.equal(r.sc.stdout, 'interrupted\n');
    assert.match(r.sc.stderr, /KeyboardInterrupt/);
    const r2 = await sessionRun(client, session, 'print(z)');
    assert.equal(r2.sc.stdout, 'kept\n');
    assert.equal(r2.sc.timed_out, false);
    assert.equal(r2.sc.session_alive, true);
}
