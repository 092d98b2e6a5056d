/* metrics.h: what operators see of the daemon: one record per run (the journal, or one line on
 * stderr without one), counters and histograms, and their Prometheus text exposition.
 * Metadata only: nothing here ever receives code, stdin or output, only their sizes; of the
 * caller's request only a validated W3C traceparent (hex digits and dashes), to join a run to the
 * agent's trace. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cleanup.h"
#include "exec-account.h"

/* Our journal MESSAGE_IDs (systemd.journal-fields(7): 128 bits, lowercase hex, no dashes), made
 * once with systemd-id128 new. Never change them: operators filter on them. */
#define METRICS_MESSAGE_RUN_FINISHED "0a6bda1f24cf4b5188307da770817b6b"
#define METRICS_MESSAGE_RUN_REJECTED "017048d888fb4eca8b36e2339da3a750"
#define METRICS_MESSAGE_DAEMON_STARTED "d5a8c22b80ff494d9f85e78d0e708fa9"
#define METRICS_MESSAGE_DAEMON_STOPPING "d7e9c809b4394488b008f4de98b169f6"
#define METRICS_MESSAGE_PY_SESSION_OPENED "ea0c08d045c1493297cd897030e1fc14"
#define METRICS_MESSAGE_PY_SESSION_CLOSED "04160dcdd87a4943ac1d71636d6bb5d1"
#define METRICS_MESSAGE_EGRESS "f3316c7fd11d4c56b82e9e2ce9db8ab2"

/* A Python session's id in records (issue 18.7): derived from its handle, never the handle (the
 * session's only credential): the first 16 hex digits of
 * `systemd-id128 machine-id --app-specific=<the handle's hex>` (daemon/pysession/session.c). */
#define METRICS_PY_SESSION_ID_HEX 16
/* How a run ended, for the runs_total{outcome} counter and the OUTCOME field. */
typedef enum MetricsOutcome {
        METRICS_OUTCOME_OK,        /* exit status 0 */
        METRICS_OUTCOME_NONZERO,   /* exit status 1..255 */
        METRICS_OUTCOME_TIMEOUT,   /* the deadline killed it */
        METRICS_OUTCOME_OOM,       /* the memory limit killed a process of it */
        METRICS_OUTCOME_PIDS,      /* it hit the task limit and did not exit 0 */
        METRICS_OUTCOME_SIGNAL,    /* a signal ended it (seccomp's SIGSYS, its own kill) */
        METRICS_OUTCOME_CANCELLED, /* killed because the client cancelled or the daemon stopped */
        METRICS_OUTCOME_REJECTED,  /* never started: invalid arguments, queue full, shutting down */
        METRICS_OUTCOME_ERROR,     /* infrastructure failure: no scope, no interpreter, no sandbox */
        _METRICS_OUTCOME_MAX,
} MetricsOutcome;

const char *metrics_outcome_to_string(MetricsOutcome o);

/* One finished (or failed) run, in plain numbers. Strings are borrowed for the call. */
typedef struct MetricsRun {
        const char *run_id;
        const char *unit;    /* the run's scope unit, or NULL when no systemd scope holds it */
        const char *limits;  /* "cgroup" or "rlimit" */
        const char *error;   /* infrastructure failure, our own text (never caller data), or NULL */
        bool cancelled;      /* killed by a cancellation or a shutdown */
        int exit_code;
        const char *signal;  /* "SIGKILL", or NULL */
        bool timed_out;
        bool oom_killed;
        bool pids_limit_hit;
        bool truncated;
        uint64_t duration_ms;
        uint64_t queue_ms;
        uint32_t timeout_s;  /* applied: defaulted and clamped */
        uint64_t memory_peak_bytes;
        uint64_t cpu_user_us;
        uint64_t cpu_system_us;
        uint64_t code_bytes;
        uint64_t stdin_bytes;
        uint64_t stdout_bytes; /* as kept (after the cap) */
        uint64_t stderr_bytes;
        uint64_t scope_start_usec; /* StartTransientUnit to JobRemoved "done"; 0 = no scope */
        bool warm;                 /* served by a ready sandbox (issue 16) */
        uint64_t memory_at_start_bytes; /* resident when the code was released */
        const char *traceparent;   /* W3C, validated at the edge (mcp_traceparent_valid()), or NULL */
        const char *py_session_id; /* a call in a Python session: the session's id (never its handle) */
        const char *tenant;        /* who called (a configured tenant's name, never a token), or NULL */
        uint64_t py_session_call;  /* and the call's number in it, from 1 */
        ExecAccount account;       /* pressure, I/O bytes, pids peak (issue 33.1): the known ones are kept */
} MetricsRun;

/* Decides how a run ended, from our own flags and the counters, never from the signal alone:
 * cancelled, then timeout, oom, pids (unless it exited 0), signal, nonzero, ok. */
MetricsOutcome metrics_run_outcome(const MetricsRun *run);

/* A call that was refused before it could run. */
typedef struct MetricsRejection {
        const char *reason;  /* "queue-full", "shutting-down", "invalid-arguments", "duplicate-id" */
        uint64_t code_bytes; /* 0 when the arguments were not valid */
        uint64_t stdin_bytes;
        uint32_t timeout_s;
        const char *traceparent; /* as MetricsRun's */
        const char *tenant;      /* as MetricsRun's */
} MetricsRejection;

/* A Python session's open (once it is ready) or its end. Strings are borrowed for the call. */
typedef struct MetricsPySession {
        const char *id;          /* METRICS_PY_SESSION_ID_HEX hex digits derived from the handle */
        const char *run_id;      /* its sandbox's run id (the scope mcp-execd-run-<id>.scope) */
        const char *unit;        /* its scope unit, or NULL */
        const char *limits;      /* "cgroup" or "rlimit" */
        const char *traceparent; /* session_open's, validated at the edge, or NULL */
        const char *tenant;      /* whose session it is (a configured tenant's name), or NULL */
        uint32_t idle_timeout_s;
        uint32_t lifetime_s;
        uint64_t open_ms;        /* session_open to ready */
        bool warm;               /* opened: served by a ready sandbox of the pool */
        /* closed only: */
        const char *reason;      /* a fixed word: closed, idle-expiry, lifetime, timeout, oom, crash, exited,
                                  * cancelled, daemon-stop, error */
        const char *detail;      /* our own text saying why, or NULL */
        uint64_t age_ms;         /* open to end */
        uint64_t calls;
        uint64_t memory_peak_bytes; /* the session's cgroup peak, 0 when unknown */
        bool oom_killed;
} MetricsPySession;

/* What the daemon announces at start. */
typedef struct MetricsStart {
        const char *limits; /* "cgroup" or "rlimit" */
        const char *python_version; /* or NULL */
        uint32_t max_concurrent;
        uint32_t queue_max;
} MetricsStart;

typedef struct Metrics Metrics;

/* True when fd 2 is a stream into the journal: $JOURNAL_STREAM ("<st_dev>:<st_ino>", set by
 * systemd for a service whose stdout or stderr goes to the journal, systemd.exec(5)) names the
 * very file fd 2 is. Then records go to the journal as structured entries; otherwise (a desktop
 * client's pipe, a terminal, a container) they go to stderr as one line each. An inherited
 * $JOURNAL_STREAM with stderr redirected elsewhere does not match. */
bool metrics_stderr_is_journal(void);

/* version: the build's version; transport: "stdio", "http" or "sse". stream == NULL: records go
 * to the journal (sd_journal_sendv); else one line each to stream. Returns 0 or -ENOMEM. */
int metrics_new(const char *version, const char *transport, FILE *stream, Metrics **ret);
Metrics *metrics_free(Metrics *m);
DEFINE_POINTER_CLEANUP(Metrics, metrics_free)

/* Each writes one record and moves the counters. */
void metrics_run_finished(Metrics *m, const MetricsRun *run);
void metrics_run_rejected(Metrics *m, const MetricsRejection *rej);

/* A connection a run asked its egress proxy for (issue 32.3): the decision, by host and port,
 * never a path, query, header or byte of it; for an allowed one, told when it ends, its bytes. */
typedef struct MetricsEgress {
        const char *run_id, *tenant; /* tenant NULL or "": none */
        const char *host;            /* "" when the request could not be read */
        uint16_t port;
        bool allowed;
        const char *reason;          /* denied (or an allowed one that failed): why; else NULL */
        uint64_t sent, received;
} MetricsEgress;
void metrics_egress(Metrics *m, const MetricsEgress *e);
void metrics_daemon_started(Metrics *m, const MetricsStart *start);
void metrics_daemon_stopping(Metrics *m, const char *reason);
void metrics_py_session_opened(Metrics *m, const MetricsPySession *ps);
void metrics_py_session_closed(Metrics *m, const MetricsPySession *ps);

/* The current queue, for the gauges (the daemon sets them before rendering). */
void metrics_set_runs(Metrics *m, uint32_t running, uint32_t queued);
/* The ready sandboxes now and their resident memory (issue 16), for the gauges. */
void metrics_set_pool(Metrics *m, uint32_t ready, uint64_t memory_bytes);
/* The Python sessions open now and the sum of their cgroups' memory.current (0 without cgroups;
 * issue 18.7), for the gauges. */
void metrics_set_py_sessions(Metrics *m, uint32_t open, uint64_t memory_bytes);
uint64_t metrics_runs_total(const Metrics *m, MetricsOutcome o);

/* Prometheus text exposition format 0.0.4 (served as METRICS_CONTENT_TYPE). Returns 0 and a
 * malloc'd NUL-terminated text, or -ENOMEM. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
int metrics_render(const Metrics *m, char **ret, size_t *ret_len);
