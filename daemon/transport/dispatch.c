/* dispatch.c: the one path from a parsed MCP action to the scheduler (dispatch.h); owns the
 * DispatchCall records between submit and answer. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "dispatch.h"
#include "log.h"
#include "str-util.h"

/* Progress at most once a second (and each second a call runs): a client sees its output while it
 * comes, and a chatty run costs one notification a second, whatever it prints. */
#define DISPATCH_PROGRESS_USEC (1000u * 1000u)

static DispatchCall *dispatch_call_free(DispatchCall *c) {
        if (!c)
                return NULL;
        free(c->id_key);
        free(c->progress_token);
        free(c);
        return NULL;
}
DEFINE_POINTER_CLEANUP(DispatchCall, dispatch_call_free)

void dispatch_init(Dispatch *d, Scheduler *scheduler, const DispatchOps *ops, void *userdata) {
        *d = (Dispatch) { .scheduler = scheduler, .ops = ops, .userdata = userdata };
        LIST_HEAD_INIT(d->calls);
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
        char msg[96];
        if (progress == 0)
                snprintf(msg, sizeof(msg), "accepted");
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

void dispatch_progress_tick(Dispatch *d, uint64_t now) {
        LIST_FOREACH(calls, c, d->calls) {
                uint64_t elapsed = (now - c->t0_usec) / DISPATCH_PROGRESS_USEC;
                if (c->progress_token && elapsed > c->progress_sent)
                        dispatch_send_progress(d, c, elapsed);
        }
}

bool dispatch_wants_progress(const Dispatch *d) {
        LIST_FOREACH(calls, c, d->calls)
                if (c->progress_token)
                        return true;
        return false;
}

static void dispatch_submit(Dispatch *d, McpCall *call_in, void *ctx) {
        _cleanup_(mcp_call_freep) McpCall *call = call_in;

        if (dispatch_find(d, mcp_call_id_key(call))) {
                scheduler_note_rejected(d->scheduler, call, "duplicate-id", NULL);
                dispatch_answer(d, ctx, reply_or_oom(call, mcp_call_reply_tool_error(
                        call, "a call with this request id is still running; request ids must be unique")));
                return;
        }

        _cleanup_(dispatch_call_freep) DispatchCall *c = calloc(1, d->ops->call_size ?: sizeof(DispatchCall));
        const char *tok = mcp_call_progress_token(call);
        if (c) {
                c->id_key = strdup(mcp_call_id_key(call));
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
        if (r == -EBUSY || r == -EDQUOT)
                scheduler_refusal_message(d->scheduler, r, msg, sizeof(msg));
        else
                snprintf(msg, sizeof(msg), DISPATCH_OOM_MESSAGE);
        /* Refused: the refusal is the call's answer, through the same path as any other. */
        dispatch_on_reply(owner, reply_or_oom(call, mcp_call_reply_tool_error(call, msg)));
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
                dispatch_submit(d, TAKE_PTR(a->call), ctx);
                return;
        }
}

bool dispatch_call_cancel(DispatchCall *c) {
        Dispatch *d = c->dispatch;
        if (!d)
                return false;
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
        return c->dispatch;
}
