/* report-time.h: the times --since and --until take, and how the report writes times. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* What the forms accepted look like, for an error message. */
#define REPORT_TIME_FORMS "-1h, -30min, '2 days ago', @1733400000, '2026-12-06 14:00:00', 2026-12-06, now, today, yesterday"

/* s as a point in time (µs since the epoch), read as journalctl reads --since (systemd.time(7)),
 * in the forms of it that cannot be misread:
 *   now, today, yesterday, tomorrow          (midnight, local time)
 *   @SECONDS[.FRACTION]                       (since the epoch)
 *   -SPAN, +SPAN, SPAN ago                    (from now_usec; SPAN: 1h, 30min, 1h30min, 2 d, 90s, 500ms)
 *   YYYY-MM-DD[( |T)HH:MM[:SS[.FRACTION]]]    (local time, or UTC with " UTC" or "Z" after it)
 * Returns 0, or -EINVAL for anything else (a date that does not exist, such as 2026-02-30,
 * included) and -ERANGE for a time before the epoch or past year 9999. */
int report_time_parse(const char *s, uint64_t now_usec, uint64_t *ret);

/* usec as "2026-12-06 14:00:00 UTC" into buf (at least REPORT_TIME_MAX bytes). Returns buf. */
#define REPORT_TIME_MAX 64
char *report_time_format(uint64_t usec, char *buf);
/* usec as ISO 8601 in UTC with µs, "2026-12-06T14:00:00.000000Z", into buf (REPORT_TIME_MAX). */
char *report_time_format_iso(uint64_t usec, char *buf);
