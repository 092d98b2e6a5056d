/* test-mcp-tools-args.c: one mistake, one message: every bad value of every shared argument (code,
 * stdin, timeout, python, dependencies, files) goes to every registered tool that takes it, through
 * mcp_server_handle(), and the tool errors must be the same but for the argument's name. Driven by
 * the registry, so a new tool, or a tool taking one more argument, is covered without a change here. */
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
#include "test-mcp-tools.h"
#include "tools-internal.h"

/* Each kind of argument: its name in messages, and a value it accepts (what a call carries besides
 * the argument under test). */
static const struct {
        const char *name, *valid;
} kinds[_MCP_ARG_KIND_MAX] = {
        [MCP_ARG_CODE] = { "code", "\"print(1)\"" },
        [MCP_ARG_STDIN] = { "stdin", "\"in\"" },
        [MCP_ARG_TIMEOUT] = { "timeout", "5" },
        [MCP_ARG_PYTHON] = { "python", "\"pypy3\"" },
        [MCP_ARG_DEPENDENCIES] = { "dependencies", "[\"a==1\"]" },
        [MCP_ARG_SESSION] = { "session", "\"0123456789abcdef0123456789abcdef\"" },
        [MCP_ARG_IDLE_TIMEOUT] = { "idle_timeout", "60" },
        [MCP_ARG_FILES] = { "files", "[{\"name\":\"a.txt\",\"content\":\"x\"}]" },
};

/* What the leaves refuse, by kind, as JSON text; NULL: the argument left out. */
typedef struct Bad {
        McpArgKind kind;
        const char *what;
        const char *json;
} Bad;

static char over_code[256], over_code_nul[256], over_stdin[32], long_requirement[300], many_requirements[400],
        many_files[2048], over_input[128];

static void bad_values_init(void) {
        snprintf(over_code, sizeof(over_code), "\"%0201d\"", 0);
        snprintf(over_code_nul, sizeof(over_code_nul), "\"%0201d\\u0000\"", 0);
        snprintf(over_stdin, sizeof(over_stdin), "\"%011d\"", 0);
        snprintf(long_requirement, sizeof(long_requirement), "[\"a%0256d\"]", 0);
        size_t o = 0;
        o += (size_t) snprintf(many_requirements + o, sizeof(many_requirements) - o, "[");
        for (int i = 0; i < 65; i++)
                o += (size_t) snprintf(many_requirements + o, sizeof(many_requirements) - o, "%s\"a\"", i ? "," : "");
        snprintf(many_requirements + o, sizeof(many_requirements) - o, "]");
        o = 0;
        o += (size_t) snprintf(many_files + o, sizeof(many_files) - o, "[");
        for (int i = 0; i < MCP_FILES_MAX + 1; i++)
                o += (size_t) snprintf(many_files + o, sizeof(many_files) - o, "%s{\"name\":\"f%d\",\"content\":\"\"}",
                                       i ? "," : "", i);
        snprintf(many_files + o, sizeof(many_files) - o, "]");
        snprintf(over_input, sizeof(over_input), "[{\"name\":\"a\",\"content\":\"%049d\"}]", 0);
}

static const Bad bads[] = {
        { MCP_ARG_CODE, "missing", NULL },
        { MCP_ARG_CODE, "null", "null" },
        { MCP_ARG_CODE, "wrong type (integer)", "5" },
        { MCP_ARG_CODE, "wrong type (array)", "[]" },
        { MCP_ARG_CODE, "wrong type (object)", "{}" },
        { MCP_ARG_CODE, "wrong type (boolean)", "true" },
        { MCP_ARG_CODE, "empty", "\"\"" },
        { MCP_ARG_CODE, "only whitespace", "\" \\n\\t\\r\"" },
        { MCP_ARG_CODE, "NUL byte", "\"print(1)\\u0000print(2)\"" },
        { MCP_ARG_CODE, "NUL byte at the end", "\"print(1)\\u0000\"" },
        { MCP_ARG_CODE, "too large", over_code },
        { MCP_ARG_CODE, "too large, with a NUL byte", over_code_nul },
        { MCP_ARG_STDIN, "wrong type (integer)", "7" },
        { MCP_ARG_STDIN, "wrong type (array)", "[\"x\"]" },
        { MCP_ARG_STDIN, "too large", over_stdin },
        { MCP_ARG_TIMEOUT, "wrong type (string)", "\"5\"" },
        { MCP_ARG_TIMEOUT, "fractional", "1.5" },
        { MCP_ARG_TIMEOUT, "wrong type (boolean)", "false" },
        { MCP_ARG_TIMEOUT, "wrong type (array)", "[5]" },
        { MCP_ARG_PYTHON, "wrong type (integer)", "7" },
        { MCP_ARG_PYTHON, "unknown interpreter", "\"jython\"" },
        { MCP_ARG_PYTHON, "empty", "\"\"" },
        { MCP_ARG_PYTHON, "NUL byte after a configured name", "\"python3\\u0000\"" },
        { MCP_ARG_DEPENDENCIES, "wrong type (string)", "\"numpy\"" },
        { MCP_ARG_SESSION, "wrong type (integer)", "7" },
        { MCP_ARG_SESSION, "empty", "\"\"" },
        { MCP_ARG_IDLE_TIMEOUT, "zero", "0" },
        { MCP_ARG_IDLE_TIMEOUT, "wrong type (string)", "\"60\"" },
        { MCP_ARG_DEPENDENCIES, "too many", many_requirements },
        { MCP_ARG_DEPENDENCIES, "entry of the wrong type", "[\"a\",3]" },
        { MCP_ARG_DEPENDENCIES, "empty entry", "[\" \"]" },
        { MCP_ARG_DEPENDENCIES, "entry too long", long_requirement },
        { MCP_ARG_DEPENDENCIES, "entry of two lines", "[\"a\\nb\"]" },
        { MCP_ARG_DEPENDENCIES, "entry with a NUL byte", "[\"a\\u0000b\"]" },
        { MCP_ARG_FILES, "wrong type (object)", "{}" },
        { MCP_ARG_FILES, "too many", many_files },
        { MCP_ARG_FILES, "entry of the wrong type", "[1]" },
        { MCP_ARG_FILES, "unknown property of an entry", "[{\"name\":\"a\",\"content\":\"\",\"mode\":1}]" },
        { MCP_ARG_FILES, "no name", "[{\"content\":\"\"}]" },
        { MCP_ARG_FILES, "no content", "[{\"name\":\"a\"}]" },
        { MCP_ARG_FILES, "bad name: empty", "[{\"name\":\"\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "bad name: absolute", "[{\"name\":\"/etc/x\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "bad name: ..", "[{\"name\":\"a/../../b\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "bad name: empty segment", "[{\"name\":\"a//b\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "bad name: NUL byte", "[{\"name\":\"a\\u0000b\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "bad name: control character", "[{\"name\":\"a\\u0001\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "bad name: C1 control", "[{\"name\":\"a\\u0085\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "bad name: reserved", "[{\"name\":\"main.py\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "bad name: too deep", "[{\"name\":\"1/2/3/4/5/6/7/8/9\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "bad encoding", "[{\"name\":\"a\",\"content\":\"\",\"encoding\":\"latin-1\"}]" },
        { MCP_ARG_FILES, "invalid base64", "[{\"name\":\"a\",\"content\":\"ab!d\",\"encoding\":\"base64\"}]" },
        { MCP_ARG_FILES, "same name twice", "[{\"name\":\"a\",\"content\":\"\"},{\"name\":\"a\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "a file where a directory is needed",
          "[{\"name\":\"a\",\"content\":\"\"},{\"name\":\"a/b\",\"content\":\"\"}]" },
        { MCP_ARG_FILES, "too large in total", over_input },
};

/* {"<arg>": <value>, …}: every argument of t at a valid value, but skip (left out) or bad. */
static void arguments(const McpToolDef *t, const McpToolArg *bad_arg, const char *bad_json, char *out, size_t size) {
        size_t o = (size_t) snprintf(out, size, "{");
        bool first = true;
        for (size_t i = 0; i < t->n_args; i++) {
                const McpToolArg *a = &t->args[i];
                const char *v = a == bad_arg ? bad_json : kinds[a->kind].valid;
                if (!v)
                        continue;
                o += (size_t) snprintf(out + o, size - o, "%s\"%s\":%s", first ? "" : ",", a->name, v);
                first = false;
        }
        snprintf(out + o, size - o, "}");
        assert_true(o + 1 < size);
}

/* The tool error's text (malloc'd) of a tools/call of t with these arguments, or NULL if the call
 * was accepted. */
static char *call(McpServer *s, const McpToolDef *t, const char *args) {
        McpAction a;
        test_tools_call(s, t->name, args, &a);
        char *text = NULL;
        if (a.kind == MCP_ACTION_CALL)
                assert_non_null(a.call);
        else
                text = test_tool_error_text(&a);
        mcp_action_done(&a);
        return text;
}

/* The message with each argument's name ('script', 'timeout_s[…') replaced by its kind's. */
static char *normalize(const McpToolDef *t, const char *text) {
        char *out = strdup(text);
        assert_non_null(out);
        for (size_t i = 0; i < t->n_args; i++) {
                char from[64], to[64];
                snprintf(from, sizeof(from), "'%s", t->args[i].name);
                snprintf(to, sizeof(to), "'<%s>", kinds[t->args[i].kind].name);
                for (char *p; (p = strstr(out, from));) {
                        size_t n = strlen(out) - strlen(from) + strlen(to) + 1;
                        char *next = malloc(n);
                        assert_non_null(next);
                        snprintf(next, n, "%.*s%s%s", (int) (p - out), out, to, p + strlen(from));
                        free(out);
                        out = next;
                }
        }
        return out;
}

static const McpToolArg *tool_arg_of_kind(const McpToolDef *t, McpArgKind k) {
        for (size_t i = 0; i < t->n_args; i++)
                if (t->args[i].kind == k)
                        return &t->args[i];
        return NULL;
}

/* Sends bad (one bad value, or two at once) to every tool taking its kinds; all must refuse it with
 * one message. Returns how many tools took it. */
static size_t compare(McpServer *s, const Bad *bad, const Bad *bad2) {
        size_t n_tools, n = 0;
        const McpToolDef *const *tools = mcp_tools_all(&n_tools);
        char *first = NULL;
        const char *first_tool = NULL;
        for (size_t i = 0; i < n_tools; i++) {
                const McpToolArg *arg = tool_arg_of_kind(tools[i], bad->kind);
                const McpToolArg *arg2 = bad2 ? tool_arg_of_kind(tools[i], bad2->kind) : NULL;
                if (!arg || (bad2 && !arg2))
                        continue;
                char args[8192];
                arguments(tools[i], arg, bad->json, args, sizeof(args));
                if (bad2) {
                        /* The second bad value replaces that argument's valid one. */
                        json_t *j = json_loads(args, JSON_ALLOW_NUL, NULL);
                        assert_non_null(j);
                        if (bad2->json)
                                assert_int_equal(json_object_set_new(j, arg2->name,
                                                                     json_loads(bad2->json, JSON_DECODE_ANY | JSON_ALLOW_NUL,
                                                                                NULL)), 0);
                        else
                                json_object_del(j, arg2->name);
                        char *dumped = json_dumps(j, JSON_COMPACT);
                        snprintf(args, sizeof(args), "%s", dumped);
                        free(dumped);
                        json_decref(j);
                }
                char *text = call(s, tools[i], args);
                if (!text)
                        fail_msg("%s, %s %s%s%s: accepted by %s", bad->what, kinds[bad->kind].name,
                                 bad2 ? "and " : "", bad2 ? kinds[bad2->kind].name : "", bad2 ? bad2->what : "",
                                 tools[i]->name);
                char *norm = normalize(tools[i], text);
                if (!bad2)
                        print_message("%-18s %-14s %s: %s\n", tools[i]->name, kinds[bad->kind].name, bad->what, text);
                free(text);
                n++;
                if (!first) {
                        first = norm;
                        first_tool = tools[i]->name;
                        continue;
                }
                if (strcmp(first, norm) != 0)
                        fail_msg("%s %s%s%s: %s says\n  %s\nbut %s says\n  %s", kinds[bad->kind].name, bad->what,
                                 bad2 ? " with " : "", bad2 ? bad2->what : "", first_tool, first, tools[i]->name, norm);
                free(norm);
        }
        free(first);
        return n;
}

static void test_one_mistake_one_message(void **state) {
        bad_values_init();
        McpServer *s = test_server_new();
        size_t tools_of_kind[_MCP_ARG_KIND_MAX] = {};
        for (size_t i = 0; i < ELEMENTSOF(bads); i++)
                tools_of_kind[bads[i].kind] = compare(s, &bads[i], NULL);
        mcp_server_free(s);
        /* Every kind some tool takes is checked by the list above (a kind nobody takes has 0). */
        size_t n_tools;
        const McpToolDef *const *tools = mcp_tools_all(&n_tools);
        for (size_t i = 0; i < n_tools; i++)
                for (size_t k = 0; k < tools[i]->n_args; k++)
                        if (tools_of_kind[tools[i]->args[k].kind] == 0)
                                fail_msg("%s's %s: no bad value of its kind (%s) in the list", tools[i]->name,
                                         tools[i]->args[k].name, kinds[tools[i]->args[k].kind].name);
}

/* Two mistakes: every tool reports the same one first (the walk's order is the registry's, not each
 * tool's own). */
static void test_two_mistakes_same_first(void **state) {
        bad_values_init();
        McpServer *s = test_server_new();
        for (size_t i = 0; i < ELEMENTSOF(bads); i++)
                for (size_t j = 0; j < ELEMENTSOF(bads); j++)
                        if (bads[i].kind < bads[j].kind)
                                compare(s, &bads[i], &bads[j]);
        mcp_server_free(s);
}

/* Invalid UTF-8 never reaches a leaf: jansson refuses the message (-32700), for every argument of
 * every tool alike. */
static void test_invalid_utf8_is_a_parse_error(void **state) {
        size_t n_tools;
        const McpToolDef *const *tools = mcp_tools_all(&n_tools);
        McpServer *s = test_server_new();
        for (size_t i = 0; i < n_tools; i++)
                for (size_t k = 0; k < tools[i]->n_args; k++) {
                        char msg[512];
                        snprintf(msg, sizeof(msg), "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
                                 "{\"name\":\"%s\",\"arguments\":{\"%s\":\"a\xff\xfe\"}}}", tools[i]->name,
                                 tools[i]->args[k].name);
                        McpAction a;
                        assert_int_equal(mcp_server_handle(s, msg, strlen(msg), &a), 0);
                        assert_int_equal(a.kind, MCP_ACTION_REPLY);
                        json_t *j = json_loads(a.reply, 0, NULL);
                        assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "error"), "code")),
                                         MCP_ERROR_PARSE);
                        json_decref(j);
                        mcp_action_done(&a);
                }
        mcp_server_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_one_mistake_one_message),
                cmocka_unit_test(test_two_mistakes_same_first),
                cmocka_unit_test(test_invalid_utf8_is_a_parse_error),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
