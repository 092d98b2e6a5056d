/* test-metrics.c: run records (their one-line form), outcome classification, journal detection,
 * and a strict check of the Prometheus text exposition. */
#include <ctype.h>
#include <math.h> /* INFINITY, NAN, isinf: macros, no libm */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "metrics.h"

/* ---- helpers -------------------------------------------------------------------------------- */

typedef struct Capture {
        char *data;
        size_t len;
        FILE *f;
} Capture;

static void capture_open(Capture *c) {
        *c = (Capture) {};
        c->f = open_memstream(&c->data, &c->len);
        assert_non_null(c->f);
}

static void capture_close(Capture *c) {
        fclose(c->f);
        c->f = NULL;
}

/* A Metrics (version 1.2.3, of this transport) whose records go to c. */
static Metrics *metrics_capture(Capture *c, const char *transport) {
        capture_open(c);
        Metrics *m = NULL;
        assert_int_equal(metrics_new("1.2.3", transport, c->f, &m), 0);
        return m;
}

/* After capture_close(c): done with what c captured and with m. */
static void metrics_capture_done(Capture *c, Metrics *m) {
        free(c->data);
        metrics_free(m);
}

/* The value of KEY in a record line ("<6>mcp-execd: MESSAGE; KEY=v KEY="q v" …"), unquoted into
 * out; false if the key is absent. */
static bool line_field(const char *line, const char *key, char *out, size_t n) {
        const char *fields = strstr(line, "; ");
        assert_non_null(fields);
        size_t kl = strlen(key);
        for (const char *p = fields + 1; p && *p;) {
                while (*p == ' ')
                        p++;
                const char *eq = strchr(p, '=');
                if (!eq)
                        return false;
                bool match = (size_t) (eq - p) == kl && strncmp(p, key, kl) == 0;
                const char *v = eq + 1;
                size_t o = 0;
                if (*v == '"') {
                        for (v++; *v && *v != '"'; v++) {
                                char ch = *v;
                                if (ch == '\\') {
                                        v++;
                                        ch = *v == 'n' ? '\n' : *v == 't' ? '\t' : *v;
                                }
                                if (o + 1 < n)
                                        out[o++] = ch;
                        }
                        if (*v == '"')
                                v++;
                } else {
                        for (; *v && *v != ' ' && *v != '\n'; v++)
                                if (o + 1 < n)
                                        out[o++] = *v;
                }
                out[o] = '\0';
                if (match)
                        return true;
                p = v;
        }
        return false;
}

static void assert_field(const char *line, const char *key, const char *want) {
        char v[512];
        if (!line_field(line, key, v, sizeof(v)))
                fail_msg("field %s missing in: %s", key, line);
        if (strcmp(v, want) != 0)
                fail_msg("field %s is '%s', expected '%s'", key, v, want);
}

static MetricsRun sample_run(void) {
        return (MetricsRun) {
                .run_id = "0123456789abcdef",
                .unit = "mcp-execd-run-0123456789abcdef.scope",
                .limits = "cgroup",
                .exit_code = 0,
                .duration_ms = 12,
                .queue_ms = 3,
                .timeout_s = 30,
                .memory_peak_bytes = 9 * 1024 * 1024,
                .cpu_user_us = 11000,
                .cpu_system_us = 4000,
                .code_bytes = 10,
                .stdin_bytes = 5,
                .stdout_bytes = 3,
                .stderr_bytes = 0,
                .scope_start_usec = 4200,
        };
}

/* ---- records -------------------------------------------------------------------------------- */

static void test_outcome(void **state) {
        MetricsRun r = sample_run();
        assert_int_equal(metrics_run_outcome(&r), METRICS_OUTCOME_OK);
        r.exit_code = 3;
        assert_int_equal(metrics_run_outcome(&r), METRICS_OUTCOME_NONZERO);
        r.pids_limit_hit = true;
        assert_int_equal(metrics_run_outcome(&r), METRICS_OUTCOME_PIDS);
        r.exit_code = 0; /* hit the limit, handled it, exited 0: ok */
        assert_int_equal(metrics_run_outcome(&r), METRICS_OUTCOME_OK);
        r = sample_run();
        r.exit_code = -31;
        r.signal = "SIGSYS";
        assert_int_equal(metrics_run_outcome(&r), METRICS_OUTCOME_SIGNAL);
        r.exit_code = -9;
        r.signal = "SIGKILL";
        r.oom_killed = true; /* the counter decides, not the signal */
        assert_int_equal(metrics_run_outcome(&r), METRICS_OUTCOME_OOM);
        r.exit_code = -1;
        r.timed_out = true;
        assert_int_equal(metrics_run_outcome(&r), METRICS_OUTCOME_TIMEOUT);
        r.cancelled = true;
        assert_int_equal(metrics_run_outcome(&r), METRICS_OUTCOME_CANCELLED);
        r.error = "the interpreter was not found";
        assert_int_equal(metrics_run_outcome(&r), METRICS_OUTCOME_ERROR);
        for (int o = 0; o < _METRICS_OUTCOME_MAX; o++)
                assert_non_null(metrics_outcome_to_string(o));
        assert_null(metrics_outcome_to_string(_METRICS_OUTCOME_MAX));
}

static const char *const run_fields[] = {
        "MESSAGE_ID", "RUN_ID", "UNIT", "TRANSPORT", "EXIT_CODE", "SIGNAL", "TIMED_OUT", "OOM_KILLED",
        "PIDS_LIMIT_HIT", "TRUNCATED", "DURATION_MS", "QUEUE_MS", "TIMEOUT_S", "MEMORY_PEAK_BYTES",
        "CPU_USER_US", "CPU_SYSTEM_US", "CODE_BYTES", "STDIN_BYTES", "STDOUT_BYTES", "STDERR_BYTES",
};

static void test_run_record_line(void **state) {
        Capture c;
        Metrics *m = metrics_capture(&c, "stdio");
        MetricsRun r = sample_run();
        metrics_run_finished(m, &r);
        capture_close(&c);

        /* One line, with the priority prefix the rest of our stderr uses. */
        assert_true(c.len > 0);
        assert_int_equal(c.data[c.len - 1], '\n');
        assert_ptr_equal(strchr(c.data, '\n'), c.data + c.len - 1);
        assert_true(strncmp(c.data, "<6>mcp-execd: run 0123456789abcdef finished: exit code 0 after 12 ms;", 69) == 0);
        for (size_t i = 0; i < sizeof(run_fields) / sizeof(run_fields[0]); i++) {
                char v[256];
                if (!line_field(c.data, run_fields[i], v, sizeof(v)))
                        fail_msg("no %s in %s", run_fields[i], c.data);
        }
        assert_field(c.data, "MESSAGE_ID", METRICS_MESSAGE_RUN_FINISHED);
        assert_field(c.data, "RUN_ID", "0123456789abcdef");
        assert_field(c.data, "UNIT", "mcp-execd-run-0123456789abcdef.scope");
        assert_field(c.data, "TRANSPORT", "stdio");
        assert_field(c.data, "OUTCOME", "ok");
        assert_field(c.data, "LIMITS", "cgroup");
        assert_field(c.data, "EXIT_CODE", "0");
        assert_field(c.data, "SIGNAL", "");
        assert_field(c.data, "TIMED_OUT", "0");
        assert_field(c.data, "OOM_KILLED", "0");
        assert_field(c.data, "PIDS_LIMIT_HIT", "0");
        assert_field(c.data, "TRUNCATED", "0");
        assert_field(c.data, "DURATION_MS", "12");
        assert_field(c.data, "QUEUE_MS", "3");
        assert_field(c.data, "TIMEOUT_S", "30");
        assert_field(c.data, "MEMORY_PEAK_BYTES", "9437184");
        assert_field(c.data, "CPU_USER_US", "11000");
        assert_field(c.data, "CPU_SYSTEM_US", "4000");
        assert_field(c.data, "CODE_BYTES", "10");
        assert_field(c.data, "STDIN_BYTES", "5");
        assert_field(c.data, "STDOUT_BYTES", "3");
        assert_field(c.data, "STDERR_BYTES", "0");
        assert_field(c.data, "SCOPE_START_US", "4200");
        char v[64];
        assert_false(line_field(c.data, "ERROR", v, sizeof(v)));
        assert_false(line_field(c.data, "TRACEPARENT", v, sizeof(v))); /* the call carried none */
        assert_false(line_field(c.data, "MESSAGE", v, sizeof(v))); /* it leads the line instead */
        assert_false(line_field(c.data, "PRIORITY", v, sizeof(v)));
        metrics_capture_done(&c, m);
}

#define TRACEPARENT "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

/* Issue 17.5: the call's trace context (validated in mcp/) joins the record to the agent's trace. */
static void test_run_record_traceparent(void **state) {
        Capture c;
        Metrics *m = metrics_capture(&c, "http");
        MetricsRun r = sample_run();
        r.traceparent = TRACEPARENT;
        metrics_run_finished(m, &r);
        capture_close(&c);
        assert_field(c.data, "TRACEPARENT", TRACEPARENT);
        assert_field(c.data, "RUN_ID", "0123456789abcdef");
        metrics_capture_done(&c, m);
}

static void test_run_record_timeout_and_signal(void **state) {
        Capture c;
        Metrics *m = metrics_capture(&c, "http");
        MetricsRun r = sample_run();
        r.unit = NULL;
        r.limits = "rlimit";
        r.exit_code = -1;
        r.signal = "SIGKILL";
        r.timed_out = true;
        r.truncated = true;
        r.timeout_s = 2;
        r.scope_start_usec = 0;
        metrics_run_finished(m, &r);
        fflush(c.f);
        size_t first_len = c.len;
        r = sample_run();
        r.exit_code = -31;
        r.signal = "SIGSYS";
        metrics_run_finished(m, &r);
        capture_close(&c);

        char *line2 = c.data + first_len;
        c.data[first_len - 1] = '\0';
        assert_true(strncmp(c.data, "<5>mcp-execd: run 0123456789abcdef timed out after 2 s", 54) == 0);
        assert_field(c.data, "UNIT", "");
        assert_field(c.data, "TRANSPORT", "http");
        assert_field(c.data, "OUTCOME", "timeout");
        assert_field(c.data, "EXIT_CODE", "-1");
        assert_field(c.data, "SIGNAL", "SIGKILL");
        assert_field(c.data, "TIMED_OUT", "1");
        assert_field(c.data, "TRUNCATED", "1");
        assert_field(c.data, "TIMEOUT_S", "2");
        char v[64];
        assert_false(line_field(c.data, "SCOPE_START_US", v, sizeof(v)));
        assert_false(line_field(c.data, "OBJECT_SYSTEMD_UNIT", v, sizeof(v)));
        assert_field(line2, "OUTCOME", "signal");
        assert_field(line2, "EXIT_CODE", "-31");
        assert_field(line2, "SIGNAL", "SIGSYS");
        assert_field(line2, "OBJECT_SYSTEMD_UNIT", "mcp-execd-run-0123456789abcdef.scope");
        assert_int_equal(metrics_runs_total(m, METRICS_OUTCOME_TIMEOUT), 1);
        assert_int_equal(metrics_runs_total(m, METRICS_OUTCOME_SIGNAL), 1);
        assert_int_equal(metrics_runs_total(m, METRICS_OUTCOME_OK), 0);
        metrics_capture_done(&c, m);
}

static void test_error_record_quotes_and_stays_one_line(void **state) {
        Capture c;
        Metrics *m = metrics_capture(&c, "stdio");
        MetricsRun r = sample_run();
        r.error = "cannot start \"the\" sandbox:\nno such\\thing";
        metrics_run_finished(m, &r);
        capture_close(&c);
        assert_ptr_equal(strchr(c.data, '\n'), c.data + c.len - 1);
        assert_true(strncmp(c.data, "<3>", 3) == 0);
        assert_field(c.data, "OUTCOME", "error");
        assert_field(c.data, "EXIT_CODE", "");
        assert_field(c.data, "ERROR", "cannot start \"the\" sandbox:\nno such\\thing");
        assert_int_equal(metrics_runs_total(m, METRICS_OUTCOME_ERROR), 1);
        metrics_capture_done(&c, m);
}

/* The n lines of text, split in place into lines[]: exactly n, no more, no fewer. */
static void split_lines(char *text, char **lines, int n) {
        char *save = NULL;
        int k = 0;
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                if (k >= n)
                        fail_msg("more than %d lines", n);
                lines[k++] = l;
        }
        assert_int_equal(k, n);
}

static void test_other_records(void **state) {
        Capture c;
        Metrics *m = metrics_capture(&c, "stdio");
        metrics_daemon_started(m, &(MetricsStart) { .limits = "rlimit", .python_version = "3.11.2",
                                                    .max_concurrent = 2, .queue_max = 64 });
        metrics_set_runs(m, 2, 64);
        metrics_run_rejected(m, &(MetricsRejection) { .reason = "queue-full", .code_bytes = 7, .timeout_s = 30,
                                                      .traceparent = TRACEPARENT });
        metrics_run_rejected(m, &(MetricsRejection) { .reason = "invalid-arguments" });
        metrics_set_runs(m, 0, 0);
        metrics_daemon_stopping(m, "SIGTERM");
        capture_close(&c);

        char *lines[4];
        split_lines(c.data, lines, 4);
        assert_field(lines[0], "MESSAGE_ID", METRICS_MESSAGE_DAEMON_STARTED);
        assert_field(lines[0], "VERSION", "1.2.3");
        assert_field(lines[0], "LIMITS", "rlimit");
        assert_field(lines[0], "PYTHON_VERSION", "3.11.2");
        assert_field(lines[0], "MAX_CONCURRENT", "2");
        assert_field(lines[1], "MESSAGE_ID", METRICS_MESSAGE_RUN_REJECTED);
        assert_true(strncmp(lines[1], "<4>", 3) == 0);
        assert_field(lines[1], "REASON", "queue-full");
        assert_field(lines[1], "CODE_BYTES", "7");
        assert_field(lines[1], "RUNS_QUEUED", "64");
        assert_field(lines[1], "TRACEPARENT", TRACEPARENT);
        assert_true(strncmp(lines[2], "<6>", 3) == 0);
        assert_field(lines[2], "REASON", "invalid-arguments");
        assert_field(lines[3], "MESSAGE_ID", METRICS_MESSAGE_DAEMON_STOPPING);
        assert_field(lines[3], "REASON", "SIGTERM");
        assert_field(lines[3], "RUNS_TOTAL", "0");
        assert_int_equal(metrics_runs_total(m, METRICS_OUTCOME_REJECTED), 2);
        metrics_capture_done(&c, m);
}

/* Issue 18.7: a Python session's open and close, and its calls' run records, name it by the same id
 * (never the handle). */
static void test_py_session_records(void **state) {
        Capture c;
        Metrics *m = metrics_capture(&c, "http");
        MetricsPySession ps = { .id = "00112233aabbccdd", .run_id = "0123456789abcdef", .limits = "rlimit",
                                .traceparent = TRACEPARENT, .idle_timeout_s = 60, .lifetime_s = 3600,
                                .open_ms = 41, .warm = true };
        metrics_py_session_opened(m, &ps);
        MetricsRun r = sample_run();
        r.py_session_id = "00112233aabbccdd";
        r.py_session_call = 1;
        metrics_run_finished(m, &r);
        ps.reason = "oom";
        ps.detail = "the interpreter exited";
        ps.age_ms = 5000;
        ps.calls = 1;
        ps.memory_peak_bytes = 1 << 20;
        ps.oom_killed = true;
        metrics_py_session_closed(m, &ps);
        ps.reason = "closed";
        ps.detail = NULL;
        metrics_py_session_closed(m, &ps);
        capture_close(&c);

        char *lines[4];
        split_lines(c.data, lines, 4);
        const char *head = "<6>mcp-execd: python session 00112233aabbccdd opened: ";
        assert_true(strncmp(lines[0], head, strlen(head)) == 0);
        static const struct { int line; const char *key, *want; } fields[] = {
                { 0, "MESSAGE_ID", METRICS_MESSAGE_PY_SESSION_OPENED },
                { 0, "PY_SESSION_ID", "00112233aabbccdd" },
                { 0, "RUN_ID", "0123456789abcdef" },
                { 0, "TRANSPORT", "http" },
                { 0, "LIMITS", "rlimit" },
                { 0, "IDLE_TIMEOUT_S", "60" },
                { 0, "LIFETIME_S", "3600" },
                { 0, "OPEN_MS", "41" },
                { 0, "WARM", "1" },
                { 0, "TRACEPARENT", TRACEPARENT },
                { 1, "MESSAGE_ID", METRICS_MESSAGE_RUN_FINISHED },
                { 1, "PY_SESSION_ID", "00112233aabbccdd" },
                { 1, "PY_SESSION_CALL", "1" },
                { 2, "MESSAGE_ID", METRICS_MESSAGE_PY_SESSION_CLOSED },
                { 2, "PY_SESSION_ID", "00112233aabbccdd" },
                { 2, "REASON", "oom" },
                { 2, "DETAIL", "the interpreter exited" },
                { 2, "AGE_MS", "5000" },
                { 2, "CALLS", "1" },
                { 2, "MEMORY_PEAK_BYTES", "1048576" },
                { 2, "OOM_KILLED", "1" },
                { 3, "REASON", "closed" },
        };
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                assert_field(lines[fields[i].line], fields[i].key, fields[i].want);
        assert_true(strncmp(lines[2], "<5>", 3) == 0); /* an OOM end is a notice */
        assert_true(strncmp(lines[3], "<6>", 3) == 0);
        char v[64];
        assert_false(line_field(lines[3], "DETAIL", v, sizeof(v)));
        metrics_capture_done(&c, m);
}

static void test_message_ids_are_128_bit_hex(void **state) {
        const char *ids[] = { METRICS_MESSAGE_RUN_FINISHED, METRICS_MESSAGE_RUN_REJECTED,
                              METRICS_MESSAGE_DAEMON_STARTED, METRICS_MESSAGE_DAEMON_STOPPING,
                              METRICS_MESSAGE_PY_SESSION_OPENED, METRICS_MESSAGE_PY_SESSION_CLOSED };
        for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
                assert_int_equal(strlen(ids[i]), 32);
                for (const char *p = ids[i]; *p; p++)
                        assert_true(isdigit((unsigned char) *p) || (*p >= 'a' && *p <= 'f'));
                for (size_t j = 0; j < i; j++)
                        assert_string_not_equal(ids[i], ids[j]);
        }
}

static void test_journal_detection(void **state) {
        struct stat st;
        assert_int_equal(fstat(STDERR_FILENO, &st), 0);
        char v[64];
        unsetenv("JOURNAL_STREAM");
        assert_false(metrics_stderr_is_journal());
        snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
        setenv("JOURNAL_STREAM", v, 1);
        assert_true(metrics_stderr_is_journal());
        snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino + 1);
        setenv("JOURNAL_STREAM", v, 1);
        assert_false(metrics_stderr_is_journal());
        snprintf(v, sizeof(v), "%llu:%llux", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
        setenv("JOURNAL_STREAM", v, 1);
        assert_false(metrics_stderr_is_journal());
        setenv("JOURNAL_STREAM", "", 1);
        assert_false(metrics_stderr_is_journal());
        unsetenv("JOURNAL_STREAM");
}

/* ---- a strict check of the text exposition format 0.0.4 --------------------------------------
 * prometheus.io/docs/instrumenting/exposition_formats: "# HELP name doc", "# TYPE name type"
 * once per family and before its samples; samples "name{label="value",…} value"; the last line
 * ends with \n. Plus the naming conventions we promise: counters end in _total, histograms in a
 * base unit (or counts tasks), cumulative buckets ending with +Inf equal to _count. */

#define MAX_FAMILIES 64

typedef struct Family {
        char name[128];
        char type[16];
        bool help, typed, closed, sampled;
        /* histogram state */
        double last_le, last_bucket, inf_bucket;
        bool has_inf, has_sum, has_count;
        double count;
} Family;

typedef struct Expo {
        Family fam[MAX_FAMILIES];
        int n;
        int current; /* family whose lines we are in, -1 */
        char samples[256][256]; /* name+labels seen, to refuse duplicates */
        int n_samples;
        char err[1400];
} Expo;

/* Records the first problem and makes the caller return false. */
#define EXPECT(e, cond, ...)                                                      \
        do {                                                                      \
                if (!(cond)) {                                                    \
                        snprintf((e)->err, sizeof((e)->err), __VA_ARGS__);        \
                        return false;                                             \
                }                                                                 \
        } while (0)

static bool is_name(const char *s, size_t n, bool colon) {
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                char ch = s[i];
                bool ok = isalpha((unsigned char) ch) || ch == '_' || (colon && ch == ':') ||
                          (i > 0 && isdigit((unsigned char) ch));
                if (!ok)
                        return false;
        }
        return true;
}

static bool ends_with(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcmp(s + a - b, suffix) == 0;
}

static Family *family_find(Expo *e, const char *name) {
        for (int i = 0; i < e->n; i++)
                if (strcmp(e->fam[i].name, name) == 0)
                        return &e->fam[i];
        return NULL;
}

/* A sample value: a Go ParseFloat-style number, +Inf, -Inf or NaN. */
static bool parse_value(const char *s, double *ret) {
        if (strcmp(s, "+Inf") == 0) {
                *ret = INFINITY;
                return true;
        }
        if (strcmp(s, "-Inf") == 0) {
                *ret = -INFINITY;
                return true;
        }
        if (strcmp(s, "NaN") == 0) {
                *ret = NAN;
                return true;
        }
        char *end = NULL;
        if (!*s || isspace((unsigned char) *s) || !strpbrk(s, "0123456789"))
                return false;
        *ret = strtod(s, &end);
        return *end == '\0';
}

static bool expo_comment(Expo *e, const char *line) {
        const char *p = line + 2;
        bool help = strncmp(p, "HELP ", 5) == 0, type = strncmp(p, "TYPE ", 5) == 0;
        EXPECT(e, help || type, "a comment that is neither HELP nor TYPE: %s", line);
        p += 5;
        size_t nl = strcspn(p, " ");
        EXPECT(e, is_name(p, nl, true) && p[nl] == ' ' && p[nl + 1] != '\0', "bad HELP/TYPE line: %s", line);
        char name[128];
        snprintf(name, sizeof(name), "%.*s", (int) nl, p);
        Family *f = family_find(e, name);
        if (!f) {
                EXPECT(e, e->n < MAX_FAMILIES, "too many families");
                f = &e->fam[e->n++];
                *f = (Family) { .last_le = -INFINITY };
                snprintf(f->name, sizeof(f->name), "%s", name);
        }
        EXPECT(e, !f->closed, "HELP/TYPE for %s after another family", name);
        EXPECT(e, !f->sampled, "HELP/TYPE for %s after its samples", name);
        if (e->current >= 0 && &e->fam[e->current] != f)
                e->fam[e->current].closed = true;
        e->current = (int) (f - e->fam);
        const char *rest = p + nl + 1;
        if (help) {
                EXPECT(e, !f->help, "two HELP lines for %s", name);
                f->help = true;
                for (const char *q = rest; *q; q++)
                        if (*q == '\\') {
                                EXPECT(e, q[1] == '\\' || q[1] == 'n', "bad escape in HELP of %s", name);
                                q++;
                        }
        } else {
                EXPECT(e, !f->typed, "two TYPE lines for %s", name);
                EXPECT(e, !strcmp(rest, "counter") || !strcmp(rest, "gauge") || !strcmp(rest, "histogram") ||
                                  !strcmp(rest, "summary") || !strcmp(rest, "untyped"),
                       "unknown TYPE %s for %s", rest, name);
                f->typed = true;
                snprintf(f->type, sizeof(f->type), "%s", rest);
                EXPECT(e, strcmp(rest, "counter") != 0 || ends_with(name, "_total"),
                       "counter %s does not end in _total", name);
                EXPECT(e, strcmp(rest, "histogram") != 0 || ends_with(name, "_seconds") || ends_with(name, "_bytes") ||
                                  ends_with(name, "_tasks"),
                       "histogram %s is not in a base unit (_seconds, _bytes) nor a count of tasks (_tasks)", name);
        }
        return true;
}

static bool expo_sample(Expo *e, const char *line) {
        size_t nl = strcspn(line, "{ ");
        EXPECT(e, is_name(line, nl, true), "bad metric name in: %s", line);
        char name[128];
        snprintf(name, sizeof(name), "%.*s", (int) nl, line);
        const char *p = line + nl;
        char le[64] = "";
        bool has_le = false;
        if (*p == '{') {
                p++;
                while (*p != '}') {
                        size_t ln = strcspn(p, "=");
                        EXPECT(e, is_name(p, ln, false) && p[ln] == '=' && p[ln + 1] == '"', "bad label in: %s", line);
                        bool is_le = ln == 2 && strncmp(p, "le", 2) == 0;
                        p += ln + 2;
                        char val[128];
                        size_t o = 0;
                        for (; *p != '"'; p++) {
                                EXPECT(e, *p, "unterminated label value in: %s", line);
                                if (*p == '\\') {
                                        p++;
                                        EXPECT(e, *p == '\\' || *p == '"' || *p == 'n', "bad escape in: %s", line);
                                }
                                if (o + 1 < sizeof(val))
                                        val[o++] = *p;
                        }
                        val[o] = '\0';
                        if (is_le) {
                                snprintf(le, sizeof(le), "%s", val);
                                has_le = true;
                        }
                        p++;
                        EXPECT(e, *p == ',' || *p == '}', "labels not separated by ',' in: %s", line);
                        if (*p == ',')
                                p++;
                }
                p++;
        }
        EXPECT(e, *p == ' ', "no single space before the value in: %s", line);
        p++;
        EXPECT(e, !strchr(p, ' '), "a timestamp or trailing text in: %s", line); /* we never send timestamps */
        double v;
        EXPECT(e, parse_value(p, &v), "not a sample value in: %s", line);

        /* Which family: the exact name, or a histogram's _bucket/_sum/_count. */
        Family *f = family_find(e, name);
        const char *suffix = NULL;
        static const char *const suffixes[] = { "_bucket", "_sum", "_count" };
        for (size_t i = 0; !f && i < 3; i++)
                if (ends_with(name, suffixes[i])) {
                        char base[128];
                        snprintf(base, sizeof(base), "%.*s", (int) (strlen(name) - strlen(suffixes[i])), name);
                        Family *h = family_find(e, base);
                        if (h && strcmp(h->type, "histogram") == 0) {
                                f = h;
                                suffix = suffixes[i];
                        }
                }
        EXPECT(e, f && f->help && f->typed, "sample %s without HELP and TYPE before it", name);
        EXPECT(e, !f->closed && &e->fam[e->current] == f, "samples of %s are not together", f->name);
        EXPECT(e, strcmp(f->type, "histogram") != 0 || suffix, "histogram sample %s without a suffix", name);
        f->sampled = true;

        size_t key_len = (size_t) (p - 1 - line);
        EXPECT(e, key_len < 256 && e->n_samples < 256, "too long or too many");
        for (int i = 0; i < e->n_samples; i++)
                EXPECT(e, strncmp(e->samples[i], line, key_len) != 0 || e->samples[i][key_len] != '\0',
                       "duplicate sample %.*s", (int) key_len, line);
        snprintf(e->samples[e->n_samples++], 256, "%.*s", (int) key_len, line);

        EXPECT(e, strcmp(f->type, "counter") != 0 || v >= 0, "negative counter: %s", line);
        if (suffix && strcmp(suffix, "_bucket") == 0) {
                double b;
                EXPECT(e, has_le && parse_value(le, &b), "bucket without a numeric le: %s", line);
                EXPECT(e, !f->has_inf && !f->has_sum && !f->has_count, "bucket after +Inf/_sum/_count: %s", line);
                EXPECT(e, b > f->last_le, "le not increasing: %s", line);
                EXPECT(e, v >= f->last_bucket, "buckets not cumulative: %s", line);
                f->last_le = b;
                f->last_bucket = v;
                if (isinf(b)) {
                        f->has_inf = true;
                        f->inf_bucket = v;
                }
        } else if (suffix && strcmp(suffix, "_sum") == 0) {
                f->has_sum = true;
        } else if (suffix) {
                f->has_count = true;
                f->count = v;
        }
        return true;
}

static bool expo_check(Expo *e, const char *text, size_t len) {
        e->current = -1;
        EXPECT(e, len > 0 && strlen(text) == len, "empty, or a NUL inside");
        EXPECT(e, text[len - 1] == '\n', "the last line does not end with \\n");
        EXPECT(e, !strchr(text, '\r'), "\\r in the text");
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                char line[1024];
                EXPECT(e, (size_t) (nl - p) < sizeof(line), "a line too long");
                snprintf(line, sizeof(line), "%.*s", (int) (nl - p), p);
                EXPECT(e, *line, "an empty line");
                if (line[0] == '#') {
                        EXPECT(e, line[1] == ' ', "bad comment: %s", line);
                        if (!expo_comment(e, line))
                                return false;
                } else if (!expo_sample(e, line))
                        return false;
                p = nl + 1;
        }
        for (int i = 0; i < e->n; i++) {
                Family *f = &e->fam[i];
                EXPECT(e, f->help && f->typed, "%s lacks HELP or TYPE", f->name);
                if (strcmp(f->type, "histogram") == 0) {
                        EXPECT(e, f->has_inf && f->has_sum && f->has_count, "histogram %s lacks +Inf, _sum or _count",
                               f->name);
                        EXPECT(e, f->inf_bucket == f->count, "histogram %s: +Inf bucket %g != _count %g", f->name,
                               f->inf_bucket, f->count);
                }
        }
        return true;
}

/* Checks the whole text; returns the number of families, or -1 and the problem in err. */
static int exposition_check(const char *text, size_t len, char *err, size_t err_size) {
        Expo *e = calloc(1, sizeof(Expo));
        assert_non_null(e);
        int n = expo_check(e, text, len) ? e->n : -1;
        snprintf(err, err_size, "%s", e->err);
        free(e);
        return n;
}

static int assert_exposition(const char *text, size_t len) {
        char err[1400];
        int n = exposition_check(text, len, err, sizeof(err));
        if (n < 0)
                fail_msg("exposition format: %s", err);
        return n;
}

static double dabs(double d) {
        return d < 0 ? -d : d;
}

/* The value of one sample ("name{labels}" exactly as rendered), or NAN. */
static double sample_value(const char *text, const char *key) {
        size_t kl = strlen(key);
        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
                        return strtod(p + kl + 1, NULL);
        return NAN;
}

static void test_exposition_checker_refuses(void **state) {
        /* The checker itself catches what it is meant to. */
        static const char *const bad[] = {
                "x_total 1\n",                                              /* no HELP/TYPE */
                "# HELP x_total h\n# TYPE x_total counter\nx_total 1",      /* no final newline */
                "# HELP x h\n# TYPE x counter\nx 1\n",                       /* counter without _total */
                "# HELP x_total h\n# TYPE x_total counter\nx_total{a=\"b} 1\n",
                "# HELP x_total h\n# TYPE x_total counter\nx_total{a=\"\\t\"} 1\n",
                "# HELP x_total h\n# TYPE x_total counter\nx_total  1\n",
                "# HELP x_total h\n# TYPE x_total counter\nx_total one\n",
                "# HELP h_seconds h\n# TYPE h_seconds histogram\nh_seconds_bucket{le=\"1\"} 2\n"
                "h_seconds_bucket{le=\"+Inf\"} 1\nh_seconds_sum 1\nh_seconds_count 1\n", /* not cumulative */
                "# HELP h_seconds h\n# TYPE h_seconds histogram\nh_seconds_bucket{le=\"1\"} 1\n"
                "h_seconds_sum 1\nh_seconds_count 1\n",                      /* no +Inf */
                "# HELP h h\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", /* no unit */
                "# HELP g h\n# TYPE g gauge\ng 1\ng 2\n",                    /* duplicate */
                "# HELP g h\n# TYPE g gauge\ng 1\n\n",                       /* empty line */
                "# HELP g h\n# TYPE g gauge\n# HELP k h\n# TYPE k gauge\nk 1\ng 1\n", /* interleaved */
                "# TYPE g gauge\ng 1\n",                                     /* no HELP */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char err[1400];
                if (exposition_check(bad[i], strlen(bad[i]), err, sizeof(err)) >= 0)
                        fail_msg("the checker accepted bad text #%zu", i);
        }
        const char *good = "# HELP g a \\\\ \\n doc\n# TYPE g gauge\ng{a=\"x\\\"y\",b=\"\"} -1.5e3\n";
        assert_exposition(good, strlen(good));
}

static void test_exposition(void **state) {
        Metrics *m = NULL;
        Capture c;
        capture_open(&c);
        assert_int_equal(metrics_new("0.1.0-\"q\"\\", "http", c.f, &m), 0);

        /* Fresh: every series is there with 0, so rate() works from the first scrape. */
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(metrics_render(m, &text, &len), 0);
        int families = assert_exposition(text, len);
        assert_true(families >= 10);
        const char *outcomes[] = { "ok", "nonzero", "timeout", "oom", "pids", "signal", "cancelled", "rejected" };
        for (size_t i = 0; i < 8; i++) {
                char key[128];
                snprintf(key, sizeof(key), "mcp_execd_runs_total{outcome=\"%s\"}", outcomes[i]);
                assert_true(sample_value(text, key) == 0);
        }
        assert_true(sample_value(text, "mcp_execd_run_duration_seconds_count") == 0);
        assert_true(sample_value(text, "mcp_execd_py_sessions_open") == 0);
        assert_true(sample_value(text, "mcp_execd_py_sessions_memory_bytes") == 0);
        assert_true(sample_value(text, "mcp_execd_build_info{version=\"0.1.0-\\\"q\\\"\\\\\",transport=\"http\"}") == 1);
        free(text);

        MetricsRun r = sample_run(); /* ok, 12 ms, queue 3 ms, scope 4.2 ms, 9 MiB */
        metrics_run_finished(m, &r);
        r.exit_code = 2;
        r.duration_ms = 700;
        r.truncated = true;
        metrics_run_finished(m, &r);
        r = sample_run();
        r.timed_out = true;
        r.exit_code = -1;
        r.signal = "SIGKILL";
        r.duration_ms = 1000;
        r.memory_peak_bytes = 0; /* unknown: not observed */
        r.scope_start_usec = 0;
        metrics_run_finished(m, &r);
        r.error = "no scope";
        metrics_run_finished(m, &r);
        metrics_run_rejected(m, &(MetricsRejection) { .reason = "invalid-arguments" });
        metrics_run_rejected(m, &(MetricsRejection) { .reason = "session-queue-full" });
        metrics_set_runs(m, 3, 5);
        metrics_set_py_sessions(m, 2, UINT64_C(5) << 30); /* past 32 bits */

        assert_int_equal(metrics_render(m, &text, &len), 0);
        assert_int_equal(assert_exposition(text, len), families);
        assert_true(sample_value(text, "mcp_execd_runs_total{outcome=\"ok\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_runs_total{outcome=\"nonzero\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_runs_total{outcome=\"timeout\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_runs_total{outcome=\"error\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_runs_total{outcome=\"rejected\"}") == 2);
        assert_true(sample_value(text, "mcp_execd_runs_total{outcome=\"oom\"}") == 0);
        assert_true(sample_value(text, "mcp_execd_runs_rejected_total{reason=\"invalid-arguments\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_runs_rejected_total{reason=\"session-queue-full\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_runs_rejected_total{reason=\"queue-full\"}") == 0);
        assert_true(sample_value(text, "mcp_execd_runs_truncated_total") == 1);
        /* Durations 12, 700 and 1000 ms (the failed run has none). */
        assert_true(sample_value(text, "mcp_execd_run_duration_seconds_bucket{le=\"0.01\"}") == 0);
        assert_true(sample_value(text, "mcp_execd_run_duration_seconds_bucket{le=\"0.025\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_run_duration_seconds_bucket{le=\"0.5\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_run_duration_seconds_bucket{le=\"1\"}") == 3);
        assert_true(sample_value(text, "mcp_execd_run_duration_seconds_bucket{le=\"+Inf\"}") == 3);
        assert_true(sample_value(text, "mcp_execd_run_duration_seconds_count") == 3);
        assert_true(dabs(sample_value(text, "mcp_execd_run_duration_seconds_sum") - 1.712) < 1e-9);
        /* Queue waits: 3 ms, four times (failed runs waited too). */
        assert_true(sample_value(text, "mcp_execd_run_queue_wait_seconds_bucket{le=\"0.001\"}") == 0);
        assert_true(sample_value(text, "mcp_execd_run_queue_wait_seconds_bucket{le=\"0.005\"}") == 4);
        assert_true(dabs(sample_value(text, "mcp_execd_run_queue_wait_seconds_sum") - 0.012) < 1e-9);
        /* Scope start: 4.2 ms twice; memory: 9 MiB twice, in bytes. */
        assert_true(sample_value(text, "mcp_execd_scope_start_seconds_bucket{le=\"0.005\"}") == 2);
        assert_true(sample_value(text, "mcp_execd_scope_start_seconds_count") == 2);
        assert_true(sample_value(text, "mcp_execd_run_memory_peak_bytes_bucket{le=\"4194304\"}") == 0);
        assert_true(sample_value(text, "mcp_execd_run_memory_peak_bytes_bucket{le=\"16777216\"}") == 2);
        assert_true(sample_value(text, "mcp_execd_run_memory_peak_bytes_sum") == 2.0 * 9 * 1024 * 1024);
        assert_true(sample_value(text, "mcp_execd_runs_running") == 3);
        assert_true(sample_value(text, "mcp_execd_runs_queued") == 5);
        assert_true(sample_value(text, "mcp_execd_py_sessions_open") == 2);
        assert_true(sample_value(text, "mcp_execd_py_sessions_memory_bytes") == 5.0 * 1024 * 1024 * 1024);
        assert_true(dabs(sample_value(text, "mcp_execd_run_cpu_seconds_total{mode=\"user\"}") - 0.044) < 1e-9);
        assert_true(sample_value(text, "mcp_execd_start_time_seconds") > 1.7e9);
        free(text);
        capture_close(&c);
        metrics_capture_done(&c, m);
}

/* Issue 33.1: the kernel's account of a run: its known figures in the record (the unknown left out,
 * never 0), the sums in counters of their own, pids.peak in a histogram. */
static void test_account(void **state) {
        Capture c;
        Metrics *m = metrics_capture(&c, "http");
        MetricsRun r = sample_run();
        exec_account_set(&r.account, EXEC_ACCOUNT_CPU_PRESSURE_SOME_US, 1500000);
        exec_account_set(&r.account, EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US, 250);
        exec_account_set(&r.account, EXEC_ACCOUNT_IO_WRITE_BYTES, 4096);
        exec_account_set(&r.account, EXEC_ACCOUNT_PIDS_PEAK, 12);
        metrics_run_finished(m, &r);
        metrics_run_finished(m, &r);
        r = sample_run(); /* rlimit mode: nothing known */
        r.limits = "rlimit";
        metrics_run_finished(m, &r);
        capture_close(&c);

        char *lines[3];
        split_lines(c.data, lines, 3);
        assert_field(lines[0], "CPU_PRESSURE_SOME_US", "1500000");
        assert_field(lines[0], "MEMORY_PRESSURE_FULL_US", "250");
        assert_field(lines[0], "IO_WRITE_BYTES", "4096");
        assert_field(lines[0], "PIDS_PEAK", "12");
        char v[64];
        for (ExecAccountField f = 0; f < _EXEC_ACCOUNT_MAX; f++)
                if (f != EXEC_ACCOUNT_CPU_PRESSURE_SOME_US && f != EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US &&
                    f != EXEC_ACCOUNT_IO_WRITE_BYTES && f != EXEC_ACCOUNT_PIDS_PEAK)
                        assert_false(line_field(lines[0], exec_account_field(f), v, sizeof(v)));
        for (ExecAccountField f = 0; f < _EXEC_ACCOUNT_MAX; f++)
                assert_false(line_field(lines[2], exec_account_field(f), v, sizeof(v)));

        char *text = NULL;
        size_t len = 0;
        assert_int_equal(metrics_render(m, &text, &len), 0);
        (void) assert_exposition(text, len);
        assert_true(sample_value(text, "mcp_execd_run_pressure_stall_seconds_total{resource=\"cpu\",kind=\"some\"}") == 3);
        assert_true(dabs(sample_value(text, "mcp_execd_run_pressure_stall_seconds_total{resource=\"memory\",kind=\"full\"}") -
                         0.0005) < 1e-12);
        assert_true(sample_value(text, "mcp_execd_run_pressure_stall_seconds_total{resource=\"io\",kind=\"some\"}") == 0);
        assert_true(sample_value(text, "mcp_execd_run_io_bytes_total{direction=\"write\"}") == 8192);
        assert_true(sample_value(text, "mcp_execd_run_io_bytes_total{direction=\"read\"}") == 0);
        /* Two runs with 12 tasks at most; the rlimit run has no peak and is not observed. */
        assert_true(sample_value(text, "mcp_execd_run_peak_tasks_bucket{le=\"8\"}") == 0);
        assert_true(sample_value(text, "mcp_execd_run_peak_tasks_bucket{le=\"16\"}") == 2);
        assert_true(sample_value(text, "mcp_execd_run_peak_tasks_count") == 2);
        assert_true(sample_value(text, "mcp_execd_run_peak_tasks_sum") == 24);
        free(text);
        metrics_capture_done(&c, m);
}

/* Issue 31.5: who called, in the records (TENANT=, never more) and in counters of their own, one
 * series per tenant that ran; the totals count every run, a tenant's or not; no tenant family
 * before one has run (a daemon without tenants shows none). */
static void test_tenants(void **state) {
        Capture c;
        Metrics *m = metrics_capture(&c, "http");
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(metrics_render(m, &text, &len), 0);
        int families = assert_exposition(text, len);
        assert_null(strstr(text, "mcp_execd_tenant_"));
        free(text);

        MetricsRun r = sample_run();
        r.tenant = "alpha";
        metrics_run_finished(m, &r);
        metrics_run_finished(m, &r);
        r.tenant = "beta";
        r.exit_code = 1;
        metrics_run_finished(m, &r);
        r.tenant = NULL;
        metrics_run_finished(m, &r);
        metrics_run_rejected(m, &(MetricsRejection) { .reason = "queue-full", .tenant = "beta" });
        capture_close(&c);
        assert_field(c.data, "TENANT", "alpha"); /* the first record's */
        assert_non_null(strstr(c.data, " TENANT=beta"));

        assert_int_equal(metrics_render(m, &text, &len), 0);
        assert_int_equal(assert_exposition(text, len), families + 2);
        assert_true(sample_value(text, "mcp_execd_tenant_runs_total{tenant=\"alpha\",outcome=\"ok\"}") == 2);
        assert_true(sample_value(text, "mcp_execd_tenant_runs_total{tenant=\"alpha\",outcome=\"nonzero\"}") == 0);
        assert_true(sample_value(text, "mcp_execd_tenant_runs_total{tenant=\"alpha\",outcome=\"rejected\"}") == 0);
        assert_true(sample_value(text, "mcp_execd_tenant_runs_total{tenant=\"beta\",outcome=\"nonzero\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_tenant_runs_total{tenant=\"beta\",outcome=\"rejected\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_runs_total{outcome=\"ok\"}") == 2);
        assert_true(sample_value(text, "mcp_execd_runs_total{outcome=\"nonzero\"}") == 2);
        assert_true(dabs(sample_value(text, "mcp_execd_tenant_cpu_seconds_total{tenant=\"alpha\",mode=\"user\"}") - 0.022) < 1e-9);
        assert_true(dabs(sample_value(text, "mcp_execd_tenant_cpu_seconds_total{tenant=\"beta\",mode=\"system\"}") - 0.004) < 1e-9);
        assert_true(dabs(sample_value(text, "mcp_execd_run_cpu_seconds_total{mode=\"user\"}") - 0.044) < 1e-9);
        free(text);
        metrics_capture_done(&c, m);
}

/* Issue 32.3: each egress decision is a record (host, port, decision, bytes; never a path or a
 * byte of the traffic, which the record is never given) and counted by decision and direction. */
static void test_egress(void **state) {
        Capture c;
        Metrics *m = metrics_capture(&c, "http");
        metrics_egress(m, &(MetricsEgress) { .run_id = "0123456789abcdef", .tenant = "alpha", .host = "pypi.org",
                                             .port = 443, .allowed = true, .sent = 1200, .received = 34567 });
        metrics_egress(m, &(MetricsEgress) { .run_id = "0123456789abcdef", .host = "169.254.169.254", .port = 80,
                                             .reason = "this host and port are not in the run's egress allowlist" });
        capture_close(&c);
        assert_field(c.data, "MESSAGE_ID", METRICS_MESSAGE_EGRESS);
        assert_field(c.data, "EGRESS_HOST", "pypi.org");
        assert_field(c.data, "EGRESS_DECISION", "allowed");
        assert_field(c.data, "EGRESS_BYTES_RECEIVED", "34567");
        assert_field(c.data, "TENANT", "alpha");
        assert_non_null(strstr(c.data, " EGRESS_DECISION=denied"));
        assert_non_null(strstr(c.data, "egress denied 169.254.169.254:80 for run 0123456789abcdef: this host"));
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(metrics_render(m, &text, &len), 0);
        assert_exposition(text, len);
        assert_true(sample_value(text, "mcp_execd_egress_connections_total{decision=\"allowed\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_egress_connections_total{decision=\"denied\"}") == 1);
        assert_true(sample_value(text, "mcp_execd_egress_bytes_total{direction=\"sent\"}") == 1200);
        assert_true(sample_value(text, "mcp_execd_egress_bytes_total{direction=\"received\"}") == 34567);
        free(text);
        metrics_capture_done(&c, m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_outcome),
                cmocka_unit_test(test_run_record_line),
                cmocka_unit_test(test_run_record_traceparent),
                cmocka_unit_test(test_run_record_timeout_and_signal),
                cmocka_unit_test(test_error_record_quotes_and_stays_one_line),
                cmocka_unit_test(test_other_records),
                cmocka_unit_test(test_py_session_records),
                cmocka_unit_test(test_message_ids_are_128_bit_hex),
                cmocka_unit_test(test_journal_detection),
                cmocka_unit_test(test_exposition_checker_refuses),
                cmocka_unit_test(test_exposition),
                cmocka_unit_test(test_egress),
                cmocka_unit_test(test_tenants),
                cmocka_unit_test(test_account),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
