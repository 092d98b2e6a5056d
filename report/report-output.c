/* report-output.c: a finished report as text tables or as one JSON object (its keys and their
 * order are the stable interface mcp-execd(8) documents; REPORT_JSON_VERSION changes if they do). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "metrics.h"
#include "report-output.h"
#include "report-time.h"

static uint64_t summary_outcome(const ReportSummary *s, MetricsOutcome o) {
        const char *name = metrics_outcome_to_string(o);
        for (size_t i = 0; i < s->n_outcomes; i++)
                if (strcmp(s->outcomes[i].name, name) == 0)
                        return s->outcomes[i].count;
        return 0;
}

/* ---- text ----------------------------------------------------------------------------------- */

#define VALUE_MAX 24

/* A long time in the largest unit that keeps it above 1: 1.25 s, 3.2 min, 1.5 h. */
static void format_long_ms(double ms, char *buf) {
        if (ms < 60000)
                snprintf(buf, VALUE_MAX, "%.2f s", ms / 1000);
        else if (ms < 3600000)
                snprintf(buf, VALUE_MAX, "%.1f min", ms / 60000);
        else
                snprintf(buf, VALUE_MAX, "%.1f h", ms / 3600000);
}

/* A value in a unit a person reads at a glance: 850 ms, 1.25 s, 3.2 min; 12.0 MiB. */
static const char *format_value(ReportUnit unit, uint64_t v, char *buf) {
        switch (unit) {
        case REPORT_UNIT_US:
                if (v < 1000)
                        snprintf(buf, VALUE_MAX, "%" PRIu64 " us", v);
                else if (v < 1000000)
                        snprintf(buf, VALUE_MAX, "%.1f ms", (double) v / 1000);
                else
                        format_long_ms((double) v / 1000, buf);
                break;
        case REPORT_UNIT_MS:
                if (v < 1000)
                        snprintf(buf, VALUE_MAX, "%" PRIu64 " ms", v);
                else
                        format_long_ms((double) v, buf);
                break;
        case REPORT_UNIT_BYTES:
                if (v < 1024)
                        snprintf(buf, VALUE_MAX, "%" PRIu64 " B", v);
                else if (v < 1024 * 1024)
                        snprintf(buf, VALUE_MAX, "%.1f KiB", (double) v / 1024);
                else if (v < UINT64_C(1024) * 1024 * 1024)
                        snprintf(buf, VALUE_MAX, "%.1f MiB", (double) v / (1024 * 1024));
                else
                        snprintf(buf, VALUE_MAX, "%.2f GiB", (double) v / (1024 * 1024 * 1024));
                break;
        case REPORT_UNIT_COUNT:
        default:
                snprintf(buf, VALUE_MAX, "%" PRIu64, v);
                break;
        }
        return buf;
}

static const char *format_share(uint64_t part, uint64_t whole, char *buf) {
        if (whole == 0)
                snprintf(buf, VALUE_MAX, "-");
        else
                snprintf(buf, VALUE_MAX, "%.1f%%", 100.0 * (double) part / (double) whole);
        return buf;
}

static void print_summary(const ReportSummary *s, FILE *f) {
        char a[VALUE_MAX], b[VALUE_MAX], c[VALUE_MAX], d[VALUE_MAX], e[VALUE_MAX];

        fprintf(f, "%-20s %10s %8s\n", "OUTCOME", "CALLS", "SHARE");
        for (size_t i = 0; i < s->n_outcomes; i++)
                if (s->outcomes[i].count > 0) /* the JSON has every outcome; the table those that happened */
                        fprintf(f, "%-20s %10" PRIu64 " %8s\n", s->outcomes[i].name, s->outcomes[i].count,
                        format_share(s->outcomes[i].count, s->calls, a));
        if (s->n_reasons > 0) {
                fprintf(f, "\n%-20s %10s\n", "REFUSED, BY REASON", "CALLS");
                for (size_t i = 0; i < s->n_reasons; i++)
                        fprintf(f, "%-20s %10" PRIu64 "\n", s->reasons[i].name, s->reasons[i].count);
        }

        fprintf(f, "\nready sandboxes: ");
        if (s->warm_known == 0)
                fprintf(f, "not recorded\n");
        else
                fprintf(f, "%" PRIu64 " of %" PRIu64 " runs (%s)\n", s->warm_hits, s->warm_known,
                        format_share(s->warm_hits, s->warm_known, a));

        fprintf(f, "\n%-24s %8s %10s %10s %10s %10s %10s\n", "PER RUN", "RUNS", "P50", "P95", "P99", "MAX", "TOTAL");
        for (ReportMeasure m = 0; m < _REPORT_MEASURE_MAX; m++) {
                const ReportMeasureInfo *info = report_measure_info(m);
                const ReportStats *st = &s->stats[m];
                if (st->count == 0) {
                        fprintf(f, "%-24s %8s %10s\n", info->label, "-", "not recorded");
                        continue;
                }
                fprintf(f, "%-24s %8" PRIu64 " %10s %10s %10s %10s %10s\n", info->label, st->count,
                        format_value(info->unit, st->p50, a), format_value(info->unit, st->p95, b),
                        format_value(info->unit, st->p99, c), format_value(info->unit, st->max, d),
                        info->peak ? "-" : format_value(info->unit, st->sum, e));
        }

        if (s->n_errors > 0) {
                fprintf(f, "\n%10s  %s\n", "RUNS", "MOST FREQUENT ERRORS");
                for (size_t i = 0; i < s->n_errors; i++)
                        fprintf(f, "%10" PRIu64 "  %s\n", s->errors[i].count, s->errors[i].name);
                if (s->errors_distinct > s->n_errors)
                        fprintf(f, "%10s  (%" PRIu64 " other texts)\n", "", s->errors_distinct - s->n_errors);
        }
}

int report_print_text(const Report *r, const ReportRange *range, FILE *f) {
        const ReportSummary *s = report_total(r);
        char a[REPORT_TIME_MAX], b[REPORT_TIME_MAX];

        fprintf(f, "mcp-execd report: %s to %s, %s%s\n",
                range->since_usec > 0 ? report_time_format(range->since_usec, a) : "the first record",
                range->until_usec < UINT64_MAX ? report_time_format(range->until_usec, b) : "the last",
                report_tenant_filter(r) ? "tenant " : "all tenants", report_tenant_filter(r) ?: "");
        if (s->calls == 0) {
                fprintf(f, "no calls recorded in this range\n");
                return ferror(f) ? -EIO : 0;
        }
        fprintf(f, "%" PRIu64 " calls: %" PRIu64 " runs (%" PRIu64 " in Python sessions), %" PRIu64
                   " refused; records from %s to %s\n\n",
                s->calls, s->runs, s->session_calls, s->rejected, report_time_format(s->first_usec, a),
                report_time_format(s->last_usec, b));
        print_summary(s, f);

        size_t n = report_n_tenants(r);
        if (n > 0 && !report_tenant_filter(r)) {
                char c[VALUE_MAX], d[VALUE_MAX], e[VALUE_MAX], w[VALUE_MAX];
                fprintf(f, "\n%-32s %8s %8s %8s %8s %10s %10s %10s %8s\n", "TENANT", "CALLS", "OK", "REFUSED",
                        "ERROR", "P95 TIME", "P95 QUEUE", "CPU", "WARM");
                for (size_t i = 0; i < n; i++) {
                        const ReportSummary *ts = report_tenant(r, i);
                        const ReportStats *dur = &ts->stats[REPORT_DURATION_MS], *q = &ts->stats[REPORT_QUEUE_MS];
                        uint64_t cpu = ts->stats[REPORT_CPU_USER_US].sum + ts->stats[REPORT_CPU_SYSTEM_US].sum;
                        fprintf(f, "%-32s %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %10s %10s %10s %8s\n",
                                ts->tenant, ts->calls, summary_outcome(ts, METRICS_OUTCOME_OK), ts->rejected,
                                summary_outcome(ts, METRICS_OUTCOME_ERROR),
                                dur->count ? format_value(REPORT_UNIT_MS, dur->p95, c) : "-",
                                q->count ? format_value(REPORT_UNIT_MS, q->p95, d) : "-",
                                format_value(REPORT_UNIT_US, cpu, e), format_share(ts->warm_hits, ts->warm_known, w));
                }
        }
        return fflush(f) != 0 || ferror(f) ? -EIO : 0;
}

/* ---- JSON ----------------------------------------------------------------------------------- */

/* Sets key to v (taking it); -ENOMEM when v is NULL (its making failed) or the set fails. */
static int set(json_t *o, const char *key, json_t *v) {
        return v && json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

static json_t *json_u64(uint64_t v) {
        return json_integer((json_int_t) MIN(v, (uint64_t) INT64_MAX));
}

static json_t *json_time(uint64_t usec) {
        char buf[REPORT_TIME_MAX];
        return json_string(report_time_format_iso(usec, buf));
}

static json_t *json_counts(const ReportCount *c, size_t n) {
        _cleanup_(json_decrefp) json_t *o = json_object();
        if (!o)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (set(o, c[i].name, json_u64(c[i].count)) < 0)
                        return NULL;
        return TAKE_PTR(o);
}

static json_t *json_stats(const ReportStats *st) {
        if (st->count == 0)
                return json_null();
        return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "count", json_u64(st->count), "sum", json_u64(st->sum),
                         "p50", json_u64(st->p50), "p95", json_u64(st->p95), "p99", json_u64(st->p99), "max",
                         json_u64(st->max));
}

static int summary_to_json(const ReportSummary *s, json_t *o) {
        int r;
        if ((r = set(o, "calls", json_u64(s->calls))) < 0 || (r = set(o, "runs", json_u64(s->runs))) < 0 ||
            (r = set(o, "rejected", json_u64(s->rejected))) < 0 ||
            (r = set(o, "session_calls", json_u64(s->session_calls))) < 0 ||
            (r = set(o, "first_record", s->calls ? json_time(s->first_usec) : json_null())) < 0 ||
            (r = set(o, "last_record", s->calls ? json_time(s->last_usec) : json_null())) < 0 ||
            (r = set(o, "outcomes", json_counts(s->outcomes, s->n_outcomes))) < 0 ||
            (r = set(o, "rejected_reasons", json_counts(s->reasons, s->n_reasons))) < 0)
                return r;

        json_t *rate = s->warm_known ? json_real((double) s->warm_hits / (double) s->warm_known) : json_null();
        if ((r = set(o, "warm", json_pack("{s:o, s:o, s:o}", "runs", json_u64(s->warm_known), "hits",
                                          json_u64(s->warm_hits), "rate", rate))) < 0)
                return r;

        _cleanup_(json_decrefp) json_t *measures = json_object();
        if (!measures)
                return -ENOMEM;
        for (ReportMeasure m = 0; m < _REPORT_MEASURE_MAX; m++)
                if ((r = set(measures, report_measure_info(m)->key, json_stats(&s->stats[m]))) < 0)
                        return r;
        if ((r = set(o, "measures", TAKE_PTR(measures))) < 0)
                return r;

        _cleanup_(json_decrefp) json_t *errors = json_array();
        if (!errors)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_errors; i++)
                if (json_array_append_new(errors, json_pack("{s:s, s:o}", "error", s->errors[i].name, "count",
                                                            json_u64(s->errors[i].count))) < 0)
                        return -ENOMEM;
        if ((r = set(o, "errors", TAKE_PTR(errors))) < 0)
                return r;
        return set(o, "errors_distinct", json_u64(s->errors_distinct));
}

int report_format_json(const Report *r, const ReportRange *range, char **ret) {
        const char *filter = report_tenant_filter(r);
        _cleanup_(json_decrefp) json_t *o = json_object();
        int k;
        if (!o)
                return -ENOMEM;
        if ((k = set(o, "report_version", json_integer(REPORT_JSON_VERSION))) < 0 ||
            (k = set(o, "since", range->since_usec > 0 ? json_time(range->since_usec) : json_null())) < 0 ||
            (k = set(o, "until", range->until_usec < UINT64_MAX ? json_time(range->until_usec) : json_null())) < 0 ||
            (k = set(o, "tenant", filter ? json_string(filter) : json_null())) < 0 ||
            (k = summary_to_json(report_total(r), o)) < 0)
                return k;

        _cleanup_(json_decrefp) json_t *tenants = json_array();
        if (!tenants)
                return -ENOMEM;
        for (size_t i = 0; i < report_n_tenants(r); i++) {
                const ReportSummary *ts = report_tenant(r, i);
                json_t *t = json_pack("{s:s}", "tenant", ts->tenant);
                if (!t || json_array_append_new(tenants, t) < 0 || summary_to_json(ts, t) < 0)
                        return -ENOMEM;
        }
        if ((k = set(o, "tenants", TAKE_PTR(tenants))) < 0)
                return k;

        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (!text)
                return -ENOMEM;
        *ret = text;
        return 0;
}
