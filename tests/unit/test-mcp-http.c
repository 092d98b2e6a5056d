/* test-mcp-http.c: the pure side of the HTTP transports (mcp/mcp-http.h): request-head verdicts
 * and their order, the Host/Origin allow-list, the token compare, media types, protocol
 * versions, session ids, message classification, error bodies, SSE framing, progress, RFC 9112
 * framing, the refusals decided after the head and the status of an answered POST. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cleanup.h"
#include "mcp-http.h"
#include "str-util.h"
#include "mcp.h"

static const char *const extra_hosts[] = { "mcp.example.com", "10.0.0.5:8080" };
static const char *const extra_origins[] = { "https://app.example.com" };

/* The daemon's authenticator hashes and looks up tenants (daemon/tenant/); here one token is the
 * tenant "alice", compared as a secret. */
static const char *token_auth(void *userdata, const char *credential, size_t len, McpHttpAuthFailure *fail) {
        const char *token = userdata;
        return str_secret_equal(credential, len, token, strlen(token)) ? "alice" : NULL;
}

/* Two tenants, and a third whose name is longer than a principal may be. */
static const char *tenants_auth(void *userdata, const char *credential, size_t len, McpHttpAuthFailure *fail) {
        static const struct { const char *token, *name; } tenants[] = {
                { "tok-a", "alpha" },
                { "tok-b", "beta" },
                { "tok-long", "a-name-longer-than-thirty-two-bytes" },
        };
        for (size_t i = 0; i < ELEMENTSOF(tenants); i++)
                if (str_secret_equal(credential, len, tenants[i].token, strlen(tenants[i].token)))
                        return tenants[i].name;
        return NULL;
}

static McpHttpPolicy policy(const char *token) {
        return (McpHttpPolicy) {
                .streamable = true,
                .legacy = true,
                .authenticate = token ? token_auth : NULL,
                .auth_userdata = (void *) token,
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

/* h, sent with this method instead, is refused 405 with this Allow header. */
static void assert_not_allowed(const McpHttpPolicy *p, McpHttpHead h, const char *method, const char *allow) {
        h.method = method;
        McpHttpVerdict v = check(p, &h);
        assert_int_equal(v.status, 405);
        assert_string_equal(v.allow, allow);
}

/* allowed() admits each of ok, none of no, and a request without the header (NULL). */
static void check_allow_list(bool (*allowed)(const McpHttpPolicy *p, const char *value),
                             const McpHttpPolicy *p, const char *const *ok, size_t n_ok,
                             const char *const *no, size_t n_no) {
        for (size_t i = 0; i < n_ok; i++)
                if (!allowed(p, ok[i]))
                        fail_msg("\"%s\" should be allowed", ok[i]);
        for (size_t i = 0; i < n_no; i++)
                if (allowed(p, no[i]))
                        fail_msg("\"%s\" should be refused", no[i]);
        assert_true(allowed(p, NULL));
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
        check_allow_list(mcp_http_host_allowed, &p, ok, ELEMENTSOF(ok), no, ELEMENTSOF(no));
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
        check_allow_list(mcp_http_origin_allowed, &p, ok, ELEMENTSOF(ok), no, ELEMENTSOF(no));
        p.any_origin = true;
        assert_true(mcp_http_origin_allowed(&p, "http://evil.example.com"));
}

/* Who the request is, by policy(t)'s authenticator. */
static const char *who(const char *t, const char *authorization, const char *x_mcp_auth) {
        McpHttpPolicy p = policy(t);
        return mcp_http_authenticate(&p, authorization, x_mcp_auth, NULL);
}

static void test_token(void **state) {
        const char *t = "s3cret-token";
        assert_string_equal(who(NULL, NULL, NULL), ""); /* no authentication: nobody in particular */
        assert_string_equal(who(NULL, "Bearer anything", NULL), "");
        /* an empty token admits nobody, not everybody (config refuses one before it gets here) */
        assert_null(who("", NULL, NULL));
        assert_null(who("", "Bearer ", NULL));
        assert_null(who("", NULL, ""));
        assert_null(who(t, NULL, NULL));
        assert_string_equal(who(t, "Bearer s3cret-token", NULL), "alice");
        assert_string_equal(who(t, "bearer   s3cret-token", NULL), "alice");
        assert_string_equal(who(t, "Bearer s3cret-token \t", NULL), "alice"); /* trailing white space */
        assert_string_equal(who(t, NULL, "s3cret-token"), "alice");
        assert_string_equal(who(t, NULL, "Bearer s3cret-token"), "alice");
        assert_string_equal(who(t, "Bearer wrong", "s3cret-token"), "alice"); /* either header */
        assert_null(who(t, "Bearer s3cret-tokem", NULL));   /* last byte off */
        assert_null(who(t, "Bearer r3cret-token", NULL));   /* first byte off */
        assert_null(who(t, "Bearer s3cret-toke", NULL));    /* one byte short */
        assert_null(who(t, "Bearer s3cret-token1", NULL));  /* one byte long */
        assert_null(who(t, "s3cret-token", NULL));          /* no scheme */
        assert_null(who(t, "Basic s3cret-token", NULL));
        assert_null(who(t, "Bearer", NULL));
        assert_null(who(t, NULL, "s3cret-tokeN"));
        assert_null(who(t, NULL, ""));

        /* Tenants: the credential names one; a name longer than a principal may be admits nobody
         * (it would be cut, and a cut name could be another tenant's). */
        McpHttpPolicy p = policy(NULL);
        p.authenticate = tenants_auth;
        assert_string_equal(mcp_http_authenticate(&p, "Bearer tok-a", NULL, NULL), "alpha");
        assert_string_equal(mcp_http_authenticate(&p, "Bearer tok-b", NULL, NULL), "beta");
        assert_string_equal(mcp_http_authenticate(&p, "Bearer tok-c", "tok-b", NULL), "beta");
        assert_string_equal(mcp_http_authenticate(&p, "Bearer tok-a", "tok-b", NULL), "alpha"); /* Authorization first */
        assert_null(mcp_http_authenticate(&p, "Bearer tok-long", NULL, NULL));
        assert_null(mcp_http_authenticate(&p, "Bearer tok-", NULL, NULL));
        McpHttpHead h = {
                .method = "POST", .path = "/mcp", .host = "localhost:8080", .authorization = "Bearer tok-b",
                .accept = "application/json, text/event-stream", .content_type = "application/json",
        };
        McpHttpVerdict v;
        mcp_http_check_head(&p, &h, &v);
        assert_int_equal(v.next, MCP_HTTP_MCP_POST);
        assert_string_equal(v.principal, "beta");
        h.authorization = "Bearer tok-long";
        mcp_http_check_head(&p, &h, &v);
        assert_int_equal(v.status, 401);
        assert_string_equal(v.principal, "");
        p.authenticate = NULL;
        h.authorization = NULL;
        mcp_http_check_head(&p, &h, &v);
        assert_int_equal(v.next, MCP_HTTP_MCP_POST);
        assert_string_equal(v.principal, "");

        assert_true(str_secret_equal("abc", 3, "abc", 3));
        assert_false(str_secret_equal("abd", 3, "abc", 3));
        assert_false(str_secret_equal("ab", 2, "abc", 3));
        assert_false(str_secret_equal("abcd", 4, "abc", 3));
        assert_true(str_secret_equal("", 0, "", 0));
}

/* What an Accept header admits of the two types a POST must accept (mcp_http_check_head() asks
 * about both), and which Content-Type is JSON. */
static void test_media_types(void **state) {
        static const struct {
                const char *accept;
                bool json, event_stream;
        } accepts[] = {
                { "application/json, text/event-stream", true, true },
                { "text/event-stream;q=0.5,application/json", true, true },
                { "*/*", true, true },
                { "application/*", true, false },
                { "text/*", false, true },
                { "APPLICATION/JSON", true, false },
                { NULL, true, true },
                { "text/html", false, false },
                { "application/json", true, false },
                { "application/json;q=0", false, false },
                { "application/json; q=0.000", false, false },
                { "application/json; q=0.001", true, false },
                { "", false, false },
                { "application/jsonx", false, false },
        };
        for (size_t i = 0; i < ELEMENTSOF(accepts); i++)
                if (mcp_http_accepts(accepts[i].accept, "application/json") != accepts[i].json ||
                    mcp_http_accepts(accepts[i].accept, "text/event-stream") != accepts[i].event_stream)
                        fail_msg("Accept: %s should %s application/json and %s text/event-stream",
                                 accepts[i].accept ?: "(none)", accepts[i].json ? "admit" : "refuse",
                                 accepts[i].event_stream ? "admit" : "refuse");

        static const struct {
                const char *content_type;
                bool want;
        } types[] = {
                { "application/json", true },      { "application/json; charset=utf-8", true },
                { "Application/JSON", true },      { "text/plain", false },
                { "application/json-seq", false }, { NULL, false },
        };
        for (size_t i = 0; i < ELEMENTSOF(types); i++)
                if (mcp_http_content_type_is_json(types[i].content_type) != types[i].want)
                        fail_msg("Content-Type: %s should %sbe JSON", types[i].content_type ?: "(none)",
                                 types[i].want ? "" : "not ");
}

/* The version a request's MCP-Protocol-Version header names; NULL: one the server does not speak. */
static void test_protocol_version(void **state) {
        static const struct {
                const char *header, *want;
        } cases[] = {
                { NULL, "2025-03-26" }, /* what no header means */
                { "2025-11-25", "2025-11-25" },
                { "2025-06-18", "2025-06-18" },
                { "2026-07-28", "2026-07-28" },
                { "2099-01-01", NULL },
                { "", NULL },
                { "2025-11-25 ", NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *got = mcp_http_protocol_version(cases[i].header);
                if (!cases[i].want)
                        assert_null(got);
                else
                        assert_string_equal(got, cases[i].want);
        }
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

        assert_false(v.token_wrong);
        assert_non_null(strstr(v.message, MCP_HTTP_STATIC_TOKEN_HINT));
        h.x_mcp_auth = "tok1";
        v = check(&p, &h);
        assert_int_equal(v.status, 401);
        assert_true(v.token_wrong);
        h.x_mcp_auth = NULL;

        /* OAuth's discovery and registration paths, with or without a token, get an OAuth error whose
         * description says what to send: 404 for metadata, 400 for an endpoint; not their look-alikes. */
        static const struct {
                const char *path;
                unsigned status;
        } oauth[] = {
                { "/.well-known/oauth-protected-resource", 404 }, { "/.well-known/oauth-protected-resource/mcp", 404 },
                { "/.well-known/oauth-authorization-server", 404 }, { "/.well-known/openid-configuration", 404 },
                { "/register", 400 }, { "/token", 400 }, { "/authorize", 400 },
                { "/registered", 401 }, { "/tokens", 401 }, { "/.well-known/other", 401 },
        };
        for (size_t i = 0; i < sizeof(oauth) / sizeof(oauth[0]); i++) {
                McpHttpHead o = post_head();
                o.path = oauth[i].path;
                v = check(&p, &o);
                assert_int_equal(v.status, oauth[i].status);
                if (oauth[i].status == 401)
                        continue;
                assert_string_equal(v.oauth_error, "invalid_request");
                assert_string_equal(v.message, MCP_HTTP_STATIC_TOKEN_HINT);
                assert_false(v.www_authenticate);
        }
        /* Without a token configured they are paths like any other. */
        McpHttpPolicy open = policy(NULL);
        McpHttpHead r = post_head();
        r.path = "/register";
        v = check(&open, &r);
        assert_int_equal(v.status, 404);
        assert_null(v.oauth_error);

        /* Then the path. */
        h.authorization = "Bearer tok";
        v = check(&p, &h);
        assert_int_equal(v.status, 404);

        /* Then the method. */
        h = post_head();
        h.x_mcp_auth = "tok";
        assert_not_allowed(&p, h, "GET", "POST, DELETE");
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

        /* A version we do not know: the body decides (a 2026-era one names its version there and
         * gets -32022), any other body the 400 of mcp_http_refuse_version(). */
        h = post_head();
        h.protocol_version = "2099-01-01";
        v = check(&p, &h);
        assert_int_equal(v.next, MCP_HTTP_MCP_POST);
        assert_true(v.version_deferred);
        mcp_http_refuse_version(h.protocol_version, &v);
        assert_int_equal(v.status, 400);
        assert_int_equal(v.rpc_code, -32000);
        assert_non_null(strstr(v.message, "2099-01-01"));
        h.protocol_version = "2026-07-28";
        v = check(&p, &h);
        assert_int_equal(v.next, MCP_HTTP_MCP_POST);
        assert_false(v.version_deferred);
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
        assert_not_allowed(&p, h, "POST", "GET");

        h = (McpHttpHead) { .method = "POST", .path = "/messages", .host = "localhost:1",
                            .content_type = "application/json" };
        assert_int_equal(check(&p, &h).status, 400);
        h.query_session_id = "abc";
        assert_int_equal(check(&p, &h).next, MCP_HTTP_MESSAGES_POST);
        assert_not_allowed(&p, h, "GET", "POST");

        /* MCP_EXEC_TRANSPORT=sse: /mcp does not exist. */
        p.streamable = false;
        h = post_head();
        assert_int_equal(check(&p, &h).status, 404);
}

static void test_classify(void **state) {
        static const struct {
                const char *body;
                McpHttpMessageKind kind;
                bool is_initialize, is_ping;
        } cases[] = {
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
                  MCP_HTTP_MSG_REQUEST, true, false },
                { "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"server/discover\"}",
                  MCP_HTTP_MSG_REQUEST, false, false },
                { "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", MCP_HTTP_MSG_REQUEST, false, true },
                { "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
                  MCP_HTTP_MSG_NOTIFICATION },
                { "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", MCP_HTTP_MSG_RESPONSE },
                { "not json", MCP_HTTP_MSG_INVALID },
                { "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", MCP_HTTP_MSG_INVALID },
                { "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MCP_HTTP_MSG_INVALID },
                { "42", MCP_HTTP_MSG_INVALID },
                { "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MCP_HTTP_MSG_INVALID },
                /* A number jansson cannot hold as an integer does not hide the request. */
                { "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
                  "\"params\":{\"x\":99999999999999999999}}",
                  MCP_HTTP_MSG_REQUEST },
                { "", MCP_HTTP_MSG_INVALID },
        };
        for (size_t k = 0; k < ELEMENTSOF(cases); k++) {
                McpHttpMessageInfo i;
                assert_int_equal(mcp_http_message_classify(cases[k].body, strlen(cases[k].body), &i), 0);
                if (i.kind != cases[k].kind)
                        fail_msg("%s: kind %d, expected %d", cases[k].body, i.kind, cases[k].kind);
                if (cases[k].kind == MCP_HTTP_MSG_REQUEST) {
                        assert_int_equal(i.is_initialize, cases[k].is_initialize);
                        assert_int_equal(i.is_ping, cases[k].is_ping);
                }
        }
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
        char *n = mcp_progress_new("\"tok\"", 2, 30, "2 s", NULL);
        assert_non_null(n);
        assert_string_equal(n, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
                               "{\"progressToken\":\"tok\",\"progress\":2,\"total\":30,\"message\":\"2 s\"}}");
        free(n);
        n = mcp_progress_new("7", 0, 0, NULL, &(McpProgressOutput) {});
        assert_non_null(n);
        assert_string_equal(n, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
                               "{\"progressToken\":7,\"progress\":0}}");
        free(n);
        assert_null(mcp_progress_new("not json", 1, 1, NULL, NULL));

        /* The run's new output (issue 17.4): in _meta under our key, only the streams with text. */
        n = mcp_progress_new("7", 1, 5, "1 s",
                             &(McpProgressOutput) { .stdout_data = "a\n\"b", .stdout_len = 4 });
        assert_non_null(n);
        assert_string_equal(n, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
                               "{\"progressToken\":7,\"progress\":1,\"total\":5,\"message\":\"1 s\","
                               "\"_meta\":{\"io.github.mcp-execd/output\":{\"stdout\":\"a\\n\\\"b\"}}}}");
        free(n);
        McpProgressOutput euro = { .stderr_data = "\xe2\x82\xac", .stderr_len = 3, .truncated = true };
        n = mcp_progress_new("7", 2, 0, NULL, &euro);
        assert_non_null(n);
        assert_string_equal(n, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
                               "{\"progressToken\":7,\"progress\":2,"
                               "\"_meta\":{\"io.github.mcp-execd/output\":"
                               "{\"stderr\":\"\xe2\x82\xac\",\"truncated\":true}}}}");
        free(n);
        /* Output that is not UTF-8 is the caller's bug (output_stream_next() repairs): no message. */
        McpProgressOutput bad = { .stdout_data = "\xff", .stdout_len = 1 };
        assert_null(mcp_progress_new("7", 3, 0, NULL, &bad));
}

/* A framing refusal: 400, with the connection closed, saying message. */
static McpHttpVerdict expect_framing_refusal(const McpHttpPolicy *p, const McpHttpHead *h,
                                             const char *message) {
        McpHttpVerdict v = check(p, h);
        assert_int_equal(v.status, 400);
        assert_true(v.close);
        assert_string_equal(v.message, message);
        return v;
}

/* RFC 9112 §6.3: refused first (before Host and token), with the connection closed. */
static void test_framing(void **state) {
        McpHttpPolicy p = policy("secret");
        McpHttpHead h = post_head();
        McpHttpVerdict v;

        h.host = "evil.example.com"; /* would be 403, but framing comes first */
        h.transfer_encoding = "chunked";
        v = expect_framing_refusal(&p, &h, "Bad Request: both Content-Length and Transfer-Encoding");
        assert_false(v.www_authenticate);

        h.has_content_length = false;
        h.transfer_encoding = "gzip, chunked";
        expect_framing_refusal(&p, &h, "Bad Request: the only Transfer-Encoding accepted is chunked");

        h.transfer_encoding = "Chunked"; /* codings are case-insensitive: on to the Host check */
        v = check(&p, &h);
        assert_int_equal(v.status, 403);
        assert_false(v.close);

        h = post_head();
        h.content_length_conflict = true;
        expect_framing_refusal(&p, &h, "Bad Request: Content-Length given twice with different values");

        /* Content-Length parsing: a value that is no number is over any cap. */
        h = post_head();
        mcp_http_head_content_length(&h, "12");
        assert_true(h.has_content_length);
        assert_int_equal(h.content_length, 12);
        mcp_http_head_content_length(&h, "12x");
        assert_int_equal(h.content_length, UINT64_MAX);
        assert_int_equal(check(&p, &h).status, 401); /* token first */
        p.authenticate = NULL;
        assert_int_equal(check(&p, &h).status, 413);
        mcp_http_head_content_length(&h, "99999999999999999999999");
        assert_int_equal(h.content_length, UINT64_MAX);
        mcp_http_head_content_length(&h, NULL);
        assert_false(h.has_content_length);
        assert_int_equal(check(&p, &h).next, MCP_HTTP_MCP_POST);
}

static void test_refusals(void **state) {
        McpHttpPolicy p = policy(NULL);
        static const struct {
                McpHttpRefusal what;
                unsigned status;
                int code;
                const char *message;
        } table[] = {
                { MCP_HTTP_REFUSE_SESSION_NOT_FOUND, 404, -32001, "Session not found" },
                { MCP_HTTP_REFUSE_NO_SESSION, 400, -32000, "Bad Request: No valid session ID provided" },
                { MCP_HTTP_REFUSE_SHUTTING_DOWN, 503, -32000, "Service Unavailable: mcp-execd is shutting down" },
                { MCP_HTTP_REFUSE_TOO_LARGE, 413, -32000,
                  "Payload Too Large: the body is over 1000 bytes (MCP_EXEC_MAX_MESSAGE_BYTES)" },
                { MCP_HTTP_REFUSE_METRICS, 500, -32000, "Internal Server Error: the metrics are not available" },
                { MCP_HTTP_REFUSE_OUT_OF_MEMORY, 400, -32603, "Internal error: out of memory" },
        };
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                McpHttpVerdict v;
                memset(&v, 0xa5, sizeof(v)); /* nothing of a previous verdict survives */
                mcp_http_refuse(&p, table[i].what, &v);
                assert_int_equal(v.next, MCP_HTTP_REJECT);
                assert_int_equal(v.status, table[i].status);
                assert_int_equal(v.rpc_code, table[i].code);
                assert_string_equal(v.message, table[i].message);
                assert_false(v.close);
                assert_false(v.www_authenticate);
                assert_null(v.allow);
                assert_null(v.retry_after);
        }
        /* The 413 of a Content-Length over the cap and of a body that outgrew it say the same. */
        McpHttpHead h = post_head();
        h.content_length = 1001;
        McpHttpVerdict head = check(&p, &h), body;
        mcp_http_refuse(&p, MCP_HTTP_REFUSE_TOO_LARGE, &body);
        assert_string_equal(head.message, body.message);

        McpHttpVerdict v;
        mcp_http_refuse_sessions_full(3, 3, &v);
        assert_int_equal(v.status, 503);
        assert_string_equal(v.retry_after, MCP_HTTP_RETRY_AFTER_S);
        assert_string_equal(v.message, "Service Unavailable: 3 sessions are open (MCP_EXEC_MAX_SESSIONS=3) and "
                                       "each is in use (has made a request other than initialize and ping, has "
                                       "a call in flight or an open stream); retry later");
}

/* /health (issue 19.2): Host and Origin are checked, the token is not (a load balancer's check
 * carries none); GET and HEAD only; a drain's refusal asks for a retry elsewhere. */
static void test_health(void **state) {
        McpHttpPolicy p = policy("secret");
        McpHttpHead h = { .method = "GET", .path = "/health", .host = "127.0.0.1:8080" };
        McpHttpVerdict v = check(&p, &h);
        assert_int_equal(v.next, MCP_HTTP_HEALTH_GET);
        assert_int_equal(v.endpoint, MCP_HTTP_EP_HEALTH);
        h.method = "HEAD";
        assert_int_equal(check(&p, &h).next, MCP_HTTP_HEALTH_GET);
        assert_not_allowed(&p, h, "POST", "GET, HEAD");
        h.method = "GET";
        h.host = "evil.example";
        assert_int_equal(check(&p, &h).status, 403);
        h.host = "127.0.0.1:8080";
        h.origin = "https://evil.example";
        assert_int_equal(check(&p, &h).status, 403);
        /* Only this path: /health/ or /metrics still need the token. */
        h.origin = NULL;
        h.path = "/metrics";
        assert_int_equal(check(&p, &h).status, 401);
        h.path = "/health/x";
        assert_int_equal(check(&p, &h).status, 401);
        assert_string_equal(mcp_http_health_body(false), "{\"status\":\"ready\"}");
        assert_string_equal(mcp_http_health_body(true), "{\"status\":\"draining\"}");

        mcp_http_refuse(&p, MCP_HTTP_REFUSE_DRAINING, &v);
        assert_int_equal(v.status, 503);
        assert_int_equal(v.rpc_code, -32000);
        assert_string_equal(v.retry_after, "1");
        assert_non_null(strstr(v.message, "draining"));
}

static void test_post_decisions(void **state) {
        static const McpHttpMessageInfo invalid = { .kind = MCP_HTTP_MSG_INVALID },
                                        init = { .kind = MCP_HTTP_MSG_REQUEST, .is_initialize = true },
                                        request = { .kind = MCP_HTTP_MSG_REQUEST },
                                        notification = { .kind = MCP_HTTP_MSG_NOTIFICATION },
                                        response = { .kind = MCP_HTTP_MSG_RESPONSE };

        /* Without a session: only initialize may open one; no message at all is answered (its
         * parse error), everything else is refused. */
        assert_int_equal(mcp_http_sessionless_post(&invalid), MCP_HTTP_SESSIONLESS_ANSWER);
        assert_int_equal(mcp_http_sessionless_post(&init), MCP_HTTP_SESSIONLESS_INITIALIZE);
        assert_int_equal(mcp_http_sessionless_post(&request), MCP_HTTP_SESSIONLESS_REFUSE);
        assert_int_equal(mcp_http_sessionless_post(&notification), MCP_HTTP_SESSIONLESS_REFUSE);
        assert_int_equal(mcp_http_sessionless_post(&response), MCP_HTTP_SESSIONLESS_REFUSE);

        static const struct {
                const McpHttpMessageInfo *info;
                bool new_session, initialized;
                unsigned status;
        } table[] = {
                { &request, false, false, 200 },      /* a request in a session */
                { &init, true, true, 200 },           /* initialize opened a session */
                { &init, true, false, 400 },          /* initialize failed (a bad version, say) */
                { &init, false, false, 400 },         /* initialize again in a session */
                { &invalid, true, false, 400 },       /* no message: the parse error */
                { &invalid, false, false, 400 },
                { &notification, false, false, 400 }, /* a notification that got an error back */
                { &response, false, false, 400 },
        };
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
                assert_int_equal(mcp_http_post_reply_status(table[i].info, table[i].new_session, table[i].initialized),
                                 table[i].status);
}

/* Issue 15 #9: which messages make a session a working one, and which sessions may be ended to make
 * room for a new one. */
static void test_session_eviction(void **state) {
        McpHttpMessageInfo i;
        static const struct {
                const char *body;
                bool work;
        } msgs[] = {
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}", true },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", true },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no/such/method\"}", true },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", false },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", false },
                { "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", false },
                { "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{}}", false },
                { "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", false },
                { "not json", false },
                { "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}]", false },
        };
        for (size_t k = 0; k < sizeof(msgs) / sizeof(msgs[0]); k++) {
                assert_int_equal(mcp_http_message_classify(msgs[k].body, strlen(msgs[k].body), &i), 0);
                if (mcp_http_message_is_work(&i) != msgs[k].work)
                        fail_msg("%s: work should be %d", msgs[k].body, msgs[k].work);
        }

        /* Only an idle Streamable HTTP session that never worked may be ended for room. */
        for (unsigned m = 0; m < 8; m++) {
                McpHttpSessionUse u = { .legacy = m & 1, .busy = m & 2, .worked = m & 4 };
                assert_int_equal(mcp_http_session_evictable(&u), m == 0);
        }
}

/* The 2026 era of a POST to /mcp: which bodies and headers make one, and what a disagreement gets. */
#define ENVELOPE "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
                 "\"io.modelcontextprotocol/clientCapabilities\":{}}"
static const char call_body[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                                "\"arguments\":{}," ENVELOPE "}}";

static int era_code(const char *body, const char *version, const char *method, const char *name, bool *modern) {
        McpHttpEra e;
        assert_int_equal(mcp_http_era_check(body, strlen(body), version, method, name, &e), 0);
        *modern = e.modern;
        if (!e.reject)
                return 0;
        json_error_t err;
        json_t *j = json_loads(e.reject, 0, &err);
        assert_non_null(j);
        assert_int_equal(json_integer_value(json_object_get(j, "id")), 7); /* the request's id, echoed */
        int code = (int) json_integer_value(json_object_get(json_object_get(j, "error"), "code"));
        json_decref(j);
        free(e.reject);
        return code;
}

static void test_era_check(void **state) {
        bool modern;
        assert_int_equal(era_code(call_body, "2026-07-28", "tools/call", "exec", &modern), 0);
        assert_true(modern);
        assert_int_equal(era_code(call_body, "2026-07-28", " tools/call\t", "exec  ", &modern), 0); /* OWS */
        assert_int_equal(era_code(call_body, "2026-07-28", "tools/call", NULL, &modern), -32020);
        assert_int_equal(era_code(call_body, "2026-07-28", "tools/call", "exe", &modern), -32020);
        assert_int_equal(era_code(call_body, "2026-07-28", "tools/call", "execute_python", &modern), -32020);
        assert_int_equal(era_code(call_body, "2026-07-28", "tools/list", "exec", &modern), -32020);
        assert_int_equal(era_code(call_body, "2026-07-28", NULL, "exec", &modern), -32020);
        assert_int_equal(era_code(call_body, NULL, "tools/call", "exec", &modern), -32020);
        assert_int_equal(era_code(call_body, "2025-11-25", "tools/call", "exec", &modern), -32020);
        /* The header alone makes a request of the 2026 era: without the envelope it is -32602. */
        const char *bare = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"server/discover\",\"params\":{}}";
        assert_int_equal(era_code(bare, "2026-07-28", "server/discover", NULL, &modern), -32602);
        assert_true(modern);
        /* A 2025-era message is not looked at; nor a notification's headers. */
        assert_int_equal(era_code(bare, "2025-11-25", NULL, NULL, &modern), 0);
        assert_false(modern);
        assert_int_equal(era_code(bare, NULL, NULL, NULL, &modern), 0);
        assert_false(modern);
        const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{" ENVELOPE "}}";
        assert_int_equal(era_code(note, NULL, NULL, NULL, &modern), 0);
        assert_true(modern);
        assert_int_equal(era_code("not json", "2026-07-28", NULL, NULL, &modern), 0);
        assert_false(modern);

        McpHttpMessageInfo req = { .kind = MCP_HTTP_MSG_REQUEST }, bad = { .kind = MCP_HTTP_MSG_INVALID };
        assert_int_equal(mcp_http_modern_reply_status(&req, 0), 200);
        assert_int_equal(mcp_http_modern_reply_status(&req, -32601), 404);
        assert_int_equal(mcp_http_modern_reply_status(&req, -32022), 400);
        assert_int_equal(mcp_http_modern_reply_status(&req, -32602), 400);
        assert_int_equal(mcp_http_modern_reply_status(&bad, 0), 400);
}

/* OAuth as the daemon's authenticator reports it (daemon/tenant/oauth.c does the checking). */
static const char *oauth_auth(void *userdata, const char *credential, size_t len, McpHttpAuthFailure *fail) {
        if (str_secret_equal(credential, len, "jwt-ok", 6))
                return "alpha";
        if (str_secret_equal(credential, len, "jwt-noscope", 11))
                *fail = (McpHttpAuthFailure) { .why = "the access token lacks the scope this server requires",
                                               .insufficient_scope = true };
        else
                *fail = (McpHttpAuthFailure) { .why = "the access token has expired" };
        return NULL;
}

/* Issue 31.2: with OAuth, the metadata is served without a token (and only GET/HEAD); a 401 names
 * it, the scope, and (a token sent) why it was refused; a token without the scope gets 403
 * insufficient_scope; the authorization server's paths are not ours (404). */
static void test_oauth(void **state) {
        McpHttpPolicy p = policy(NULL);
        p.authenticate = oauth_auth;
        p.resource_metadata_url = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
        p.oauth_scope = "mcp-execd";
        McpHttpHead h = { .method = "GET", .path = "/.well-known/oauth-protected-resource/mcp", .host = "localhost" };
        McpHttpVerdict v = check(&p, &h);
        assert_int_equal(v.next, MCP_HTTP_PRM_GET);
        h.path = "/.well-known/oauth-protected-resource";
        assert_int_equal(check(&p, &h).next, MCP_HTTP_PRM_GET);
        h.method = "HEAD";
        assert_int_equal(check(&p, &h).next, MCP_HTTP_PRM_GET);
        assert_not_allowed(&p, h, "POST", "GET, HEAD");
        h = (McpHttpHead) { .method = "GET", .path = "/.well-known/oauth-protected-resourcex", .host = "localhost" };
        assert_int_equal(check(&p, &h).status, 401); /* not the metadata: a path like any other */
        h.path = "/.well-known/oauth-authorization-server";
        assert_int_equal(check(&p, &h).status, 404);
        h.path = "/token";
        assert_int_equal(check(&p, &h).status, 404);
        h.host = "evil.example.com"; /* Host is checked first, as everywhere */
        h.path = "/.well-known/oauth-protected-resource";
        assert_int_equal(check(&p, &h).status, 403);

        h = post_head();
        v = check(&p, &h); /* no token */
        assert_int_equal(v.status, 401);
        assert_true(v.www_authenticate);
        assert_string_equal(v.www_authenticate_value,
                            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", "
                            "scope=\"mcp-execd\"");
        h.authorization = "Bearer jwt-old";
        v = check(&p, &h);
        assert_int_equal(v.status, 401);
        assert_non_null(strstr(v.www_authenticate_value, ", error=\"invalid_token\", error_description=\"the access "
                                                         "token has expired\""));
        assert_non_null(strstr(v.message, "the access token has expired"));
        h.authorization = "Bearer jwt-noscope";
        v = check(&p, &h);
        assert_int_equal(v.status, 403);
        assert_non_null(strstr(v.www_authenticate_value, "error=\"insufficient_scope\""));
        h.authorization = "Bearer jwt-ok";
        v = check(&p, &h);
        assert_int_equal(v.next, MCP_HTTP_MCP_POST);
        assert_string_equal(v.principal, "alpha");

        /* Without OAuth the metadata path is refused as before, with the static token's hint. */
        p.resource_metadata_url = NULL;
        h = (McpHttpHead) { .method = "GET", .path = "/.well-known/oauth-protected-resource", .host = "localhost" };
        v = check(&p, &h);
        assert_int_equal(v.status, 404);
        assert_string_equal(v.oauth_error, "invalid_request");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_host_allow_list),
                cmocka_unit_test(test_origin_allow_list),
                cmocka_unit_test(test_token),
                cmocka_unit_test(test_oauth),
                cmocka_unit_test(test_media_types),
                cmocka_unit_test(test_protocol_version),
                cmocka_unit_test(test_era_check),
                cmocka_unit_test(test_session_ids),
                cmocka_unit_test(test_head_order),
                cmocka_unit_test(test_head_statuses),
                cmocka_unit_test(test_classify),
                cmocka_unit_test(test_error_body),
                cmocka_unit_test(test_sse),
                cmocka_unit_test(test_progress),
                cmocka_unit_test(test_framing),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_post_decisions),
                cmocka_unit_test(test_health),
                cmocka_unit_test(test_session_eviction),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
