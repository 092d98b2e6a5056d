/* log.h: the daemon's own diagnostics, on stderr with sd-daemon priority prefixes (journald
 * parses "<N>"). Never caller data: code, stdin and output are not logged anywhere. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

extern int log_max_level;

void log_internal(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_internal(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_internal(LOG_DEBUG, __VA_ARGS__)

/* Logs with %m meaning strerror(-r), and returns r (which must be negative). */
#define log_error_errno(r, ...) ({ int _r = (r); errno = -_r; log_internal(LOG_ERR, __VA_ARGS__); _r; })
#define log_warning_errno(r, ...) ({ int _r = (r); errno = -_r; log_internal(LOG_WARNING, __VA_ARGS__); _r; })
