/* report.h: what the run records of a time range say, summed up (issue 33.2): calls by outcome and
 * by refusal reason, exact percentiles of each measure, the most frequent errors, the ready-sandbox
 * hit rate, for the whole and per tenant. Records in, summaries out: nothing here reads the journal
 * (report-journal.h does), so it is tested on records made up in the test. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

/* The numbers of a run record that are summed up, in the order the report shows them. */
typedef enum ReportMeasure {
        REPORT_DURATION_MS,
        REPORT_QUEUE_MS,
        REPORT_MEMORY_PEAK_BYTES,
        REPORT_CPU_USER_US,
        REPORT_CPU_SYSTEM_US,
        REPORT_CPU_PRESSURE_SOME_US,
        REPORT_MEMORY_PRESSURE_SOME_US,
        REPORT_MEMORY_PRESSURE_FULL_US,
        REPORT_IO_PRESSURE_SOME_US,
        REPORT_IO_PRESSURE_FULL_US,
        REPORT_IO_READ_BYTES,
        REPORT_IO_WRITE_BYTES,
        REPORT_PIDS_PEAK,
        _REPORT_MEASURE_MAX,
} ReportMeasure;

typedef enum ReportUnit {
        REPORT_UNIT_MS,
        REPORT_UNIT_US,
        REPORT_UNIT_BYTES,
        REPORT_UNIT_COUNT,
} ReportUnit;

typedef struct ReportMeasureInfo {
        const char *field; /* the journal field (metrics.c writes it) */
        const char *key;   /* its name in --json: the field in lower case */
        const char *label; /* its row in the text tables */
        ReportUnit unit;
        bool peak;         /* a maximum per run: its sum over runs means nothing, the text leaves it out */
} ReportMeasureInfo;

const ReportMeasureInfo *report_measure_info(ReportMeasure m);
/* The measure whose journal field is name[0..len), or -1. */
int report_measure_from_field(const char *name, size_t len);

typedef enum ReportKind {
        REPORT_RUN,      /* METRICS_MESSAGE_RUN_FINISHED: a run or a call in a Python session */
        REPORT_REJECTED, /* METRICS_MESSAGE_RUN_REJECTED: a call refused before it ran */
} ReportKind;

/* One record, as read. Strings are borrowed for report_add() and copied if kept. */
typedef struct ReportRecord {
        ReportKind kind;
        uint64_t realtime_usec;
        const char *outcome; /* OUTCOME, or NULL when absent */
        const char *reason;  /* REASON (a refused call's), or NULL */
        const char *tenant;  /* TENANT, or NULL: no tenant */
        const char *error;   /* ERROR (our own text of a run that could not run), or NULL */
        int warm;            /* WARM: 1, 0, or -1 when absent */
        bool py_session;     /* PY_SESSION_ID present: a call in a Python session */
        uint32_t present;    /* bit (1 << ReportMeasure) for each measure the record has */
        uint64_t value[_REPORT_MEASURE_MAX];
} ReportRecord;

static inline void report_record_set(ReportRecord *rec, ReportMeasure m, uint64_t v) {
        rec->value[m] = v;
        rec->present |= UINT32_C(1) << m;
}

/* A measure over the runs that have it. Percentiles are exact, by nearest rank: pN is the value
 * at rank ceil(N/100 × count) of the sorted values (so p50 of 1..10 is 5, p99 of 1..100 is 99). */
typedef struct ReportStats {
        uint64_t count; /* 0: not recorded (the rest is 0) */
        uint64_t sum, max, p50, p95, p99;
} ReportStats;

typedef struct ReportCount {
        char *name;
        uint64_t count;
} ReportCount;

#define REPORT_TOP_ERRORS 10

typedef struct ReportSummary {
        char *tenant;            /* the tenant's name, or NULL for all the records read */
        uint64_t calls;          /* runs + rejected */
        uint64_t runs;           /* run records (session calls included) */
        uint64_t rejected;       /* refused calls */
        uint64_t session_calls;  /* runs that were calls in a Python session */
        ReportCount *outcomes;   /* every outcome of metrics.h in its order, then any other word seen */
        size_t n_outcomes;
        ReportCount *reasons;    /* refusal reasons seen, most frequent first */
        size_t n_reasons;
        ReportCount *errors;     /* the REPORT_TOP_ERRORS most frequent ERROR texts, most frequent first */
        size_t n_errors;
        uint64_t errors_distinct;
        uint64_t warm_known;     /* runs whose record says WARM, calls in Python sessions not included */
        uint64_t warm_hits;      /* of which served by a ready sandbox */
        ReportStats stats[_REPORT_MEASURE_MAX];
        uint64_t first_usec, last_usec; /* realtime of the first and last record summed (0: none) */
} ReportSummary;

typedef struct Report Report;

/* tenant: count only that tenant's records (NULL: all). Returns 0 or -ENOMEM. */
int report_new(const char *tenant, Report **ret);
Report *report_free(Report *r);
DEFINE_POINTER_CLEANUP(Report, report_free)

/* Counts one record (one of another tenant than the filter's is skipped). The rules of metrics.c's
 * histograms apply: a run that could not run (OUTCOME=error) has no duration nor memory peak, and a
 * MEMORY_PEAK_BYTES of 0 means unknown. 0 or -ENOMEM. */
int report_add(Report *r, const ReportRecord *rec);

/* Sorts and sums up what was added; after it, report_add() is refused (-EBUSY). 0 or -ENOMEM. */
int report_finish(Report *r);

/* After report_finish(): the whole, and each tenant seen (by name), the filter's only with one. */
const ReportSummary *report_total(const Report *r);
size_t report_n_tenants(const Report *r);
const ReportSummary *report_tenant(const Report *r, size_t i);
const char *report_tenant_filter(const Report *r);

/* Nearest-rank percentile of n sorted values (n > 0), pct in 1..100. */
uint64_t report_percentile(const uint64_t *sorted, size_t n, unsigned pct);
/* Sorts v ascending (an LSD radix sort: linear, as 100 000 records in a second need). 0 or -ENOMEM. */
int report_sort_u64(uint64_t *v, size_t n);
