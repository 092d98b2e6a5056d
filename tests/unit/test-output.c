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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_under_cap_keeps_all),
                cmocka_unit_test(test_cap_is_combined_first_bytes_kept),
                cmocka_unit_test(test_flood_does_not_grow),
                cmocka_unit_test(test_exact_fit_not_truncated),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
