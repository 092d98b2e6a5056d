/* test-mcp-text.c: UTF-8 repair of captured output, the stdio line framing, and how a message quotes
 * a caller's value (mcp-internal.h: a unit test of mcp/ sees its internals). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp-internal.h"
#include "mcp.h"

static void check_repair_n(const char *in, size_t n, const char *want, size_t want_len) {
        size_t len;
        char *out = utf8_repair(in, n, &len);
        assert_non_null(out);
        assert_int_equal(len, want_len);
        assert_memory_equal(out, want, len);
        free(out);
}

static void check_repair(const char *in, size_t n, const char *want) {
        check_repair_n(in, n, want, strlen(want));
}

static void test_utf8_valid_passes(void **state) {
        check_repair("hello", 5, "hello");
        check_repair("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15, "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80");
        check_repair("", 0, "");
}

static void test_utf8_invalid_replaced(void **state) {
        /* A lone invalid byte. */
        check_repair("a\xff" "b", 3, "a\xef\xbf\xbd" "b");
        /* A multibyte character cut short (as the output cap can do) at the end. */
        check_repair("a\xe2\x82", 3, "a\xef\xbf\xbd");
        /* Surrogates encoded in UTF-8 are invalid: each maximal subpart gets one U+FFFD. */
        check_repair("\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
        /* Overlong encodings are invalid. */
        check_repair("\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd");
        /* Above U+10FFFF. */
        check_repair("\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
        /* NUL is valid UTF-8 and is kept. */
        check_repair_n("a\0b", 3, "a\0b", 3);
}

/* What a cut inside a character leaves at the end, and only that (issue 15 #10). */
static void test_utf8_incomplete_tail(void **state) {
        assert_int_equal(utf8_incomplete_tail("", 0), 0);
        assert_int_equal(utf8_incomplete_tail("a\xe2\x82\xac", 4), 0);     /* whole € */
        assert_int_equal(utf8_incomplete_tail("a\xe2\x82", 3), 2);
        assert_int_equal(utf8_incomplete_tail("a\xe2", 2), 1);
        assert_int_equal(utf8_incomplete_tail("\xf0\x9f\x98", 3), 3);
        assert_int_equal(utf8_incomplete_tail("\xf0\x9f", 2), 2);
        assert_int_equal(utf8_incomplete_tail("\xf0\x9f\x98\x80", 4), 0); /* whole 😀 */
        assert_int_equal(utf8_incomplete_tail("a\xff", 2), 0);             /* invalid, not cut */
        assert_int_equal(utf8_incomplete_tail("a\x82", 2), 0);             /* lone continuation */
        assert_int_equal(utf8_incomplete_tail("\xed\xa0", 2), 0);         /* a surrogate's start */
        assert_int_equal(utf8_incomplete_tail("\xc0", 1), 0);              /* overlong lead */
        assert_int_equal(utf8_incomplete_tail("\xe2\x82\xac\x82", 4), 0); /* stray continuation */
}

/* The reader's next line (with finish: its last, unterminated one) says status and, when it is
 * MCP_LINE_OK, is want. */
static void expect_line(McpLineReader *r, bool finish, McpLineStatus status, const char *want) {
        const char *line;
        size_t len;
        McpLineStatus got = finish ? mcp_line_reader_finish(r, &line, &len)
                                   : mcp_line_reader_next(r, &line, &len);
        assert_int_equal(got, status);
        if (status != MCP_LINE_OK)
                return;
        assert_int_equal(len, strlen(want));
        assert_memory_equal(line, want, len);
}

static void test_lines_split_and_cr(void **state) {
        McpLineReader r;

        mcp_line_reader_init(&r, 100);
        assert_int_equal(mcp_line_reader_feed(&r, "{\"a\":1}\n{\"b\"", 12), 0);
        expect_line(&r, false, MCP_LINE_OK, "{\"a\":1}");
        expect_line(&r, false, MCP_LINE_NONE, NULL);
        assert_int_equal(mcp_line_reader_feed(&r, ":2}\r\n", 5), 0);
        expect_line(&r, false, MCP_LINE_OK, "{\"b\":2}");
        expect_line(&r, false, MCP_LINE_NONE, NULL);
        mcp_line_reader_done(&r);
}

static void test_lines_oversize_dropped_then_recovers(void **state) {
        McpLineReader r;
        char big[300];

        memset(big, 'x', sizeof(big));
        mcp_line_reader_init(&r, 100);
        /* A line over the cap, fed in pieces, is reported once and skipped up to its newline. */
        assert_int_equal(mcp_line_reader_feed(&r, big, 150), 0);
        expect_line(&r, false, MCP_LINE_OVERSIZE, NULL);
        assert_int_equal(mcp_line_reader_feed(&r, big, 150), 0);
        expect_line(&r, false, MCP_LINE_NONE, NULL);
        assert_true(r.buf.cap <= 4096); /* memory stayed bounded */
        assert_int_equal(r.buf.len, 0); /* the skipped line is not kept */
        assert_int_equal(mcp_line_reader_feed(&r, "xx\nok\n", 6), 0);
        expect_line(&r, false, MCP_LINE_OK, "ok");
        mcp_line_reader_done(&r);
}

static void test_lines_unterminated_at_eof(void **state) {
        McpLineReader r;

        mcp_line_reader_init(&r, 100);
        assert_int_equal(mcp_line_reader_feed(&r, "a\nlast", 6), 0);
        expect_line(&r, false, MCP_LINE_OK, "a");
        expect_line(&r, false, MCP_LINE_NONE, NULL);
        expect_line(&r, true, MCP_LINE_OK, "last");
        expect_line(&r, true, MCP_LINE_NONE, NULL);
        mcp_line_reader_done(&r);
}

/* A caller's value in a message: bounded, cut at a character, escaped, and valid UTF-8 whatever
 * came in (issue 29 #7: a 200 kB task id came back whole). */
static void check_quote(const char *in, size_t n, const char *want) {
        McpQuote q;
        const char *out = mcp_quote(&q, in, n);
        assert_string_equal(out, want);
        size_t len;
        char *repaired = utf8_repair(out, strlen(out), &len);
        assert_non_null(repaired);
        assert_string_equal(repaired, out); /* nothing to repair: valid UTF-8 */
        free(repaired);
}

static void test_quote(void **state) {
        check_quote("tools/lsit", 10, "tools/lsit");
        check_quote("", 0, "");
        check_quote("a\"b\\c\n\x7f", 7, "a\\x22b\\x5cc\\x0a\\x7f");
        check_quote("x\xffy\xc3", 4, "x\\xffy\\xc3");           /* invalid and cut sequences as bytes */
        check_quote("\xc2\x85z", 3, "\\xc2\\x85z");                 /* C1 controls too */
        check_quote("a\0b", 3, "a\\x00b");                          /* a NUL inside (with its length) */

        char big[200 * 1024];
        memset(big, 'k', sizeof(big));
        char want[MCP_QUOTE_MAX_BYTES + 64];
        snprintf(want, sizeof(want), "%.*s\u2026 (%zu bytes)", MCP_QUOTE_MAX_BYTES, big, sizeof(big));
        check_quote(big, sizeof(big), want);

        /* A character across the cut is left out whole, never split. */
        memset(big, 'k', MCP_QUOTE_MAX_BYTES - 1);
        memcpy(big + MCP_QUOTE_MAX_BYTES - 1, "\xe2\x82\xac", 3);
        snprintf(want, sizeof(want), "%.*s\u2026 (%d bytes)", MCP_QUOTE_MAX_BYTES - 1, big, MCP_QUOTE_MAX_BYTES + 2);
        check_quote(big, MCP_QUOTE_MAX_BYTES + 2, want);

        /* Every byte escaped, to the limit: the buffer holds it. */
        memset(big, '\x01', sizeof(big));
        McpQuote q;
        const char *out = mcp_quote(&q, big, sizeof(big));
        assert_int_equal(strncmp(out, "\\x01\\x01", 8), 0);
        assert_non_null(strstr(out, "\u2026 (204800 bytes)"));
        assert_true(strlen(out) < sizeof(q.text));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_quote),
                cmocka_unit_test(test_utf8_valid_passes),
                cmocka_unit_test(test_utf8_invalid_replaced),
                cmocka_unit_test(test_utf8_incomplete_tail),
                cmocka_unit_test(test_lines_split_and_cr),
                cmocka_unit_test(test_lines_oversize_dropped_then_recovers),
                cmocka_unit_test(test_lines_unterminated_at_eof),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
