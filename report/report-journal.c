/* report-journal.c: run records read from the journal (sd-journal(3)) into a report, and the
 * report printed. Only the two record types of runs are matched, and each entry's fields are
 * walked once (sd_journal_enumerate_available_data), not looked up one by one: sd_journal_get_data()
 * scans the entry's fields for each name asked, and 100 000 records must take under a second. */
#include <assert.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "metrics.h"
#include "report-journal.h"

/* metrics.c's record_emit() writes every record with this SYSLOG_IDENTIFIER. */
#define REPORT_SYSLOG_IDENTIFIER "mcp-execd"
/* Fields are read whole up to this size (compressed ones past it may be cut: sd_journal_set_data_threshold(3));
 * ours are numbers, words and short texts, MESSAGE is not read. */
#define REPORT_DATA_THRESHOLD 4096
/* A tenant's name is 1 to 32 characters (docs/tenants.md); outcomes and reasons are short words. */
#define WORD_MAX 128

/* The fields of an entry the report reads (the measures are looked up in report.h's table). */
typedef enum EntryField {
        FIELD_MESSAGE_ID,
        FIELD_OUTCOME,
        FIELD_REASON,
        FIELD_TENANT,
        FIELD_ERROR,
        FIELD_WARM,
        FIELD_PY_SESSION_ID,
        _FIELD_MAX,
} EntryField;

static const char *const field_names[_FIELD_MAX] = {
        [FIELD_MESSAGE_ID] = "MESSAGE_ID", [FIELD_OUTCOME] = "OUTCOME",   [FIELD_REASON] = "REASON",
        [FIELD_TENANT] = "TENANT",         [FIELD_ERROR] = "ERROR",       [FIELD_WARM] = "WARM",
        [FIELD_PY_SESSION_ID] = "PY_SESSION_ID",
};

/* Field name → what the report makes of it, found by length and first letter (an entry has some 50
 * fields and the report reads 20; a trusted field, "_PID", is refused by its first character). */
#define NAME_LEN_MAX 31
#define BUCKET_MAX 4
#define WHAT_MEASURE 100 /* + a ReportMeasure */
typedef struct FieldTable {
        struct {
                const char *name;
                int what;
        } bucket[NAME_LEN_MAX + 1][26][BUCKET_MAX];
        uint8_t n[NAME_LEN_MAX + 1][26];
} FieldTable;

static void field_table_put(FieldTable *t, const char *name, int what) {
        size_t len = strlen(name);
        int c = name[0] - 'A';
        assert(len <= NAME_LEN_MAX && c >= 0 && c < 26 && t->n[len][c] < BUCKET_MAX); /* our own names */
        t->bucket[len][c][t->n[len][c]].name = name;
        t->bucket[len][c][t->n[len][c]++].what = what;
}

static void field_table_init(FieldTable *t) {
        *t = (FieldTable) {};
        for (int f = 0; f < _FIELD_MAX; f++)
                field_table_put(t, field_names[f], f);
        for (ReportMeasure m = 0; m < _REPORT_MEASURE_MAX; m++)
                field_table_put(t, report_measure_info(m)->field, WHAT_MEASURE + (int) m);
}

/* An EntryField, WHAT_MEASURE + a measure, or -1. */
static int field_table_find(const FieldTable *t, const char *name, size_t len) {
        int c = name[0] - 'A';
        if (len > NAME_LEN_MAX || c < 0 || c >= 26)
                return -1;
        for (size_t i = 0; i < t->n[len][c]; i++)
                if (memcmp(t->bucket[len][c][i].name, name, len) == 0)
                        return t->bucket[len][c][i].what;
        return -1;
}

/* One entry's strings, copied out of the journal's mapping (valid only until the next field). */
typedef struct EntryText {
        char outcome[WORD_MAX], reason[WORD_MAX], tenant[WORD_MAX];
        char *error;
} EntryText;

static const char *copy_word(char *dst, const char *v, size_t len) {
        len = MIN(len, (size_t) WORD_MAX - 1);
        memcpy(dst, v, len);
        dst[len] = '\0';
        return dst;
}

/* v[0..len) as an unsigned decimal; false for anything else (an empty value is "not known"). */
static bool parse_u64(const char *v, size_t len, uint64_t *ret) {
        uint64_t x = 0;
        if (len == 0 || len > 20)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return false;
                uint64_t d = (uint64_t) (v[i] - '0');
                if (x > (UINT64_MAX - d) / 10)
                        return false;
                x = x * 10 + d;
        }
        *ret = x;
        return true;
}

/* The current entry as a record. 0, or -ENOMEM, or a negative errno of sd-journal's. */
static int entry_read(sd_journal *j, const FieldTable *table, uint64_t realtime_usec, ReportRecord *rec,
                      EntryText *text) {
        *rec = (ReportRecord) { .realtime_usec = realtime_usec, .warm = -1 };
        free(text->error);
        text->error = NULL;

        int r;
        const void *data;
        size_t size;
        sd_journal_restart_data(j);
        while ((r = sd_journal_enumerate_available_data(j, &data, &size)) > 0) {
                const char *d = data, *eq;
                if (size == 0 || d[0] == '_' || !(eq = memchr(d, '=', size)))
                        continue;
                size_t nlen = (size_t) (eq - d), vlen = size - nlen - 1;
                const char *v = eq + 1;
                int what = field_table_find(table, d, nlen);
                if (what >= WHAT_MEASURE) {
                        uint64_t x;
                        if (parse_u64(v, vlen, &x))
                                report_record_set(rec, (ReportMeasure) (what - WHAT_MEASURE), x);
                        continue;
                }
                switch (what) {
                case FIELD_MESSAGE_ID:
                        rec->kind = vlen == strlen(METRICS_MESSAGE_RUN_REJECTED) &&
                                                    memcmp(v, METRICS_MESSAGE_RUN_REJECTED, vlen) == 0
                                            ? REPORT_REJECTED
                                            : REPORT_RUN;
                        break;
                case FIELD_OUTCOME:
                        rec->outcome = copy_word(text->outcome, v, vlen);
                        break;
                case FIELD_REASON:
                        rec->reason = copy_word(text->reason, v, vlen);
                        break;
                case FIELD_TENANT:
                        rec->tenant = copy_word(text->tenant, v, vlen);
                        break;
                case FIELD_ERROR:
                        free(text->error);
                        text->error = strndup(v, vlen);
                        if (!text->error)
                                return -ENOMEM;
                        rec->error = text->error;
                        break;
                case FIELD_WARM:
                        /* metrics.c writes 1 or 0; yes/no would be as clear, so both are read. */
                        if ((vlen == 1 && v[0] == '1') || (vlen == 3 && memcmp(v, "yes", 3) == 0))
                                rec->warm = 1;
                        else if ((vlen == 1 && v[0] == '0') || (vlen == 2 && memcmp(v, "no", 2) == 0))
                                rec->warm = 0;
                        break;
                case FIELD_PY_SESSION_ID:
                        rec->py_session = true;
                        break;
                default:
                        break;
                }
        }
        return r;
}

static int add_match(sd_journal *j, const char *field, const char *value) {
        _cleanup_free_ char *m = NULL;
        if (asprintf(&m, "%s=%s", field, value) < 0)
                return -ENOMEM;
        return sd_journal_add_match(j, m, 0);
}

int report_journal_read(sd_journal *j, const ReportRange *range, const char *tenant, Report *rep, size_t *ret_entries) {
        int r;
        /* Matches of one field are OR'ed, of different fields AND'ed (sd_journal_add_match(3)). */
        if ((r = add_match(j, "MESSAGE_ID", METRICS_MESSAGE_RUN_FINISHED)) < 0 ||
            (r = add_match(j, "MESSAGE_ID", METRICS_MESSAGE_RUN_REJECTED)) < 0 ||
            (r = add_match(j, "SYSLOG_IDENTIFIER", REPORT_SYSLOG_IDENTIFIER)) < 0 ||
            (tenant && (r = add_match(j, "TENANT", tenant)) < 0))
                return r;
        r = sd_journal_set_data_threshold(j, REPORT_DATA_THRESHOLD);
        if (r < 0)
                return r;
        r = range->since_usec > 0 ? sd_journal_seek_realtime_usec(j, range->since_usec) : sd_journal_seek_head(j);
        if (r < 0)
                return r;

        _cleanup_free_ FieldTable *table = malloc(sizeof(FieldTable));
        if (!table)
                return -ENOMEM;
        field_table_init(table);
        EntryText text = {};
        size_t n = 0;
        for (;;) {
                r = sd_journal_next(j);
                if (r <= 0)
                        break;
                uint64_t t;
                r = sd_journal_get_realtime_usec(j, &t);
                if (r < 0)
                        break;
                /* Files interleave by boot and sequence, not only by time: an entry before since
                 * can follow the seek; like journalctl, the first past until ends the walk. */
                if (t < range->since_usec)
                        continue;
                if (t > range->until_usec)
                        break;
                ReportRecord rec;
                r = entry_read(j, table, t, &rec, &text);
                if (r < 0)
                        break;
                n++;
                r = report_add(rep, &rec);
                if (r < 0)
                        break;
        }
        free(text.error);
        if (r < 0)
                return r;
        if (ret_entries)
                *ret_entries = n;
        return 0;
}

/* The paths the --file patterns name, NULL-terminated, into *ret. A pattern that names nothing is
 * an error naming it. */
static int expand_files(char *const *patterns, char ***ret) {
        glob_t g = {};
        int flags = 0;
        for (size_t i = 0; patterns[i]; i++, flags = GLOB_APPEND) {
                int k = glob(patterns[i], flags, NULL, &g);
                if (k == GLOB_NOMATCH) {
                        fprintf(stderr, "%s: --file %s: no such file\n", program_invocation_short_name, patterns[i]);
                        globfree(&g);
                        return -ENOENT;
                }
                if (k != 0) {
                        fprintf(stderr, "%s: --file %s: cannot be read\n", program_invocation_short_name, patterns[i]);
                        globfree(&g);
                        return k == GLOB_NOSPACE ? -ENOMEM : -EIO;
                }
        }
        char **v = calloc(g.gl_pathc + 1, sizeof(char *));
        for (size_t i = 0; v && i < g.gl_pathc; i++)
                if (!(v[i] = strdup(g.gl_pathv[i]))) {
                        for (size_t k = 0; k < i; k++)
                                free(v[k]);
                        free(v);
                        v = NULL;
                }
        globfree(&g);
        if (!v)
                return -ENOMEM;
        *ret = v;
        return 0;
}

static void strv_freep(char ***v) {
        for (char **p = *v; p && *p; p++)
                free(*p);
        free(*v);
}

static int journal_open(const ReportOptions *o, sd_journal **ret) {
        int r;
        if (o->files) {
                __attribute__((cleanup(strv_freep))) char **paths = NULL;
                r = expand_files(o->files, &paths);
                if (r < 0)
                        return r;
                r = sd_journal_open_files(ret, (const char **) paths, 0);
                if (r < 0)
                        fprintf(stderr, "%s: --file %s: cannot open the journal file: %s\n",
                                program_invocation_short_name, paths[0], strerror(-r));
                return r;
        }
        if (o->directory) {
                r = sd_journal_open_directory(ret, o->directory, 0);
                if (r < 0)
                        fprintf(stderr, "%s: --directory %s: cannot open the journal: %s\n",
                                program_invocation_short_name, o->directory, strerror(-r));
                return r;
        }
        /* The system's and the users' journals of this machine, as journalctl reads by default:
         * a daemon under a user manager writes to its user's. */
        r = sd_journal_open(ret, SD_JOURNAL_LOCAL_ONLY);
        if (r < 0) {
                fprintf(stderr, "%s: cannot open the journal: %s\n", program_invocation_short_name, strerror(-r));
                return r;
        }
        if (sd_journal_has_runtime_files(*ret) <= 0 && sd_journal_has_persistent_files(*ret) <= 0)
                fprintf(stderr, "%s: no journal files could be opened (none here, or not readable by this user: "
                                "root and the groups systemd-journal and adm may read them)\n",
                        program_invocation_short_name);
        return 0;
}

int report_main(const ReportOptions *o) {
        __attribute__((cleanup(sd_journal_closep))) sd_journal *j = NULL;
        if (journal_open(o, &j) < 0)
                return 1;

        _cleanup_(report_freep) Report *rep = NULL;
        int r = report_new(o->tenant, &rep);
        if (r >= 0)
                r = report_journal_read(j, &o->range, o->tenant, rep, NULL);
        if (r >= 0)
                r = report_finish(rep);
        if (r < 0) {
                fprintf(stderr, "%s: cannot read the journal: %s\n", program_invocation_short_name, strerror(-r));
                return 1;
        }

        if (o->json) {
                _cleanup_free_ char *text = NULL;
                r = report_format_json(rep, &o->range, &text);
                if (r < 0) {
                        fprintf(stderr, "%s: cannot make the report: %s\n", program_invocation_short_name, strerror(-r));
                        return 1;
                }
                if (printf("%s\n", text) < 0 || fflush(stdout) != 0) {
                        fprintf(stderr, "%s: cannot write the report: %m\n", program_invocation_short_name);
                        return 1;
                }
                return 0;
        }
        if (report_print_text(rep, &o->range, stdout) < 0) {
                fprintf(stderr, "%s: cannot write the report: %m\n", program_invocation_short_name);
                return 1;
        }
        return 0;
}
