/* report.c: run records summed up, for the whole and per tenant: counts by outcome, reason and
 * error text (hash tallies), and every value of each measure kept, so percentiles are exact. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "report.h"

static const ReportMeasureInfo measures[_REPORT_MEASURE_MAX] = {
        [REPORT_DURATION_MS] = { "DURATION_MS", "duration_ms", "duration", REPORT_UNIT_MS, false },
        [REPORT_QUEUE_MS] = { "QUEUE_MS", "queue_ms", "queue wait", REPORT_UNIT_MS, false },
        [REPORT_MEMORY_PEAK_BYTES] = { "MEMORY_PEAK_BYTES", "memory_peak_bytes", "memory peak", REPORT_UNIT_BYTES, true },
        [REPORT_CPU_USER_US] = { "CPU_USER_US", "cpu_user_us", "CPU user", REPORT_UNIT_US, false },
        [REPORT_CPU_SYSTEM_US] = { "CPU_SYSTEM_US", "cpu_system_us", "CPU system", REPORT_UNIT_US, false },
        [REPORT_CPU_PRESSURE_SOME_US] = { "CPU_PRESSURE_SOME_US", "cpu_pressure_some_us", "CPU pressure (some)",
                                          REPORT_UNIT_US, false },
        [REPORT_MEMORY_PRESSURE_SOME_US] = { "MEMORY_PRESSURE_SOME_US", "memory_pressure_some_us",
                                             "memory pressure (some)", REPORT_UNIT_US, false },
        [REPORT_MEMORY_PRESSURE_FULL_US] = { "MEMORY_PRESSURE_FULL_US", "memory_pressure_full_us",
                                             "memory pressure (full)", REPORT_UNIT_US, false },
        [REPORT_IO_PRESSURE_SOME_US] = { "IO_PRESSURE_SOME_US", "io_pressure_some_us", "IO pressure (some)",
                                         REPORT_UNIT_US, false },
        [REPORT_IO_PRESSURE_FULL_US] = { "IO_PRESSURE_FULL_US", "io_pressure_full_us", "IO pressure (full)",
                                         REPORT_UNIT_US, false },
        [REPORT_IO_READ_BYTES] = { "IO_READ_BYTES", "io_read_bytes", "IO read", REPORT_UNIT_BYTES, false },
        [REPORT_IO_WRITE_BYTES] = { "IO_WRITE_BYTES", "io_write_bytes", "IO written", REPORT_UNIT_BYTES, false },
        [REPORT_PIDS_PEAK] = { "PIDS_PEAK", "pids_peak", "processes (peak)", REPORT_UNIT_COUNT, true },
};

const ReportMeasureInfo *report_measure_info(ReportMeasure m) {
        return (unsigned) m < _REPORT_MEASURE_MAX ? &measures[m] : NULL;
}

int report_measure_from_field(const char *name, size_t len) {
        for (int m = 0; m < _REPORT_MEASURE_MAX; m++)
                if (strlen(measures[m].field) == len && memcmp(measures[m].field, name, len) == 0)
                        return m;
        return -1;
}

/* ---- tallies: distinct strings, each with a count and its order of arrival ------------------ */

typedef struct TallySlot {
        char *name; /* NULL: free */
        uint64_t hash;
        uint64_t count;
        size_t order;
} TallySlot;

typedef struct Tally {
        TallySlot *slots;
        size_t cap; /* a power of two, or 0 */
        size_t n;
} Tally;

static uint64_t hash_str(const char *s) {
        uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a: the keys are ours or the journal's, not a caller's */
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(1099511628211);
        return h;
}

static void tally_done(Tally *t) {
        for (size_t i = 0; i < t->cap; i++)
                free(t->slots[i].name);
        free(t->slots);
        *t = (Tally) {};
}

static TallySlot *tally_probe(TallySlot *slots, size_t cap, const char *name, uint64_t h) {
        for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
                if (!slots[i].name || (slots[i].hash == h && strcmp(slots[i].name, name) == 0))
                        return &slots[i];
}

static int tally_grow(Tally *t) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        TallySlot *slots = calloc(cap, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < t->cap; i++)
                if (t->slots[i].name)
                        *tally_probe(slots, cap, t->slots[i].name, t->slots[i].hash) = t->slots[i];
        free(t->slots);
        t->slots = slots;
        t->cap = cap;
        return 0;
}

/* Adds by to name's count (made at 0 if new) and returns its slot, or NULL without memory. */
static TallySlot *tally_add(Tally *t, const char *name, uint64_t by) {
        if ((t->n + 1) * 4 > t->cap * 3 && tally_grow(t) < 0) /* at most 3/4 full */
                return NULL;
        uint64_t h = hash_str(name);
        TallySlot *s = tally_probe(t->slots, t->cap, name, h);
        if (!s->name) {
                char *copy = strdup(name);
                if (!copy)
                        return NULL;
                *s = (TallySlot) { .name = copy, .hash = h, .order = t->n++ };
        }
        s->count += by;
        return s;
}

static int count_by_desc(const void *a, const void *b) {
        const ReportCount *x = a, *y = b;
        if (x->count != y->count)
                return x->count < y->count ? 1 : -1;
        return strcmp(x->name, y->name); /* ties in a stable order */
}

/* The tally as an array (copies of the names), the most frequent first, at most max of them. */
static int tally_take_sorted(Tally *t, size_t max, ReportCount **ret, size_t *ret_n) {
        ReportCount *v = calloc(t->n ? t->n : 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < t->cap; i++)
                if (t->slots[i].name)
                        v[n++] = (ReportCount) { .name = TAKE_PTR(t->slots[i].name), .count = t->slots[i].count };
        qsort(v, n, sizeof(*v), count_by_desc);
        for (size_t i = max; i < n; i++)
                free(v[i].name);
        *ret = v;
        *ret_n = MIN(n, max);
        return 0;
}

/* ---- values --------------------------------------------------------------------------------- */

typedef struct Values {
        uint64_t *v;
        size_t n, cap;
        uint64_t sum;
} Values;

static int values_push(Values *vs, uint64_t x) {
        if (vs->n == vs->cap) {
                size_t cap = vs->cap ? vs->cap * 2 : 256;
                uint64_t *v = reallocarray(vs->v, cap, sizeof(*v));
                if (!v)
                        return -ENOMEM;
                vs->v = v;
                vs->cap = cap;
        }
        vs->v[vs->n++] = x;
        vs->sum += x; /* wraps only past 584 942 years of µs */
        return 0;
}

int report_sort_u64(uint64_t *v, size_t n) {
        if (n < 2)
                return 0;
        uint64_t max = 0;
        for (size_t i = 0; i < n; i++)
                max |= v[i];
        _cleanup_free_ uint64_t *tmp = malloc(n * sizeof(*tmp));
        if (!tmp)
                return -ENOMEM;
        uint64_t *src = v, *dst = tmp;
        /* One stable counting pass per byte that any value uses: durations in ms take two. */
        for (unsigned shift = 0; shift < 64 && (max >> shift) != 0; shift += 8) {
                size_t count[257] = {};
                for (size_t i = 0; i < n; i++)
                        count[((src[i] >> shift) & 0xff) + 1]++;
                for (size_t d = 0; d < 256; d++)
                        count[d + 1] += count[d];
                for (size_t i = 0; i < n; i++)
                        dst[count[(src[i] >> shift) & 0xff]++] = src[i];
                uint64_t *t = src;
                src = dst;
                dst = t;
        }
        if (src != v)
                memcpy(v, src, n * sizeof(*v));
        return 0;
}

uint64_t report_percentile(const uint64_t *sorted, size_t n, unsigned pct) {
        size_t rank = (size_t) (((unsigned __int128) n * pct + 99) / 100); /* ceil(n × pct / 100), in 1..n */
        return sorted[(rank ? rank : 1) - 1];
}

static int values_stats(Values *vs, ReportStats *ret) {
        *ret = (ReportStats) {};
        if (vs->n == 0)
                return 0;
        int r = report_sort_u64(vs->v, vs->n);
        if (r < 0)
                return r;
        *ret = (ReportStats) {
                .count = vs->n,
                .sum = vs->sum,
                .max = vs->v[vs->n - 1],
                .p50 = report_percentile(vs->v, vs->n, 50),
                .p95 = report_percentile(vs->v, vs->n, 95),
                .p99 = report_percentile(vs->v, vs->n, 99),
        };
        return 0;
}

/* ---- groups: the whole, and one per tenant -------------------------------------------------- */

typedef struct Group {
        ReportSummary s; /* the counters as they are added; the lists at report_finish() */
        Tally outcomes, reasons, errors;
        Values values[_REPORT_MEASURE_MAX];
} Group;

static void group_done(Group *g) {
        tally_done(&g->outcomes);
        tally_done(&g->reasons);
        tally_done(&g->errors);
        for (int m = 0; m < _REPORT_MEASURE_MAX; m++)
                free(g->values[m].v);
        free(g->s.tenant);
        for (size_t i = 0; i < g->s.n_outcomes; i++)
                free(g->s.outcomes[i].name);
        free(g->s.outcomes);
        for (size_t i = 0; i < g->s.n_reasons; i++)
                free(g->s.reasons[i].name);
        free(g->s.reasons);
        for (size_t i = 0; i < g->s.n_errors; i++)
                free(g->s.errors[i].name);
        free(g->s.errors);
        *g = (Group) {};
}

static int group_init(Group *g, const char *tenant) {
        *g = (Group) {};
        if (tenant && !(g->s.tenant = strdup(tenant)))
                return -ENOMEM;
        /* Every outcome a run can have is in the summary, in metrics.h's order, even at 0. */
        for (MetricsOutcome o = 0; o < _METRICS_OUTCOME_MAX; o++)
                if (!tally_add(&g->outcomes, metrics_outcome_to_string(o), 0))
                        return -ENOMEM;
        return 0;
}

/* Which records a measure counts in, as metrics.c's histograms: a run that could not run has
 * neither a duration nor a peak, and a peak of 0 was not measured. */
static bool measure_applies(const ReportRecord *rec, ReportMeasure m, bool error) {
        if (!(rec->present & (UINT32_C(1) << m)))
                return false;
        switch (m) {
        case REPORT_DURATION_MS:
                return !error;
        case REPORT_MEMORY_PEAK_BYTES:
                return !error && rec->value[m] > 0;
        default:
                return true;
        }
}

static int group_add(Group *g, const ReportRecord *rec) {
        g->s.calls++;
        if (g->s.first_usec == 0 || rec->realtime_usec < g->s.first_usec)
                g->s.first_usec = rec->realtime_usec;
        g->s.last_usec = MAX(g->s.last_usec, rec->realtime_usec);

        if (rec->kind == REPORT_REJECTED) {
                g->s.rejected++;
                /* A refused call is counted as "rejected" whatever its record says, as runs_total does. */
                if (!tally_add(&g->outcomes, metrics_outcome_to_string(METRICS_OUTCOME_REJECTED), 1) ||
                    !tally_add(&g->reasons, rec->reason && *rec->reason ? rec->reason : "(none)", 1))
                        return -ENOMEM;
                return 0;
        }

        g->s.runs++;
        if (rec->py_session)
                g->s.session_calls++;
        const char *outcome = rec->outcome && *rec->outcome ? rec->outcome : "(none)";
        if (!tally_add(&g->outcomes, outcome, 1))
                return -ENOMEM;
        if (rec->error && *rec->error && !tally_add(&g->errors, rec->error, 1))
                return -ENOMEM;
        /* A call in a Python session runs in the session's interpreter, not in a sandbox of its own:
         * its record says WARM=0 whatever served the session's open, so it is no miss of the pool. */
        if (rec->warm >= 0 && !rec->py_session) {
                g->s.warm_known++;
                g->s.warm_hits += rec->warm > 0;
        }
        bool error = strcmp(outcome, metrics_outcome_to_string(METRICS_OUTCOME_ERROR)) == 0;
        for (ReportMeasure m = 0; m < _REPORT_MEASURE_MAX; m++)
                if (measure_applies(rec, m, error) && values_push(&g->values[m], rec->value[m]) < 0)
                        return -ENOMEM;
        return 0;
}

static int group_finish(Group *g) {
        /* The outcomes keep their order of arrival: metrics.h's first (group_init), then others. */
        ReportCount *o = calloc(g->outcomes.n, sizeof(*o));
        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < g->outcomes.cap; i++) {
                TallySlot *s = &g->outcomes.slots[i];
                if (s->name)
                        o[s->order] = (ReportCount) { .name = TAKE_PTR(s->name), .count = s->count };
        }
        g->s.outcomes = o;
        g->s.n_outcomes = g->outcomes.n;

        g->s.errors_distinct = g->errors.n;
        int r = tally_take_sorted(&g->reasons, SIZE_MAX, &g->s.reasons, &g->s.n_reasons);
        if (r < 0)
                return r;
        r = tally_take_sorted(&g->errors, REPORT_TOP_ERRORS, &g->s.errors, &g->s.n_errors);
        if (r < 0)
                return r;
        for (ReportMeasure m = 0; m < _REPORT_MEASURE_MAX; m++) {
                r = values_stats(&g->values[m], &g->s.stats[m]);
                if (r < 0)
                        return r;
                free(g->values[m].v);
                g->values[m] = (Values) {};
        }
        return 0;
}

/* ---- the report ----------------------------------------------------------------------------- */

struct Report {
        char *tenant_filter;
        bool finished;
        Group total;
        Tally tenant_index; /* name → its group: the slot's order */
        Group *tenants;     /* by order of arrival until report_finish(), then by name */
        size_t n_tenants;
};

int report_new(const char *tenant, Report **ret) {
        _cleanup_(report_freep) Report *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        if (tenant && !(r->tenant_filter = strdup(tenant)))
                return -ENOMEM;
        int k = group_init(&r->total, NULL);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

Report *report_free(Report *r) {
        if (!r)
                return NULL;
        free(r->tenant_filter);
        group_done(&r->total);
        for (size_t i = 0; i < r->n_tenants; i++)
                group_done(&r->tenants[i]);
        free(r->tenants);
        tally_done(&r->tenant_index);
        free(r);
        return NULL;
}

static Group *report_tenant_group(Report *r, const char *name) {
        TallySlot *s = tally_add(&r->tenant_index, name, 1);
        if (!s)
                return NULL;
        if (s->order < r->n_tenants)
                return &r->tenants[s->order];
        Group *v = reallocarray(r->tenants, r->n_tenants + 1, sizeof(*v));
        if (!v)
                return NULL;
        r->tenants = v;
        if (group_init(&r->tenants[r->n_tenants], name) < 0) {
                group_done(&r->tenants[r->n_tenants]);
                return NULL;
        }
        return &r->tenants[r->n_tenants++];
}

int report_add(Report *r, const ReportRecord *rec) {
        if (r->finished)
                return -EBUSY;
        if (r->tenant_filter && (!rec->tenant || strcmp(rec->tenant, r->tenant_filter) != 0))
                return 0;
        int k = group_add(&r->total, rec);
        if (k < 0)
                return k;
        if (!rec->tenant)
                return 0;
        Group *g = report_tenant_group(r, rec->tenant);
        if (!g)
                return -ENOMEM;
        return group_add(g, rec);
}

static int group_by_tenant(const void *a, const void *b) {
        return strcmp(((const Group *) a)->s.tenant, ((const Group *) b)->s.tenant);
}

int report_finish(Report *r) {
        if (r->finished)
                return 0;
        r->finished = true; /* even if it fails below: a group is not summed up twice */
        int k = group_finish(&r->total);
        if (k < 0)
                return k;
        for (size_t i = 0; i < r->n_tenants; i++) {
                k = group_finish(&r->tenants[i]);
                if (k < 0)
                        return k;
        }
        if (r->n_tenants > 0) /* qsort() of NULL: undefined even for none (UBSan) */
                qsort(r->tenants, r->n_tenants, sizeof(*r->tenants), group_by_tenant);
        tally_done(&r->tenant_index); /* its orders no longer index the sorted groups */
        return 0;
}

const ReportSummary *report_total(const Report *r) {
        return &r->total.s;
}

size_t report_n_tenants(const Report *r) {
        return r->n_tenants;
}

const ReportSummary *report_tenant(const Report *r, size_t i) {
        return i < r->n_tenants ? &r->tenants[i].s : NULL;
}

const char *report_tenant_filter(const Report *r) {
        return r->tenant_filter;
}
