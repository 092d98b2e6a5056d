/* test-mcp-http.c: the pure side of the HTTP transports (mcp/mcp-http.h): request-head verdicts
 * and their order, the Host/Origin allow-list, the token compare, media types, protocol
 * versions, session ids, message classification, error bodies, SSE framing, progress. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp-http.h"

static const char *const extra_hosts[] = { "mcp.example.com", "10.0.0.5:8080" };
static const char *const extra_origins[] = { "https://app.example.com" };

static McpHttpPolicy policy(const char *token) {
        return (McpHttpPolicy) {
                .streamable = true,
                .legacy = true,
                .token = token,
                .allowed_hosts = extra_hosts,
                .n_allowed_hosts = 2,
                .allowed_origins = extra_origins,
                .n_allowed_origins = 1,
                .max_body_bytes = 1000,
        };
}

/* A well-formed Streamable HTTP POST; tests change one thing at a time. */
static McpHttpHead post_head(void) {
        return (McpHttpHead) {
                .method = "POST",
                .path = "/mcp",
                .host = "127.0.0.1:8080",
                .accept = "application/json, text/event-stream",
                .content_type = "application/json",
                .has_content_length = true,
                .content_length = 100,
        };
}

static McpHttpVerdict check(const McpHttpPolicy *p, const McpHttpHead *h) {
        McpHttpVerdict v;
        mcp_http_check_head(p, h, &v);
        return v;
}

static void test_host_allow_list(void **state) {
        McpHttpPolicy p = policy(NULL);
        static const char *const ok[] = {
                "localhost", "localhost:8080", "LOCALHOST:1", "127.0.0.1", "127.0.0.1:8080", "127.1.2.3:9",
                "[::1]", "[::1]:8080", "mcp.example.com", "mcp.example.com:443", "10.0.0.5:8080",
        };
        static const char *const no[] = {
                "evil.example.com", "evil.example.com:8080", "localhost.evil.com", "127.0.0.1.evil.com",
                "10.0.0.5:8081", "10.0.0.5", "[::2]:8080", "", ":8080", "mcp.example.com.evil",
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                assert_true(mcp_http_host_allowed(&p, ok[i]));
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                assert_false(mcp_http_host_allowed(&p, no[i]));
        assert_true(mcp_http_host_allowed(&p, NULL));
        p.any_host = true;
        assert_true(mcp_http_host_allowed(&p, "evil.example.com"));
}

static void test_origin_allow_list(void **state) {
        McpHttpPolicy p = policy(NULL);
        static const char *const ok[] = {
                "http://localhost", "http://localhost:3000", "https://127.0.0.1:8443", "http://[::1]:8080",
                "https://app.example.com", "https://APP.example.com", "https://app.example.com/",
        };
        static const char *const no[] = {
                "http://evil.example.com", "null", "file://", "http://localhost.evil.com",
                "http://127.0.0.1@evil.com", "ftp://localhost", "http://app.example.com", "https://app.example.com:444",
                "localhost", "http://localhost/path",
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                assert_true(mcp_http_origin_allowed(&p, ok[i]));
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                assert_false(mcp_http_origin_allowed(&p, no[i]));
        assert_true(mcp_http_origin_allowed(&p, NULL));
        p.any_origin = true;
        assert_true(mcp_http_origin_allowed(&p, "http://evil.example.com"));
}

static void test_token(void **state) {
        const char *t = "s3cret-token";
        assert_true(mcp_http_authorized(NULL, NULL, NULL));
        assert_true(mcp_http_authorized("", NULL, NULL));
        assert_false(mcp_http_authorized(t, NULL, NULL));
        assert_true(mcp_http_authorized(t, "Bearer s3cret-token", NULL));
        assert_true(mcp_http_authorized(t, "bearer   s3cret-token", NULL));
        assert_true(mcp_http_authorized(t, NULL, "s3cret-token"));
        assert_true(mcp_http_authorized(t, NULL, "Bearer s3cret-token"));
        assert_true(mcp_http_authorized(t, "Bearer wrong", "s3cret-token")); /* either header */
        assert_false(mcp_http_authorized(t, "Bearer s3cret-tokem", NULL));   /* last byte off */
        assert_false(mcp_http_authorized(t, "Bearer r3cret-token", NULL));   /* first byte off */
        assert_false(mcp_http_authorized(t, "Bearer s3cret-toke", NULL));    /* one byte short */
        assert_false(mcp_http_authorized(t, "Bearer s3cret-token1", NULL));  /* one byte long */
        assert_false(mcp_http_authorized(t, "s3cret-token", NULL));          /* no scheme */
        assert_false(mcp_http_authorized(t, "Basic s3cret-token", NULL));
        assert_false(mcp_http_authorized(t, "Bearer", NULL));
        assert_false(mcp_http_authorized(t, NULL, "s3cret-tokeN"));
        assert_false(mcp_http_authorized(t, NULL, ""));

        assert_true(mcp_http_secret_equal("abc", 3, "abc", 3));
        assert_false(mcp_http_secret_equal("abd", 3, "abc", 3));
        assert_false(mcp_http_secret_equal("ab", 2, "abc", 3));
        assert_false(mcp_http_secret_equal("abcd", 4, "abc", 3));
        assert_true(mcp_http_secret_equal("", 0, "", 0));
}

static void test_media_types(void **state) {
        assert_true(mcp_http_accepts("application/json, text/event-stream", "application/json"));
        assert_true(mcp_http_accepts("application/json, text/event-stream", "text/event-stream"));
        assert_true(mcp_http_accepts("text/event-stream;q=0.5,application/json", "text/event-stream"));
        assert_true(mcp_http_accepts("*/*", "text/event-stream"));
        assert_true(mcp_http_accepts("application/*", "application/json"));
        assert_true(mcp_http_accepts("APPLICATION/JSON", "application/json"));
        assert_true(mcp_http_accepts(NULL, "application/json"));
        assert_false(mcp_http_accepts("text/html", "application/json"));
        assert_false(mcp_http_accepts("application/json", "text/event-stream"));
        assert_false(mcp_http_accepts("text/*", "application/json"));
        assert_false(mcp_http_accepts("application/json;q=0", "application/json"));
        assert_false(mcp_http_accepts("application/json; q=0.000", "application/json"));
        assert_true(mcp_http_accepts("application/json; q=0.001", "application/json"));
        assert_false(mcp_http_accepts("", "application/json"));
        assert_false(mcp_http_accepts("application/jsonx", "application/json"));

        assert_true(mcp_http_content_type_is_json("application/json"));
        assert_true(mcp_http_content_type_is_json("application/json; charset=utf-8"));
        assert_true(mcp_http_content_type_is_json("Application/JSON"));
        assert_false(mcp_http_content_type_is_json("text/plain"));
        assert_false(mcp_http_content_type_is_json("application/json-seq"));
        assert_false(mcp_http_content_type_is_json(NULL));
}

static void test_protocol_version(void **state) {
        assert_string_equal(mcp_http_protocol_version(NULL), "2025-03-26");
        assert_string_equal(mcp_http_protocol_version("2025-11-25"), "2025-11-25");
        assert_string_equal(mcp_http_protocol_version("2025-06-18"), "2025-06-18");
        assert_null(mcp_http_protocol_version("2026-07-28"));
        assert_null(mcp_http_protocol_version(""));
        assert_null(mcp_http_protocol_version("2025-11-25 "));
}

static void test_session_ids(void **state) {
        uint8_t a[MCP_HTTP_SESSION_ID_BYTES], b[MCP_HTTP_SESSION_ID_BYTES];
        for (size_t i = 0; i < sizeof(a); i++) {
                a[i] = (uint8_t) (i * 37 + 11);
                b[i] = (uint8_t) (255 - i);
        }
        char ia[MCP_HTTP_SESSION_ID_LEN + 1], ib[MCP_HTTP_SESSION_ID_LEN + 1];
        mcp_http_session_id_format(a, sizeof(a), ia);
        mcp_http_session_id_format(b, sizeof(b), ib);
        assert_int_equal(strlen(ia), MCP_HTTP_SESSION_ID_LEN);
        assert_string_not_equal(ia, ib);
        for (size_t i = 0; ia[i]; i++)
                assert_true(ia[i] >= 0x21 && ia[i] <= 0x7e);
        assert_true(mcp_http_session_id_valid(ia));

        uint8_t zero[3] = { 0, 0, 0 }, ff[3] = { 0xff, 0xff, 0xff };
        char z[8];
        mcp_http_session_id_format(zero, 3, z);
        assert_string_equal(z, "AAAA");
        mcp_http_session_id_format(ff, 3, z);
        assert_string_equal(z, "____");

        assert_false(mcp_http_session_id_valid(""));
        assert_false(mcp_http_session_id_valid("abc def"));
        assert_false(mcp_http_session_id_valid("abc\x7f"));
        assert_false(mcp_http_session_id_valid("abc\x01"));
        assert_false(mcp_http_session_id_valid("\xc3\xa9t\xc3\xa9"));
        char longid[MCP_HTTP_SESSION_ID_MAX + 2];
        memset(longid, 'a', sizeof(longid) - 1);
        longid[sizeof(longid) - 1] = '\0';
        assert_false(mcp_http_session_id_valid(longid));
        longid[MCP_HTTP_SESSION_ID_MAX] = '\0';
        assert_true(mcp_http_session_id_valid(longid));
}

static void test_head_order(void **state) {
        McpHttpPolicy p = policy("tok");
        McpHttpHead h = post_head();
        McpHttpVerdict v;

        /* Everything wrong at once: 403 comes first. */
        h.host = "evil.example.com";
        h.method = "PUT";
        h.path = "/nope";
        v = check(&p, &h);
        assert_int_equal(v.next, MCP_HTTP_REJECT);
        assert_int_equal(v.status, 403);
        assert_false(v.www_authenticate);

        h = post_head();
        h.origin = "http://evil.example.com";
        v = check(&p, &h);
        assert_int_equal(v.status, 403);

        /* Then the token. */
        h = post_head();
        h.path = "/nope";
        v = check(&p, &h);
        assert_int_equal(v.status, 401);
        assert_true(v.www_authenticate);
        assert_null(strstr(v.message, "tok\""));

        /* Then the path. */
        h.authorization = "Bearer tok";
        v = check(&p, &h);
        assert_int_equal(v.status, 404);

        /* Then the method. */
        h = post_head();
        h.x_mcp_auth = "tok";
        h.method = "GET";
        v = check(&p, &h);
        assert_int_equal(v.status, 405);
        assert_string_equal(v.allow, "POST, DELETE");
        h.method = "PATCH";
        v = check(&p, &h);
        assert_int_equal(v.status, 405);
        assert_non_null(v.allow);

        /* A good request. */
        h = post_head();
        h.authorization = "Bearer tok";
        v = check(&p, &h);
        assert_int_equal(v.next, MCP_HTTP_MCP_POST);
        assert_int_equal(v.endpoint, MCP_HTTP_EP_MCP);
        assert_string_equal(v.protocol_version, "2025-03-26");
}

static void test_head_statuses(void **state) {
        McpHttpPolicy p = policy(NULL);
        McpHttpHead h;
        McpHttpVerdict v;

        h = post_head();
        h.content_length = 1001;
        v = check(&p, &h);
        assert_int_equal(v.status, 413);
        h.content_length = 1000;
        assert_int_equal(check(&p, &h).next, MCP_HTTP_MCP_POST);

        h = post_head();
        h.content_type = "text/plain";
        assert_int_equal(check(&p, &h).status, 415);
        h.content_type = NULL;
        assert_int_equal(check(&p, &h).status, 415);

        h = post_head();
        h.accept = "application/json";
        assert_int_equal(check(&p, &h).status, 406);
        h.accept = NULL;
        assert_int_equal(check(&p, &h).status, 406);
        h.accept = "text/event-stream";
        assert_int_equal(check(&p, &h).status, 406);

        h = post_head();
        h.protocol_version = "2026-07-28";
        v = check(&p, &h);
        assert_int_equal(v.status, 400);
        assert_int_equal(v.rpc_code, -32000);
        assert_non_null(strstr(v.message, "2026-07-28"));
        h.protocol_version = "2025-06-18";
        v = check(&p, &h);
        assert_int_equal(v.next, MCP_HTTP_MCP_POST);
        assert_string_equal(v.protocol_version, "2025-06-18");

        h = post_head();
        h.session_id = "bad id";
        v = check(&p, &h);
        assert_int_equal(v.status, 404);
        assert_int_equal(v.rpc_code, -32001);

        h = post_head();
        h.method = "DELETE";
        assert_int_equal(check(&p, &h).status, 400);
        h.session_id = "abc";
        assert_int_equal(check(&p, &h).next, MCP_HTTP_MCP_DELETE);

        /* Legacy endpoints. */
        h = (McpHttpHead) { .method = "GET", .path = "/sse", .host = "localhost:1", .accept = "text/event-stream" };
        assert_int_equal(check(&p, &h).next, MCP_HTTP_SSE_OPEN);
        h.accept = "application/json";
        assert_int_equal(check(&p, &h).status, 406);
        h.accept = NULL;
        assert_int_equal(check(&p, &h).next, MCP_HTTP_SSE_OPEN);
        h.method = "POST";
        v = check(&p, &h);
        assert_int_equal(v.status, 405);
        assert_string_equal(v.allow, "GET");

        h = (McpHttpHead) { .method = "POST", .path = "/messages", .host = "localhost:1",
                            .content_type = "application/json" };
        assert_int_equal(check(&p, &h).status, 400);
        h.query_session_id = "abc";
        assert_int_equal(check(&p, &h).next, MCP_HTTP_MESSAGES_POST);
        h.method = "GET";
        v = check(&p, &h);
        assert_int_equal(v.status, 405);
        assert_string_equal(v.allow, "POST");

        /* MCP_EXEC_TRANSPORT=sse: /mcp does not exist. */
        p.streamable = false;
        h = post_head();
        assert_int_equal(check(&p, &h).status, 404);
}

static void test_classify(void **state) {
        McpHttpMessageInfo i;
#define C(s) assert_int_equal(mcp_http_message_classify(s, strlen(s), &i), 0)
        C("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
        assert_int_equal(i.kind, MCP_HTTP_MSG_REQUEST);
        assert_true(i.is_initialize);
        C("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"server/discover\"}");
        assert_int_equal(i.kind, MCP_HTTP_MSG_REQUEST);
        assert_false(i.is_initialize);
        C("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        assert_int_equal(i.kind, MCP_HTTP_MSG_NOTIFICATION);
        C("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
        assert_int_equal(i.kind, MCP_HTTP_MSG_RESPONSE);
        C("not json");
        assert_int_equal(i.kind, MCP_HTTP_MSG_INVALID);
        C("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
        assert_int_equal(i.kind, MCP_HTTP_MSG_INVALID);
        C("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}");
        assert_int_equal(i.kind, MCP_HTTP_MSG_INVALID);
        C("42");
        assert_int_equal(i.kind, MCP_HTTP_MSG_INVALID);
        C("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}");
        assert_int_equal(i.kind, MCP_HTTP_MSG_INVALID);
        /* A number jansson cannot hold as an integer does not hide the request. */
        C("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"x\":99999999999999999999}}");
        assert_int_equal(i.kind, MCP_HTTP_MSG_REQUEST);
        assert_int_equal(mcp_http_message_classify("", 0, &i), 0);
        assert_int_equal(i.kind, MCP_HTTP_MSG_INVALID);
#undef C
}

static void test_error_body(void **state) {
        char *b = mcp_http_error_body(-32000, "Bad Request: \"x\"");
        assert_non_null(b);
        assert_string_equal(b, "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Bad Request: \\\"x\\\"\"},\"id\":null}");
        free(b);
}

static void test_sse(void **state) {
        Buf b = {};
        assert_int_equal(mcp_http_sse_event(&b, "message", "{\"a\":1}", 7), 0);
        assert_string_equal(b.data, "event: message\ndata: {\"a\":1}\n\n");
        b.len = 0;
        /* A payload cannot end the event or forge another one. */
        const char *evil = "x\n\nevent: endpoint\r\ndata: /evil\ry";
        assert_int_equal(mcp_http_sse_event(&b, NULL, evil, strlen(evil)), 0);
        assert_string_equal(b.data, "data: x\ndata: \ndata: event: endpoint\ndata: data: /evil\ndata: y\n\n");
        b.len = 0;
        assert_int_equal(mcp_http_sse_event(&b, "endpoint", "", 0), 0);
        assert_string_equal(b.data, "event: endpoint\ndata: \n\n");
        b.len = 0;
        assert_int_equal(mcp_http_sse_comment(&b, "keep-alive"), 0);
        assert_string_equal(b.data, ": keep-alive\n\n");
        buf_done(&b);
}

static void test_progress(void **state) {
        char *n = mcp_http_progress_new("\"tok\"", 2, 30, "2 s");
        assert_non_null(n);
        assert_string_equal(n, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
                               "{\"progressToken\":\"tok\",\"progress\":2,\"total\":30,\"message\":\"2 s\"}}");
        free(n);
        n = mcp_http_progress_new("7", 0, 0, NULL);
        assert_non_null(n);
        assert_string_equal(n, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
                               "{\"progressToken\":7,\"progress\":0}}");
        free(n);
        assert_null(mcp_http_progress_new("not json", 1, 1, NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_host_allow_list),
                cmocka_unit_test(test_origin_allow_list),
                cmocka_unit_test(test_token),
                cmocka_unit_test(test_media_types),
                cmocka_unit_test(test_protocol_version),
                cmocka_unit_test(test_session_ids),
                cmocka_unit_test(test_head_order),
                cmocka_unit_test(test_head_statuses),
                cmocka_unit_test(test_classify),
                cmocka_unit_test(test_error_body),
                cmocka_unit_test(test_sse),
                cmocka_unit_test(test_progress),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
