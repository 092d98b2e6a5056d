/* test-report.c: report/ without the journal: the sums of made-up records (outcomes, reasons,
 * errors, exact percentiles, the warm hit rate, measures absent from old records, tenants and the
 * tenant filter), the times --since and --until accept, and the JSON and text the report prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "report-output.h"
#include "report-time.h"
#include "exec-account.h"
#include "report.h"

#define T0 UINT64_C(1733400000000000) /* 2024-12-05 12:00:00 UTC */

/* A run record with the five measures every record has had since the first release. */
static ReportRecord run_record(uint64_t t, const char *outcome, uint64_t duration_ms, uint64_t queue_ms) {
        ReportRecord rec = { .kind = REPORT_RUN, .realtime_usec = t, .outcome = outcome, .warm = -1 };
        report_record_set(&rec, REPORT_DURATION_MS, duration_ms);
        report_record_set(&rec, REPORT_QUEUE_MS, queue_ms);
        report_record_set(&rec, REPORT_MEMORY_PEAK_BYTES, 10 * 1024 * 1024);
        report_record_set(&rec, REPORT_CPU_USER_US, 1000);
        report_record_set(&rec, REPORT_CPU_SYSTEM_US, 500);
        return rec;
}

static const ReportCount *find_count(const ReportCount *v, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i].name, name) == 0)
                        return &v[i];
        return NULL;
}

static uint64_t outcome(const ReportSummary *s, const char *name) {
        const ReportCount *c = find_count(s->outcomes, s->n_outcomes, name);
        assert_non_null(c);
        return c->count;
}

/* ---- percentiles and the sort ----------------------------------------------------------------- */

static void test_percentile_nearest_rank(void **state) {
        uint64_t v[100];
        for (size_t i = 0; i < 100; i++)
                v[i] = i + 1;
        assert_int_equal(report_percentile(v, 100, 50), 50);
        assert_int_equal(report_percentile(v, 100, 95), 95);
        assert_int_equal(report_percentile(v, 100, 99), 99);
        assert_int_equal(report_percentile(v, 100, 100), 100);
        /* ceil(10 × 0.5) = 5, ceil(10 × 0.95) = 10 */
        assert_int_equal(report_percentile(v, 10, 50), 5);
        assert_int_equal(report_percentile(v, 10, 95), 10);
        assert_int_equal(report_percentile(v, 10, 99), 10);
        assert_int_equal(report_percentile(v, 1, 50), 1);
        assert_int_equal(report_percentile(v, 1, 99), 1);
        /* 3 values: ceil(1.5) = 2 */
        assert_int_equal(report_percentile(v, 3, 50), 2);
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void test_sort(void **state) {
        enum { N = 5000 };
        uint64_t *v = malloc(N * sizeof(*v)), *w = malloc(N * sizeof(*w));
        assert_non_null(v);
        assert_non_null(w);
        uint64_t x = 88172645463325252ULL;
        for (size_t i = 0; i < N; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
                /* small values, values past 2^32 and past 2^63, duplicates */
                v[i] = i % 4 == 0 ? x % 1000 : i % 4 == 1 ? x : i % 4 == 2 ? (x >> 20) : 42;
        }
        memcpy(w, v, N * sizeof(*v));
        assert_int_equal(report_sort_u64(v, N), 0);
        qsort(w, N, sizeof(*w), cmp_u64);
        assert_memory_equal(v, w, N * sizeof(*v));
        /* values of one byte, and a single one */
        uint64_t small[] = { 3, 1, 2, 0, 255 };
        assert_int_equal(report_sort_u64(small, 5), 0);
        assert_int_equal(small[0], 0);
        assert_int_equal(small[4], 255);
        assert_int_equal(report_sort_u64(small, 1), 0);
        free(v);
        free(w);
}

/* ---- the sums -------------------------------------------------------------------------------- */

/* 100 runs of 1..100 ms (queue 0..99 ms), 10 of them warm; 3 errors of one text, 1 of another; 2
 * refused calls; one record without WARM. */
static Report *made_up_report(const char *filter) {
        Report *r = NULL;
        assert_int_equal(report_new(filter, &r), 0);
        for (uint64_t i = 1; i <= 100; i++) {
                ReportRecord rec = run_record(T0 + i * 1000000, i % 10 == 0 ? "nonzero" : "ok", i, i - 1);
                rec.warm = i <= 10;
                rec.tenant = i % 2 ? "alpha" : "beta";
                rec.py_session = i > 95;
                assert_int_equal(report_add(r, &rec), 0);
        }
        for (int i = 0; i < 4; i++) {
                ReportRecord rec = run_record(T0 + 200 * 1000000, "error", 99999, 7);
                rec.error = i < 3 ? "systemd did not create the run's scope within 5 s" : "out of memory";
                rec.tenant = "alpha";
                rec.warm = 0;
                assert_int_equal(report_add(r, &rec), 0);
        }
        ReportRecord rej = { .kind = REPORT_REJECTED, .realtime_usec = T0, .outcome = "rejected",
                             .reason = "queue-full", .warm = -1 };
        assert_int_equal(report_add(r, &rej), 0);
        rej.reason = "invalid-arguments";
        rej.tenant = "beta";
        rej.realtime_usec = T0 + 300 * 1000000;
        assert_int_equal(report_add(r, &rej), 0);
        ReportRecord old = run_record(T0 + 150 * 1000000, "timeout", 2000, 3);
        assert_int_equal(report_add(r, &old), 0);
        assert_int_equal(report_finish(r), 0);
        return r;
}

static void test_sums(void **state) {
        Report *r = made_up_report(NULL);
        const ReportSummary *s = report_total(r);
        assert_null(s->tenant);
        assert_int_equal(s->calls, 107);
        assert_int_equal(s->runs, 105);
        assert_int_equal(s->rejected, 2);
        assert_int_equal(s->session_calls, 5);
        assert_int_equal(outcome(s, "ok"), 90);
        assert_int_equal(outcome(s, "nonzero"), 10);
        assert_int_equal(outcome(s, "error"), 4);
        assert_int_equal(outcome(s, "timeout"), 1);
        assert_int_equal(outcome(s, "rejected"), 2);
        assert_int_equal(outcome(s, "oom"), 0);
        /* every outcome of metrics.h, in its order, and nothing else */
        assert_int_equal(s->n_outcomes, 9);
        assert_string_equal(s->outcomes[0].name, "ok");
        assert_string_equal(s->outcomes[8].name, "error");

        assert_int_equal(s->n_reasons, 2);
        assert_int_equal(find_count(s->reasons, 2, "queue-full")->count, 1);
        assert_int_equal(find_count(s->reasons, 2, "invalid-arguments")->count, 1);

        assert_int_equal(s->n_errors, 2);
        assert_int_equal(s->errors_distinct, 2);
        assert_string_equal(s->errors[0].name, "systemd did not create the run's scope within 5 s");
        assert_int_equal(s->errors[0].count, 3);
        assert_int_equal(s->errors[1].count, 1);

        /* WARM: 100 + 4 records say it (the timeout's does not), less the 5 session calls; 10 hits */
        assert_int_equal(s->warm_known, 99);
        assert_int_equal(s->warm_hits, 10);

        /* Durations: 1..100 and 2000 (the errors' 99999 are not durations) */
        const ReportStats *d = &s->stats[REPORT_DURATION_MS];
        assert_int_equal(d->count, 101);
        assert_int_equal(d->p50, 51); /* rank ceil(50.5) = 51 */
        assert_int_equal(d->p95, 96); /* rank ceil(95.95) = 96 */
        assert_int_equal(d->p99, 100); /* rank ceil(99.99) = 100 */
        assert_int_equal(d->max, 2000);
        assert_int_equal(d->sum, 5050 + 2000);
        /* Queue waits: every run's, errors' included: 0..99, 7 ×4, 3 */
        const ReportStats *q = &s->stats[REPORT_QUEUE_MS];
        assert_int_equal(q->count, 105);
        assert_int_equal(q->max, 99);
        assert_int_equal(q->sum, 4950 + 28 + 3);
        /* Memory peaks of runs that ran */
        assert_int_equal(s->stats[REPORT_MEMORY_PEAK_BYTES].count, 101);
        assert_int_equal(s->stats[REPORT_CPU_USER_US].sum, 105 * 1000);
        /* The measures of issue 33.1 are in none of these records */
        for (ReportMeasure m = REPORT_CPU_PRESSURE_SOME_US; m < _REPORT_MEASURE_MAX; m++)
                assert_int_equal(s->stats[m].count, 0);

        assert_int_equal(s->first_usec, T0);
        assert_int_equal(s->last_usec, T0 + 300 * 1000000);

        /* Tenants, by name; the runs without one are in the whole only */
        assert_int_equal(report_n_tenants(r), 2);
        const ReportSummary *a = report_tenant(r, 0), *b = report_tenant(r, 1);
        assert_string_equal(a->tenant, "alpha");
        assert_string_equal(b->tenant, "beta");
        assert_null(report_tenant(r, 2));
        assert_int_equal(a->calls, 54); /* 50 odd runs + 4 errors */
        assert_int_equal(a->rejected, 0);
        assert_int_equal(outcome(a, "error"), 4);
        assert_int_equal(a->n_errors, 2);
        assert_int_equal(a->stats[REPORT_DURATION_MS].count, 50);
        assert_int_equal(a->stats[REPORT_DURATION_MS].max, 99);
        assert_int_equal(a->warm_hits, 5);
        assert_int_equal(b->calls, 51); /* 50 even runs + 1 refused */
        assert_int_equal(b->rejected, 1);
        assert_int_equal(outcome(b, "nonzero"), 10);
        assert_int_equal(b->stats[REPORT_DURATION_MS].p50, 50); /* 2..100 even: rank 25 is 50 */
        assert_int_equal(b->n_errors, 0);

        /* finished: nothing more is added */
        ReportRecord late = run_record(T0, "ok", 1, 1);
        assert_int_equal(report_add(r, &late), -EBUSY);
        report_free(r);
}

static void test_tenant_filter(void **state) {
        Report *r = made_up_report("beta");
        const ReportSummary *s = report_total(r);
        assert_string_equal(report_tenant_filter(r), "beta");
        assert_int_equal(s->calls, 51);
        assert_int_equal(s->runs, 50);
        assert_int_equal(outcome(s, "error"), 0);
        assert_int_equal(s->stats[REPORT_DURATION_MS].count, 50);
        assert_int_equal(report_n_tenants(r), 1);
        assert_string_equal(report_tenant(r, 0)->tenant, "beta");
        report_free(r);

        assert_int_equal(report_new("nobody", &r), 0);
        ReportRecord rec = run_record(T0, "ok", 1, 1);
        assert_int_equal(report_add(r, &rec), 0); /* no tenant: not nobody's */
        assert_int_equal(report_finish(r), 0);
        assert_int_equal(report_total(r)->calls, 0);
        assert_int_equal(report_total(r)->stats[REPORT_DURATION_MS].count, 0);
        report_free(r);
}

/* Records of issue 33.1 have the new measures; old ones do not: each is summed over the runs that
 * have it, and a memory peak of 0 is unknown, as in /metrics. */
static void test_optional_measures(void **state) {
        Report *r = NULL;
        assert_int_equal(report_new(NULL, &r), 0);
        for (uint64_t i = 1; i <= 20; i++) {
                ReportRecord rec = run_record(T0 + i, "ok", 10, 0);
                if (i <= 4) {
                        report_record_set(&rec, REPORT_CPU_PRESSURE_SOME_US, i * 1000);
                        report_record_set(&rec, REPORT_MEMORY_PRESSURE_FULL_US, 0);
                        report_record_set(&rec, REPORT_PIDS_PEAK, i);
                        report_record_set(&rec, REPORT_IO_WRITE_BYTES, 4096);
                }
                if (i == 20)
                        report_record_set(&rec, REPORT_MEMORY_PEAK_BYTES, 0);
                assert_int_equal(report_add(r, &rec), 0);
        }
        assert_int_equal(report_finish(r), 0);
        const ReportSummary *s = report_total(r);
        const ReportStats *cpu = &s->stats[REPORT_CPU_PRESSURE_SOME_US];
        assert_int_equal(cpu->count, 4);
        assert_int_equal(cpu->sum, 10000);
        assert_int_equal(cpu->p50, 2000);
        assert_int_equal(cpu->max, 4000);
        assert_int_equal(s->stats[REPORT_MEMORY_PRESSURE_FULL_US].count, 4); /* 0 is a value here */
        assert_int_equal(s->stats[REPORT_MEMORY_PRESSURE_FULL_US].max, 0);
        assert_int_equal(s->stats[REPORT_PIDS_PEAK].p99, 4);
        assert_int_equal(s->stats[REPORT_IO_WRITE_BYTES].sum, 4 * 4096);
        assert_int_equal(s->stats[REPORT_IO_READ_BYTES].count, 0);
        assert_int_equal(s->stats[REPORT_MEMORY_PEAK_BYTES].count, 19);
        assert_int_equal(s->warm_known, 0);
        report_free(r);
}

/* More distinct errors than the list holds: the most frequent first, ties by text, the rest counted. */
static void test_top_errors(void **state) {
        Report *r = NULL;
        assert_int_equal(report_new(NULL, &r), 0);
        for (int e = 0; e < 15; e++) {
                char text[64];
                snprintf(text, sizeof(text), "error %02d", e);
                for (int k = 0; k <= e % 5; k++) {
                        ReportRecord rec = run_record(T0, "error", 0, 0);
                        rec.error = text;
                        assert_int_equal(report_add(r, &rec), 0);
                }
        }
        assert_int_equal(report_finish(r), 0);
        const ReportSummary *s = report_total(r);
        assert_int_equal(s->errors_distinct, 15);
        assert_int_equal(s->n_errors, REPORT_TOP_ERRORS);
        /* counts 5 (04, 09, 14), 4 (03, 08, 13), 3 (02, 07, 12), 2 (01, ...) */
        assert_string_equal(s->errors[0].name, "error 04");
        assert_string_equal(s->errors[2].name, "error 14");
        assert_int_equal(s->errors[2].count, 5);
        assert_string_equal(s->errors[3].name, "error 03");
        assert_int_equal(s->errors[9].count, 2);
        assert_string_equal(s->errors[9].name, "error 01");
        /* an error has no duration: the runs' durations are not recorded */
        assert_int_equal(s->stats[REPORT_DURATION_MS].count, 0);
        assert_int_equal(s->stats[REPORT_QUEUE_MS].count, s->runs);
        report_free(r);
}

/* An unknown outcome word (a newer daemon's) is counted under its name, after metrics.h's. */
static void test_unknown_outcome(void **state) {
        Report *r = NULL;
        assert_int_equal(report_new(NULL, &r), 0);
        ReportRecord rec = run_record(T0, "evicted", 5, 0), none = run_record(T0, NULL, 5, 0);
        assert_int_equal(report_add(r, &rec), 0);
        assert_int_equal(report_add(r, &none), 0);
        assert_int_equal(report_finish(r), 0);
        const ReportSummary *s = report_total(r);
        assert_int_equal(s->n_outcomes, 11);
        assert_string_equal(s->outcomes[9].name, "evicted");
        assert_int_equal(s->outcomes[9].count, 1);
        assert_string_equal(s->outcomes[10].name, "(none)");
        report_free(r);
}

/* Many tenants: the index grows and each keeps its own counts. */
static void test_many_tenants(void **state) {
        Report *r = NULL;
        assert_int_equal(report_new(NULL, &r), 0);
        for (int k = 0; k < 3; k++)
                for (int i = 0; i < 300; i++) {
                        char name[32];
                        snprintf(name, sizeof(name), "t%03d", i);
                        ReportRecord rec = run_record(T0, "ok", (uint64_t) i, 0);
                        rec.tenant = name;
                        assert_int_equal(report_add(r, &rec), 0);
                }
        assert_int_equal(report_finish(r), 0);
        assert_int_equal(report_n_tenants(r), 300);
        for (size_t i = 0; i < 300; i++) {
                const ReportSummary *t = report_tenant(r, i);
                char name[32];
                snprintf(name, sizeof(name), "t%03zu", i);
                assert_string_equal(t->tenant, name);
                assert_int_equal(t->calls, 3);
                assert_int_equal(t->stats[REPORT_DURATION_MS].max, i);
        }
        report_free(r);
}

static void test_measure_table(void **state) {
        for (ReportMeasure m = 0; m < _REPORT_MEASURE_MAX; m++) {
                const ReportMeasureInfo *info = report_measure_info(m);
                assert_non_null(info);
                assert_int_equal(report_measure_from_field(info->field, strlen(info->field)), m);
                /* the JSON key is the field in lower case */
                assert_int_equal(strlen(info->key), strlen(info->field));
                for (size_t i = 0; info->field[i]; i++)
                        assert_true(info->key[i] == (info->field[i] >= 'A' && info->field[i] <= 'Z'
                                                             ? info->field[i] - 'A' + 'a'
                                                             : info->field[i]));
        }
        assert_int_equal(report_measure_from_field("DURATION_M", 10), -1);
        assert_int_equal(report_measure_from_field("DURATION_MS_", 12), -1);
        assert_null(report_measure_info(_REPORT_MEASURE_MAX));
}

/* ---- times ----------------------------------------------------------------------------------- */

static uint64_t parse_ok(const char *s, uint64_t now) {
        uint64_t t = 0;
        int r = report_time_parse(s, now, &t);
        if (r != 0)
                fail_msg("'%s' was refused (%d)", s, r);
        return t;
}

static void test_time_parse(void **state) {
        setenv("TZ", "UTC", 1); /* local time is UTC for the date forms */
        tzset();
        const uint64_t now = T0 + 1234567; /* 2024-12-05 12:00:01.234567 */
        const uint64_t S = 1000000;

        assert_int_equal(parse_ok("now", now), now);
        assert_int_equal(parse_ok("today", now), T0 - 12 * 3600 * S);
        assert_int_equal(parse_ok("yesterday", now), T0 - 36 * 3600 * S);
        assert_int_equal(parse_ok("tomorrow", now), T0 + 12 * 3600 * S);
        assert_int_equal(parse_ok("@1733400000", now), T0);
        assert_int_equal(parse_ok("@1733400000.25", now), T0 + 250000);
        assert_int_equal(parse_ok("@0", now), 0);
        assert_int_equal(parse_ok("-1h", now), now - 3600 * S);
        assert_int_equal(parse_ok("-30min", now), now - 1800 * S);
        assert_int_equal(parse_ok("-1h30min", now), now - 5400 * S);
        assert_int_equal(parse_ok("-1h 30min", now), now - 5400 * S);
        assert_int_equal(parse_ok("-90s", now), now - 90 * S);
        assert_int_equal(parse_ok("-90", now), now - 90 * S);
        assert_int_equal(parse_ok("-500ms", now), now - 500000);
        assert_int_equal(parse_ok("-2 days", now), now - 2 * 86400 * S);
        assert_int_equal(parse_ok("-1w", now), now - 7 * 86400 * S);
        assert_int_equal(parse_ok("2 days ago", now), now - 2 * 86400 * S);
        assert_int_equal(parse_ok("5min ago", now), now - 300 * S);
        assert_int_equal(parse_ok("+1h", now), now + 3600 * S);
        assert_int_equal(parse_ok("2024-12-05 12:00:00", now), T0);
        assert_int_equal(parse_ok("2024-12-05T12:00:00", now), T0);
        assert_int_equal(parse_ok("2024-12-05 12:00", now), T0);
        assert_int_equal(parse_ok("2024-12-05 12:00:00.5", now), T0 + 500000);
        assert_int_equal(parse_ok("2024-12-05 12:00:00 UTC", now), T0);
        assert_int_equal(parse_ok("2024-12-05T12:00:00Z", now), T0);
        assert_int_equal(parse_ok("2024-12-05", now), T0 - 12 * 3600 * S);
        assert_int_equal(parse_ok("2024-02-29", now), UINT64_C(1709164800) * S); /* a leap day */

        /* Local time is local: in UTC+1 the same words are an hour earlier, " UTC" stays put. */
        setenv("TZ", "CET-1", 1);
        tzset();
        assert_int_equal(parse_ok("2024-12-05 12:00:00", now), T0 - 3600 * S);
        assert_int_equal(parse_ok("2024-12-05 12:00:00 UTC", now), T0);
        assert_int_equal(parse_ok("today", now), T0 - 13 * 3600 * S);
        setenv("TZ", "UTC", 1);
        tzset();

        static const char *const bad[] = {
                "", "-", "+", "@", "@-5", "@12x", "@1.", "-1x", "-h", "-1h30", "1h", "ago", " ago", "-1 h 5",
                "2024-13-01", "2024-00-10", "2024-02-30", "2023-02-29", "2024-12-05 24:00", "2024-12-05 12:60",
                "2024-12-05 12:00:61", "2024-12-5", "24-12-05", "2024/12/05", "2024-12-05 12", "2024-12-05 12:00 CET",
                "2024-12-05x", "Thu 2024-12-05", "now ", "today!", "1733400000",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                uint64_t t = 42;
                if (report_time_parse(bad[i], now, &t) >= 0)
                        fail_msg("'%s' was accepted as %llu", bad[i], (unsigned long long) t);
                assert_int_equal(t, 42); /* untouched */
        }
        uint64_t t;
        assert_int_equal(report_time_parse("-100 weeks", 1000, &t), -ERANGE); /* before the epoch */
        assert_int_equal(report_time_parse("@99999999999999", now, &t), -ERANGE); /* past 9999 */
        assert_int_equal(report_time_parse("1969-12-31 23:00:00 UTC", now, &t), -ERANGE);
        assert_int_equal(report_time_parse("-99999999999999999999s", now, &t), -ERANGE);
}

static void test_time_format(void **state) {
        char buf[REPORT_TIME_MAX];
        assert_string_equal(report_time_format(T0 + 999999, buf), "2024-12-05 12:00:00 UTC");
        assert_string_equal(report_time_format_iso(T0 + 1, buf), "2024-12-05T12:00:00.000001Z");
        /* what the report writes, --since reads back */
        uint64_t t = 0;
        setenv("TZ", "CET-1", 1);
        tzset();
        assert_int_equal(report_time_parse(report_time_format(T0, buf), 0, &t), 0);
        assert_int_equal(t, T0);
        assert_int_equal(report_time_parse(report_time_format_iso(T0 + 5, buf), 0, &t), 0);
        assert_int_equal(t, T0 + 5);
}

/* ---- output ---------------------------------------------------------------------------------- */

static void test_json(void **state) {
        Report *r = made_up_report(NULL);
        ReportRange range = { .since_usec = T0, .until_usec = UINT64_MAX };
        char *text = NULL;
        assert_int_equal(report_format_json(r, &range, &text), 0);
        json_error_t err;
        json_t *o = json_loads(text, 0, &err);
        if (!o)
                fail_msg("not JSON (%s): %s", err.text, text);
        assert_int_equal(json_integer_value(json_object_get(o, "report_version")), REPORT_JSON_VERSION);
        assert_string_equal(json_string_value(json_object_get(o, "since")), "2024-12-05T12:00:00.000000Z");
        assert_true(json_is_null(json_object_get(o, "until")));
        assert_true(json_is_null(json_object_get(o, "tenant")));
        assert_int_equal(json_integer_value(json_object_get(o, "calls")), 107);
        assert_int_equal(json_integer_value(json_object_get(o, "runs")), 105);
        assert_int_equal(json_integer_value(json_object_get(o, "rejected")), 2);
        assert_int_equal(json_integer_value(json_object_get(o, "session_calls")), 5);
        assert_string_equal(json_string_value(json_object_get(o, "last_record")), "2024-12-05T12:05:00.000000Z");
        json_t *outcomes = json_object_get(o, "outcomes");
        assert_int_equal(json_object_size(outcomes), 9);
        assert_int_equal(json_integer_value(json_object_get(outcomes, "ok")), 90);
        assert_int_equal(json_integer_value(json_object_get(outcomes, "oom")), 0);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "rejected_reasons"), "queue-full")), 1);
        json_t *warm = json_object_get(o, "warm");
        assert_int_equal(json_integer_value(json_object_get(warm, "runs")), 99);
        assert_int_equal(json_integer_value(json_object_get(warm, "hits")), 10);
        assert_true(json_real_value(json_object_get(warm, "rate")) > 0.1010 &&
                    json_real_value(json_object_get(warm, "rate")) < 0.1011);
        json_t *measures = json_object_get(o, "measures");
        assert_int_equal(json_object_size(measures), _REPORT_MEASURE_MAX);
        json_t *d = json_object_get(measures, "duration_ms");
        assert_int_equal(json_integer_value(json_object_get(d, "count")), 101);
        assert_int_equal(json_integer_value(json_object_get(d, "p50")), 51);
        assert_int_equal(json_integer_value(json_object_get(d, "p95")), 96);
        assert_int_equal(json_integer_value(json_object_get(d, "p99")), 100);
        assert_int_equal(json_integer_value(json_object_get(d, "max")), 2000);
        assert_int_equal(json_integer_value(json_object_get(d, "sum")), 7050);
        assert_true(json_is_null(json_object_get(measures, "cpu_pressure_some_us")));
        assert_true(json_is_null(json_object_get(measures, "pids_peak")));
        json_t *errors = json_object_get(o, "errors");
        assert_int_equal(json_array_size(errors), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(errors, 0), "error")),
                            "systemd did not create the run's scope within 5 s");
        assert_int_equal(json_integer_value(json_object_get(json_array_get(errors, 0), "count")), 3);
        json_t *tenants = json_object_get(o, "tenants");
        assert_int_equal(json_array_size(tenants), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(tenants, 1), "tenant")), "beta");
        assert_int_equal(json_integer_value(json_object_get(json_array_get(tenants, 1), "calls")), 51);
        /* the keys come in the documented order */
        const char *const order[] = { "report_version", "since", "until", "tenant", "calls", "runs", "rejected",
                                      "session_calls", "first_record", "last_record", "outcomes", "rejected_reasons",
                                      "warm", "measures", "errors", "errors_distinct", "tenants" };
        const char *prev = text;
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
                char key[64];
                snprintf(key, sizeof(key), "\n  \"%s\":", order[i]);
                const char *at = strstr(text, key);
                if (!at || at < prev)
                        fail_msg("key %s missing or out of order in %s", order[i], text);
                prev = at;
        }
        json_decref(o);
        free(text);
        report_free(r);
}

static void test_text(void **state) {
        Report *r = made_up_report(NULL);
        ReportRange range = { .since_usec = 0, .until_usec = T0 + 3600 * UINT64_C(1000000) };
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        assert_int_equal(report_print_text(r, &range, f), 0);
        fclose(f);
        static const char *const want[] = {
                "the first record to 2024-12-05 13:00:00 UTC, all tenants",
                "107 calls: 105 runs (5 in Python sessions), 2 refused",
                "\nok                           90    84.1%\n",
                "\nqueue-full                    1\n",
                "ready sandboxes: 10 of 99 runs (10.1%)",
                "\nduration                      101      51 ms      96 ms     100 ms     2.00 s     7.05 s\n",
                "\nCPU pressure (some)             - not recorded\n",
                "\n         3  systemd did not create the run's scope within 5 s\n",
                "\nalpha ",
                "\nbeta ",
        };
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                if (!strstr(text, want[i]))
                        fail_msg("the text lacks \"%s\":\n%s", want[i], text);
        assert_null(strstr(text, "\noom ")); /* an outcome that did not happen has no row */
        free(text);
        report_free(r);

        /* nothing in range */
        assert_int_equal(report_new("x", &r), 0);
        assert_int_equal(report_finish(r), 0);
        f = open_memstream(&text, &len);
        assert_int_equal(report_print_text(r, &range, f), 0);
        fclose(f);
        assert_non_null(strstr(text, "tenant x"));
        assert_non_null(strstr(text, "no calls recorded"));
        free(text);
        report_free(r);
}

/* The kernel's account (base/exec-account.h, what metrics.c writes): every field is a measure of the
 * report, under the same journal field and JSON key, a peak where it is one. */
static void test_account_fields(void **state) {
        for (ExecAccountField f = 0; f < _EXEC_ACCOUNT_MAX; f++) {
                const char *field = exec_account_field(f);
                int m = report_measure_from_field(field, strlen(field));
                assert_true(m >= 0);
                const ReportMeasureInfo *info = report_measure_info((ReportMeasure) m);
                assert_string_equal(info->key, exec_account_name(f));
                assert_int_equal(info->peak, exec_account_is_peak(f));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_account_fields),
                cmocka_unit_test(test_percentile_nearest_rank),
                cmocka_unit_test(test_sort),
                cmocka_unit_test(test_sums),
                cmocka_unit_test(test_tenant_filter),
                cmocka_unit_test(test_optional_measures),
                cmocka_unit_test(test_top_errors),
                cmocka_unit_test(test_unknown_outcome),
                cmocka_unit_test(test_many_tenants),
                cmocka_unit_test(test_measure_table),
                cmocka_unit_test(test_time_parse),
                cmocka_unit_test(test_time_format),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_text),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
