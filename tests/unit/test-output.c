/* test-output.c: the combined output cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "output.h"

static void test_under_cap_keeps_all(void **state) {
        Output o;
        output_init(&o, 10);
        assert_int_equal(output_add(&o, 0, "abc", 3), 0);
        assert_int_equal(output_add(&o, 1, "de", 2), 0);
        assert_false(o.truncated);
        assert_int_equal(o.stream[0].len, 3);
        assert_int_equal(o.stream[1].len, 2);
        output_done(&o);
}

static void test_cap_is_combined_first_bytes_kept(void **state) {
        Output o;
        output_init(&o, 5);
        assert_int_equal(output_add(&o, 0, "abc", 3), 0);
        assert_int_equal(output_add(&o, 1, "defg", 4), 0); /* only "de" fits */
        assert_int_equal(output_add(&o, 0, "hij", 3), 0);  /* nothing fits */
        assert_true(o.truncated);
        assert_int_equal(o.stream[0].len, 3);
        assert_memory_equal(o.stream[0].data, "abc", 3);
        assert_int_equal(o.stream[1].len, 2);
        assert_memory_equal(o.stream[1].data, "de", 2);
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
        assert_int_equal(o.stream[0].len, 1);
        assert_memory_equal(o.stream[0].data, "b", 1);
        assert_int_equal(o.stream[1].len, 1); /* stderr's cut "\xE2\x82" dropped */
        assert_memory_equal(o.stream[1].data, "a", 1);
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
        assert_int_equal(o.stream[0].len, 3);
        assert_memory_equal(o.stream[0].data, "h\xC3\xA9", 3);
        assert_int_equal(o.stream[1].len, 3);
        assert_memory_equal(o.stream[1].data, "\xEF\xBF\xBD", 3);
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
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
