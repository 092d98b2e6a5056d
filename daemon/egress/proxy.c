/* proxy.c: the egress proxy (proxy.h). Each connection goes HEAD (its request's head read, within
 * head_timeout) → decided by the policy → RESOLVING (getaddrinfo_a, whose threads wake the loop
 * through an eventfd) → CONNECTING (the allowed addresses in turn, within connect_timeout) →
 * RELAY (two directions, each a recv and a send on the ring) → closed. A connection owns its ops;
 * once closing, it cancels them and goes when the last one's CQE is in. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "list.h"
#include "log.h"
#include "proxy.h"
#include "request.h"

#define RELAY_BUF (64u * 1024u)
#define USEC_PER_SEC 1000000u

typedef enum ConnState {
        CONN_HEAD,
        CONN_RESOLVING,
        CONN_CONNECTING,
        CONN_RELAY,
        CONN_REPLY_CLOSE, /* an error answered to the run, then closed */
        CONN_CLOSING,
} ConnState;

typedef struct Conn Conn;

/* A name being resolved by getaddrinfo_a(). Its memory is the resolver thread's until it is done:
 * a connection that goes first leaves it behind (conn NULL), freed when its answer comes. */
typedef struct Resolve {
        EgressProxy *px;
        Conn *conn;
        struct gaicb cb;
        struct addrinfo hints;
        struct sigevent sev;
        char host[EGRESS_HOST_MAX + 1];
        char port[8];
        LIST_FIELDS(struct Resolve, resolves);
} Resolve;

/* One direction of a relay: bytes from fd[from] to fd[to]. */
typedef struct Dir {
        Conn *conn;
        int from, to;  /* indexes into Conn.fd */
        char *buf;
        size_t len, off; /* buf[off, len) is still to send */
        uint64_t limit;  /* bytes still to read from `from`; UINT64_MAX: until its end */
        uint64_t moved;  /* read from `from` (the leftover put in first excluded) */
        bool done;
        RingOp op_recv, op_send;
} Dir;

struct Conn {
        EgressRun *run;
        ConnState state;
        int fd[2];       /* 0: the run's side, 1: the server's */
        char *head;      /* EGRESS_HEAD_MAX bytes while reading it */
        size_t head_len;
        EgressRequest req;
        const EgressRule *rule;
        size_t account;  /* index in the run's account, SIZE_MAX: none */
        Resolve *resolve;
        struct addrinfo *addrs, *next_addr;
        struct sockaddr_storage addr;
        socklen_t addr_len;
        char reply[320];
        size_t reply_len, reply_off;
        bool addrs_literal; /* addrs is one block of ours (free()), not the resolver's */
        const char *reason; /* denied or failed: why */
        bool decided;       /* counted in the account (conn_decide()) */
        bool told;          /* its decision was told */
        /* Two deadlines, each armed once: the head's, then the server's (resolve and connect). */
        struct __kernel_timespec head_ts, connect_ts;
        RingOp op_head, op_head_timer, op_connect_timer, op_connect, op_reply;
        Dir dir[2];      /* 0: the run to the server, 1: the server to the run */
        LIST_FIELDS(Conn, conns);
};

struct EgressRun {
        EgressProxy *px;
        int listen_fd;
        RingOp op_accept;
        EgressPolicy *policy;
        char run_id[64], tenant[64];
        EgressAccount account;
        Conn *conns;
        unsigned n_conns;
        bool freed;
        bool pinned; /* egress_run_free() walks its connections: it is not freed under the walk */
        LIST_FIELDS(EgressRun, runs);
};

struct EgressProxy {
        EgressProxyConfig cfg;
        int event_fd;
        uint64_t event_value;
        RingOp op_event;
        Resolve *resolves;
        EgressRun *runs;
};

static void conn_close(Conn *c, const char *reason);
static void conn_maybe_free(Conn *c);
static void run_maybe_free(EgressRun *r);
static void accept_arm(EgressRun *r);

/* An op of c came back while c is closing: c goes once its last op is back (conn_maybe_free()).
 * Whether it was closing: then c may be gone, and the op has nothing more to do. */
static bool conn_closing(Conn *c) {
        if (c->state != CONN_CLOSING)
                return false;
        conn_maybe_free(c);
        return true;
}

/* ---- the account and the decisions ------------------------------------------------------------ */

static EgressHostAccount *account_entry(EgressRun *r, const char *host, uint16_t port, bool allowed, size_t *ret_index) {
        EgressAccount *a = &r->account;
        for (size_t i = 0; i < a->n_hosts; i++)
                if (a->hosts[i].port == port && a->hosts[i].allowed == allowed && strcmp(a->hosts[i].host, host) == 0) {
                        *ret_index = i;
                        return &a->hosts[i];
                }
        if (a->n_hosts >= EGRESS_ACCOUNT_HOSTS_MAX) {
                a->hosts_truncated = true;
                return NULL;
        }
        EgressHostAccount *v = realloc(a->hosts, (a->n_hosts + 1) * sizeof(*v));
        if (!v)
                return NULL;
        a->hosts = v;
        v[a->n_hosts] = (EgressHostAccount) { .port = port, .allowed = allowed };
        snprintf(v[a->n_hosts].host, sizeof(v[a->n_hosts].host), "%s", host);
        *ret_index = a->n_hosts;
        return &v[a->n_hosts++];
}

/* The decision is known: counted in the account once (its bytes follow as they move). A
 * connection whose request could not be read names no host: counted, under no host. */
static void conn_decide(Conn *c, bool allowed) {
        if (c->decided)
                return;
        c->decided = true;
        EgressRun *r = c->run;
        EgressHostAccount *e = c->req.host[0] ? account_entry(r, c->req.host, c->req.port, allowed, &c->account) : NULL;
        if (e)
                e->connections++;
        else
                c->account = SIZE_MAX;
        r->account.connections++;
        if (!allowed)
                r->account.denied++;
}

static void conn_tell(Conn *c) {
        if (c->told)
                return;
        c->told = true;
        conn_decide(c, c->rule != NULL);
        EgressProxy *px = c->run->px;
        if (!px->cfg.decided)
                return;
        bool allowed = c->rule != NULL;
        EgressDecision d = {
                .run_id = c->run->run_id, .tenant = c->run->tenant, .host = c->req.host, .port = c->req.port,
                .allowed = allowed, .reason = c->reason, .sent = c->dir[0].moved, .received = c->dir[1].moved,
        };
        px->cfg.decided(px->cfg.userdata, &d);
}

static void conn_count(Conn *c, int d, size_t n) {
        EgressAccount *a = &c->run->account;
        EgressHostAccount *e = c->account != SIZE_MAX ? &a->hosts[c->account] : NULL;
        if (d == 0) {
                a->sent += n;
                if (e)
                        e->sent += n;
        } else {
                a->received += n;
                if (e)
                        e->received += n;
        }
}

/* ---- timers and replies ------------------------------------------------------------------------ */

static void timer_arm(Conn *c, RingOp *op, struct __kernel_timespec *ts, uint64_t usec) {
        *ts = (struct __kernel_timespec) { .tv_sec = (long long) (usec / USEC_PER_SEC),
                                           .tv_nsec = (long long) (usec % USEC_PER_SEC) * 1000 };
        struct io_uring_sqe *sqe = ring_get_sqe(c->run->px->cfg.ring, op);
        io_uring_prep_timeout(sqe, ts, 0, 0);
}

static void timer_stop(Conn *c) {
        RingOp *ops[] = { &c->op_head_timer, &c->op_connect_timer };
        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                if (ops[i]->busy)
                        ring_cancel(c->run->px->cfg.ring, ops[i]);
}

static void reply_send(Conn *c) {
        struct io_uring_sqe *sqe = ring_get_sqe(c->run->px->cfg.ring, &c->op_reply);
        io_uring_prep_send(sqe, c->fd[0], c->reply + c->reply_off, c->reply_len - c->reply_off, MSG_NOSIGNAL);
}

static void resolve_free(EgressProxy *px, Resolve *r);

/* A name being resolved for c is not c's any more: cancelled, or left to its thread to finish (the
 * resolver may be writing into it), then freed. */
static void conn_resolve_stop(Conn *c) {
        if (!c->resolve)
                return;
        int e = gai_cancel(&c->resolve->cb);
        if (e == EAI_CANCELED)
                resolve_free(c->run->px, c->resolve);
        else if (e == EAI_ALLDONE) {
                if (gai_error(&c->resolve->cb) == 0)
                        freeaddrinfo(c->resolve->cb.ar_result);
                resolve_free(c->run->px, c->resolve);
        } else
                c->resolve->conn = NULL;
        c->resolve = NULL;
}

/* Answers the run with status and why (a short text body), then closes. Whatever was on its way
 * (the head's read, a name's resolution, a connect) is stopped first: its completion must find
 * the connection answering, not take it further. */
static void conn_refuse(Conn *c, int status, const char *reason) {
        Ring *ring = c->run->px->cfg.ring;
        if (c->op_head.busy)
                ring_cancel(ring, &c->op_head);
        if (c->op_connect.busy)
                ring_cancel(ring, &c->op_connect);
        conn_resolve_stop(c);
        static const struct {
                int status;
                const char *text;
        } texts[] = { { 400, "Bad Request" }, { 403, "Forbidden" }, { 405, "Method Not Allowed" },
                      { 408, "Request Timeout" }, { 431, "Request Header Fields Too Large" },
                      { 500, "Internal Server Error" }, { 501, "Not Implemented" }, { 502, "Bad Gateway" },
                      { 503, "Service Unavailable" }, { 504, "Gateway Timeout" } };
        const char *text = "Error";
        for (size_t i = 0; i < ELEMENTSOF(texts); i++)
                if (texts[i].status == status)
                        text = texts[i].text;
        char body[256];
        int bl = snprintf(body, sizeof(body), "mcp-execd egress: %s\n", reason);
        if (bl < 0 || (size_t) bl >= sizeof(body))
                bl = (int) sizeof(body) - 1;
        int n = snprintf(c->reply, sizeof(c->reply),
                         "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%.*s",
                         status, text, bl, bl, body);
        c->reply_len = n < 0 ? 0 : (size_t) n >= sizeof(c->reply) ? sizeof(c->reply) - 1 : (size_t) n;
        c->reply_off = 0;
        c->reason = reason;
        c->state = CONN_REPLY_CLOSE;
        timer_stop(c);
        reply_send(c);
}

static void on_reply(RingOp *op, int res) {
        Conn *c = container_of(op, Conn, op_reply);
        if (conn_closing(c))
                return;
        if (res > 0 && c->reply_off + (size_t) res < c->reply_len) {
                c->reply_off += (size_t) res;
                reply_send(c);
                return;
        }
        conn_close(c, c->reason);
}

/* ---- relay ------------------------------------------------------------------------------------ */

static void dir_recv(Dir *d) {
        Conn *c = d->conn;
        size_t want = RELAY_BUF;
        if (d->limit != UINT64_MAX && d->limit < want)
                want = (size_t) d->limit;
        struct io_uring_sqe *sqe = ring_get_sqe(c->run->px->cfg.ring, &d->op_recv);
        io_uring_prep_recv(sqe, c->fd[d->from], d->buf, want, 0);
}

static void dir_send(Dir *d) {
        Conn *c = d->conn;
        struct io_uring_sqe *sqe = ring_get_sqe(c->run->px->cfg.ring, &d->op_send);
        io_uring_prep_send(sqe, c->fd[d->to], d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
}

static void relay_maybe_done(Conn *c) {
        if (c->dir[0].done && c->dir[1].done)
                conn_close(c, NULL);
}

/* The direction's source has nothing more to give: tell its destination, unless the server is to
 * keep the connection for its answer (plain HTTP: its request is whole, its answer follows). */
static void dir_finish(Dir *d) {
        Conn *c = d->conn;
        d->done = true;
        if (!(d->from == 0 && c->req.kind == EGRESS_REQUEST_HTTP))
                (void) shutdown(c->fd[d->to], SHUT_WR);
        relay_maybe_done(c);
}

/* The next step of a direction: send what is held, else read more, else finish. */
static void dir_next(Dir *d) {
        if (d->off < d->len)
                dir_send(d);
        else if (d->limit == 0)
                dir_finish(d);
        else {
                d->off = d->len = 0;
                dir_recv(d);
        }
}

static void on_dir_recv(RingOp *op, int res) {
        Dir *d = container_of(op, Dir, op_recv);
        Conn *c = d->conn;
        if (conn_closing(c))
                return;
        if (res < 0) {
                conn_close(c, NULL); /* a reset: the relay ends, its bytes so far counted */
                return;
        }
        if (res == 0) {
                dir_finish(d);
                return;
        }
        d->len = (size_t) res;
        d->off = 0;
        d->moved += (uint64_t) res;
        if (d->limit != UINT64_MAX)
                d->limit -= (uint64_t) res;
        conn_count(c, d->from == 0 ? 0 : 1, (size_t) res);
        dir_send(d);
}

static void on_dir_send(RingOp *op, int res) {
        Dir *d = container_of(op, Dir, op_send);
        Conn *c = d->conn;
        if (conn_closing(c))
                return;
        if (res <= 0) {
                conn_close(c, NULL);
                return;
        }
        d->off += (size_t) res;
        dir_next(d);
}

static int dir_init(Conn *c, int i, int from, int to) {
        Dir *d = &c->dir[i];
        *d = (Dir) { .conn = c, .from = from, .to = to, .limit = UINT64_MAX };
        d->op_recv.callback = on_dir_recv;
        d->op_send.callback = on_dir_send;
        d->buf = malloc(RELAY_BUF);
        return d->buf ? 0 : -ENOMEM;
}

/* Connected: what the run sent beyond the head goes first (CONNECT: the start of its TLS; plain
 * HTTP: the rebuilt head and the body read so far), and the run hears 200 first for CONNECT. */
static void relay_start(Conn *c) {
        c->state = CONN_RELAY;
        timer_stop(c);
        if (dir_init(c, 0, 0, 1) < 0 || dir_init(c, 1, 1, 0) < 0) {
                conn_refuse(c, 500, "the proxy is out of memory");
                return;
        }
        Dir *up = &c->dir[0], *down = &c->dir[1];
        size_t extra = c->head_len - c->req.head_len;
        const char *rest = c->head + c->req.head_len;
        if (c->req.kind == EGRESS_REQUEST_CONNECT) {
                memcpy(up->buf, rest, extra);
                up->len = extra;
                up->moved = extra;
                conn_count(c, 0, extra);
                static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
                memcpy(down->buf, ok, sizeof(ok) - 1);
                down->len = sizeof(ok) - 1;
        } else {
                size_t body = extra < c->req.content_length ? extra : (size_t) c->req.content_length;
                if (c->req.forward_len + body > RELAY_BUF) {
                        conn_refuse(c, 500, "the request's head does not fit the proxy's buffer");
                        return;
                }
                memcpy(up->buf, c->req.forward, c->req.forward_len);
                memcpy(up->buf + c->req.forward_len, rest, body);
                up->len = c->req.forward_len + body;
                up->limit = c->req.content_length - body;
                /* Sent: what reaches the server, the request's head (rebuilt) and its body. */
                up->moved = c->req.forward_len + body;
                conn_count(c, 0, c->req.forward_len + body);
        }
        dir_next(up);
        dir_next(down);
}

/* ---- connecting --------------------------------------------------------------------------------- */

static void connect_next(Conn *c);

static void on_connect(RingOp *op, int res) {
        Conn *c = container_of(op, Conn, op_connect);
        if (conn_closing(c) || c->state != CONN_CONNECTING)
                return; /* or refused meanwhile (its deadline): the answer is on its way */
        if (res < 0) {
                c->fd[1] = safe_close(c->fd[1]);
                connect_next(c);
                return;
        }
        relay_start(c);
}

/* The next address the rule allows, in the resolver's order; 502 when none is left. */
static void connect_next(Conn *c) {
        for (; c->next_addr; c->next_addr = c->next_addr->ai_next) {
                struct addrinfo *ai = c->next_addr;
                if (!egress_addr_allowed(c->rule, ai->ai_addr))
                        continue;
                c->next_addr = ai->ai_next;
                memcpy(&c->addr, ai->ai_addr, ai->ai_addrlen);
                c->addr_len = (socklen_t) ai->ai_addrlen;
                c->fd[1] = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (c->fd[1] < 0)
                        continue;
                struct io_uring_sqe *sqe = ring_get_sqe(c->run->px->cfg.ring, &c->op_connect);
                io_uring_prep_connect(sqe, c->fd[1], (struct sockaddr *) &c->addr, c->addr_len);
                return;
        }
        conn_refuse(c, 502, "the server could not be reached");
}

static void connect_start(Conn *c, struct addrinfo *addrs) {
        c->state = CONN_CONNECTING;
        c->next_addr = addrs;
        /* A name allowed whose every address is not public (rebinding to loopback, metadata, a
         * private range): denied, as the policy says, not "unreachable". */
        bool any = false;
        for (struct addrinfo *ai = addrs; ai; ai = ai->ai_next)
                any = any || egress_addr_allowed(c->rule, ai->ai_addr);
        if (!any) {
                c->rule = NULL;
                conn_decide(c, false);
                conn_refuse(c, 403, "the name resolves only to addresses that no name may reach (loopback, private, "
                                    "link-local, metadata); write the address itself in the allowlist to reach it");
                return;
        }
        conn_decide(c, true);
        connect_next(c);
}

/* ---- resolving ---------------------------------------------------------------------------------- */

static void resolver_notify(union sigval v) {
        EgressProxy *px = v.sival_ptr;
        uint64_t one = 1;
        (void) !write(px->event_fd, &one, sizeof(one)); /* a full counter still wakes the loop */
}

static void event_arm(EgressProxy *px) {
        struct io_uring_sqe *sqe = ring_get_sqe(px->cfg.ring, &px->op_event);
        io_uring_prep_read(sqe, px->event_fd, &px->event_value, sizeof(px->event_value), 0);
}

static void resolve_free(EgressProxy *px, Resolve *r) {
        LIST_REMOVE(resolves, px->resolves, r);
        free(r);
}

static void on_event(RingOp *op, int res) {
        EgressProxy *px = container_of(op, EgressProxy, op_event);
        LIST_FOREACH_SAFE(resolves, r, next, px->resolves) {
                int e = gai_error(&r->cb);
                if (e == EAI_INPROGRESS)
                        continue;
                struct addrinfo *result = e == 0 ? r->cb.ar_result : NULL;
                Conn *c = r->conn;
                resolve_free(px, r);
                if (!c) {
                        if (result)
                                freeaddrinfo(result);
                        continue;
                }
                c->resolve = NULL;
                c->addrs = result;
                if (!result)
                        conn_refuse(c, 502, "the name does not resolve");
                else
                        connect_start(c, result);
        }
        if (px->resolves || px->runs)
                event_arm(px);
}

static void resolve_start(Conn *c) {
        EgressProxy *px = c->run->px;
        Resolve *r = calloc(1, sizeof(*r));
        if (!r) {
                conn_refuse(c, 500, "the proxy is out of memory");
                return;
        }
        r->px = px;
        r->conn = c;
        snprintf(r->host, sizeof(r->host), "%s", c->req.host);
        snprintf(r->port, sizeof(r->port), "%u", c->req.port);
        /* No AI_ADDRCONFIG: on a host whose only addresses are loopback ones it hides every IPv4
         * answer; an address the host cannot reach fails its connect, and the next is tried. */
        r->hints = (struct addrinfo) { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
        r->cb = (struct gaicb) { .ar_name = r->host, .ar_service = r->port, .ar_request = &r->hints };
        r->sev = (struct sigevent) { .sigev_notify = SIGEV_THREAD, .sigev_notify_function = resolver_notify,
                                     .sigev_value.sival_ptr = px };
        struct gaicb *list[1] = { &r->cb };
        int e = getaddrinfo_a(GAI_NOWAIT, list, 1, &r->sev);
        if (e != 0) {
                free(r);
                conn_refuse(c, 502, "the name could not be looked up");
                return;
        }
        LIST_PREPEND(resolves, px->resolves, r);
        c->resolve = r;
        c->state = CONN_RESOLVING;
}

/* ---- the request's head ------------------------------------------------------------------------- */

static void head_recv(Conn *c) {
        struct io_uring_sqe *sqe = ring_get_sqe(c->run->px->cfg.ring, &c->op_head);
        io_uring_prep_recv(sqe, c->fd[0], c->head + c->head_len, EGRESS_HEAD_MAX - c->head_len, 0);
}

static void head_decide(Conn *c) {
        EgressRun *r = c->run;
        c->rule = egress_policy_match(r->policy, c->req.host, c->req.port);
        if (!c->rule) {
                conn_decide(c, false);
                conn_refuse(c, 403, "this host and port are not in the run's egress allowlist");
                return;
        }
        /* Resolving and connecting share one deadline. */
        timer_arm(c, &c->op_connect_timer, &c->connect_ts, r->px->cfg.connect_timeout_usec);
        if (c->rule->literal) {
                /* The address itself: nothing to resolve. */
                struct addrinfo *ai = calloc(1, sizeof(*ai) + sizeof(struct sockaddr_storage));
                if (!ai) {
                        conn_refuse(c, 500, "the proxy is out of memory");
                        return;
                }
                struct sockaddr_storage *ss = (struct sockaddr_storage *) (ai + 1);
                memcpy(ss, &c->rule->addr, sizeof(*ss));
                if (ss->ss_family == AF_INET)
                        ((struct sockaddr_in *) ss)->sin_port = htons(c->req.port);
                else
                        ((struct sockaddr_in6 *) ss)->sin6_port = htons(c->req.port);
                ai->ai_family = ss->ss_family;
                ai->ai_socktype = SOCK_STREAM;
                ai->ai_addr = (struct sockaddr *) ss;
                ai->ai_addrlen = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
                c->addrs = ai;
                c->addrs_literal = true;
                connect_start(c, ai);
                return;
        }
        resolve_start(c);
}

static void on_head(RingOp *op, int res) {
        Conn *c = container_of(op, Conn, op_head);
        if (conn_closing(c) || c->state != CONN_HEAD)
                return; /* or refused meanwhile (its deadline): what came late is not read */
        if (res <= 0) {
                conn_close(c, "the run closed the connection before its request was whole");
                return;
        }
        c->head_len += (size_t) res;
        int status;
        const char *why;
        int r = egress_request_parse(c->head, c->head_len, &c->req, &status, &why);
        if (r == -EAGAIN) {
                head_recv(c);
                return;
        }
        if (r < 0) {
                conn_decide(c, false);
                conn_refuse(c, status, why);
                return;
        }
        if (c->op_head_timer.busy)
                ring_cancel(c->run->px->cfg.ring, &c->op_head_timer);
        head_decide(c);
}

static void on_head_timer(RingOp *op, int res) {
        Conn *c = container_of(op, Conn, op_head_timer);
        if (!conn_closing(c) && res == -ETIME && c->state == CONN_HEAD) {
                /* A slow or endless head (slowloris) holds nothing longer than this. */
                conn_decide(c, false);
                conn_refuse(c, 408, "the request's head did not arrive in time");
        }
}

static void on_connect_timer(RingOp *op, int res) {
        Conn *c = container_of(op, Conn, op_connect_timer);
        if (!conn_closing(c) && res == -ETIME && (c->state == CONN_RESOLVING || c->state == CONN_CONNECTING))
                conn_refuse(c, 504, "the server did not answer in time");
}

/* ---- a connection's life ------------------------------------------------------------------------ */

static bool conn_ops_busy(const Conn *c) {
        return c->op_head.busy || c->op_head_timer.busy || c->op_connect_timer.busy || c->op_connect.busy || c->op_reply.busy || c->dir[0].op_recv.busy ||
               c->dir[0].op_send.busy || c->dir[1].op_recv.busy || c->dir[1].op_send.busy;
}

static void conn_maybe_free(Conn *c) {
        if (conn_ops_busy(c))
                return;
        EgressRun *r = c->run;
        safe_close(c->fd[0]);
        safe_close(c->fd[1]);
        if (c->addrs_literal)
                free(c->addrs);
        else if (c->addrs)
                freeaddrinfo(c->addrs);
        egress_request_done(&c->req);
        free(c->head);
        free(c->dir[0].buf);
        free(c->dir[1].buf);
        LIST_REMOVE(conns, r->conns, c);
        bool was_full = r->n_conns-- >= r->px->cfg.max_connections;
        free(c);
        if (was_full && !r->freed)
                accept_arm(r);
        run_maybe_free(r);
}

static void conn_close(Conn *c, const char *reason) {
        if (c->state == CONN_CLOSING)
                return;
        if (reason && !c->reason)
                c->reason = reason;
        c->state = CONN_CLOSING;
        conn_tell(c);
        conn_resolve_stop(c);
        Ring *ring = c->run->px->cfg.ring;
        RingOp *ops[] = { &c->op_head, &c->op_head_timer, &c->op_connect_timer, &c->op_connect, &c->op_reply, &c->dir[0].op_recv,
                          &c->dir[0].op_send, &c->dir[1].op_recv, &c->dir[1].op_send };
        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                if (ops[i]->busy)
                        ring_cancel(ring, ops[i]);
        /* A recv or send may be blocked on a peer: shut both sides so that it returns at once. */
        for (int i = 0; i < 2; i++)
                if (c->fd[i] >= 0)
                        (void) shutdown(c->fd[i], SHUT_RDWR);
        conn_maybe_free(c);
}

static void accept_arm(EgressRun *r) {
        struct io_uring_sqe *sqe = ring_get_sqe(r->px->cfg.ring, &r->op_accept);
        io_uring_prep_accept(sqe, r->listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

static void on_accept(RingOp *op, int res) {
        EgressRun *r = container_of(op, EgressRun, op_accept);
        if (r->freed) {
                if (res >= 0)
                        close(res);
                run_maybe_free(r);
                return;
        }
        if (res < 0) {
                if (res != -ECANCELED)
                        log_warning("egress: accept on the listener of run %s failed: %s", r->run_id, strerror(-res));
                if (res == -EINTR || res == -ECONNABORTED || res == -EMFILE || res == -ENFILE || res == -ENOBUFS ||
                    res == -ENOMEM)
                        accept_arm(r);
                return;
        }
        Conn *c = calloc(1, sizeof(*c));
        char *head = c ? malloc(EGRESS_HEAD_MAX) : NULL;
        if (!c || !head) {
                free(c);
                free(head);
                close(res);
                accept_arm(r);
                return;
        }
        *c = (Conn) { .run = r, .state = CONN_HEAD, .fd = { res, -EBADF }, .head = head, .account = SIZE_MAX };
        c->op_head.callback = on_head;
        c->op_head_timer.callback = on_head_timer;
        c->op_connect_timer.callback = on_connect_timer;
        c->op_connect.callback = on_connect;
        c->op_reply.callback = on_reply;
        LIST_PREPEND(conns, r->conns, c);
        r->n_conns++;
        timer_arm(c, &c->op_head_timer, &c->head_ts, r->px->cfg.head_timeout_usec);
        head_recv(c);
        /* At the bound, the next connections wait in the listener's backlog until one ends. */
        if (r->n_conns < r->px->cfg.max_connections)
                accept_arm(r);
}

/* ---- runs and the proxy ------------------------------------------------------------------------- */

int egress_run_new(EgressProxy *px, int listen_fd, const EgressPolicy *policy, const char *run_id, const char *tenant,
                   EgressRun **ret) {
        _cleanup_close_ int fd = listen_fd;
        EgressRun *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        int k = egress_policy_dup(policy, &r->policy);
        if (k < 0) {
                free(r);
                return k;
        }
        r->px = px;
        r->listen_fd = TAKE_FD(fd);
        r->op_accept.callback = on_accept;
        snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
        snprintf(r->tenant, sizeof(r->tenant), "%s", tenant ?: "");
        bool first = !px->runs;
        LIST_PREPEND(runs, px->runs, r);
        if (first && !px->op_event.busy)
                event_arm(px);
        accept_arm(r);
        *ret = r;
        return 0;
}

const EgressAccount *egress_run_account(const EgressRun *r) {
        return &r->account;
}

int egress_account_copy(const EgressAccount *a, EgressAccount *ret) {
        *ret = *a;
        ret->hosts = NULL;
        if (a->n_hosts > 0) {
                ret->hosts = malloc(a->n_hosts * sizeof(*a->hosts));
                if (!ret->hosts)
                        return -ENOMEM;
                memcpy(ret->hosts, a->hosts, a->n_hosts * sizeof(*a->hosts));
        }
        return 0;
}

void egress_account_done(EgressAccount *a) {
        free(a->hosts);
        *a = (EgressAccount) {};
}

int egress_account_since(const EgressAccount *now, const EgressAccount *base, ExecEgress *ret, ExecEgressHost **ret_hosts) {
        *ret = (ExecEgress) { .sent = now->sent - base->sent, .received = now->received - base->received,
                              .connections = now->connections - base->connections, .denied = now->denied - base->denied,
                              .hosts_truncated = now->hosts_truncated && !base->hosts_truncated };
        *ret_hosts = NULL;
        if (now->n_hosts == 0)
                return 0;
        ExecEgressHost *v = calloc(now->n_hosts, sizeof(*v));
        if (!v)
                return -ENOMEM;
        size_t n = 0;
        /* Entries are only ever appended, so a host's index is the same in both. */
        for (size_t i = 0; i < now->n_hosts; i++) {
                const EgressHostAccount *h = &now->hosts[i], *b = i < base->n_hosts ? &base->hosts[i] : NULL;
                unsigned conns = h->connections - (b ? b->connections : 0);
                uint64_t sent = h->sent - (b ? b->sent : 0), received = h->received - (b ? b->received : 0);
                if (conns == 0 && sent == 0 && received == 0)
                        continue;
                v[n++] = (ExecEgressHost) { .host = h->host, .port = h->port, .allowed = h->allowed, .connections = conns,
                                            .sent = sent, .received = received };
        }
        ret->hosts = v;
        ret->n_hosts = n;
        *ret_hosts = v;
        return 0;
}

static void run_maybe_free(EgressRun *r) {
        if (!r->freed || r->pinned || r->conns || r->op_accept.busy)
                return;
        EgressProxy *px = r->px;
        LIST_REMOVE(runs, px->runs, r);
        safe_close(r->listen_fd);
        egress_policy_free(r->policy);
        free(r->account.hosts);
        free(r);
        /* The eventfd's read goes with the last run once no name is being resolved. */
        if (!px->runs && !px->resolves && px->op_event.busy)
                ring_cancel(px->cfg.ring, &px->op_event);
}

void egress_run_free(EgressRun *r) {
        if (!r || r->freed)
                return;
        r->freed = true;
        if (r->op_accept.busy)
                ring_cancel(r->px->cfg.ring, &r->op_accept);
        r->pinned = true;
        LIST_FOREACH_SAFE(conns, c, next, r->conns)
                conn_close(c, c->state == CONN_RELAY ? NULL : "the run ended");
        r->pinned = false;
        run_maybe_free(r);
}

int egress_proxy_new(const EgressProxyConfig *cfg, EgressProxy **ret) {
        EgressProxy *px = calloc(1, sizeof(*px));
        if (!px)
                return -ENOMEM;
        px->cfg = *cfg;
        if (!px->cfg.head_timeout_usec)
                px->cfg.head_timeout_usec = 10u * USEC_PER_SEC;
        if (!px->cfg.connect_timeout_usec)
                px->cfg.connect_timeout_usec = 10u * USEC_PER_SEC;
        if (!px->cfg.max_connections)
                px->cfg.max_connections = 64;
        px->event_fd = eventfd(0, EFD_CLOEXEC);
        if (px->event_fd < 0) {
                int r = -errno;
                free(px);
                return r;
        }
        px->op_event.callback = on_event;
        *ret = px;
        return 0;
}

bool egress_proxy_busy(const EgressProxy *px) {
        return px && (px->runs || px->resolves || px->op_event.busy);
}

int egress_proxy_free(EgressProxy *px) {
        if (!px)
                return 0;
        if (egress_proxy_busy(px))
                return -EBUSY;
        safe_close(px->event_fd);
        free(px);
        return 0;
}
