/* http-internal.h: the HTTP transport's objects and how they own each other, shared by its files
 * (not included outside daemon/transport):
 *
 *   Http (http-server.c)           the server: MHD, the ring ops that drive it, and four lists:
 *    ├─ sessions  HttpSession      open sessions; the list holds one reference of each
 *    ├─ closed    HttpSession      closed sessions that requests or calls still hold (no reference:
 *    │                             a session leaves it when its last reference goes)
 *    ├─ requests  HttpRequest      every request MHD has not finished with, or whose hang-up
 *    │                             watch the kernel still holds (see `completed`)
 *    └─ conns     HttpConn         MHD's TCP connections (socket context), for the head deadline
 *   HttpSession (http-session.c)   reference-counted: the table's reference while open, one per
 *    │                             request that names it, one per call in flight
 *    ├─ mcp       McpServer        owned
 *    ├─ dispatch  Dispatch         its calls (HttpCall) between submit and answer
 *    └─ stream    HttpRequest      legacy: borrowed; the request clears it when it completes
 *   HttpRequest (http-stream.c)    one MHD request: its body, its answer, and as an event stream
 *                                  the bytes not yet sent; created at the head, freed when MHD has
 *                                  completed it and its op_hup is idle
 *   HttpCall (http-session.c)      a DispatchCall, plus the Streamable request waiting for it
 *                                  (borrowed both ways: each clears the other when it goes)
 *
 * Teardown follows the same lines: a request's completion cancels its call and, for a legacy
 * stream, closes its session; closing a session cancels its calls, fails its stream and moves it
 * to `closed` until its last reference goes; http_free() resumes and completes every request
 * (MHD_stop_daemon), closes every session, then detaches the calls the scheduler still holds (their
 * late answers are dropped), which releases the closed sessions. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "cleanup.h"
#include "dispatch.h"
#include "http-mhd.h" /* after <microhttpd.h>: MHD_* are loaded when the transport starts */
#include "http-transport.h"
#include "list.h"
#include "mcp-http.h"
#include "str-util.h"

#define USEC_PER_SEC (1000u * 1000u)

typedef struct HttpSession HttpSession;
typedef struct HttpRequest HttpRequest;
typedef struct HttpConn HttpConn;
typedef struct HttpCall HttpCall;

struct HttpSession {
        Http *http;
        char id[MCP_HTTP_SESSION_ID_LEN + 1];
        McpServer *mcp;
        Dispatch dispatch;
        bool legacy;         /* HTTP+SSE: replies go on `stream` */
        /* Whose it is: the principal of the request that made it (McpHttpVerdict.principal), "" with
         * no authentication. A request of another finds no such session. */
        char principal[MCP_PRINCIPAL_MAX + 1];
        bool closed;         /* deleted, expired or its stream ended: on Http.closed, no longer found */
        bool worked;         /* a request other than initialize and ping came (mcp_http_message_is_work()) */
        unsigned refs;
        uint64_t last_used_usec;
        HttpRequest *stream; /* legacy: the GET /sse request carrying the events */
        LIST_FIELDS(HttpSession, sessions);
};

struct HttpCall {
        DispatchCall call;   /* first: dispatch.c allocates and frees HttpCall (DispatchOps.call_size) */
        HttpRequest *req;    /* Streamable HTTP: where the answer goes; NULL: legacy, or the request is gone */
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
        int fd;               /* MHD's; borrowed for the hang-up watch and shutdown(2) */
        /* MHD is done with it; it stays on the list until op_hup's completion arrives, since the
         * kernel holds op_hup's address until then (io_uring_prep_cancel(3)). */
        bool completed;
        LIST_FIELDS(HttpRequest, requests);
};

/* A TCP connection (MHD's socket context), for the head deadline. */
struct HttpConn {
        int fd;
        uint64_t since_usec;  /* opened, or its previous request ended */
        bool in_request;      /* the head of the current request is complete */
        bool cut;             /* shut down for its head deadline */
        LIST_FIELDS(HttpConn, conns);
};

struct Http {
        Ring *ring;
        Scheduler *scheduler;
        const McpServer *template;
        struct MHD_Daemon *mhd;
        int listen_fd;        /* ours until MHD takes it in http_start() */
        int epoll_fd;         /* MHD's */
        McpHttpPolicy policy;
        char **hosts, **origins;
        const Tenants *tenants; /* the daemon's, borrowed (http_set_tenants()); NULL: nobody is one */
        OAuth *oauth;           /* the daemon's, borrowed (http_set_oauth()); NULL: static tokens only */
        DispatchTasks *tasks; /* the daemon's (http_set_tasks()), or NULL */
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
        HttpSession *closed;
        HttpRequest *requests;
        HttpConn *conns;
        unsigned n_sessions;
        unsigned n_requests;
        unsigned n_calls;
        bool stopping;
        bool draining;  /* http_drain(): new requests get 503, /health says so, the listener stays */
        bool freeing;   /* in http_free(): completions of our ring ops only end them */
        bool trim;      /* requests were served since the heap was last trimmed */
};

/* http-server.c */
void http_schedule(Http *h);

/* http-session.c */
HttpSession *http_session_new(Http *h, bool legacy, const char *principal);
HttpSession *http_session_ref(HttpSession *s);
HttpSession *http_session_unref(HttpSession *s);
DEFINE_POINTER_CLEANUP(HttpSession, http_session_unref)
void http_session_register(HttpSession *s);
HttpSession *http_session_find(Http *h, const char *id, bool legacy, const char *principal);
bool http_session_make_room(Http *h);
void http_session_close(HttpSession *s, const char *why);
enum MHD_Result http_session_handle_mcp_post(HttpRequest *req);
enum MHD_Result http_session_handle_messages_post(HttpRequest *req);

/* http-stream.c */
HttpRequest *http_request_new(Http *h, struct MHD_Connection *conn);
void http_request_free(HttpRequest *req);
void http_request_suspend(HttpRequest *req);
void http_request_resume(HttpRequest *req);
void http_request_complete(HttpRequest *req);
void http_stream_push(HttpRequest *req, const char *event, const char *data);
void http_stream_comment(HttpRequest *req, const char *text);
void http_stream_finish(HttpRequest *req);
void http_stream_fail(HttpRequest *req);
enum MHD_Result http_respond(HttpRequest *req, unsigned status, const char *content_type, char *body,
                             const char *h1, const char *v1);
enum MHD_Result http_respond_json(HttpRequest *req, unsigned status, char *body);
enum MHD_Result http_respond_verdict(HttpRequest *req, const McpHttpVerdict *v);
enum MHD_Result http_respond_refusal(HttpRequest *req, McpHttpRefusal what);
enum MHD_Result http_respond_sessions_full(HttpRequest *req);
enum MHD_Result http_respond_stream(HttpRequest *req);
