/* test-mcp-text.c: UTF-8 repair of captured output and the stdio line framing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp.h"

static void check_repair_n(const char *in, size_t n, const char *want, size_t want_len) {
        size_t len;
        char *out = mcp_utf8_repair(in, n, &len);
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
        assert_int_equal(mcp_utf8_incomplete_tail("", 0), 0);
        assert_int_equal(mcp_utf8_incomplete_tail("a\xe2\x82\xac", 4), 0);     /* whole € */
        assert_int_equal(mcp_utf8_incomplete_tail("a\xe2\x82", 3), 2);
        assert_int_equal(mcp_utf8_incomplete_tail("a\xe2", 2), 1);
        assert_int_equal(mcp_utf8_incomplete_tail("\xf0\x9f\x98", 3), 3);
        assert_int_equal(mcp_utf8_incomplete_tail("\xf0\x9f", 2), 2);
        assert_int_equal(mcp_utf8_incomplete_tail("\xf0\x9f\x98\x80", 4), 0); /* whole 😀 */
        assert_int_equal(mcp_utf8_incomplete_tail("a\xff", 2), 0);             /* invalid, not cut */
        assert_int_equal(mcp_utf8_incomplete_tail("a\x82", 2), 0);             /* lone continuation */
        assert_int_equal(mcp_utf8_incomplete_tail("\xed\xa0", 2), 0);         /* a surrogate's start */
        assert_int_equal(mcp_utf8_incomplete_tail("\xc0", 1), 0);              /* overlong lead */
        assert_int_equal(mcp_utf8_incomplete_tail("\xe2\x82\xac\x82", 4), 0); /* stray continuation */
}

static void test_lines_split_and_cr(void **state) {
        McpLineReader r;
        const char *line;
        size_t len;

        mcp_line_reader_init(&r, 100);
        assert_int_equal(mcp_line_reader_feed(&r, "{\"a\":1}\n{\"b\"", 12), 0);
        assert_int_equal(mcp_line_reader_next(&r, &line, &len), MCP_LINE_OK);
        assert_int_equal(len, 7);
        assert_memory_equal(line, "{\"a\":1}", 7);
        assert_int_equal(mcp_line_reader_next(&r, &line, &len), MCP_LINE_NONE);
        assert_int_equal(mcp_line_reader_feed(&r, ":2}\r\n", 5), 0);
        assert_int_equal(mcp_line_reader_next(&r, &line, &len), MCP_LINE_OK);
        assert_int_equal(len, 7);
        assert_memory_equal(line, "{\"b\":2}", 7);
        assert_int_equal(mcp_line_reader_next(&r, &line, &len), MCP_LINE_NONE);
        mcp_line_reader_done(&r);
}

static void test_lines_oversize_dropped_then_recovers(void **state) {
        McpLineReader r;
        const char *line;
        size_t len;
        char big[300];

        memset(big, 'x', sizeof(big));
        mcp_line_reader_init(&r, 100);
        /* A line over the cap, fed in pieces, is reported once and skipped up to its newline. */
        assert_int_equal(mcp_line_reader_feed(&r, big, 150), 0);
        assert_int_equal(mcp_line_reader_next(&r, &line, &len), MCP_LINE_OVERSIZE);
        assert_int_equal(mcp_line_reader_feed(&r, big, 150), 0);
        assert_int_equal(mcp_line_reader_next(&r, &line, &len), MCP_LINE_NONE);
        assert_true(r.cap <= 4096); /* memory stayed bounded */
        assert_int_equal(mcp_line_reader_feed(&r, "xx\nok\n", 6), 0);
        assert_int_equal(mcp_line_reader_next(&r, &line, &len), MCP_LINE_OK);
        assert_int_equal(len, 2);
        assert_memory_equal(line, "ok", 2);
        mcp_line_reader_done(&r);
}

static void test_lines_unterminated_at_eof(void **state) {
        McpLineReader r;
        const char *line;
        size_t len;

        mcp_line_reader_init(&r, 100);
        assert_int_equal(mcp_line_reader_feed(&r, "a\nlast", 6), 0);
        assert_int_equal(mcp_line_reader_next(&r, &line, &len), MCP_LINE_OK);
        assert_int_equal(mcp_line_reader_next(&r, &line, &len), MCP_LINE_NONE);
        assert_int_equal(mcp_line_reader_finish(&r, &line, &len), MCP_LINE_OK);
        assert_int_equal(len, 4);
        assert_memory_equal(line, "last", 4);
        assert_int_equal(mcp_line_reader_finish(&r, &line, &len), MCP_LINE_NONE);
        mcp_line_reader_done(&r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_utf8_valid_passes),
                cmocka_unit_test(test_utf8_invalid_replaced),
                cmocka_unit_test(test_utf8_incomplete_tail),
                cmocka_unit_test(test_lines_split_and_cr),
                cmocka_unit_test(test_lines_oversize_dropped_then_recovers),
                cmocka_unit_test(test_lines_unterminated_at_eof),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
