/* fake-mhd.h: libmicrohttpd faked through the transport's own table (http-mhd.h), for the unit tests
 * of the HTTP objects: connections the test makes, with request headers it sets, and what each got
 * queued (status, headers, body, or an event stream's reader), suspended or resumed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#define FAKE_HEADERS_MAX 8

typedef struct FakeConn {
        union MHD_ConnectionInfo info; /* connect_fd: the request's socket, or -1 */
        const char *req_names[FAKE_HEADERS_MAX], *req_values[FAKE_HEADERS_MAX];
        size_t n_req_headers;

        /* The response queued last (n_queued counts them). */
        unsigned n_queued;
        unsigned status;
        char *body;
        char resp_names[FAKE_HEADERS_MAX][64], resp_values[FAKE_HEADERS_MAX][256];
        size_t n_resp_headers;
        MHD_ContentReaderCallback reader; /* an event stream's */
        void *reader_cls;

        bool suspended;
        unsigned n_suspend, n_resume;
} FakeConn;

/* Fills http_mhd with the fakes. */
void fake_mhd_install(void);

/* A connection whose socket is fd (-1: none). */
void fake_conn_init(FakeConn *c, int fd);
void fake_conn_done(FakeConn *c);
void fake_conn_set_header(FakeConn *c, const char *name, const char *value);
/* A header of the queued response, or NULL. */
const char *fake_conn_response_header(const FakeConn *c, const char *name);

static inline struct MHD_Connection *fake_conn_mhd(FakeConn *c) {
        return (struct MHD_Connection *) c;
}

/* http-server.c's http_schedule(), which the objects call to have MHD run: counted. */
extern unsigned fake_http_scheduled;

typedef struct Http Http;
typedef struct HttpRequest HttpRequest;
typedef struct HttpSession HttpSession;
typedef struct Ring Ring;
typedef struct Scheduler Scheduler;
typedef struct McpServer McpServer;

/* The server object as http_start() would leave it for the objects, without MHD: the ring, the
 * scheduler, the sessions' template, a 1 MiB body cap and at most max_sessions sessions. Installs
 * the fakes. */
void fake_http_init(Http *h, Ring *ring, Scheduler *scheduler, const McpServer *template, unsigned max_sessions);
/* Closes what is still open and checks nothing is left: no request, session or call. */
void fake_http_done(Http *h);

/* What the tests of the objects stand on: a ring, a scheduler of unit-fakes.h's runs (4 running, 4
 * queued), the sessions' template (fake_limits) and the server object over them (fake_http_init()). */
void fake_http_setup(Http *h, Ring **ret_ring, Scheduler *scheduler, McpServer **ret_template,
                     unsigned max_sessions);
/* After fake_http_done(): frees what fake_http_setup() made. */
void fake_http_teardown(Ring **ring, Scheduler *scheduler, McpServer **template);

/* A request on c (as MHD's head callback makes it) holding a reference of session (or none), its
 * body read. */
HttpRequest *fake_request(Http *h, FakeConn *c, HttpSession *session, const char *body);
