/* scheduler.c: the bounded run queue and cancellation, and the route table's use. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "list.h"
#include "log.h"
#include "scheduler.h"
#include "str-util.h"

struct Job {
        Scheduler *scheduler;
        McpCall *call;
        void *owner;
        const void *session; /* session_of(owner), or NULL */
        SchedTenant *tenant; /* its call's principal's, while queued or running */
        JobReplyFn reply;
        uint64_t t_queued;
        uint64_t seq; /* arrival (Scheduler.seq), against the slot waiters' */
        uint64_t queue_ms;
        Run *run;
        bool cancelled;
        bool shutdown;
        char *python, *env_dir; /* JobPrep */
        json_t *extra;
        void (*release)(void *userdata);
        void *release_userdata;
        LIST_FIELDS(Job, jobs); /* on its tenant's queue while waiting, on s->running while running */
};

/* Virtual time: a start moves its tenant's on by SCHED_VTIME_UNIT / weight (weights 1..10000 divide
 * it without much rounding). */
#define SCHED_VTIME_UNIT UINT64_C(100000000)

/* A tenant with a call running or waiting (freed when it has neither): its queue and its counts. */
struct SchedTenant {
        char name[MCP_PRINCIPAL_MAX + 1];
        SchedulerTenantLimits limits; /* as its last call found them */
        uint32_t n_running, n_queued; /* held slots and waiting ones included, as the scheduler's */
        uint64_t vtime;               /* its next start's virtual time */
        Job *queue, *queue_tail;      /* FIFO: appended at queue_tail, started from queue */
        SchedulerSlot *waiters, *waiters_tail; /* FIFO, as the queue; merged with it by seq */
        LIST_FIELDS(SchedTenant, tenants);
};

/* The run queue as a room: exec with the default interpreter has nothing to prepare. has, cancel and
 * shutdown are the queue's own below (it holds every room's prepared calls alike), not a room's. */
static int queue_submit(void *userdata, McpCall *call, void *owner, JobReplyFn reply) {
        return scheduler_submit_prepared(userdata, call, owner, reply, NULL);
}

static const RouteVTable queue_vtable = {
        .name = "run queue",
        .serves = { [MCP_TOOL_EXEC] = ROUTE_PLAIN },
        .submit = queue_submit,
};

void scheduler_init(Scheduler *s, const RunEnv *env, uint32_t max_running, uint32_t queue_max) {
        *s = (Scheduler) { .env = *env, .run_ops = &run_ops_sandbox, .max_running = max_running,
                           .queue_max = queue_max };
        int r = route_table_add(&s->routes, &queue_vtable, s);
        assert(r == 0); /* the first room of an empty table */
        (void) r;
}

void scheduler_done(Scheduler *s) {
        /* Every job is gone by now; a tenant is left only by a slot its room never gave back. */
        LIST_FOREACH_SAFE(tenants, t, next, s->tenants)
                free(t);
        *s = (Scheduler) {};
}

void scheduler_set_metrics(Scheduler *s, Metrics *metrics) {
        s->metrics = metrics;
}

int scheduler_route(Scheduler *s, const RouteVTable *vtable, void *userdata) {
        return route_table_add(&s->routes, vtable, userdata);
}

void scheduler_set_sessions(Scheduler *s, const void *(*session_of)(const void *owner), uint32_t session_queue_max) {
        s->session_of = session_of;
        s->session_queue_max = session_queue_max;
}

void scheduler_set_tenants(Scheduler *s, SchedulerTenantLimitsFn fn, void *userdata) {
        s->tenant_limits = fn;
        s->tenant_userdata = userdata;
}

void scheduler_set_egress(Scheduler *s, SchedulerEgressFn fn, void *userdata) {
        s->egress_of = fn;
        s->egress_userdata = userdata;
}

void scheduler_set_run_ops(Scheduler *s, const RunOps *ops) {
        s->run_ops = ops;
}

/* ---- tenants --------------------------------------------------------------------------------- */

static SchedulerTenantLimits tenant_limits_of(const Scheduler *s, const char *name) {
        SchedulerTenantLimits l = SCHEDULER_TENANT_DEFAULT;
        if (s->tenant_limits && !s->tenant_limits(s->tenant_userdata, name, &l))
                l = SCHEDULER_TENANT_DEFAULT;
        if (l.weight == 0)
                l.weight = 1;
        return l;
}

static SchedTenant *tenant_find(const Scheduler *s, const char *name) {
        LIST_FOREACH(tenants, t, s->tenants)
                if (strcmp(t->name, name) == 0)
                        return t;
        return NULL;
}

/* The tenant of a call about to be queued, made when it has nothing running or waiting; its limits
 * read anew (a reload's apply from the next call). NULL without memory. */
static SchedTenant *tenant_get(Scheduler *s, const char *name) {
        SchedTenant *t = tenant_find(s, name);
        if (!t) {
                t = calloc(1, sizeof(*t));
                if (!t)
                        return NULL;
                snprintf(t->name, sizeof(t->name), "%s", name);
                t->vtime = s->vclock;
                LIST_PREPEND(tenants, s->tenants, t);
                s->n_tenants++;
        }
        t->limits = tenant_limits_of(s, name);
        return t;
}

/* Frees t once it has nothing running or waiting: what it did before is no credit and no debt. While
 * a loop walks the tenants (tenants_pinned), none is freed until tenants_unpin(). */
static void tenant_put(Scheduler *s, SchedTenant *t) {
        if (!t || t->n_running > 0 || t->n_queued > 0 || s->tenants_pinned > 0)
                return;
        LIST_REMOVE(tenants, s->tenants, t);
        s->n_tenants--;
        free(t);
}

static void tenants_unpin(Scheduler *s) {
        assert(s->tenants_pinned > 0);
        if (--s->tenants_pinned > 0)
                return;
        LIST_FOREACH_SAFE(tenants, t, next, s->tenants)
                tenant_put(s, t);
}

static bool tenant_may_start(const Scheduler *s, const SchedTenant *t) {
        return s->n_running < s->max_running && (t->limits.runs == 0 || t->n_running < t->limits.runs);
}

/* A call of t would wait: no slot for it now, or its tenant's calls that came first still wait. */
static bool tenant_would_wait(const Scheduler *s, const SchedTenant *t) {
        return !tenant_may_start(s, t) || t->n_queued > 0;
}

/* A tenant that had nothing waiting starts at the virtual time of now: never behind the others
 * (it saved nothing while it waited for nothing), never ahead. */
static void tenant_enqueued(Scheduler *s, SchedTenant *t) {
        if (t->n_queued == 0 && t->vtime < s->vclock)
                t->vtime = s->vclock;
        t->n_queued++;
        s->n_queued++;
}

static void tenant_dequeued(Scheduler *s, SchedTenant *t) {
        t->n_queued--;
        s->n_queued--;
}

static void tenant_started(Scheduler *s, SchedTenant *t) {
        t->n_running++;
        s->n_running++;
}

static void tenant_stopped(Scheduler *s, SchedTenant *t) {
        t->n_running--;
        s->n_running--;
}

static uint64_t tenant_head_seq(const SchedTenant *t) {
        uint64_t q = t->queue ? t->queue->seq : UINT64_MAX, w = t->waiters ? t->waiters->seq : UINT64_MAX;
        return q < w ? q : w;
}

/* The tenant whose waiting call starts next: of those with one waiting and room to start it, the
 * least virtual time; at a tie, the call that came first. */
static SchedTenant *tenant_next(const Scheduler *s) {
        SchedTenant *best = NULL;
        LIST_FOREACH(tenants, t, s->tenants) {
                if (t->n_queued == 0 || !tenant_may_start(s, t))
                        continue;
                if (!best || t->vtime < best->vtime || (t->vtime == best->vtime && tenant_head_seq(t) < tenant_head_seq(best)))
                        best = t;
        }
        return best;
}

static void job_free(Job *j) {
        tenant_put(j->scheduler, j->tenant);
        mcp_call_free(j->call);
        if (j->release)
                j->release(j->release_userdata);
        free(j->python);
        free(j->env_dir);
        json_decref(j->extra);
        free(j);
}
DEFINE_POINTER_CLEANUP(Job, job_free)

/* A tenant's queue keeps its tail, so appending stays O(1) however long it is. */
static void queue_append(Scheduler *s, Job *j) {
        SchedTenant *t = j->tenant;
        j->seq = s->seq++;
        tenant_enqueued(s, t);
        LIST_INSERT_AFTER(jobs, t->queue, t->queue_tail, j);
        t->queue_tail = j;
}

/* Off its tenant's queue; the tenant stays the job's (it starts, or job_free() lets it go). */
static void queue_remove(Scheduler *s, Job *j) {
        SchedTenant *t = j->tenant;
        if (t->queue_tail == j)
                t->queue_tail = j->jobs_prev;
        LIST_REMOVE(jobs, t->queue, j);
        tenant_dequeued(s, t);
}

static void running_remove(Scheduler *s, Job *j) {
        LIST_REMOVE(jobs, s->running, j);
        tenant_stopped(s, j->tenant);
}

/* A reply is NULL only when even the encoder's fallback found no memory (mcp.h): the call is still
 * answered, with the tool error its parse preformatted (issue 15). */
static char *job_reply_or_oom(Job *j, char *reply) {
        if (reply)
                return reply;
        log_error("out of memory building a reply; answered with the preformatted tool error");
        return mcp_call_reply_oom(j->call);
}

static void job_answer_error(Job *j, const char *message) {
        j->reply(j->owner, job_reply_or_oom(j, mcp_call_reply_tool_error(j->call, message)));
}

static void scheduler_pump(Scheduler *s);

MetricsRun scheduler_record_of(const McpCall *call, const ExecResult *r) {
        const McpExecArgs *a = mcp_call_args(call);
        return (MetricsRun) {
                .timeout_s = a->timeout_s,
                .code_bytes = a->code_len,
                .stdin_bytes = a->stdin_len,
                .traceparent = mcp_call_traceparent(call),
                .tenant = *mcp_call_principal(call) ? mcp_call_principal(call) : NULL,
                .warm = r->warm,
                .memory_at_start_bytes = r->memory_at_start_bytes,
                .limits = r->limits,
                .exit_code = r->exit_code,
                .signal = r->signal,
                .timed_out = r->timed_out,
                .oom_killed = r->oom_killed,
                .pids_limit_hit = r->pids_limit_hit,
                .truncated = r->truncated,
                .duration_ms = r->duration_ms,
                .memory_peak_bytes = r->memory_peak_bytes,
                .cpu_user_us = r->cpu_user_us,
                .cpu_system_us = r->cpu_system_us,
                .stdout_bytes = r->stdout_len,
                .stderr_bytes = r->stderr_len,
                .account = r->account,
        };
}

/* The run's journal record (metadata only: sizes, never the bytes) and counters. r is the run's
 * result, zeroed when the run failed to run. */
static void job_record(Job *j, Run *run, const ExecResult *r) {
        Scheduler *s = j->scheduler;
        if (!s->metrics)
                return;
        MetricsRun m = scheduler_record_of(j->call, r);
        m.run_id = s->run_ops->id(run);
        m.unit = s->run_ops->unit(run);
        m.error = s->run_ops->error(run);
        m.cancelled = j->cancelled || j->shutdown;
        m.queue_ms = j->queue_ms;
        m.scope_start_usec = s->run_ops->place_usec(run);
        metrics_set_runs(s->metrics, s->n_running, s->n_queued);
        metrics_run_finished(s->metrics, &m);
}

static void on_run_done(Run *run, void *userdata) {
        Job *j = userdata;
        Scheduler *s = j->scheduler;
        const char *error = s->run_ops->error(run);
        ExecResult r = {};
        if (!error)
                s->run_ops->result(run, &r);

        job_record(j, run, &r);
        if (j->cancelled) {
                j->reply(j->owner, NULL);
        } else if (j->shutdown) {
                job_answer_error(j, s->shutdown_reason);
        } else if (error) {
                log_warning("run %s failed to run: %s", s->run_ops->id(run), error);
                job_answer_error(j, error);
        } else {
                r.extra = j->extra;
                j->reply(j->owner, job_reply_or_oom(j, mcp_call_reply_result(j->call, &r)));
        }
        /* The answer's write is on the ring: a ready sandbox is made behind it (issue 16.4). */
        run_pool_refill_later(s->env.pool);

        s->run_ops->release(run);
        running_remove(s, j);
        s->n_finished++;
        job_free(j);
        scheduler_pump(s);
}

static void job_start(Scheduler *s, Job *j) {
        const McpExecArgs *a = mcp_call_args(j->call);
        RunParams p = {
                .code = a->code,
                .code_len = a->code_len,
                .stdin_data = a->stdin_data,
                .stdin_len = a->stdin_len,
                .timeout_s = a->timeout_s,
                .queue_ms = (now_usec() - j->t_queued) / 1000,
                .python = j->python,
                .env_dir = j->env_dir,
                .user_code = true,
                .files = a->files,
                .n_files = a->n_files,
                .tenant = mcp_call_principal(j->call),
                .egress = s->egress_of ? s->egress_of(s->egress_userdata, mcp_call_principal(j->call)) : NULL,
        };
        j->queue_ms = p.queue_ms;
        LIST_PREPEND(jobs, s->running, j);
        tenant_started(s, j->tenant);

        int r = s->run_ops->start(&s->env, &p, on_run_done, j, &j->run);
        if (r < 0) {
                running_remove(s, j);
                job_answer_error(j, "mcp-execd is out of memory and cannot start the run");
                job_free(j);
        }
}

static void slot_waiter_remove(Scheduler *s, SchedulerSlot *slot) {
        SchedTenant *t = slot->tenant;
        if (t->waiters_tail == slot)
                t->waiters_tail = slot->slots_prev;
        LIST_REMOVE(slots, t->waiters, slot);
        slot->waiting = false;
        tenant_dequeued(s, t);
}

static void slot_hold(Scheduler *s, SchedulerSlot *slot) {
        slot->held = true;
        tenant_started(s, slot->tenant);
}

/* Free slots go to the tenant whose turn it is (tenant_next()), and within it to whoever came
 * first, a queued run or a waiting slot. The tenant is looked for again after each start: a
 * granted slot's owner may give it back at once, and that tenant may be gone. */
static void scheduler_pump(Scheduler *s) {
        while (s->n_running < s->max_running && !s->shutting_down) {
                SchedTenant *t = tenant_next(s);
                if (!t)
                        break;
                s->vclock = t->vtime;
                t->vtime += SCHED_VTIME_UNIT / t->limits.weight;
                SchedulerSlot *w = t->waiters;
                if (w && (!t->queue || w->seq < t->queue->seq)) {
                        slot_waiter_remove(s, w);
                        slot_hold(s, w);
                        w->granted(w);
                        continue;
                }
                Job *j = t->queue;
                queue_remove(s, j);
                job_start(s, j);
        }
}

/* Why a call of tenant t that would wait is refused, or 0 when it may wait (or start). */
static int refusal_of(const Scheduler *s, const SchedTenant *t, const void *session) {
        if (s->shutting_down)
                return -EBUSY;
        if (!tenant_would_wait(s, t))
                return 0;
        if (s->n_queued >= s->queue_max)
                return -EBUSY;
        if (t->limits.queue != UINT32_MAX && t->n_queued >= t->limits.queue)
                return -EUSERS;
        /* A call that would wait counts against its session's share of the queue. */
        if (session) {
                uint32_t n = 0;
                LIST_FOREACH(jobs, j, t->queue) /* a session is one tenant's */
                        n += j->session == session;
                if (n >= s->session_queue_max)
                        return -EDQUOT;
        }
        return 0;
}

int scheduler_slot_request(Scheduler *s, SchedulerSlot *slot, const char *tenant) {
        assert(!slot->held && !slot->waiting);
        if (s->shutting_down)
                return -EBUSY;
        SchedTenant *t = tenant_get(s, tenant);
        if (!t)
                return -ENOMEM;
        int r = refusal_of(s, t, NULL);
        if (r < 0) {
                tenant_put(s, t);
                return r;
        }
        slot->seq = s->seq++;
        slot->tenant = t;
        if (!tenant_would_wait(s, t)) {
                slot_hold(s, slot);
                return 1;
        }
        tenant_enqueued(s, t);
        LIST_INSERT_AFTER(slots, t->waiters, t->waiters_tail, slot);
        t->waiters_tail = slot;
        slot->waiting = true;
        return 0;
}

void scheduler_slot_release(Scheduler *s, SchedulerSlot *slot) {
        SchedTenant *t = slot->tenant;
        if (slot->waiting) {
                slot_waiter_remove(s, slot);
                slot->tenant = NULL;
                tenant_put(s, t);
        } else if (slot->held) {
                slot->held = false;
                slot->tenant = NULL;
                tenant_stopped(s, t);
                tenant_put(s, t);
                scheduler_pump(s);
        }
}

int scheduler_submit(Scheduler *s, McpCall *call, void *owner, JobReplyFn reply) {
        /* Shutting down, the queue refuses every call alike, with the reason and a record. */
        if (s->shutting_down)
                return scheduler_submit_prepared(s, call, owner, reply, NULL);
        const RouteRoom *room = route_table_lookup(&s->routes, mcp_call_args(call));
        if (!room)
                return -EOPNOTSUPP; /* a bug: test-route checks every listed tool has a room */
        return room->vtable->submit(room->userdata, call, owner, reply);
}

static int prep_refuse(const JobPrep *prep, int r) {
        if (prep && prep->release)
                prep->release(prep->userdata);
        return r;
}

int scheduler_submit_prepared(Scheduler *s, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep) {
        const void *session = s->session_of ? s->session_of(owner) : NULL;
        SchedTenant *t = s->shutting_down ? NULL : tenant_get(s, mcp_call_principal(call));
        if (!s->shutting_down && !t)
                return prep_refuse(prep, -ENOMEM);
        int refused = t ? refusal_of(s, t, session) : -EBUSY;
        if (refused < 0) {
                tenant_put(s, t);
                scheduler_note_rejected(s, call, s->shutting_down        ? "shutting-down"
                                                 : refused == -EDQUOT ? "session-queue-full"
                                                 : refused == -EUSERS ? "tenant-queue-full"
                                                                      : "queue-full",
                                        NULL);
                return prep_refuse(prep, refused);
        }

        _cleanup_(job_freep) Job *j = calloc(1, sizeof(*j));
        if (!j) {
                tenant_put(s, t);
                return prep_refuse(prep, -ENOMEM);
        }
        /* The call is the job's only once it is queued: on -ENOMEM the caller still owns it. */
        *j = (Job) { .scheduler = s, .owner = owner, .session = session, .tenant = t, .reply = reply,
                     .t_queued = now_usec() };
        if (prep) {
                j->release = prep->release;
                j->release_userdata = prep->userdata;
                j->extra = prep->extra ? json_incref(prep->extra) : NULL;
                if ((prep->python && !(j->python = strdup(prep->python))) ||
                    (prep->env_dir && !(j->env_dir = strdup(prep->env_dir))))
                        return -ENOMEM; /* job_free() calls prep's release */
        }
        j->call = call;

        queue_append(s, TAKE_PTR(j));
        scheduler_pump(s);
        return 0;
}

void scheduler_refusal_message(const Scheduler *s, const char *tenant, int r, char *buf, size_t size) {
        if (s->shutting_down)
                snprintf(buf, size, "%s", s->shutdown_reason);
        else if (r == -EUSERS) {
                const SchedTenant *t = tenant_find(s, tenant);
                SchedulerTenantLimits l = t ? t->limits : tenant_limits_of(s, tenant);
                char running[96];
                if (l.runs)
                        snprintf(running, sizeof(running), "%" PRIu32 " of its runs=%" PRIu32, t ? t->n_running : 0, l.runs);
                else
                        snprintf(running, sizeof(running), "%" PRIu32 " (MCP_EXEC_MAX_CONCURRENT=%" PRIu32 " for all)",
                                 t ? t->n_running : 0, s->max_running);
                snprintf(buf, size,
                         "the run queue holds no more calls of tenant %s: %" PRIu32 " are waiting for a slot, its queue=%" PRIu32
                         " on its line of the tenants file; running: %s; retry when one has ended",
                         tenant, t ? t->n_queued : 0, l.queue, running);
        }
        else if (r == -EDQUOT)
                snprintf(buf, size,
                         "this session already has %" PRIu32 " calls waiting for a slot (MCP_EXEC_SESSION_QUEUE_MAX=%" PRIu32
                         "; %" PRIu32 " runs are running, MCP_EXEC_MAX_CONCURRENT=%" PRIu32 "); retry when one has started",
                         s->session_queue_max, s->session_queue_max, s->n_running, s->max_running);
        else if (r == -EOPNOTSUPP)
                snprintf(buf, size, "no part of mcp-execd serves this call (the route table has no room for it)");
        else if (r == -EBUSY)
                snprintf(buf, size,
                         "the run queue is full: %" PRIu32 " runs are running (MCP_EXEC_MAX_CONCURRENT=%" PRIu32
                         ") and %" PRIu32 " are waiting (MCP_EXEC_QUEUE_MAX=%" PRIu32 "); retry later",
                         s->n_running, s->max_running, s->n_queued, s->queue_max);
        else
                snprintf(buf, size, "mcp-execd is out of memory");
}

static Job *find(Job *list, const void *owner, const char *id_key) {
        LIST_FOREACH(jobs, j, list)
                if (j->owner == owner && !j->cancelled && strcmp(mcp_call_id_key(j->call), id_key) == 0)
                        return j;
        return NULL;
}

static Job *find_queued(const Scheduler *s, const void *owner, const char *id_key) {
        LIST_FOREACH(tenants, t, s->tenants) {
                Job *j = find(t->queue, owner, id_key);
                if (j)
                        return j;
        }
        return NULL;
}

const Output *scheduler_output(const Scheduler *s, const void *owner, const char *id_key) {
        Job *j = find(s->running, owner, id_key);
        if (!j || !j->run || !s->run_ops->output)
                return NULL;
        return s->run_ops->output(j->run);
}

bool scheduler_queued(const Scheduler *s, const void *owner, const char *id_key, uint32_t *ret_ahead) {
        Job *j = find_queued(s, owner, id_key);
        if (!j)
                return false;
        /* The calls that came first and still wait, of every tenant: an upper bound of what starts
         * before it (another tenant's turn may come after its own). */
        uint32_t ahead = 0;
        LIST_FOREACH(tenants, t, s->tenants) {
                LIST_FOREACH(jobs, q, t->queue)
                        ahead += q->seq < j->seq && !q->cancelled;
                LIST_FOREACH(slots, w, t->waiters)
                        ahead += w->seq < j->seq;
        }
        *ret_ahead = ahead;
        return true;
}

bool scheduler_has(const Scheduler *s, const void *owner, const char *id_key) {
        return find(s->running, owner, id_key) || find_queued(s, owner, id_key) ||
               route_table_has(&s->routes, owner, id_key);
}

/* A queued job leaves without running: never answered (cancelled), or with a tool error. */
static void job_drop_queued(Scheduler *s, Job *j, const char *error) {
        queue_remove(s, j);
        if (error)
                job_answer_error(j, error);
        else
                j->reply(j->owner, NULL);
        job_free(j);
}

/* A running job is killed; on_run_done() answers it (or not, when cancelled). */
static void job_kill(Scheduler *s, Job *j, bool cancelled) {
        if (cancelled)
                j->cancelled = true;
        else
                j->shutdown = true;
        s->run_ops->kill(j->run);
}

bool scheduler_cancel(Scheduler *s, const void *owner, const char *id_key) {
        if (route_table_cancel(&s->routes, owner, id_key))
                return true;
        Job *j = find_queued(s, owner, id_key);
        if (j) {
                job_drop_queued(s, j, NULL);
                return true;
        }
        j = find(s->running, owner, id_key);
        if (!j)
                return false;
        job_kill(s, j, true);
        return true;
}

void scheduler_cancel_owner(Scheduler *s, const void *owner) {
        (void) route_table_cancel(&s->routes, owner, NULL);
        s->tenants_pinned++;
        LIST_FOREACH(tenants, t, s->tenants)
                LIST_FOREACH_SAFE(jobs, j, next, t->queue)
                        if (j->owner == owner)
                                job_drop_queued(s, j, NULL);
        tenants_unpin(s);
        LIST_FOREACH(jobs, j, s->running)
                if (j->owner == owner && !j->cancelled)
                        job_kill(s, j, true);
}

void scheduler_shutdown(Scheduler *s, const char *reason) {
        if (s->shutting_down)
                return;
        s->shutting_down = true;
        snprintf(s->shutdown_reason, sizeof(s->shutdown_reason), "%s", reason);
        route_table_shutdown(&s->routes, reason);
        /* Waiting slots are their rooms' (route_table_shutdown() answered them); queued jobs are ours. */
        s->tenants_pinned++;
        LIST_FOREACH(tenants, t, s->tenants)
                while (t->queue)
                        job_drop_queued(s, t->queue, s->shutdown_reason);
        tenants_unpin(s);
        LIST_FOREACH(jobs, j, s->running)
                if (!j->cancelled)
                        job_kill(s, j, false);
}

void scheduler_note_rejected(Scheduler *s, const McpCall *call, const char *reason, const char *traceparent) {
        if (!s->metrics)
                return;
        const McpExecArgs *a = call ? mcp_call_args(call) : NULL;
        MetricsRejection rej = {
                .reason = reason,
                .code_bytes = a ? a->code_len : 0,
                .stdin_bytes = a ? a->stdin_len : 0,
                .timeout_s = a ? a->timeout_s : 0,
                .traceparent = call ? mcp_call_traceparent(call) : traceparent,
                .tenant = call && *mcp_call_principal(call) ? mcp_call_principal(call) : NULL,
        };
        metrics_set_runs(s->metrics, s->n_running, s->n_queued);
        metrics_run_rejected(s->metrics, &rej);
}

uint32_t scheduler_tenants_busy(const Scheduler *s, const char **ret_name, uint32_t *ret_calls) {
        uint32_t busy = 0, most = 0;
        const char *name = NULL;
        LIST_FOREACH(tenants, t, s->tenants) {
                uint32_t calls = t->n_running + t->n_queued;
                if (calls == 0)
                        continue; /* pinned by a loop, and freed after it */
                busy++;
                if (calls > most) {
                        most = calls;
                        name = t->name;
                }
        }
        *ret_name = name;
        *ret_calls = most;
        return busy;
}

void scheduler_answered(Scheduler *s) {
        if (!s->shutting_down)
                run_pool_refill_later(s->env.pool);
}

int scheduler_metrics_render(Scheduler *s, char **ret, size_t *ret_len) {
        if (!s->metrics)
                return -ENODATA;
        metrics_set_runs(s->metrics, s->n_running, s->n_queued);
        metrics_set_pool(s->metrics, run_pool_ready(s->env.pool), run_pool_memory_bytes(s->env.pool));
        route_table_gauges(&s->routes, s->metrics);
        return metrics_render(s->metrics, ret, ret_len);
}
