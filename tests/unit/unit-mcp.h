/* unit-mcp.h: what the unit tests that drive an McpServer share, header-only (some of them link no
 * unit-fakes.c): a session past initialize, the McpCall a tools/call is, and the parts of a tool's
 * reply they check. Include after cmocka.h. */
#pragma once

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mcp.h"

/* The initialize request of a 2025-11-25 client. */
#define UNIT_INITIALIZE                                                                              \
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"                       \
        "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"                                 \
        "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"

/* s answers initialize, as a session's first request. */
static inline void unit_server_initialize(McpServer *s) {
        McpAction a;
        assert_int_equal(mcp_server_handle(s, UNIT_INITIALIZE, strlen(UNIT_INITIALIZE), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_REPLY);
        mcp_action_done(&a);
}

/* A server with these limits, calling itself version, past initialize. */
static inline McpServer *unit_server_new(const McpLimits *limits, const char *version) {
        McpServer *s = mcp_server_new(limits, version);
        assert_non_null(s);
        unit_server_initialize(s);
        return s;
}

/* The call that msg (a tools/call) is accepted as; fails the test if it is anything else. */
static inline McpCall *unit_server_call(McpServer *s, const char *msg) {
        McpAction a;
        assert_int_equal(mcp_server_handle(s, msg, strlen(msg), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        McpCall *c = a.call;
        a.call = NULL;
        mcp_action_done(&a);
        return c;
}

/* The "result" of reply (a tool's answer), whose isError is is_error (true, or present and false);
 * a new reference. */
static inline json_t *unit_reply_result(const char *reply, bool is_error) {
        assert_non_null(reply);
        json_t *j = json_loads(reply, 0, NULL);
        if (!j)
                fail_msg("invalid JSON: %s", reply);
        json_t *result = json_incref(json_object_get(j, "result"));
        json_decref(j);
        assert_non_null(result);
        json_t *is = json_object_get(result, "isError");
        if (is_error ? !json_is_true(is) : !json_is_false(is))
                fail_msg("isError should be %s: %s", is_error ? "true" : "false", reply);
        return result;
}

/* The text of result's first content item. */
static inline const char *unit_result_text(json_t *result) {
        json_t *first = json_array_get(json_object_get(result, "content"), 0);
        const char *text = json_string_value(json_object_get(first, "text"));
        assert_non_null(text);
        return text;
}
