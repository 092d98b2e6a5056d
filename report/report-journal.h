/* report-journal.h: the run records read from the journal into a report, and `mcp-execd --report`
 * itself (daemon/main.c parses its options and hands them here). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <systemd/sd-journal.h>

#include "report-output.h"
#include "report.h"

/* The records read: those metrics.c writes for a finished run and a refused call, with its
 * SYSLOG_IDENTIFIER, whose time is in [since, until] (both ends included, as journalctl's). tenant:
 * only that tenant's (also a journal match, so the others are not even read). ret_entries: how many
 * entries were read, NULL allowed. Returns 0 or a negative errno of sd-journal's or -ENOMEM. */
int report_journal_read(sd_journal *j, const ReportRange *range, const char *tenant, Report *r, size_t *ret_entries);

typedef struct ReportOptions {
        ReportRange range;
        const char *tenant;     /* or NULL: all */
        bool json;
        char **files;           /* --file patterns (glob(7)), NULL-terminated, or NULL */
        const char *directory;  /* --directory, or NULL; neither: the local journal */
} ReportOptions;

/* Reads the journal the options name and prints the report on stdout; errors on stderr, naming
 * what failed. Returns the exit status: 0, or 1 when the journal cannot be opened or read. */
int report_main(const ReportOptions *o);
