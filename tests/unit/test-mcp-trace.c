/* test-mcp-trace.c: the W3C traceparent a call carries into its journal record (issue 17.5):
 * only a well-formed version-00 value is kept, from _meta or else the transport's header, so no
 * caller text can reach the journal through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp.h"
#include "unit-limits.h"
#include "unit-mcp.h"

#define GOOD "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static bool valid(const char *s) {
        return mcp_traceparent_valid(s, strlen(s));
}

static void test_validator(void **state) {
        assert_true(valid(GOOD));
        assert_true(valid("00-00000000000000000000000000000001-0000000000000001-00"));
        assert_true(valid("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff"));

        static const char *const bad[] = {
                "",
                "00",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",                  /* no flags */
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",              /* longer */
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",         /* fields after */
                " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",               /* space */
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",               /* other version */
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",               /* uppercase */
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",               /* zero trace id */
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",               /* zero parent id */
                "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",               /* not hex */
                "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",               /* separators */
                "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\n",              /* newline */
                "00-4bf92f3577b34da6a3ce929d0e0-e4736-00f067aa0ba902b7-01",              /* shifted dash */
                "my secret prompt text that is exactly 55 characters...",                /* text, 55 long */
                "00-SECRETSECRETSECRETSECRETSECRET-SECRETSECRETSECR-01",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (valid(bad[i]))
                        fail_msg("accepted \"%s\"", bad[i]);
        /* A NUL inside: the length says 55, the bytes are not all there. */
        assert_false(mcp_traceparent_valid("00-4bf92f3577b34da6a3ce929d0e0e4736\0"
                                           "00f067aa0ba902b7-01", 55));
        assert_false(mcp_traceparent_valid(NULL, 0));
}

static McpServer *server_new(void) {
        return unit_server_new(&unit_limits, "0");
}

/* A tools/call with this _meta (a JSON object's members, or ""); the accepted call. */
static McpCall *call(McpServer *s, const char *meta) {
        char msg[512];
        snprintf(msg, sizeof(msg),
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                 "\"arguments\":{\"code\":\"print(1)\"},\"_meta\":{%s}}}", meta);
        return unit_server_call(s, msg);
}

static void test_call_trace(void **state) {
        McpServer *s = server_new();

        McpCall *c = call(s, "\"traceparent\":\"" GOOD "\",\"tracestate\":\"k=v\"");
        assert_string_equal(mcp_call_traceparent(c), GOOD);
        /* _meta's value wins over the transport's header. */
        mcp_call_set_traceparent(c, "00-11111111111111111111111111111111-2222222222222222-01");
        assert_string_equal(mcp_call_traceparent(c), GOOD);
        mcp_call_free(c);

        c = call(s, "");
        assert_null(mcp_call_traceparent(c));
        mcp_call_set_traceparent(c, NULL);
        mcp_call_set_traceparent(c, "caller text");
        assert_null(mcp_call_traceparent(c));
        mcp_call_set_traceparent(c, GOOD); /* the header, when _meta has none */
        assert_string_equal(mcp_call_traceparent(c), GOOD);
        mcp_call_free(c);

        /* Anything else in _meta is dropped: text, numbers, a NUL, a good value with more after it. */
        static const char *const dropped[] = {
                "\"traceparent\":\"hello from the prompt\"",
                "\"traceparent\":42",
                "\"traceparent\":{\"x\":1}",
                "\"traceparent\":\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\\u0000x\"",
                "\"traceparent\":\"" GOOD " \"",
                "\"traceparent\":\"00-00000000000000000000000000000000-00f067aa0ba902b7-01\"",
        };
        for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
                c = call(s, dropped[i]);
                if (mcp_call_traceparent(c))
                        fail_msg("kept %s", dropped[i]);
                mcp_call_free(c);
        }

        /* A call refused for its arguments keeps its traceparent for the rejection record. */
        const char *refused = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"exec\",\"arguments\":{},"
                              "\"_meta\":{\"traceparent\":\"" GOOD "\"}}}";
        McpAction a;
        assert_int_equal(mcp_server_handle(s, refused, strlen(refused), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_REPLY);
        assert_true(a.is_tool_error);
        assert_string_equal(a.traceparent, GOOD);
        mcp_action_done(&a);
        mcp_server_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_validator),
                cmocka_unit_test(test_call_trace),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
