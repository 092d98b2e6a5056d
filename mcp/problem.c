/* problem.c: the text of a refusal (a tool error's or a JSON-RPC error's message), formatted the same
 * way for every file of mcp/. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "mcp-internal.h"

char *mcp_problemv(const char *fmt, va_list ap) {
        char *msg = NULL;
        return vasprintf(&msg, fmt, ap) < 0 ? NULL : msg;
}

char *mcp_problem(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *msg = mcp_problemv(fmt, ap);
        va_end(ap);
        return msg;
}

/* A refusal and an allocation failure must not look alike: a NULL message once meant "valid". */
int mcp_refuse(char **ret, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *msg = mcp_problemv(fmt, ap);
        va_end(ap);
        if (!msg)
                return -ENOMEM;
        *ret = msg;
        return -EINVAL;
}

const char *mcp_json_type_name(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT: return "an object";
        case JSON_ARRAY: return "an array";
        case JSON_STRING: return "a string";
        case JSON_INTEGER: return "an integer";
        case JSON_REAL: return "a number";
        case JSON_TRUE:
        case JSON_FALSE: return "a boolean";
        case JSON_NULL: return "null";
        }
        return "a value";
}
