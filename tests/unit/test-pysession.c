/* test-pysession.c: the Python sessions (daemon/pysession/) through their seams, as test-scheduler
 * tests the run queue: calls come in through pysessions_route_vtable (submit, has, cancel, gauges) on
 * a real ring (submit queues a no-op; the call is taken on the next turn), and each session's
 * sandbox is a fake Proc (fake-proc.h: every function of proc.h, nothing spawned) whose events the
 * test delivers: placed, the init's reports, the ready line and the output on the pipes, the written
 * message, the timer, the init's exit. Slots and records come from a real Scheduler (fake runs, and
 * metrics written to a memory stream).
 *
 * What is checked: the launcher's protocol as the daemon speaks it (the ready line, one message per
 * call whose first record is the call's nonce, the end lines on stderr and stdout); each answer's
 * exact content; the session frozen between its calls and its CPU read from the kernel (cgroup
 * mode) or the init's reports (rlimit mode) at each end, less that at the last freeze, and bounded
 * by the wall time; forged end lines; the deadline, its grace and the kill; Python's death; the
 * bounds, the handles that name no session, close, cancel, stop, the idle and lifetime expiry; and
 * that every session, proc and call is freed (LeakSanitizer, and fake_procs_reset() at teardown). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cleanup.h"
#include "fake-proc.h"
#include "pysession.h"
#include "ring.h"
#include "scheduler.h"
#include "unit-fakes.h"

#define PY3 "/usr/bin/python3"
#define IDLE_S 600
#define LIFETIME_S 3600
#define MAX_TIMEOUT_S 60
#define SEC 1000000u
/* pysession-internal.h's deadlines: the open's, and the grace between a call's interrupt and its kill. */
#define OPEN_TIMEOUT_USEC (60u * SEC)
#define GRACE_USEC (3u * SEC)
#define NONCE_HEX 32
#define HANDLE_SIZE 64

/* The texts a caller gets (tools.c's, written out: a change of them is a change of the
 * protocol's user-visible side and should fail here). */
#define UNKNOWN                                                                                          \
        "unknown session: the handle is not an open Python session (it may have been closed, expired " \
        "or killed, or mcp-execd restarted); open a new one with session_open"
#define BUSY                                                                                              \
        "the session is running another call; a session runs one call at a time: wait for its answer, " \
        "or open another session"

/* The launcher's ready line (launch.py: "MCPEXECD-READY <user us> <system us> <rss bytes>"). */
#define READY "MCPEXECD-READY 1200 300 7340032"
#define READY_RSS 7340032

/* ---- fixture -------------------------------------------------------------------------------- */

static McpServer *server;
static Ring *ring;
static Cgroup *cgroup;
static char state_dir[] = "/tmp/test-pysession-XXXXXX";
static RunEnv env;
static Scheduler sched;
static Metrics *metrics;
static FILE *metrics_stream;
static char *metrics_log;
static size_t metrics_log_len;
static PySessions *ps;
static int next_id;
static int owner_a, owner_b; /* owners are only compared: their addresses will do */

/* The usage the sessions' cgroup reads give when they become ready (each test moves it on). */
static const CgroupUsage base_usage = {
        .cpu_user_usec = 1000, .cpu_system_usec = 500, .memory_current_bytes = 8u << 20,
        /* the kernel's account (issue 33.1): io.pressure and io.stat unknown here */
        .account = { .v = { [EXEC_ACCOUNT_CPU_PRESSURE_SOME_US] = 700, [EXEC_ACCOUNT_MEMORY_PRESSURE_SOME_US] = 50,
                            [EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US] = 10, [EXEC_ACCOUNT_PIDS_PEAK] = 4 },
                     .known = 1u << EXEC_ACCOUNT_CPU_PRESSURE_SOME_US | 1u << EXEC_ACCOUNT_MEMORY_PRESSURE_SOME_US |
                              1u << EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US | 1u << EXEC_ACCOUNT_PIDS_PEAK },
};
/* rlimit mode's: the init's report after the ready line. */
#define BASE_UTIME 2000
#define BASE_STIME 700

static PySessionsConfig config_default(void) {
        return (PySessionsConfig) { .env = &env, .max = 4, .idle_s = IDLE_S, .lifetime_s = LIFETIME_S,
                                    .max_timeout_s = MAX_TIMEOUT_S };
}

/* Every operation on the ring comes back (the sessions' no-op and sweep). */
static void ring_drain(void) {
        for (int i = 0; ring_inflight(ring) > 0; i++) {
                assert_true(i < 50);
                assert_int_equal(ring_run_once(ring, SEC), 0);
        }
}

/* The daemon's teardown: stop (which kills every session), every sandbox's operations back (the
 * kernel's part, here the fake's), the ring drained; then the sessions can be freed. */
static void sessions_stop_and_drain(void) {
        pysessions_stop(ps, "the test is over");
        for (size_t i = 0; i < n_fake_procs; i++)
                if (fake_procs[i].proc)
                        fake_proc_drain(&fake_procs[i]);
        ring_drain();
        assert_false(pysessions_busy(ps));
        assert_int_equal(pysessions_count(ps), 0);
}

/* Makes the sessions again with config. */
static void sessions_restart(const PySessionsConfig *config) {
        sessions_stop_and_drain();
        ps = pysessions_free(ps);
        assert_int_equal(pysessions_new(config, &ps), 0);
        pysessions_attach(ps, &sched);
}

static void scheduler_setup(uint32_t max_running) {
        scheduler_init(&sched, &env, max_running, 4);
        scheduler_set_run_ops(&sched, &fake_ops);
        scheduler_set_metrics(&sched, metrics);
}

static int setup(void **state) {
        McpLimits limits = fake_limits;
        limits.max_input_bytes = 1000; /* input files allowed */
        server = fake_server_new(&limits);
        assert_int_equal(ring_new(64, &ring), 0);
        _cleanup_free_ char *why = NULL;
        assert_int_equal(cgroup_new(&(CgroupConfig) { .want = CGROUP_WANT_NONE }, &cgroup, &why), 0);
        memcpy(state_dir + strlen(state_dir) - 6, "XXXXXX", 6);
        assert_non_null(mkdtemp(state_dir));
        metrics_stream = open_memstream(&metrics_log, &metrics_log_len);
        assert_non_null(metrics_stream);
        assert_int_equal(metrics_new("1.0.0", "stdio", metrics_stream, &metrics), 0);
        env = (RunEnv) { .ring = ring, .cgroup = cgroup, .state_dir = state_dir, .python = PY3,
                         .python_name = "python3", .max_output_bytes = 4096 };
        scheduler_setup(4);
        PySessionsConfig config = config_default();
        assert_int_equal(pysessions_new(&config, &ps), 0);
        pysessions_attach(ps, &sched);
        fake_procs_reset();
        fakes_reset();
        replies_reset();
        next_id = 0; /* the calls' ids, and so their id keys, are 1, 2, … in each test */
        return 0;
}

static int teardown(void **state) {
        sessions_stop_and_drain();
        ps = pysessions_free(ps);
        fake_procs_reset(); /* every proc was freed, its staging directory removed */
        assert_int_equal(rmdir(state_dir), 0);
        assert_int_equal(sched.n_running, 0);
        assert_int_equal(sched.n_queued, 0);
        fakes_reset();
        replies_reset();
        scheduler_done(&sched);
        metrics = metrics_free(metrics);
        fclose(metrics_stream);
        free(metrics_log);
        metrics_log = NULL;
        cgroup = cgroup_free(cgroup);
        ring = ring_free(ring);
        server = mcp_server_free(server);
        return 0;
}

/* ---- calls and their answers ---------------------------------------------------------------- */

static McpCall *call_of(int id, const char *tool, const char *args) {
        return fake_call(server, id, tool, args);
}

/* Hands a call to the sessions as the route table does; returns its id. Nothing happens before the
 * next turn of the loop. */
static int submit(const char *tool, const char *args, void *owner) {
        int id = ++next_id;
        assert_int_equal(pysessions_route_vtable.submit(ps, call_of(id, tool, args), owner, on_reply), 0);
        return id;
}

static int submitf(const char *tool, void *owner, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int submitf(const char *tool, void *owner, const char *fmt, ...) {
        _cleanup_free_ char *args = NULL;
        va_list ap;
        va_start(ap, fmt);
        assert_true(vasprintf(&args, fmt, ap) > 0);
        va_end(ap);
        return submit(tool, args, owner);
}

/* One turn of the loop: what was submitted is taken (the sessions' no-op comes back). */
static void turn(void) {
        assert_int_equal(ring_run_once(ring, 2 * SEC), 0);
}

static const char *key_of(int id) {
        static char key[16];
        snprintf(key, sizeof(key), "%d", id);
        return key;
}

/* The reply i as JSON (output may hold NULs); asserts who it went to. */
static json_t *reply_json(size_t i, const void *owner) {
        assert_true(i < n_replies);
        assert_ptr_equal(replies[i].owner, owner);
        if (!replies[i].text)
                fail_msg("reply %zu: not answered (cancelled)", i);
        json_error_t e;
        json_t *j = json_loads(replies[i].text, JSON_ALLOW_NUL, &e);
        if (!j)
                fail_msg("reply %zu: %s: %s", i, e.text, replies[i].text);
        return j;
}

/* Reply i is a result (not a tool error): its structuredContent, a new reference. */
static json_t *reply_sc(size_t i, const void *owner) {
        _cleanup_(json_decrefp) json_t *j = reply_json(i, owner);
        json_t *result = json_object_get(j, "result");
        if (json_is_true(json_object_get(result, "isError")))
                fail_msg("reply %zu is a tool error: %s", i, replies[i].text);
        json_t *sc = json_object_get(result, "structuredContent");
        assert_true(json_is_object(sc));
        return json_incref(sc);
}

/* Reply i is a tool error saying exactly text. */
static void expect_tool_error(size_t i, const void *owner, const char *text) {
        _cleanup_(json_decrefp) json_t *j = reply_json(i, owner);
        json_t *result = json_object_get(j, "result");
        assert_true(json_is_true(json_object_get(result, "isError")));
        const char *got = json_string_value(json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
        assert_non_null(got);
        assert_string_equal(got, text);
}

static void expect_no_answer(size_t i, const void *owner) {
        assert_true(i < n_replies);
        assert_ptr_equal(replies[i].owner, owner);
        assert_null(replies[i].text);
}

static const char *sc_str(json_t *sc, const char *key) {
        json_t *v = json_object_get(sc, key);
        if (!json_is_string(v))
                fail_msg("'%s' is not a string", key);
        return json_string_value(v);
}

static json_int_t sc_int(json_t *sc, const char *key) {
        json_t *v = json_object_get(sc, key);
        if (!json_is_integer(v))
                fail_msg("'%s' is not an integer", key);
        return json_integer_value(v);
}

static bool sc_bool(json_t *sc, const char *key) {
        json_t *v = json_object_get(sc, key);
        if (!json_is_boolean(v))
                fail_msg("'%s' is not a boolean", key);
        return json_is_true(v);
}

/* A stream of a result is exactly these bytes (NULs included). */
static void expect_stream(json_t *sc, const char *key, const char *data, size_t len) {
        json_t *v = json_object_get(sc, key);
        assert_true(json_is_string(v));
        if (json_string_length(v) != len || memcmp(json_string_value(v), data, len) != 0)
                fail_msg("%s is \"%s\" (%zu bytes), not the %zu expected", key, json_string_value(v),
                         json_string_length(v), len);
}
#define EXPECT_STREAM(sc, key, lit) expect_stream(sc, key, lit, sizeof(lit) - 1)

/* The records written so far hold this (a session's close: " REASON=timeout "). */
static bool record_has(const char *text) {
        return metrics_log && strstr(metrics_log, text);
}

/* ---- the launcher's side of the protocol ---------------------------------------------------- */

/* launch.py's ready line: the text, a newline, spaces up to exactly 256 bytes (one write). */
static void deliver_ready(FakeProc *f, const char *text) {
        char line[256];
        memset(line, ' ', sizeof(line));
        memcpy(line, text, strlen(text));
        line[strlen(text)] = '\n';
        fake_proc_output(f, 0, line, sizeof(line));
}

static void usage_report(FakeProc *f, uint64_t utime, uint64_t stime, uint64_t maxrss) {
        fake_proc_report(f, &(SandboxReport) { .kind = SANDBOX_REPORT_USAGE, .value = 1, .utime_usec = utime,
                                               .stime_usec = stime, .maxrss_bytes = maxrss });
}

/* A record of a message (spawn.h's run_launcher_message()): 4-byte and 8-byte little-endian
 * lengths, the name, the data. Returns the offset after it, or 0 when none is left. */
static size_t message_record(const FakeWrite *w, size_t off, const char **name, size_t *name_len,
                             const char **data, size_t *data_len) {
        if (off + 12 > w->len)
                return 0;
        uint64_t nl = 0, dl = 0;
        for (int i = 0; i < 4; i++)
                nl |= (uint64_t) (unsigned char) w->data[off + i] << (8 * i);
        for (int i = 0; i < 8; i++)
                dl |= (uint64_t) (unsigned char) w->data[off + 4 + i] << (8 * i);
        assert_true(off + 12 + nl + dl <= w->len);
        *name = w->data + off + 12;
        *name_len = nl;
        *data = *name + nl;
        *data_len = dl;
        return off + 12 + nl + dl;
}

/* A call's message: its length is the whole write's (no tail), its first record is named by the
 * nonce (32 lowercase hex digits, copied to nonce) and holds the code; returns how many records. */
static size_t parse_message(const FakeWrite *w, char nonce[static NONCE_HEX + 1], const char *code) {
        assert_true(w->len >= 8);
        uint64_t body = 0;
        for (int i = 0; i < 8; i++)
                body |= (uint64_t) (unsigned char) w->data[i] << (8 * i);
        assert_int_equal(body, w->len - 8);
        assert_false(w->close_after); /* stdin stays open: the session's next call comes on it */
        const char *name, *data;
        size_t nl, dl, n;
        size_t off = message_record(w, 8, &name, &nl, &data, &dl);
        assert_true(off > 0);
        assert_int_equal(nl, NONCE_HEX);
        for (size_t i = 0; i < NONCE_HEX; i++)
                assert_non_null(strchr("0123456789abcdef", name[i]));
        memcpy(nonce, name, NONCE_HEX);
        nonce[NONCE_HEX] = '\0';
        assert_int_equal(dl, strlen(code));
        assert_memory_equal(data, code, dl);
        for (n = 1; off < w->len; n++)
                off = message_record(w, off, &name, &nl, &data, &dl);
        return n;
}

/* launch.py's end of a call: "\0MCPEXECD-END <nonce> <status>\n" (endline.h). */
static size_t end_line(char *buf, size_t size, const char *nonce, int status) {
        int n = snprintf(buf, size, "%cMCPEXECD-END %s %d\n", 0, nonce, status);
        assert_true(n > 0 && (size_t) n < size);
        return (size_t) n;
}

/* The launcher ends the call: its end line on stderr, then on stdout. */
static void end_call(FakeProc *f, const char *nonce, int status) {
        char line[128];
        size_t n = end_line(line, sizeof(line), nonce, status);
        fake_proc_output(f, 1, line, (ssize_t) n);
        fake_proc_output(f, 0, line, (ssize_t) n);
}

/* ---- sessions ------------------------------------------------------------------------------- */

/* Opens a session cold (session_open with args, placed at once): its sandbox starts, Python says it
 * is ready, and in rlimit mode the init reports the base usage. Returns its proc; its handle in
 * handle. */
static FakeProc *open_session(const char *args, char handle[static HANDLE_SIZE]) {
        size_t r = n_replies, i = n_fake_procs;
        submit("session_open", args ?: "{}", &owner_a);
        turn();
        assert_int_equal(n_fake_procs, i + 1);
        FakeProc *f = &fake_procs[i];
        assert_true(f->released);
        assert_int_equal(n_replies, r);
        f->usage = base_usage;
        fake_proc_report(f, &(SandboxReport) { .kind = SANDBOX_REPORT_STARTED, .value = 2 });
        deliver_ready(f, READY);
        if (!f->cgroup)
                usage_report(f, BASE_UTIME, BASE_STIME, 9u << 20);
        assert_int_equal(n_replies, r + 1);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(r, &owner_a);
        snprintf(handle, HANDLE_SIZE, "%s", sc_str(sc, "session"));
        return f;
}

/* Submits exec of code (no quotes in it) in the session, with more arguments (",\"timeout_s\":5"),
 * and takes it on the next turn: the session is thawed and its message written, whole. Returns the
 * call's id; its nonce in nonce. */
static int start_call(FakeProc *f, const char *handle, const char *code, const char *more,
                      char nonce[static NONCE_HEX + 1]) {
        size_t w = f->n_writes, r = n_replies;
        int id = submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"%s\"%s}", handle, code, more ?: "");
        turn();
        assert_int_equal(n_replies, r);
        assert_int_equal(f->n_writes, w + 1);
        assert_false(f->frozen);
        assert_int_equal(parse_message(&f->writes[w], nonce, code), 1);
        fake_proc_written(f, 0);
        return id;
}

/* Kills what is left of f's sandbox as the kernel would (every operation back) and checks the
 * session let go of it: the proc is freed. */
static void reap(FakeProc *f) {
        fake_proc_drain(f);
        assert_null(f->proc);
}

/* ---- opening -------------------------------------------------------------------------------- */

/* A cold open: a sandbox of its own running the session's launcher, released at once (placed at
 * once), answered when the ready line is read whole; frozen from then on; its base usage read. */
static void test_open_cold(void **state) {
        fake_proc_config.cgroup = true;
        int id = submit("session_open", "{}", &owner_a);
        /* Nothing happens inside submit: the call waits for the loop. */
        assert_int_equal(n_fake_procs, 0);
        assert_true(pysessions_route_vtable.has(ps, &owner_a, key_of(id)));
        assert_true(pysessions_busy(ps));
        turn();

        assert_int_equal(n_fake_procs, 1);
        FakeProc *f = &fake_procs[0];
        assert_int_equal(f->backstop_s, pysession_backstop_s(LIFETIME_S, MAX_TIMEOUT_S));
        assert_string_equal(f->python, PY3);
        assert_string_equal(f->env_dir, "");
        assert_string_equal(f->script, EXEC_LAUNCHER_NAME);
        /* The staging directory is the state dir's, and holds the launcher in session mode. */
        char path[600];
        snprintf(path, sizeof(path), "%s/session-%s", state_dir, f->id);
        assert_string_equal(f->staging, path);
        snprintf(path, sizeof(path), "%s/session-%s/%s", state_dir, f->id, EXEC_LAUNCHER_NAME);
        _cleanup_free_ char *launcher = NULL;
        FILE *lf = fopen(path, "re");
        assert_non_null(lf);
        size_t ll = 0;
        assert_true(getdelim(&launcher, &ll, '\0', lf) > 0);
        fclose(lf);
        assert_true(strncmp(launcher, "_WARM = ()\n_SESSION = True\n", 27) == 0);

        assert_true(fake_proc_log_has(f, "new staging spawn watch_exit timer_arm place release read0 read1 watch_reports"));
        assert_true(f->spawned && f->released && f->watching_exit && f->watching_reports);
        assert_int_equal(f->timer_usec, OPEN_TIMEOUT_USEC);
        /* stdout carries exactly the ready line first: no more is read. */
        assert_true(f->reading[0]);
        assert_int_equal(f->read_max[0], 256);
        assert_true(f->reading[1]);
        assert_int_equal(n_replies, 0);
        assert_int_equal(pysessions_count(ps), 1);
        assert_true(pysessions_busy(ps));
        assert_true(pysessions_route_vtable.has(ps, &owner_a, key_of(id)));

        /* Python runs: the init has copied the staging directory, which goes. */
        fake_proc_report(f, &(SandboxReport) { .kind = SANDBOX_REPORT_STARTED, .value = 2 });
        assert_string_equal(f->staging, "");
        assert_true(f->watching_reports);

        /* The ready line in two reads: the second asks for the rest of its 256 bytes only. */
        f->usage = (CgroupUsage) { .cpu_user_usec = 1000, .cpu_system_usec = 500, .memory_current_bytes = 12345678 };
        char line[256];
        memset(line, ' ', sizeof(line));
        memcpy(line, READY "\n", strlen(READY) + 1);
        fake_proc_log_clear(f);
        fake_proc_output(f, 0, line, 100);
        assert_int_equal(n_replies, 0);
        assert_true(f->reading[0]);
        assert_int_equal(f->read_max[0], 156);
        fake_proc_output(f, 0, line + 100, 156);

        assert_int_equal(n_replies, 1);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(0, &owner_a);
        const char *handle = sc_str(sc, "session");
        assert_int_equal(strlen(handle), NONCE_HEX); /* no instance tag: 128 random bits, hex */
        assert_int_equal(strspn(handle, "0123456789abcdef"), NONCE_HEX);
        assert_int_equal(sc_int(sc, "idle_timeout_s"), IDLE_S);
        json_int_t expires = sc_int(sc, "expires_in_s");
        assert_true(expires == LIFETIME_S || expires == LIFETIME_S - 1);
        assert_string_equal(sc_str(sc, "limits"), "cgroup");
        assert_false(sc_bool(sc, "warm"));
        assert_int_equal(sc_int(sc, "memory_at_start_bytes"), 12345678); /* memory.current, not the line's RSS */
        assert_int_equal(json_object_size(sc), 6);

        /* Frozen until its first call, its base read once frozen; its open timer gone; stdout not
         * read between calls. */
        assert_true(f->frozen);
        assert_int_equal(f->freezes, 1);
        assert_true(fake_proc_log_has(f, "freeze read_usage timer_clear"));
        assert_int_equal(f->timer_usec, 0);
        assert_false(f->reading[0]);
        assert_false(pysessions_busy(ps));
        assert_false(pysessions_route_vtable.has(ps, &owner_a, key_of(id)));
        assert_int_equal(pysessions_count(ps), 1);
        assert_true(record_has(" WARM=0"));
}

/* rlimit mode: the memory at start is the ready line's RSS (no code of the caller's has run yet);
 * the base of the first call's CPU is asked of the init once frozen. */
static void test_open_rlimit(void **state) {
        submit("session_open", "{}", &owner_a);
        turn();
        FakeProc *f = &fake_procs[0];
        deliver_ready(f, READY);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(0, &owner_a);
        assert_string_equal(sc_str(sc, "limits"), "rlimit");
        assert_int_equal(sc_int(sc, "memory_at_start_bytes"), READY_RSS);
        assert_true(f->frozen);
        assert_int_equal(f->usage_asked, 1);
        assert_true(fake_proc_log_has(f, "freeze ask_usage"));
        assert_true(f->watching_reports);
        /* No STARTED report came: the ready line says Python has the launcher, its copy goes. */
        assert_string_equal(f->staging, "");
}

/* systemd makes the scope: nothing is released before it is done; a failed placement answers the
 * open and the sandbox is killed. */
static void test_open_placed_later(void **state) {
        fake_proc_config.place = 0;
        submit("session_open", "{}", &owner_a);
        submit("session_open", "{}", &owner_b);
        turn();
        assert_int_equal(n_fake_procs, 2);
        for (size_t i = 0; i < 2; i++) {
                assert_true(fake_procs[i].placing);
                assert_false(fake_procs[i].released);
                assert_false(fake_procs[i].reading[0] || fake_procs[i].reading[1]);
        }
        assert_int_equal(pysessions_count(ps), 2);

        fake_proc_placed(&fake_procs[0], 0, NULL);
        assert_true(fake_procs[0].released);
        assert_true(fake_procs[0].reading[0] && fake_procs[0].reading[1] && fake_procs[0].watching_reports);
        deliver_ready(&fake_procs[0], READY);
        usage_report(&fake_procs[0], BASE_UTIME, BASE_STIME, 0);
        json_decref(reply_sc(0, &owner_a));

        fake_proc_placed(&fake_procs[1], -EIO, "systemd said no");
        assert_int_equal(n_replies, 2);
        expect_tool_error(1, &owner_b, "cannot open a Python session: systemd said no");
        assert_false(fake_procs[1].released);
        assert_true(fake_procs[1].init_killed);
        assert_int_equal(pysessions_count(ps), 1);
        assert_false(record_has(" REASON=")); /* never opened: no close record */
        reap(&fake_procs[1]);
}

/* What can go wrong before the ready line: each answers the open with a tool error, and the sandbox
 * is gone. */
static void test_open_failures(void **state) {
        /* The cgroup cannot be made, or the sandbox cannot start: nothing to kill. */
        fake_proc_config.new_error = -ENOENT;
        submit("session_open", "{}", &owner_a);
        turn();
        expect_tool_error(0, &owner_a, "cannot create the session's cgroup (none backend): No such file or directory");
        fake_proc_config.new_error = 0;

        fake_proc_config.spawn_error = -EAGAIN;
        submit("session_open", "{}", &owner_a);
        turn();
        expect_tool_error(1, &owner_a, "cannot start the session's sandbox: Resource temporarily unavailable");
        assert_null(fake_procs[0].proc); /* freed at once: nothing was on the ring */
        fake_proc_config.spawn_error = 0;

        /* The placement refused at once. */
        fake_proc_config.place = -EIO;
        submit("session_open", "{}", &owner_a);
        turn();
        expect_tool_error(2, &owner_a, "cannot open a Python session: fake: the scope could not be made");
        assert_true(fake_procs[1].init_killed);
        reap(&fake_procs[1]);
        fake_proc_config.place = 1;

        /* The interpreter exits or is killed, the sandbox fails, the line is not a ready line, nothing
         * comes in time, the session cannot be frozen. */
        static const char *const whys[] = {
                "cannot open a Python session: the interpreter exited at its start (status 1)",
                "cannot open a Python session: the interpreter was killed by SIGSEGV at its start",
                "cannot open a Python session: the sandbox could not start the interpreter",
                "cannot open a Python session: the session's interpreter did not start",
                "cannot open a Python session: the interpreter did not become ready in time",
                "cannot open a Python session: cannot freeze the session between its calls",
        };
        for (size_t c = 0; c < ELEMENTSOF(whys); c++) {
                size_t r = n_replies;
                submit("session_open", "{}", &owner_a);
                turn();
                FakeProc *f = &fake_procs[n_fake_procs - 1];
                switch (c) {
                case 0:
                        fake_proc_report(f, &(SandboxReport) { .kind = SANDBOX_REPORT_EXITED, .value = 1 << 8 });
                        break;
                case 1:
                        fake_proc_report(f, &(SandboxReport) { .kind = SANDBOX_REPORT_EXITED, .value = SIGSEGV });
                        break;
                case 2:
                        fake_proc_report(f, &(SandboxReport) { .kind = SANDBOX_REPORT_FAILED, .value = ENOENT,
                                                               .detail = "execve /usr/bin/python3" });
                        break;
                case 3:
                        deliver_ready(f, "Traceback (most recent call last):");
                        break;
                case 4:
                        fake_proc_timer(f);
                        break;
                case 5:
                        fake_proc_config.freeze_error = -EIO;
                        deliver_ready(f, READY);
                        fake_proc_config.freeze_error = 0;
                        break;
                }
                assert_int_equal(n_replies, r + 1);
                expect_tool_error(r, &owner_a, whys[c]);
                assert_int_equal(pysessions_count(ps), 0);
                assert_true(f->init_killed);
                reap(f);
        }
        assert_false(pysessions_busy(ps));
}

/* ---- calls ---------------------------------------------------------------------------------- */

/* A call in cgroup mode: thawed, its message written, its deadline armed; its output up to the end
 * lines; frozen again at once; its CPU the cgroup's usage at the end less that at the last freeze. */
static void test_call_cgroup(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        fake_proc_log_clear(f);

        start_call(f, handle, "print(1)", ",\"timeout_s\":7", nonce);
        /* Thawed before the code goes, stdout read again, the deadline from the message on. */
        assert_true(fake_proc_log_has(f, "thaw read0 write timer_arm"));
        assert_int_equal(f->thaws, 1);
        assert_int_equal(f->timer_usec, 7u * SEC);
        assert_true(f->reading[0] && f->reading[1]);
        assert_int_equal(f->read_max[0], 64 * 1024);
        assert_true(pysessions_busy(ps));
        assert_int_equal(sched.n_running, 1); /* a busy session holds a slot */

        fake_proc_output(f, 0, "1\n", 2);
        fake_proc_output(f, 1, "warn\n", 5);
        assert_true(f->reading[0] && f->reading[1]);
        f->usage = (CgroupUsage) { .cpu_user_usec = 4000, .cpu_system_usec = 1300, .memory_current_bytes = 9u << 20,
                                   .account = base_usage.account };
        f->usage.account.v[EXEC_ACCOUNT_CPU_PRESSURE_SOME_US] += 2500;
        f->usage.account.v[EXEC_ACCOUNT_PIDS_PEAK] = 6;
        f->stats = (CgroupStats) { .memory_peak_bytes = 20000000 };
        fake_proc_log_clear(f);
        char line[128];
        size_t n = end_line(line, sizeof(line), nonce, 3);
        fake_proc_output(f, 1, line, (ssize_t) n);
        assert_int_equal(n_replies, 1); /* one end line is not the end */
        assert_false(f->frozen);
        fake_proc_output(f, 0, line, (ssize_t) n);

        assert_int_equal(n_replies, 2);
        assert_true(f->frozen);
        assert_int_equal(f->freezes, 2);
        /* The timer goes, the session is frozen, then its usage is read (nothing runs meanwhile). */
        assert_true(fake_proc_log_has(f, "timer_clear freeze read_usage"));
        assert_int_equal(f->timer_usec, 0);
        assert_false(f->reading[0]); /* not read before the next call */
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        EXPECT_STREAM(sc, "stdout", "1\n");
        EXPECT_STREAM(sc, "stderr", "warn\n");
        assert_int_equal(sc_int(sc, "exit_code"), 3); /* the launcher's status */
        assert_false(sc_bool(sc, "timed_out"));
        assert_true(json_is_null(json_object_get(sc, "signal")));
        assert_string_equal(sc_str(sc, "session"), handle);
        assert_true(sc_bool(sc, "session_alive"));
        assert_int_equal(sc_int(sc, "session_calls"), 1);
        assert_int_equal(sc_int(sc, "cpu_user_us"), 3000);
        assert_int_equal(sc_int(sc, "cpu_system_us"), 800);
        assert_int_equal(sc_int(sc, "session_cpu_user_us"), 4000); /* since the open, start included */
        assert_int_equal(sc_int(sc, "session_cpu_system_us"), 1300);
        assert_int_equal(sc_int(sc, "memory_peak_bytes"), 20000000);
        assert_string_equal(sc_str(sc, "memory_peak_scope"), "session");
        assert_string_equal(sc_str(sc, "limits"), "cgroup");
        /* The kernel's account as its CPU: the usage at the end less that at the last freeze; the
         * peak is the session's; what the kernel did not give, null. */
        assert_int_equal(sc_int(sc, "cpu_pressure_some_us"), 2500);
        assert_int_equal(sc_int(sc, "memory_pressure_some_us"), 0);
        assert_int_equal(sc_int(sc, "pids_peak"), 6);
        assert_true(json_is_null(json_object_get(sc, "io_read_bytes")));
        assert_true(json_is_null(json_object_get(sc, "io_pressure_some_us")));
        assert_false(pysessions_busy(ps));
        assert_int_equal(sched.n_running, 0);

        /* Between calls (frozen; here a thread the code left, had it run) output is no call's, and
         * the pipe is not read again before the next call. */
        assert_true(f->reading[1]);
        fake_proc_output(f, 1, "ghost\n", 6);
        assert_false(f->reading[1]);
        assert_int_equal(n_replies, 2);

        /* The next call's base is this one's end. */
        start_call(f, handle, "x = 2", NULL, nonce);
        assert_true(f->reading[0] && f->reading[1]);
        assert_int_equal(f->timer_usec, 30u * SEC); /* the default timeout */
        f->usage.cpu_user_usec = 4500;
        f->usage.cpu_system_usec = 1310;
        end_call(f, nonce, 0);
        _cleanup_(json_decrefp) json_t *sc2 = reply_sc(2, &owner_a);
        EXPECT_STREAM(sc2, "stdout", "");
        EXPECT_STREAM(sc2, "stderr", "");
        assert_int_equal(sc_int(sc2, "exit_code"), 0);
        assert_int_equal(sc_int(sc2, "cpu_user_us"), 500);
        assert_int_equal(sc_int(sc2, "cpu_system_us"), 10);
        assert_int_equal(sc_int(sc2, "session_calls"), 2);
        assert_int_equal(sc_int(sc2, "session_cpu_user_us"), 4500);
}

/* Figures that no wall time allows (the kernel's never are, forged ones may be) are bounded: the
 * call's CPU at most its wall time on every CPU (run_end_bound()), the split kept. */
static void test_call_cpu_bounded(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "pass", NULL, nonce);
        f->usage.cpu_user_usec = base_usage.cpu_user_usec + 2000000000000ull;
        f->usage.cpu_system_usec = base_usage.cpu_system_usec + 1000000000000ull;
        end_call(f, nonce, 0);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        long cpus = sysconf(_SC_NPROCESSORS_CONF);
        assert_true(cpus > 0);
        /* run_end_bound(): (wall + 50 ms) on every CPU; the wall time is duration_ms, floored. */
        uint64_t d = (uint64_t) sc_int(sc, "duration_ms");
        uint64_t lo = (d * 1000 + 50000) * (uint64_t) cpus, hi = ((d + 1) * 1000 + 50000) * (uint64_t) cpus;
        uint64_t user = (uint64_t) sc_int(sc, "cpu_user_us"), sys = (uint64_t) sc_int(sc, "cpu_system_us");
        assert_true(user + sys >= lo && user + sys <= hi);
        assert_true(llabs((long long) user - 2 * (long long) sys) <= 3); /* 2:1, as reported */
        /* The session's totals are bounded by its age alike. */
        assert_true((uint64_t) sc_int(sc, "session_cpu_user_us") < 1000000000000ull);
}

/* rlimit mode: the call's CPU is the init's USAGE report asked once the session is frozen at its
 * end, less the report asked at the ready line; the call is answered when the report comes. */
static void test_call_rlimit(void **state) {
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle); /* base: BASE_UTIME, BASE_STIME */
        assert_int_equal(f->usage_asked, 1);
        start_call(f, handle, "print(1)", NULL, nonce);
        fake_proc_output(f, 0, "1\n", 2);
        fake_proc_log_clear(f);
        end_call(f, nonce, 0);
        assert_int_equal(n_replies, 1); /* waits for the init's figures */
        assert_true(f->frozen);
        assert_int_equal(f->usage_asked, 2);
        assert_true(fake_proc_log_has(f, "freeze ask_usage"));
        assert_true(pysessions_busy(ps));
        usage_report(f, BASE_UTIME + 3000, BASE_STIME + 300, 30000000);
        assert_int_equal(n_replies, 2);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        EXPECT_STREAM(sc, "stdout", "1\n");
        assert_int_equal(sc_int(sc, "cpu_user_us"), 3000);
        assert_int_equal(sc_int(sc, "cpu_system_us"), 300);
        assert_int_equal(sc_int(sc, "memory_peak_bytes"), 30000000); /* the largest process's */
        assert_string_equal(sc_str(sc, "limits"), "rlimit");
        assert_true(sc_bool(sc, "session_alive"));
        assert_true(f->watching_reports);
        assert_false(pysessions_busy(ps));
}

/* The code can print an end line: with another nonce it is output like any other; with the call's
 * it ends the call early (only the status is taken from it). What follows the end line in the same
 * read is no call's: not this one's, not the next's. */
static void test_forged_end_line(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "forge()", NULL, nonce);

        char other[NONCE_HEX + 1];
        memcpy(other, nonce, sizeof(other));
        other[0] = other[0] == 'a' ? 'b' : 'a';
        char buf[256], line[128];
        size_t n = 0;
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "a");
        n += end_line(buf + n, sizeof(buf) - n, other, 0);
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "b\n");
        fake_proc_output(f, 0, buf, (ssize_t) n);
        size_t forged = n;
        fake_proc_output(f, 1, line, (ssize_t) end_line(line, sizeof(line), nonce, 0));
        assert_int_equal(n_replies, 1);

        /* The real end line with output before it and bytes after it, in one read. */
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "c\n");
        n += end_line(buf + n, sizeof(buf) - n, nonce, 5);
        memcpy(buf + n, "junk", 4);
        fake_proc_output(f, 0, buf + forged, (ssize_t) (n + 4 - forged));
        assert_int_equal(n_replies, 2);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        size_t want = forged + 2; /* "a", the forged line, "b\n", "c\n" */
        expect_stream(sc, "stdout", buf, want);
        assert_int_equal(sc_int(sc, "exit_code"), 5);

        start_call(f, handle, "print(2)", NULL, nonce);
        n = (size_t) snprintf(buf, sizeof(buf), "2\n");
        n += end_line(buf + n, sizeof(buf) - n, nonce, 0);
        fake_proc_output(f, 0, buf, (ssize_t) n);
        fake_proc_output(f, 1, buf + 2, (ssize_t) (n - 2));
        _cleanup_(json_decrefp) json_t *sc2 = reply_sc(2, &owner_a);
        EXPECT_STREAM(sc2, "stdout", "2\n");
        EXPECT_STREAM(sc2, "stderr", "");
}

/* stdin and input files travel in the call's message: stdin first, under a name no file can have. */
static void test_call_stdin_and_files(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        submitf("exec", &owner_a,
                "{\"session\":\"%s\",\"code\":\"import sys\",\"stdin\":\"in\",\"files\":[{\"name\":\"d/a.txt\","
                "\"content\":\"A\"}]}", handle);
        turn();
        assert_int_equal(f->n_writes, 1);
        assert_int_equal(parse_message(&f->writes[0], nonce, "import sys"), 3);
        const char *name, *data;
        size_t nl, dl;
        size_t off = message_record(&f->writes[0], 8, &name, &nl, &data, &dl);
        off = message_record(&f->writes[0], off, &name, &nl, &data, &dl);
        assert_int_equal(nl, strlen("/dev/stdin"));
        assert_memory_equal(name, "/dev/stdin", nl);
        assert_int_equal(dl, 2);
        assert_memory_equal(data, "in", 2);
        off = message_record(&f->writes[0], off, &name, &nl, &data, &dl);
        assert_int_equal(nl, strlen("d/a.txt"));
        assert_memory_equal(name, "d/a.txt", nl);
        assert_int_equal(dl, 1);
        assert_memory_equal(data, "A", 1);
        fake_proc_written(f, 0);
        end_call(f, nonce, 0);
        json_decref(reply_sc(1, &owner_a));
}

/* One call at a time; every handle that names no session of ours gets the one answer, whatever it
 * is (garbage, never made, closed); a handle of another instance says which instance made it. */
static void test_busy_and_unknown_handles(void **state) {
        PySessionsConfig config = config_default();
        config.tag = "a";
        sessions_restart(&config);
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        assert_int_equal(strlen(handle), 2 + NONCE_HEX);
        assert_true(strncmp(handle, "a-", 2) == 0);
        assert_int_equal(strspn(handle + 2, "0123456789abcdef"), NONCE_HEX);

        start_call(f, handle, "sleep()", NULL, nonce);
        submitf("exec", &owner_b, "{\"session\":\"%s\",\"code\":\"x\"}", handle);
        turn();
        assert_int_equal(n_replies, 2);
        expect_tool_error(1, &owner_b, BUSY);
        assert_int_equal(f->n_writes, 1); /* nothing of it reached the session */

        submit("exec", "{\"session\":\"nope\",\"code\":\"x\"}", &owner_b);
        submit("exec", "{\"session\":\"a-00000000000000000000000000000000\",\"code\":\"x\"}", &owner_b);
        submit("session_close", "{\"session\":\"nope\"}", &owner_b);
        turn();
        expect_tool_error(2, &owner_b, UNKNOWN);
        expect_tool_error(3, &owner_b, UNKNOWN);
        expect_tool_error(4, &owner_b, UNKNOWN);

        /* Another instance's tag: its instance is gone, or the load balancer read too little. */
        static const char other[] = "b-0123456789abcdef0123456789abcdef";
        submitf("exec", &owner_b, "{\"session\":\"%s\",\"code\":\"x\"}", other);
        int id = ++next_id;
        McpCall *c = call_of(id, "execute_python", "{\"session\":\"b-0123456789abcdef0123456789abcdef\",\"script\":\"x\"}");
        mcp_call_set_lb_body_read(c, 16384, 100000);
        assert_int_equal(pysessions_route_vtable.submit(ps, c, &owner_b, on_reply), 0);
        turn();
        expect_tool_error(5, &owner_b, "unknown session: the handle was made by instance b, which is gone or "
                                       "unreachable, and its Python sessions with it; open a new one with session_open");
        expect_tool_error(6, &owner_b, "unknown session here: the handle was made by instance b, but the load "
                                       "balancer read only the first 16384 of this request's 100000 bytes, did not "
                                       "see the handle, and sent the call to another instance: raise its buffer "
                                       "(HAProxy's tune.bufsize) above the largest request, or send less in one call");

        end_call(f, nonce, 0);
        json_decref(reply_sc(7, &owner_a));

        /* Closed: the same answer as a handle never made. */
        submitf("session_close", &owner_a, "{\"session\":\"%s\"}", handle);
        turn();
        json_decref(reply_sc(8, &owner_a));
        submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"x\"}", handle);
        submitf("session_close", &owner_a, "{\"session\":\"%s\"}", handle);
        turn();
        expect_tool_error(9, &owner_a, UNKNOWN);
        expect_tool_error(10, &owner_a, UNKNOWN);
        reap(f);
}

/* A session's interpreter is chosen at its open: a call naming another is refused, one naming the
 * same runs; dependencies are session_open's alone. */
static void test_call_arguments(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        submitf("execute_python", &owner_a, "{\"session\":\"%s\",\"script\":\"x\",\"dependencies\":[\"numpy\"]}", handle);
        submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"x\",\"python\":\"pypy3\"}", handle);
        turn();
        expect_tool_error(1, &owner_a, "invalid argument 'dependencies': a session's dependencies are given to "
                                       "session_open (installed once, for the session's whole life); open a session "
                                       "with them, or call without the session");
        expect_tool_error(2, &owner_a, "invalid argument 'python': the session runs python3");
        assert_int_equal(f->n_writes, 0);
        assert_true(f->frozen);

        /* The same interpreter named, through execute_python: its script is the call's code. */
        submitf("execute_python", &owner_a, "{\"session\":\"%s\",\"script\":\"print(3)\",\"python\":\"python3\","
                "\"timeout_seconds\":9}", handle);
        turn();
        assert_int_equal(f->n_writes, 1);
        parse_message(&f->writes[0], nonce, "print(3)");
        assert_int_equal(f->timer_usec, 9u * SEC);
        fake_proc_written(f, 0);
        end_call(f, nonce, 0);
        json_decref(reply_sc(3, &owner_a));
}

/* A busy session holds one of MCP_EXEC_MAX_CONCURRENT's slots: with none free its call waits,
 * frozen, nothing written; it starts when one frees; cancelled while it waits it never reaches the
 * session. */
static void test_call_waits_for_slot(void **state) {
        scheduler_done(&sched);
        scheduler_setup(1);
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        /* A run holds the one slot. */
        assert_int_equal(scheduler_submit(&sched, fake_call(server, 100, "exec", "{\"code\":\"run\"}"), &owner_b, on_reply), 0);
        assert_int_equal(n_fakes, 1);

        int id = submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"waits\"}", handle);
        turn();
        assert_int_equal(f->n_writes, 0);
        assert_true(f->frozen);
        assert_int_equal(sched.n_queued, 1);
        assert_true(pysessions_busy(ps));
        /* Busy for a second call already. */
        submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"x\"}", handle);
        turn();
        expect_tool_error(1, &owner_a, BUSY);

        /* Cancelled while waiting: the slot's place goes, the session is idle again. */
        assert_true(pysessions_route_vtable.cancel(ps, &owner_a, key_of(id)));
        expect_no_answer(2, &owner_a);
        assert_false(pysessions_route_vtable.has(ps, &owner_a, key_of(id)));
        assert_int_equal(sched.n_queued, 0);
        assert_int_equal(f->interrupts, 0);
        assert_false(pysessions_busy(ps));

        submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"go\"}", handle);
        turn();
        assert_int_equal(f->n_writes, 0);
        /* Output before the call starts (the stderr read of the open is still on the ring) is not
         * the call's (longer than what a scan holds back as a possible end line). */
        char ghost[100];
        memset(ghost, 'g', sizeof(ghost));
        fake_proc_output(f, 1, ghost, sizeof(ghost));
        fake_end(0); /* the run ends: the call gets its slot */
        assert_int_equal(n_replies, 4);
        json_decref(reply_sc(3, &owner_b)); /* the run's answer */
        assert_int_equal(f->n_writes, 1);
        assert_false(f->frozen);
        parse_message(&f->writes[0], nonce, "go");
        fake_proc_written(f, 0);
        end_call(f, nonce, 0);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(4, &owner_a);
        EXPECT_STREAM(sc, "stderr", "");
        assert_int_equal(sc_int(sc, "session_calls"), 1); /* the cancelled one never ran */
        assert_int_equal(sched.n_running, 0);
}

/* ---- deadlines and deaths ------------------------------------------------------------------- */

/* The deadline interrupts the code (SIGINT through the init); an end line within the grace: the
 * session lives, the call timed out (-1). */
static void test_deadline_interrupt(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "loop()", ",\"timeout_s\":5", nonce);
        assert_int_equal(f->timer_usec, 5u * SEC);
        fake_proc_timer(f);
        assert_int_equal(f->interrupts, 1);
        assert_int_equal(f->timer_usec, GRACE_USEC);
        assert_int_equal(n_replies, 1);
        assert_int_equal(f->kills_payload, 0);

        fake_proc_output(f, 1, "KeyboardInterrupt\n", 18);
        end_call(f, nonce, 1);
        assert_int_equal(n_replies, 2);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        assert_true(sc_bool(sc, "timed_out"));
        assert_int_equal(sc_int(sc, "exit_code"), -1);
        assert_true(json_is_null(json_object_get(sc, "signal")));
        assert_true(sc_bool(sc, "session_alive"));
        EXPECT_STREAM(sc, "stderr", "KeyboardInterrupt\n");
        assert_int_equal(f->timer_usec, 0);
        assert_true(f->frozen);

        /* It lives: the next call runs, with its own deadline and no grace left over. */
        start_call(f, handle, "ok()", NULL, nonce);
        assert_int_equal(f->timer_usec, 30u * SEC);
        end_call(f, nonce, 0);
        _cleanup_(json_decrefp) json_t *sc2 = reply_sc(2, &owner_a);
        assert_false(sc_bool(sc2, "timed_out"));
        assert_int_equal(sc_int(sc2, "exit_code"), 0);
        assert_int_equal(sc_int(sc2, "session_calls"), 2);
}

/* No end line within the grace: the session is killed (payload/'s cgroup.kill and the init's
 * SIGKILL); the call is answered with what it printed once both pipes are at EOF, bytes held back as
 * a possible end line included; the handle is dead. */
static void test_deadline_kill(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "loop()", ",\"timeout_s\":5", nonce);
        fake_proc_output(f, 0, "partial\n", 8);
        fake_proc_output(f, 0, "x\0MCPEXECD-", 11); /* may become an end line: held back */
        fake_proc_timer(f);
        fake_proc_timer(f);
        assert_int_equal(f->kills_payload, 1);
        assert_int_equal(f->kills_init, 1);
        assert_int_equal(pysessions_count(ps), 0);
        assert_int_equal(n_replies, 1);
        assert_true(record_has(" REASON=timeout "));
        /* Its output is read to EOF: the reads stay. */
        assert_true(f->reading[0] && f->reading[1]);
        fake_proc_output(f, 1, "late\n", 5);
        fake_proc_output(f, 0, NULL, 0);
        assert_int_equal(n_replies, 1);
        assert_true(pysessions_busy(ps));
        fake_proc_output(f, 1, NULL, 0);
        assert_int_equal(n_replies, 2);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        assert_true(sc_bool(sc, "timed_out"));
        assert_int_equal(sc_int(sc, "exit_code"), -1);
        assert_string_equal(sc_str(sc, "signal"), "SIGKILL");
        assert_false(sc_bool(sc, "session_alive"));
        EXPECT_STREAM(sc, "stdout", "partial\nx\0MCPEXECD-");
        EXPECT_STREAM(sc, "stderr", "late\n");
        assert_false(pysessions_busy(ps));
        assert_int_equal(sched.n_running, 0);

        reap(f);
        submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"x\"}", handle);
        turn();
        expect_tool_error(2, &owner_a, UNKNOWN);
}

/* Python dies during a call (a crash): the session is killed, the call answered with how Python
 * ended; in rlimit mode its CPU is what the init reaped less the base. */
static void test_python_crash(void **state) {
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "crash()", NULL, nonce);
        fake_proc_output(f, 0, "before\n", 7);
        fake_proc_report(f, &(SandboxReport) { .kind = SANDBOX_REPORT_EXITED, .value = SIGSEGV,
                                               .utime_usec = BASE_UTIME + 500, .stime_usec = BASE_STIME + 20,
                                               .maxrss_bytes = 50000000 });
        assert_int_equal(f->kills_init, 1);
        assert_int_equal(pysessions_count(ps), 0);
        assert_true(record_has(" REASON=crash "));
        /* The init's exit may come before the pipes' EOF: the call still waits for them. */
        fake_proc_exit(f, CLD_KILLED, SIGKILL);
        assert_non_null(f->proc);
        assert_int_equal(n_replies, 1);
        fake_proc_output(f, 0, NULL, 0);
        fake_proc_output(f, 1, NULL, 0);
        assert_int_equal(n_replies, 2);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        assert_false(sc_bool(sc, "session_alive"));
        assert_int_equal(sc_int(sc, "exit_code"), -SIGSEGV);
        assert_string_equal(sc_str(sc, "signal"), "SIGSEGV");
        assert_false(sc_bool(sc, "timed_out"));
        EXPECT_STREAM(sc, "stdout", "before\n");
        assert_int_equal(sc_int(sc, "cpu_user_us"), 500);
        assert_int_equal(sc_int(sc, "cpu_system_us"), 20);
        assert_int_equal(sc_int(sc, "memory_peak_bytes"), 50000000);
        reap(f);
}

/* os._exit(3) in a call: "exited", the status as the exit code. */
static void test_python_exits(void **state) {
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "os._exit(3)", NULL, nonce);
        fake_proc_report(f, &(SandboxReport) { .kind = SANDBOX_REPORT_EXITED, .value = 3 << 8 });
        assert_true(record_has(" REASON=exited "));
        fake_proc_drain(f); /* EOFs, then the reaping */
        assert_null(f->proc);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        assert_false(sc_bool(sc, "session_alive"));
        assert_int_equal(sc_int(sc, "exit_code"), 3);
        assert_true(json_is_null(json_object_get(sc, "signal")));
}

/* The memory limit kills Python (a SIGKILL, which alone would read as a crash): the counters say
 * OOM, read before the kill. */
static void test_python_oom(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "grow()", NULL, nonce);
        f->stats = (CgroupStats) { .memory_peak_bytes = 268435456, .oom_killed = true };
        f->usage.cpu_user_usec += 700;
        fake_proc_report(f, &(SandboxReport) { .kind = SANDBOX_REPORT_EXITED, .value = SIGKILL });
        assert_true(record_has(" REASON=oom "));
        assert_true(record_has(" OOM_KILLED=1"));
        fake_proc_output(f, 0, NULL, 0);
        fake_proc_output(f, 1, NULL, 0);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        assert_true(sc_bool(sc, "oom_killed"));
        assert_int_equal(sc_int(sc, "exit_code"), -SIGKILL);
        assert_string_equal(sc_str(sc, "signal"), "SIGKILL");
        assert_false(sc_bool(sc, "session_alive"));
        assert_int_equal(sc_int(sc, "memory_peak_bytes"), 268435456);
        assert_int_equal(sc_int(sc, "cpu_user_us"), 700);
        reap(f);
}

/* ---- bounds --------------------------------------------------------------------------------- */

static void test_bounds(void **state) {
        PySessionsConfig config = config_default();
        config.max = 1;
        sessions_restart(&config);
        /* An opening session counts. */
        submit("session_open", "{}", &owner_a);
        submit("session_open", "{}", &owner_b);
        turn();
        assert_int_equal(n_fake_procs, 1);
        expect_tool_error(0, &owner_b, "too many Python sessions open: 1 of 1 (MCP_EXEC_PY_SESSIONS_MAX); close one "
                                       "with session_close");
        deliver_ready(&fake_procs[0], READY);
        usage_report(&fake_procs[0], BASE_UTIME, BASE_STIME, 0);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        /* A killed one does not, while its sandbox is reaped. */
        submitf("session_close", &owner_a, "{\"session\":\"%s\"}", sc_str(sc, "session"));
        turn();
        assert_non_null(fake_procs[0].proc);
        char handle[HANDLE_SIZE];
        open_session("{}", handle);
        reap(&fake_procs[0]);

        config.max = 0;
        sessions_restart(&config);
        assert_null(fake_procs[1].proc);
        submit("session_open", "{}", &owner_a);
        turn();
        expect_tool_error(n_replies - 1, &owner_a, "Python sessions are disabled on this server (MCP_EXEC_PY_SESSIONS_MAX=0)");

        /* No default interpreter. */
        config = config_default();
        RunEnv no_python = env;
        no_python.python = NULL;
        config.env = &no_python;
        sessions_restart(&config);
        submit("session_open", "{}", &owner_a);
        turn();
        expect_tool_error(n_replies - 1, &owner_a, "Python sessions need the default interpreter, which was not found "
                                                   "(MCP_EXEC_PYTHON)");
        assert_int_equal(n_fake_procs, 2);
}

/* idle_timeout_s is at most the server's: larger is lowered to it. */
static void test_idle_timeout_clamped(void **state) {
        char handle[HANDLE_SIZE];
        open_session("{\"idle_timeout_s\":100000}", handle);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(0, &owner_a);
        assert_int_equal(sc_int(sc, "idle_timeout_s"), IDLE_S);
        open_session("{\"idle_timeout_s\":5}", handle);
        _cleanup_(json_decrefp) json_t *sc2 = reply_sc(1, &owner_a);
        assert_int_equal(sc_int(sc2, "idle_timeout_s"), 5);
}

/* The sweep ends a session idle for its idle timeout. */
static void test_idle_expiry(void **state) {
        char handle[HANDLE_SIZE];
        FakeProc *f = open_session("{\"idle_timeout_s\":1}", handle);
        for (int i = 0; i < 40 && pysessions_count(ps) > 0; i++)
                assert_int_equal(ring_run_once(ring, SEC / 10), 0);
        assert_int_equal(pysessions_count(ps), 0);
        assert_true(f->init_killed);
        assert_true(record_has(" REASON=idle-expiry "));
        reap(f);
        submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"x\"}", handle);
        turn();
        expect_tool_error(1, &owner_a, UNKNOWN);
}

/* The session's lifetime ends it even during a call, which is answered as killed. */
static void test_lifetime_expiry(void **state) {
        PySessionsConfig config = config_default();
        config.lifetime_s = 1;
        sessions_restart(&config);
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "work()", NULL, nonce);
        for (int i = 0; i < 40 && pysessions_count(ps) > 0; i++)
                assert_int_equal(ring_run_once(ring, SEC / 10), 0);
        assert_int_equal(pysessions_count(ps), 0);
        assert_true(record_has(" REASON=lifetime "));
        fake_proc_drain(f);
        assert_null(f->proc);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        assert_false(sc_bool(sc, "session_alive"));
        assert_int_equal(sc_int(sc, "exit_code"), -SIGKILL);
        assert_false(sc_bool(sc, "timed_out"));
}

/* ---- close, cancel, stop -------------------------------------------------------------------- */

static void test_close(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE];
        FakeProc *f = open_session(NULL, handle);
        submitf("session_close", &owner_a, "{\"session\":\"%s\"}", handle);
        turn();
        _cleanup_(json_decrefp) json_t *sc = reply_sc(1, &owner_a);
        assert_true(sc_bool(sc, "closed"));
        assert_int_equal(json_object_size(sc), 1);
        assert_int_equal(f->kills_payload, 1);
        assert_int_equal(f->kills_init, 1);
        assert_int_equal(pysessions_count(ps), 0);
        assert_true(record_has(" REASON=closed "));
        /* Reaped: the proc goes once its last operation is back, not before. */
        assert_non_null(f->proc);
        reap(f);
}

/* Closed during a call: the call is answered with what it printed, session_alive false. */
static void test_close_during_call(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "work()", NULL, nonce);
        fake_proc_output(f, 0, "so far\n", 7);
        submitf("session_close", &owner_b, "{\"session\":\"%s\"}", handle);
        turn();
        /* The close is answered at once, the call once its pipes are at EOF, so after the close. */
        assert_int_equal(n_replies, 2);
        json_decref(reply_sc(1, &owner_b));
        fake_proc_output(f, 0, NULL, 0);
        fake_proc_output(f, 1, NULL, 0);
        assert_int_equal(n_replies, 3);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(2, &owner_a);
        assert_false(sc_bool(sc, "session_alive"));
        EXPECT_STREAM(sc, "stdout", "so far\n");
        assert_int_equal(sc_int(sc, "exit_code"), -SIGKILL);
        reap(f);
}

/* A session killed while its call's message is still being written (a large message, a launcher
 * not reading yet): the call is answered at its pipes' EOF and freed, but the write's buffer is the
 * kernel's until the write comes back (proc.h), so it stays until then (fake_proc_written() reads
 * it: under ASan a buffer freed with its call is a use after free there). */
static void test_kill_with_write_pending(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE];
        FakeProc *f = open_session(NULL, handle);
        submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"work()\"}", handle);
        turn();
        assert_true(f->writing);
        submitf("session_close", &owner_b, "{\"session\":\"%s\"}", handle);
        turn();
        fake_proc_output(f, 0, NULL, 0);
        fake_proc_output(f, 1, NULL, 0);
        assert_int_equal(n_replies, 3); /* the open, the close, the call (its pipes at EOF) */
        _cleanup_(json_decrefp) json_t *sc = reply_sc(2, &owner_a);
        assert_false(sc_bool(sc, "session_alive"));
        assert_true(f->writing);
        reap(f); /* the write comes back (-ECANCELED) with its buffer intact */
}

/* A cancelled call is never answered; its code is interrupted as at a deadline, and the session
 * lives if it stops within the grace. */
static void test_cancel_call(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        int id = start_call(f, handle, "work()", NULL, nonce);
        assert_true(pysessions_route_vtable.has(ps, &owner_a, key_of(id)));
        assert_false(pysessions_route_vtable.has(ps, &owner_b, key_of(id)));
        assert_false(pysessions_route_vtable.cancel(ps, &owner_b, NULL)); /* not owner_b's */
        assert_true(pysessions_route_vtable.cancel(ps, &owner_a, key_of(id)));
        expect_no_answer(1, &owner_a);
        assert_int_equal(f->interrupts, 1);
        assert_int_equal(f->timer_usec, GRACE_USEC);
        assert_false(pysessions_route_vtable.has(ps, &owner_a, key_of(id)));

        end_call(f, nonce, 1);
        assert_int_equal(n_replies, 2); /* nothing more */
        assert_true(f->frozen);
        assert_int_equal(pysessions_count(ps), 1);
        assert_false(pysessions_busy(ps));
        start_call(f, handle, "again()", NULL, nonce);
        end_call(f, nonce, 0);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(2, &owner_a);
        assert_true(sc_bool(sc, "session_alive"));
        assert_int_equal(sc_int(sc, "session_calls"), 2);
}

/* A cancelled open ends the session being made; cancelled before its turn, it never starts. */
static void test_cancel_open(void **state) {
        int id = submit("session_open", "{}", &owner_a);
        turn();
        FakeProc *f = &fake_procs[0];
        assert_true(pysessions_route_vtable.cancel(ps, &owner_a, key_of(id)));
        assert_int_equal(n_replies, 1);
        expect_no_answer(0, &owner_a);
        assert_true(f->init_killed);
        assert_int_equal(pysessions_count(ps), 0);
        assert_false(pysessions_busy(ps));
        reap(f);
        assert_int_equal(n_replies, 1);

        submit("session_open", "{}", &owner_a);
        assert_true(pysessions_route_vtable.cancel(ps, &owner_a, NULL));
        expect_no_answer(1, &owner_a);
        turn();
        assert_int_equal(n_fake_procs, 1);
        assert_int_equal(n_replies, 2);
}

/* Cancelled while systemd makes its scope: the init must live until the placement is over, then it
 * is killed and the session freed. */
static void test_cancel_open_placing(void **state) {
        fake_proc_config.place = 0;
        int id = submit("session_open", "{}", &owner_a);
        turn();
        FakeProc *f = &fake_procs[0];
        assert_true(pysessions_route_vtable.cancel(ps, &owner_a, key_of(id)));
        expect_no_answer(0, &owner_a);
        assert_false(f->init_killed);
        assert_true(f->kill_pending);
        fake_proc_placed(f, 0, NULL);
        assert_true(f->init_killed);
        assert_false(f->released);
        reap(f);
        assert_int_equal(n_replies, 1);
}

/* The daemon stops: a call in flight is answered with the reason, one not yet taken with "stopping",
 * no more are taken; the sessions are killed and freed once their operations are back. */
static void test_stop(void **state) {
        fake_proc_config.cgroup = true;
        char handle[HANDLE_SIZE], nonce[NONCE_HEX + 1];
        FakeProc *f = open_session(NULL, handle);
        start_call(f, handle, "work()", NULL, nonce);
        submit("session_open", "{}", &owner_b); /* not taken yet */
        pysessions_stop(ps, "mcp-execd is shutting down (SIGTERM)");
        assert_int_equal(n_replies, 2);
        expect_tool_error(1, &owner_a, "mcp-execd is shutting down (SIGTERM)");
        assert_int_equal(f->kills_init, 1);
        assert_true(record_has(" REASON=daemon-stop "));
        assert_int_equal(pysessions_count(ps), 0);
        assert_true(pysessions_busy(ps)); /* the open on the ring */
        pysessions_stop(ps, "again"); /* idempotent */
        assert_int_equal(n_replies, 2);

        McpCall *c = call_of(++next_id, "session_open", "{}");
        assert_int_equal(pysessions_route_vtable.submit(ps, c, &owner_a, on_reply), -EBUSY);
        mcp_call_free(c);
        turn();
        expect_tool_error(2, &owner_b, "mcp-execd is stopping");
        /* The sweep's timer is cancelled, not left to run out: the ring drains now. */
        for (int i = 0; i < 10 && ring_inflight(ring) > 0; i++)
                assert_int_equal(ring_run_once(ring, SEC / 100), 0);
        assert_int_equal(ring_inflight(ring), 0);
        assert_int_equal(n_fake_procs, 1);
        assert_false(pysessions_busy(ps));
        assert_int_equal(sched.n_running, 0);

        /* What the teardown does after it: the ring drains, then everything is freed. */
        reap(f);
        assert_int_equal(n_replies, 3); /* the call was answered once */
}

/* ---- preparation, gauges, backstop ---------------------------------------------------------- */

static McpCall *prepared_call;
static void *prepared_owner;
static JobReplyFn prepared_reply;
static int prepare_calls, prepare_result, releases;

static int fake_prepare(void *userdata, McpCall *call, void *owner, JobReplyFn reply) {
        assert_ptr_equal(userdata, &prepare_calls);
        prepare_calls++;
        if (prepare_result < 0)
                return prepare_result; /* not taken */
        prepared_call = call;
        prepared_owner = owner;
        prepared_reply = reply;
        return 0;
}

static void on_release(void *userdata) {
        assert_ptr_equal(userdata, &releases);
        releases++;
}

/* A session_open naming an interpreter (or with dependencies) is prepared by config.prepare first;
 * it comes back with the interpreter and the environment, which the sandbox mounts and holds until
 * it is gone; its calls run that interpreter. */
static void test_open_prepared(void **state) {
        /* No preparation there: a tool error. */
        submit("session_open", "{\"python\":\"pypy3\"}", &owner_a);
        turn();
        expect_tool_error(0, &owner_a, "cannot prepare the session's interpreter and dependencies: Operation not supported");

        PySessionsConfig config = config_default();
        config.prepare = fake_prepare;
        config.prepare_userdata = &prepare_calls;
        sessions_restart(&config);
        prepare_calls = releases = 0;
        prepare_result = -ENOENT;
        submit("session_open", "{\"dependencies\":[\"numpy\"]}", &owner_a);
        turn();
        assert_int_equal(prepare_calls, 1);
        expect_tool_error(1, &owner_a, "cannot prepare the session's interpreter and dependencies: No such file or directory");

        prepare_result = 0;
        submit("session_open", "{\"python\":\"pypy3\"}", &owner_a);
        turn();
        assert_int_equal(prepare_calls, 2);
        assert_int_equal(n_fake_procs, 0);
        _cleanup_(json_decrefp) json_t *extra = json_pack("{s:s, s:s}", "python", "pypy3", "python_version", "3.10.14");
        pysessions_open_prepared(ps, TAKE_PTR(prepared_call), prepared_owner, prepared_reply,
                                 &(JobPrep) { .python = "/opt/pypy3/bin/pypy3", .env_dir = "/var/cache/envs/abc",
                                              .extra = extra, .release = on_release, .userdata = &releases });
        assert_int_equal(n_fake_procs, 1);
        FakeProc *f = &fake_procs[0];
        assert_string_equal(f->python, "/opt/pypy3/bin/pypy3");
        assert_string_equal(f->env_dir, "/var/cache/envs/abc");
        deliver_ready(f, READY);
        usage_report(f, BASE_UTIME, BASE_STIME, 0);
        _cleanup_(json_decrefp) json_t *sc = reply_sc(2, &owner_a);
        assert_string_equal(sc_str(sc, "python"), "pypy3");
        assert_string_equal(sc_str(sc, "python_version"), "3.10.14");
        assert_int_equal(json_object_size(sc), 8);
        char handle[HANDLE_SIZE];
        snprintf(handle, sizeof(handle), "%s", sc_str(sc, "session"));

        submitf("exec", &owner_a, "{\"session\":\"%s\",\"code\":\"x\",\"python\":\"python3\"}", handle);
        turn();
        expect_tool_error(3, &owner_a, "invalid argument 'python': the session runs pypy3");

        /* The environment is held while the sandbox may use it: until the proc is freed. */
        submitf("session_close", &owner_a, "{\"session\":\"%s\"}", handle);
        turn();
        assert_int_equal(releases, 0);
        reap(f);
        assert_int_equal(releases, 1);

        /* Prepared once the daemon stopped: answered, released. */
        prepare_result = 0;
        submit("session_open", "{\"python\":\"pypy3\"}", &owner_a);
        turn();
        pysessions_stop(ps, "stopping");
        pysessions_open_prepared(ps, TAKE_PTR(prepared_call), prepared_owner, prepared_reply,
                                 &(JobPrep) { .python = "/opt/pypy3/bin/pypy3", .release = on_release,
                                              .userdata = &releases });
        expect_tool_error(5, &owner_a, "mcp-execd is stopping");
        assert_int_equal(releases, 2);
        assert_int_equal(n_fake_procs, 1);
}

/* /metrics' gauges: the sessions open (a killed one being reaped is not) and their memory.current. */
static void test_gauges(void **state) {
        fake_proc_config.cgroup = true;
        char h1[HANDLE_SIZE], h2[HANDLE_SIZE];
        FakeProc *f1 = open_session(NULL, h1);
        FakeProc *f2 = open_session(NULL, h2);
        f1->usage.memory_current_bytes = 100000;
        f2->usage.memory_current_bytes = 200000;
        pysessions_route_vtable.gauges(ps, metrics);
        _cleanup_free_ char *text = NULL;
        size_t len;
        assert_int_equal(metrics_render(metrics, &text, &len), 0);
        assert_non_null(strstr(text, "\nmcp_execd_py_sessions_open 2\n"));
        assert_non_null(strstr(text, "\nmcp_execd_py_sessions_memory_bytes 300000\n"));

        submitf("session_close", &owner_a, "{\"session\":\"%s\"}", h1);
        turn();
        assert_non_null(f1->proc); /* still being reaped */
        pysessions_route_vtable.gauges(ps, metrics);
        _cleanup_free_ char *text2 = NULL;
        assert_int_equal(metrics_render(metrics, &text2, &len), 0);
        assert_non_null(strstr(text2, "\nmcp_execd_py_sessions_open 1\n"));
        assert_non_null(strstr(text2, "\nmcp_execd_py_sessions_memory_bytes 200000\n"));
        reap(f1);
}

/* The scope's backstop: the lifetime, a call's timeout past it and a minute, at most UINT32_MAX/2
 * (systemd's RuntimeMaxUSec in µs must not overflow). */
static void test_backstop(void **state) {
        assert_int_equal(pysession_backstop_s(3600, 600), 4260);
        assert_int_equal(pysession_backstop_s(0, 0), 60);
        assert_int_equal(pysession_backstop_s(UINT32_MAX / 2 - 61, 1), UINT32_MAX / 2);
        assert_int_equal(pysession_backstop_s(UINT32_MAX / 2 - 60, 1), UINT32_MAX / 2);
        assert_int_equal(pysession_backstop_s(UINT32_MAX / 2 - 62, 1), UINT32_MAX / 2 - 1);
        assert_int_equal(pysession_backstop_s(UINT32_MAX, UINT32_MAX), UINT32_MAX / 2);
        assert_int_equal(pysession_backstop_s(UINT32_MAX, 0), UINT32_MAX / 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_open_cold, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_rlimit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_placed_later, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_failures, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_cgroup, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_cpu_bounded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_rlimit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_forged_end_line, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_stdin_and_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_busy_and_unknown_handles, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_arguments, setup, teardown),
                cmocka_unit_test_setup_teardown(test_call_waits_for_slot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_deadline_interrupt, setup, teardown),
                cmocka_unit_test_setup_teardown(test_deadline_kill, setup, teardown),
                cmocka_unit_test_setup_teardown(test_python_crash, setup, teardown),
                cmocka_unit_test_setup_teardown(test_python_exits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_python_oom, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_idle_timeout_clamped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_idle_expiry, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lifetime_expiry, setup, teardown),
                cmocka_unit_test_setup_teardown(test_close, setup, teardown),
                cmocka_unit_test_setup_teardown(test_close_during_call, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill_with_write_pending, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel_call, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel_open, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel_open_placing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_prepared, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gauges, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backstop, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
