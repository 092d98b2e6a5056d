/* report-time.c: --since and --until read as journalctl reads them (systemd.time(7)), in the forms
 * of it that cannot be misread; the report's own times written in UTC. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "report-time.h"

#define USEC_PER_SEC UINT64_C(1000000)
/* 9999-12-31 23:59:59 UTC: four-digit years only, as the date form has. */
#define TIME_MAX_SEC INT64_C(253402300799)

/* systemd.time(7)'s time span units, in µs. */
static const struct SpanUnit {
        const char *name;
        uint64_t usec;
} span_units[] = {
        { "us", 1 },
        { "usec", 1 },
        { "ms", 1000 },
        { "msec", 1000 },
        { "s", USEC_PER_SEC },
        { "sec", USEC_PER_SEC },
        { "second", USEC_PER_SEC },
        { "seconds", USEC_PER_SEC },
        { "m", 60 * USEC_PER_SEC },
        { "min", 60 * USEC_PER_SEC },
        { "minute", 60 * USEC_PER_SEC },
        { "minutes", 60 * USEC_PER_SEC },
        { "h", 3600 * USEC_PER_SEC },
        { "hr", 3600 * USEC_PER_SEC },
        { "hour", 3600 * USEC_PER_SEC },
        { "hours", 3600 * USEC_PER_SEC },
        { "d", 86400 * USEC_PER_SEC },
        { "day", 86400 * USEC_PER_SEC },
        { "days", 86400 * USEC_PER_SEC },
        { "w", 7 * 86400 * USEC_PER_SEC },
        { "week", 7 * 86400 * USEC_PER_SEC },
        { "weeks", 7 * 86400 * USEC_PER_SEC },
};

/* Digits at *p as a number (at most 18 of them: no overflow), advancing *p; -EINVAL without one. */
static int parse_digits(const char **p, uint64_t *ret, size_t *ret_len) {
        uint64_t v = 0;
        size_t n = 0;
        for (; isdigit((unsigned char) **p); (*p)++, n++) {
                if (n >= 18)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (**p - '0');
        }
        if (n == 0)
                return -EINVAL;
        *ret = v;
        if (ret_len)
                *ret_len = n;
        return 0;
}

/* A fraction after '.' as µs (digits past the sixth ignored), advancing *p. */
static int parse_fraction_usec(const char **p, uint64_t *ret) {
        uint64_t v = 0, scale = 100000;
        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        for (; isdigit((unsigned char) **p); (*p)++, scale /= 10)
                v += (uint64_t) (**p - '0') * scale;
        *ret = v;
        return 0;
}

/* "1h30min", "2 d", "90s": one or more number-unit pairs, spaces allowed between; the whole of s. */
static int parse_span(const char *s, uint64_t *ret) {
        uint64_t total = 0;
        bool any = false;
        const char *p = s;
        while (*p) {
                while (*p == ' ')
                        p++;
                if (!*p)
                        break;
                uint64_t n;
                int r = parse_digits(&p, &n, NULL);
                if (r < 0)
                        return r;
                while (*p == ' ')
                        p++;
                size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz");
                uint64_t unit = 0;
                /* A bare number is seconds (systemd.time(7)), but only alone: "1h30" could mean minutes. */
                if (len == 0 && !*p && !any)
                        unit = USEC_PER_SEC;
                for (size_t i = 0; i < ELEMENTSOF(span_units) && len > 0; i++)
                        if (strlen(span_units[i].name) == len && memcmp(span_units[i].name, p, len) == 0)
                                unit = span_units[i].usec;
                if (unit == 0)
                        return -EINVAL;
                if (n > UINT64_MAX / unit || total + n * unit < total)
                        return -ERANGE;
                total += n * unit;
                p += len;
                any = true;
        }
        if (!any)
                return -EINVAL;
        *ret = total;
        return 0;
}

static int from_seconds(int64_t sec, uint64_t frac_usec, uint64_t *ret) {
        if (sec < 0 || sec > TIME_MAX_SEC)
                return -ERANGE;
        *ret = (uint64_t) sec * USEC_PER_SEC + frac_usec;
        return 0;
}

/* Midnight (local time) days from the day of now. */
static int local_midnight(uint64_t now_usec, int days, uint64_t *ret) {
        time_t t = (time_t) (now_usec / USEC_PER_SEC);
        struct tm tm;
        if (!localtime_r(&t, &tm))
                return -ERANGE;
        tm.tm_mday += days;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        tm.tm_isdst = -1;
        time_t m = mktime(&tm);
        if (m == (time_t) -1)
                return -ERANGE;
        return from_seconds(m, 0, ret);
}

/* YYYY-MM-DD[( |T)HH:MM[:SS[.F]]][ UTC|Z]; a date that mktime() would move (Feb 30) is refused. */
static int parse_date(const char *s, uint64_t *ret) {
        const char *p = s;
        uint64_t year, mon, day, hour = 0, min = 0, sec = 0, frac = 0;
        size_t len;
        int r;
        if ((r = parse_digits(&p, &year, &len)) < 0 || len != 4 || *p++ != '-' ||
            (r = parse_digits(&p, &mon, &len)) < 0 || len != 2 || *p++ != '-' ||
            (r = parse_digits(&p, &day, &len)) < 0 || len != 2)
                return -EINVAL;
        if ((*p == ' ' || *p == 'T') && isdigit((unsigned char) p[1])) {
                p++;
                if ((r = parse_digits(&p, &hour, &len)) < 0 || len != 2 || *p++ != ':' ||
                    (r = parse_digits(&p, &min, &len)) < 0 || len != 2)
                        return -EINVAL;
                if (*p == ':') {
                        p++;
                        if ((r = parse_digits(&p, &sec, &len)) < 0 || len != 2)
                                return -EINVAL;
                        if (*p == '.') {
                                p++;
                                if (parse_fraction_usec(&p, &frac) < 0)
                                        return -EINVAL;
                        }
                }
        }
        bool utc = false;
        if (strcmp(p, "Z") == 0 || strcmp(p, " UTC") == 0 || strcmp(p, "UTC") == 0)
                utc = true;
        else if (*p)
                return -EINVAL;
        if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 59)
                return -EINVAL;
        struct tm tm = {
                .tm_year = (int) year - 1900, .tm_mon = (int) mon - 1, .tm_mday = (int) day,
                .tm_hour = (int) hour, .tm_min = (int) min, .tm_sec = (int) sec, .tm_isdst = -1,
        };
        time_t t = utc ? timegm(&tm) : mktime(&tm);
        if (t == (time_t) -1) /* an error, or the second before the epoch: refused either way */
                return -ERANGE;
        if (tm.tm_mday != (int) day || tm.tm_mon != (int) mon - 1) /* normalised: no such day */
                return -EINVAL;
        return from_seconds(t, frac, ret);
}

int report_time_parse(const char *s, uint64_t now_usec, uint64_t *ret) {
        if (!s || !*s)
                return -EINVAL;
        if (strcmp(s, "now") == 0) {
                *ret = now_usec;
                return 0;
        }
        static const struct {
                const char *name;
                int days;
        } days[] = { { "today", 0 }, { "yesterday", -1 }, { "tomorrow", 1 } };
        for (size_t i = 0; i < ELEMENTSOF(days); i++)
                if (strcmp(s, days[i].name) == 0)
                        return local_midnight(now_usec, days[i].days, ret);

        if (s[0] == '@') {
                const char *p = s + 1;
                uint64_t sec, frac = 0;
                int r = parse_digits(&p, &sec, NULL);
                if (r < 0)
                        return r;
                if (*p == '.') {
                        p++;
                        if (parse_fraction_usec(&p, &frac) < 0)
                                return -EINVAL;
                }
                if (*p)
                        return -EINVAL;
                return from_seconds(sec > (uint64_t) TIME_MAX_SEC ? -1 : (int64_t) sec, frac, ret);
        }

        uint64_t span;
        size_t n = strlen(s);
        if (s[0] == '-' || s[0] == '+' || (n > 4 && strcmp(s + n - 4, " ago") == 0)) {
                bool past = s[0] != '+';
                char buf[64];
                const char *body = s[0] == '-' || s[0] == '+' ? s + 1 : s;
                size_t blen = strlen(body) - (s[0] == '-' || s[0] == '+' ? 0 : 4);
                if (blen >= sizeof(buf))
                        return -EINVAL;
                memcpy(buf, body, blen);
                buf[blen] = '\0';
                int r = parse_span(buf, &span);
                if (r < 0)
                        return r;
                if (past) {
                        if (span > now_usec)
                                return -ERANGE;
                        *ret = now_usec - span;
                } else {
                        if (now_usec + span < now_usec || now_usec + span > (uint64_t) TIME_MAX_SEC * USEC_PER_SEC)
                                return -ERANGE;
                        *ret = now_usec + span;
                }
                return 0;
        }
        return parse_date(s, ret);
}

/* usec in UTC: "2026-12-06 14:00:00 UTC", or iso: "2026-12-06T14:00:00.000000Z". */
static char *format_utc(uint64_t usec, char *buf, bool iso) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;
        if (!gmtime_r(&t, &tm)) {
                snprintf(buf, REPORT_TIME_MAX, "@%" PRIu64, usec / USEC_PER_SEC);
                return buf;
        }
        if (iso)
                snprintf(buf, REPORT_TIME_MAX, "%04d-%02d-%02dT%02d:%02d:%02d.%06" PRIu64 "Z", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec % USEC_PER_SEC);
        else
                snprintf(buf, REPORT_TIME_MAX, "%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        return buf;
}

char *report_time_format(uint64_t usec, char *buf) {
        return format_utc(usec, buf, false);
}

char *report_time_format_iso(uint64_t usec, char *buf) {
        return format_utc(usec, buf, true);
}
