/* fake-mhd.c: the fake libmicrohttpd of fake-mhd.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "fake-mhd.h"
#include "http-internal.h"
#include "ring.h"
#include "scheduler.h"
#include "unit-fakes.h"

HttpMhd http_mhd;
unsigned fake_http_scheduled;

void http_schedule(Http *h) {
        fake_http_scheduled++;
}

typedef struct FakeResponse {
        char *body;
        size_t len;
        bool must_free;
        MHD_ContentReaderCallback reader;
        void *reader_cls;
        char names[FAKE_HEADERS_MAX][64], values[FAKE_HEADERS_MAX][256];
        size_t n_headers;
} FakeResponse;

static struct MHD_Response *fake_create_response_from_buffer(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode) {
        FakeResponse *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        r->body = buffer;
        r->len = size;
        r->must_free = mode == MHD_RESPMEM_MUST_FREE;
        return (struct MHD_Response *) r;
}

static struct MHD_Response *fake_create_response_from_callback(uint64_t size, size_t block_size,
                                                               MHD_ContentReaderCallback crc, void *crc_cls,
                                                               MHD_ContentReaderFreeCallback crfc) {
        FakeResponse *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        r->reader = crc;
        r->reader_cls = crc_cls;
        return (struct MHD_Response *) r;
}

static enum MHD_Result fake_add_response_header(struct MHD_Response *response, const char *header, const char *content) {
        FakeResponse *r = (FakeResponse *) response;
        if (r->n_headers >= FAKE_HEADERS_MAX)
                return MHD_NO;
        snprintf(r->names[r->n_headers], sizeof(r->names[0]), "%s", header);
        snprintf(r->values[r->n_headers], sizeof(r->values[0]), "%s", content);
        r->n_headers++;
        return MHD_YES;
}

static enum MHD_Result fake_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                           struct MHD_Response *response) {
        FakeConn *c = (FakeConn *) connection;
        FakeResponse *r = (FakeResponse *) response;
        free(c->body);
        c->body = r->reader ? NULL : strndup(r->body ?: "", r->len);
        c->status = status_code;
        c->reader = r->reader;
        c->reader_cls = r->reader_cls;
        memcpy(c->resp_names, r->names, sizeof(r->names));
        memcpy(c->resp_values, r->values, sizeof(r->values));
        c->n_resp_headers = r->n_headers;
        c->n_queued++;
        return MHD_YES;
}

static void fake_destroy_response(struct MHD_Response *response) {
        FakeResponse *r = (FakeResponse *) response;
        if (r->must_free)
                free(r->body);
        free(r);
}

static const union MHD_ConnectionInfo *fake_get_connection_info(struct MHD_Connection *connection,
                                                                enum MHD_ConnectionInfoType info_type, ...) {
        FakeConn *c = (FakeConn *) connection;
        if (info_type != MHD_CONNECTION_INFO_CONNECTION_FD || c->info.connect_fd < 0)
                return NULL;
        return &c->info;
}

static const char *fake_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                                const char *key) {
        FakeConn *c = (FakeConn *) connection;
        for (size_t i = 0; i < c->n_req_headers; i++)
                if (strcasecmp(c->req_names[i], key) == 0)
                        return c->req_values[i];
        return NULL;
}

static void fake_suspend_connection(struct MHD_Connection *connection) {
        FakeConn *c = (FakeConn *) connection;
        c->suspended = true;
        c->n_suspend++;
}

static void fake_resume_connection(struct MHD_Connection *connection) {
        FakeConn *c = (FakeConn *) connection;
        c->suspended = false;
        c->n_resume++;
}

void fake_mhd_install(void) {
        http_mhd = (HttpMhd) {
                .create_response_from_buffer = fake_create_response_from_buffer,
                .create_response_from_callback = fake_create_response_from_callback,
                .add_response_header = fake_add_response_header,
                .queue_response = fake_queue_response,
                .destroy_response = fake_destroy_response,
                .get_connection_info = fake_get_connection_info,
                .lookup_connection_value = fake_lookup_connection_value,
                .suspend_connection = fake_suspend_connection,
                .resume_connection = fake_resume_connection,
        };
        fake_http_scheduled = 0;
}

void fake_conn_init(FakeConn *c, int fd) {
        *c = (FakeConn) { .info.connect_fd = fd };
}

void fake_conn_done(FakeConn *c) {
        free(c->body);
        c->body = NULL;
}

void fake_conn_set_header(FakeConn *c, const char *name, const char *value) {
        if (c->n_req_headers < FAKE_HEADERS_MAX) {
                c->req_names[c->n_req_headers] = name;
                c->req_values[c->n_req_headers] = value;
                c->n_req_headers++;
        }
}

const char *fake_conn_response_header(const FakeConn *c, const char *name) {
        for (size_t i = 0; i < c->n_resp_headers; i++)
                if (strcasecmp(c->resp_names[i], name) == 0)
                        return c->resp_values[i];
        return NULL;
}

void fake_http_init(Http *h, Ring *ring, Scheduler *scheduler, const McpServer *template, unsigned max_sessions) {
        fake_mhd_install();
        *h = (Http) {
                .ring = ring,
                .scheduler = scheduler,
                .template = template,
                .listen_fd = -EBADF,
                .epoll_fd = -EBADF,
                .policy = { .streamable = true, .legacy = true, .max_body_bytes = 1u << 20 },
                .idle_s = 60,
                .max_sessions = max_sessions,
        };
}

void fake_http_done(Http *h) {
        while (h->sessions)
                http_session_close(h->sessions, "the test is over");
        assert_null(h->requests);
        assert_int_equal(h->n_requests, 0);
        assert_null(h->closed);
        assert_int_equal(h->n_sessions, 0);
        assert_int_equal(h->n_calls, 0);
}

void fake_http_setup(Http *h, Ring **ret_ring, Scheduler *scheduler, McpServer **ret_template,
                     unsigned max_sessions) {
        assert_int_equal(ring_new(32, ret_ring), 0);
        scheduler_init(scheduler, &(RunEnv) {}, 4, 4);
        scheduler_set_run_ops(scheduler, &fake_ops);
        *ret_template = mcp_server_new(&fake_limits, "1.0.0");
        assert_non_null(*ret_template);
        fake_http_init(h, *ret_ring, scheduler, *ret_template, max_sessions);
}

void fake_http_teardown(Ring **ring, Scheduler *scheduler, McpServer **template) {
        scheduler_done(scheduler);
        *template = mcp_server_free(*template);
        *ring = ring_free(*ring);
}

HttpRequest *fake_request(Http *h, FakeConn *c, HttpSession *session, const char *body) {
        HttpRequest *req = http_request_new(h, fake_conn_mhd(c));
        assert_non_null(req);
        if (session)
                req->session = http_session_ref(session);
        if (body)
                assert_int_equal(buf_append(&req->body, body, strlen(body)), 0);
        return req;
}
