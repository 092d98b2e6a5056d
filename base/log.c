/* log.c: stderr logging with priority prefixes. */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

int log_max_level = LOG_INFO;

void log_internal(int level, const char *fmt, ...) {
        if (level > log_max_level)
                return;
        int saved = errno;
        char line[1024];
        va_list ap;
        va_start(ap, fmt);
        errno = saved;
        (void) vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        (void) fprintf(stderr, "<%d>mcp-execd: %s\n", level, line);
        errno = saved;
}
