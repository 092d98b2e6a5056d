/* trace.c: the W3C trace context a call carries (SEP-414: `traceparent` in _meta; over HTTP also
 * the header), held only when it is well-formed, for the run's journal record. */
#include <stdbool.h>
#include <string.h>

#include "mcp-internal.h"

static bool lower_hex(const char *s, size_t n, bool *ret_nonzero) {
        bool nonzero = false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                        return false;
                nonzero = nonzero || c != '0';
        }
        *ret_nonzero = nonzero;
        return true;
}

/* W3C Trace Context §3.2 (https://www.w3.org/TR/trace-context/#traceparent-header), version 00
 * exactly: "00-" 32 lowercase hex (trace-id) "-" 16 (parent-id) "-" 2 (flags), 55 characters, and
 * neither id all zeros. Stricter than the spec's rule for future versions (longer values with
 * more fields after them): whatever is not this shape is dropped, so a value that reaches the
 * journal can only be hex digits and dashes, never text the caller chose. */
bool mcp_traceparent_valid(const char *s, size_t n) {
        bool trace_nonzero, parent_nonzero, flags_nonzero;
        if (!s || n != MCP_TRACEPARENT_LEN)
                return false;
        if (memcmp(s, "00-", 3) != 0 || s[35] != '-' || s[52] != '-')
                return false;
        return lower_hex(s + 3, 32, &trace_nonzero) && trace_nonzero &&
               lower_hex(s + 36, 16, &parent_nonzero) && parent_nonzero &&
               lower_hex(s + 53, 2, &flags_nonzero);
}

void mcp_call_set_traceparent(McpCall *c, const char *value) {
        if (c->traceparent[0] || !value || !mcp_traceparent_valid(value, strlen(value)))
                return;
        memcpy(c->traceparent, value, MCP_TRACEPARENT_LEN + 1);
}

void mcp_call_trace_from_meta(McpCall *c, json_t *meta) {
        json_t *v = json_is_object(meta) ? json_object_get(meta, "traceparent") : NULL;
        /* A string with a NUL inside is not one (mcp_json_name()). */
        if (mcp_json_name(v))
                mcp_call_set_traceparent(c, json_string_value(v));
}

const char *mcp_call_traceparent(const McpCall *c) {
        return c->traceparent[0] ? c->traceparent : NULL;
}
