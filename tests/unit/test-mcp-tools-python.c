/* test-mcp-tools-python.c: the issue 8 tools (execute_python, validate_script, check_environment)
 * and the python argument, through mcp_server_handle(): what is accepted (and how it is carried to
 * the daemon), what is a tool error naming the field, and the structured result encoders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cleanup.h"
#include "mcp.h"
#include "test-mcp-tools.h"

/* Expects a tool error whose text contains every word. */
static void expect_tool_error(McpServer *s, const char *tool, const char *args, const char *const *words) {
        McpAction a;
        test_tools_call(s, tool, args, &a);
        char *text = test_tool_error_text(&a);
        for (const char *const *w = words; *w; w++)
                if (!strstr(text, *w))
                        fail_msg("%s %s: '%s' not in: %s", tool, args, *w, text);
        free(text);
        mcp_action_done(&a);
}

static void test_accepted(void **state) {
        McpServer *s = test_server_new();
        McpAction a;

        test_tools_call(s, "execute_python", "{\"script\":\"print(1)\",\"dependencies\":[\"a==1\",\"B>=2\"],"
             "\"timeout_seconds\":999,\"python\":\"pypy3\"}", &a);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        const McpExecArgs *x = mcp_call_args(a.call);
        assert_int_equal(x->tool, MCP_TOOL_EXECUTE_PYTHON);
        assert_string_equal(x->code, "print(1)");
        assert_string_equal(x->python, "pypy3");
        _cleanup_free_ char *deps = json_dumps(x->dependencies, JSON_COMPACT);
        assert_string_equal(deps, "[\"a==1\",\"B>=2\"]");
        assert_int_equal(x->timeout_s, 60); /* clamped, not an error */
        mcp_action_done(&a);

        test_tools_call(s, "execute_python", "{\"script\":\"x\",\"timeout_seconds\":-3}", &a);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        assert_int_equal(mcp_call_args(a.call)->timeout_s, 1);
        assert_null(mcp_call_args(a.call)->python);
        assert_null(mcp_call_args(a.call)->dependencies);
        mcp_action_done(&a);

        test_tools_call(s, "validate_script", "{\"script\":\"x\",\"dependencies\":null}", &a);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        assert_int_equal(mcp_call_args(a.call)->tool, MCP_TOOL_VALIDATE_SCRIPT);
        mcp_action_done(&a);

        test_tools_call(s, "check_environment", "{}", &a);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        assert_int_equal(mcp_call_args(a.call)->tool, MCP_TOOL_CHECK_ENVIRONMENT);
        mcp_action_done(&a);

        test_tools_call(s, "exec", "{\"code\":\"x\",\"python\":\"python3\"}", &a);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        assert_int_equal(mcp_call_args(a.call)->tool, MCP_TOOL_EXEC);
        assert_string_equal(mcp_call_args(a.call)->python, "python3");
        mcp_action_done(&a);
        mcp_server_free(s);
}

static void test_refused(void **state) {
        McpServer *s = test_server_new();
        static const struct {
                const char *tool, *args, *words[4];
        } cases[] = {
                { "execute_python", "{}", { "'script'", "required" } },
                { "execute_python", "{\"script\":7}", { "'script'", "a string", "an integer" } },
                { "execute_python", "{\"script\":\" \\n\"}", { "'script'", "empty" } },
                { "execute_python", "{\"script\":\"" "0123456789012345678901234567890123456789012345678901234567890123456789"
                                    "0123456789012345678901234567890123456789012345678901234567890123456789"
                                    "0123456789012345678901234567890123456789012345678901234567890123456789\"}",
                  { "'script'", "210 bytes", "200" } },
                { "execute_python", "{\"script\":\"x\",\"dependencies\":\"a\"}", { "'dependencies'", "array" } },
                { "execute_python", "{\"script\":\"x\",\"dependencies\":[\"a\",{}]}", { "'dependencies[1]'", "string" } },
                { "execute_python", "{\"script\":\"x\",\"dependencies\":[\"a\\nb\"]}", { "'dependencies[0]'", "one line" } },
                { "execute_python", "{\"script\":\"x\",\"timeout_seconds\":\"5\"}", { "'timeout_seconds'", "integer" } },
                { "execute_python", "{\"script\":\"x\",\"python\":\"jython\"}", { "'python'", "jython", "python3,pypy3" } },
                { "execute_python", "{\"script\":\"x\",\"code\":\"y\"}", { "'code'", "unknown property" } },
                { "validate_script", "{\"script\":\"x\",\"stdin\":\"y\"}", { "'stdin'", "unknown property" } },
                { "check_environment", "{\"x\":1}", { "'x'", "no arguments" } },
                { "exec", "{\"code\":\"x\",\"python\":\"pypy\"}", { "'python'", "pypy" } },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                expect_tool_error(s, cases[i].tool, cases[i].args, cases[i].words);
        mcp_server_free(s);
}

static void test_catalogue(void **state) {
        McpServer *s = test_server_new();
        McpAction a;
        const char *list = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
        assert_int_equal(mcp_server_handle(s, list, strlen(list), &a), 0);
        json_t *j = json_loads(a.reply, 0, NULL);
        json_t *tools = json_object_get(json_object_get(j, "result"), "tools");
        assert_int_equal(json_array_size(tools), 6);
        static const char *const names[] = { "exec", "execute_python", "validate_script", "check_environment",
                                             "session_open", "session_close" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                json_t *t = json_array_get(tools, i);
                assert_string_equal(json_string_value(json_object_get(t, "name")), names[i]);
                assert_true(json_is_object(json_object_get(t, "outputSchema")));
                assert_true(json_is_false(json_object_get(json_object_get(t, "inputSchema"), "additionalProperties")));
        }
        const char *d = json_string_value(json_object_get(json_array_get(tools, 1), "description"));
        assert_non_null(strstr(d, "the wheelhouse /w"));
        assert_non_null(strstr(d, "python3,pypy3"));
        /* execute_python's output has every field of exec's, and the four of its own. */
        json_t *ereq = json_object_get(json_object_get(json_array_get(tools, 0), "outputSchema"), "required");
        json_t *preq = json_object_get(json_object_get(json_array_get(tools, 1), "outputSchema"), "required");
        assert_int_equal(json_array_size(preq), json_array_size(ereq) + 4);
        json_decref(j);
        mcp_action_done(&a);
        mcp_server_free(s);
}

static void test_encoders(void **state) {
        McpServer *s = test_server_new();
        McpAction a;
        test_tools_call(s, "execute_python", "{\"script\":\"x\"}", &a);
        json_t *extra = json_pack("{s:s, s:n}", "python", "python3", "environment");
        assert_non_null(extra);
        ExecResult r = { .stdout_data = "hi\n", .stdout_len = 3, .limits = "rlimit", .extra = extra };
        char *reply = mcp_call_reply_result(a.call, &r);
        json_t *j = json_loads(reply, 0, NULL);
        json_t *sc = json_object_get(json_object_get(j, "result"), "structuredContent");
        assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "hi\n");
        assert_string_equal(json_string_value(json_object_get(sc, "python")), "python3");
        assert_true(json_is_null(json_object_get(sc, "environment")));
        json_decref(j);
        json_decref(extra);
        free(reply);

        json_t *o = json_pack("{s:b, s:[]}", "valid", 1, "problems");
        assert_non_null(o);
        reply = mcp_call_reply_structured(a.call, o);
        json_decref(o);
        json_t *result = unit_reply_result(reply, false);
        assert_true(json_is_true(json_object_get(json_object_get(result, "structuredContent"), "valid")));
        assert_string_equal(unit_result_text(result), "{\"valid\":true,\"problems\":[]}");
        json_decref(result);
        free(reply);
        json_t *array = json_pack("[i]", 1);
        /* Not an object: a tool error naming it, still an answer (issue 15). */
        reply = mcp_call_reply_structured(a.call, array);
        assert_non_null(reply);
        assert_non_null(strstr(reply, "\"isError\":true"));
        assert_non_null(strstr(reply, "could not encode the result: structuredContent"));
        free(reply);
        json_decref(array);
        mcp_action_done(&a);
        mcp_server_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accepted),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_catalogue),
                cmocka_unit_test(test_encoders),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
