/* report-output.h: a finished report as text tables for the operator, or as the JSON object of
 * mcp-execd(8)'s REPORT section for scripts. */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include "report.h"

/* The range asked for: since 0 and until UINT64_MAX are open ends. */
typedef struct ReportRange {
        uint64_t since_usec;
        uint64_t until_usec;
} ReportRange;

#define REPORT_JSON_VERSION 1

/* The report as tables on f. 0, or -EIO when f fails. */
int report_print_text(const Report *r, const ReportRange *range, FILE *f);

/* The report as one JSON object (two-space indented, keys in a fixed order), malloc'd and
 * NUL-terminated into *ret. 0 or -ENOMEM. */
int report_format_json(const Report *r, const ReportRange *range, char **ret);
