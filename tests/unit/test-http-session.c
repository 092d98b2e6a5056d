/* test-http-session.c: the HTTP sessions (http-session.c) against a fake libmicrohttpd (fake-mhd.h)
 * and the scheduler's fake runs (unit-fakes.h): initialize makes and registers a session, a POST
 * without one is refused, what each message is answered with, a call's request waiting for its
 * answer (or its run cancelled when the request goes), the session limit and which session makes
 * room, closing, the legacy session's event stream, a 2026 request standing alone, and whose
 * sessions and tasks are (the tenant of the request that made them). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "fake-mhd.h"
#include "http-internal.h"
#include "ring.h"
#include "scheduler.h"
#include "unit-fakes.h"
#include "unit-fixture.h"

#define INIT "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"," \
             "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"
#define PING "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"
#define LIST "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}"
#define INITIALIZED "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"
#define EXEC(code) \
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\"," \
        "\"arguments\":{\"code\":\"" code "\"}}}"

static Ring *ring;
static Scheduler sched;
static McpServer *template;
static Http http;

static int setup(void **state) {
        fakes_reset();
        fake_http_setup(&http, &ring, &sched, &template, 2);
        return 0;
}

static int teardown(void **state) {
        fake_http_done(&http);
        fakes_reset();
        fake_http_teardown(&ring, &sched, &template);
        return 0;
}

/* One POST to /mcp on session s (or none): its request, answered or waiting, still open. */
static HttpRequest *post(FakeConn *c, HttpSession *s, const char *body) {
        fake_conn_init(c, -1);
        HttpRequest *req = fake_request(&http, c, s, body);
        assert_int_equal(http_session_handle_mcp_post(req), MHD_YES);
        return req;
}

/* The same, completed once answered: the status it got. */
static unsigned post_done(HttpSession *s, const char *body, char **ret_body) {
        FakeConn c;
        HttpRequest *req = post(&c, s, body);
        assert_int_equal(c.n_queued, 1);
        http_request_complete(req);
        unsigned status = c.status;
        if (ret_body)
                *ret_body = TAKE_PTR(c.body);
        fake_conn_done(&c);
        return status;
}

/* A registered session, initialized. */
static HttpSession *session_open(void) {
        FakeConn c;
        HttpRequest *req = post(&c, NULL, INIT);
        assert_int_equal(c.status, 200);
        const char *id = fake_conn_response_header(&c, "Mcp-Session-Id");
        assert_non_null(id);
        HttpSession *s = http_session_find(&http, id, false, "");
        assert_non_null(s);
        http_request_complete(req);
        fake_conn_done(&c);
        return s;
}

static void test_initialize_registers(void **state) {
        HttpSession *s = session_open();
        assert_int_equal(http.n_sessions, 1);
        assert_int_equal(strlen(s->id), MCP_HTTP_SESSION_ID_LEN);
        assert_null(http_session_find(&http, s->id, true, "")); /* not a legacy session's id */
        assert_int_equal(s->refs, 1);                       /* the table's, the request's gone */
        HttpSession *t = session_open();
        assert_true(strcmp(s->id, t->id) != 0);
}

static void test_no_session(void **state) {
        _cleanup_free_ char *body = NULL;
        assert_int_equal(post_done(NULL, PING, &body), 400);
        assert_non_null(strstr(body, "No valid session ID provided"));
        assert_int_equal(http.n_sessions, 0);
        /* An initialize that fails leaves no session either. */
        free(TAKE_PTR(body));
        assert_int_equal(post_done(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", &body),
                         400);
        assert_int_equal(http.n_sessions, 0);
}

static void test_messages(void **state) {
        HttpSession *s = session_open();
        _cleanup_free_ char *body = NULL;
        assert_int_equal(post_done(s, PING, &body), 200);
        _cleanup_(json_decrefp) json_t *j = json_loads(body, 0, NULL);
        assert_int_equal(json_integer_value(json_object_get(j, "id")), 2);
        assert_false(s->worked); /* ping is no work: the session may still be ended for room */
        assert_int_equal(post_done(s, INITIALIZED, NULL), 202);
        assert_int_equal(post_done(s, LIST, NULL), 200);
        assert_true(s->worked);
}

/* A call's request waits (suspended) for its answer, which resumes it. */
static void test_call_waits(void **state) {
        HttpSession *s = session_open();
        FakeConn c;
        HttpRequest *req = post(&c, s, EXEC("x"));
        assert_int_equal(c.n_queued, 0);
        assert_true(c.suspended);
        assert_true(req->waiting);
        assert_int_equal(http.n_calls, 1);
        assert_int_equal(s->refs, 3); /* the table's, the request's, the call's */
        assert_int_equal(n_fakes, 1);
        fake_end_with(0, "out", 0, "");
        assert_true(req->reply_ready);
        assert_false(c.suspended);
        assert_int_equal(http.n_calls, 0);
        assert_int_equal(s->refs, 2);
        _cleanup_(json_decrefp) json_t *j = json_loads(req->reply, 0, NULL);
        json_t *sc = json_object_get(json_object_get(j, "result"), "structuredContent");
        assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "out");
        http_request_complete(req);
        fake_conn_done(&c);
}

/* A request that ends before its answer takes its run with it: nobody could receive the answer. */
static void test_call_cancelled_with_its_request(void **state) {
        HttpSession *s = session_open();
        FakeConn c;
        HttpRequest *req = post(&c, s, EXEC("x"));
        assert_int_equal(n_fakes, 1);
        http_request_complete(req);
        assert_true(fakes[0].killed);
        fake_end(0);
        assert_int_equal(http.n_calls, 0);
        assert_int_equal(s->refs, 1);
        fake_conn_done(&c);
}

/* At MCP_EXEC_MAX_SESSIONS a new session ends the least recently used one that never worked; if
 * every one has worked, the new one is refused (503, Retry-After). */
static void test_make_room(void **state) {
        HttpSession *a = session_open(), *b = session_open();
        a->last_used_usec = 1; /* the older */
        char a_id[sizeof(a->id)];
        strcpy(a_id, a->id);
        HttpSession *c = session_open();
        assert_null(http_session_find(&http, a_id, false, ""));
        assert_int_equal(http.n_sessions, 2);
        assert_non_null(http_session_find(&http, b->id, false, ""));
        assert_int_equal(post_done(b, LIST, NULL), 200);
        assert_int_equal(post_done(c, LIST, NULL), 200);

        FakeConn conn;
        HttpRequest *req = post(&conn, NULL, INIT);
        assert_int_equal(conn.status, 503);
        assert_non_null(fake_conn_response_header(&conn, "Retry-After"));
        http_request_complete(req);
        fake_conn_done(&conn);
        assert_int_equal(http.n_sessions, 2);
}

/* Closing a session cancels its calls; it is not found any more, and a request still holding it
 * gets 404. */
static void test_close(void **state) {
        HttpSession *s = session_open();
        FakeConn c;
        HttpRequest *req = post(&c, s, EXEC("x"));
        http_session_close(s, "deleted by the test");
        assert_true(fakes[0].killed);
        assert_null(http_session_find(&http, s->id, false, ""));
        assert_int_equal(http.n_sessions, 0);
        assert_non_null(http.closed); /* held by the request and the call */
        fake_end(0);
        http_request_complete(req);
        fake_conn_done(&c);

        s = session_open();
        FakeConn c2;
        fake_conn_init(&c2, -1);
        HttpRequest *late = fake_request(&http, &c2, s, PING);
        http_session_close(s, "expired while the body was read");
        assert_int_equal(http_session_handle_mcp_post(late), MHD_YES);
        assert_int_equal(c2.status, 404);
        http_request_complete(late);
        fake_conn_done(&c2);
}

/* A legacy session answers on its event stream; its POSTs get 202 "Accepted". */
static void test_legacy_stream(void **state) {
        HttpSession *s = http_session_new(&http, true, "");
        assert_non_null(s);
        http_session_register(s);
        FakeConn sc;
        fake_conn_init(&sc, -1);
        HttpRequest *stream = fake_request(&http, &sc, s, NULL);
        http_session_unref(s); /* the table's and the stream's are left */
        assert_int_equal(http_respond_stream(stream), MHD_YES);
        s->stream = stream;

        FakeConn c;
        fake_conn_init(&c, -1);
        HttpRequest *req = fake_request(&http, &c, s, INIT);
        assert_int_equal(http_session_handle_messages_post(req), MHD_YES);
        assert_int_equal(c.status, 202);
        assert_string_equal(c.body, "Accepted");
        http_request_complete(req);
        fake_conn_done(&c);

        char buf[4096];
        ssize_t n = sc.reader(sc.reader_cls, 0, buf, sizeof(buf) - 1);
        assert_true(n > 0);
        buf[n] = '\0';
        assert_true(strncmp(buf, "event: message\ndata: {", 22) == 0);
        assert_non_null(strstr(buf, "\"serverInfo\""));
        /* The stream's end takes its session along. */
        http_request_complete(stream);
        assert_int_equal(http.n_sessions, 0);
        fake_conn_done(&sc);
}

#define MODERN_LIST                                                                                            \
        "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":{\"_meta\":{"                         \
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}"

/* A POST made by tenant who (its request's verdict, as mcp_http_check_head() leaves it). */
static HttpRequest *post_as(FakeConn *c, HttpSession *s, const char *body, const char *who) {
        HttpRequest *req = fake_request(&http, c, s, body);
        snprintf(req->verdict.principal, sizeof(req->verdict.principal), "%s", who);
        assert_int_equal(http_session_handle_mcp_post(req), MHD_YES);
        return req;
}

/* A 2026-07-28 client's tools/list on c (opened here), with its headers, from who on s (NULL: no
 * session); handled. */
static HttpRequest *modern_list(FakeConn *c, HttpSession *s, const char *who) {
        fake_conn_init(c, -1);
        fake_conn_set_header(c, "MCP-Protocol-Version", "2026-07-28");
        fake_conn_set_header(c, "Mcp-Method", "tools/list");
        return post_as(c, s, MODERN_LIST, who);
}

/* A 2026-07-28 request stands alone: answered, with no session issued or kept; a 2025 session's id
 * on one is refused. */
static void test_modern_stands_alone(void **state) {
        FakeConn c;
        HttpRequest *req = modern_list(&c, NULL, "");
        assert_int_equal(c.status, 200);
        assert_null(fake_conn_response_header(&c, "Mcp-Session-Id"));
        assert_non_null(strstr(c.body, "\"tools\""));
        assert_int_equal(http.n_sessions, 0);
        http_request_complete(req);
        fake_conn_done(&c);

        HttpSession *s = session_open();
        req = modern_list(&c, s, "");
        assert_int_equal(c.status, 400);
        assert_non_null(strstr(c.body, "2025 era"));
        http_request_complete(req);
        fake_conn_done(&c);
}

/* A room for calls naming a session: it keeps the call it is given, to look at, and answers it
 * when told (as pysession.c would, later). */
static McpCall *kept_call;
static void *kept_owner;
static JobReplyFn kept_reply;
static int keep_submit(void *userdata, McpCall *call, void *owner, JobReplyFn reply) {
        kept_call = call, kept_owner = owner, kept_reply = reply;
        return 0;
}
static const RouteVTable keep_room = {
        .name = "keep",
        .serves = { [MCP_TOOL_EXEC] = ROUTE_SESSION },
        .submit = keep_submit,
};

#define SESSION_EXEC \
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\"," \
        "\"arguments\":{\"code\":\"x\",\"session\":\"i1-00000000000000000000000000000000\"}}}"

/* The load balancer's word on how much of the body it read (mcp.h): a decimal below the body's
 * length, else nothing (it words one error only, so a bad value is ignored, not refused). */
static void test_lb_body_read(void **state) {
        assert_int_equal(scheduler_route(&sched, &keep_room, NULL), 0);
        HttpSession *s = session_open();
        const size_t len = strlen(SESSION_EXEC);
        char under[32], at[32];
        snprintf(under, sizeof(under), "%zu", len - 1);
        snprintf(at, sizeof(at), "%zu", len);
        const struct {
                const char *value; /* NULL: no header */
                bool partial;
                uint64_t read;
        } cases[] = {
                { NULL, false, 0 }, { "10", true, 10 }, { "0", true, 0 }, { under, true, len - 1 },
                { at, false, 0 }, { "99999999", false, 0 }, { "abc", false, 0 }, { "-1", false, 0 },
                { " 10", false, 0 }, { "10 ", false, 0 }, { "", false, 0 }, { "99999999999999999999999", false, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                FakeConn c;
                fake_conn_init(&c, -1);
                if (cases[i].value)
                        fake_conn_set_header(&c, MCP_LB_BODY_READ_HEADER, cases[i].value);
                HttpRequest *req = fake_request(&http, &c, s, SESSION_EXEC);
                assert_int_equal(http_session_handle_mcp_post(req), MHD_YES);
                assert_non_null(kept_call);
                uint64_t read = UINT64_MAX, size = 0;
                assert_int_equal(mcp_call_lb_body_partial(kept_call, &read, &size), cases[i].partial);
                if (cases[i].partial) {
                        assert_int_equal(read, cases[i].read);
                        assert_int_equal(size, len);
                }
                McpCall *call = TAKE_PTR(kept_call);
                kept_reply(kept_owner, mcp_call_reply_oom(call));
                mcp_call_free(call);
                http_request_complete(req);
                fake_conn_done(&c);
        }
}

/* Issue 31.5: a 2025 session is the tenant's that opened it: another tenant (or a request without
 * one) does not find it, its calls carry the tenant's name, and a 2026 request's tasks are its
 * tenant's. */
static void test_tenant_owns(void **state) {
        assert_int_equal(scheduler_route(&sched, &keep_room, NULL), 0);
        FakeConn c;
        fake_conn_init(&c, -1);
        HttpRequest *req = post_as(&c, NULL, INIT, "alpha");
        assert_int_equal(c.status, 200);
        _cleanup_free_ char *id = strdup(fake_conn_response_header(&c, "Mcp-Session-Id"));
        http_request_complete(req);
        fake_conn_done(&c);
        HttpSession *s = http_session_find(&http, id, false, "alpha");
        assert_non_null(s);
        assert_string_equal(s->principal, "alpha");
        assert_string_equal(s->dispatch.owner + strlen("session:"), s->id); /* its tasks are its own */
        assert_null(http_session_find(&http, id, false, "beta"));
        assert_null(http_session_find(&http, id, false, ""));
        assert_null(http_session_find(&http, id, false, "alph"));

        fake_conn_init(&c, -1);
        req = post_as(&c, s, SESSION_EXEC, "alpha");
        assert_non_null(kept_call);
        assert_string_equal(mcp_call_principal(kept_call), "alpha");
        McpCall *call = TAKE_PTR(kept_call);
        kept_reply(kept_owner, mcp_call_reply_oom(call));
        mcp_call_free(call);
        http_request_complete(req);
        fake_conn_done(&c);

        req = modern_list(&c, NULL, "beta");
        assert_int_equal(c.status, 200);
        assert_string_equal(req->session->principal, "beta");
        assert_string_equal(req->session->dispatch.owner, "tenant:beta");
        http_request_complete(req);
        fake_conn_done(&c);
        req = modern_list(&c, NULL, "");
        assert_string_equal(req->session->dispatch.owner, "loopback");
        http_request_complete(req);
        fake_conn_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_initialize_registers),
                fixture_test(test_no_session),
                fixture_test(test_messages),
                fixture_test(test_call_waits),
                fixture_test(test_call_cancelled_with_its_request),
                fixture_test(test_make_room),
                fixture_test(test_close),
                fixture_test(test_legacy_stream),
                fixture_test(test_modern_stands_alone),
                fixture_test(test_lb_body_read),
                fixture_test(test_tenant_owns),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
