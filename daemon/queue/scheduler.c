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
        LIST_FIELDS(Job, jobs); /* on s->queue while waiting, on s->running while running */
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

void scheduler_set_run_ops(Scheduler *s, const RunOps *ops) {
        s->run_ops = ops;
}

static void job_free(Job *j) {
        mcp_call_free(j->call);
        if (j->release)
                j->release(j->release_userdata);
        free(j->python);
        free(j->env_dir);
        json_decref(j->extra);
        free(j);
}
DEFINE_POINTER_CLEANUP(Job, job_free)

/* The queue keeps its tail, so appending stays O(1) however long it is. */
static void queue_append(Scheduler *s, Job *j) {
        j->seq = s->seq++;
        LIST_INSERT_AFTER(jobs, s->queue, s->queue_tail, j);
        s->queue_tail = j;
        s->n_queued++;
}

static void queue_remove(Scheduler *s, Job *j) {
        if (s->queue_tail == j)
                s->queue_tail = j->jobs_prev;
        LIST_REMOVE(jobs, s->queue, j);
        s->n_queued--;
}

static void running_remove(Scheduler *s, Job *j) {
        LIST_REMOVE(jobs, s->running, j);
        s->n_running--;
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
        };
        j->queue_ms = p.queue_ms;
        LIST_PREPEND(jobs, s->running, j);
        s->n_running++;

        int r = s->run_ops->start(&s->env, &p, on_run_done, j, &j->run);
        if (r < 0) {
                running_remove(s, j);
                job_answer_error(j, "mcp-execd is out of memory and cannot start the run");
                job_free(j);
        }
}

static void slot_waiter_remove(Scheduler *s, SchedulerSlot *slot) {
        if (s->slot_waiters_tail == slot)
                s->slot_waiters_tail = slot->slots_prev;
        LIST_REMOVE(slots, s->slot_waiters, slot);
        slot->waiting = false;
        s->n_queued--;
}

/* Free slots go to whoever came first, a queued run or a waiting slot. */
static void scheduler_pump(Scheduler *s) {
        while ((s->queue || s->slot_waiters) && s->n_running < s->max_running && !s->shutting_down) {
                SchedulerSlot *w = s->slot_waiters;
                if (w && (!s->queue || w->seq < s->queue->seq)) {
                        slot_waiter_remove(s, w);
                        w->held = true;
                        s->n_running++;
                        w->granted(w);
                        continue;
                }
                Job *j = s->queue;
                queue_remove(s, j);
                job_start(s, j);
        }
}

int scheduler_slot_request(Scheduler *s, SchedulerSlot *slot) {
        assert(!slot->held && !slot->waiting);
        if (s->shutting_down || (s->n_running >= s->max_running && s->n_queued >= s->queue_max))
                return -EBUSY;
        slot->seq = s->seq++;
        if (s->n_running < s->max_running && !s->queue && !s->slot_waiters) {
                slot->held = true;
                s->n_running++;
                return 1;
        }
        LIST_INSERT_AFTER(slots, s->slot_waiters, s->slot_waiters_tail, slot);
        s->slot_waiters_tail = slot;
        slot->waiting = true;
        s->n_queued++;
        return 0;
}

void scheduler_slot_release(Scheduler *s, SchedulerSlot *slot) {
        if (slot->waiting)
                slot_waiter_remove(s, slot);
        else if (slot->held) {
                slot->held = false;
                s->n_running--;
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

static uint32_t session_queued(const Scheduler *s, const void *session) {
        uint32_t n = 0;
        LIST_FOREACH(jobs, j, s->queue)
                n += j->session == session;
        return n;
}

static int prep_refuse(const JobPrep *prep, int r) {
        if (prep && prep->release)
                prep->release(prep->userdata);
        return r;
}

int scheduler_submit_prepared(Scheduler *s, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep) {
        const void *session = s->session_of ? s->session_of(owner) : NULL;
        int refused = 0;
        if (s->shutting_down || (s->n_running >= s->max_running && s->n_queued >= s->queue_max))
                refused = -EBUSY;
        /* A call that would wait counts against its session's share of the queue (a free slot
         * means it starts now and waits for nothing). */
        else if (session && s->n_running >= s->max_running && session_queued(s, session) >= s->session_queue_max)
                refused = -EDQUOT;
        if (refused < 0) {
                scheduler_note_rejected(s, call, s->shutting_down ? "shutting-down"
                                                 : refused == -EDQUOT ? "session-queue-full" : "queue-full", NULL);
                return prep_refuse(prep, refused);
        }

        _cleanup_(job_freep) Job *j = calloc(1, sizeof(*j));
        if (!j)
                return prep_refuse(prep, -ENOMEM);
        /* The call is the job's only once it is queued: on -ENOMEM the caller still owns it. */
        *j = (Job) { .scheduler = s, .owner = owner, .session = session, .reply = reply, .t_queued = now_usec() };
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

void scheduler_refusal_message(const Scheduler *s, int r, char *buf, size_t size) {
        if (s->shutting_down)
                snprintf(buf, size, "%s", s->shutdown_reason);
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

const Output *scheduler_output(const Scheduler *s, const void *owner, const char *id_key) {
        Job *j = find(s->running, owner, id_key);
        if (!j || !j->run || !s->run_ops->output)
                return NULL;
        return s->run_ops->output(j->run);
}

bool scheduler_queued(const Scheduler *s, const void *owner, const char *id_key, uint32_t *ret_ahead) {
        Job *j = find(s->queue, owner, id_key);
        if (!j)
                return false;
        uint32_t ahead = 0;
        LIST_FOREACH(jobs, q, s->queue)
                ahead += q->seq < j->seq && !q->cancelled;
        LIST_FOREACH(slots, w, s->slot_waiters)
                ahead += w->seq < j->seq;
        *ret_ahead = ahead;
        return true;
}

bool scheduler_has(const Scheduler *s, const void *owner, const char *id_key) {
        return find(s->running, owner, id_key) || find(s->queue, owner, id_key) ||
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
        Job *j = find(s->queue, owner, id_key);
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
        LIST_FOREACH_SAFE(jobs, j, next, s->queue)
                if (j->owner == owner)
                        job_drop_queued(s, j, NULL);
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
        while (s->queue)
                job_drop_queued(s, s->queue, s->shutdown_reason);
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
