/* mcp-internal.h: what the files of mcp/ share with each other (never included outside mcp/). */
#pragma once

#include <jansson.h>
#include <stdarg.h>
#include <string.h>

#include "mcp.h"

struct McpCall {
        json_t *id;          /* the request id, as sent */
        char *id_key;        /* its compact JSON */
        json_t *arguments;   /* owns the strings args points into */
        char *progress_token; /* params._meta.progressToken as compact JSON, or NULL */
        char *reply_oom;     /* mcp_call_reply_oom()'s answer, made at parse time */
        json_t *stamp;       /* 2026-07-28 request: merged into every result (resultType, _meta), or NULL */
        char traceparent[MCP_TRACEPARENT_LEN + 1]; /* validated (trace.c), or "" */
        char principal[MCP_PRINCIPAL_MAX + 1];     /* its server's, when it was made */
        uint64_t lb_body_read, lb_body_size; /* mcp_call_set_lb_body_read(); 0, 0: not said */
        bool task;           /* run as a task (mcp_call_is_task()) */
        uint64_t task_ttl_msec;
        McpExecArgs args;
};

/* trace.c: takes _meta.traceparent if it is a valid one (the call's first valid value wins). */
void mcp_call_trace_from_meta(McpCall *c, json_t *meta);

/* A request about a task (tasks.c). */
struct McpTaskRequest {
        json_t *id;
        json_t *stamp;       /* 2026-07-28: as McpCall's; NULL: 2025-11-25 */
        McpTaskOp op;
        char *task_id;
        char *id_key;        /* the request id's compact JSON */
        char *reply_oom;     /* mcp_task_reply_oom()'s answer, made at parse time */
};

/* The extension of 2026-07-28 that tasks are (SEP-2663), as named in capabilities. */
#define MCP_TASKS_EXTENSION "io.modelcontextprotocol/tasks"
/* The _meta key that ties a 2025-11-25 result to its task (tasks.mdx). */
#define MCP_META_RELATED_TASK "io.modelcontextprotocol/related-task"

/* Parses a tasks/ request (method already known to be one): a REPLY with -32602 for bad params, else
 * a TASK action. stamp: NULL for the 2025 era. */
int mcp_task_request_parse(McpTaskOp op, json_t *id, json_t *params, json_t *stamp, McpAction *ret);

/* The tool registry (tools.c), as the server reads it: a table of definitions, looked up by name. */
typedef struct McpToolDef McpToolDef;

/* The definition of the tool called name, or NULL if there is none. */
const McpToolDef *mcp_tool_find(const char *name);

/* The tool catalogue: the tools/list result for these limits. New reference. */
json_t *mcp_tools_list_new(const McpLimits *limits);

/* Validates the arguments of a call of tool against limits. Returns 0 and fills *ret (whose
 * allocations mcp_exec_args_done() frees); -EINVAL with *ret_problem a malloc'd message naming the
 * argument and the limit (a tool error for the caller); or -ENOMEM. */
int mcp_tool_args_validate(const McpLimits *limits, const McpToolDef *tool, json_t *arguments, McpExecArgs *ret,
                char **ret_problem);
void mcp_exec_args_done(McpExecArgs *a);

/* problem.c: a message, formatted (NULL on ENOMEM); the same into *ret for a refusal, returning
 * -EINVAL (or -ENOMEM); what a JSON value is, for messages ("an integer"). */
char *mcp_problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *mcp_problemv(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
int mcp_refuse(char **ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *mcp_json_type_name(const json_t *v);

/* server.c: a JSON-RPC error reply, the message made valid UTF-8 (it may quote the client's bytes);
 * id as given, or no "id" member for NULL. NULL on ENOMEM. */
char *mcp_reply_error(json_t *id, int code, const char *message);

/* A caller's value as a message may show it (nothing a caller sent is echoed back unbounded): its
 * first MCP_QUOTE_MAX_BYTES bytes, cut at a character, control characters, invalid UTF-8, '"' and
 * '\\' as \xNN, and "… (N bytes)" when it was cut. Returns q->text. MCP_QUOTE(s) for a C string,
 * valid until the end of the enclosing block. */
#define MCP_QUOTE_MAX_BYTES 64
typedef struct McpQuote {
        char text[MCP_QUOTE_MAX_BYTES * 4 + 48]; /* every byte as \xNN, one C1 pair over, the tail */
} McpQuote;
const char *mcp_quote(McpQuote *q, const char *s, size_t n);
/* The escaping of mcp_quote, of at most max_in bytes of s, with the characters of also escaped too;
 * out holds max_in * 4 + 5 bytes (or n * 4 + 1). Returns the bytes written; *ret_used, those read. */
size_t mcp_escape(char *out, const char *s, size_t n, size_t max_in, const char *also, size_t *ret_used);
#define MCP_QUOTE(s) mcp_quote(&(McpQuote) {}, (s), strlen(s))

/* reply.c: a JSON-RPC result reply (takes result; NULL on ENOMEM), and a tool error (isError: true).
 * stamp: NULL for a 2025-era request; for a 2026-07-28 one the members every result carries
 * (resultType, _meta with serverInfo), merged into the result. */
char *mcp_reply_result(json_t *id, json_t *result, json_t *stamp);
char *mcp_reply_tool_error(json_t *id, const char *message, json_t *stamp);

/* files.c: the result's files (structuredContent.files and the content items). */
int mcp_files_output_schema_add(json_t *schema);
int mcp_files_result_add(const ExecResult *r, json_t *sc, json_t *content, char nonce[static 17]);
/* Puts the returned files' bytes in the dumped reply in place of their placeholders; takes json. */
char *mcp_files_splice(char *json, const ExecResult *r, const char *nonce);

/* A JSON string to compare as a C string: NULL if v is not a string or has a NUL inside, which a
 * C comparison would cut short ("exec\u0000x" is not the tool "exec"; found by fuzz-mcp-server). */
static inline const char *mcp_json_name(json_t *v) {
        return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v) ? json_string_value(v)
                                                                                        : NULL;
}

/* Serializes a JSON-RPC message compactly. JSON_COMPACT never emits a raw newline (control
 * characters are escaped), so the result is one NDJSON line. malloc'd or NULL. */
static inline char *mcp_json_dump(json_t *msg) {
        return json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
}
