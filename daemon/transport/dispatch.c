/* dispatch.c: the one path from a parsed MCP action to the scheduler (dispatch.h); owns the
 * DispatchCall records between submit and answer, and the daemon's tasks (their runs, their
 * waiting tasks/result requests). */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "dispatch.h"
#include "log.h"
#include "str-util.h"
#include "task-keeper.h"

/* Progress at most once a second (and each second a call runs): a client sees its output while it
 * comes, and a chatty run costs one notification a second, whatever it prints. */
#define DISPATCH_PROGRESS_USEC (1000u * 1000u)

static DispatchCall *dispatch_call_free(DispatchCall *c) {
        if (!c)
                return NULL;
        free(c->id_key);
        free(c->progress_token);
        mcp_task_request_free(c->wait);
        free(c->inline_created);
        free(c);
        return NULL;
}
DEFINE_POINTER_CLEANUP(DispatchCall, dispatch_call_free)

void dispatch_init(Dispatch *d, Scheduler *scheduler, const DispatchOps *ops, void *userdata) {
        *d = (Dispatch) { .scheduler = scheduler, .ops = ops, .userdata = userdata };
        LIST_HEAD_INIT(d->calls);
}

void dispatch_set_tasks(Dispatch *d, DispatchTasks *tasks, const char *owner) {
        d->tasks = tasks;
        snprintf(d->owner, sizeof(d->owner), "%s", owner);
}

/* The scheduler's JobReplyFn: every call ends here exactly once. */
static void dispatch_on_reply(void *owner, char *reply) {
        _cleanup_(dispatch_call_freep) DispatchCall *c = owner;
        Dispatch *d = c->dispatch;

        if (!d) { /* detached: the session is gone */
                free(reply);
                return;
        }
        LIST_REMOVE(calls, d->calls, c);
        d->n_calls--;
        c->dispatch = NULL;
        d->ops->call_reply(d, c, reply); /* may free d */
}

DispatchCall *dispatch_find(const Dispatch *d, const char *id_key) {
        LIST_FOREACH(calls, c, d->calls)
                if (strcmp(c->id_key, id_key) == 0)
                        return c;
        return NULL;
}

static void dispatch_answer(Dispatch *d, void *ctx, char *reply) {
        if (reply)
                d->ops->answer(d, ctx, reply);
}

/* A reply to a call is NULL only when even the encoder's fallback found no memory (mcp.h): the
 * call is answered with the tool error its parse preformatted, never left waiting (issue 15). */
static char *reply_or_oom(McpCall *call, char *reply) {
        if (reply)
                return reply;
        log_error("out of memory building a reply; answered with the preformatted tool error");
        return mcp_call_reply_oom(call);
}

/* One progress notification for c; progress 0 is "accepted". The output cursor moves on only if
 * the transport took the notification, so nothing is lost while c has no stream. */
static void dispatch_send_progress(Dispatch *d, DispatchCall *c, uint64_t progress) {
        if (!d->ops->call_notify)
                return;
        /* While it waits for a slot its deadline has not started: a client that counts its own
         * timeout sees why the answer takes longer (issue 30.1). */
        char msg[160];
        uint32_t ahead;
        if (progress == 0)
                snprintf(msg, sizeof(msg), "accepted");
        else if (scheduler_queued(d->scheduler, c, c->id_key, &ahead))
                snprintf(msg, sizeof(msg), "queued for %" PRIu64 " s, %" PRIu32 " call%s ahead (at most %" PRIu32
                         " run at once); its %" PRIu32 " s deadline starts when it runs", progress, ahead,
                         ahead == 1 ? "" : "s", d->scheduler->max_running, c->timeout_s);
        else
                snprintf(msg, sizeof(msg), "%" PRIu64 " s elapsed of the %" PRIu32 " s deadline", progress,
                         c->timeout_s);

        _cleanup_(output_pieces_freep) char *piece[2] = {};
        size_t len[2] = {};
        McpProgressOutput out = {};
        OutputCursor cur = c->streamed;
        const Output *o = progress > 0 ? scheduler_output(d->scheduler, c, c->id_key) : NULL;
        if (o && output_stream_next(o, &cur, piece, len, &out.truncated) < 0) {
                log_warning("out of memory streaming a run's output; progress goes without it");
                cur = c->streamed;
        }
        out.stdout_data = piece[0];
        out.stdout_len = len[0];
        out.stderr_data = piece[1];
        out.stderr_len = len[1];

        _cleanup_free_ char *n = mcp_progress_new(c->progress_token, progress, c->timeout_s, msg, &out);
        if (!n) {
                log_warning("out of memory building a progress notification; skipped");
                return;
        }
        if (!d->ops->call_notify(d, c, n))
                return;
        c->streamed = cur;
        c->progress_sent = progress;
}

static void task_waiter_unlink(DispatchCall *c);

void dispatch_progress_tick(Dispatch *d, uint64_t now) {
        /* A call whose window to be answered inline is over is answered with its task: one a tick,
         * since an answer may free d (a 2026 request's session goes with it). */
        LIST_FOREACH(calls, c, d->calls)
                if (c->inline_created && now >= c->inline_until) {
                        task_waiter_unlink(c);
                        dispatch_on_reply(c, TAKE_PTR(c->inline_created));
                        return;
                }
        LIST_FOREACH(calls, c, d->calls) {
                uint64_t elapsed = (now - c->t0_usec) / DISPATCH_PROGRESS_USEC;
                if (c->progress_token && elapsed > c->progress_sent)
                        dispatch_send_progress(d, c, elapsed);
        }
}

bool dispatch_wants_progress(const Dispatch *d) {
        LIST_FOREACH(calls, c, d->calls)
                if (c->progress_token || c->inline_created)
                        return true;
        return false;
}

/* key: what finds the call (the request id; a task's id for a task's run, which sends no progress). */
static void dispatch_submit(Dispatch *d, McpCall *call_in, void *ctx, const char *key) {
        _cleanup_(mcp_call_freep) McpCall *call = call_in;
        bool task = key;
        if (!key)
                key = mcp_call_id_key(call);

        if (dispatch_find(d, key)) {
                scheduler_note_rejected(d->scheduler, call, "duplicate-id", NULL);
                dispatch_answer(d, ctx, reply_or_oom(call, mcp_call_reply_tool_error(
                        call, "a call with this request id is still running; request ids must be unique")));
                return;
        }

        _cleanup_(dispatch_call_freep) DispatchCall *c = calloc(1, d->ops->call_size ?: sizeof(DispatchCall));
        const char *tok = task ? NULL : mcp_call_progress_token(call);
        if (c) {
                c->id_key = strdup(key);
                c->progress_token = tok ? strdup(tok) : NULL;
        }
        if (!c || !c->id_key || (tok && !c->progress_token)) {
                dispatch_answer(d, ctx, reply_or_oom(call, mcp_call_reply_tool_error(call, DISPATCH_OOM_MESSAGE)));
                return;
        }
        c->timeout_s = mcp_call_args(call)->timeout_s;
        c->t0_usec = now_usec();
        c->dispatch = d;

        DispatchCall *owner = TAKE_PTR(c); /* the list's until dispatch_on_reply() */
        LIST_PREPEND(calls, d->calls, owner);
        d->n_calls++;
        if (d->ops->call_new)
                d->ops->call_new(d, owner, ctx);
        if (owner->progress_token)
                dispatch_send_progress(d, owner, 0);

        int r = scheduler_submit(d->scheduler, call, owner, dispatch_on_reply);
        if (r >= 0) {
                TAKE_PTR(call); /* the scheduler's */
                return;
        }
        char msg[320];
        if (r == -EBUSY || r == -EDQUOT || r == -EUSERS || r == -EOPNOTSUPP)
                scheduler_refusal_message(d->scheduler, mcp_call_principal(call), r, msg, sizeof(msg));
        else
                snprintf(msg, sizeof(msg), DISPATCH_OOM_MESSAGE);
        /* Refused: the refusal is the call's answer, through the same path as any other. */
        dispatch_on_reply(owner, reply_or_oom(call, mcp_call_reply_tool_error(call, msg)));
}

/* ---- tasks ---------------------------------------------------------------------------------- */

struct DispatchTasks {
        Dispatch dispatch;  /* the tasks' runs, keyed by task id */
        TaskStore store;
        uint64_t inline_usec; /* MCP_EXEC_TASK_INLINE_MS */
        unsigned (*tenant_max)(void *userdata, const char *tenant); /* DispatchTasksConfig's */
        void *tenant_userdata;
};

/* A task's run: the task it answers into, or NULL once the task let go of it (cancelled). */
typedef struct TaskCall {
        DispatchCall call; /* first: dispatch.c allocates it (DispatchOps.call_size) */
        Task *task;
} TaskCall;

static uint64_t realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static McpTaskView task_view(const Task *k);
static char *task_answer(Task *k, const McpTaskRequest *req, bool was_terminal);

static void task_waiter_unlink(DispatchCall *c) {
        DispatchCall **head = (DispatchCall **) &c->wait_task->waiters;
        LIST_REMOVE(waiters, *head, c);
        c->wait_task = NULL;
}

/* ended: each waiting tasks/result gets the task's answer, now that it has ended; else each stops
 * waiting unanswered (its task is being freed with its owner). */
static void task_waiters_answer(Task *k, bool ended) {
        DispatchCall *c;
        while ((c = k->waiters)) {
                task_waiter_unlink(c);
                char *reply = NULL;
                if (c->inline_created)
                        /* Ended otherwise than by its run's answer (cancelled, a shutdown): the task it is,
                         * which says how it ended. */
                        reply = ended ? TAKE_PTR(c->inline_created) : NULL;
                else if (ended)
                        reply = task_answer(k, c->wait, true) ?: mcp_task_reply_oom(c->wait);
                dispatch_on_reply(c, reply);
        }
}

/* The call waiting for task k's run to be answered inline, if any (it is k's only waiter: nobody
 * else knows the task's id). */
static DispatchCall *task_inline_waiter(const Task *k) {
        DispatchCall *c = k->waiters;
        return c && c->inline_created ? c : NULL;
}

static void task_ended(Task *k, TaskStatus status, char *reply) {
        task_end(k, status, reply, now_usec(), realtime_usec());
        task_waiters_answer(k, true);
}

/* The task dispatch's ctx is the Task the run answers into. */
static void tasks_on_call_new(Dispatch *d, DispatchCall *c, void *ctx) {
        TaskCall *tc = (TaskCall *) c;
        Task *k = ctx;
        tc->task = k;
        k->run = tc;
}

/* An answer that is not the run's (out of memory before it was submitted): the task's result. */
static void tasks_on_answer(Dispatch *d, void *ctx, char *reply) {
        task_ended(ctx, TASK_COMPLETED, reply);
}

static void tasks_on_call_reply(Dispatch *d, DispatchCall *c, char *reply) {
        TaskCall *tc = (TaskCall *) c;
        if (!tc->task) {
                free(reply);
                return;
        }
        /* The run ended within its call's window: the answer is the call's own, inline, as without
         * tasks, and the task, whose id nobody was told, goes. */
        Task *k = tc->task;
        DispatchCall *w = reply ? task_inline_waiter(k) : NULL;
        if (w) {
                task_waiter_unlink(w);
                tc->task = NULL;
                k->run = NULL;
                task_store_remove(k->store, k);
                dispatch_on_reply(w, reply);
                return;
        }
        /* NULL: cancelled (by the scheduler's shutdown, or dispatch_tasks_cancel_all()). */
        task_ended(k, reply ? TASK_COMPLETED : TASK_CANCELLED, reply);
}

/* Kills (or drops, if queued) a task's run, as scheduler_cancel() does a call's. By owner, the run's
 * own record: the scheduler knows the call by its request id, which two clients' tasks may share. */
static void task_run_cancel(DispatchTasks *t, TaskCall *tc) {
        scheduler_cancel_owner(t->dispatch.scheduler, tc); /* may free tc */
}

static const DispatchOps tasks_dispatch_ops = {
        .call_size = sizeof(TaskCall),
        .answer = tasks_on_answer,
        .call_new = tasks_on_call_new,
        .call_reply = tasks_on_call_reply,
};

int dispatch_tasks_new(Scheduler *scheduler, const DispatchTasksConfig *cfg, DispatchTasks **ret) {
        DispatchTasks *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        dispatch_init(&t->dispatch, scheduler, &tasks_dispatch_ops, t);
        task_store_init(&t->store, cfg->max_total, cfg->max_per_owner, cfg->max_bytes, cfg->ttl_usec);
        t->store.tag = cfg->tag;
        t->inline_usec = cfg->inline_usec;
        t->tenant_max = cfg->tenant_max;
        t->tenant_userdata = cfg->tenant_userdata;
        if (cfg->keep)
                task_keeper_install(&t->store);
        *ret = t;
        return 0;
}

void dispatch_tasks_adopt(DispatchTasks *t, FdStore *st) {
        task_keeper_adopt(&t->store, st);
}

void dispatch_tasks_cancel_all(DispatchTasks *t) {
        if (!t)
                return;
        LIST_FOREACH_SAFE(calls, c, next, t->dispatch.calls)
                task_run_cancel(t, (TaskCall *) c);
}

void dispatch_tasks_drop_owner(DispatchTasks *t, const char *owner) {
        if (!t)
                return;
        LIST_FOREACH_SAFE(tasks, k, next, t->store.tasks) {
                if (strcmp(k->owner, owner) != 0)
                        continue;
                TaskCall *tc = k->run;
                if (tc) {
                        tc->task = NULL;
                        task_run_cancel(t, tc);
                }
                task_waiters_answer(k, false);
                task_store_remove(&t->store, k);
        }
}

DispatchTasks *dispatch_tasks_free(DispatchTasks *t) {
        if (!t)
                return NULL;
        dispatch_detach(&t->dispatch); /* every working task ends cancelled, its run is let go */
        task_store_done(&t->store);
        free(t);
        return NULL;
}

static McpTaskView task_view(const Task *k) {
        static const McpTaskStatus statuses[] = {
                [TASK_WORKING] = MCP_TASK_WORKING,
                [TASK_COMPLETED] = MCP_TASK_COMPLETED,
                [TASK_FAILED] = MCP_TASK_FAILED,
                [TASK_CANCELLED] = MCP_TASK_CANCELLED,
        };
        return (McpTaskView) {
                .id = k->id,
                .status = statuses[k->status],
                .created_usec = k->created_usec,
                .updated_usec = k->updated_usec,
                .ttl_msec = k->ttl_usec / 1000u,
                .too_big = k->too_big,
                .max_bytes = k->store->max_bytes,
        };
}

/* The answer to a request about task k: with its result opened (the store keeps it compressed)
 * only when the answer shows it. Marks k fetched once the answer exists (a client answered "out of
 * memory" has not been told). NULL without memory. */
static char *task_answer(Task *k, const McpTaskRequest *req, bool was_terminal) {
        McpTaskView v = task_view(k);
        _cleanup_free_ char *result = NULL;
        if (k->status == TASK_COMPLETED && mcp_task_request_shows_result(req)) {
                result = task_reply(k);
                if (!result)
                        return NULL;
                v.reply = result;
        }
        char *reply = mcp_task_reply(req, &v, was_terminal);
        if (reply && mcp_task_reply_tells_end(req, &v))
                task_fetched(k);
        return reply;
}

/* A request that waits on task k (a 2025 tasks/result, or a 2026 call held to be answered inline):
 * a record on the session's list, so the transport holds the request and a cancellation finds it,
 * and k's waiter, so its end finds it. NULL without memory. */
static DispatchCall *dispatch_waiter_new(Dispatch *d, Task *k, const char *id_key) {
        DispatchCall *c = calloc(1, d->ops->call_size ?: sizeof(DispatchCall));
        if (!c || !(c->id_key = strdup(id_key)))
                return dispatch_call_free(c);
        c->t0_usec = now_usec();
        c->dispatch = d;
        c->wait_task = k;
        return c;
}

/* Puts the waiter made by dispatch_waiter_new() (and filled) on the lists, then tells the transport. */
static void dispatch_waiter_link(Dispatch *d, DispatchCall *c, void *ctx) {
        DispatchCall **head = (DispatchCall **) &c->wait_task->waiters;
        LIST_PREPEND(waiters, *head, c);
        LIST_PREPEND(calls, d->calls, c);
        d->n_calls++;
        if (d->ops->call_new)
                d->ops->call_new(d, c, ctx);
}

/* A 2026 call that may be answered inline (issue 30.2): held as task k's waiter; takes created.
 * False without memory (then the task is answered at once, as before). */
static bool dispatch_task_hold(Dispatch *d, McpCall *call, Task *k, char *created, void *ctx) {
        DispatchCall *c = dispatch_waiter_new(d, k, mcp_call_id_key(call));
        if (!c)
                return false;
        c->inline_created = created;
        c->inline_until = c->t0_usec + d->tasks->inline_usec;
        dispatch_waiter_link(d, c, ctx); /* the session's list's, and the task's, until answered */
        return true;
}

/* What every "too many tasks" error says of the tasks that count, and how a client frees room
 * (bar MCP_EXEC_TASKS_MAX's, which it can only wait out). */
#define TASKS_COUNTED "running or ended and not yet fetched"
#define TASKS_FREE_ROOM "fetch or cancel some, or wait for them to expire (MCP_EXEC_TASK_TTL_S)"

/* Why task_store_create() refused (its -errno r): the tool error's text in msg, and the reason the
 * refusal is recorded under. */
static const char *task_refusal(int r, const DispatchTasks *dt, const TaskAsker *asker, char *msg, size_t size) {
        switch (r) {
        case -EBUSY:
                snprintf(msg, size, "too many tasks: mcp-execd keeps at most %u (MCP_EXEC_TASKS_MAX), " TASKS_COUNTED
                         "; retry later", dt->store.max_total);
                return "tasks-full";
        case -EDQUOT:
                snprintf(msg, size, "too many tasks for this client: at most %u (MCP_EXEC_TASKS_PER_CLIENT), "
                         TASKS_COUNTED "; " TASKS_FREE_ROOM, dt->store.max_per_owner);
                return "client-tasks-full";
        case -EUSERS:
                snprintf(msg, size, "too many tasks for tenant %s: at most %u (tasks=%u on its line of the tenants "
                         "file), " TASKS_COUNTED "; " TASKS_FREE_ROOM, asker->tenant, asker->tenant_max,
                         asker->tenant_max);
                return "tenant-tasks-full";
        default:
                snprintf(msg, size, "mcp-execd could not create the task: %s", strerror(-r));
                return "tasks-full";
        }
}

/* A call that runs as a task: the task first (or the bound it hit), its creation answered, then its
 * run submitted through the task dispatch exactly as a call is (a refusal there, a full queue, is
 * the task's result). */
static void dispatch_task_submit(Dispatch *d, McpCall *call_in, void *ctx) {
        _cleanup_(mcp_call_freep) McpCall *call = call_in;
        DispatchTasks *dt = d->tasks;
        uint64_t ttl_msec;
        (void) mcp_call_is_task(call, &ttl_msec);

        Task *k = NULL;
        const char *tenant = mcp_call_principal(call);
        TaskAsker asker = { .owner = d->owner, .tenant = tenant,
                            .tenant_max = dt->tenant_max ? dt->tenant_max(dt->tenant_userdata, tenant) : UINT_MAX };
        int r = task_store_create(&dt->store, &asker, ttl_msec * 1000u, now_usec(), realtime_usec(), &k);
        if (r < 0) {
                char msg[320];
                /* Recorded like a full queue, with the call's sizes, never its content. */
                scheduler_note_rejected(d->scheduler, call, task_refusal(r, dt, &asker, msg, sizeof(msg)),
                                        mcp_call_traceparent(call));
                dispatch_answer(d, ctx, reply_or_oom(call, mcp_call_reply_error(call, MCP_ERROR_INVALID_REQUEST, msg)));
                return;
        }
        McpTaskView v = task_view(k);
        char *created = mcp_call_reply_task_created(call, &v);
        if (!created) {
                task_store_remove(&dt->store, k);
                dispatch_answer(d, ctx, reply_or_oom(call, mcp_call_reply_tool_error(call, DISPATCH_OOM_MESSAGE)));
                return;
        }
        if (dt->inline_usec > 0 && mcp_call_task_may_inline(call) && dispatch_task_hold(d, call, k, created, ctx)) {
                /* Held: answered inline if the run ends within the window, else with created. */
                dispatch_submit(&dt->dispatch, TAKE_PTR(call), k, k->id);
                return;
        }
        dispatch_submit(&dt->dispatch, TAKE_PTR(call), k, k->id);
        dispatch_answer(d, ctx, created);
}

/* A 2025 tasks/result of a working task waits for its end (tasks.mdx), as a call waits for its
 * run: a record on the session's list, so the transport holds the request open and a cancellation
 * (notifications/cancelled of its id, the request or session going away) ends the wait. True if
 * it waits (or was answered for lack of memory). */
static bool dispatch_task_wait(Dispatch *d, McpAction *a, void *ctx) {
        DispatchTasks *dt = d->tasks;
        if (!dt || mcp_task_request_op(a->task) != MCP_TASK_RESULT)
                return false;
        Task *k = task_store_find(&dt->store, d->owner, mcp_task_request_task_id(a->task), now_usec());
        if (!k || task_status_is_terminal(k->status))
                return false;

        DispatchCall *c = dispatch_waiter_new(d, k, mcp_task_request_id_key(a->task));
        if (!c) {
                dispatch_answer(d, ctx, mcp_task_reply_oom(a->task));
                return true;
        }
        c->wait = TAKE_PTR(a->task);
        dispatch_waiter_link(d, c, ctx); /* the session's list's, and the task's, until answered */
        return true;
}

static char *dispatch_task_answer(Dispatch *d, const McpTaskRequest *req) {
        DispatchTasks *dt = d->tasks;
        uint64_t now = now_usec();

        if (mcp_task_request_op(req) == MCP_TASK_LIST) {
                Task *found[256];
                size_t n = dt ? task_store_list(&dt->store, d->owner, now, found, ELEMENTSOF(found)) : 0;
                McpTaskView views[ELEMENTSOF(found)];
                for (size_t i = 0; i < n; i++)
                        views[i] = task_view(found[i]);
                return mcp_task_reply_list(req, views, n);
        }

        Task *k = dt ? task_store_find(&dt->store, d->owner, mcp_task_request_task_id(req), now) : NULL;
        if (!k) {
                char tag[17];
                if (str_id_other_instance(mcp_task_request_task_id(req), dt ? dt->store.tag : NULL, tag))
                        return mcp_task_reply_other_instance(req, tag);
                return mcp_task_reply(req, NULL, false);
        }
        if (mcp_task_request_op(req) == MCP_TASK_RESULT && !task_status_is_terminal(k->status))
                return NULL; /* dispatch_task_wait() */
        bool was_terminal = task_status_is_terminal(k->status);
        if (mcp_task_request_op(req) == MCP_TASK_CANCEL && !was_terminal) {
                /* Cancelled now, as the client sees it; the run is killed as a cancelled call's is
                 * (scheduler_cancel()), and its late answer, if any, is dropped. */
                TaskCall *tc = k->run;
                task_ended(k, TASK_CANCELLED, NULL);
                if (tc) {
                        tc->task = NULL;
                        task_run_cancel(dt, tc);
                }
                log_debug("a task was cancelled by the client");
        }
        return task_answer(k, req, was_terminal);
}

void dispatch_action(Dispatch *d, McpAction *a, void *ctx) {
        switch (a->kind) {
        case MCP_ACTION_NONE:
        case MCP_ACTION_HOLD: /* the transport keeps the message itself (stdio-transport.c) */
                return;
        case MCP_ACTION_REPLY:
                if (a->is_tool_error)
                        scheduler_note_rejected(d->scheduler, NULL, "invalid-arguments",
                                                a->traceparent[0] ? a->traceparent : NULL);
                dispatch_answer(d, ctx, TAKE_PTR(a->reply));
                /* initialize's answer is the first: ready sandboxes are made behind it, not before. */
                scheduler_answered(d->scheduler);
                return;
        case MCP_ACTION_CANCEL: {
                DispatchCall *c = dispatch_find(d, a->cancel_key);
                if (c && dispatch_call_cancel(c))
                        log_debug("a call was cancelled by the client");
                return;
        }
        case MCP_ACTION_CALL:
                if (d->tasks && mcp_call_is_task(a->call, NULL))
                        dispatch_task_submit(d, TAKE_PTR(a->call), ctx);
                else
                        dispatch_submit(d, TAKE_PTR(a->call), ctx, NULL);
                return;
        case MCP_ACTION_TASK: {
                if (dispatch_task_wait(d, a, ctx))
                        return;
                char *reply = dispatch_task_answer(d, a->task);
                if (!reply) {
                        log_error("out of memory building a reply; answered with the preformatted error");
                        reply = mcp_task_reply_oom(a->task);
                }
                dispatch_answer(d, ctx, reply);
                return;
        }
        }
}

bool dispatch_call_cancel(DispatchCall *c) {
        Dispatch *d = c->dispatch;
        if (!d)
                return false;
        if (c->wait_task) {
                Task *k = c->wait_task;
                bool held = c->inline_created;
                task_waiter_unlink(c);
                if (held) {
                        /* A call held to be answered inline is cancelled before its client learned of
                         * a task: its task goes too, its run killed, as a plain call's would be. */
                        TaskCall *tc = k->run;
                        if (tc) {
                                tc->task = NULL;
                                task_run_cancel(d->tasks, tc);
                        }
                        task_waiters_answer(k, false);
                        task_store_remove(k->store, k);
                }
                dispatch_on_reply(c, NULL); /* frees c */
                return true;
        }
        return scheduler_cancel(d->scheduler, c, c->id_key); /* may free c */
}

void dispatch_cancel_all(Dispatch *d) {
        LIST_FOREACH_SAFE(calls, c, next, d->calls)
                (void) dispatch_call_cancel(c);
}

void dispatch_detach(Dispatch *d) {
        DispatchCall *c;
        while ((c = LIST_POP(calls, d->calls))) {
                /* Answered "nothing" now, so the transport lets go of it; the record itself stays
                 * the scheduler's owner until dispatch_on_reply() frees it. */
                c->dispatch = NULL;
                d->n_calls--;
                d->ops->call_reply(d, c, NULL);
        }
}

const void *dispatch_session_of(const void *owner) {
        const DispatchCall *c = owner;
        /* A task's run counts against no session's share of the queue: MCP_EXEC_TASKS_PER_CLIENT
         * bounds one client's tasks, and all tasks share the one task dispatch. */
        if (c->dispatch && c->dispatch->ops == &tasks_dispatch_ops)
                return NULL;
        return c->dispatch;
}
