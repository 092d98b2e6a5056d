/* http-server.c: the HTTP server (Http) on libmicrohttpd (MHD), single-threaded, driven from the
 * ring. MHD runs in "external epoll" mode: the ring keeps a poll on MHD's epoll fd and a 250 ms tick,
 * and calls MHD_run() when either fires. A request whose answer comes later (a tools/call) is
 * suspended (MHD_suspend_connection) and resumed when the scheduler replies; an event stream's
 * reader suspends its connection when it has nothing to send. A suspended connection is invisible
 * to MHD, so the ring watches its socket for the peer's hang-up (POLLRDHUP) and resumes it then:
 * a closed stream cancels its runs at once, not at the next keep-alive. This file owns the server's
 * start and stop, its connections, and routes each request head; sessions are http-session.c's,
 * requests and streams http-stream.c's, and what to answer is decided by mcp/ (mcp-http.h). */
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "cleanup.h"
#include "fd-util.h"
#include "http-internal.h"
#include "log.h"
#include "oauth.h"
#include "socket-util.h"
#include "tenants.h"

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
#define HTTP_MHD_RUN_MAX 16

static void http_pump(Http *h);

/* ---- request heads ------------------------------------------------------------------------ */

_Static_assert(TENANT_NAME_MAX <= MCP_PRINCIPAL_MAX, "a tenant's name is a request's principal");

/* McpHttpPolicy.authenticate: the tenant whose static token this is (tenants_find_token() hashes it
 * and compares every hash in constant time), from the tenants of the last (re)load; else, with
 * OAuth, the tenant a valid access token names (oauth_check()), or why it is refused. */
static const char *http_authenticate(void *userdata, const char *credential, size_t len, McpHttpAuthFailure *fail) {
        Http *h = userdata;
        const Tenant *t = tenants_find_token(h->tenants, credential, len);
        if (t)
                return t->name;
        if (!h->oauth || !oauth_is_jwt(credential, len))
                return NULL;
        const char *why = NULL;
        OAuthVerdict r = oauth_check(h->oauth, h->tenants, credential, len, (uint64_t) time(NULL), &t, &why);
        if (r == OAUTH_OK)
                return t->name;
        *fail = (McpHttpAuthFailure) { .why = why, .insufficient_scope = r == OAUTH_SCOPE };
        return NULL;
}

static const char *header(struct MHD_Connection *conn, const char *name) {
        return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}


/* Two Content-Length headers with different values (MHD_lookup_connection_value() sees the
 * first only): RFC 9112 §6.3 calls that invalid; mcp_http_check_head() decides what it gets. */
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

static enum MHD_Result handle_head(Http *h, HttpRequest *req, const char *url, const char *method) {
        struct MHD_Connection *conn = req->conn;
        ContentLengths cls = {};
        (void) MHD_get_connection_values(conn, MHD_HEADER_KIND, content_length_each, &cls);
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
                .transfer_encoding = header(conn, MHD_HTTP_HEADER_TRANSFER_ENCODING),
                .content_length_conflict = cls.differ,
        };
        mcp_http_head_content_length(&head, header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH));
        McpHttpVerdict *v = &req->verdict;
        mcp_http_check_head(&h->policy, &head, v);
        if (v->next == MCP_HTTP_REJECT)
                return http_respond_verdict(req, v);
        if (v->next == MCP_HTTP_PRM_GET) {
                char *body = oauth_metadata_json(h->oauth);
                if (!body)
                        return MHD_NO;
                return http_respond(req, MHD_HTTP_OK, "application/json", body, NULL, NULL);
        }
        if (v->next == MCP_HTTP_HEALTH_GET) {
                bool out = h->draining || h->stopping;
                char *body = strdup(mcp_http_health_body(out));
                if (!body)
                        return MHD_NO;
                /* A HEAD gets the same status and headers; MHD sends no body for it. */
                return http_respond(req, out ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK, "application/json",
                                    body, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        }
        if (h->stopping)
                return http_respond_refusal(req, MCP_HTTP_REFUSE_SHUTTING_DOWN);
        if (h->draining && v->next != MCP_HTTP_METRICS_GET)
                return http_respond_refusal(req, MCP_HTTP_REFUSE_DRAINING);

        switch (v->next) {
        case MCP_HTTP_MCP_POST:
        case MCP_HTTP_MCP_DELETE:
                if (head.session_id) {
                        HttpSession *s = http_session_find(h, head.session_id, false, v->principal);
                        if (!s)
                                return http_respond_refusal(req, MCP_HTTP_REFUSE_SESSION_NOT_FOUND);
                        req->session = http_session_ref(s);
                        s->last_used_usec = now_usec();
                }
                if (v->next == MCP_HTTP_MCP_DELETE) {
                        http_session_close(req->session, "deleted by the client");
                        return http_respond(req, MHD_HTTP_OK, NULL, NULL, NULL, NULL);
                }
                return MHD_YES;
        case MCP_HTTP_MESSAGES_POST: {
                HttpSession *s = http_session_find(h, head.query_session_id, true, v->principal);
                if (!s)
                        return http_respond_refusal(req, MCP_HTTP_REFUSE_SESSION_NOT_FOUND);
                req->session = http_session_ref(s);
                return MHD_YES;
        }
        case MCP_HTTP_SSE_OPEN: {
                if (!http_session_make_room(h))
                        return http_respond_sessions_full(req);
                HttpSession *s = http_session_new(h, true, v->principal);
                if (!s)
                        return MHD_NO;
                http_session_register(s);
                req->session = s; /* the request's reference, http_session_new()'s */
                s->stream = req;
                enum MHD_Result r = http_respond_stream(req);
                char endpoint[sizeof(MCP_HTTP_PATH_MESSAGES) + 16 + MCP_HTTP_SESSION_ID_LEN];
                snprintf(endpoint, sizeof(endpoint), MCP_HTTP_PATH_MESSAGES "?sessionId=%s", s->id);
                http_stream_push(req, "endpoint", endpoint);
                return r;
        }
        case MCP_HTTP_METRICS_GET: {
                char *text = NULL;
                if (scheduler_metrics_render(h->scheduler, &text, NULL) < 0)
                        return http_respond_refusal(req, MCP_HTTP_REFUSE_METRICS);
                return http_respond(req, MHD_HTTP_OK, METRICS_CONTENT_TYPE, text, NULL, NULL);
        }
        default:
                return MHD_NO;
        }
}

/* ---- MHD callbacks ------------------------------------------------------------------------ */

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
                LIST_PREPEND(conns, h->conns, c);
                *socket_context = c;
                return;
        }
        if (!c)
                return;
        LIST_REMOVE(conns, h->conns, c);
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
                req = http_request_new(h, conn);
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
                return http_respond_json(req, MHD_HTTP_OK, TAKE_PTR(req->reply));
        }
        if (req->too_large)
                return http_respond_refusal(req, MCP_HTTP_REFUSE_TOO_LARGE);
        if (req->verdict.next == MCP_HTTP_MCP_POST)
                return http_session_handle_mcp_post(req);
        if (req->verdict.next == MCP_HTTP_MESSAGES_POST)
                return http_session_handle_messages_post(req);
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
        http_request_complete(req);
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
void http_schedule(Http *h) {
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

/* Four times a second: progress at each whole second of a call that asked for it (with its new
 * output: dispatch_progress_tick()), keep-alive
 * comments on quiet streams, idle sessions expired, and MHD's own timeouts (whole seconds). */
static void on_tick(RingOp *op, int res) {
        Http *h = container_of(op, Http, op_tick);
        if (h->freeing)
                return;
        uint64_t now = now_usec();

        LIST_FOREACH(sessions, s, h->sessions)
                dispatch_progress_tick(&s->dispatch, now);
        /* A 2026-07-28 call's session is on no table (it stands alone with its request): reach it
         * through the request. Ticking a 2025 one twice is harmless (one notification a second). */
        LIST_FOREACH(requests, req, h->requests)
                if (req->call && req->session && !req->completed)
                        dispatch_progress_tick(&req->session->dispatch, now);
        LIST_FOREACH(requests, req, h->requests)
                if (req->is_stream && !req->completed &&
                    now - req->last_write_usec >= (uint64_t) h->keepalive_s * USEC_PER_SEC &&
                    req->out.len == req->out_off) {
                        req->last_write_usec = now;
                        http_stream_comment(req, "keep-alive");
                }
        LIST_FOREACH_SAFE(sessions, s, next, h->sessions)
                if (!s->legacy && !s->dispatch.calls && now - s->last_used_usec > (uint64_t) h->idle_s * USEC_PER_SEC)
                        http_session_close(s, "idle for longer than MCP_EXEC_SESSION_IDLE_S");
        /* Heads not complete in time: shut the socket down (the fd stays MHD's); MHD's next read
         * fails and it closes the connection without an answer. */
        unsigned cut = 0;
        LIST_FOREACH(conns, c, h->conns)
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

/* Only this host can connect: 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, or a unix socket (which a
 * systemd .socket may pass; its file mode decides who connects). 0.0.0.0 and :: are every
 * interface, so not loopback. */
static bool sockaddr_is_local(const struct sockaddr_storage *ss) {
        if (ss->ss_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *) ss)->sin_addr.s_addr) >> 24) == 127;
        if (ss->ss_family == AF_INET6) {
                const struct in6_addr *a = &((const struct sockaddr_in6 *) ss)->sin6_addr;
                return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
        }
        return ss->ss_family == AF_UNIX;
}

static bool socket_is_local(int fd) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        return getsockname(fd, (struct sockaddr *) &ss, &sl) >= 0 && sockaddr_is_local(&ss);
}

/* Of the n sockets systemd passed, the one HTTP serves: the first that is not the agent check's
 * (MCP_EXEC_AGENT_ADDR: a fleet's socket unit passes both, lb-agent.h); -ENOENT when none is left.
 * *ret_more counts the others, which nothing serves. */
static int http_passed_socket(const Config *cfg, int n, int *ret_more) {
        int fd = -ENOENT, more = 0;
        for (int i = SD_LISTEN_FDS_START; i < SD_LISTEN_FDS_START + n; i++) {
                /* Not a listening stream socket: what the fd store gave back (a session's pipes,
                 * control socket, record), which main.c's exposure check sees before the daemon
                 * takes them (fdstore.h). */
                if (sd_is_socket(i, AF_UNSPEC, SOCK_STREAM, 1) <= 0)
                        continue;
                if (cfg->agent_addr && socket_bound_to(i, cfg->agent_addr))
                        continue;
                if (fd < 0)
                        fd = i;
                else
                        more++;
        }
        if (ret_more)
                *ret_more = more;
        return fd;
}

int http_check_exposure(const Config *cfg) {
        if (cfg->auth_token || cfg->tenants || cfg->allow_unauthenticated_network)
                return 0;
        /* Read without unsetting $LISTEN_FDS: http_start() takes the socket later. */
        int n = sd_listen_fds(0);
        int passed = n > 0 ? http_passed_socket(cfg, n, NULL) : -ENOENT;
        char where[INET6_ADDRSTRLEN + 64];
        bool local;
        if (passed >= 0) {
                socket_describe(passed, where, sizeof(where));
                local = socket_is_local(passed);
                strncat(where, " (the socket systemd passed)", sizeof(where) - strlen(where) - 1);
        } else {
                struct sockaddr_storage ss;
                socklen_t sl;
                bool any;
                if (socket_addr_parse(cfg->addr, &ss, &sl, &any) < 0)
                        return 0; /* config_parse_addr() accepted it; http_start() reports it */
                snprintf(where, sizeof(where), "%s (MCP_EXEC_ADDR)", cfg->addr);
                local = sockaddr_is_local(&ss);
        }
        if (local)
                return 0;
        /* The Host allow-list guards against DNS rebinding, not against a peer on the network
         * (issue 15 #2): without a token, anyone who reaches the address runs code. */
        log_error("refusing to serve HTTP on %s without MCP_EXEC_AUTH_TOKEN: it is not a loopback address, "
                  "so anyone who can reach it could run code. Set MCP_EXEC_AUTH_TOKEN (or the systemd "
                  "credential auth-token), listen on loopback, or set MCP_EXEC_ALLOW_UNAUTHENTICATED_NETWORK=1 "
                  "to serve it without authentication",
                  where);
        return -EACCES;
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

DEFINE_POINTER_CLEANUP(Http, http_free)

int http_start(Ring *ring, Scheduler *scheduler, const McpServer *template, const Config *cfg, Http **ret) {
        int r = http_mhd_load();
        if (r < 0)
                return r;
        _cleanup_(http_freep) Http *h = calloc(1, sizeof(*h));
        if (!h)
                return log_error_errno(-ENOMEM, "cannot set up the HTTP transport: %m");
        *h = (Http) {
                .ring = ring, .scheduler = scheduler, .template = template,
                .listen_fd = -EBADF, .epoll_fd = -EBADF,
                .idle_s = cfg->session_idle_s, .keepalive_s = cfg->sse_keepalive_s,
                .max_sessions = cfg->max_sessions,
                .op_poll.callback = on_poll, .op_tick.callback = on_tick, .op_kick.callback = on_kick,
        };
        bool any_host, any_origin;
        h->hosts = split_list(cfg->allowed_hosts, &h->policy.n_allowed_hosts, &any_host);
        h->origins = split_list(cfg->allowed_origins, &h->policy.n_allowed_origins, &any_origin);
        if (!h->hosts || !h->origins)
                return log_error_errno(-ENOMEM, "cannot set up the HTTP transport: %m");
        h->policy.streamable = cfg->transport == TRANSPORT_HTTP;
        h->policy.legacy = true;
        /* With a token or a tenants file every request must name a tenant, from the start: until
         * http_set_tenants() nobody is one. */
        if (cfg->auth_token || cfg->tenants) {
                h->policy.authenticate = http_authenticate;
                h->policy.auth_userdata = h;
        }
        h->policy.allowed_hosts = (const char *const *) h->hosts;
        h->policy.any_host = any_host;
        h->policy.allowed_origins = (const char *const *) h->origins;
        h->policy.any_origin = any_origin;
        h->policy.max_body_bytes = cfg->max_message_bytes;
        /* Each HTTP session gets its share of the queue (stdio has one session: the total only). */
        scheduler_set_sessions(scheduler, dispatch_session_of, cfg->session_queue_max);

        /* systemd socket activation (mcp-execd.socket): the socket is passed as fd 3; a fleet's
         * instance gets the agent check's too (taken before, lb-agent.h). */
        int n = sd_listen_fds(1);
        if (n < 0)
                return log_error_errno(n, "cannot read the sockets passed by systemd: %m");
        int more = 0, passed = n > 0 ? http_passed_socket(cfg, n, &more) : -ENOENT;
        if (passed >= 0) {
                if (more > 0)
                        log_warning("systemd passed %d more sockets than HTTP's and the agent check's; serving the first only",
                                    more);
                if (sd_is_socket(passed, AF_UNSPEC, SOCK_STREAM, 1) <= 0)
                        return log_error_errno(-ENOTSOCK, "the fd systemd passed is not a listening stream socket");
                h->listen_fd = passed;
                (void) fd_set_nonblock(h->listen_fd, true);
        } else {
                r = socket_listen_tcp(cfg->addr, &h->listen_fd);
                if (r < 0)
                        return log_error_errno(r, "cannot listen on %s (MCP_EXEC_ADDR): %m", cfg->addr);
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
        if (!h->mhd)
                return log_error_errno(-EIO, "cannot start the HTTP server (libmicrohttpd)");
        int listen_fd = h->listen_fd;
        h->listen_fd = -EBADF; /* MHD's now: MHD_quiesce_daemon() hands it back, MHD_stop_daemon() closes it */
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        if (!di || di->epoll_fd < 0)
                return log_error_errno(-EIO, "libmicrohttpd has no epoll fd");
        h->epoll_fd = di->epoll_fd;

        char where[INET6_ADDRSTRLEN + 16];
        socket_describe(listen_fd, where, sizeof(where));
        /* Tests and operators read the bound address from this line (port 0 is not accepted by
         * MCP_EXEC_ADDR, but a passed socket may be bound anywhere). */
        log_info("listening on %s: %s%s", where,
                 h->policy.streamable ? "Streamable HTTP at " MCP_HTTP_PATH_MCP ", " : "",
                 "legacy HTTP+SSE at " MCP_HTTP_PATH_SSE " and " MCP_HTTP_PATH_MESSAGES);
        if (!h->policy.authenticate && socket_is_local(listen_fd))
                log_warning("MCP_EXEC_AUTH_TOKEN is not set: any process on this host, of any user, "
                            "that can connect to %s may run code",
                            where);
        else if (!h->policy.authenticate) /* http_check_exposure() let it through: the operator asked for it */
                log_warning("MCP_EXEC_AUTH_TOKEN is not set and MCP_EXEC_ALLOW_UNAUTHENTICATED_NETWORK=1: "
                            "anyone who can reach %s over the network may run code",
                            where);

        arm_tick(h);
        http_pump(h);
        *ret = TAKE_PTR(h);
        return 0;
}

void http_set_tasks(Http *h, DispatchTasks *tasks) {
        h->tasks = tasks;
}

void http_set_tenants(Http *h, const Tenants *tenants) {
        h->tenants = tenants;
}

void http_set_oauth(Http *h, OAuth *oauth) {
        h->oauth = oauth;
        h->policy.resource_metadata_url = oauth ? oauth_metadata_url(oauth) : NULL;
        h->policy.oauth_scope = oauth ? oauth_scope(oauth) : NULL;
}

void http_drain(Http *h) {
        if (h)
                h->draining = true;
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
        LIST_FOREACH(requests, req, h->requests)
                if (req->is_stream && req->session && req->session->legacy && !req->session->dispatch.calls)
                        http_stream_finish(req);
        http_pump(h);
}

bool http_finished(const Http *h) {
        return h->stopping && h->n_calls == 0 && h->n_requests == 0;
}

void http_cancel_io(Http *h) {
        if (!h)
                return;
        if (h->mhd) {
                /* MHD must not be stopped with suspended connections (microhttpd.h). */
                LIST_FOREACH(requests, req, h->requests) {
                        req->stream_failed = true;
                        http_request_resume(req);
                }
                http_pump(h);
                h->freeing = true;
                MHD_stop_daemon(h->mhd); /* completes every request (on_completed) */
                h->mhd = NULL;
        }
        h->freeing = true;
        ring_cancel(h->ring, &h->op_poll);
        ring_cancel(h->ring, &h->op_tick);
}

bool http_io_busy(const Http *h) {
        return h && (h->op_poll.busy || h->op_tick.busy || h->op_kick.busy || h->requests);
}

void http_free(Http *h) {
        if (!h)
                return;
        http_cancel_io(h); /* no-op when the owner did it first */
        /* Calls still in the scheduler (a shutdown that ran out of time) are cancelled with their
         * sessions, and what it has not answered yet is detached: those answers are dropped when
         * they come, and the closed sessions they held go now. */
        while (h->sessions)
                http_session_close(h->sessions, "shutdown");
        LIST_FOREACH_SAFE(sessions, s, next, h->closed) {
                http_session_ref(s); /* dispatch_detach() must not free it under its feet */
                dispatch_detach(&s->dispatch);
                http_session_unref(s);
        }
        if (h->listen_fd >= 0)
                (void) close(h->listen_fd); /* MHD never got it */
        if (http_io_busy(h))
                return; /* leak rather than let the kernel complete into freed memory; we exit next */
        strv_free(h->hosts);
        strv_free(h->origins);
        free(h);
}
