/* scheduler.h: the run queue shared by every session: at most max_running runs at once, at most
 * queue_max waiting, cancellation of either, and the answer to each call; in front of it the route
 * table, which hands each call to the room that serves it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"
#include "mcp.h"
#include "metrics.h"
#include "route.h"
#include "run.h"

/* What a prepared call's run gets beyond its arguments. Strings are copied. */
typedef struct JobPrep {
        const char *python;     /* interpreter path inside the sandbox, or NULL: the default */
        const char *env_dir;    /* host directory mounted read-only (dependencies), or NULL */
        struct json_t *extra;   /* a JSON object whose members are added to the result (the job takes a
                                 * reference), or NULL */
        void (*release)(void *userdata); /* called once when the job is gone, or NULL */
        void *userdata;
} JobPrep;

typedef struct Job Job;
typedef struct SchedTenant SchedTenant;

/* A tenant's place in the run queue (issue 31.3/31.4), from its line of the tenants file. A call's
 * tenant is its principal (mcp_call_principal(): "" without authentication, which is one tenant
 * like any other). */
typedef struct SchedulerTenantLimits {
        uint32_t runs;   /* at most this many of its calls running at once; 0: max_running only */
        uint32_t queue;  /* at most this many waiting; UINT32_MAX: queue_max only */
        uint32_t weight; /* its share when tenants wait together (1..10000; 100 when none is set) */
} SchedulerTenantLimits;
#define SCHEDULER_TENANT_DEFAULT ((SchedulerTenantLimits) { .runs = 0, .queue = UINT32_MAX, .weight = 100 })

/* The limits of tenant now (a reload's hold from its next call); false: none of its own, the defaults. */
typedef bool (*SchedulerTenantLimitsFn)(void *userdata, const char *tenant, SchedulerTenantLimits *ret);
/* What a run of tenant may reach (issue 32) when it starts, or NULL: no network. Valid during the
 * call only (a reload may replace it; the run copies it). */
typedef const EgressPolicy *(*SchedulerEgressFn)(void *userdata, const char *tenant);

/* A call of another module that holds one of the max_running slots while it runs, without being a
 * run of ours (issue 18: a busy Python session counts as a running call). The owner embeds it and
 * keeps it until scheduler_slot_release(). */
typedef struct SchedulerSlot SchedulerSlot;
struct SchedulerSlot {
        /* Called from the pump when a waiting slot is held (never from inside scheduler_slot_request()). */
        void (*granted)(SchedulerSlot *slot);
        uint64_t seq;  /* arrival, against its tenant's queued jobs': first come, first served */
        SchedTenant *tenant; /* while held or waiting */
        bool held, waiting;
        LIST_FIELDS(SchedulerSlot, slots);
};

/* Read-only outside scheduler.c (main.c reads the counters): the configuration is given to
 * scheduler_init() and the scheduler_set_*() below, never written by another module. */
typedef struct Scheduler {
        RunEnv env;
        const RunOps *run_ops; /* how runs are started: run.c's, or a test's fakes */
        uint32_t max_running;
        uint32_t queue_max;
        /* HTTP: the session a call belongs to (session_of(owner), NULL for none) may have at most
         * session_queue_max calls waiting; stdio leaves session_of NULL (one session, queue_max only). */
        const void *(*session_of)(const void *owner);
        uint32_t session_queue_max;
        Metrics *metrics;          /* run records and counters (issue 7), or NULL */
        /* Which room serves each call (route.h): the run queue's own row (exec with the default
         * interpreter) from scheduler_init(), the other rooms' from scheduler_route(). */
        RouteTable routes;

        SchedulerTenantLimitsFn tenant_limits; /* NULL: every tenant has the defaults */
        void *tenant_userdata;
        SchedulerEgressFn egress_of;           /* NULL: no run reaches any host */
        void *egress_userdata;

        Job *running;              /* list, linked through Job.jobs */
        /* The tenants with a call running or waiting; each holds its own queue (FIFO), and the pump
         * starts the waiting call of the tenant whose virtual time is least (start-time fair
         * queuing: each start moves its tenant's on by 1/weight). */
        SchedTenant *tenants;
        uint32_t n_tenants;
        unsigned tenants_pinned;   /* > 0: a loop walks the tenants, none is freed (scheduler.c) */
        uint64_t vclock;           /* the virtual time of the last start: where a tenant that had
                                    * nothing waiting starts again, so idling earns no credit */
        /* n_running counts held slots as well, n_queued waiting ones: both are calls to the caller. */
        uint32_t n_running, n_queued;
        uint64_t seq;              /* the next arrival's number (Job.seq, SchedulerSlot.seq) */
        uint64_t n_finished;
        bool shutting_down;        /* refuse new calls, kill what runs */
        char shutdown_reason[256];
} Scheduler;

/* At most max_running runs at once (MCP_EXEC_MAX_CONCURRENT), at most queue_max waiting
 * (MCP_EXEC_QUEUE_MAX). env is copied. Runs are started with run.c's functions. The route table
 * holds the run queue's row: exec with the default interpreter. */
void scheduler_init(Scheduler *s, const RunEnv *env, uint32_t max_running, uint32_t queue_max);
void scheduler_done(Scheduler *s);

/* What other modules attach once they exist, before the first call is submitted; what they pass
 * stays theirs. The run records and counters (issue 7): */
void scheduler_set_metrics(Scheduler *s, Metrics *metrics);
/* A room that serves calls (route.h), its operations and its object: route_table_add()'s returns. */
int scheduler_route(Scheduler *s, const RouteVTable *vtable, void *userdata);
/* HTTP: each session may have at most session_queue_max calls waiting (MCP_EXEC_SESSION_QUEUE_MAX);
 * session_of(owner) names the session of a call's owner (NULL: none). */
void scheduler_set_sessions(Scheduler *s, const void *(*session_of)(const void *owner), uint32_t session_queue_max);
/* Tenants (issue 31): where each tenant's runs=, queue= and weight= come from, asked at each of its
 * calls. Without it every tenant has SCHEDULER_TENANT_DEFAULT. */
void scheduler_set_tenants(Scheduler *s, SchedulerTenantLimitsFn fn, void *userdata);
/* Egress (issue 32): where a run's allowlist comes from, asked as it starts. */
void scheduler_set_egress(Scheduler *s, SchedulerEgressFn fn, void *userdata);
/* The unit tests' seam: runs started through ops (fakes) instead of run.c's run_ops_sandbox. */
void scheduler_set_run_ops(Scheduler *s, const RunOps *ops);

/* Takes call and answers it later through reply(owner, …): hands it to the room the route table
 * names for it (route.h). Returns 0, or -EBUSY when the queue is full or the scheduler shuts down,
 * -EDQUOT when the call's session has session_queue_max calls waiting, -EUSERS when its tenant has
 * its queue= waiting, -EOPNOTSUPP when no room
 * serves it (call not taken: answer it with a tool error, scheduler_refusal_message()), or -ENOMEM. */
int scheduler_submit(Scheduler *s, McpCall *call, void *owner, JobReplyFn reply);

/* The run queue itself, for a call a room prepared (or exec's, which needs nothing). prep may be NULL. On -EBUSY or
 * -ENOMEM prep's release has been called (the call is not taken). */
int scheduler_submit_prepared(Scheduler *s, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep);

/* Takes one of the max_running slots for slot, a call of tenant: returns 1 when held now, 0 when it
 * waits in the queue (slot->granted() is called when it is held), -EBUSY when the queue is full or
 * the scheduler shuts down, -EUSERS when the tenant has its queue= waiting
 * (scheduler_refusal_message()), -ENOMEM. */
int scheduler_slot_request(Scheduler *s, SchedulerSlot *slot, const char *tenant);
/* Gives slot back, held or waiting (or neither: nothing happens); the queue moves on. */
void scheduler_slot_release(Scheduler *s, SchedulerSlot *slot);

/* The tool error text for a call of tenant refused with -EBUSY, -EDQUOT or -EUSERS (names the
 * variable or the tenants file's setting that applies), or -EOPNOTSUPP. */
void scheduler_refusal_message(const Scheduler *s, const char *tenant, int r, char *buf, size_t size);

/* Whether owner has a call with this id key queued or running. */
bool scheduler_has(const Scheduler *s, const void *owner, const char *id_key);
/* Whether the call waits in the run queue for a slot (MCP_EXEC_MAX_CONCURRENT), and how many calls
 * are ahead of it (queued runs and sessions' calls that came first): what its progress says while
 * it waits (issue 30.1). */
bool scheduler_queued(const Scheduler *s, const void *owner, const char *id_key, uint32_t *ret_ahead);

/* The output so far of owner's call with this id key while it runs (for its progress
 * notifications), or NULL: queued, being prepared, or not known. Valid until the next turn of the
 * loop. */
const Output *scheduler_output(const Scheduler *s, const void *owner, const char *id_key);

/* Cancels owner's call with this id key: dropped if queued, killed if running; never answered.
 * Returns true if such a call existed. */
bool scheduler_cancel(Scheduler *s, const void *owner, const char *id_key);

/* Cancels every call of owner (its connection or session went away). */
void scheduler_cancel_owner(Scheduler *s, const void *owner);

/* Refuses new calls, answers queued ones and kills running ones with a tool error giving reason. */
void scheduler_shutdown(Scheduler *s, const char *reason);

/* The tenants with a call running or waiting: how many, and the one with the most (the first found
 * on a tie) in *ret_name (valid until the next turn of the loop; NULL when none) with its count. For
 * the status line (notify.h). */
uint32_t scheduler_tenants_busy(const Scheduler *s, const char **ret_name, uint32_t *ret_calls);

static inline uint32_t scheduler_active(const Scheduler *s) {
        return s->n_running + s->n_queued;
}

/* A call refused before reaching the queue (invalid arguments, a duplicate request id): one
 * "run rejected" record and the rejected counter. call may be NULL when it was never parsed; then
 * traceparent is its validated one (McpAction.traceparent) for the record, or NULL. */
void scheduler_note_rejected(Scheduler *s, const McpCall *call, const char *reason, const char *traceparent);

/* An answer that is no run's (initialize, tools/list, ping) was handed to the transport: the pool of
 * ready sandboxes may fill behind it (issue 16: never before an answer). */
void scheduler_answered(Scheduler *s);
/* The fields of a run's record that come from its call and its result (sizes and counters, never
 * the bytes); the caller adds what only the runner knows (ids, unit, queueing, cancellation). */
MetricsRun scheduler_record_of(const McpCall *call, const ExecResult *r);

/* The metrics as Prometheus text (GET /metrics), with the queue gauges as they are now. */
int scheduler_metrics_render(Scheduler *s, char **ret, size_t *ret_len);
