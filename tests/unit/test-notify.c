/* test-notify.c: daemon/loop/notify.h: the STATUS= line `systemctl status` shows (issue 33.5). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "notify.h"

static void test_format(void **state) {
        static const struct {
                NotifyStatus st;
                const char *line;
        } cases[] = {
                { { .slots = 4, .pool_size = 2 }, "runs 0/4, queued 0; pool 0/2 ready; sessions 0; tenants 0; 0 total" },
                { { .running = 3, .slots = 4, .queued = 1, .pool_ready = 2, .pool_size = 2, .sessions = 1, .tenants = 2,
                    .busiest = "alice", .busiest_calls = 3, .total = 127 },
                  "runs 3/4, queued 1; pool 2/2 ready; sessions 1; tenants 2, busiest alice (3); 127 total" },
                /* No pool (MCP_EXEC_WARM_POOL=0). */
                { { .running = 1, .slots = 1, .sessions = 8, .total = 5 },
                  "runs 1/1, queued 0; pool off; sessions 8; tenants 0; 5 total" },
                /* The caller without a tenant (no authentication) has the empty name: no name shown. */
                { { .running = 1, .slots = 2, .tenants = 1, .busiest = "", .busiest_calls = 1 },
                  "runs 1/2, queued 0; pool off; sessions 0; tenants 1; 0 total" },
                /* A name is cut, and what is not printable ASCII cannot break the line. */
                { { .slots = 2, .tenants = 1, .busiest = "a\nREADY=1", .busiest_calls = 1 },
                  "runs 0/2, queued 0; pool off; sessions 0; tenants 1, busiest a?READY=1 (1); 0 total" },
                { { .slots = 2, .tenants = 1, .busiest = "abcdefghijklmnopqrstuvwxyz0123456789", .busiest_calls = 9 },
                  "runs 0/2, queued 0; pool off; sessions 0; tenants 1, busiest abcdefghijklmnopqrstuvwxyz012345… (9); 0 total" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char line[NOTIFY_STATUS_MAX];
                notify_status_format(&cases[i].st, line, sizeof(line));
                print_message("case %zu: %s\n", i, line);
                assert_string_equal(line, cases[i].line);
                assert_null(strchr(line, '\n'));
        }
}

static void test_format_bounded(void **state) {
        /* Every number at its largest still fits, whole. */
        NotifyStatus st = { .running = UINT32_MAX, .slots = UINT32_MAX, .queued = UINT32_MAX, .pool_ready = UINT32_MAX,
                            .pool_size = UINT32_MAX, .sessions = UINT32_MAX, .tenants = UINT32_MAX,
                            .busiest = "abcdefghijklmnopqrstuvwxyz0123456789", .busiest_calls = UINT32_MAX,
                            .total = UINT64_MAX };
        char line[NOTIFY_STATUS_MAX];
        notify_status_format(&st, line, sizeof(line));
        assert_true(strlen(line) < sizeof(line) - 1);
        assert_non_null(strstr(line, "; 18446744073709551615 total"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_format_bounded),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
