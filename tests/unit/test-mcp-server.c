/* test-mcp-server.c: JSON-RPC parsing and dispatch, lifecycle, tool argument validation and
 * result encoding, through mcp_server_handle() as a transport would use it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "mcp.h"
#include "unit-limits.h"
#include "unit-mcp.h"

static McpServer *server_new(bool initialized) {
        McpServer *s = mcp_server_new(&unit_limits, "9.9.9");
        assert_non_null(s);
        if (initialized)
                unit_server_initialize(s);
        return s;
}

/* Sends msg, expects a REPLY, returns it parsed. */
static json_t *roundtrip(McpServer *s, const char *msg) {
        McpAction a;
        assert_int_equal(mcp_server_handle(s, msg, strlen(msg), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_REPLY);
        assert_non_null(a.reply);
        assert_null(strchr(a.reply, '\n')); /* one NDJSON line */
        json_error_t err;
        json_t *j = json_loads(a.reply, 0, &err);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "jsonrpc")), "2.0");
        mcp_action_done(&a);
        return j;
}

static int error_code(json_t *reply) {
        json_t *e = json_object_get(reply, "error");
        assert_non_null(e);
        assert_true(json_is_string(json_object_get(e, "message")));
        return (int) json_integer_value(json_object_get(e, "code"));
}

static void expect_error(McpServer *s, const char *msg, int code, bool with_id) {
        json_t *r = roundtrip(s, msg);
        assert_int_equal(error_code(r), code);
        assert_true(with_id ? json_object_get(r, "id") != NULL : json_object_get(r, "id") == NULL);
        json_decref(r);
}

static void test_parse_errors(void **state) {
        McpServer *s = server_new(true);
        expect_error(s, "not json", MCP_ERROR_PARSE, false);
        expect_error(s, "{\"jsonrpc\":\"2.0\",", MCP_ERROR_PARSE, false);
        expect_error(s, "{\"a\":1,\"a\":2}", MCP_ERROR_PARSE, false); /* duplicate keys */
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing", MCP_ERROR_PARSE, false);
        expect_error(s, "\"\xff\"", MCP_ERROR_PARSE, false);
        expect_error(s, "[]", MCP_ERROR_INVALID_REQUEST, false);
        expect_error(s, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", MCP_ERROR_INVALID_REQUEST, false);
        expect_error(s, "42", MCP_ERROR_INVALID_REQUEST, false);
        expect_error(s, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", MCP_ERROR_INVALID_REQUEST, true);
        expect_error(s, "{\"id\":1,\"method\":\"ping\"}", MCP_ERROR_INVALID_REQUEST, true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MCP_ERROR_INVALID_REQUEST, false);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MCP_ERROR_INVALID_REQUEST, false);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", MCP_ERROR_INVALID_REQUEST, false);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", MCP_ERROR_INVALID_REQUEST, true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":1}", MCP_ERROR_INVALID_REQUEST, true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}", MCP_ERROR_INVALID_PARAMS,
                     true);
        /* After all of that the session still answers. */
        json_t *r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}");
        assert_string_equal(json_string_value(json_object_get(r, "id")), "p");
        assert_true(json_is_object(json_object_get(r, "result")));
        assert_int_equal(json_object_size(json_object_get(r, "result")), 0);
        json_decref(r);
        mcp_server_free(s);
}

static void test_version_negotiation(void **state) {
        static const char *const cases[][2] = {
                { "2025-11-25", "2025-11-25" }, { "2025-06-18", "2025-06-18" }, { "2025-03-26", "2025-03-26" },
                { "2024-11-05", "2024-11-05" }, { "2099-01-01", "2025-11-25" }, { "2024-10-07", "2025-11-25" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                McpServer *s = server_new(false);
                char msg[256];
                snprintf(msg, sizeof(msg),
                         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                         "\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
                         cases[i][0]);
                json_t *r = roundtrip(s, msg);
                json_t *res = json_object_get(r, "result");
                assert_string_equal(json_string_value(json_object_get(res, "protocolVersion")), cases[i][1]);
                assert_true(json_is_object(json_object_get(json_object_get(res, "capabilities"), "tools")));
                assert_string_equal(json_string_value(json_object_get(json_object_get(res, "serverInfo"), "name")),
                                    "mcp-execd");
                assert_string_equal(mcp_server_protocol_version(s), cases[i][1]);
                json_decref(r);
                /* A second initialize is refused. */
                expect_error(s, msg, MCP_ERROR_INVALID_REQUEST, true);
                mcp_server_free(s);
        }
}

/* The instructions tell a model when to use what (issue 30.4: a model told only "nothing survives"
 * never opened a session), in under 1,500 characters. */
static void test_instructions(void **state) {
        McpServer *s = server_new(false);
        json_t *r = roundtrip(s, UNIT_INITIALIZE);
        const char *text = json_string_value(json_object_get(json_object_get(r, "result"), "instructions"));
        assert_non_null(text);
        assert_true(strlen(text) < 1500);
        static const char *const names[] = { "exec", "execute_python", "session_open", "`session`",
                                             "session_close", "outputs/", "`files`", "`dependencies`",
                                             "check_environment", "timeout_s", "task" };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (!strstr(text, names[i]))
                        fail_msg("the instructions do not name %s", names[i]);
        json_decref(r);
        mcp_server_free(s);
}

static void test_lifecycle_gates(void **state) {
        McpServer *s = server_new(false);
        /* ping and unknown methods (the 2026 server/discover probe) are answered before initialize. */
        json_t *r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
        assert_non_null(json_object_get(r, "result"));
        json_decref(r);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":\"server-discover-probe-1\",\"method\":\"server/discover\"}",
                     MCP_ERROR_METHOD_NOT_FOUND, true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", MCP_ERROR_INVALID_REQUEST, true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{}}",
                     MCP_ERROR_INVALID_PARAMS, true);
        mcp_server_free(s);

        s = server_new(true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/list\"}", MCP_ERROR_METHOD_NOT_FOUND,
                     true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{\"cursor\":\"x\"}}",
                     MCP_ERROR_INVALID_PARAMS, true);
        /* Notifications are never answered, known or not. */
        McpAction a;
        const char *n1 = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
        assert_int_equal(mcp_server_handle(s, n1, strlen(n1), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_NONE);
        const char *n2 = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\",\"params\":{}}";
        assert_int_equal(mcp_server_handle(s, n2, strlen(n2), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_NONE);
        /* A response from the client (we send no requests) is ignored. */
        const char *n3 = "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}";
        assert_int_equal(mcp_server_handle(s, n3, strlen(n3), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_NONE);
        mcp_server_free(s);
}

static void test_tools_list(void **state) {
        McpServer *s = server_new(true);
        json_t *r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
        json_t *tools = json_object_get(json_object_get(r, "result"), "tools");
        assert_int_equal(json_array_size(tools), 6); /* exec, the issue 8 tools, the session tools (18) */
        json_t *t = json_array_get(tools, 0);
        assert_string_equal(json_string_value(json_object_get(t, "name")), "exec");
        json_t *in = json_object_get(t, "inputSchema");
        assert_true(json_is_false(json_object_get(in, "additionalProperties")));
        assert_string_equal(json_string_value(json_array_get(json_object_get(in, "required"), 0)), "code");
        json_t *out = json_object_get(t, "outputSchema");
        /* + files, files_unlisted (issue 10), unbounded (issue 15 #6), warm, memory_at_start_bytes (16),
         * the kernel's account (33.1: 8, integer or null) */
        assert_int_equal(json_array_size(json_object_get(out, "required")), 27);
        json_t *pp = json_object_get(json_object_get(out, "properties"), "pids_peak");
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(pp, "anyOf"), 0), "type")),
                            "integer");
        json_t *ub = json_object_get(json_object_get(out, "properties"), "unbounded");
        assert_string_equal(json_string_value(json_object_get(ub, "type")), "array");
        assert_string_equal(json_string_value(json_object_get(json_object_get(ub, "items"), "type")), "string");
        /* The description says the limits actually in force. */
        const char *d = json_string_value(json_object_get(t, "description"));
        assert_non_null(strstr(d, "at most 60 s"));
        assert_non_null(strstr(d, "4 KiB"));
        assert_non_null(strstr(d, "3.11.2"));
        assert_non_null(strstr(d, "numpy, pandas"));
        assert_non_null(strstr(d, "50%"));
        assert_null(json_object_get(json_object_get(r, "result"), "nextCursor"));
        /* A nullable field is an anyOf of one type each, its description outside (issue 30: single-type
         * dialects take no type array), and no schema of any tool has a type array left. */
        json_t *sig = json_object_get(json_object_get(out, "properties"), "signal");
        assert_non_null(json_object_get(sig, "description"));
        assert_null(json_object_get(sig, "type"));
        json_t *any = json_object_get(sig, "anyOf");
        assert_int_equal(json_array_size(any), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(any, 0), "type")), "string");
        assert_string_equal(json_string_value(json_object_get(json_array_get(any, 1), "type")), "null");
        assert_null(json_object_get(json_array_get(any, 0), "description"));
        char *dump = json_dumps(tools, JSON_COMPACT);
        assert_null(strstr(dump, "\"type\":["));
        free(dump);
        json_decref(r);
        mcp_server_free(s);
}

/* A tools/call with these arguments: either a CALL (returned) or a tool error (checked). */
static McpCall *call(McpServer *s, const char *arguments, const char *want_error_substring) {
        char msg[1024];
        snprintf(msg, sizeof(msg),
                 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\",\"arguments\":%s}}",
                 arguments);
        if (!want_error_substring)
                return unit_server_call(s, msg);
        McpAction a;
        assert_int_equal(mcp_server_handle(s, msg, strlen(msg), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_REPLY);
        json_t *res = unit_reply_result(a.reply, true);
        const char *text = unit_result_text(res);
        print_message("%s -> %s\n", arguments, text);
        assert_non_null(strstr(text, want_error_substring));
        json_decref(res);
        mcp_action_done(&a);
        return NULL;
}

static void test_argument_validation(void **state) {
        McpServer *s = server_new(true);
        call(s, "{}", "'code'");
        call(s, "{\"code\":\"\"}", "'code': must not be empty");
        call(s, "{\"code\":\" \\n\\t \"}", "'code': must not be empty");
        call(s, "{\"code\":5}", "'code': must be a string, got an integer");
        call(s, "{\"code\":null}", "'code': must be a string, got null");
        call(s, "{\"code\":\"print(1)\",\"timeout_s\":\"x\"}", "'timeout_s'");
        call(s, "{\"code\":\"print(1)\",\"timeout_s\":1.5}", "'timeout_s'");
        call(s, "{\"code\":\"print(1)\",\"stdin\":7}", "'stdin': must be a string");
        call(s, "{\"code\":\"print(1)\",\"stdin\":\"12345678901\"}", "limit of 10 bytes (MCP_EXEC_MAX_STDIN_BYTES)");
        call(s, "{\"code\":\"print(1)\",\"foo\":1}", "'foo'");
        char big[400];
        snprintf(big, sizeof(big), "{\"code\":\"%0201d\"}", 0);
        call(s, big, "limit of 200 bytes (MCP_EXEC_MAX_CODE_BYTES)");

        /* Unknown tool and a malformed call are protocol errors. */
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}",
                     MCP_ERROR_INVALID_PARAMS, true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}", MCP_ERROR_INVALID_PARAMS,
                     true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                        "\"arguments\":[]}}", MCP_ERROR_INVALID_PARAMS, true);
        mcp_server_free(s);
}

/* A NUL inside a name is no match for the name before it (C comparisons stop at the NUL; found by
 * fuzz-mcp-server): the tool, the method, "jsonrpc" and the protocol version. */
static void test_names_with_nul(void **state) {
        McpServer *s = server_new(true);
        json_t *r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                                 "{\"name\":\"exec\\u0000x\",\"arguments\":{\"code\":\"print(1)\"}}}");
        assert_int_equal(error_code(r), MCP_ERROR_INVALID_PARAMS);
        const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
        assert_non_null(strstr(msg, "Unknown tool: exec"));
        assert_non_null(strstr(msg, "NUL"));
        json_decref(r);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                        "\"execute_python\\u0000\",\"arguments\":{\"script\":\"1\"}}}", MCP_ERROR_INVALID_PARAMS, true);
        r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\\u0000\",\"params\":"
                         "{\"name\":\"exec\",\"arguments\":{\"code\":\"print(1)\"}}}");
        assert_int_equal(error_code(r), MCP_ERROR_METHOD_NOT_FOUND);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), 3);
        json_decref(r);
        expect_error(s, "{\"jsonrpc\":\"2.0\\u0000\",\"id\":4,\"method\":\"ping\"}", MCP_ERROR_INVALID_REQUEST, true);
        /* A cancellation notification with a NUL in its method is an unknown notification: ignored. */
        McpAction a;
        const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\\u0000\",\"params\":"
                        "{\"requestId\":1}}";
        assert_int_equal(mcp_server_handle(s, n, strlen(n), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_NONE);
        mcp_action_done(&a);
        mcp_server_free(s);

        s = server_new(false);
        r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                         "\"2024-11-05\\u0000\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
        assert_string_equal(json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion")),
                            "2025-11-25");
        json_decref(r);
        mcp_server_free(s);
}

static void test_timeout_clamping_and_args(void **state) {
        static const struct {
                const char *arg;
                uint32_t want;
        } cases[] = {
                { "", 30 }, { ",\"timeout_s\":0", 30 }, { ",\"timeout_s\":-5", 1 }, { ",\"timeout_s\":7", 7 },
                { ",\"timeout_s\":1000", 60 }, { ",\"timeout_s\":5.0", 5 }, { ",\"timeout_s\":1e30", 60 },
                { ",\"timeout_s\":null", 30 },
        };
        McpServer *s = server_new(true);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char args[128];
                snprintf(args, sizeof(args), "{\"code\":\"print(1)\"%s}", cases[i].arg);
                McpCall *c = call(s, args, NULL);
                assert_int_equal(mcp_call_args(c)->timeout_s, cases[i].want);
                mcp_call_free(c);
        }
        /* stdin with a NUL survives byte-exact; the id key is the id's JSON. */
        McpCall *c = call(s, "{\"code\":\"x\",\"stdin\":\"a\\u0000b\"}", NULL);
        assert_int_equal(mcp_call_args(c)->stdin_len, 3);
        assert_memory_equal(mcp_call_args(c)->stdin_data, "a\0b", 3);
        assert_string_equal(mcp_call_id_key(c), "7");
        mcp_call_free(c);
        mcp_server_free(s);
}

static void test_cancel_action(void **state) {
        McpServer *s = server_new(true);
        McpAction a;
        const char *m = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"abc\","
                        "\"reason\":\"timeout\"}}";
        assert_int_equal(mcp_server_handle(s, m, strlen(m), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_CANCEL);
        assert_string_equal(a.cancel_key, "\"abc\"");
        mcp_action_done(&a);
        const char *bad = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{}}";
        assert_int_equal(mcp_server_handle(s, bad, strlen(bad), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_NONE);
        mcp_server_free(s);
}

/* A held session (mcp_server_hold(), issue 16.6) answers initialize, ping, errors and
 * notifications at once and holds tools/list and tools/call without doing anything; released with
 * what the probe found, it answers them as a session made with it does. */
static void test_hold_release(void **state) {
        McpLimits unknown = unit_limits;
        unknown.python_version = NULL;
        unknown.packages = NULL;
        McpServer *s = mcp_server_new(&unknown, "9.9.9");
        assert_non_null(s);
        mcp_server_hold(s);
        const char *list = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
        const char *run = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                          "\"arguments\":{\"code\":\"print(1)\"}}}";
        McpAction a;
        /* Held before initialize too (handed in again after release, it gets the "not initialized"
         * error it would have got). The transport hands in nothing after a held message until the
         * release; here the session alone is tested, so the messages below come anyway. */
        assert_int_equal(mcp_server_handle(s, list, strlen(list), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_HOLD);
        assert_null(a.reply);
        mcp_action_done(&a);

        json_t *r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                                 "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                                 "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
        assert_non_null(json_object_get(r, "result"));
        json_decref(r);
        r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
        assert_non_null(json_object_get(r, "result"));
        json_decref(r);
        r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"nope\"}");
        assert_int_equal(error_code(r), -32601);
        json_decref(r);
        const char *cancel = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}";
        assert_int_equal(mcp_server_handle(s, cancel, strlen(cancel), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_CANCEL);
        mcp_action_done(&a);
        for (const char *const *m = (const char *const[]) { list, run, NULL }; *m; m++) {
                assert_int_equal(mcp_server_handle(s, *m, strlen(*m), &a), 0);
                assert_int_equal(a.kind, MCP_ACTION_HOLD);
                assert_null(a.call);
                mcp_action_done(&a);
        }

        assert_int_equal(mcp_server_release(s, unit_limits.python_version, unit_limits.packages), 0);
        McpServer *ref = server_new(true);
        json_t *got = roundtrip(s, list), *want = roundtrip(ref, list);
        assert_true(json_equal(got, want));
        json_decref(got);
        json_decref(want);
        assert_int_equal(mcp_server_handle(s, run, strlen(run), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        mcp_action_done(&a);
        mcp_server_free(ref);
        mcp_server_free(s);
}

/* A held session whose start will not complete (mcp_server_refuse()) answers what it held: the
 * call with a tool error that is the reason, the list with an internal error naming it. */
static void test_hold_refuse(void **state) {
        McpServer *s = server_new(true);
        mcp_server_hold(s);
        const char *run = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                          "\"arguments\":{\"code\":\"print(1)\"}}}";
        McpAction a;
        assert_int_equal(mcp_server_handle(s, run, strlen(run), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_HOLD);
        mcp_action_done(&a);
        assert_int_equal(mcp_server_refuse(s, "shutting down (SIGTERM)"), 0);
        assert_int_equal(mcp_server_handle(s, run, strlen(run), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_REPLY);
        assert_true(a.is_tool_error);
        json_t *r = json_loads(a.reply, 0, NULL);
        assert_non_null(r);
        assert_int_equal(json_integer_value(json_object_get(r, "id")), 2);
        json_decref(r);
        json_t *result = unit_reply_result(a.reply, true);
        assert_string_equal(unit_result_text(result), "shutting down (SIGTERM)");
        json_decref(result);
        mcp_action_done(&a);
        r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
        assert_int_equal(error_code(r), -32603);
        assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
                            "tools/list: shutting down (SIGTERM)");
        json_decref(r);
        mcp_server_free(s);
}

static void test_result_encoding(void **state) {
        McpServer *s = server_new(true);
        McpCall *c = call(s, "{\"code\":\"print(1)\"}", NULL);
        ExecResult r = {
                .stdout_data = "ok\xff\n", .stdout_len = 4,
                .stderr_data = "", .stderr_len = 0,
                .exit_code = -9, .duration_ms = 12, .truncated = true, .signal = "SIGKILL",
                .memory_peak_bytes = 1000, .cpu_user_us = 5, .cpu_system_us = 6, .limits = "cgroup", .queue_ms = 3,
        };
        exec_account_set(&r.account, EXEC_ACCOUNT_IO_READ_BYTES, 8192);
        exec_account_set(&r.account, EXEC_ACCOUNT_PIDS_PEAK, 3);
        char *reply = mcp_call_reply_result(c, &r);
        assert_non_null(reply);
        json_error_t err;
        json_t *j = json_loads(reply, 0, &err);
        json_t *res = json_object_get(j, "result");
        json_t *sc = json_object_get(res, "structuredContent");
        assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "ok\xef\xbf\xbd\n");
        assert_int_equal(json_integer_value(json_object_get(sc, "exit_code")), -9);
        assert_string_equal(json_string_value(json_object_get(sc, "signal")), "SIGKILL");
        assert_true(json_is_true(json_object_get(sc, "truncated")));
        assert_true(json_is_false(json_object_get(res, "isError")));
        /* + files, files_unlisted (issue 10), unbounded (issue 15 #6), warm, memory_at_start_bytes (16),
         * the kernel's account (33.1) */
        assert_int_equal(json_object_size(sc), 27);
        /* Known figures are integers, unknown ones null (never 0). */
        assert_int_equal(json_integer_value(json_object_get(sc, "io_read_bytes")), 8192);
        assert_int_equal(json_integer_value(json_object_get(sc, "pids_peak")), 3);
        assert_true(json_is_null(json_object_get(sc, "cpu_pressure_some_us")));
        assert_true(json_is_null(json_object_get(sc, "memory_pressure_full_us")));
        /* With a cgroup nothing is left unbounded (issue 15 #6). */
        assert_true(json_is_array(json_object_get(sc, "unbounded")));
        assert_int_equal(json_array_size(json_object_get(sc, "unbounded")), 0);
        /* The text content is the same JSON. */
        json_t *parsed = json_loads(unit_result_text(res), 0, &err);
        assert_true(json_equal(parsed, sc));
        json_decref(parsed);
        json_decref(j);
        free(reply);

        r.signal = NULL;
        reply = mcp_call_reply_result(c, &r);
        j = json_loads(reply, 0, &err);
        assert_true(json_is_null(json_object_get(json_object_get(json_object_get(j, "result"), "structuredContent"),
                                                  "signal")));
        json_decref(j);
        free(reply);
        mcp_call_free(c);
        mcp_server_free(s);
}

/* The envelope of a 2026-07-28 request, as the start of params ("_meta":{…}). */
#define MODERN_META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
                    "\"io.modelcontextprotocol/clientCapabilities\":{}}"

static void assert_stamped(json_t *result) {
        assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
        json_t *info = json_object_get(json_object_get(result, "_meta"), "io.modelcontextprotocol/serverInfo");
        assert_string_equal(json_string_value(json_object_get(info, "name")), "mcp-execd");
        assert_string_equal(json_string_value(json_object_get(info, "version")), "9.9.9");
}

static void test_modern_requests(void **state) {
        McpServer *s = server_new(false); /* no initialize: a 2026 request stands alone */
        json_t *r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" MODERN_META "}}");
        json_t *res = json_object_get(r, "result");
        json_t *v = json_object_get(res, "supportedVersions");
        assert_int_equal(json_array_size(v), 5);
        assert_string_equal(json_string_value(json_array_get(v, 0)), "2026-07-28");
        assert_string_equal(json_string_value(json_array_get(v, 1)), "2025-11-25");
        assert_true(json_is_object(json_object_get(json_object_get(res, "capabilities"), "tools")));
        assert_stamped(res);
        json_decref(r);

        r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" MODERN_META "}}");
        res = json_object_get(r, "result");
        assert_true(json_array_size(json_object_get(res, "tools")) >= 2);
        assert_true(json_integer_value(json_object_get(res, "ttlMs")) > 0);
        assert_string_equal(json_string_value(json_object_get(res, "cacheScope")), "public");
        assert_stamped(res);
        json_decref(r);

        /* An argument error is a stamped tool error. */
        r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                         "\"arguments\":{\"code\":7}," MODERN_META "}}");
        res = json_object_get(r, "result");
        assert_true(json_is_true(json_object_get(res, "isError")));
        assert_stamped(res);
        json_decref(r);

        /* A call is a CALL whose every reply is stamped. */
        const char *call = "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                           "\"arguments\":{\"code\":\"print(1)\"}," MODERN_META "}}";
        McpAction a;
        assert_int_equal(mcp_server_handle(s, call, strlen(call), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_CALL);
        assert_true(a.is_modern);
        ExecResult er = { .stdout_data = "1\n", .stdout_len = 2, .limits = "rlimit" };
        char *reply = mcp_call_reply_result(a.call, &er);
        json_error_t err;
        r = json_loads(reply, 0, &err);
        assert_stamped(json_object_get(r, "result"));
        json_decref(r);
        free(reply);
        reply = mcp_call_reply_tool_error(a.call, "no");
        r = json_loads(reply, 0, &err);
        assert_stamped(json_object_get(r, "result"));
        json_decref(r);
        free(reply);
        mcp_action_done(&a);

        /* None of it initialized the session: a 2025-era request is still gated. */
        assert_null(mcp_server_protocol_version(s));
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}", MCP_ERROR_INVALID_REQUEST, true);
        mcp_server_free(s);
}

static void test_modern_errors(void **state) {
        McpServer *s = server_new(true); /* a 2025 session beside: it changes nothing for 2026 requests */
        /* -32022 names what we speak and what was asked. */
        json_t *r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                                 "\"io.modelcontextprotocol/protocolVersion\":\"2030-01-01\","
                                 "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
        assert_int_equal(error_code(r), MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION);
        json_t *data = json_object_get(json_object_get(r, "error"), "data");
        assert_string_equal(json_string_value(json_object_get(data, "requested")), "2030-01-01");
        assert_string_equal(json_string_value(json_array_get(json_object_get(data, "supported"), 0)), "2026-07-28");
        json_decref(r);
        /* The version check comes before the envelope's (the SDK's ladder). */
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"_meta\":{"
                        "\"io.modelcontextprotocol/protocolVersion\":\"1\"}}}",
                     MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION, true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                        "\"io.modelcontextprotocol/protocolVersion\":7}}}",
                     MCP_ERROR_INVALID_PARAMS, true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
                     MCP_ERROR_INVALID_PARAMS, true);
        expect_error(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                        "\"io.modelcontextprotocol/clientCapabilities\":{},\"io.modelcontextprotocol/clientInfo\":1}}}",
                     MCP_ERROR_INVALID_PARAMS, true);
        /* Gone from the revision: -32601, whatever the 2025 session would have answered. */
        static const char *const removed[] = { "ping", "initialize", "logging/setLevel", "resources/list" };
        for (size_t i = 0; i < sizeof(removed) / sizeof(removed[0]); i++) {
                char msg[256];
                snprintf(msg, sizeof(msg), "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"%s\",\"params\":{" MODERN_META "}}",
                         removed[i]);
                expect_error(s, msg, MCP_ERROR_METHOD_NOT_FOUND, true);
        }
        /* The 2025 session answers as before. */
        r = roundtrip(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}");
        assert_null(json_object_get(json_object_get(r, "result"), "resultType"));
        assert_null(json_object_get(json_object_get(r, "result"), "ttlMs"));
        json_decref(r);
        mcp_server_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_errors),
                cmocka_unit_test(test_version_negotiation),
                cmocka_unit_test(test_instructions),
                cmocka_unit_test(test_lifecycle_gates),
                cmocka_unit_test(test_tools_list),
                cmocka_unit_test(test_argument_validation),
                cmocka_unit_test(test_names_with_nul),
                cmocka_unit_test(test_timeout_clamping_and_args),
                cmocka_unit_test(test_cancel_action),
                cmocka_unit_test(test_hold_release),
                cmocka_unit_test(test_hold_refuse),
                cmocka_unit_test(test_result_encoding),
                cmocka_unit_test(test_modern_requests),
                cmocka_unit_test(test_modern_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
