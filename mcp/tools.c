/* tools.c: the tool registry: the table of tool definitions the server reads, the catalogue
 * (tools/list) built from it and the argument walk every tools/call goes through. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "str-util.h"
#include "tools-internal.h"

/* In tools/list order. A tool is added here and nowhere else in mcp/. */
static const McpToolDef *const tools[] = {
        &mcp_tool_exec,
        &mcp_tool_execute_python,
        &mcp_tool_validate_script,
        &mcp_tool_check_environment,
        &mcp_tool_session_open,
        &mcp_tool_session_close,
};

const McpToolDef *const *mcp_tools_all(size_t *ret_n) {
        *ret_n = ELEMENTSOF(tools);
        return tools;
}

const McpToolDef *mcp_tool_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                if (strcmp(name, tools[i]->name) == 0)
                        return tools[i];
        return NULL;
}

static const McpToolArg *tool_arg_find(const McpToolDef *t, const char *name) {
        for (size_t i = 0; i < t->n_args; i++)
                if (strcmp(name, t->args[i].name) == 0)
                        return &t->args[i];
        return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The catalogue. */

static json_t *input_schema_new(const McpLimits *l, const McpToolDef *t) {
        _cleanup_(json_decrefp) json_t *props = json_object();
        _cleanup_(json_decrefp) json_t *required = json_array();
        if (!props || !required)
                return NULL;
        for (size_t i = 0; i < t->n_args; i++) {
                if (json_object_set_new(props, t->args[i].name, mcp_tool_arg_schema_new(l, &t->args[i])) < 0)
                        return NULL;
                if (t->args[i].required && json_array_append_new(required, json_string(t->args[i].name)) < 0)
                        return NULL;
        }
        _cleanup_(json_decrefp) json_t *schema = json_pack("{s:s, s:O}", "type", "object", "properties", props);
        if (!schema || (json_array_size(required) > 0 && json_object_set(schema, "required", required) < 0) ||
            json_object_set_new(schema, "additionalProperties", json_false()) < 0)
                return NULL;
        return TAKE_PTR(schema);
}

/* In place and recursively, a nullable value's "type": [T, "null"] becomes "anyOf": [{"type": T,
 * and T's keywords}, {"type": "null"}], its description left outside. The same contract in JSON
 * Schema, but one type per schema: clients that map tool schemas onto a single-type dialect (the
 * OpenAPI subset of Gemini's function declarations) cannot take a type array, and the Inspector's
 * --strict check flags it. The definitions keep writing the short form. */
static int schema_one_type(json_t *s) {
        const char *key;
        json_t *v;
        size_t i;
        if (json_is_array(s)) {
                json_array_foreach(s, i, v)
                        if (schema_one_type(v) < 0)
                                return -ENOMEM;
                return 0;
        }
        if (!json_is_object(s))
                return 0;
        json_object_foreach(s, key, v)
                if (schema_one_type(v) < 0)
                        return -ENOMEM;
        json_t *type = json_object_get(s, "type");
        if (!json_is_array(type) || json_array_size(type) != 2 || !json_is_string(json_array_get(type, 0)) ||
            strcmp(json_string_value(json_array_get(type, 1)) ?: "", "null") != 0)
                return 0;
        _cleanup_(json_decrefp) json_t *branch = json_object(), *rest = json_object();
        if (!branch || !rest)
                return -ENOMEM;
        json_object_foreach(s, key, v)
                if (json_object_set(strcmp(key, "description") == 0 ? rest : branch, key,
                                    strcmp(key, "type") == 0 ? json_array_get(type, 0) : v) < 0)
                        return -ENOMEM;
        if (json_object_set_new(rest, "anyOf", json_pack("[O, {s:s}]", branch, "type", "null")) < 0 ||
            json_object_update(s, rest) < 0)
                return -ENOMEM;
        json_object_foreach(branch, key, v)
                if (strcmp(key, "description") != 0)
                        (void) json_object_del(s, key);
        return 0;
}

static json_t *output_schema_new(const McpToolDef *t) {
        _cleanup_(json_decrefp) json_t *s = t->output_schema_new();
        if (!s || schema_one_type(s) < 0)
                return NULL;
        return TAKE_PTR(s);
}

static json_t *tool_new(const McpLimits *l, const McpToolDef *t) {
        _cleanup_free_ char *description = t->description_new(l);
        if (!description)
                return NULL;
        /* execution.taskSupport (2025-11-25 tasks): every call may run as a task (README "Tasks"). */
        return json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}, s:{s:s}}",
                         "name", t->name,
                         "title", t->title,
                         "description", description,
                         "inputSchema", input_schema_new(l, t),
                         "outputSchema", output_schema_new(t),
                         "annotations", "readOnlyHint", t->read_only, "destructiveHint", 0,
                         "idempotentHint", t->idempotent, "openWorldHint", 0,
                         "execution", "taskSupport", "optional");
}

json_t *mcp_tools_list_new(const McpLimits *limits) {
        _cleanup_(json_decrefp) json_t *list = json_array();
        if (!list)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                if (json_array_append_new(list, tool_new(limits, tools[i])) < 0)
                        return NULL;
        return json_pack("{s:O}", "tools", list);
}

/* ---------------------------------------------------------------------------------------------
 * The argument walk. */

/* "code, timeout_s, stdin, python and files" */
static char *arg_names_new(const McpToolDef *t) {
        Buf b = {};
        for (size_t i = 0; i < t->n_args; i++) {
                const char *sep = i == 0 ? "" : i + 1 == t->n_args ? " and " : ", ";
                if (buf_append(&b, sep, strlen(sep)) < 0 || buf_append(&b, t->args[i].name, strlen(t->args[i].name)) < 0) {
                        buf_done(&b);
                        return NULL;
                }
        }
        return b.data;
}

static int unknown_property(const McpToolDef *t, const char *key, char **ret_problem) {
        if (t->n_args == 0)
                return mcp_refuse(ret_problem, "invalid argument '%s': unknown property; %s takes no arguments", MCP_QUOTE(key),
                                  t->name);
        _cleanup_free_ char *names = arg_names_new(t);
        if (!names)
                return -ENOMEM;
        return mcp_refuse(ret_problem, "invalid argument '%s': unknown property; %s accepts only %s", MCP_QUOTE(key), t->name,
                          names);
}

int mcp_tool_args_validate(const McpLimits *l, const McpToolDef *t, json_t *arguments, McpExecArgs *ret,
                           char **ret_problem) {
        const char *key;
        json_t *v;

        json_object_foreach(arguments, key, v)
                if (!tool_arg_find(t, key))
                        return unknown_property(t, key, ret_problem);

        _cleanup_(mcp_exec_args_done) McpExecArgs a = { .tool = t->tool, .timeout_s = l->default_timeout_s };
        /* By kind, not in the tool's order: a call with two mistakes gets the same first message from
         * every tool, and files, which allocate, come last. */
        for (McpArgKind k = 0; k < _MCP_ARG_KIND_MAX; k++)
                for (size_t i = 0; i < t->n_args; i++) {
                        if (t->args[i].kind != k)
                                continue;
                        int r = mcp_tool_arg_check(l, &t->args[i], json_object_get(arguments, t->args[i].name), &a,
                                                   ret_problem);
                        if (r < 0)
                                return r;
                }
        *ret = a;
        a = (McpExecArgs) {};
        return 0;
}
