/* http-session.c: HTTP sessions (HttpSession): the table and its limit, one McpServer and one
 * Dispatch each, the messages POSTed to them, and where each answer goes (the request that asked,
 * or the legacy session's event stream). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "http-internal.h"
#include "log.h"
#include "str-util.h"

#define HTTP_EVICT_LOG_USEC (10u * 1000u * 1000u) /* one eviction line per 10 s at most */

static const DispatchOps http_dispatch_ops;

HttpSession *http_session_ref(HttpSession *s) {
        s->refs++;
        return s;
}

HttpSession *http_session_unref(HttpSession *s) {
        if (!s || --s->refs > 0)
                return NULL;
        if (s->closed)
                LIST_REMOVE(sessions, s->http->closed, s);
        mcp_server_free(s->mcp);
        free(s);
        return NULL;
}

/* A new session of principal's, not yet on the table (http_session_register()); the caller's
 * reference. */
HttpSession *http_session_new(Http *h, bool legacy, const char *principal) {
        uint8_t bytes[MCP_HTTP_SESSION_ID_BYTES];
        /* getrandom(2) without flags blocks only before the pool is initialized at boot. */
        if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t) sizeof(bytes))
                return NULL;
        _cleanup_(http_session_unrefp) HttpSession *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->refs = 1;
        s->mcp = mcp_server_new_like(h->template);
        if (!s->mcp)
                return NULL;
        mcp_http_session_id_format(bytes, sizeof(bytes), s->id);
        explicit_bzero(bytes, sizeof(bytes));
        s->http = h;
        s->legacy = legacy;
        snprintf(s->principal, sizeof(s->principal), "%s", principal);
        mcp_server_set_principal(s->mcp, s->principal);
        s->last_used_usec = now_usec();
        dispatch_init(&s->dispatch, h->scheduler, &http_dispatch_ops, s);
        /* A 2025 session's tasks are its own (a 2026 request overrides this: handle_modern_post()). */
        char owner[TASK_OWNER_MAX];
        snprintf(owner, sizeof(owner), "session:%s", s->id);
        dispatch_set_tasks(&s->dispatch, h->tasks, owner);
        return TAKE_PTR(s);
}

/* Puts s on the table, which takes a reference of its own. */
void http_session_register(HttpSession *s) {
        Http *h = s->http;
        LIST_PREPEND(sessions, h->sessions, http_session_ref(s));
        h->n_sessions++;
        log_debug("HTTP %s session opened (%u open)", s->legacy ? "SSE" : "Streamable", h->n_sessions);
}

HttpSession *http_session_find(Http *h, const char *id, bool legacy, const char *principal) {
        LIST_FOREACH(sessions, s, h->sessions)
                /* The id is the session's credential: compared in constant time (issue 29 #8). Another
                 * tenant's session is not found: the same 404 as an id nobody has (issue 31.5). */
                if (!s->closed && s->legacy == legacy && str_secret_equal(id, strlen(id), s->id, strlen(s->id)))
                        return strcmp(s->principal, principal) == 0 ? s : NULL;
        return NULL;
}

/* Keeps the session table within MCP_EXEC_MAX_SESSIONS: makes room by ending the least recently
 * used session that mcp_http_session_evictable() allows (Streamable HTTP, no call in flight, never
 * a request other than initialize and ping). Returns false if there is none: the new session is
 * refused with 503 + Retry-After. Why working sessions are never ended for room (issue 15 #9):
 * at mcp_http_session_evictable(). */
bool http_session_make_room(Http *h) {
        if (h->n_sessions < h->max_sessions)
                return true;
        HttpSession *lru = NULL;
        LIST_FOREACH(sessions, s, h->sessions) {
                McpHttpSessionUse u = {
                        .legacy = s->legacy,
                        .busy = s->dispatch.calls || s->stream,
                        .worked = s->worked,
                };
                if (mcp_http_session_evictable(&u) && (!lru || s->last_used_usec < lru->last_used_usec))
                        lru = s;
        }
        /* Metadata only (never the session id, which is a credential of its client); at most one
         * line of each kind per HTTP_EVICT_LOG_USEC so a flood of initializes does not flood the
         * journal. */
        uint64_t now = now_usec();
        if (!lru) {
                h->refused_unlogged++;
                if (now - h->refuse_logged_usec >= HTTP_EVICT_LOG_USEC || h->refuse_logged_usec == 0) {
                        log_warning("new HTTP sessions refused (503): all MCP_EXEC_MAX_SESSIONS=%" PRIu32
                                    " sessions are in use (made a request other than initialize and ping, or "
                                    "have a call in flight or an open stream); %u refused since the last such "
                                    "message",
                                    h->max_sessions, h->refused_unlogged);
                        h->refuse_logged_usec = now;
                        h->refused_unlogged = 0;
                }
                return false;
        }
        h->evicted_unlogged++;
        if (now - h->evict_logged_usec >= HTTP_EVICT_LOG_USEC || h->evict_logged_usec == 0) {
                log_info("HTTP session limit reached (MCP_EXEC_MAX_SESSIONS=%" PRIu32 "): ended the least recently "
                         "used idle session (one that never made a request; idle %" PRIu64 " s) for a new one; "
                         "%u ended this way since the last such message",
                         h->max_sessions, (now - lru->last_used_usec) / USEC_PER_SEC, h->evicted_unlogged);
                h->evict_logged_usec = now;
                h->evicted_unlogged = 0;
        }
        http_session_close(lru, "the least recently used session that never made a request, for a new one "
                                "(MCP_EXEC_MAX_SESSIONS)");
        return true;
}

/* Ends a session: off the table (404 from now on), its calls cancelled, its stream closed; the
 * table's reference is dropped (requests and calls may hold theirs a while longer, on h->closed). */
void http_session_close(HttpSession *s, const char *why) {
        Http *h = s->http;
        if (s->closed)
                return;
        s->closed = true;
        LIST_REMOVE(sessions, h->sessions, s);
        LIST_PREPEND(sessions, h->closed, s);
        h->n_sessions--;
        log_debug("HTTP session closed: %s (%u open)", why, h->n_sessions);

        dispatch_cancel_all(&s->dispatch);
        /* Only a registered (2025) session is closed; its tasks were its own. */
        dispatch_tasks_drop_owner(s->dispatch.tasks, s->dispatch.owner);
        if (s->stream)
                http_stream_fail(TAKE_PTR(s->stream));
        http_session_unref(s);
}

/* ---- answers ---------------------------------------------------------------------------------- */

/* Where an answer for s goes: a legacy session's stream; the Streamable request that asked (its
 * event stream, which then ends, or its body, which resumes it); nowhere if that request is gone. */
static void session_deliver(HttpSession *s, HttpRequest *req, char *reply_in) {
        _cleanup_free_ char *reply = reply_in;

        if (s->legacy) {
                if (reply && s->stream && !s->closed)
                        http_stream_push(s->stream, "message", reply);
                return;
        }
        if (!req)
                return;
        if (req->is_stream) {
                if (reply)
                        http_stream_push(req, "message", reply);
                http_stream_finish(req);
                return;
        }
        req->reply = TAKE_PTR(reply);
        req->reply_ready = true;
        http_request_resume(req);
}

static void on_answer(Dispatch *d, void *ctx, char *reply) {
        session_deliver(d->userdata, ctx, reply);
}

/* Where a call's messages go: its own request's stream, or its legacy session's stream. */
static HttpRequest *call_stream(HttpCall *c) {
        HttpSession *s = c->call.dispatch ? c->call.dispatch->userdata : NULL;
        if (s && s->legacy)
                return s->stream;
        return c->req && c->req->is_stream ? c->req : NULL;
}

/* Progress (dispatch.c) goes on the call's own stream: its POST's, or its legacy session's. */
static bool on_call_notify(Dispatch *d, DispatchCall *dc, const char *msg) {
        HttpRequest *stream = call_stream(container_of(dc, HttpCall, call));
        if (!stream)
                return false;
        http_stream_push(stream, "message", msg);
        return true;
}

/* A call is accepted: it holds its session, and its request (Streamable) waits for it. */
static void on_call_new(Dispatch *d, DispatchCall *dc, void *ctx) {
        HttpSession *s = http_session_ref(d->userdata);
        HttpCall *c = container_of(dc, HttpCall, call);
        c->req = ctx;
        if (c->req)
                c->req->call = c;
        s->http->n_calls++;
}

static void on_call_reply(Dispatch *d, DispatchCall *dc, char *reply) {
        _cleanup_(http_session_unrefp) HttpSession *s = d->userdata; /* the call's reference */
        HttpCall *c = container_of(dc, HttpCall, call);
        Http *h = s->http;

        s->last_used_usec = now_usec(); /* an answer is activity: the idle clock starts now */
        if (c->req)
                c->req->call = NULL;
        session_deliver(s, TAKE_PTR(c->req), reply);
        h->n_calls--;
        /* Shutting down: a legacy stream ends once its last call is answered on it. */
        if (h->stopping && s->legacy && s->stream && !s->dispatch.calls)
                http_stream_finish(s->stream);
}

static const DispatchOps http_dispatch_ops = {
        .call_size = sizeof(HttpCall),
        .answer = on_answer,
        .call_new = on_call_new,
        .call_reply = on_call_reply,
        .call_notify = on_call_notify,
};

/* ---- messages ----------------------------------------------------------------------------------- */

enum MHD_Result http_respond_sessions_full(HttpRequest *req) {
        McpHttpVerdict v;
        mcp_http_refuse_sessions_full(req->http->n_sessions, req->http->max_sessions, &v);
        return http_respond_verdict(req, &v);
}

static const char *request_header(HttpRequest *req, const char *name) {
        return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

/* What a call takes from its request's headers: the W3C Trace Context header, the HTTP carrier of
 * the trace _meta.traceparent carries (SEP-414), which a call's record takes when _meta gives none,
 * only if it is well-formed; and how much of the body a load balancer read to route it (mcp.h), a
 * decimal below the body's length, or nothing. */
static void call_take_headers(HttpRequest *req, McpAction *a) {
        const char *v = request_header(req, "traceparent");
        if (a->kind == MCP_ACTION_CALL)
                mcp_call_set_traceparent(a->call, v);
        else if (a->is_tool_error && !a->traceparent[0] && v && mcp_traceparent_valid(v, strlen(v)))
                memcpy(a->traceparent, v, sizeof(a->traceparent)); /* its rejection record's */

        const char *lb = request_header(req, MCP_LB_BODY_READ_HEADER);
        uint64_t read;
        if (a->kind == MCP_ACTION_CALL && lb && str_parse_u64(lb, &read) >= 0 && read < req->body.len)
                mcp_call_set_lb_body_read(a->call, read, req->body.len);
}

/* A call's POST (or a task request that waits like one): answered at once when its reply is
 * already there, on its event stream when it has one (r: what opening it returned), else parked
 * until the reply comes. */
static enum MHD_Result respond_call(HttpRequest *req, enum MHD_Result r) {
        if (req->is_stream)
                return r;
        if (req->reply_ready)
                return http_respond_json(req, MHD_HTTP_OK, TAKE_PTR(req->reply));
        req->waiting = true;
        http_request_suspend(req);
        return MHD_YES;
}

/* Answers a message handled for a request: a call waits or streams, everything else at once. */
static enum MHD_Result answer_action(HttpRequest *req, HttpSession *s, McpAction *a, unsigned reply_status) {
        McpActionKind kind = a->kind;
        enum MHD_Result r = MHD_YES;
        if (kind == MCP_ACTION_CALL && mcp_call_progress_token(a->call))
                r = http_respond_stream(req);
        call_take_headers(req, a);
        dispatch_action(&s->dispatch, a, req);
        switch (kind) {
        case MCP_ACTION_REPLY:
        case MCP_ACTION_TASK:
                req->reply_ready = false;
                return http_respond_json(req, reply_status, TAKE_PTR(req->reply));
        case MCP_ACTION_NONE:
        case MCP_ACTION_CANCEL:
        case MCP_ACTION_HOLD:
                return http_respond(req, MHD_HTTP_ACCEPTED, NULL, NULL, NULL, NULL);
        case MCP_ACTION_CALL:
                return respond_call(req, r);
        }
        return MHD_NO;
}

/* A 2026-07-28 POST stands alone (streamable-http.mdx of that revision): it gets a session object
 * of its own that is never put on the table, so no Mcp-Session-Id is issued, nothing is found by
 * a later request, and it is gone with the request (and its call). Any instance behind a load
 * balancer can answer any such request. */
static enum MHD_Result handle_modern_post(HttpRequest *req, const McpHttpMessageInfo *info, char *reject) {
        if (reject)
                return http_respond_json(req, MHD_HTTP_BAD_REQUEST, reject);
        if (req->session)
                /* A 2025 session's id on a 2026 request: the eras do not mix, and answering on the
                 * session would make its state matter to a request that must not depend on it. */
                return http_respond_json(req, MHD_HTTP_BAD_REQUEST,
                                         mcp_http_error_body(MCP_ERROR_INVALID_REQUEST,
                                                             "Invalid Request: Mcp-Session-Id belongs to the "
                                                             "2025 era; a 2026-07-28 request stands alone (send "
                                                             "it without the header)"));
        HttpSession *s = http_session_new(req->http, false, req->verdict.principal);
        if (!s)
                return MHD_NO;
        req->session = s; /* the request's reference, and the only one but its call's */
        /* A 2026 request belongs to no session: its tasks are its tenant's, so any later request of
         * the same tenant, on any connection, finds them, and no other tenant's does (README
         * "Tasks"). Without authentication every request is the same caller. */
        char owner[TASK_OWNER_MAX];
        if (*s->principal)
                snprintf(owner, sizeof(owner), "tenant:%s", s->principal);
        else
                snprintf(owner, sizeof(owner), "%s", "loopback");
        dispatch_set_tasks(&s->dispatch, req->http->tasks, owner);
        _cleanup_(mcp_action_done) McpAction a = {};
        if (mcp_server_handle(s->mcp, req->body.data ?: "", req->body.len, &a) < 0)
                return http_respond_refusal(req, MCP_HTTP_REFUSE_OUT_OF_MEMORY);
        return answer_action(req, s, &a, mcp_http_modern_reply_status(info, a.rejected));
}

/* A POST to /mcp, its body read. */
enum MHD_Result http_session_handle_mcp_post(HttpRequest *req) {
        Http *h = req->http;
        McpHttpMessageInfo info;
        if (mcp_http_message_classify(req->body.data ?: "", req->body.len, &info) < 0)
                return MHD_NO;

        const char *version = request_header(req, "MCP-Protocol-Version");
        McpHttpEra era;
        if (mcp_http_era_check(req->body.data ?: "", req->body.len, version, request_header(req, "Mcp-Method"),
                               request_header(req, "Mcp-Name"), &era) < 0)
                return MHD_NO;
        if (era.modern)
                return handle_modern_post(req, &info, era.reject);
        if (req->verdict.version_deferred) {
                McpHttpVerdict v = req->verdict;
                mcp_http_refuse_version(version, &v);
                return http_respond_verdict(req, &v);
        }

        HttpSession *s = req->session;
        bool new_session = false;
        if (s && s->closed) /* ended (deleted, expired, evicted) while its body was being read */
                return http_respond_refusal(req, MCP_HTTP_REFUSE_SESSION_NOT_FOUND);
        if (s && mcp_http_message_is_work(&info))
                s->worked = true; /* from now on never ended for room (http_session_make_room()) */
        if (!s) {
                McpHttpSessionless what = mcp_http_sessionless_post(&info);
                if (what == MCP_HTTP_SESSIONLESS_REFUSE)
                        return http_respond_refusal(req, MCP_HTTP_REFUSE_NO_SESSION);
                if (what == MCP_HTTP_SESSIONLESS_INITIALIZE && !http_session_make_room(h))
                        return http_respond_sessions_full(req);
                s = http_session_new(h, false, req->verdict.principal);
                if (!s)
                        return MHD_NO;
                req->session = s; /* the request's reference; the table takes one if initialize succeeds */
                new_session = true;
        }

        _cleanup_(mcp_action_done) McpAction a = {};
        if (mcp_server_handle(s->mcp, req->body.data ?: "", req->body.len, &a) < 0)
                return http_respond_refusal(req, MCP_HTTP_REFUSE_OUT_OF_MEMORY);

        McpActionKind kind = a.kind;
        bool is_initialize = a.is_initialize;
        /* A tools/call with a progress token: progress comes as events before the result, so the
         * answer is a stream, opened before the call is submitted. */
        enum MHD_Result r = MHD_YES;
        if (kind == MCP_ACTION_CALL && mcp_call_progress_token(a.call))
                r = http_respond_stream(req);
        call_take_headers(req, &a);
        dispatch_action(&s->dispatch, &a, req);

        switch (kind) {
        case MCP_ACTION_REPLY: {
                char *body = TAKE_PTR(req->reply);
                req->reply_ready = false;
                if (new_session && is_initialize) {
                        http_session_register(s);
                        struct MHD_Response *resp =
                                body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE) : NULL;
                        if (!resp) {
                                free(body);
                                return MHD_NO;
                        }
                        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                        (void) MHD_add_response_header(resp, "Mcp-Session-Id", s->id);
                        r = MHD_queue_response(req->conn, MHD_HTTP_OK, resp);
                        MHD_destroy_response(resp);
                        req->answered = true;
                        return r;
                }
                if (new_session) /* initialize failed (or the body was no message): no session exists */
                        req->session = http_session_unref(req->session);
                return http_respond_json(req, mcp_http_post_reply_status(&info, new_session, is_initialize), body);
        }
        case MCP_ACTION_NONE:
        case MCP_ACTION_CANCEL:
        case MCP_ACTION_HOLD: /* never: the HTTP transport starts after the probe (daemon.c) */
                return http_respond(req, MHD_HTTP_ACCEPTED, NULL, NULL, NULL, NULL);
        case MCP_ACTION_TASK: /* answered, or (tasks/result of a working task) waiting like a call */
        case MCP_ACTION_CALL:
                return respond_call(req, r);
        }
        return MHD_NO;
}

/* A POST to /messages (legacy): everything but a broken body is answered on the session's stream. */
enum MHD_Result http_session_handle_messages_post(HttpRequest *req) {
        HttpSession *s = req->session;
        if (s->closed)
                return http_respond_refusal(req, MCP_HTTP_REFUSE_SESSION_NOT_FOUND);
        McpHttpMessageInfo info;
        if (mcp_http_message_classify(req->body.data ?: "", req->body.len, &info) < 0)
                return MHD_NO;
        _cleanup_(mcp_action_done) McpAction a = {};
        if (mcp_server_handle(s->mcp, req->body.data ?: "", req->body.len, &a) < 0)
                return MHD_NO;
        if (info.kind == MCP_HTTP_MSG_INVALID && a.kind == MCP_ACTION_REPLY)
                return http_respond_json(req, MHD_HTTP_BAD_REQUEST, TAKE_PTR(a.reply));
        call_take_headers(req, &a);
        dispatch_action(&s->dispatch, &a, NULL);
        return http_respond(req, MHD_HTTP_ACCEPTED, "text/plain", strdup("Accepted"), NULL, NULL);
}
