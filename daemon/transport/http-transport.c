/* http-transport.c: the HTTP transports on libmicrohttpd (MHD), single-threaded, driven from the
 * ring. MHD runs in "external epoll" mode: the ring keeps a poll on MHD's epoll fd and a 250 ms tick,
 * and calls MHD_run() when either fires. A request whose answer comes later (a tools/call) is
 * suspended (MHD_suspend_connection) and resumed when the scheduler replies; an event stream's
 * reader suspends its connection when it has nothing to send. A suspended connection is invisible
 * to MHD, so the ring watches its socket for the peer's hang-up (POLLRDHUP) and resumes it then:
 * a closed stream cancels its runs at once, not at the next keep-alive. What to answer is decided
 * by mcp/ (mcp-http.h); this file only moves bytes. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>
#include <systemd/sd-daemon.h>

#include "cleanup.h"
#include "fd-util.h"
#include "http-transport.h"
#include "log.h"
#include "mcp-http.h"
#include "str-util.h"

#define HTTP_TICK_USEC (250u * 1000u) /* progress within 250 ms of each whole second */
/* Time allowed between two bytes of a request (or of its answer being taken): a stalled or
 * half-sent request frees its connection after this long. Not a deadline for the whole request:
 * a call waiting for its run and an event stream are suspended, out of MHD's timeout, and streams
 * get keep-alives. 30 s is within what front ends use (nginx client_header/body_timeout 60 s,
 * Apache RequestReadTimeout header=20-40 body=20) and long past any pause of a working client. */
#define HTTP_CONNECTION_TIMEOUT_S 30u
/* A request line and headers must be complete this long after the connection opened or its
 * previous request ended, however slowly their bytes come: a client trickling a byte every 29 s
 * (slowloris) would otherwise keep one of the HTTP_CONNECTION_LIMIT for ever. Twice the time
 * between bytes: an idle keep-alive connection is closed by that one first. */
#define HTTP_HEAD_TIMEOUT_S 60u
#define HTTP_CONNECTION_LIMIT 1024u
#define HTTP_RETRY_AFTER_S "5" /* 503 for too many busy sessions: calls end, sessions free up */
#define HTTP_EVICT_LOG_USEC (10u * 1000u * 1000u) /* one eviction line per 10 s at most */
#define HTTP_STREAM_BLOCK_BYTES (32u * 1024u)
#define HTTP_MHD_RUN_MAX 16
#define USEC_PER_SEC (1000u * 1000u)

typedef struct HttpSession HttpSession;
typedef struct HttpConn HttpConn;
typedef struct HttpRequest HttpRequest;
typedef struct HttpCall HttpCall;

struct HttpSession {
        Http *http;
        char id[MCP_HTTP_SESSION_ID_LEN + 1];
        McpServer *mcp;
        bool legacy;       /* HTTP+SSE: replies go on `stream` */
        bool closed;       /* deleted, expired or its stream ended: no longer found */
        unsigned refs;
        uint64_t last_used_usec;
        HttpRequest *stream; /* legacy: the GET /sse request carrying the events */
        HttpCall *calls;
        HttpSession *prev, *next;
};

struct HttpRequest {
        Http *http;
        struct MHD_Connection *conn;
        McpHttpVerdict verdict;
        HttpSession *session; /* a reference, or NULL */
        Buf body;
        bool too_large;
        bool answered;        /* a response is queued */

        /* A call answered on this request (Streamable HTTP): */
        HttpCall *call;
        bool waiting;         /* suspended until the reply */
        bool reply_ready;
        char *reply;          /* NULL with reply_ready: cancelled, close without an answer */

        /* An event stream (legacy GET /sse, or a tools/call with a progress token): */
        bool is_stream;
        Buf out;
        size_t out_off;
        bool stream_end;      /* end once out is sent */
        bool stream_failed;   /* end now, with an error */
        uint64_t last_write_usec;

        bool suspended;
        bool hup;             /* the peer hung up while we were suspended */
        RingOp op_hup;
        int fd;
        bool completed;       /* MHD is done with it; freed once op_hup is idle */
        HttpRequest *prev, *next;
};

/* A TCP connection (MHD's socket context), for the head deadline. */
struct HttpConn {
        int fd;
        uint64_t since_usec;  /* opened, or its previous request ended */
        bool in_request;      /* the head of the current request is complete */
        bool cut;             /* shut down for its head deadline */
        HttpConn *prev, *next;
};

struct HttpCall {
        Http *http;          /* NULL once the transport is gone (shutdown timed out) */
        HttpSession *session;
        HttpRequest *req;    /* Streamable HTTP: where the reply goes; NULL: legacy, or the request is gone */
        char *id_key;
        char *progress_token;
        uint32_t timeout_s;
        uint64_t t0_usec;
        uint64_t progress_sent;
        HttpCall *prev, *next;
};

struct Http {
        Ring *ring;
        Scheduler *scheduler;
        const McpServer *template;
        struct MHD_Daemon *mhd;
        int listen_fd;
        int epoll_fd;
        McpHttpPolicy policy;
        char **hosts, **origins;
        char *token;
        uint32_t idle_s;
        uint32_t keepalive_s;
        uint32_t max_sessions;  /* MCP_EXEC_MAX_SESSIONS */
        uint64_t evict_logged_usec, refuse_logged_usec;
        unsigned evicted_unlogged, refused_unlogged;

        RingOp op_poll;
        RingOp op_tick;
        RingOp op_kick;
        struct __kernel_timespec tick_ts;
        bool in_mhd;
        bool need_run;

        HttpSession *sessions;
        HttpRequest *requests;
        HttpConn *conns;
        unsigned n_sessions;
        unsigned n_requests;
        unsigned n_calls;
        bool stopping;
        bool freeing;
        bool trim;      /* requests were served since the heap was last trimmed */
};

static void http_pump(Http *h);
static void http_schedule(Http *h);

/* ---- sessions ------------------------------------------------------------------------------ */

static HttpSession *session_ref(HttpSession *s) {
        s->refs++;
        return s;
}

static void session_unref(HttpSession *s) {
        if (!s || --s->refs > 0)
                return;
        mcp_server_free(s->mcp);
        free(s);
}

static HttpSession *session_new(Http *h, bool legacy) {
        uint8_t bytes[MCP_HTTP_SESSION_ID_BYTES];
        /* getrandom(2) without flags blocks only before the pool is initialized at boot. */
        if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t) sizeof(bytes))
                return NULL;
        HttpSession *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->mcp = mcp_server_new_like(h->template);
        if (!s->mcp) {
                free(s);
                return NULL;
        }
        mcp_http_session_id_format(bytes, sizeof(bytes), s->id);
        explicit_bzero(bytes, sizeof(bytes));
        s->http = h;
        s->legacy = legacy;
        s->refs = 1; /* the table's */
        s->last_used_usec = now_usec();
        return s;
}

static void session_close(HttpSession *s, const char *why);

/* Keeps the session table within MCP_EXEC_MAX_SESSIONS: makes room by ending the least recently
 * used session with no call in flight and no open stream (a legacy session lives as long as its
 * stream, so only Streamable HTTP sessions qualify). Returns false if every session is busy. */
static bool session_make_room(Http *h) {
        if (h->n_sessions < h->max_sessions)
                return true;
        HttpSession *lru = NULL;
        for (HttpSession *s = h->sessions; s; s = s->next)
                if (!s->legacy && !s->calls && !s->stream && (!lru || s->last_used_usec < lru->last_used_usec))
                        lru = s;
        /* Metadata only (never the session id, which is a credential of its client); at most one
         * line of each kind per HTTP_EVICT_LOG_USEC so a flood of initializes does not flood the
         * journal. */
        uint64_t now = now_usec();
        if (!lru) {
                h->refused_unlogged++;
                if (now - h->refuse_logged_usec >= HTTP_EVICT_LOG_USEC || h->refuse_logged_usec == 0) {
                        log_warning("new HTTP sessions refused (503): all MCP_EXEC_MAX_SESSIONS=%" PRIu32
                                    " sessions have a call in flight or an open stream; %u refused since the "
                                    "last such message",
                                    h->max_sessions, h->refused_unlogged);
                        h->refuse_logged_usec = now;
                        h->refused_unlogged = 0;
                }
                return false;
        }
        h->evicted_unlogged++;
        if (now - h->evict_logged_usec >= HTTP_EVICT_LOG_USEC || h->evict_logged_usec == 0) {
                log_info("HTTP session limit reached (MCP_EXEC_MAX_SESSIONS=%" PRIu32 "): ended the least recently "
                         "used idle session (idle %" PRIu64 " s) for a new one; %u ended this way since the last "
                         "such message",
                         h->max_sessions, (now - lru->last_used_usec) / USEC_PER_SEC, h->evicted_unlogged);
                h->evict_logged_usec = now;
                h->evicted_unlogged = 0;
        }
        session_close(lru, "the least recently used idle session, for a new one (MCP_EXEC_MAX_SESSIONS)");
        return true;
}

static const void *session_of_call(const void *owner) {
        const HttpCall *c = owner;
        return c->session;
}

static void session_register(Http *h, HttpSession *s) {
        s->next = h->sessions;
        if (h->sessions)
                h->sessions->prev = s;
        h->sessions = s;
        h->n_sessions++;
        log_debug("HTTP %s session opened (%u open)", s->legacy ? "SSE" : "Streamable", h->n_sessions);
}

static HttpSession *session_find(Http *h, const char *id, bool legacy) {
        for (HttpSession *s = h->sessions; s; s = s->next)
                if (!s->closed && s->legacy == legacy && strcmp(s->id, id) == 0)
                        return s;
        return NULL;
}

static void stream_fail(HttpRequest *req);

/* Ends a session: no longer found (404), its calls cancelled, its stream closed. */
static void session_close(HttpSession *s, const char *why) {
        Http *h = s->http;
        if (s->closed)
                return;
        s->closed = true;
        if (s->prev)
                s->prev->next = s->next;
        else
                h->sessions = s->next;
        if (s->next)
                s->next->prev = s->prev;
        s->prev = s->next = NULL;
        h->n_sessions--;
        log_debug("HTTP session closed: %s (%u open)", why, h->n_sessions);

        for (HttpCall *c = s->calls, *next; c; c = next) {
                next = c->next;
                (void) scheduler_cancel(h->scheduler, c, c->id_key); /* may free c */
        }
        if (s->stream) {
                HttpRequest *req = s->stream;
                s->stream = NULL;
                stream_fail(req);
        }
        session_unref(s);
}

/* ---- requests and event streams ---------------------------------------------------------- */

static void on_hup(RingOp *op, int res);

static HttpRequest *request_new(Http *h, struct MHD_Connection *conn) {
        HttpRequest *req = calloc(1, sizeof(*req));
        if (!req)
                return NULL;
        req->http = h;
        req->conn = conn;
        req->fd = -EBADF;
        req->op_hup.callback = on_hup;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
                req->fd = ci->connect_fd;
        req->next = h->requests;
        if (h->requests)
                h->requests->prev = req;
        h->requests = req;
        h->n_requests++;
        h->trim = true;
        return req;
}

static void request_free(HttpRequest *req) {
        Http *h = req->http;
        if (req->prev)
                req->prev->next = req->next;
        else
                h->requests = req->next;
        if (req->next)
                req->next->prev = req->prev;
        h->n_requests--;
        session_unref(req->session);
        buf_done(&req->body);
        buf_done(&req->out);
        free(req->reply);
        free(req);
}

static void hup_watch(HttpRequest *req) {
        if (req->fd < 0 || req->op_hup.busy)
                return;
        struct io_uring_sqe *sqe = ring_get_sqe(req->http->ring, &req->op_hup);
        io_uring_prep_poll_add(sqe, req->fd, POLLRDHUP);
}

static void on_hup(RingOp *op, int res) {
        HttpRequest *req = container_of(op, HttpRequest, op_hup);
        if (req->completed) {
                request_free(req);
                return;
        }
        if (!req->suspended)
                return; /* resumed meanwhile: MHD watches the socket again */
        if (res > 0) {
                /* The peer closed while MHD was not looking: resume so MHD sees it and ends the
                 * request (which cancels its call or its session's runs). */
                req->hup = true;
                req->suspended = false;
                MHD_resume_connection(req->conn);
                http_schedule(req->http);
                return;
        }
        /* Cancelled by a resume, then suspended again before this completion arrived: watch again. */
        hup_watch(req);
}

static void request_suspend(HttpRequest *req) {
        if (req->suspended)
                return;
        MHD_suspend_connection(req->conn);
        req->suspended = true;
        hup_watch(req); /* if the previous watch is still being cancelled, on_hup() re-arms */
}

static void request_resume(HttpRequest *req) {
        if (!req->suspended)
                return;
        req->suspended = false;
        ring_cancel(req->http->ring, &req->op_hup);
        MHD_resume_connection(req->conn);
        /* Not MHD_run() here: we may be inside an MHD callback or walking our own lists. */
        http_schedule(req->http);
}

static void stream_push(HttpRequest *req, const char *event, const char *data) {
        Http *h = req->http;
        if (req->stream_end || req->stream_failed)
                return;
        if (mcp_http_sse_event(&req->out, event, data, strlen(data)) < 0) {
                log_error("out of memory queueing an event; closing the stream");
                stream_fail(req);
                return;
        }
        /* A client that does not read its stream must not make us hold its replies forever: past a
         * few messages' worth the stream (and with it the session's runs) is dropped. */
        if (req->out.len - req->out_off > 4 * h->policy.max_body_bytes + (64u << 20)) {
                log_warning("an HTTP client is not reading its event stream (%zu bytes pending); closing it",
                            req->out.len - req->out_off);
                stream_fail(req);
                return;
        }
        request_resume(req);
}

static void stream_comment(HttpRequest *req, const char *text) {
        if (req->stream_end || req->stream_failed)
                return;
        if (mcp_http_sse_comment(&req->out, text) < 0)
                return;
        request_resume(req);
}

static void stream_finish(HttpRequest *req) {
        req->stream_end = true;
        request_resume(req);
}

static void stream_fail(HttpRequest *req) {
        req->stream_failed = true;
        /* The reader may not run for a while (a full socket buffer): shut the socket so MHD's next
         * write fails and it ends the request. shutdown(2) leaves the fd itself to MHD. */
        if (req->fd >= 0 && !req->completed)
                (void) shutdown(req->fd, SHUT_RDWR);
        request_resume(req);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
        HttpRequest *req = cls;
        if (req->stream_failed || req->hup)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        size_t avail = req->out.len - req->out_off;
        if (avail > 0) {
                size_t n = MIN(avail, max);
                memcpy(buf, req->out.data + req->out_off, n);
                req->out_off += n;
                if (req->out_off == req->out.len)
                        req->out.len = req->out_off = 0;
                req->last_write_usec = now_usec();
                return (ssize_t) n;
        }
        if (req->stream_end)
                return MHD_CONTENT_READER_END_OF_STREAM;
        /* Nothing to send: park the connection until stream_push() (returning 0 without it would
         * make MHD call us again at once, a busy loop). */
        request_suspend(req);
        return 0;
}

/* ---- responses ----------------------------------------------------------------------------- */

static enum MHD_Result respond(HttpRequest *req, unsigned status, const char *content_type, char *body,
                               const char *h1, const char *v1) {
        struct MHD_Response *resp = body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
                                         : MHD_create_response_from_buffer(0, (void *) "", MHD_RESPMEM_PERSISTENT);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        if (content_type)
                (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        if (h1 && v1)
                (void) MHD_add_response_header(resp, h1, v1);
        if (req->http->stopping)
                (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
        enum MHD_Result r = MHD_queue_response(req->conn, status, resp);
        MHD_destroy_response(resp);
        req->answered = true;
        return r;
}

static enum MHD_Result respond_json(HttpRequest *req, unsigned status, char *body) {
        if (!body)
                return MHD_NO;
        return respond(req, status, "application/json", body, NULL, NULL);
}

static enum MHD_Result respond_error(HttpRequest *req, unsigned status, int code, const char *message) {
        char *body = mcp_http_error_body(code, message);
        if (!body)
                return MHD_NO;
        const char *h = NULL, *v = NULL;
        if (status == 401)
                h = MHD_HTTP_HEADER_WWW_AUTHENTICATE, v = "Bearer";
        else if (status == 405)
                h = MHD_HTTP_HEADER_ALLOW, v = req->verdict.allow ? req->verdict.allow : "POST";
        return respond(req, status, "application/json", body, h, v);
}

/* Every session is busy and MCP_EXEC_MAX_SESSIONS are open: 503 with Retry-After (RFC 9110
 * §10.2.3), since sessions free up as their calls end. */
static enum MHD_Result respond_sessions_full(HttpRequest *req) {
        char msg[224];
        snprintf(msg, sizeof(msg),
                 "Service Unavailable: %" PRIu32 " sessions are open (MCP_EXEC_MAX_SESSIONS=%" PRIu32
                 ") and each has a call in flight or an open stream; retry later",
                 req->http->n_sessions, req->http->max_sessions);
        char *body = mcp_http_error_body(MCP_HTTP_ERROR_SERVER, msg);
        if (!body)
                return MHD_NO;
        return respond(req, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json", body, MHD_HTTP_HEADER_RETRY_AFTER,
                       HTTP_RETRY_AFTER_S);
}

static enum MHD_Result respond_stream(HttpRequest *req) {
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, HTTP_STREAM_BLOCK_BYTES,
                                                                      stream_read, req, NULL);
        if (!resp)
                return MHD_NO;
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, no-transform");
        (void) MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        enum MHD_Result r = MHD_queue_response(req->conn, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        req->is_stream = true;
        req->answered = true;
        req->last_write_usec = now_usec();
        return r;
}

/* ---- calls --------------------------------------------------------------------------------- */

static void call_free(HttpCall *c) {
        HttpSession *s = c->session;
        if (c->prev)
                c->prev->next = c->next;
        else if (s)
                s->calls = c->next;
        if (c->next)
                c->next->prev = c->prev;
        if (c->http)
                c->http->n_calls--;
        session_unref(s);
        free(c->id_key);
        free(c->progress_token);
        free(c);
}

/* Where a call's messages go: its own request's stream, or its legacy session's stream. */
static HttpRequest *call_stream(HttpCall *c) {
        if (c->session && c->session->legacy)
                return c->session->stream;
        return c->req && c->req->is_stream ? c->req : NULL;
}

static void send_progress(HttpCall *c, uint64_t progress) {
        HttpRequest *stream = call_stream(c);
        if (!stream || !c->progress_token)
                return;
        char msg[96];
        if (progress == 0)
                snprintf(msg, sizeof(msg), "accepted");
        else
                snprintf(msg, sizeof(msg), "%" PRIu64 " s elapsed of the %" PRIu32 " s deadline", progress,
                         c->timeout_s);
        _cleanup_free_ char *n = mcp_http_progress_new(c->progress_token, progress, c->timeout_s, msg);
        if (n)
                stream_push(stream, "message", n);
        c->progress_sent = progress;
}

static void on_call_reply(void *owner, char *reply) {
        HttpCall *c = owner;
        if (!c->http) { /* the transport is gone; we are exiting */
                free(reply);
                return;
        }
        HttpSession *s = session_ref(c->session);
        s->last_used_usec = now_usec(); /* an answer is activity: the idle clock starts now */
        if (s->legacy) {
                if (reply && s->stream && !s->closed)
                        stream_push(s->stream, "message", reply);
                free(reply);
        } else if (c->req) {
                HttpRequest *req = c->req;
                req->call = NULL;
                if (req->is_stream) {
                        if (reply)
                                stream_push(req, "message", reply);
                        free(reply);
                        stream_finish(req);
                } else {
                        req->reply = reply;
                        req->reply_ready = true;
                        request_resume(req);
                }
        } else
                free(reply);
        Http *h = c->http;
        call_free(c);
        /* Shutting down: a legacy stream ends once its last call is answered on it. */
        if (h->stopping && s->legacy && s->stream && !s->calls)
                stream_finish(s->stream);
        session_unref(s);
}

/* Submits a call; on refusal the tool error is the reply. Returns the HttpCall (owned by the
 * scheduler until it replies) or NULL when it was answered at once through on_call_reply(). */
static void call_submit(Http *h, HttpSession *s, HttpRequest *req, McpCall *call) {
        HttpCall *c = calloc(1, sizeof(*c));
        char *id_key = strdup(mcp_call_id_key(call));
        const char *tok = mcp_call_progress_token(call);
        char *progress_token = tok ? strdup(tok) : NULL;
        if (!c || !id_key || (tok && !progress_token)) {
                free(c);
                free(id_key);
                free(progress_token);
                char *reply = mcp_call_reply_tool_error(call, "mcp-execd is out of memory");
                mcp_call_free(call);
                if (req) {
                        req->reply = reply;
                        req->reply_ready = true;
                } else {
                        if (reply && s->stream)
                                stream_push(s->stream, "message", reply);
                        free(reply);
                }
                return;
        }
        *c = (HttpCall) {
                .http = h, .session = session_ref(s), .req = req, .id_key = id_key,
                .progress_token = progress_token, .timeout_s = mcp_call_args(call)->timeout_s,
                .t0_usec = now_usec(),
        };
        c->next = s->calls;
        if (s->calls)
                s->calls->prev = c;
        s->calls = c;
        h->n_calls++;
        if (req)
                req->call = c;

        bool dup = false;
        for (HttpCall *o = s->calls; o; o = o->next)
                dup |= o != c && strcmp(o->id_key, id_key) == 0;
        if (dup) {
                on_call_reply(c, mcp_call_reply_tool_error(
                                         call, "a call with this request id is still running; request ids must be unique"));
                mcp_call_free(call);
                return;
        }
        if (c->progress_token)
                send_progress(c, 0);

        int r = scheduler_submit(h->scheduler, call, c, on_call_reply);
        if (r == -EBUSY || r == -EDQUOT) {
                char msg[320];
                scheduler_refusal_message(h->scheduler, r, msg, sizeof(msg));
                on_call_reply(c, mcp_call_reply_tool_error(call, msg));
                mcp_call_free(call);
        } else if (r < 0) {
                on_call_reply(c, mcp_call_reply_tool_error(call, "mcp-execd is out of memory"));
                mcp_call_free(call);
        }
}

static void cancel_call(Http *h, HttpSession *s, const char *key) {
        for (HttpCall *c = s->calls; c; c = c->next)
                if (strcmp(c->id_key, key) == 0) {
                        if (scheduler_cancel(h->scheduler, c, key))
                                log_debug("HTTP call cancelled by the client");
                        return;
                }
}

/* ---- the request handler ------------------------------------------------------------------ */

static const char *header(struct MHD_Connection *conn, const char *name) {
        return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}


/* Framing libmicrohttpd lets through but we refuse, before any other check (as MHD's own 400s for
 * a bad Content-Length or chunk come first): Content-Length with Transfer-Encoding. RFC 9112 §6.3:
 * such a request "might indicate an attempt to perform request smuggling" through a front end and
 * "ought to be handled as an error"; MHD 0.9.75 reads it as chunked. Also a coding other than
 * chunked, and two different Content-Lengths. (A NUL in a header cannot be
 * seen here: MHD 0.9.75 ends the value at it, so the rest of that line is ignored.) */
typedef struct ContentLengths {
        const char *first;
        bool differ;
} ContentLengths;

static enum MHD_Result content_length_each(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        ContentLengths *cl = cls;
        if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0 || !value)
                return MHD_YES;
        if (!cl->first)
                cl->first = value;
        else if (strcmp(cl->first, value) != 0) {
                cl->differ = true;
                return MHD_NO;
        }
        return MHD_YES;
}

static const char *framing_error(struct MHD_Connection *conn) {
        const char *te = header(conn, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        if (te && header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH))
                return "Bad Request: both Content-Length and Transfer-Encoding";
        /* §6.3 again: chunked not the final coding means no knowable length, "MUST respond with
         * 400 and then close"; MHD knows only "chunked" and would wait for the body till timeout. */
        if (te && strcasecmp(te, "chunked") != 0)
                return "Bad Request: the only Transfer-Encoding accepted is chunked";
        /* Two different lengths: RFC 9112 §6.3 "invalid", a 400 and a closed connection (MHD 0.9.75
         * takes one of them). */
        ContentLengths cl = {};
        (void) MHD_get_connection_values(conn, MHD_HEADER_KIND, content_length_each, &cl);
        if (cl.differ)
                return "Bad Request: Content-Length given twice with different values";
        return NULL;
}

static enum MHD_Result handle_head(Http *h, HttpRequest *req, const char *url, const char *method) {
        struct MHD_Connection *conn = req->conn;
        const char *bad = framing_error(conn);
        if (bad) {
                /* The body (if any) is never read: ask MHD to close the connection after the answer. */
                req->verdict.next = MCP_HTTP_REJECT;
                char *body = mcp_http_error_body(MCP_HTTP_ERROR_SERVER, bad);
                if (!body)
                        return MHD_NO;
                return respond(req, MHD_HTTP_BAD_REQUEST, "application/json", body,
                               req->http->stopping ? NULL : MHD_HTTP_HEADER_CONNECTION, "close");
        }
        McpHttpHead head = {
                .method = method,
                .path = url,
                .host = header(conn, MHD_HTTP_HEADER_HOST),
                .origin = header(conn, "Origin"),
                .authorization = header(conn, MHD_HTTP_HEADER_AUTHORIZATION),
                .x_mcp_auth = header(conn, "X-MCP-AUTH"),
                .accept = header(conn, MHD_HTTP_HEADER_ACCEPT),
                .content_type = header(conn, MHD_HTTP_HEADER_CONTENT_TYPE),
                .protocol_version = header(conn, "MCP-Protocol-Version"),
                .session_id = header(conn, "Mcp-Session-Id"),
                .query_session_id = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "sessionId"),
        };
        const char *cl = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
                char *end;
                errno = 0;
                unsigned long long v = strtoull(cl, &end, 10);
                head.has_content_length = true;
                head.content_length = errno || *end ? UINT64_MAX : v;
        }
        McpHttpVerdict *v = &req->verdict;
        mcp_http_check_head(&h->policy, &head, v);
        if (v->next == MCP_HTTP_REJECT)
                return respond_error(req, v->status, v->rpc_code, v->message);
        if (h->stopping)
                return respond_error(req, MHD_HTTP_SERVICE_UNAVAILABLE, MCP_HTTP_ERROR_SERVER,
                                     "Service Unavailable: mcp-execd is shutting down");

        switch (v->next) {
        case MCP_HTTP_MCP_POST:
        case MCP_HTTP_MCP_DELETE:
                if (head.session_id) {
                        HttpSession *s = session_find(h, head.session_id, false);
                        if (!s)
                                return respond_error(req, MHD_HTTP_NOT_FOUND, MCP_HTTP_ERROR_SESSION_NOT_FOUND,
                                                     "Session not found");
                        req->session = session_ref(s);
                        s->last_used_usec = now_usec();
                }
                if (v->next == MCP_HTTP_MCP_DELETE) {
                        session_close(req->session, "deleted by the client");
                        return respond(req, MHD_HTTP_OK, NULL, NULL, NULL, NULL);
                }
                return MHD_YES;
        case MCP_HTTP_MESSAGES_POST: {
                HttpSession *s = session_find(h, head.query_session_id, true);
                if (!s)
                        return respond_error(req, MHD_HTTP_NOT_FOUND, MCP_HTTP_ERROR_SESSION_NOT_FOUND,
                                             "Session not found");
                req->session = session_ref(s);
                return MHD_YES;
        }
        case MCP_HTTP_SSE_OPEN: {
                if (!session_make_room(h))
                        return respond_sessions_full(req);
                HttpSession *s = session_new(h, true);
                if (!s)
                        return MHD_NO;
                session_register(h, s);
                req->session = session_ref(s);
                s->stream = req;
                enum MHD_Result r = respond_stream(req);
                char endpoint[sizeof(MCP_HTTP_PATH_MESSAGES) + 16 + MCP_HTTP_SESSION_ID_LEN];
                snprintf(endpoint, sizeof(endpoint), MCP_HTTP_PATH_MESSAGES "?sessionId=%s", s->id);
                stream_push(req, "endpoint", endpoint);
                return r;
        }
        case MCP_HTTP_METRICS_GET: {
                char *text = NULL;
                if (scheduler_metrics_render(h->scheduler, &text, NULL) < 0)
                        return respond_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR, MCP_HTTP_ERROR_SERVER,
                                             "Internal Server Error: the metrics are not available");
                return respond(req, MHD_HTTP_OK, METRICS_CONTENT_TYPE, text, NULL, NULL);
        }
        default:
                return MHD_NO;
        }
}

/* A POST to /mcp, its body read. */
static enum MHD_Result handle_mcp_post(Http *h, HttpRequest *req) {
        McpHttpMessageInfo info;
        if (mcp_http_message_classify(req->body.data ?: "", req->body.len, &info) < 0)
                return MHD_NO;

        HttpSession *s = req->session;
        bool new_session = false;
        if (s && s->closed) /* ended (deleted, expired, evicted) while its body was being read */
                return respond_error(req, MHD_HTTP_NOT_FOUND, MCP_HTTP_ERROR_SESSION_NOT_FOUND, "Session not found");
        if (!s) {
                if (info.kind != MCP_HTTP_MSG_INVALID && !info.is_initialize)
                        /* Also the 2026-07-28 `server/discover` probe: a 400 with a JSON-RPC error
                         * makes dual-era clients fall back to initialize (mcp.md §1.11). */
                        return respond_error(req, MHD_HTTP_BAD_REQUEST, MCP_HTTP_ERROR_SERVER,
                                             "Bad Request: No valid session ID provided");
                if (info.is_initialize && !session_make_room(h))
                        return respond_sessions_full(req);
                s = session_new(h, false);
                if (!s)
                        return MHD_NO;
                req->session = s; /* the table's reference moves there if initialize succeeds */
                new_session = true;
        }

        McpAction a;
        if (mcp_server_handle(s->mcp, req->body.data ?: "", req->body.len, &a) < 0) {
                mcp_action_done(&a);
                return respond_error(req, MHD_HTTP_BAD_REQUEST, MCP_ERROR_INTERNAL, "Internal error: out of memory");
        }
        enum MHD_Result r = MHD_YES;
        if (a.kind == MCP_ACTION_REPLY && a.is_tool_error)
                scheduler_note_rejected(h->scheduler, NULL, "invalid-arguments");
        switch (a.kind) {
        case MCP_ACTION_REPLY: {
                bool ok = info.kind == MCP_HTTP_MSG_REQUEST && !(info.is_initialize && !new_session) &&
                          !(new_session && !a.is_initialize);
                if (new_session && a.is_initialize) {
                        session_register(h, s);
                        req->session = session_ref(s);
                        struct MHD_Response *resp = NULL;
                        char *body = TAKE_PTR(a.reply);
                        resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
                        if (!resp) {
                                free(body);
                                r = MHD_NO;
                                break;
                        }
                        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                        (void) MHD_add_response_header(resp, "Mcp-Session-Id", s->id);
                        r = MHD_queue_response(req->conn, MHD_HTTP_OK, resp);
                        MHD_destroy_response(resp);
                        req->answered = true;
                        break;
                }
                if (new_session) {
                        /* initialize failed (or the body was no message): no session exists. */
                        req->session = NULL;
                        session_unref(s);
                }
                r = respond_json(req, ok ? MHD_HTTP_OK : MHD_HTTP_BAD_REQUEST, TAKE_PTR(a.reply));
                break;
        }
        case MCP_ACTION_NONE:
                r = respond(req, MHD_HTTP_ACCEPTED, NULL, NULL, NULL, NULL);
                break;
        case MCP_ACTION_CANCEL:
                cancel_call(h, s, a.cancel_key);
                r = respond(req, MHD_HTTP_ACCEPTED, NULL, NULL, NULL, NULL);
                break;
        case MCP_ACTION_CALL:
                if (mcp_call_progress_token(a.call)) {
                        /* Progress comes as events before the result: answer with a stream. */
                        r = respond_stream(req);
                        call_submit(h, s, req, TAKE_PTR(a.call));
                        break;
                }
                call_submit(h, s, req, TAKE_PTR(a.call));
                if (req->reply_ready)
                        r = respond_json(req, MHD_HTTP_OK, TAKE_PTR(req->reply));
                else {
                        req->waiting = true;
                        request_suspend(req);
                }
                break;
        }
        mcp_action_done(&a);
        return r;
}

/* A POST to /messages (legacy): everything but a broken body is answered on the session's stream. */
static enum MHD_Result handle_messages_post(Http *h, HttpRequest *req) {
        HttpSession *s = req->session;
        if (s->closed)
                return respond_error(req, MHD_HTTP_NOT_FOUND, MCP_HTTP_ERROR_SESSION_NOT_FOUND, "Session not found");
        McpHttpMessageInfo info;
        if (mcp_http_message_classify(req->body.data ?: "", req->body.len, &info) < 0)
                return MHD_NO;
        McpAction a;
        if (mcp_server_handle(s->mcp, req->body.data ?: "", req->body.len, &a) < 0) {
                mcp_action_done(&a);
                return MHD_NO;
        }
        if (info.kind == MCP_HTTP_MSG_INVALID && a.kind == MCP_ACTION_REPLY) {
                enum MHD_Result r = respond_json(req, MHD_HTTP_BAD_REQUEST, TAKE_PTR(a.reply));
                mcp_action_done(&a);
                return r;
        }
        if (a.kind == MCP_ACTION_REPLY && a.is_tool_error)
                scheduler_note_rejected(h->scheduler, NULL, "invalid-arguments");
        switch (a.kind) {
        case MCP_ACTION_REPLY:
                if (s->stream)
                        stream_push(s->stream, "message", a.reply);
                break;
        case MCP_ACTION_NONE:
                break;
        case MCP_ACTION_CANCEL:
                cancel_call(h, s, a.cancel_key);
                break;
        case MCP_ACTION_CALL:
                call_submit(h, s, NULL, TAKE_PTR(a.call));
                break;
        }
        mcp_action_done(&a);
        return respond(req, MHD_HTTP_ACCEPTED, "text/plain", strdup("Accepted"), NULL, NULL);
}

static HttpConn *conn_of(struct MHD_Connection *conn) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
        Http *h = cls;
        HttpConn *c = *socket_context;
        if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
                c = calloc(1, sizeof(*c));
                if (!c)
                        return; /* no head deadline for this one */
                const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                c->fd = ci ? ci->connect_fd : -EBADF;
                c->since_usec = now_usec();
                c->next = h->conns;
                if (h->conns)
                        h->conns->prev = c;
                h->conns = c;
                *socket_context = c;
                return;
        }
        if (!c)
                return;
        if (c->prev)
                c->prev->next = c->next;
        else
                h->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        free(c);
        *socket_context = NULL;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls) {
        Http *h = cls;
        HttpRequest *req = *con_cls;

        if (!req) {
                HttpConn *hc = conn_of(conn);
                if (hc)
                        hc->in_request = true;
                req = request_new(h, conn);
                if (!req)
                        return MHD_NO;
                *con_cls = req;
                return handle_head(h, req, url, method);
        }
        if (*upload_data_size > 0) {
                /* Bodies are read whole (one JSON-RPC message each), capped; a body without a
                 * Content-Length that outgrows the cap is drained and answered 413. */
                if (!req->answered && !req->too_large) {
                        if (req->body.len + *upload_data_size > h->policy.max_body_bytes) {
                                req->too_large = true;
                                buf_done(&req->body);
                        } else if (buf_append(&req->body, upload_data, *upload_data_size) < 0)
                                return MHD_NO;
                }
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (req->answered)
                return MHD_YES;
        if (req->waiting) {
                /* Resumed: the reply arrived, the call was cancelled, or the peer hung up. */
                if (!req->reply_ready || !req->reply)
                        return MHD_NO; /* nothing to answer: close the connection */
                req->waiting = false;
                return respond_json(req, MHD_HTTP_OK, TAKE_PTR(req->reply));
        }
        if (req->too_large) {
                char msg[128];
                snprintf(msg, sizeof(msg), "Payload Too Large: the body is over %" PRIu64
                         " bytes (MCP_EXEC_MAX_MESSAGE_BYTES)", h->policy.max_body_bytes);
                return respond_error(req, 413, MCP_HTTP_ERROR_SERVER, msg);
        }
        if (req->verdict.next == MCP_HTTP_MCP_POST)
                return handle_mcp_post(h, req);
        if (req->verdict.next == MCP_HTTP_MESSAGES_POST)
                return handle_messages_post(h, req);
        return MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
        HttpRequest *req = *con_cls;
        if (!req)
                return;
        *con_cls = NULL;
        HttpConn *hc = conn_of(conn);
        if (hc) {
                hc->in_request = false;
                hc->since_usec = now_usec(); /* the next head's clock */
        }
        req->completed = true;
        req->suspended = false;
        Http *h = req->http;
        HttpSession *s = req->session;

        /* A legacy stream that ends takes its session along (its calls have nowhere to answer). */
        if (s && s->legacy && s->stream == req) {
                s->stream = NULL;
                session_close(s, "its event stream ended");
        }
        /* A Streamable HTTP request that ends before its answer: nobody can receive it any more
         * (we keep no event history to resume from), so the run is cancelled. */
        if (req->call) {
                HttpCall *c = req->call;
                req->call = NULL;
                c->req = NULL;
                (void) scheduler_cancel(h->scheduler, c, c->id_key);
        }
        if (req->op_hup.busy) {
                ring_cancel(h->ring, &req->op_hup);
                return; /* freed by on_hup() */
        }
        request_free(req);
}

/* MHD's format strings: clang's -Wformat-nonliteral (in -Werror=format=2) needs to know. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        /* MHD's own diagnostics (protocol violations, resource limits); never bodies. */
        char buf[256];
        (void) vsnprintf(buf, sizeof(buf), fmt, ap);
        size_t n = strlen(buf);
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        log_debug("libmicrohttpd: %s", buf);
}

/* ---- driving MHD from the ring ----------------------------------------------------------- */

static void arm_poll(Http *h);

static void http_pump(Http *h) {
        if (!h->mhd)
                return;
        if (h->in_mhd) {
                h->need_run = true;
                return;
        }
        for (int i = 0; i < HTTP_MHD_RUN_MAX; i++) {
                h->in_mhd = true;
                h->need_run = false;
                (void) MHD_run(h->mhd);
                h->in_mhd = false;
                MHD_UNSIGNED_LONG_LONG t;
                bool again = h->need_run || (MHD_get_timeout(h->mhd, &t) == MHD_YES && t == 0);
                if (!again)
                        break;
                if (i == HTTP_MHD_RUN_MAX - 1)
                        http_schedule(h); /* still work to do: after the ring has served the others */
        }
        arm_poll(h);
}

/* MHD_run() on the next turn of the loop, from a clean stack. */
static void http_schedule(Http *h) {
        if (h->op_kick.busy || h->freeing || !h->mhd)
                return;
        struct io_uring_sqe *sqe = ring_get_sqe(h->ring, &h->op_kick);
        io_uring_prep_nop(sqe);
}

static void on_poll(RingOp *op, int res) {
        Http *h = container_of(op, Http, op_poll);
        if (h->freeing)
                return;
        if (res < 0 && res != -ECANCELED && res != -EINTR)
                log_warning("polling the HTTP server's epoll fd failed: %s", strerror(-res));
        http_pump(h);
}

static void on_kick(RingOp *op, int res) {
        Http *h = container_of(op, Http, op_kick);
        if (!h->freeing)
                http_pump(h);
}

static void arm_poll(Http *h) {
        if (h->op_poll.busy || h->freeing)
                return;
        struct io_uring_sqe *sqe = ring_get_sqe(h->ring, &h->op_poll);
        io_uring_prep_poll_add(sqe, h->epoll_fd, POLLIN);
}

static void arm_tick(Http *h) {
        if (h->op_tick.busy || h->freeing)
                return;
        h->tick_ts = (struct __kernel_timespec) { .tv_sec = HTTP_TICK_USEC / USEC_PER_SEC,
                                                  .tv_nsec = (HTTP_TICK_USEC % USEC_PER_SEC) * 1000 };
        struct io_uring_sqe *sqe = ring_get_sqe(h->ring, &h->op_tick);
        io_uring_prep_timeout(sqe, &h->tick_ts, 0, 0);
}

/* Four times a second: progress at each whole second of a call that asked for it, keep-alive
 * comments on quiet streams, idle sessions expired, and MHD's own timeouts (whole seconds). */
static void on_tick(RingOp *op, int res) {
        Http *h = container_of(op, Http, op_tick);
        if (h->freeing)
                return;
        uint64_t now = now_usec();

        for (HttpSession *s = h->sessions; s; s = s->next)
                for (HttpCall *c = s->calls; c; c = c->next) {
                        uint64_t elapsed = (now - c->t0_usec) / USEC_PER_SEC;
                        if (c->progress_token && elapsed > c->progress_sent)
                                send_progress(c, elapsed);
                }
        for (HttpRequest *req = h->requests; req; req = req->next)
                if (req->is_stream && !req->completed &&
                    now - req->last_write_usec >= (uint64_t) h->keepalive_s * USEC_PER_SEC &&
                    req->out.len == req->out_off) {
                        req->last_write_usec = now;
                        stream_comment(req, "keep-alive");
                }
        for (HttpSession *s = h->sessions, *next; s; s = next) {
                next = s->next;
                if (!s->legacy && !s->calls && now - s->last_used_usec > (uint64_t) h->idle_s * USEC_PER_SEC)
                        session_close(s, "idle for longer than MCP_EXEC_SESSION_IDLE_S");
        }
        /* Heads not complete in time: shut the socket down (the fd stays MHD's); MHD's next read
         * fails and it closes the connection without an answer. */
        unsigned cut = 0;
        for (HttpConn *c = h->conns; c; c = c->next)
                if (!c->in_request && !c->cut && c->fd >= 0 &&
                    now - c->since_usec > (uint64_t) HTTP_HEAD_TIMEOUT_S * USEC_PER_SEC) {
                        (void) shutdown(c->fd, SHUT_RDWR);
                        c->cut = true;
                        cut++;
                }
        if (cut > 0)
                log_debug("closed %u HTTP connections whose request head took longer than %u s", cut,
                          HTTP_HEAD_TIMEOUT_S);
        /* A burst of clients leaves free memory scattered in the heap (bodies, replies, MHD's
         * per-connection pools); once nothing is in flight, give whole free pages back
         * (malloc_trim(3)), so the daemon's RSS returns to its idle size. */
        if (h->trim && h->n_requests == 0 && h->n_calls == 0) {
                h->trim = false;
                (void) malloc_trim(0);
        }
        http_pump(h);
        arm_tick(h);
}

/* ---- start and stop ---------------------------------------------------------------------- */

/* MCP_EXEC_ADDR (validated by config_parse_addr()): "host:port", "[v6]:port", ":port" (every
 * interface: IPv6 dual-stack, or IPv4 where IPv6 is off), "localhost:port" (127.0.0.1). */
static int http_listen(const char *addr, int *ret_fd) {
        const char *colon = strrchr(addr, ':');
        if (!colon)
                return -EINVAL;
        uint16_t port = (uint16_t) strtoul(colon + 1, NULL, 10);
        size_t hl = (size_t) (colon - addr);
        char host[INET6_ADDRSTRLEN + 2] = "";
        if (hl >= sizeof(host))
                return -EINVAL;
        memcpy(host, addr, hl);
        host[hl] = '\0';

        struct sockaddr_storage ss = {};
        socklen_t sl;
        bool any = hl == 0;
        if (any || host[0] == '[') {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons(port);
                if (!any) {
                        host[hl - 1] = '\0';
                        if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
                                return -EINVAL;
                } else
                        s6->sin6_addr = in6addr_any;
                sl = sizeof(*s6);
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                s4->sin_family = AF_INET;
                s4->sin_port = htons(port);
                if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &s4->sin_addr) != 1)
                        return -EINVAL;
                sl = sizeof(*s4);
        }

        _cleanup_close_ int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 && any && errno == EAFNOSUPPORT) {
                /* No IPv6 on this host: every IPv4 interface. */
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                *s4 = (struct sockaddr_in) { .sin_family = AF_INET, .sin_port = htons(port),
                                             .sin_addr.s_addr = htonl(INADDR_ANY) };
                sl = sizeof(*s4);
                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        }
        if (fd < 0)
                return -errno;
        int one = 1, zero = 0;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ss.ss_family == AF_INET6 && any)
                (void) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        if (bind(fd, (struct sockaddr *) &ss, sl) < 0 || listen(fd, SOMAXCONN) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static void describe_socket(int fd, char *buf, size_t n) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        char a[INET6_ADDRSTRLEN] = "?";
        if (getsockname(fd, (struct sockaddr *) &ss, &sl) < 0) {
                snprintf(buf, n, "fd %d", fd);
                return;
        }
        if (ss.ss_family == AF_INET6) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
                inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
                snprintf(buf, n, "[%s]:%u", a, ntohs(s6->sin6_port));
        } else if (ss.ss_family == AF_INET) {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
                snprintf(buf, n, "%s:%u", a, ntohs(s4->sin_port));
        } else
                snprintf(buf, n, "fd %d (family %d)", fd, ss.ss_family);
}

static char **split_list(const char *s, size_t *ret_n, bool *ret_any) {
        size_t n = 0;
        *ret_any = false;
        char **list = calloc(1, sizeof(char *));
        if (!list)
                return NULL;
        if (!s) {
                *ret_n = 0;
                return list;
        }
        _cleanup_free_ char *copy = strdup(s);
        if (!copy) {
                free(list);
                return NULL;
        }
        char *save = NULL;
        for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
                if (strcmp(w, "*") == 0) {
                        *ret_any = true;
                        continue;
                }
                char **nl = realloc(list, (n + 2) * sizeof(char *));
                if (!nl)
                        break;
                list = nl;
                list[n] = strdup(w);
                if (!list[n])
                        break;
                list[++n] = NULL;
        }
        *ret_n = n;
        return list;
}

static void strv_free(char **l) {
        for (size_t i = 0; l && l[i]; i++)
                free(l[i]);
        free(l);
}

int http_start(Ring *ring, Scheduler *scheduler, const McpServer *template, const Config *cfg, Http **ret) {
        Http *h = calloc(1, sizeof(*h));
        int r;
        if (!h)
                return -ENOMEM;
        *h = (Http) {
                .ring = ring, .scheduler = scheduler, .template = template,
                .listen_fd = -EBADF, .epoll_fd = -EBADF,
                .idle_s = cfg->session_idle_s, .keepalive_s = cfg->sse_keepalive_s,
                .max_sessions = cfg->max_sessions,
                .op_poll.callback = on_poll, .op_tick.callback = on_tick, .op_kick.callback = on_kick,
        };
        h->token = cfg->auth_token ? strdup(cfg->auth_token) : NULL;
        bool any_host, any_origin;
        h->hosts = split_list(cfg->allowed_hosts, &h->policy.n_allowed_hosts, &any_host);
        h->origins = split_list(cfg->allowed_origins, &h->policy.n_allowed_origins, &any_origin);
        if ((cfg->auth_token && !h->token) || !h->hosts || !h->origins) {
                http_free(h);
                return log_error_errno(-ENOMEM, "cannot set up the HTTP transport: %m");
        }
        h->policy.streamable = cfg->transport == TRANSPORT_HTTP;
        h->policy.legacy = true;
        h->policy.token = h->token;
        h->policy.allowed_hosts = (const char *const *) h->hosts;
        h->policy.any_host = any_host;
        h->policy.allowed_origins = (const char *const *) h->origins;
        h->policy.any_origin = any_origin;
        h->policy.max_body_bytes = cfg->max_message_bytes;
        /* Each HTTP session gets its share of the queue (stdio has one session: the total only). */
        scheduler_set_sessions(scheduler, session_of_call, cfg->session_queue_max);

        /* systemd socket activation (mcp-execd.socket): the socket is passed as fd 3. */
        int n = sd_listen_fds(1);
        if (n < 0) {
                http_free(h);
                return log_error_errno(n, "cannot read the sockets passed by systemd: %m");
        }
        if (n > 0) {
                if (n > 1)
                        log_warning("systemd passed %d sockets; serving the first only", n);
                if (sd_is_socket(SD_LISTEN_FDS_START, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
                        http_free(h);
                        return log_error_errno(-ENOTSOCK, "the fd systemd passed is not a listening stream socket");
                }
                h->listen_fd = SD_LISTEN_FDS_START;
                (void) fd_set_nonblock(h->listen_fd, true);
        } else {
                r = http_listen(cfg->addr, &h->listen_fd);
                if (r < 0) {
                        log_error_errno(r, "cannot listen on %s (MCP_EXEC_ADDR): %m", cfg->addr);
                        http_free(h);
                        return r;
                }
        }

        h->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                  on_access, h,
                                  MHD_OPTION_LISTEN_SOCKET, h->listen_fd,
                                  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                  MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) HTTP_CONNECTION_TIMEOUT_S,
                                  MHD_OPTION_CONNECTION_LIMIT, (unsigned) HTTP_CONNECTION_LIMIT,
                                  MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
                                  /* RFC 9112's MUSTs for a server, e.g. 400 for an HTTP/1.1 request
                                   * without Host (§3.2) or with whitespace before a header's colon
                                   * (§5.1, a smuggling vector); every real client complies. */
                                  MHD_OPTION_STRICT_FOR_CLIENT, (int) 1,
                                  MHD_OPTION_END);
        if (!h->mhd) {
                http_free(h);
                return log_error_errno(-EIO, "cannot start the HTTP server (libmicrohttpd)");
        }
        int listen_fd = h->listen_fd;
        h->listen_fd = -EBADF; /* MHD's now: MHD_quiesce_daemon() hands it back, MHD_stop_daemon() closes it */
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        if (!di || di->epoll_fd < 0) {
                http_free(h);
                return log_error_errno(-EIO, "libmicrohttpd has no epoll fd");
        }
        h->epoll_fd = di->epoll_fd;

        char where[INET6_ADDRSTRLEN + 16];
        describe_socket(listen_fd, where, sizeof(where));
        /* Tests and operators read the bound address from this line (port 0 is not accepted by
         * MCP_EXEC_ADDR, but a passed socket may be bound anywhere). */
        log_info("listening on %s: %s%s", where,
                 h->policy.streamable ? "Streamable HTTP at " MCP_HTTP_PATH_MCP ", " : "",
                 "legacy HTTP+SSE at " MCP_HTTP_PATH_SSE " and " MCP_HTTP_PATH_MESSAGES);
        if (!h->token)
                log_warning("MCP_EXEC_AUTH_TOKEN is not set: any local process that can reach %s may run code", where);

        arm_tick(h);
        http_pump(h);
        *ret = h;
        return 0;
}

void http_stop(Http *h) {
        if (!h || h->stopping)
                return;
        h->stopping = true;
        if (h->mhd) {
                MHD_socket fd = MHD_quiesce_daemon(h->mhd);
                if (fd != MHD_INVALID_SOCKET)
                        (void) close(fd); /* new connections are refused from now on */
        }
        /* Legacy streams end now if their session has nothing in flight, else after its last
         * answer (on_call_reply); progress streams end with their reply. */
        for (HttpRequest *req = h->requests; req; req = req->next)
                if (req->is_stream && req->session && req->session->legacy && !req->session->calls)
                        stream_finish(req);
        http_pump(h);
}

bool http_finished(const Http *h) {
        return h->stopping && h->n_calls == 0 && h->n_requests == 0;
}

void http_free(Http *h) {
        if (!h)
                return;
        if (h->mhd) {
                /* MHD must not be stopped with suspended connections (microhttpd.h). */
                for (HttpRequest *req = h->requests; req; req = req->next) {
                        req->stream_failed = true;
                        request_resume(req);
                }
                http_pump(h);
                h->freeing = true;
                MHD_stop_daemon(h->mhd); /* completes every request (on_completed) */
                h->mhd = NULL;
        }
        h->freeing = true;
        ring_cancel(h->ring, &h->op_poll);
        ring_cancel(h->ring, &h->op_tick);
        for (int i = 0; i < 50 && (h->op_poll.busy || h->op_tick.busy || h->op_kick.busy || h->requests); i++)
                (void) ring_run_once(h->ring, 20000);
        /* Calls still in the scheduler (a shutdown that ran out of time) keep their memory; their
         * replies are dropped. */
        for (HttpSession *s = h->sessions; s; s = s->next)
                for (HttpCall *c = s->calls; c; c = c->next)
                        c->http = NULL;
        while (h->sessions)
                session_close(h->sessions, "shutdown");
        if (h->listen_fd >= 0)
                (void) close(h->listen_fd); /* MHD never got it */
        if (h->op_poll.busy || h->op_tick.busy || h->op_kick.busy || h->requests)
                return; /* leak rather than let the kernel complete into freed memory; we exit next */
        strv_free(h->hosts);
        strv_free(h->origins);
        if (h->token) {
                explicit_bzero(h->token, strlen(h->token));
                free(h->token);
        }
        free(h);
}
