// `mcp-execd --report` (issue 33.2) on journal files: the records the daemon itself wrote (its
// stderr lines, turned into journal entries), and made-up records whose counts and percentiles are
// known exactly. This host has no journald, so the records become a .journal file through
// systemd-journal-remote, reading the journal export format on stdin; --file reads it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { callExec, runOnce, skipUnlessCI, startDaemon, test } from './lib/index.mjs';

const JOURNAL_REMOTE = '/lib/systemd/systemd-journal-remote';
const FINISHED = '0a6bda1f24cf4b5188307da770817b6b';
const REJECTED = '017048d888fb4eca8b36e2339da3a750';
const BOOT = '5d0c1e2f3a4b4c5d8e9f0a1b2c3d4e5f';
const T0 = 1765000000000000; // 2025-12-06 05:46:40 UTC, in µs

function haveJournalRemote(t) {
    if (fs.existsSync(JOURNAL_REMOTE)) return true;
    skipUnlessCI(t, `${JOURNAL_REMOTE} is missing (Debian package systemd-journal-remote, scripts/deps.sh test)`);
    return false;
}

/** Entries ([[field, value], ...], each with its __REALTIME_TIMESTAMP) as a .journal file in dir. */
function writeJournal(dir, entries, name = 'test.journal') {
    let seq = 0;
    const text = entries.map((fields) => {
        const head = [['__MONOTONIC_TIMESTAMP', 1000 + seq++], ['_BOOT_ID', BOOT], ['_HOSTNAME', 'blackbox']];
        return [...head, ...fields].map(([k, v]) => {
            assert.ok(!String(v).includes('\n'), `${k}: a value with a newline needs the binary form`);
            return `${k}=${v}\n`;
        }).join('') + '\n';
    }).join('');
    const file = path.join(dir, name);
    const r = spawnSync(JOURNAL_REMOTE, [`--output=${file}`, '-'], { input: text, encoding: 'utf8' });
    assert.equal(r.status, 0, `systemd-journal-remote: ${r.stderr}`);
    return file;
}

function tmpDir(t) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'report-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    return dir;
}

async function report(args, opts = {}) {
    const r = await runOnce({ args: ['--report', ...args], timeoutMs: 20000, ...opts });
    assert.equal(r.timedOut, false, 'the report did not end');
    return r;
}

async function reportJson(args) {
    const r = await report(['--json', ...args]);
    assert.equal(r.code, 0, `exit status; stderr: ${r.stderr}`);
    return JSON.parse(r.stdout);
}

/** Nearest rank: the value at rank ceil(p/100 × n) of the sorted values. */
function percentile(values, p) {
    const v = [...values].sort((a, b) => a - b);
    return v[Math.max(Math.ceil((v.length * p) / 100), 1) - 1];
}

/** The fields of one record line on stderr: "<6>mcp-execd: MESSAGE; MESSAGE_ID=… K=V K=\"…\"". */
function parseRecordLine(line) {
    const m = /^<(\d)>mcp-execd: (.*?); (MESSAGE_ID=.*)$/.exec(line);
    assert.ok(m, `not a record line: ${line}`);
    const fields = [['PRIORITY', m[1]], ['MESSAGE', m[2]], ['SYSLOG_IDENTIFIER', 'mcp-execd']];
    const re = /([A-Z0-9_]+)=("(?:[^"\\]|\\.)*"|[^ ]*)(?: |$)/g;
    let f;
    while ((f = re.exec(m[3]))) {
        let v = f[2];
        if (v.startsWith('"')) v = v.slice(1, -1).replace(/\\(.)/g, (_, c) => ({ n: '\n', t: '\t' })[c] ?? c);
        fields.push([f[1], v]);
    }
    return fields;
}

test('the report counts the runs the daemon recorded, with their exact durations', async (t) => {
    if (!haveJournalRemote(t)) return;
    const d = await startDaemon(t, { env: { MCP_EXEC_WARM_POOL: '0' } });
    const results = [];
    for (const code of ['print(1)', 'print(2)', 'import time; time.sleep(0.05)', 'import sys; sys.exit(3)']) {
        const r = await callExec(d.client, { code });
        assert.equal(r.isError, false, r.text);
        results.push(r.sc);
    }
    const slow = await callExec(d.client, { code: 'import time; time.sleep(30)', timeout_s: 1 });
    assert.equal(slow.sc.timed_out, true);
    results.push(slow.sc);
    const bad = await callExec(d.client, { code: '   ' });
    assert.equal(bad.isError, true, 'blank code was accepted');
    await d.close();
    await d.exited;

    const lines = d.stderr().split('\n').filter((l) => l.includes('MESSAGE_ID='));
    const records = lines.map(parseRecordLine).filter((f) => f.some(([k, v]) => k === 'MESSAGE_ID' && (v === FINISHED || v === REJECTED)));
    assert.equal(records.length, 6, `record lines:\n${lines.join('\n')}`);
    const dir = tmpDir(t);
    const file = writeJournal(dir, records.map((f, i) => [['__REALTIME_TIMESTAMP', T0 + i * 1000000], ...f]));

    const rep = await reportJson(['--file', file]);
    assert.equal(rep.calls, 6);
    assert.equal(rep.runs, 5);
    assert.equal(rep.rejected, 1);
    assert.deepEqual(rep.rejected_reasons, { 'invalid-arguments': 1 });
    assert.equal(rep.outcomes.ok, 3);
    assert.equal(rep.outcomes.nonzero, 1);
    assert.equal(rep.outcomes.timeout, 1);
    assert.equal(rep.outcomes.rejected, 1);
    assert.equal(rep.outcomes.error, 0);
    assert.equal(rep.first_record, '2025-12-06T05:46:40.000000Z');
    assert.equal(rep.last_record, '2025-12-06T05:46:45.000000Z');
    const dur = results.map((sc) => sc.duration_ms);
    assert.deepEqual(rep.measures.duration_ms, {
        count: 5, sum: dur.reduce((a, b) => a + b, 0), p50: percentile(dur, 50), p95: percentile(dur, 95),
        p99: percentile(dur, 99), max: Math.max(...dur),
    });
    const cpu = results.map((sc) => sc.cpu_user_us);
    assert.equal(rep.measures.cpu_user_us.sum, cpu.reduce((a, b) => a + b, 0));
    assert.equal(rep.warm.runs, 5);
    assert.equal(rep.warm.hits, results.filter((sc) => sc.warm).length);
    // The measures of issue 33.1 are summed where the records have them, "not recorded" (null)
    // where they do not (rlimit mode here, or a daemon from before).
    const has = (f) => records.some((r) => r.some(([k]) => k === f));
    assert.equal(rep.measures.cpu_pressure_some_us === null, !has('CPU_PRESSURE_SOME_US'));
    assert.equal(rep.measures.pids_peak === null, !has('PIDS_PEAK'));
    assert.equal(rep.tenant, null);
    assert.deepEqual(rep.tenants, []);
});

/** 200 made-up runs: durations 1..200 ms, odd ones tenant "alpha", even ones "beta", one a second
 * from T0; half with issue 33.1's fields; 4 refused; 2 errors; and entries the report must skip. */
function madeUp() {
    const entries = [];
    for (let i = 1; i <= 200; i++) {
        const f = [['__REALTIME_TIMESTAMP', T0 + i * 1000000], ['SYSLOG_IDENTIFIER', 'mcp-execd'], ['MESSAGE', `run ${i}`],
            ['MESSAGE_ID', FINISHED], ['OUTCOME', i % 20 === 0 ? 'nonzero' : 'ok'], ['DURATION_MS', i], ['QUEUE_MS', i % 7],
            ['MEMORY_PEAK_BYTES', i * 1048576], ['CPU_USER_US', 1000], ['CPU_SYSTEM_US', 10], ['WARM', i <= 50 ? 1 : 0],
            ['TENANT', i % 2 ? 'alpha' : 'beta']];
        if (i > 100) f.push(['CPU_PRESSURE_SOME_US', i], ['IO_READ_BYTES', 4096], ['PIDS_PEAK', i % 5 + 1]);
        if (i % 10 === 0) f.push(['PY_SESSION_ID', '0123456789abcdef'], ['PY_SESSION_CALL', 1]);
        entries.push(f);
    }
    for (let i = 0; i < 2; i++) {
        entries.push([['__REALTIME_TIMESTAMP', T0 + 300000000 + i], ['SYSLOG_IDENTIFIER', 'mcp-execd'],
            ['MESSAGE_ID', FINISHED], ['OUTCOME', 'error'], ['EXIT_CODE', ''], ['DURATION_MS', 99999], ['QUEUE_MS', 0],
            ['MEMORY_PEAK_BYTES', 0], ['ERROR', 'cannot start the sandbox: Cannot allocate memory'], ['WARM', 0]]);
    }
    for (let i = 0; i < 4; i++) {
        entries.push([['__REALTIME_TIMESTAMP', T0 + 400000000 + i], ['SYSLOG_IDENTIFIER', 'mcp-execd'],
            ['MESSAGE_ID', REJECTED], ['OUTCOME', 'rejected'], ['REASON', i < 3 ? 'queue-full' : 'tenant-queue-full'],
            ['TENANT', 'beta']]);
    }
    // Not runs: another program's entry with our MESSAGE_ID, the daemon's start record, a log line.
    entries.push([['__REALTIME_TIMESTAMP', T0 + 50], ['SYSLOG_IDENTIFIER', 'impostor'], ['MESSAGE_ID', FINISHED],
        ['OUTCOME', 'ok'], ['DURATION_MS', 5]]);
    entries.push([['__REALTIME_TIMESTAMP', T0 + 60], ['SYSLOG_IDENTIFIER', 'mcp-execd'],
        ['MESSAGE_ID', 'd5a8c22b80ff494d9f85e78d0e708fa9'], ['OUTCOME', 'ok']]);
    entries.push([['__REALTIME_TIMESTAMP', T0 + 70], ['SYSLOG_IDENTIFIER', 'mcp-execd'], ['MESSAGE', 'hello']]);
    return entries.sort((a, b) => a[0][1] - b[0][1]);
}

test('made-up records: exact counts, percentiles, tenants, time range', async (t) => {
    if (!haveJournalRemote(t)) return;
    const dir = tmpDir(t);
    const file = writeJournal(dir, madeUp());

    const all = await reportJson(['--file', file]);
    assert.equal(all.report_version, 1);
    assert.equal(all.calls, 206);
    assert.equal(all.runs, 202);
    assert.equal(all.rejected, 4);
    assert.equal(all.session_calls, 20);
    assert.equal(all.outcomes.ok, 190);
    assert.equal(all.outcomes.nonzero, 10);
    assert.equal(all.outcomes.error, 2);
    assert.deepEqual(all.rejected_reasons, { 'queue-full': 3, 'tenant-queue-full': 1 });
    // Durations 1..200 (the errors have none): nearest rank
    assert.deepEqual(all.measures.duration_ms, { count: 200, sum: 20100, p50: 100, p95: 190, p99: 198, max: 200 });
    // Memory peaks of the runs that ran (0 is unknown)
    assert.equal(all.measures.memory_peak_bytes.count, 200);
    assert.equal(all.measures.memory_peak_bytes.max, 200 * 1048576);
    assert.equal(all.measures.queue_ms.count, 202);
    // Issue 33.1's fields in the second half only
    assert.deepEqual(all.measures.cpu_pressure_some_us, { count: 100, sum: 15050, p50: 150, p95: 195, p99: 199, max: 200 });
    assert.equal(all.measures.io_read_bytes.sum, 100 * 4096);
    assert.equal(all.measures.pids_peak.max, 5);
    assert.equal(all.measures.memory_pressure_full_us, null);
    // Session calls (every tenth) are not runs of the pool: 182 runs, 45 hits
    assert.deepEqual(all.warm, { runs: 182, hits: 45, rate: 45 / 182 });
    assert.deepEqual(all.errors, [{ error: 'cannot start the sandbox: Cannot allocate memory', count: 2 }]);
    assert.deepEqual(all.tenants.map((x) => [x.tenant, x.calls, x.rejected]), [['alpha', 100, 0], ['beta', 104, 4]]);
    const beta = all.tenants[1];
    assert.equal(beta.measures.duration_ms.p50, 100); // 2, 4, … 200: rank 50 is 100
    assert.equal(beta.measures.duration_ms.max, 200);

    // --tenant: that tenant's records only (the journal is matched on TENANT=)
    const alpha = await reportJson(['--file', file, '--tenant', 'alpha']);
    assert.equal(alpha.tenant, 'alpha');
    assert.equal(alpha.calls, 100);
    assert.deepEqual(alpha.measures.duration_ms, { count: 100, sum: 10000, p50: 99, p95: 189, p99: 197, max: 199 });
    assert.equal((await reportJson(['--file', file, '--tenant', 'nobody'])).calls, 0);

    // --since/--until: both ends included, as journalctl's
    const range = await reportJson(['--file', file, '--since', `@${T0 / 1e6 + 11}`, '--until', `@${T0 / 1e6 + 20}`]);
    assert.equal(range.calls, 10);
    assert.deepEqual([range.measures.duration_ms.p50, range.measures.duration_ms.max], [15, 20]);
    assert.equal(range.since, '2025-12-06T05:46:51.000000Z');
    assert.equal(range.until, '2025-12-06T05:47:00.000000Z');
    const iso = await reportJson(['--file', file, '--since', '2025-12-06 05:50:00 UTC']);
    assert.equal(iso.calls, 7); // the run at exactly +200 s (included), the errors and the refusals
    assert.equal((await reportJson(['--file', file, '--until', '2020-01-01'])).calls, 0);
    assert.equal((await reportJson(['--file', file, '--since', '-1h'])).calls, 0); // 2025 is long past

    // The text: tables with what happened, "not recorded" for what was not
    const text = await report(['--file', file]);
    assert.equal(text.code, 0, text.stderr);
    for (const want of [/206 calls: 202 runs \(20 in Python sessions\), 4 refused/, /^ok +190 +92\.2%$/m,
        /^queue-full +3$/m, /ready sandboxes: 45 of 182 runs \(24\.7%\)/, /^duration +200 +100 ms +190 ms +198 ms +200 ms +20\.10 s$/m,
        /^memory pressure \(full\) +- not recorded$/m, /^ +2 +cannot start the sandbox: Cannot allocate memory$/m,
        /^beta +104 +/m]) {
        assert.match(text.stdout, want);
    }
});

test('--directory reads every journal file of a directory', async (t) => {
    if (!haveJournalRemote(t)) return;
    const dir = tmpDir(t);
    const entries = madeUp();
    writeJournal(dir, entries.slice(0, 100), 'one.journal');
    writeJournal(dir, entries.slice(100), 'two.journal');
    const rep = await reportJson(['--directory', dir]);
    assert.equal(rep.calls, 206);
    assert.equal(rep.measures.duration_ms.p99, 198);
    const two = await reportJson(['--file', path.join(dir, 'one.journal'), '--file', path.join(dir, '*o.journal')]);
    assert.equal(two.calls, 206);
});

test('bad options exit 2 naming the option, a missing file exits 1, and no daemon starts', async (t) => {
    const cases = [
        [['--report', '--since', 'yesterday-ish'], /--since 'yesterday-ish': not a time; accepted: -1h/],
        [['--report', '--until', '2026-02-30'], /--until '2026-02-30'/],
        [['--report', '--since', '-1h', '--until', '-2h'], /--since '-1h' is after --until '-2h'/],
        [['--report', '--tenant', 'no such name'], /--tenant 'no such name': not a tenant name/],
        [['--json'], /--json is an option of --report/],
        [['--since', '-1h'], /--since is an option of --report/],
        [['--report', '--file', 'a.journal', '--directory', '/tmp'], /--file and --directory cannot be used together/],
        [['--report', '--since'], /option '--since' needs a value/],
    ];
    for (const [args, err] of cases) {
        const r = await runOnce({ args, keepStdinOpen: true, timeoutMs: 5000 });
        assert.equal(r.timedOut, false, `${args.join(' ')}: still running`);
        assert.equal(r.code, 2, `${args.join(' ')}: exit status ${r.code}; stderr: ${r.stderr}`);
        assert.match(r.stderr, err);
        assert.equal(r.stdout, '');
    }
    const missing = await runOnce({ args: ['--report', '--file', '/nonexistent/x.journal'], keepStdinOpen: true });
    assert.equal(missing.code, 1, missing.stderr);
    assert.match(missing.stderr, /--file \/nonexistent\/x\.journal: no such file/);
    // A configuration the daemon would refuse does not matter to the report: it starts no daemon.
    const dir = tmpDir(t);
    const r = await runOnce({ args: ['--report', '--directory', dir], env: { MCP_EXEC_TRANSPORT: 'bogus' }, keepStdinOpen: true });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /no calls recorded in this range/);
});
