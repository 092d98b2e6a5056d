/* problem.c: the text of a refusal (a tool error's or a JSON-RPC error's message), formatted the same
 * way for every file of mcp/. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp-internal.h"

/* Escaping rather than U+FFFD: two values that differ only in their invalid bytes stay two values,
 * and a client can tell what was there. '\\' is always escaped, so "\\x" always starts an escape.
 * The cut is at a character's boundary: a cut inside one would be invalid UTF-8, which jansson
 * refuses (the answer would be lost). */
size_t mcp_escape(char *out, const char *s, size_t n, size_t max_in, const char *also, size_t *ret_used) {
        size_t o = 0, i = 0;
        while (i < n && i < max_in) {
                unsigned char c = (unsigned char) s[i];
                size_t k = utf8_seq_len(s + i, n - i), esc = 0;
                if (k == 0 || (k == 1 && (c < 0x20 || c == 0x7f || c == '\\' || (c && strchr(also, c)))))
                        esc = 1;
                else if (k == 2 && c == 0xc2 && (unsigned char) s[i + 1] <= 0x9f) /* C1: U+0080..U+009F */
                        esc = 2;
                if (esc == 0) {
                        if (i + k > max_in)
                                break;
                        memcpy(out + o, s + i, k);
                        o += k;
                        i += k;
                        continue;
                }
                for (size_t j = 0; j < esc; j++, i++, o += 4)
                        snprintf(out + o, 5, "\\x%02x", (unsigned char) s[i]);
        }
        out[o] = '\0';
        if (ret_used)
                *ret_used = i;
        return o;
}

const char *mcp_quote(McpQuote *q, const char *s, size_t n) {
        size_t used, o = mcp_escape(q->text, s, n, MCP_QUOTE_MAX_BYTES, "\"", &used);
        if (used < n)
                snprintf(q->text + o, sizeof(q->text) - o, "\u2026 (%zu bytes)", n);
        return q->text;
}

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
