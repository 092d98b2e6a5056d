/* test-output.c: the combined output cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "output.h"

/* Stream i of o kept exactly these len bytes. */
static void expect_kept(const Output *o, int i, const char *want, size_t len) {
        assert_int_equal(o->stream[i].len, len);
        assert_memory_equal(o->stream[i].data, want, len);
}

static void test_under_cap_keeps_all(void **state) {
        Output o;
        output_init(&o, 10);
        assert_int_equal(output_add(&o, 0, "abc", 3), 0);
        assert_int_equal(output_add(&o, 1, "de", 2), 0);
        assert_false(o.truncated);
        expect_kept(&o, 0, "abc", 3);
        expect_kept(&o, 1, "de", 2);
        output_done(&o);
}

static void test_cap_is_combined_first_bytes_kept(void **state) {
        Output o;
        output_init(&o, 5);
        assert_int_equal(output_add(&o, 0, "abc", 3), 0);
        assert_int_equal(output_add(&o, 1, "defg", 4), 0); /* only "de" fits */
        assert_int_equal(output_add(&o, 0, "hij", 3), 0);  /* nothing fits */
        assert_true(o.truncated);
        expect_kept(&o, 0, "abc", 3);
        expect_kept(&o, 1, "de", 2);
        assert_int_equal(o.seen[0], 6);
        assert_int_equal(o.seen[1], 4);
        output_done(&o);
}

static void test_flood_does_not_grow(void **state) {
        Output o;
        char chunk[65536];
        memset(chunk, 'x', sizeof(chunk));
        output_init(&o, 4096);
        for (int i = 0; i < 320; i++) /* 20 MiB */
                assert_int_equal(output_add(&o, i % 2, chunk, sizeof(chunk)), 0);
        assert_true(o.truncated);
        assert_int_equal(o.stream[0].len + o.stream[1].len, 4096);
        assert_true(o.stream[0].cap + o.stream[1].cap <= 2 * 8192);
        output_done(&o);
}

static void test_exact_fit_not_truncated(void **state) {
        Output o;
        output_init(&o, 4);
        assert_int_equal(output_add(&o, 0, "abcd", 4), 0);
        assert_false(o.truncated);
        assert_int_equal(output_add(&o, 0, "", 0), 0);
        assert_false(o.truncated);
        assert_int_equal(output_add(&o, 1, "e", 1), 0);
        assert_true(o.truncated);
        output_done(&o);
}

/* Issue 15 #10: a character cut by the cap is dropped, not turned into a 3-byte U+FFFD. */
static void test_cut_character_dropped(void **state) {
        Output o;
        output_init(&o, 7);
        assert_int_equal(output_add(&o, 0, "ab\xE2\x82\xAC", 5), 0);      /* ab€ */
        assert_int_equal(output_add(&o, 1, "\xF0\x9F\x98\x80z", 5), 0); /* 😀 cut after 2 bytes */
        assert_true(o.truncated);
        assert_int_equal(output_finish(&o), 0);
        assert_true(o.truncated);
        assert_int_equal(o.stream[0].len, 5);
        assert_int_equal(o.stream[1].len, 0);
        assert_null(strstr(o.stream[1].data ? o.stream[1].data : "", "\xEF\xBF\xBD"));
        output_done(&o);
}

/* The cut may be at a read boundary: the cap filled exactly, the character's rest came later. */
static void test_cut_at_read_boundary(void **state) {
        Output o;
        output_init(&o, 4);
        assert_int_equal(output_add(&o, 1, "a\xE2\x82", 3), 0);
        assert_int_equal(output_add(&o, 0, "b", 1), 0);
        assert_int_equal(output_add(&o, 1, "\xAC", 1), 0); /* nothing fits */
        assert_int_equal(output_add(&o, 0, "\xC3", 1), 0); /* nothing fits either */
        assert_int_equal(output_finish(&o), 0);
        assert_true(o.truncated);
        expect_kept(&o, 0, "b", 1);
        expect_kept(&o, 1, "a", 1); /* stderr's cut "\xE2\x82" dropped */
        output_done(&o);
}

/* Invalid bytes that repair makes longer still fit the cap, whole characters only. */
static void test_repair_growth_held_to_cap(void **state) {
        Output o;
        output_init(&o, 6);
        assert_int_equal(output_add(&o, 0, "\xFF\xFF", 2), 0);   /* 6 bytes once repaired */
        assert_int_equal(output_add(&o, 1, "x\xFE", 2), 0);      /* 4 bytes once repaired */
        assert_false(o.truncated);
        assert_int_equal(output_finish(&o), 0);
        assert_true(o.truncated);
        assert_true(o.stream[0].len + o.stream[1].len <= 6);
        /* stderr got the last bytes: trimmed first, at a character boundary */
        assert_int_equal(o.stream[0].len, 6);
        assert_int_equal(o.stream[1].len, 0);
        output_done(&o);
}

/* Valid output under the cap is untouched and not truncated; an unfinished character at the end
 * of an output that was not cut is the program's and is repaired, as before. */
static void test_finish_keeps_valid_output(void **state) {
        Output o;
        output_init(&o, 64);
        assert_int_equal(output_add(&o, 0, "h\xC3\xA9", 3), 0);
        assert_int_equal(output_add(&o, 1, "\xE2\x82", 2), 0);
        assert_int_equal(output_finish(&o), 0);
        assert_false(o.truncated);
        expect_kept(&o, 0, "h\xC3\xA9", 3);
        expect_kept(&o, 1, "\xEF\xBF\xBD", 3);
        output_done(&o);
}

/* Alternating 3- and 4-byte characters on both streams, every cap: never over, never a U+FFFD. */
static void test_alternating_multibyte_every_cap(void **state) {
        for (uint64_t cap = 1; cap <= 64; cap++) {
                Output o;
                output_init(&o, cap);
                for (int i = 0; i < 20; i++)
                        assert_int_equal(i % 2 ? output_add(&o, 1, "\xF0\x9F\x98\x80", 4)
                                               : output_add(&o, 0, "\xE2\x82\xAC", 3), 0);
                assert_int_equal(output_finish(&o), 0);
                assert_true(o.truncated);
                assert_true(o.stream[0].len + o.stream[1].len <= cap);
                for (int s = 0; s < 2; s++)
                        assert_null(strstr(o.stream[s].data ? o.stream[s].data : "", "\xEF\xBF\xBD"));
                output_done(&o);
        }
}

/* Issue 17.4: the output streamed while a run goes on, read in chunks cut anywhere (inside
 * characters, between an invalid byte and what follows), is exactly the result's text when it fits
 * the cap, and a prefix of it within the cap when it does not (prefix: checked unless repairs grew
 * the text past the cap, where output_finish() may cut what was streamed: output.h). */
static void stream_all(size_t cap, const char *data, size_t len, size_t chunk, bool prefix,
                       char *got[2], size_t got_len[2], uint64_t *ret_sent, bool *ret_said_truncated) {
        Output o;
        OutputCursor cur = {};
        output_init(&o, cap);
        got_len[0] = got_len[1] = 0;
        *ret_said_truncated = false;
        for (size_t i = 0; i < len; i += chunk) {
                size_t n = len - i < chunk ? len - i : chunk;
                /* Valid text: each stream gets it all, chunk by chunk in turn. Invalid: the chunks
                 * are dealt out, so characters are split between the streams too. */
                if (prefix) {
                        assert_int_equal(output_add(&o, 0, data + i, n), 0);
                        assert_int_equal(output_add(&o, 1, data + i, n), 0);
                } else
                        assert_int_equal(output_add(&o, (int) (i / chunk) % 3 == 2, data + i, n), 0);
                char *piece[2];
                size_t plen[2];
                bool truncated;
                assert_int_equal(output_stream_next(&o, &cur, piece, plen, &truncated), 0);
                for (int s = 0; s < 2; s++) {
                        if (plen[s] > 0) {
                                memcpy(got[s] + got_len[s], piece[s], plen[s]);
                                got_len[s] += plen[s];
                        }
                        free(piece[s]);
                }
                if (truncated) {
                        assert_false(*ret_said_truncated); /* said once */
                        *ret_said_truncated = true;
                }
        }
        *ret_sent = cur.sent;
        assert_int_equal(output_finish(&o), 0);
        for (int s = 0; s < 2 && prefix; s++) {
                if (got_len[s] > o.stream[s].len)
                        fail_msg("cap %zu chunk %zu stream %d: streamed %zu, result %zu", cap, chunk, s,
                                 got_len[s], o.stream[s].len);
                assert_memory_equal(got[s], o.stream[s].data ?: "", got_len[s]);
        }
        /* Finished: nothing more is streamed (the result has it all). */
        char *piece[2];
        size_t plen[2];
        bool truncated;
        assert_int_equal(output_stream_next(&o, &cur, piece, plen, &truncated), 0);
        assert_true(plen[0] == 0 && plen[1] == 0 && !piece[0] && !piece[1]);
        output_done(&o);
}

static void stream_every_way(const char *data, bool valid) {
        size_t len = strlen(data);
        char *got[2] = { malloc(len * 3 + 1), malloc(len * 3 + 1) };
        assert_non_null(got[0]);
        assert_non_null(got[1]);
        size_t got_len[2];
        uint64_t sent;
        bool said;
        for (size_t chunk = 1; chunk <= len; chunk++) {
                stream_all(1000, data, len, chunk, valid, got, got_len, &sent, &said);
                assert_false(said);
                assert_int_equal(sent, got_len[0] + got_len[1]);
                for (size_t cap = 1; cap < len + 8; cap++) {
                        stream_all(cap, data, len, chunk, valid, got, got_len, &sent, &said);
                        assert_true(sent <= cap);
                        assert_int_equal(sent, got_len[0] + got_len[1]);
                        if (cap < (valid ? 2 * len : len))
                                assert_true(said); /* the cap dropped bytes: said so */
                }
        }
        free(got[0]);
        free(got[1]);
}

static void test_stream_pieces_are_the_result(void **state) {
        /* ASCII and 2-, 3- and 4-byte characters; then invalid bytes too, and a truncated sequence
         * before ASCII. */
        stream_every_way("ab\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80 x\xc3\xa9y \xe2\x82\xac z\n", true);
        stream_every_way("ab\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80 \xff\xfe x\xe2\x82y "
                         "\xed\xa0\x80 z", false);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_under_cap_keeps_all),
                cmocka_unit_test(test_cap_is_combined_first_bytes_kept),
                cmocka_unit_test(test_flood_does_not_grow),
                cmocka_unit_test(test_exact_fit_not_truncated),
                cmocka_unit_test(test_cut_character_dropped),
                cmocka_unit_test(test_cut_at_read_boundary),
                cmocka_unit_test(test_repair_growth_held_to_cap),
                cmocka_unit_test(test_finish_keeps_valid_output),
                cmocka_unit_test(test_alternating_multibyte_every_cap),
                cmocka_unit_test(test_stream_pieces_are_the_result),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
