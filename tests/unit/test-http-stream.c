/* test-http-stream.c: the HTTP requests and event streams (http-stream.c) against a fake
 * libmicrohttpd (fake-mhd.h) on a real ring and real sockets: a request's socket, an event stream
 * read as MHD reads it (parked while empty, resumed by an event, ended or failed), a client that
 * does not read, the hang-up watch while suspended, completion while the watch is in flight, and
 * the headers each refusal carries. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "fake-mhd.h"
#include "http-internal.h"
#include "ring.h"
#include "scheduler.h"
#include "unit-fakes.h"
#include "unit-fixture.h"

static Ring *ring;
static Scheduler sched;
static McpServer *template;
static Http http;
static int sv[2] = { -EBADF, -EBADF }; /* sv[0]: the request's socket, sv[1]: the client's */

static int setup(void **state) {
        fake_http_setup(&http, &ring, &sched, &template, 4);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        return 0;
}

static int teardown(void **state) {
        fake_http_done(&http);
        fake_http_teardown(&ring, &sched, &template);
        for (int i = 0; i < 2; i++)
                if (sv[i] >= 0)
                        close(TAKE_FD(sv[i]));
        return 0;
}

/* What MHD would read now: the bytes, or the reader's verdict. */
static ssize_t stream_read(FakeConn *c, char *buf, size_t size) {
        assert_non_null(c->reader);
        ssize_t n = c->reader(c->reader_cls, 0, buf, size - 1);
        if (n >= 0)
                buf[n] = '\0';
        return n;
}

/* Turns the loop until the ring has nothing in flight. */
static void ring_drain(void) {
        for (int i = 0; i < 100 && ring_inflight(ring) > 0; i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_int_equal(ring_inflight(ring), 0);
}

static void test_request_lifetime(void **state) {
        FakeConn c;
        fake_conn_init(&c, sv[0]);
        HttpRequest *req = http_request_new(&http, fake_conn_mhd(&c));
        assert_non_null(req);
        assert_int_equal(req->fd, sv[0]); /* the connection's socket, borrowed */
        assert_int_equal(http.n_requests, 1);
        assert_true(http.trim);
        FakeConn none;
        fake_conn_init(&none, -1);
        HttpRequest *other = http_request_new(&http, fake_conn_mhd(&none));
        assert_int_equal(other->fd, -EBADF);
        assert_int_equal(http.n_requests, 2);
        http_request_complete(other);
        http_request_complete(req);
        assert_int_equal(http.n_requests, 0);
        assert_true(fcntl(sv[0], F_GETFD) >= 0); /* never closed by us */
}

static void test_stream(void **state) {
        FakeConn c;
        fake_conn_init(&c, sv[0]);
        HttpRequest *req = http_request_new(&http, fake_conn_mhd(&c));
        assert_int_equal(http_respond_stream(req), MHD_YES);
        assert_int_equal(c.status, 200);
        assert_string_equal(fake_conn_response_header(&c, "Content-Type"), "text/event-stream");
        assert_string_equal(fake_conn_response_header(&c, "X-Accel-Buffering"), "no");

        /* Nothing to send: parked (not a busy loop), watched for a hang-up. */
        char buf[256];
        assert_int_equal(stream_read(&c, buf, sizeof(buf)), 0);
        assert_true(c.suspended);
        assert_true(req->op_hup.busy);
        /* An event resumes it, and is read whole. */
        unsigned scheduled = fake_http_scheduled;
        http_stream_push(req, "message", "{\"a\":1}");
        assert_false(c.suspended);
        assert_true(fake_http_scheduled > scheduled);
        assert_string_equal((stream_read(&c, buf, sizeof(buf)), buf), "event: message\ndata: {\"a\":1}\n\n");
        http_stream_comment(req, "keep-alive");
        assert_true(stream_read(&c, buf, sizeof(buf)) > 0);
        assert_non_null(strstr(buf, "keep-alive"));
        /* Finished: what is queued first, then the end. */
        http_stream_push(req, "message", "last");
        http_stream_finish(req);
        assert_true(stream_read(&c, buf, sizeof(buf)) > 0);
        assert_non_null(strstr(buf, "data: last"));
        assert_int_equal(stream_read(&c, buf, sizeof(buf)), MHD_CONTENT_READER_END_OF_STREAM);
        http_stream_push(req, "message", "too late");
        assert_int_equal(stream_read(&c, buf, sizeof(buf)), MHD_CONTENT_READER_END_OF_STREAM);
        http_request_complete(req);
        ring_drain(); /* the watch's cancellation frees it */
        assert_int_equal(http.n_requests, 0);
}

/* A failed stream ends with an error at once and shuts the socket, so that MHD's next write fails
 * even while nothing reads it. */
static void test_stream_fail(void **state) {
        FakeConn c;
        fake_conn_init(&c, sv[0]);
        HttpRequest *req = http_request_new(&http, fake_conn_mhd(&c));
        assert_int_equal(http_respond_stream(req), MHD_YES);
        http_stream_push(req, "message", "unsent");
        http_stream_fail(req);
        char buf[64];
        assert_int_equal(stream_read(&c, buf, sizeof(buf)), MHD_CONTENT_READER_END_WITH_ERROR);
        assert_int_equal(read(sv[1], buf, sizeof(buf)), 0); /* the client sees the end */
        http_request_complete(req);
        ring_drain();
}

/* A client that reads nothing: past 4 × the body cap + 64 MiB unread the stream is dropped. */
static void test_stream_unread(void **state) {
        http.policy.max_body_bytes = 1024;
        FakeConn c;
        fake_conn_init(&c, sv[0]);
        HttpRequest *req = http_request_new(&http, fake_conn_mhd(&c));
        assert_int_equal(http_respond_stream(req), MHD_YES);
        size_t chunk = 1u << 20;
        char *data = malloc(chunk + 1);
        assert_non_null(data);
        memset(data, 'x', chunk);
        data[chunk] = '\0';
        for (int i = 0; i < 64; i++)
                http_stream_push(req, "message", data);
        assert_false(req->stream_failed); /* 64 MiB and a little: within the slack */
        http_stream_push(req, "message", data);
        http_stream_push(req, "message", data);
        assert_true(req->stream_failed);
        free(data);
        char buf[64];
        assert_int_equal(stream_read(&c, buf, sizeof(buf)), MHD_CONTENT_READER_END_WITH_ERROR);
        http_request_complete(req);
        ring_drain();
}

/* While suspended, MHD does not watch the socket: the request's own watch sees the client hang
 * up, and resumes it so that MHD ends it. */
static void test_hangup_while_suspended(void **state) {
        FakeConn c;
        fake_conn_init(&c, sv[0]);
        HttpRequest *req = http_request_new(&http, fake_conn_mhd(&c));
        http_request_suspend(req);
        assert_true(c.suspended);
        assert_true(req->op_hup.busy);
        http_request_suspend(req); /* idempotent */
        assert_int_equal(c.n_suspend, 1);
        close(TAKE_FD(sv[1]));
        for (int i = 0; i < 100 && !req->hup; i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_true(req->hup);
        assert_false(c.suspended);
        assert_int_equal(c.n_resume, 1);
        http_request_complete(req);
        ring_drain();
        assert_int_equal(http.n_requests, 0);
}

/* Resumed and suspended again before the cancelled watch's completion: it is armed again. */
static void test_resume_then_suspend(void **state) {
        FakeConn c;
        fake_conn_init(&c, sv[0]);
        HttpRequest *req = http_request_new(&http, fake_conn_mhd(&c));
        http_request_suspend(req);
        http_request_resume(req);
        http_request_suspend(req);
        for (int i = 0; i < 5; i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_true(req->op_hup.busy); /* still watching */
        assert_false(req->hup);
        http_request_complete(req);
        assert_int_equal(http.n_requests, 1); /* until the watch's completion */
        ring_drain();
        assert_int_equal(http.n_requests, 0);
}

static void test_refusal_headers(void **state) {
        static const struct {
                McpHttpVerdict verdict;
                const char *header, *value;
        } cases[] = {
                { { .status = 401, .rpc_code = -32001, .message = "Unauthorized", .www_authenticate = true },
                  "WWW-Authenticate", MCP_HTTP_WWW_AUTHENTICATE },
                { { .status = 401, .rpc_code = -32001, .message = "Unauthorized", .www_authenticate = true,
                    .token_wrong = true },
                  "WWW-Authenticate", MCP_HTTP_WWW_AUTHENTICATE_WRONG },
                /* an OAuth path: an OAuth error body, whose description the client shows */
                { { .status = 400, .rpc_code = -32000, .message = "a hint", .oauth_error = "invalid_request" },
                  "Content-Type", "application/json" },
                { { .status = 405, .rpc_code = -32000, .message = "Method Not Allowed", .allow = "GET, POST" },
                  "Allow", "GET, POST" },
                { { .status = 503, .rpc_code = -32000, .message = "Unavailable", .retry_after = "1" },
                  "Retry-After", "1" },
                { { .status = 400, .rpc_code = -32000, .message = "Bad", .close = true }, "Connection", "close" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                FakeConn c;
                fake_conn_init(&c, -1);
                HttpRequest *req = http_request_new(&http, fake_conn_mhd(&c));
                assert_int_equal(http_respond_verdict(req, &cases[i].verdict), MHD_YES);
                assert_int_equal(c.status, cases[i].verdict.status);
                assert_string_equal(fake_conn_response_header(&c, cases[i].header), cases[i].value);
                assert_non_null(strstr(c.body, cases[i].verdict.message));
                if (cases[i].verdict.oauth_error) {
                        _cleanup_(json_decrefp) json_t *b = json_loads(c.body, 0, NULL);
                        assert_string_equal(json_string_value(json_object_get(b, "error")), "invalid_request");
                        assert_string_equal(json_string_value(json_object_get(b, "error_description")), "a hint");
                        assert_null(json_object_get(b, "jsonrpc"));
                }
                http_request_complete(req);
                fake_conn_done(&c);
        }
        /* Stopping: every answer closes its connection. */
        http.stopping = true;
        FakeConn c;
        fake_conn_init(&c, -1);
        HttpRequest *req = http_request_new(&http, fake_conn_mhd(&c));
        assert_int_equal(http_respond_json(req, 200, strdup("{}")), MHD_YES);
        assert_string_equal(fake_conn_response_header(&c, "Connection"), "close");
        assert_string_equal(fake_conn_response_header(&c, "Content-Type"), "application/json");
        http_request_complete(req);
        fake_conn_done(&c);
        http.stopping = false;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_request_lifetime),
                fixture_test(test_stream),
                fixture_test(test_stream_fail),
                fixture_test(test_stream_unread),
                fixture_test(test_hangup_while_suspended),
                fixture_test(test_resume_then_suspend),
                fixture_test(test_refusal_headers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
