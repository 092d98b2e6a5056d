/* tools.c: the Python sessions' tool handlers (pysession-internal.h): session_open and
 * session_close, and exec and execute_python naming a session, each checked here and handed to its
 * room (session.c, call.c); the route table's operations (route.h); the module. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "log.h"
#include "py-launch.h"
#include "pysession-internal.h"
#include "spawn.h"
#include "str-util.h"

/* ---------------------------------------------------------------------------------------------
 * Answers. */

void pys_answer_error(McpCall *call, void *owner, JobReplyFn reply, const char *message) {
        if (owner) {
                char *r = mcp_call_reply_tool_error(call, message);
                reply(owner, r ?: mcp_call_reply_oom(call));
        }
        mcp_call_free(call);
}

void pys_answer_errorf(McpCall *call, void *owner, JobReplyFn reply, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        pys_answer_error(call, owner, reply, msg);
}

void pys_answer_json(McpCall *call, void *owner, JobReplyFn reply, json_t *o) {
        if (owner) {
                char *r = o ? mcp_call_reply_structured(call, o) : NULL;
                reply(owner, r ?: mcp_call_reply_oom(call));
        }
        json_decref(o);
        mcp_call_free(call);
}

/* ---------------------------------------------------------------------------------------------
 * Calls. */

/* Constant time per session: a handle's bytes do not decide how long the search takes. Another
 * tenant's session is not found (the answer an unknown handle gets); which tenant has it is no
 * secret once the handle matched, so that compare is a plain one. */
static PySession *session_find(PySessions *m, const char *handle, const char *principal) {
        size_t n = strlen(handle);
        PySession *found = NULL;
        LIST_FOREACH(sessions, s, m->sessions) {
                size_t len = strlen(s->handle);
                unsigned char diff = n != len;
                for (size_t i = 0; i < len; i++)
                        diff |= (unsigned char) (s->handle[i] ^ (i < n ? handle[i] : 0));
                if (!diff && s->state != PYSESSION_DEAD && s->state != PYSESSION_OPENING)
                        found = s;
        }
        return found && strcmp(found->principal, principal) == 0 ? found : NULL;
}
/* A handle that names no session here. One bearing another instance's tag came through a load
 * balancer: either it read too little of the body to see the handle (it says so, mcp.h), or the
 * instance of that tag is down. Say which (the tag is the caller's own text), since "closed or
 * expired" would send the agent looking for the wrong cause. */
static void answer_unknown(PySessions *m, McpCall *call, void *owner, JobReplyFn reply, const char *handle) {
        char tag[17];
        uint64_t read, size;
        if (str_id_other_instance(handle, m->config.tag, tag) && mcp_call_lb_body_partial(call, &read, &size))
                pys_answer_errorf(call, owner, reply, "unknown session here: the handle was made by instance %s, but the load "
                              "balancer read only the first %" PRIu64 " of this request's %" PRIu64 " bytes, did not "
                              "see the handle, and sent the call to another instance: raise its buffer (HAProxy's "
                              "tune.bufsize) above the largest request, or send less in one call", tag, read, size);
        else if (str_id_other_instance(handle, m->config.tag, tag))
                pys_answer_errorf(call, owner, reply, "unknown session: the handle was made by instance %s, which is gone or "
                              "unreachable, and its Python sessions with it; open a new one with session_open", tag);
        else
                pys_answer_error(call, owner, reply, PYSESSION_UNKNOWN);
}

static void session_call(PySessions *m, McpCall *call, void *owner, JobReplyFn reply) {
        const McpExecArgs *a = mcp_call_args(call);
        PySession *s = session_find(m, a->session, mcp_call_principal(call));
        if (!s) {
                answer_unknown(m, call, owner, reply, a->session);
                return;
        }
        if (s->state == PYSESSION_BUSY) {
                pys_answer_error(call, owner, reply, "the session is running another call; a session runs one call at a "
                                                 "time: wait for its answer, or open another session");
                return;
        }
        if (json_array_size(a->dependencies) > 0) {
                pys_answer_error(call, owner, reply, "invalid argument 'dependencies': a session's dependencies are given "
                                                 "to session_open (installed once, for the session's whole life); "
                                                 "open a session with them, or call without the session");
                return;
        }
        const char *python = s->python_name ? s->python_name : m->env.python_name;
        if (a->python && python && strcmp(a->python, python) != 0) {
                pys_answer_errorf(call, owner, reply, "invalid argument 'python': the session runs %s", python);
                return;
        }
        pys_call_submit(s, call, owner, reply);
}

static void session_close(PySessions *m, McpCall *call, void *owner, JobReplyFn reply) {
        PySession *s = session_find(m, mcp_call_args(call)->session, mcp_call_principal(call));
        if (!s) {
                answer_unknown(m, call, owner, reply, mcp_call_args(call)->session);
                return;
        }
        /* A call in flight ends here: it is answered with what it printed, once the kill has brought
         * both pipes to their EOF (after this answer). */
        if (s->call)
                s->call->t_end = now_usec();
        pys_session_kill(s, PYSESSION_END_CLOSED, "closed");
        pys_answer_json(call, owner, reply, json_pack("{s:b}", "closed", 1));
}

/* ---------------------------------------------------------------------------------------------
 * The route table's operations (route.h): pysessions_route_vtable's serves[] says which calls come. */

static void pending_run(PySessions *m, McpCall *call, void *owner, JobReplyFn reply) {
        switch (mcp_call_args(call)->tool) {
        case MCP_TOOL_SESSION_OPEN:
                pys_session_open(m, call, owner, reply, NULL);
                break;
        case MCP_TOOL_SESSION_CLOSE:
                session_close(m, call, owner, reply);
                break;
        default:
                session_call(m, call, owner, reply);
                break;
        }
}

/* Oldest first, as they came. */
static void on_pending(RingOp *op, int res) {
        PySessions *m = container_of(op, PySessions, op_pending);
        for (;;) {
                /* One at a time from the tail: an answer may change the list. */
                PyPending *q = NULL;
                LIST_FOREACH(pending, x, m->pending)
                        q = x;
                if (!q)
                        break;
                LIST_REMOVE(pending, m->pending, q);
                if (m->stopped)
                        pys_answer_error(q->call, q->owner, q->reply, "mcp-execd is stopping");
                else
                        pending_run(m, q->call, q->owner, q->reply);
                free(q);
        }
}

static int hook_submit(void *userdata, McpCall *call, void *owner, JobReplyFn reply) {
        PySessions *m = userdata;
        if (m->stopped)
                return -EBUSY;
        PyPending *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        *q = (PyPending) { .call = call, .owner = owner, .reply = reply };
        LIST_PREPEND(pending, m->pending, q);
        if (!m->op_pending.busy)
                io_uring_prep_nop(ring_get_sqe(m->env.ring, &m->op_pending));
        return 0;
}

static PySession *session_of_call(PySessions *m, const void *owner, const char *id_key) {
        LIST_FOREACH(sessions, s, m->sessions) {
                if (s->call && s->call->owner == owner &&
                    (!id_key || strcmp(mcp_call_id_key(s->call->call), id_key) == 0))
                        return s;
                if (s->open_call && s->open_owner == owner &&
                    (!id_key || strcmp(mcp_call_id_key(s->open_call), id_key) == 0))
                        return s;
        }
        return NULL;
}

static PyPending *pending_find(PySessions *m, const void *owner, const char *id_key) {
        LIST_FOREACH(pending, q, m->pending)
                if (q->owner == owner && (!id_key || strcmp(mcp_call_id_key(q->call), id_key) == 0))
                        return q;
        return NULL;
}

static bool hook_has(void *userdata, const void *owner, const char *id_key) {
        PySessions *m = userdata;
        return pending_find(m, owner, id_key) || session_of_call(m, owner, id_key);
}

/* A cancelled call is never answered; its code is interrupted as at a deadline (the session lives if
 * it stops within the grace). A cancelled open ends the session being made. */
static bool hook_cancel(void *userdata, const void *owner, const char *id_key) {
        PySessions *m = userdata;
        bool any = false;
        PyPending *q;
        while ((q = pending_find(m, owner, id_key))) {
                LIST_REMOVE(pending, m->pending, q);
                q->reply(q->owner, NULL);
                mcp_call_free(q->call);
                free(q);
                any = true;
        }
        PySession *s;
        while ((s = session_of_call(m, owner, id_key))) {
                any = true;
                if (s->open_call && s->open_owner == owner) {
                        s->open_reply(s->open_owner, NULL);
                        s->open_call = mcp_call_free(s->open_call);
                        pys_session_open_answered(s); /* before the kill, which may free s */
                        pys_session_kill(s, PYSESSION_END_CANCELLED, "its open was cancelled");
                        continue;
                }
                pys_call_cancel(s);
                if (id_key)
                        break;
        }
        return any;
}

/* Read at the scrape, not at a call's end: the kernel may reclaim a frozen session's memory between
 * calls. A killed session being reaped is no longer open, as at session_open's bound. */
static void hook_gauges(void *userdata, Metrics *metrics) {
        PySessions *m = userdata;
        uint64_t memory = 0;
        unsigned open = 0; /* as pysessions_count(), in the same walk */
        LIST_FOREACH(sessions, s, m->sessions) {
                CgroupUsage u;
                if (s->state == PYSESSION_DEAD)
                        continue;
                open++;
                if (proc_read_usage(s->proc, &u) >= 0)
                        memory += u.memory_current_bytes;
        }
        metrics_set_py_sessions(metrics, open, memory);
}

static void hook_shutdown(void *userdata, const char *reason) {
        pysessions_stop(userdata, reason);
}

const RouteVTable pysessions_route_vtable = {
        .name = "sessions",
        .serves = {
                [MCP_TOOL_EXEC] = ROUTE_SESSION,
                [MCP_TOOL_EXECUTE_PYTHON] = ROUTE_SESSION,
                [MCP_TOOL_SESSION_OPEN] = ROUTE_PLAIN | ROUTE_PYTHON,
                [MCP_TOOL_SESSION_CLOSE] = ROUTE_SESSION,
        },
        .submit = hook_submit,
        .has = hook_has,
        .cancel = hook_cancel,
        .shutdown = hook_shutdown,
        .gauges = hook_gauges,
};

/* ---------------------------------------------------------------------------------------------
 * The module. */

int pysessions_new(const PySessionsConfig *config, PySessions **ret) {
        _cleanup_free_ PySessions *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->config = *config;
        m->env = *config->env;
        m->config.env = NULL;
        m->op_sweep.callback = pys_on_sweep;
        m->op_pending.callback = on_pending;
        static const char head[] = "_WARM = ()\n_SESSION = True\n";
        size_t ll = strlen(py_launch);
        m->launcher = malloc(sizeof(head) - 1 + ll + 1);
        if (!m->launcher)
                return -ENOMEM;
        memcpy(m->launcher, head, sizeof(head) - 1);
        memcpy(m->launcher + sizeof(head) - 1, py_launch, ll + 1);
        m->launcher_len = sizeof(head) - 1 + ll;
        /* One record with no data: the pipe is empty when it is written, the write is whole. */
        m->switch_msg = run_launcher_message(PYSESSION_SWITCH, "", 0, NULL, 0, NULL, 0, &m->switch_len);
        if (!m->switch_msg) {
                free(m->launcher);
                return -ENOMEM;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

void pysessions_attach(PySessions *m, Scheduler *s) {
        m->scheduler = s;
}

void pysessions_open_prepared(PySessions *m, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep) {
        if (m->stopped) {
                if (prep->release)
                        prep->release(prep->userdata);
                pys_answer_error(call, owner, reply, "mcp-execd is stopping");
                return;
        }
        pys_session_open(m, call, owner, reply, prep);
}

void pysessions_stop(PySessions *m, const char *reason) {
        if (!m || m->stopped)
                return;
        m->stopped = true;
        LIST_FOREACH_SAFE(sessions, s, n, m->sessions) {
                if (pys_store_leave(s))
                        continue; /* idle and in the fd store: the next daemon's (store.c) */
                if (s->call && s->call->owner) {
                        /* Answered with the reason, not with a half result. */
                        PyCall *c = s->call;
                        uint64_t ms = c->started ? (now_usec() - c->t_release) / 1000u : 0;
                        pys_call_record(s, c, &(ExecResult) { .exit_code = -SIGKILL, .duration_ms = ms }, true);
                        pys_answer_error(TAKE_PTR(c->call), c->owner, c->reply, reason ? reason : "mcp-execd is stopping");
                        c->owner = NULL;
                        c->call = NULL;
                        pys_call_free(TAKE_PTR(s->call));
                        s->state = PYSESSION_IDLE;
                }
                pys_session_kill(s, PYSESSION_END_DAEMON_STOP, "mcp-execd is stopping");
        }
        if (m->op_sweep.busy)
                ring_cancel(m->env.ring, &m->op_sweep);
}

bool pysessions_busy(const PySessions *m) {
        if (!m)
                return false;
        /* An idle session may keep a read on the ring (one not yet back when its call ended): it is
         * not a call, and the teardown's drain of the ring waits for it after pysessions_stop(). */
        if (m->pending || m->op_pending.busy)
                return true;
        LIST_FOREACH(sessions, s, m->sessions)
                if (s->state == PYSESSION_OPENING || s->state == PYSESSION_BUSY || s->finish_pending)
                        return true;
        return false;
}

unsigned pysessions_count(const PySessions *m) {
        if (!m)
                return 0;
        unsigned open = 0; /* a killed one is no longer open, while its init is reaped */
        LIST_FOREACH(sessions, s, m->sessions)
                open += s->state != PYSESSION_DEAD;
        return open;
}

PySessions *pysessions_free(PySessions *m) {
        if (!m)
                return NULL;
        /* What is left (a teardown that gave up on the ring): killed and reaped, nothing leaks. */
        LIST_FOREACH_SAFE(sessions, s, n, m->sessions)
                if (!pys_session_ops_busy(s)) {
                        s->state = PYSESSION_DEAD;
                        pys_session_free(s);
                }
        PyPending *q;
        while ((q = LIST_POP(pending, m->pending))) {
                mcp_call_free(q->call);
                free(q);
        }
        free(m->launcher);
        free(m->switch_msg);
        free(m);
        return NULL;
}
