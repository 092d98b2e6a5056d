/* tools-internal.h: the tool registry's types, the definitions the tool modules export and the shared
 * argument leaves they use (only tools*.c and the unit tests of the registry include it; the server
 * reads the registry through mcp-internal.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "mcp-internal.h"

/* What an argument is, which decides the one leaf (tools-args.c) that checks it and writes its
 * schema. Also the order in which a call's arguments are checked, so that a call with two mistakes
 * gets the same first message from every tool; files last, as it allocates. */
typedef enum McpArgKind {
        MCP_ARG_CODE,
        MCP_ARG_STDIN,
        MCP_ARG_TIMEOUT,
        MCP_ARG_PYTHON,
        MCP_ARG_DEPENDENCIES,
        MCP_ARG_SESSION,
        MCP_ARG_IDLE_TIMEOUT,
        MCP_ARG_FILES,
        _MCP_ARG_KIND_MAX,
} McpArgKind;

/* One argument of a tool, in its schema's order. */
typedef struct McpToolArg {
        const char *name; /* as the tool's schema calls it: exec's "code" is execute_python's "script" */
        McpArgKind kind;
        bool required;
        /* The schema's description up to what the leaf adds from the limits (e.g. "at most N bytes)");
         * NULL where the leaf writes the whole schema (dependencies, files). */
        const char *description;
} McpToolArg;

/* One tool: everything tools/list says about it and what tools/call accepts. */
struct McpToolDef {
        const char *name;
        McpTool tool; /* what the daemon runs (mcp_call_args()->tool) */
        const char *title;
        char *(*description_new)(const McpLimits *l); /* malloc'd, or NULL on ENOMEM */
        json_t *(*output_schema_new)(void);           /* new reference, or NULL */
        const McpToolArg *args;
        size_t n_args;
        bool read_only;  /* annotations.readOnlyHint */
        bool idempotent; /* annotations.idempotentHint */
};

/* The definitions (tools-exec.c, tools-python.c). */
extern const McpToolDef mcp_tool_exec;
extern const McpToolDef mcp_tool_execute_python;
extern const McpToolDef mcp_tool_validate_script;
extern const McpToolDef mcp_tool_check_environment;
extern const McpToolDef mcp_tool_session_open; /* tools-session.c */
extern const McpToolDef mcp_tool_session_close;

/* Every registered tool, in tools/list order. */
const McpToolDef *const *mcp_tools_all(size_t *ret_n);

/* tools-args.c, the shared leaves. Checks the value v of arg (NULL if absent) and fills its part of
 * *a. Returns 0; -EINVAL with *ret_problem a malloc'd tool error message naming the argument as arg
 * names it; or -ENOMEM. */
int mcp_tool_arg_check(const McpLimits *l, const McpToolArg *arg, json_t *v, McpExecArgs *a, char **ret_problem);
/* The property schema of arg for these limits. New reference, or NULL. */
json_t *mcp_tool_arg_schema_new(const McpLimits *l, const McpToolArg *arg);
/* The configured interpreters as descriptions name them ("python3" when none is configured). */
const char *mcp_tools_pythons(const McpLimits *l);

/* tools-exec.c: exec's output schema, which execute_python's extends. New reference, or NULL. */
json_t *mcp_exec_output_schema_new(void);
