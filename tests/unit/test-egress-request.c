/* test-egress-request.c: the egress proxy's request heads (issue 32.2): CONNECT and absolute-form
 * plain HTTP taken, with the head the origin server gets rebuilt (origin form, no hop-by-hop or
 * Proxy-* header, the checked Host, Connection: close); and every trick refused with its status:
 * user@host, a Host naming another server, https:// as plain HTTP, folded or CR-less lines, NUL,
 * chunked or doubly sized bodies, oversized heads. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "request.h"

static EgressRequest parse_ok(const char *head) {
        EgressRequest r;
        int status;
        const char *why;
        int k = egress_request_parse(head, strlen(head), &r, &status, &why);
        if (k < 0)
                fail_msg("refused (%d, %d): %s\n%s", k, status, why ? why : "", head);
        return r;
}

static void test_connect(void **state) {
        const char *h = "CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\nUser-Agent: pip/23\r\n\r\n\x16\x03\x01";
        EgressRequest r = parse_ok(h);
        assert_int_equal(r.kind, EGRESS_REQUEST_CONNECT);
        assert_string_equal(r.host, "pypi.org");
        assert_int_equal(r.port, 443);
        assert_int_equal(r.head_len, strlen(h) - 3); /* the TLS bytes after it are the tunnel's */
        assert_null(r.forward);
        r = parse_ok("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n");
        assert_string_equal(r.host, "2001:db8::1");
        assert_int_equal(r.port, 8443);
}

static void test_http(void **state) {
        EgressRequest r = parse_ok("GET http://files.example.org/simple/numpy/?a=1 HTTP/1.1\r\n"
                                   "Host: files.example.org\r\nAccept: */*\r\nProxy-Connection: keep-alive\r\n"
                                   "Proxy-Authorization: Basic eDp5\r\nConnection: keep-alive, Upgrade\r\nUpgrade: h2c\r\n"
                                   "Content-Length: 0\r\n\r\n");
        assert_int_equal(r.kind, EGRESS_REQUEST_HTTP);
        assert_string_equal(r.host, "files.example.org");
        assert_int_equal(r.port, 80);
        assert_string_equal(r.forward, "GET /simple/numpy/?a=1 HTTP/1.1\r\nAccept: */*\r\nContent-Length: 0\r\n"
                                       "Host: files.example.org\r\nConnection: close\r\n\r\n");
        assert_int_equal(r.forward_len, strlen(r.forward));
        egress_request_done(&r);

        /* HTTP/1.0 without Host, a port, a query without a path, a body's length. */
        r = parse_ok("POST http://127.0.0.1:8000?x HTTP/1.0\r\nContent-Length: 11\r\n\r\n");
        assert_string_equal(r.host, "127.0.0.1");
        assert_int_equal(r.port, 8000);
        assert_int_equal(r.content_length, 11);
        assert_string_equal(r.forward, "POST /?x HTTP/1.0\r\nContent-Length: 11\r\nHost: 127.0.0.1:8000\r\nConnection: close\r\n\r\n");
        egress_request_done(&r);
        r = parse_ok("GET http://[::1]:9000 HTTP/1.1\r\nHost: [::1]:9000\r\n\r\n");
        assert_string_equal(r.forward, "GET / HTTP/1.1\r\nHost: [::1]:9000\r\nConnection: close\r\n\r\n");
        egress_request_done(&r);
}

static const struct {
        const char *head;
        int status;
        const char *why;
} refused[] = {
        { "CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n", 400, "user information" },
        { "GET http://pypi.org@evil.example/ HTTP/1.1\r\n\r\n", 400, "user information" },
        { "GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n", 400, "the Host header names another server" },
        { "GET http://a.example/ HTTP/1.1\r\nHost: a.example:8080\r\n\r\n", 400, "the Host header names another server" },
        { "CONNECT a.example:443 HTTP/1.1\r\nHost: b.example:443\r\n\r\n", 400, "the Host header names another server" },
        { "GET https://a.example/ HTTP/1.1\r\n\r\n", 400, "an https:// URL is asked for with CONNECT" },
        { "GET /path HTTP/1.1\r\nHost: a.example\r\n\r\n", 400, "not an absolute http:// URL" },
        { "GET ftp://a.example/ HTTP/1.1\r\n\r\n", 400, "not an absolute http:// URL" },
        { "TRACE http://a.example/ HTTP/1.1\r\n\r\n", 405, "the proxy forwards GET" },
        { "get http://a.example/ HTTP/1.1\r\n\r\n", 400, "upper-case" },
        { "CONNECT a.example HTTP/1.1\r\n\r\n", 400, "CONNECT names no host:port" },
        { "CONNECT a.example:0 HTTP/1.1\r\n\r\n", 400, "CONNECT names no host:port" },
        { "CONNECT a.example:99999 HTTP/1.1\r\n\r\n", 400, "CONNECT names no host:port" },
        { "CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", 400, "CONNECT names no host:port" },
        { "GET http://a.example/ HTTP/2.0\r\n\r\n", 400, "not HTTP/1.1" },
        { "GET  http://a.example/ HTTP/1.1\r\n\r\n", 400, "the request line is not" },
        { "GET http://a.example/#frag HTTP/1.1\r\n\r\n", 400, "a character a URL may not" },
        { "GET http://a.example/ HTTP/1.1\nHost: a.example\r\n\r\n", 400, "a line ends without CR" },
        { "GET http://a.example/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, "folded" },
        { "GET http://a.example/ HTTP/1.1\r\nX : a\r\n\r\n", 400, "not Name: value" },
        { "GET http://a.example/ HTTP/1.1\r\nX: a\x01\r\n\r\n", 400, "control character" },
        { "GET http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501, "chunked" },
        { "GET http://a.example/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, "disagree" },
        { "GET http://a.example/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "not a length" },
};

static void test_refused(void **state) {
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                EgressRequest r;
                int status = 0;
                const char *why = NULL;
                int k = egress_request_parse(refused[i].head, strlen(refused[i].head), &r, &status, &why);
                if (k != -EINVAL || status != refused[i].status || !why || !strstr(why, refused[i].why))
                        fail_msg("%s: %d %d '%s', expected %d '%s'", refused[i].head, k, status, why ? why : "",
                                 refused[i].status, refused[i].why);
        }
        /* A NUL anywhere in the head, even before it is complete. */
        const char nul[] = "CONNECT a.example:443\0 HTTP/1.1\r\n";
        EgressRequest r;
        int status;
        const char *why;
        assert_int_equal(egress_request_parse(nul, sizeof(nul) - 1, &r, &status, &why), -EINVAL);
        assert_string_equal(why, "the request holds a NUL byte");
}

/* A head arrives in pieces: -EAGAIN until its blank line; past EGRESS_HEAD_MAX without one, 431. */
static void test_incomplete_and_oversized(void **state) {
        const char *h = "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n";
        EgressRequest r;
        int status;
        const char *why;
        for (size_t n = 0; n < strlen(h); n++)
                assert_int_equal(egress_request_parse(h, n, &r, &status, &why), -EAGAIN);
        assert_int_equal(egress_request_parse(h, strlen(h), &r, &status, &why), 0);
        char *big = malloc(EGRESS_HEAD_MAX + 16);
        memset(big, 'a', EGRESS_HEAD_MAX + 16);
        memcpy(big, "CONNECT ", 8);
        assert_int_equal(egress_request_parse(big, EGRESS_HEAD_MAX - 1, &r, &status, &why), -EAGAIN);
        assert_int_equal(egress_request_parse(big, EGRESS_HEAD_MAX, &r, &status, &why), -EMSGSIZE);
        assert_int_equal(status, 431);
        free(big);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_connect),
                cmocka_unit_test(test_http),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_incomplete_and_oversized),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
