/* tools-python.c: the definitions of the tools of mcp-python-exec-sandbox's interface
 * (execute_python, validate_script, check_environment): descriptions from the configuration in
 * force, arguments, output schemas. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "tools-internal.h"

static char *execute_description(const McpLimits *l) {
        char *d = NULL;
        if (asprintf(&d,
                     "Run a Python script in a fresh, locked-down sandbox with no network access, after installing "
                     "its dependencies, and return its stdout, stderr, exit code and resource use (the same fields "
                     "as exec, plus the interpreter and the environment used). Its arguments keep the names of "
                     "mcp-python-exec-sandbox, whose clients call it unchanged (`script`, `timeout_seconds`; exec "
                     "takes `code`, `timeout_s`).\n"
                     "Dependencies: declare them in a PEP 723 block at the top of the script\n"
                     "# /// script\n# requires-python = \">=3.9\"\n# dependencies = [\"somepkg==1.2\"]\n# ///\n"
                     "or pass them in `dependencies` (PEP 508 strings; for the same package the parameter wins). "
                     "They are installed by the server outside the sandbox from %s, once per set of requirements "
                     "(the environment is cached and mounted read-only into each run); always pin versions. "
                     "Interpreters: %s (the `python` argument, default the first). "
                     "timeout_seconds: wall-clock limit of the run itself (default %" PRIu32 ", at most %" PRIu32
                     ", larger values are clamped; longer work belongs in a task, where the client supports "
                     "MCP tasks, or in several calls of one session_open session); installation has its own "
                     "limit. Importable without "
                     "dependencies: the standard library%s%s.\n"
                     "`files` and outputs/ work as in exec: input files before the run, files written to "
                     "outputs/ and matplotlib figures (plt.show(), figures left open) come back as image or "
                     "resource content.\n"
                     "A non-zero exit_code, timed_out=true or truncated=true is a normal result; malformed "
                     "metadata, an invalid requirement or a failed installation is a tool error that says why.",
                     l->sources ? l->sources : "no source (the operator has configured none, so only scripts "
                                               "without dependencies can run)",
                     mcp_tools_pythons(l), l->default_timeout_s, l->max_timeout_s,
                     l->packages && *l->packages ? ", " : "", l->packages ? l->packages : "") < 0)
                return NULL;
        return d;
}

static char *validate_description(const McpLimits *l) {
        char *d = NULL;
        if (asprintf(&d,
                     "Check a Python script without running it: its syntax (compiled by the chosen interpreter in the "
                     "sandbox), its PEP 723 metadata (TOML), each requirement's PEP 508 syntax, requires-python against "
                     "the interpreter, and whether each requirement can be satisfied by the configured source (%s). "
                     "Returns valid and the problems found, line by line. Interpreters: %s.",
                     l->sources ? l->sources : "none is configured", mcp_tools_pythons(l)) < 0)
                return NULL;
        return d;
}

static char *environment_description(const McpLimits *l) {
        return strdup("Report what runs would get, from probes made by the server: each interpreter's version and "
                      "importable scientific packages, the cgroup backend and its limits, the sandbox features, the "
                      "configured dependency sources, the environment cache (size and entries) and the server's "
                      "version.");
}

static json_t *execute_output_schema(void) {
        _cleanup_(json_decrefp) json_t *s = mcp_exec_output_schema_new();
        if (!s)
                return NULL;
        json_t *props = json_object_get(s, "properties"), *required = json_object_get(s, "required");
        json_t *env = json_pack(
                "{s:[s,s], s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}}",
                "type", "object", "null",
                "description", "the cached environment the run used (null without dependencies): key, whether it "
                               "was reused, how long installing it took (0 when reused), where it was mounted",
                "properties", "key", "type", "string", "reused", "type", "boolean", "install_ms", "type", "integer",
                "mount", "type", "string");
        if (!env || json_object_set_new(props, "environment", env) < 0 ||
            json_object_set_new(props, "python", json_pack("{s:s, s:s}", "type", "string", "description", "name of the interpreter that ran the script")) < 0 ||
            json_object_set_new(props, "python_version", json_pack("{s:s, s:s}", "type", "string", "description", "its version")) < 0 ||
            json_object_set_new(props, "dependencies",
                                json_pack("{s:s, s:{s:s}, s:s}", "type", "array", "items", "type", "string",
                                          "description", "the merged, normalized requirements")) < 0)
                return NULL;
        static const char *const added[] = { "python", "python_version", "dependencies", "environment" };
        for (size_t i = 0; i < ELEMENTSOF(added); i++)
                if (json_array_append_new(required, json_string(added[i])) < 0)
                        return NULL;
        return json_incref(s);
}

static json_t *validate_output_schema(void) {
        return json_pack(
                "{s:s, s:{s:{s:s, s:s}, s:{s:s}, s:{s:s}, s:{s:[s,s]}, s:{s:s, s:{s:s}}, s:{s:s, s:s, "
                "s:{s:s, s:{s:{s:[s,s]}, s:{s:s}, s:{s:s}, s:{s:[s,s]}}, s:[s,s]}}}, s:[s,s,s,s,s,s]}",
                "type", "object", "properties",
                "valid", "type", "boolean", "description", "true when no problem was found",
                "python", "type", "string",
                "python_version", "type", "string",
                "requires_python", "type", "string", "null",
                "dependencies", "type", "array", "items", "type", "string",
                "problems", "type", "array", "description",
                "what is wrong, one entry per problem: the script line (1-based, null when it is not in the script), "
                "the part checked (syntax, metadata, dependencies, requires-python, source), the message and the "
                "offending text",
                "items", "type", "object", "properties", "line", "type", "integer", "null", "check", "type", "string",
                "message", "type", "string", "text", "type", "string", "null", "required", "check", "message",
                "required", "valid", "python", "python_version", "requires_python", "dependencies", "problems");
}

static json_t *environment_output_schema(void) {
        return json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s,s,s,s,s,s]}",
                         "type", "object", "properties",
                         "daemon", "type", "object",
                         "interpreters", "type", "array",
                         "sandbox", "type", "object",
                         "cgroup", "type", "object",
                         "limits", "type", "object",
                         "sources", "type", "object",
                         "cache", "type", "object",
                         "required", "daemon", "interpreters", "sandbox", "cgroup", "limits", "sources", "cache");
}

static const McpToolArg execute_args[] = {
        { "script", MCP_ARG_CODE, true, "Python source to run, with an optional PEP 723 block (" },
        { "dependencies", MCP_ARG_DEPENDENCIES, false, NULL },
        { "timeout_seconds", MCP_ARG_TIMEOUT, false, "Wall-clock timeout of the run in seconds (" },
        { "python", MCP_ARG_PYTHON, false, "Interpreter, one of: " },
        { "files", MCP_ARG_FILES, false, NULL },
        { "session", MCP_ARG_SESSION, false, "Run the script in this Python session (from session_open): its "
                                             "variables, imports and /tmp are kept" },
};

const McpToolDef mcp_tool_execute_python = {
        .name = "execute_python",
        .tool = MCP_TOOL_EXECUTE_PYTHON,
        .title = "Run a Python script with its dependencies",
        .description_new = execute_description,
        .output_schema_new = execute_output_schema,
        .args = execute_args,
        .n_args = ELEMENTSOF(execute_args),
};

static const McpToolArg validate_args[] = {
        { "script", MCP_ARG_CODE, true, "Python source to check, with an optional PEP 723 block (" },
        { "dependencies", MCP_ARG_DEPENDENCIES, false, NULL },
        { "python", MCP_ARG_PYTHON, false, "Interpreter to check against, one of: " },
};

const McpToolDef mcp_tool_validate_script = {
        .name = "validate_script",
        .tool = MCP_TOOL_VALIDATE_SCRIPT,
        .title = "Check a Python script without running it",
        .description_new = validate_description,
        .output_schema_new = validate_output_schema,
        .args = validate_args,
        .n_args = ELEMENTSOF(validate_args),
        .read_only = true,
        .idempotent = true,
};

const McpToolDef mcp_tool_check_environment = {
        .name = "check_environment",
        .tool = MCP_TOOL_CHECK_ENVIRONMENT,
        .title = "Describe the execution environment",
        .description_new = environment_description,
        .output_schema_new = environment_output_schema,
        .read_only = true,
        .idempotent = true,
};
