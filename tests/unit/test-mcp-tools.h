/* test-mcp-tools.h: what the unit tests of mcp/'s tools share: their limits, an initialized server,
 * a tools/call and the text of the tool error it got. Include after cmocka.h. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mcp.h"
#include "unit-limits.h"
#include "unit-mcp.h"

/* A server past initialize. */
static inline McpServer *test_server_new(void) {
        return unit_server_new(&unit_limits, "1.0.0");
}

/* tools/call of tool with args (a JSON object's text). */
static inline void test_tools_call(McpServer *s, const char *tool, const char *args, McpAction *ret) {
        size_t size = strlen(tool) + strlen(args) + 128;
        char *msg = malloc(size);
        assert_non_null(msg);
        snprintf(msg, size, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
                 "\"arguments\":%s}}", tool, args);
        assert_int_equal(mcp_server_handle(s, msg, strlen(msg), ret), 0);
        free(msg);
}

/* The text of the tool error a is (malloc'd); fails the test if a is anything else. */
static inline char *test_tool_error_text(const McpAction *a) {
        assert_int_equal(a->kind, MCP_ACTION_REPLY);
        assert_true(a->is_tool_error);
        json_t *result = unit_reply_result(a->reply, true);
        char *copy = strdup(unit_result_text(result));
        json_decref(result);
        return copy;
}
