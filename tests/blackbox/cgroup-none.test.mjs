// The none backend, on machines without systemd or a writable cgroup v2 (these development
// machines): results say limits "rlimit", the start warns, and asking for a cgroup refuses to
// start with a clear message instead of running unconfined by the kernel's limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { startDaemon, callExec, runOnce } from './lib/index.mjs';

// Where systemd is PID 1 with cgroup v2, "auto" picks a cgroup backend: these tests describe the
// machines that have neither (the systemd tier covers the others).
const hasCgroup2 = (() => {
  try { return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => / \/sys\/fs\/cgroup .* - cgroup2 /.test(l)); } catch { return false; }
})();
const noCgroup = !hasCgroup2 || !existsSync('/run/systemd/system');

test('auto falls back to rlimits with a warning; results say limits "rlimit"', { skip: !noCgroup && 'this machine has cgroup v2' }, async (t) => {
  const d = await startDaemon(t, { env: { MCP_EXEC_CGROUP: 'auto' } });
  const r = await callExec(d.client, { code: 'print(1)' });
  assert.equal(r.sc.limits, 'rlimit');
  assert.equal(r.sc.oom_killed, false);
  assert.match(d.stderr(), /no cgroup backend available .*rlimits only/);
});

test('MCP_EXEC_REQUIRE_CGROUP=1 refuses to start without a cgroup backend, saying why', { skip: !noCgroup && 'this machine has cgroup v2' }, async () => {
  const r = await runOnce({ env: { MCP_EXEC_CGROUP: 'auto', MCP_EXEC_REQUIRE_CGROUP: '1' }, keepStdinOpen: true });
  assert.equal(r.timedOut, false, 'the daemon started serving instead of refusing');
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /refusing to start: MCP_EXEC_REQUIRE_CGROUP=1.*no cgroup backend available/);
});

test('an explicit MCP_EXEC_CGROUP=systemd or cgroupfs that is unavailable refuses to start', { skip: !noCgroup && 'this machine has cgroup v2' }, async () => {
  for (const mode of ['systemd', 'cgroupfs']) {
    const r = await runOnce({ env: { MCP_EXEC_CGROUP: mode }, keepStdinOpen: true });
    assert.equal(r.code, 1, `${mode}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`refusing to start: MCP_EXEC_CGROUP=${mode} is not available: .+`));
  }
});

test('MCP_EXEC_CGROUP=none with MCP_EXEC_REQUIRE_CGROUP=1 is a contradiction: exit 2', async () => {
  const r = await runOnce({ env: { MCP_EXEC_CGROUP: 'none', MCP_EXEC_REQUIRE_CGROUP: '1' } });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /MCP_EXEC_REQUIRE_CGROUP/);
});
