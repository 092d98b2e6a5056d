/* tools-session.c: the Python session tools' definitions (issue 18): session_open and
 * session_close; exec and execute_python take the handle as their `session` argument. */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "cleanup.h"
#include "tools-internal.h"

static char *open_description(const McpLimits *l) {
        char *d = NULL;
        if (asprintf(&d, "Open a persistent Python session: one sandbox (the same isolation and limits as a run) "
                         "whose interpreter keeps running between calls. Pass the returned `session` handle to "
                         "exec or execute_python: variables, imports and files in /tmp survive from one call to "
                         "the next; outputs/ is emptied before each call. A call past its timeout is interrupted "
                         "(KeyboardInterrupt): if it stops within a short grace the session lives on "
                         "(timed_out=true), otherwise the session is killed (session_alive=false). One call at a "
                         "time per session. A session idle for idle_timeout_s (default and maximum: the server's "
                         "MCP_EXEC_PY_SESSION_IDLE_S) ends. A session may start from a ready sandbox "
                         "(warm=true: faster, with the server's preloaded modules imported). `python` chooses "
                         "the session's interpreter (%s; default: exec's); `dependencies` are installed once, "
                         "as for execute_python, from %s, and importable in every call of the session (a call "
                         "cannot add any); a session with either starts cold. Close it with session_close.",
                      mcp_tools_pythons(l), l->sources ? l->sources : "no source (none is configured)") < 0)
                return NULL;
        return d;
}

static char *close_description(const McpLimits *l) {
        char *d = NULL;
        if (asprintf(&d, "Close a Python session opened with session_open: its interpreter, sandbox and files are "
                         "gone. The handle is no longer valid.") < 0)
                return NULL;
        return d;
}

/* python, python_version, dependencies and environment are there when session_open named an
 * interpreter or had dependencies, in execute_python's shape. */
static json_t *open_output_schema(void) {
        return json_pack("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}, "
                         "s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:{s:s}, s:s}, s:{s:[s,s], s:s}}, "
                         "s:[s,s,s,s,s,s]}",
                         "type", "object", "properties",
                         "session", "type", "string", "description", "the handle to pass as `session`",
                         "idle_timeout_s", "type", "integer", "description", "idle seconds after which it ends",
                         "expires_in_s", "type", "integer", "description", "seconds until its maximum lifetime",
                         "limits", "type", "string", "description", "cgroup or rlimit: what enforces its limits",
                         "warm", "type", "boolean", "description",
                         "true when a ready sandbox served the open (its interpreter already started)",
                         "memory_at_start_bytes", "type", "integer", "description",
                         "memory the session's interpreter held when it became ready (a ready sandbox's "
                         "preloaded modules included)",
                         "python", "type", "string", "description", "the interpreter the session runs",
                         "python_version", "type", "string", "description", "its version",
                         "dependencies", "type", "array", "items", "type", "string", "description",
                         "the requirements installed, normalized",
                         "environment", "type", "object", "null", "description",
                         "the environment mounted at /venv: key, reused, install_ms, mount; null without dependencies",
                         "required", "session", "idle_timeout_s", "expires_in_s", "limits", "warm",
                         "memory_at_start_bytes");
}

static json_t *close_output_schema(void) {
        return json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "closed", "type", "boolean",
                         "required", "closed");
}

static const McpToolArg open_args[] = {
        { "python", MCP_ARG_PYTHON, false, "Interpreter, one of: " },
        { "dependencies", MCP_ARG_DEPENDENCIES, false,
          "PEP 508 requirements installed once for the whole session, as execute_python's" },
        { "idle_timeout_s", MCP_ARG_IDLE_TIMEOUT, false,
          "Seconds without a call after which the session ends (at most the server's MCP_EXEC_PY_SESSION_IDLE_S)" },
};

const McpToolDef mcp_tool_session_open = {
        .name = "session_open",
        .tool = MCP_TOOL_SESSION_OPEN,
        .title = "Open a persistent Python session",
        .description_new = open_description,
        .output_schema_new = open_output_schema,
        .args = open_args,
        .n_args = ELEMENTSOF(open_args),
};

static const McpToolArg close_args[] = {
        { "session", MCP_ARG_SESSION, true, "The handle session_open returned" },
};

const McpToolDef mcp_tool_session_close = {
        .name = "session_close",
        .tool = MCP_TOOL_SESSION_CLOSE,
        .title = "Close a Python session",
        .description_new = close_description,
        .output_schema_new = close_output_schema,
        .args = close_args,
        .n_args = ELEMENTSOF(close_args),
        .idempotent = true,
};
