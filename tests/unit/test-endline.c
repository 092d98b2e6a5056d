/* test-endline.c: the launcher's end-of-call line in a session's output (daemon/pysession/
 * endline.c): what is output and what ends the call, however the stream is cut into reads, and
 * what a call's code can print to confuse it (another nonce, a cut or overlong line). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "endline.h"

#define NONCE "0123456789abcdef0123456789abcdef"
#define OTHER "fedcba9876543210fedcba9876543210"
#define END(nonce, tail) "\0MCPEXECD-END " nonce " " tail "\n"
/* A literal with NULs in it: its length without the terminating one. */
#define LIT(s) s, sizeof(s) - 1

typedef struct Collected {
        char *data;
        size_t len, cap;
} Collected;

/* Grows by doubling: reads of one byte call it once a byte (under ASan a realloc copies). */
static void collect(void *userdata, const char *p, size_t n) {
        Collected *c = userdata;
        if (c->len + n + 1 > c->cap) {
                c->cap = (c->len + n + 1) * 2;
                c->data = realloc(c->data, c->cap);
                assert_non_null(c->data);
        }
        memcpy(c->data + c->len, p, n);
        c->len += n;
}

/* Feeds data in pieces of `piece` bytes (0: whole); returns the scan's state in *scan. */
static void feed(PyEndScan *scan, Collected *out, const char *data, size_t n, size_t piece) {
        if (piece == 0)
                piece = n;
        for (size_t off = 0; off < n; off += piece)
                py_end_scan_take(scan, NONCE, data + off, n - off < piece ? n - off : piece, collect, out);
}

static void expect(const Collected *out, const char *data, size_t n) {
        assert_int_equal(out->len, n);
        if (n)
                assert_memory_equal(out->data, data, n);
}

/* stream, fed in reads of piece bytes, is a call that ended with this tail and output want (len
 * bytes). */
static void expect_call(const char *stream, size_t n, size_t piece, const char *tail, const char *want,
                        size_t len) {
        PyEndScan *scan = calloc(1, sizeof(*scan));
        Collected out = {};
        feed(scan, &out, stream, n, piece);
        assert_true(scan->ended);
        assert_string_equal(scan->tail, tail);
        expect(&out, want, len);
        free(out.data);
        free(scan);
}

/* The output before the line is the call's; the line is not; the status is the tail; what follows
 * is no call's. Any cut of the reads gives the same. */
static void test_end_line_any_cut(void **state) {
        static const char stream[] = "hello\nworld\n" END(NONCE, "3") "after the end";
        for (size_t piece = 0; piece <= sizeof(stream); piece++)
                expect_call(LIT(stream), piece, "3", LIT("hello\nworld\n"));
}

/* Another call's nonce, or a line with no newline within PY_END_TAIL_MAX, is output; the launcher's
 * own line after it, in the same read or the next, still ends the call. */
static void test_forged_lines(void **state) {
        char tail[PY_END_TAIL_MAX + 2];
        memset(tail, '9', sizeof(tail) - 1);
        tail[sizeof(tail) - 1] = 0;
        for (size_t piece = 0; piece <= 7; piece += 7) {
                char stream[1024];
                size_t n = 0;
                static const char other[] = "a" END(OTHER, "0"), ours[] = "\0MCPEXECD-END " NONCE " ",
                                  after[] = "\nb", real[] = END(NONCE, "0");
                memcpy(stream + n, other, sizeof(other) - 1), n += sizeof(other) - 1;  /* another nonce */
                memcpy(stream + n, ours, sizeof(ours) - 1), n += sizeof(ours) - 1;     /* ours, too long: */
                memcpy(stream + n, tail, strlen(tail)), n += strlen(tail);
                memcpy(stream + n, after, sizeof(after) - 1), n += sizeof(after) - 1;
                size_t forged = n;
                memcpy(stream + n, real, sizeof(real) - 1), n += sizeof(real) - 1;
                expect_call(stream, n, piece, "0", stream, forged);
        }
}

/* A call whose end line never came (its session was killed): what was held back as a possible end
 * line is output on flush, and nothing is lost or doubled. */
static void test_flush(void **state) {
        static const char stream[] = "partial\0MCPEXECD-END " NONCE;
        PyEndScan *scan = calloc(1, sizeof(*scan));
        Collected out = {};
        feed(scan, &out, LIT(stream), 5);
        assert_false(scan->ended);
        assert_true(out.len < sizeof(stream) - 1);
        py_end_scan_flush(scan, collect, &out);
        expect(&out, LIT(stream));
        py_end_scan_flush(scan, collect, &out);
        expect(&out, LIT(stream));
        free(out.data);
        free(scan);
}

/* After the end nothing is taken; a reset starts the next call. */
static void test_after_end_and_reset(void **state) {
        PyEndScan *scan = calloc(1, sizeof(*scan));
        Collected out = {};
        feed(scan, &out, LIT("x" END(NONCE, "1")), 0);
        assert_true(scan->ended);
        feed(scan, &out, LIT("a thread left running"), 0);
        expect(&out, LIT("x"));
        py_end_scan_reset(scan);
        assert_false(scan->ended);
        feed(scan, &out, LIT("y" END(NONCE, "2")), 0);
        assert_true(scan->ended);
        assert_string_equal(scan->tail, "2");
        expect(&out, LIT("xy"));
        free(out.data);
        free(scan);
}

/* Big binary output (NULs, prefixes of the line's start everywhere) comes out byte for byte, in
 * reads of the largest size and of odd ones, and more than one read's worth at once. */
static void test_binary_output(void **state) {
        const size_t n = 3 * PY_END_READ_MAX + 12345;
        char *data = malloc(n + 128);
        assert_non_null(data);
        unsigned seed = 5;
        for (size_t i = 0; i < n; i++)
                data[i] = (char) (rand_r(&seed) % 4 == 0 ? 0 : "\0MCPEXECD-END 0123"[rand_r(&seed) % 18]);
        static const char end[] = END(NONCE, "0");
        memcpy(data + n, end, sizeof(end) - 1);
        const size_t total = n + sizeof(END(NONCE, "0")) - 1;
        const size_t pieces[] = { PY_END_READ_MAX, 4093, 1, total };
        for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
                PyEndScan *scan = calloc(1, sizeof(*scan));
                Collected out = {};
                if (pieces[k] == total) /* more than a read: taken in read-sized pieces */
                        py_end_scan_take(scan, NONCE, data, total, collect, &out);
                else
                        feed(scan, &out, data, total, pieces[k]);
                assert_true(scan->ended);
                expect(&out, data, n);
                free(out.data);
                free(scan);
        }
        free(data);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_end_line_any_cut),
                cmocka_unit_test(test_forged_lines),
                cmocka_unit_test(test_flush),
                cmocka_unit_test(test_after_end_and_reset),
                cmocka_unit_test(test_binary_output),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
