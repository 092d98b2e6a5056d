/* mcp-internal.h: what the files of mcp/ share with each other (never included outside mcp/). */
#pragma once

#include <jansson.h>

#include "mcp.h"

struct McpCall {
        json_t *id;          /* the request id, as sent */
        char *id_key;        /* its compact JSON */
        json_t *arguments;   /* owns the strings args points into */
        char *progress_token; /* params._meta.progressToken as compact JSON, or NULL */
        McpExecArgs args;
};

/* The tool catalogue: the tools/list result for these limits. New reference. */
json_t *mcp_tools_list_new(const McpLimits *limits);

/* Looks a tool up by name: true if it exists. */
bool mcp_tool_exists(const char *name);

/* Validates arguments of tool name against limits, filling *ret. Returns NULL on success, else
 * a malloc'd message naming the field and the limit (a tool error for the caller). */
char *mcp_tool_args_validate(const McpLimits *limits, const char *name, json_t *arguments,
                McpExecArgs *ret);

/* tools-python.c: execute_python, validate_script, check_environment (the parity tools of issue 8),
 * and the `python` argument every running tool takes. */
json_t *mcp_tools_python_new(const McpLimits *limits); /* array of tool objects; new reference */
McpTool mcp_tool_python_lookup(const char *name);      /* MCP_TOOL_EXEC if not one of them */
char *mcp_tool_python_args_validate(const McpLimits *limits, McpTool tool, json_t *arguments,
                McpExecArgs *ret);
/* NULL if v names a configured interpreter (*ret points into v), else a tool error message. */
json_t *mcp_exec_output_schema_new(void); /* exec's outputSchema (execute_python extends it) */
char *mcp_python_arg_validate(const McpLimits *limits, json_t *v, const char **ret);

/* files.c: the `files` argument (schema, validation into a->files; NULL or a tool error message),
 * freeing it, and the result's files (structuredContent.files and the content items). */
json_t *mcp_files_input_schema(const McpLimits *limits);
char *mcp_files_arg_validate(const McpLimits *limits, json_t *v, McpExecArgs *a);
void mcp_files_args_free(McpExecArgs *a);
int mcp_files_output_schema_add(json_t *schema);
int mcp_files_result_add(const McpExecResult *r, json_t *sc, json_t *content, char nonce[static 17]);
/* Puts the returned files' bytes in the dumped reply in place of their placeholders; takes json. */
char *mcp_files_splice(char *json, const McpExecResult *r, const char *nonce);

/* A JSON string to compare as a C string: NULL if v is not a string or has a NUL inside, which a
 * C comparison would cut short ("exec\u0000x" is not the tool "exec"; found by fuzz-mcp-server). */
static inline const char *mcp_json_name(json_t *v) {
        return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v) ? json_string_value(v)
                                                                                        : NULL;
}

/* Serializes a JSON-RPC message compactly (never a raw newline). malloc'd or NULL. */
char *mcp_json_dump(json_t *msg);
