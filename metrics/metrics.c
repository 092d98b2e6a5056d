/* metrics.c: run records (journald or one stderr line), counters, histograms and their Prometheus
 * text exposition. Every field is a number, a flag, a fixed word or our own text: the callers
 * hand in sizes of code, stdin and output, never the bytes. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "cleanup.h"
#include "metrics.h"
#include "str-util.h"

#define SYSLOG_IDENTIFIER "mcp-execd"
#define RECORD_FIELDS_MAX 48

/* ---- histograms ----------------------------------------------------------------------------- */

/* Buckets in the unit the observations are stored in (ms, µs, bytes); rendered in base units
 * (seconds, bytes) by dividing by scale. Bounds are chosen for what a run costs: Python alone
 * starts in ~20 ms, numpy+pandas in ~420 ms, the deadline is at most MCP_EXEC_MAX_TIMEOUT_S. */
static const uint64_t duration_ms_bounds[] = { 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000,
                                               60000, 120000, 300000 };
static const uint64_t queue_ms_bounds[] = { 1, 5, 10, 50, 100, 500, 1000, 5000, 10000, 30000, 60000 };
static const uint64_t scope_us_bounds[] = { 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
                                            1000000, 2500000 };
#define MiB (UINT64_C(1024) * 1024)
static const uint64_t memory_bounds[] = { 1 * MiB, 4 * MiB, 16 * MiB, 32 * MiB, 64 * MiB, 128 * MiB, 256 * MiB,
                                          512 * MiB, 1024 * MiB, 2048 * MiB, 4096 * MiB };
static const uint64_t pids_bounds[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };
#define HISTOGRAM_BUCKETS_MAX 16

typedef struct Histogram {
        const char *name;
        const char *help;
        const uint64_t *bounds;
        size_t n_bounds;
        uint64_t scale; /* stored units per base unit */
        uint64_t buckets[HISTOGRAM_BUCKETS_MAX + 1]; /* per bucket (not cumulative); the last is +Inf */
        uint64_t sum;
        uint64_t count;
} Histogram;

static void histogram_observe(Histogram *h, uint64_t v) {
        size_t i = 0;
        while (i < h->n_bounds && v > h->bounds[i])
                i++;
        h->buckets[i]++;
        h->sum += v;
        h->count++;
}

enum { HIST_DURATION, HIST_QUEUE, HIST_SCOPE, HIST_MEMORY, HIST_PIDS, _HIST_MAX };

/* The sums of runs' kernel accounts (issue 33.1), each a series of a family; pids.peak, a peak, is a
 * histogram instead (HIST_PIDS). A family's series are adjacent. */
static const struct AccountFamily {
        const char *name, *help;
        uint64_t scale; /* stored units per base unit */
} account_pressure = { "mcp_execd_run_pressure_stall_seconds_total",
                       "Time runs' tasks stalled waiting for a resource (their cgroup's pressure stall "
                       "information; cgroup modes).", 1000000 },
  account_io = { "mcp_execd_run_io_bytes_total",
                 "Bytes runs read from and wrote to block devices (their cgroup's io.stat; cgroup modes).", 1 };
static const struct AccountSeries {
        ExecAccountField field;
        const struct AccountFamily *family;
        const char *labels;
} account_series[] = {
        { EXEC_ACCOUNT_CPU_PRESSURE_SOME_US, &account_pressure, "resource=\"cpu\",kind=\"some\"" },
        { EXEC_ACCOUNT_MEMORY_PRESSURE_SOME_US, &account_pressure, "resource=\"memory\",kind=\"some\"" },
        { EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US, &account_pressure, "resource=\"memory\",kind=\"full\"" },
        { EXEC_ACCOUNT_IO_PRESSURE_SOME_US, &account_pressure, "resource=\"io\",kind=\"some\"" },
        { EXEC_ACCOUNT_IO_PRESSURE_FULL_US, &account_pressure, "resource=\"io\",kind=\"full\"" },
        { EXEC_ACCOUNT_IO_READ_BYTES, &account_io, "direction=\"read\"" },
        { EXEC_ACCOUNT_IO_WRITE_BYTES, &account_io, "direction=\"write\"" },
};

/* Why a call is refused before it runs, each counted under its name. A bound of the daemon's (its
 * capacity, a session's or a tenant's share of it) is a warning: the operator may want to raise it;
 * a caller's mistake is information. */
static const struct RejectionReason {
        const char *name;
        bool bound;
} rejection_reasons[] = {
        { "queue-full", true },         { "session-queue-full", true }, { "tenant-queue-full", true },
        { "shutting-down", true },      { "invalid-arguments", false }, { "duplicate-id", false },
        { "tasks-full", true },         { "client-tasks-full", true },  { "tenant-tasks-full", true },
};

/* A tenant's own counters (issue 31.5): its runs by outcome and their CPU. Only configured names
 * reach here (a tenant is who authenticated), and a name once seen keeps its counters across
 * reloads (a counter never goes back), so the series stay as few as the names ever configured. */
#define METRICS_TENANTS_MAX 4096
typedef struct TenantCounts {
        char *name;
        uint64_t runs[_METRICS_OUTCOME_MAX];
        uint64_t cpu_user_us, cpu_system_us;
} TenantCounts;

struct Metrics {
        char *version;
        char *transport;
        FILE *stream; /* NULL: the journal */
        uint64_t start_time_sec;
        uint64_t runs[_METRICS_OUTCOME_MAX];
        uint64_t rejected[ELEMENTSOF(rejection_reasons)];
        uint64_t truncated;
        uint64_t cpu_user_us, cpu_system_us;
        uint32_t running, queued;
        uint64_t warm;             /* runs served by a ready sandbox */
        uint32_t pool_ready;
        uint64_t pool_memory_bytes;
        uint32_t py_sessions_open;
        uint64_t py_sessions_memory_bytes;
        Histogram hist[_HIST_MAX];
        TenantCounts *tenants;
        size_t n_tenants;
        uint64_t egress_connections[2]; /* denied, allowed */
        uint64_t egress_sent, egress_received;
        uint64_t account[_EXEC_ACCOUNT_MAX]; /* sums of the known figures (account_series) */
};

static const char *const outcome_names[_METRICS_OUTCOME_MAX] = {
        [METRICS_OUTCOME_OK] = "ok",
        [METRICS_OUTCOME_NONZERO] = "nonzero",
        [METRICS_OUTCOME_TIMEOUT] = "timeout",
        [METRICS_OUTCOME_OOM] = "oom",
        [METRICS_OUTCOME_PIDS] = "pids",
        [METRICS_OUTCOME_SIGNAL] = "signal",
        [METRICS_OUTCOME_CANCELLED] = "cancelled",
        [METRICS_OUTCOME_REJECTED] = "rejected",
        [METRICS_OUTCOME_ERROR] = "error",
};

const char *metrics_outcome_to_string(MetricsOutcome o) {
        return (unsigned) o < _METRICS_OUTCOME_MAX ? outcome_names[o] : NULL;
}

MetricsOutcome metrics_run_outcome(const MetricsRun *run) {
        if (run->error)
                return METRICS_OUTCOME_ERROR;
        if (run->cancelled)
                return METRICS_OUTCOME_CANCELLED;
        if (run->timed_out)
                return METRICS_OUTCOME_TIMEOUT;
        if (run->oom_killed)
                return METRICS_OUTCOME_OOM;
        if (run->pids_limit_hit && run->exit_code != 0)
                return METRICS_OUTCOME_PIDS;
        if (run->signal || run->exit_code < 0)
                return METRICS_OUTCOME_SIGNAL;
        if (run->exit_code != 0)
                return METRICS_OUTCOME_NONZERO;
        return METRICS_OUTCOME_OK;
}

bool metrics_stderr_is_journal(void) {
        /* systemd.exec(5), $JOURNAL_STREAM: "<device>:<inode>" of the stream, both decimal. */
        const char *e = getenv("JOURNAL_STREAM");
        if (!e)
                return false;
        unsigned long long dev, ino;
        int n = 0;
        if (sscanf(e, "%llu:%llu%n", &dev, &ino, &n) != 2 || e[n] != '\0')
                return false;
        struct stat st;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

int metrics_new(const char *version, const char *transport, FILE *stream, Metrics **ret) {
        _cleanup_(metrics_freep) Metrics *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->version = strdup(version);
        m->transport = strdup(transport);
        if (!m->version || !m->transport)
                return -ENOMEM;
        m->stream = stream;
        struct timespec ts;
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        m->start_time_sec = (uint64_t) ts.tv_sec;
        m->hist[HIST_DURATION] = (Histogram) {
                .name = "mcp_execd_run_duration_seconds",
                .help = "Wall time of runs, from the release of Python to its exit (queue wait not included).",
                .bounds = duration_ms_bounds, .n_bounds = ELEMENTSOF(duration_ms_bounds), .scale = 1000,
        };
        m->hist[HIST_QUEUE] = (Histogram) {
                .name = "mcp_execd_run_queue_wait_seconds",
                .help = "Time calls waited for a free run slot (MCP_EXEC_MAX_CONCURRENT).",
                .bounds = queue_ms_bounds, .n_bounds = ELEMENTSOF(queue_ms_bounds), .scale = 1000,
        };
        m->hist[HIST_SCOPE] = (Histogram) {
                .name = "mcp_execd_scope_start_seconds",
                .help = "Latency of placing a run in its systemd scope (StartTransientUnit to JobRemoved done).",
                .bounds = scope_us_bounds, .n_bounds = ELEMENTSOF(scope_us_bounds), .scale = 1000000,
        };
        m->hist[HIST_PIDS] = (Histogram) {
                .name = "mcp_execd_run_peak_tasks",
                .help = "The most tasks runs had at once (their cgroup's pids.peak, where the kernel has it).",
                .bounds = pids_bounds, .n_bounds = ELEMENTSOF(pids_bounds), .scale = 1,
        };
        m->hist[HIST_MEMORY] = (Histogram) {
                .name = "mcp_execd_run_memory_peak_bytes",
                .help = "Peak memory of runs whose peak is known (memory.peak, or the largest RSS with rlimits).",
                .bounds = memory_bounds, .n_bounds = ELEMENTSOF(memory_bounds), .scale = 1,
        };
        *ret = TAKE_PTR(m);
        return 0;
}

Metrics *metrics_free(Metrics *m) {
        if (!m)
                return NULL;
        free(m->version);
        free(m->transport);
        for (size_t i = 0; i < m->n_tenants; i++)
                free(m->tenants[i].name);
        free(m->tenants);
        free(m);
        return NULL;
}

/* name's counters, made at its first run; NULL without memory or past METRICS_TENANTS_MAX (its
 * runs are then in the totals only). */
static TenantCounts *tenant_counts(Metrics *m, const char *name) {
        for (size_t i = 0; i < m->n_tenants; i++)
                if (strcmp(m->tenants[i].name, name) == 0)
                        return &m->tenants[i];
        if (m->n_tenants >= METRICS_TENANTS_MAX)
                return NULL;
        TenantCounts *v = reallocarray(m->tenants, m->n_tenants + 1, sizeof(*v));
        if (!v)
                return NULL;
        m->tenants = v;
        char *copy = strdup(name);
        if (!copy)
                return NULL;
        m->tenants[m->n_tenants] = (TenantCounts) { .name = copy };
        return &m->tenants[m->n_tenants++];
}

/* ---- records -------------------------------------------------------------------------------- */

typedef struct Record {
        int priority;
        char *message;
        size_t n;
        char *fields[RECORD_FIELDS_MAX]; /* "NAME=value" */
} Record;

static void record_done(Record *r) {
        free(r->message);
        for (size_t i = 0; i < r->n; i++)
                free(r->fields[i]);
        *r = (Record) {};
}

static void record_add(Record *r, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void record_add(Record *r, const char *name, const char *fmt, ...) {
        if (r->n >= RECORD_FIELDS_MAX)
                return;
        _cleanup_free_ char *value = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&value, fmt, ap);
        va_end(ap);
        if (k < 0)
                return; /* out of memory: the record goes without this field */
        char *f = NULL;
        if (asprintf(&f, "%s=%s", name, value) < 0)
                return;
        r->fields[r->n++] = f;
}

static void record_message(Record *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void record_message(Record *r, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&r->message, fmt, ap) < 0)
                r->message = NULL;
        va_end(ap);
}

/* A value goes bare when it is one plain word, else quoted with \" \\ \n \t escapes, so the line
 * stays one line and splits unambiguously. */
static void line_append_value(Buf *b, const char *v) {
        bool plain = *v != '\0';
        for (const char *p = v; *p && plain; p++)
                plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                        strchr("._:/@+-%", *p);
        if (plain || *v == '\0') {
                (void) buf_append(b, v, strlen(v));
                return;
        }
        (void) buf_append(b, "\"", 1);
        for (const char *p = v; *p; p++) {
                const char *esc = *p == '"' ? "\\\"" : *p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : NULL;
                if (esc)
                        (void) buf_append(b, esc, 2);
                else if ((unsigned char) *p < 0x20)
                        (void) buf_append(b, "?", 1);
                else
                        (void) buf_append(b, p, 1);
        }
        (void) buf_append(b, "\"", 1);
}

static void record_emit(const Metrics *m, Record *r) {
        if (!m->stream) {
                char prio[16];
                snprintf(prio, sizeof(prio), "PRIORITY=%d", r->priority);
                _cleanup_free_ char *message = NULL;
                if (asprintf(&message, "MESSAGE=%s", r->message ?: "") < 0)
                        message = NULL;
                struct iovec iov[RECORD_FIELDS_MAX + 3];
                size_t n = 0;
                if (message)
                        iov[n++] = (struct iovec) { message, strlen(message) };
                iov[n++] = (struct iovec) { prio, strlen(prio) };
                iov[n++] = (struct iovec) { (char *) "SYSLOG_IDENTIFIER=" SYSLOG_IDENTIFIER,
                                            strlen("SYSLOG_IDENTIFIER=" SYSLOG_IDENTIFIER) };
                for (size_t i = 0; i < r->n; i++)
                        iov[n++] = (struct iovec) { r->fields[i], strlen(r->fields[i]) };
                /* Returns an error when journald is gone; a record is not worth failing a run for. */
                (void) sd_journal_sendv(iov, (int) n);
                return;
        }

        Buf b = {};
        char head[64];
        snprintf(head, sizeof(head), "<%d>" SYSLOG_IDENTIFIER ": ", r->priority);
        (void) buf_append(&b, head, strlen(head));
        const char *msg = r->message ?: "";
        for (const char *p = msg; *p; p++) /* our own text, but keep it one line whatever it holds */
                (void) buf_append(&b, (unsigned char) *p < 0x20 ? "?" : p, 1);
        (void) buf_append(&b, ";", 1);
        for (size_t i = 0; i < r->n; i++) {
                const char *eq = strchr(r->fields[i], '=');
                (void) buf_append(&b, " ", 1);
                (void) buf_append(&b, r->fields[i], (size_t) (eq - r->fields[i] + 1));
                line_append_value(&b, eq + 1);
        }
        (void) buf_append(&b, "\n", 1);
        if (b.data) {
                (void) fwrite(b.data, 1, b.len, m->stream);
                (void) fflush(m->stream);
        }
        buf_done(&b);
}

static const char *yes_no(bool b) {
        return b ? "1" : "0";
}

void metrics_run_finished(Metrics *m, const MetricsRun *run) {
        MetricsOutcome o = metrics_run_outcome(run);
        const char *id = run->run_id ?: "";

        m->runs[o]++;
        if (run->truncated)
                m->truncated++;
        m->cpu_user_us += run->cpu_user_us;
        m->cpu_system_us += run->cpu_system_us;
        TenantCounts *t = run->tenant ? tenant_counts(m, run->tenant) : NULL;
        if (t) {
                t->runs[o]++;
                t->cpu_user_us += run->cpu_user_us;
                t->cpu_system_us += run->cpu_system_us;
        }
        if (run->warm)
                m->warm++;
        histogram_observe(&m->hist[HIST_QUEUE], run->queue_ms);
        if (run->scope_start_usec > 0)
                histogram_observe(&m->hist[HIST_SCOPE], run->scope_start_usec);
        if (o != METRICS_OUTCOME_ERROR) {
                histogram_observe(&m->hist[HIST_DURATION], run->duration_ms);
                if (run->memory_peak_bytes > 0)
                        histogram_observe(&m->hist[HIST_MEMORY], run->memory_peak_bytes);
                if (exec_account_known(&run->account, EXEC_ACCOUNT_PIDS_PEAK))
                        histogram_observe(&m->hist[HIST_PIDS], run->account.v[EXEC_ACCOUNT_PIDS_PEAK]);
        }
        for (size_t i = 0; i < ELEMENTSOF(account_series); i++)
                if (exec_account_known(&run->account, account_series[i].field))
                        m->account[account_series[i].field] += run->account.v[account_series[i].field];

        _cleanup_(record_done) Record r = { .priority = LOG_INFO };
        switch (o) {
        case METRICS_OUTCOME_OK:
        case METRICS_OUTCOME_NONZERO:
                record_message(&r, "run %s finished: exit code %d after %" PRIu64 " ms%s", id, run->exit_code,
                               run->duration_ms, run->truncated ? ", output truncated" : "");
                break;
        case METRICS_OUTCOME_TIMEOUT:
                r.priority = LOG_NOTICE;
                record_message(&r, "run %s timed out after %" PRIu32 " s and was killed%s", id, run->timeout_s,
                               run->truncated ? ", output truncated" : "");
                break;
        case METRICS_OUTCOME_OOM:
                r.priority = LOG_NOTICE;
                record_message(&r, "run %s was killed by the memory limit (peak %" PRIu64 " bytes)", id,
                               run->memory_peak_bytes);
                break;
        case METRICS_OUTCOME_PIDS:
                r.priority = LOG_NOTICE;
                record_message(&r, "run %s hit the task limit and ended with exit code %d", id, run->exit_code);
                break;
        case METRICS_OUTCOME_SIGNAL:
                record_message(&r, "run %s was ended by %s", id, run->signal ?: "a signal");
                break;
        case METRICS_OUTCOME_CANCELLED:
                record_message(&r, "run %s was cancelled and killed after %" PRIu64 " ms", id, run->duration_ms);
                break;
        case METRICS_OUTCOME_ERROR:
                r.priority = LOG_ERR;
                record_message(&r, "run %s could not run: %s", id, run->error);
                break;
        default:
                break;
        }

        record_add(&r, "MESSAGE_ID", "%s", METRICS_MESSAGE_RUN_FINISHED);
        record_add(&r, "RUN_ID", "%s", id);
        record_add(&r, "UNIT", "%s", run->unit ?: "");
        /* journalctl -u <scope> also shows messages of root daemons that name it this way. */
        if (run->unit)
                record_add(&r, "OBJECT_SYSTEMD_UNIT", "%s", run->unit);
        record_add(&r, "TRANSPORT", "%s", m->transport);
        record_add(&r, "OUTCOME", "%s", outcome_names[o]);
        record_add(&r, "LIMITS", "%s", run->limits ?: "");
        if (o == METRICS_OUTCOME_ERROR)
                record_add(&r, "EXIT_CODE", "%s", "");
        else
                record_add(&r, "EXIT_CODE", "%d", run->exit_code);
        record_add(&r, "SIGNAL", "%s", run->signal ?: "");
        record_add(&r, "TIMED_OUT", "%s", yes_no(run->timed_out));
        record_add(&r, "OOM_KILLED", "%s", yes_no(run->oom_killed));
        record_add(&r, "PIDS_LIMIT_HIT", "%s", yes_no(run->pids_limit_hit));
        record_add(&r, "TRUNCATED", "%s", yes_no(run->truncated));
        record_add(&r, "DURATION_MS", "%" PRIu64, run->duration_ms);
        record_add(&r, "QUEUE_MS", "%" PRIu64, run->queue_ms);
        record_add(&r, "TIMEOUT_S", "%" PRIu32, run->timeout_s);
        record_add(&r, "MEMORY_PEAK_BYTES", "%" PRIu64, run->memory_peak_bytes);
        record_add(&r, "CPU_USER_US", "%" PRIu64, run->cpu_user_us);
        record_add(&r, "CPU_SYSTEM_US", "%" PRIu64, run->cpu_system_us);
        record_add(&r, "CODE_BYTES", "%" PRIu64, run->code_bytes);
        record_add(&r, "STDIN_BYTES", "%" PRIu64, run->stdin_bytes);
        record_add(&r, "STDOUT_BYTES", "%" PRIu64, run->stdout_bytes);
        record_add(&r, "STDERR_BYTES", "%" PRIu64, run->stderr_bytes);
        if (run->scope_start_usec > 0)
                record_add(&r, "SCOPE_START_US", "%" PRIu64, run->scope_start_usec);
        record_add(&r, "WARM", "%s", yes_no(run->warm));
        record_add(&r, "MEMORY_AT_START_BYTES", "%" PRIu64, run->memory_at_start_bytes);
        /* Issue 33.1: the kernel's account, only what it has (none in rlimit mode). */
        for (ExecAccountField f = 0; f < _EXEC_ACCOUNT_MAX; f++)
                if (exec_account_known(&run->account, f))
                        record_add(&r, exec_account_field(f), "%" PRIu64, run->account.v[f]);
        /* The agent's trace (issue 17.5): joins this run to it (journalctl TRACEPARENT=…). */
        if (run->traceparent)
                record_add(&r, "TRACEPARENT", "%s", run->traceparent);
        if (run->tenant) /* the name, never a token nor its hash (issue 31.5) */
                record_add(&r, "TENANT", "%s", run->tenant);
        /* Issue 18.7: the call's session, so its calls, open and close join (journalctl PY_SESSION_ID=…). */
        if (run->py_session_id) {
                record_add(&r, "PY_SESSION_ID", "%s", run->py_session_id);
                record_add(&r, "PY_SESSION_CALL", "%" PRIu64, run->py_session_call);
        }
        if (run->error)
                record_add(&r, "ERROR", "%s", run->error);
        record_emit(m, &r);
}

void metrics_run_rejected(Metrics *m, const MetricsRejection *rej) {
        const char *reason = rej->reason ?: "";
        m->runs[METRICS_OUTCOME_REJECTED]++;
        TenantCounts *t = rej->tenant ? tenant_counts(m, rej->tenant) : NULL;
        if (t)
                t->runs[METRICS_OUTCOME_REJECTED]++;
        bool bound = false;
        for (size_t i = 0; i < ELEMENTSOF(rejection_reasons); i++)
                if (strcmp(reason, rejection_reasons[i].name) == 0) {
                        m->rejected[i]++;
                        bound = rejection_reasons[i].bound;
                }

        _cleanup_(record_done) Record r = { .priority = bound ? LOG_WARNING : LOG_INFO };
        record_message(&r, "call rejected: %s", reason);
        record_add(&r, "MESSAGE_ID", "%s", METRICS_MESSAGE_RUN_REJECTED);
        record_add(&r, "TRANSPORT", "%s", m->transport);
        record_add(&r, "OUTCOME", "%s", outcome_names[METRICS_OUTCOME_REJECTED]);
        record_add(&r, "REASON", "%s", reason);
        record_add(&r, "CODE_BYTES", "%" PRIu64, rej->code_bytes);
        record_add(&r, "STDIN_BYTES", "%" PRIu64, rej->stdin_bytes);
        record_add(&r, "TIMEOUT_S", "%" PRIu32, rej->timeout_s);
        if (rej->traceparent)
                record_add(&r, "TRACEPARENT", "%s", rej->traceparent);
        if (rej->tenant) /* the name, never a token nor its hash (issue 31.5) */
                record_add(&r, "TENANT", "%s", rej->tenant);
        record_add(&r, "RUNS_RUNNING", "%" PRIu32, m->running);
        record_add(&r, "RUNS_QUEUED", "%" PRIu32, m->queued);
        record_emit(m, &r);
}

void metrics_daemon_started(Metrics *m, const MetricsStart *start) {
        _cleanup_(record_done) Record r = { .priority = LOG_INFO };
        record_message(&r, "mcp-execd %s started: transport %s, limits by %s, %" PRIu32 " concurrent runs, queue %" PRIu32,
                       m->version, m->transport, start->limits ?: "?", start->max_concurrent, start->queue_max);
        record_add(&r, "MESSAGE_ID", "%s", METRICS_MESSAGE_DAEMON_STARTED);
        record_add(&r, "VERSION", "%s", m->version);
        record_add(&r, "TRANSPORT", "%s", m->transport);
        record_add(&r, "LIMITS", "%s", start->limits ?: "");
        if (start->python_version)
                record_add(&r, "PYTHON_VERSION", "%s", start->python_version);
        record_add(&r, "MAX_CONCURRENT", "%" PRIu32, start->max_concurrent);
        record_add(&r, "QUEUE_MAX", "%" PRIu32, start->queue_max);
        record_emit(m, &r);
}

void metrics_daemon_stopping(Metrics *m, const char *reason) {
        uint64_t total = 0;
        for (int i = 0; i < _METRICS_OUTCOME_MAX; i++)
                if (i != METRICS_OUTCOME_REJECTED)
                        total += m->runs[i];
        _cleanup_(record_done) Record r = { .priority = LOG_INFO };
        record_message(&r, "mcp-execd stopping (%s): %" PRIu32 " runs running, %" PRIu32 " queued, %" PRIu64 " finished",
                       reason ?: "?", m->running, m->queued, total);
        record_add(&r, "MESSAGE_ID", "%s", METRICS_MESSAGE_DAEMON_STOPPING);
        record_add(&r, "VERSION", "%s", m->version);
        record_add(&r, "TRANSPORT", "%s", m->transport);
        record_add(&r, "REASON", "%s", reason ?: "");
        record_add(&r, "RUNS_RUNNING", "%" PRIu32, m->running);
        record_add(&r, "RUNS_QUEUED", "%" PRIu32, m->queued);
        record_add(&r, "RUNS_TOTAL", "%" PRIu64, total);
        record_emit(m, &r);
}

static void py_session_fields(Metrics *m, Record *r, const MetricsPySession *ps) {
        record_add(r, "PY_SESSION_ID", "%s", ps->id ?: "");
        record_add(r, "RUN_ID", "%s", ps->run_id ?: "");
        record_add(r, "UNIT", "%s", ps->unit ?: "");
        if (ps->unit)
                record_add(r, "OBJECT_SYSTEMD_UNIT", "%s", ps->unit);
        record_add(r, "TRANSPORT", "%s", m->transport);
        record_add(r, "LIMITS", "%s", ps->limits ?: "");
        record_add(r, "IDLE_TIMEOUT_S", "%" PRIu32, ps->idle_timeout_s);
        record_add(r, "LIFETIME_S", "%" PRIu32, ps->lifetime_s);
        if (ps->traceparent)
                record_add(r, "TRACEPARENT", "%s", ps->traceparent);
        if (ps->tenant)
                record_add(r, "TENANT", "%s", ps->tenant);
}

void metrics_egress(Metrics *m, const MetricsEgress *e) {
        m->egress_connections[e->allowed]++;
        m->egress_sent += e->sent;
        m->egress_received += e->received;
        /* A denial is a notice: a run tried what its policy does not allow. */
        _cleanup_(record_done) Record r = { .priority = e->allowed ? LOG_INFO : LOG_NOTICE };
        record_message(&r, "egress %s %s:%u for run %s%s%s", e->allowed ? "allowed" : "denied",
                       e->host && *e->host ? e->host : "(no request)", e->port, e->run_id ?: "", e->reason ? ": " : "",
                       e->reason ?: "");
        record_add(&r, "MESSAGE_ID", "%s", METRICS_MESSAGE_EGRESS);
        record_add(&r, "RUN_ID", "%s", e->run_id ?: "");
        if (e->tenant && *e->tenant)
                record_add(&r, "TENANT", "%s", e->tenant);
        record_add(&r, "EGRESS_HOST", "%s", e->host ?: "");
        record_add(&r, "EGRESS_PORT", "%u", e->port);
        record_add(&r, "EGRESS_DECISION", "%s", e->allowed ? "allowed" : "denied");
        if (e->reason)
                record_add(&r, "EGRESS_REASON", "%s", e->reason);
        record_add(&r, "EGRESS_BYTES_SENT", "%" PRIu64, e->sent);
        record_add(&r, "EGRESS_BYTES_RECEIVED", "%" PRIu64, e->received);
        record_emit(m, &r);
}

void metrics_py_session_opened(Metrics *m, const MetricsPySession *ps) {
        _cleanup_(record_done) Record r = { .priority = LOG_INFO };
        record_message(&r, "python session %s opened: run %s, ready after %" PRIu64 " ms", ps->id ?: "",
                       ps->run_id ?: "", ps->open_ms);
        record_add(&r, "MESSAGE_ID", "%s", METRICS_MESSAGE_PY_SESSION_OPENED);
        py_session_fields(m, &r, ps);
        record_add(&r, "OPEN_MS", "%" PRIu64, ps->open_ms);
        record_add(&r, "WARM", "%s", yes_no(ps->warm));
        record_emit(m, &r);
}

void metrics_py_session_closed(Metrics *m, const MetricsPySession *ps) {
        const char *reason = ps->reason ?: "";
        /* An end the agent did not ask for and that is not a bound doing its job is worth a look. */
        bool notice = strcmp(reason, "timeout") == 0 || strcmp(reason, "oom") == 0 || strcmp(reason, "crash") == 0 ||
                      strcmp(reason, "error") == 0;
        _cleanup_(record_done) Record r = { .priority = notice ? LOG_NOTICE : LOG_INFO };
        record_message(&r, "python session %s ended (%s) after %" PRIu64 " ms and %" PRIu64 " calls%s%s", ps->id ?: "",
                       reason, ps->age_ms, ps->calls, ps->detail ? ": " : "", ps->detail ?: "");
        record_add(&r, "MESSAGE_ID", "%s", METRICS_MESSAGE_PY_SESSION_CLOSED);
        py_session_fields(m, &r, ps);
        record_add(&r, "REASON", "%s", reason);
        if (ps->detail)
                record_add(&r, "DETAIL", "%s", ps->detail);
        record_add(&r, "AGE_MS", "%" PRIu64, ps->age_ms);
        record_add(&r, "CALLS", "%" PRIu64, ps->calls);
        record_add(&r, "MEMORY_PEAK_BYTES", "%" PRIu64, ps->memory_peak_bytes);
        record_add(&r, "OOM_KILLED", "%s", yes_no(ps->oom_killed));
        record_emit(m, &r);
}

void metrics_set_runs(Metrics *m, uint32_t running, uint32_t queued) {
        m->running = running;
        m->queued = queued;
}

void metrics_set_pool(Metrics *m, uint32_t ready, uint64_t memory_bytes) {
        m->pool_ready = ready;
        m->pool_memory_bytes = memory_bytes;
}

void metrics_set_py_sessions(Metrics *m, uint32_t open, uint64_t memory_bytes) {
        m->py_sessions_open = open;
        m->py_sessions_memory_bytes = memory_bytes;
}

uint64_t metrics_runs_total(const Metrics *m, MetricsOutcome o) {
        return (unsigned) o < _METRICS_OUTCOME_MAX ? m->runs[o] : 0;
}

/* ---- Prometheus text exposition 0.0.4 ------------------------------------------------------- */

static void put(Buf *b, int *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(Buf *b, int *err, const char *fmt, ...) {
        char line[512];
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        if (k < 0 || (size_t) k >= sizeof(line)) {
                *err = -EINVAL;
                return;
        }
        if (buf_append(b, line, (size_t) k) < 0)
                *err = -ENOMEM;
}

/* Label values escape \ " and newline (the exposition format's rule). */
static void put_label_value(Buf *b, int *err, const char *v) {
        for (const char *p = v; *p; p++) {
                const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
                if (buf_append(b, esc ?: p, esc ? 2 : 1) < 0)
                        *err = -ENOMEM;
        }
}

/* A stored value in base units: v / scale, shortest exact decimal for our magnitudes. */
static void format_scaled(char *out, size_t n, uint64_t v, uint64_t scale) {
        if (scale == 1)
                snprintf(out, n, "%" PRIu64, v);
        else
                snprintf(out, n, "%.15g", (double) v / (double) scale);
}

static void put_family(Buf *b, int *err, const char *name, const char *type, const char *help) {
        put(b, err, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_histogram(Buf *b, int *err, const Histogram *h) {
        char v[64];
        uint64_t cum = 0;
        put_family(b, err, h->name, "histogram", h->help);
        for (size_t i = 0; i < h->n_bounds; i++) {
                cum += h->buckets[i];
                format_scaled(v, sizeof(v), h->bounds[i], h->scale);
                put(b, err, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", h->name, v, cum);
        }
        cum += h->buckets[h->n_bounds];
        put(b, err, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", h->name, cum);
        format_scaled(v, sizeof(v), h->sum, h->scale);
        put(b, err, "%s_sum %s\n%s_count %" PRIu64 "\n", h->name, v, h->name, h->count);
}

int metrics_render(const Metrics *m, char **ret, size_t *ret_len) {
        Buf b = {};
        int err = 0;
        char v[64];

        put_family(&b, &err, "mcp_execd_runs_total", "counter",
                   "Calls of the exec tool by how they ended (rejected: refused before running).");
        for (int o = 0; o < _METRICS_OUTCOME_MAX; o++)
                put(&b, &err, "mcp_execd_runs_total{outcome=\"%s\"} %" PRIu64 "\n", outcome_names[o], m->runs[o]);

        put_family(&b, &err, "mcp_execd_runs_rejected_total", "counter", "Calls refused before running, by reason.");
        for (size_t i = 0; i < ELEMENTSOF(rejection_reasons); i++)
                put(&b, &err, "mcp_execd_runs_rejected_total{reason=\"%s\"} %" PRIu64 "\n", rejection_reasons[i].name,
                    m->rejected[i]);

        put_family(&b, &err, "mcp_execd_egress_connections_total", "counter",
                   "Connections runs asked their egress proxy for, by decision.");
        put(&b, &err, "mcp_execd_egress_connections_total{decision=\"allowed\"} %" PRIu64 "\n", m->egress_connections[1]);
        put(&b, &err, "mcp_execd_egress_connections_total{decision=\"denied\"} %" PRIu64 "\n", m->egress_connections[0]);
        put_family(&b, &err, "mcp_execd_egress_bytes_total", "counter",
                   "Bytes runs sent and received through their egress proxy.");
        put(&b, &err, "mcp_execd_egress_bytes_total{direction=\"sent\"} %" PRIu64 "\n", m->egress_sent);
        put(&b, &err, "mcp_execd_egress_bytes_total{direction=\"received\"} %" PRIu64 "\n", m->egress_received);

        put_family(&b, &err, "mcp_execd_runs_truncated_total", "counter",
                   "Runs whose output exceeded MCP_EXEC_MAX_OUTPUT_BYTES and was cut.");
        put(&b, &err, "mcp_execd_runs_truncated_total %" PRIu64 "\n", m->truncated);

        for (size_t i = 0; i < ELEMENTSOF(account_series); i++) {
                const struct AccountSeries *a = &account_series[i];
                if (i == 0 || a->family != account_series[i - 1].family)
                        put_family(&b, &err, a->family->name, "counter", a->family->help);
                format_scaled(v, sizeof(v), m->account[a->field], a->family->scale);
                put(&b, &err, "%s{%s} %s\n", a->family->name, a->labels, v);
        }

        put_family(&b, &err, "mcp_execd_run_cpu_seconds_total", "counter", "CPU time used by runs.");
        format_scaled(v, sizeof(v), m->cpu_user_us, 1000000);
        put(&b, &err, "mcp_execd_run_cpu_seconds_total{mode=\"user\"} %s\n", v);
        format_scaled(v, sizeof(v), m->cpu_system_us, 1000000);
        put(&b, &err, "mcp_execd_run_cpu_seconds_total{mode=\"system\"} %s\n", v);

        /* Per tenant, once one has run: the same counts by who called (the totals above stay). */
        if (m->n_tenants > 0) {
                put_family(&b, &err, "mcp_execd_tenant_runs_total", "counter",
                           "Calls of the exec tool by tenant (MCP_EXEC_TENANTS) and how they ended.");
                for (size_t i = 0; i < m->n_tenants; i++)
                        for (int o = 0; o < _METRICS_OUTCOME_MAX; o++) {
                                put(&b, &err, "mcp_execd_tenant_runs_total{tenant=\"");
                                put_label_value(&b, &err, m->tenants[i].name);
                                put(&b, &err, "\",outcome=\"%s\"} %" PRIu64 "\n", outcome_names[o], m->tenants[i].runs[o]);
                        }
                put_family(&b, &err, "mcp_execd_tenant_cpu_seconds_total", "counter", "CPU time used by runs, by tenant.");
                for (size_t i = 0; i < m->n_tenants; i++) {
                        const uint64_t us[] = { m->tenants[i].cpu_user_us, m->tenants[i].cpu_system_us };
                        for (size_t k = 0; k < ELEMENTSOF(us); k++) {
                                format_scaled(v, sizeof(v), us[k], 1000000);
                                put(&b, &err, "mcp_execd_tenant_cpu_seconds_total{tenant=\"");
                                put_label_value(&b, &err, m->tenants[i].name);
                                put(&b, &err, "\",mode=\"%s\"} %s\n", k == 0 ? "user" : "system", v);
                        }
                }
        }

        for (int i = 0; i < _HIST_MAX; i++)
                put_histogram(&b, &err, &m->hist[i]);

        put_family(&b, &err, "mcp_execd_runs_running", "gauge", "Runs executing now.");
        put(&b, &err, "mcp_execd_runs_running %" PRIu32 "\n", m->running);
        put_family(&b, &err, "mcp_execd_runs_queued", "gauge", "Calls waiting for a free run slot now.");
        put(&b, &err, "mcp_execd_runs_queued %" PRIu32 "\n", m->queued);

        put_family(&b, &err, "mcp_execd_runs_warm_total", "counter",
                   "Runs served by a ready sandbox (issue 16; the others took the cold path).");
        put(&b, &err, "mcp_execd_runs_warm_total %" PRIu64 "\n", m->warm);
        put_family(&b, &err, "mcp_execd_pool_ready", "gauge", "Sandboxes ready now (MCP_EXEC_WARM_POOL).");
        put(&b, &err, "mcp_execd_pool_ready %" PRIu32 "\n", m->pool_ready);
        put_family(&b, &err, "mcp_execd_pool_memory_bytes", "gauge",
                   "Resident memory of the ready sandboxes' interpreters when they became ready.");
        put(&b, &err, "mcp_execd_pool_memory_bytes %" PRIu64 "\n", m->pool_memory_bytes);
        put_family(&b, &err, "mcp_execd_py_sessions_open", "gauge",
                   "Python sessions open now, opening ones included (MCP_EXEC_PY_SESSIONS_MAX).");
        put(&b, &err, "mcp_execd_py_sessions_open %" PRIu32 "\n", m->py_sessions_open);
        put_family(&b, &err, "mcp_execd_py_sessions_memory_bytes", "gauge",
                   "Memory the open Python sessions hold now (their cgroups' memory.current; 0 without cgroups).");
        put(&b, &err, "mcp_execd_py_sessions_memory_bytes %" PRIu64 "\n", m->py_sessions_memory_bytes);
        put_family(&b, &err, "mcp_execd_start_time_seconds", "gauge", "Start time of the daemon, seconds since the epoch.");
        put(&b, &err, "mcp_execd_start_time_seconds %" PRIu64 "\n", m->start_time_sec);

        put_family(&b, &err, "mcp_execd_build_info", "gauge", "Always 1; the labels say which build and transport.");
        put(&b, &err, "mcp_execd_build_info{version=\"");
        put_label_value(&b, &err, m->version);
        put(&b, &err, "\",transport=\"");
        put_label_value(&b, &err, m->transport);
        put(&b, &err, "\"} 1\n");

        if (err < 0) {
                buf_done(&b);
                return err;
        }
        if (ret_len)
                *ret_len = b.len;
        *ret = b.data;
        return 0;
}
