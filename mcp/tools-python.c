/* tools-python.c: the tools of mcp-python-exec-sandbox's interface (execute_python, validate_script,
 * check_environment): schemas, descriptions from the configuration in force, argument validation;
 * and the `python` argument every running tool takes. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "mcp-internal.h"
#include "str-util.h"

/* Bounds on the dependencies argument: enough for any real script, small enough that the resolver's
 * input stays trivial. */
#define DEPENDENCIES_MAX 64
#define REQUIREMENT_MAX_BYTES 256

static const struct {
        const char *name;
        McpTool tool;
} tool_names[] = {
        { "execute_python", MCP_TOOL_EXECUTE_PYTHON },
        { "validate_script", MCP_TOOL_VALIDATE_SCRIPT },
        { "check_environment", MCP_TOOL_CHECK_ENVIRONMENT },
};

McpTool mcp_tool_python_lookup(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(tool_names); i++)
                if (strcmp(name, tool_names[i].name) == 0)
                        return tool_names[i].tool;
        return MCP_TOOL_EXEC;
}

static const char *tool_name(McpTool t) {
        for (size_t i = 0; i < ELEMENTSOF(tool_names); i++)
                if (tool_names[i].tool == t)
                        return tool_names[i].name;
        return "exec";
}

static char *problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *problem(const char *fmt, ...) {
        char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        return r < 0 ? NULL : msg;
}

static const char *type_name(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT: return "an object";
        case JSON_ARRAY: return "an array";
        case JSON_STRING: return "a string";
        case JSON_INTEGER: return "an integer";
        case JSON_REAL: return "a number";
        case JSON_TRUE:
        case JSON_FALSE: return "a boolean";
        case JSON_NULL: return "null";
        }
        return "a value";
}

static const char *pythons_or_default(const McpLimits *l) {
        return l->pythons && *l->pythons ? l->pythons : "python3";
}

char *mcp_python_arg_validate(const McpLimits *l, json_t *v, const char **ret) {
        if (!json_is_string(v))
                return problem("invalid argument 'python': must be a string, one of: %s, got %s",
                               pythons_or_default(l), type_name(v));
        const char *want = json_string_value(v);
        size_t n = strlen(want);
        for (const char *p = pythons_or_default(l); *p;) {
                size_t k = strcspn(p, ",");
                if (k == n && strncmp(p, want, n) == 0 && n == json_string_length(v)) {
                        *ret = want;
                        return NULL;
                }
                p += k;
                if (*p == ',')
                        p++;
        }
        return problem("invalid argument 'python': unknown interpreter '%s'; configured (MCP_EXEC_PYTHONS): %s",
                       want, pythons_or_default(l));
}

/* ---------------------------------------------------------------------------------------------
 * Schemas and descriptions. */

static json_t *prop(const char *type, const char *description) {
        return json_pack("{s:s, s:s}", "type", type, "description", description);
}

static json_t *dependencies_schema(void) {
        char d[256];
        snprintf(d, sizeof(d),
                 "PEP 508 requirements to install before the run (at most %d), merged with the script's PEP 723 "
                 "block; for the same package this list wins, e.g. [\"requests>=2.31\"]",
                 DEPENDENCIES_MAX);
        return json_pack("{s:s, s:{s:s, s:i}, s:i, s:s}", "type", "array", "items", "type", "string", "maxLength",
                         REQUIREMENT_MAX_BYTES, "maxItems", DEPENDENCIES_MAX, "description", d);
}

static char *execute_description(const McpLimits *l) {
        char *d = NULL;
        if (asprintf(&d,
                     "Run a Python script in a fresh, locked-down sandbox with no network access, after installing "
                     "its dependencies, and return its stdout, stderr, exit code and resource use (the same fields "
                     "as exec, plus the interpreter and the environment used).\n"
                     "Dependencies: declare them in a PEP 723 block at the top of the script\n"
                     "# /// script\n# requires-python = \">=3.9\"\n# dependencies = [\"somepkg==1.2\"]\n# ///\n"
                     "or pass them in `dependencies` (PEP 508 strings; for the same package the parameter wins). "
                     "They are installed by the server outside the sandbox from %s, once per set of requirements "
                     "(the environment is cached and mounted read-only into each run); always pin versions. "
                     "Interpreters: %s (the `python` argument, default the first). "
                     "timeout_seconds: wall-clock limit of the run itself (default %" PRIu32 ", at most %" PRIu32
                     ", larger values are clamped); installation has its own limit. Importable without "
                     "dependencies: the standard library%s%s.\n"
                     "`files` and outputs/ work as in exec: input files before the run, files written to "
                     "outputs/ and matplotlib figures (plt.show(), figures left open) come back as image or "
                     "resource content.\n"
                     "A non-zero exit_code, timed_out=true or truncated=true is a normal result; malformed "
                     "metadata, an invalid requirement or a failed installation is a tool error that says why.",
                     l->sources ? l->sources : "no source (the operator has configured none, so only scripts "
                                               "without dependencies can run)",
                     pythons_or_default(l), l->default_timeout_s, l->max_timeout_s,
                     l->packages && *l->packages ? ", " : "", l->packages ? l->packages : "") < 0)
                return NULL;
        return d;
}

static json_t *execute_input_schema(const McpLimits *l) {
        char sdesc[128], tdesc[160], pdesc[256];
        snprintf(sdesc, sizeof(sdesc), "Python source to run, with an optional PEP 723 block (at most %" PRIu64
                 " bytes)", l->max_code_bytes);
        snprintf(tdesc, sizeof(tdesc), "Wall-clock timeout of the run in seconds (default %" PRIu32 ", at most %" PRIu32
                 "; larger values are clamped)", l->default_timeout_s, l->max_timeout_s);
        snprintf(pdesc, sizeof(pdesc), "Interpreter, one of: %s (default: the first)", pythons_or_default(l));
        json_t *deps = dependencies_schema();
        if (!deps)
                return NULL;
        json_t *files = mcp_files_input_schema(l);
        if (!files) {
                json_decref(deps);
                return NULL;
        }
        return json_pack("{s:s, s:{s:o, s:o, s:o, s:o, s:o}, s:[s], s:b}", "type", "object", "properties",
                         "script", prop("string", sdesc),
                         "dependencies", deps,
                         "timeout_seconds", prop("integer", tdesc),
                         "python", prop("string", pdesc),
                         "files", files,
                         "required", "script", "additionalProperties", 0);
}

static json_t *validate_input_schema(const McpLimits *l) {
        char sdesc[128], pdesc[256];
        snprintf(sdesc, sizeof(sdesc), "Python source to check, with an optional PEP 723 block (at most %" PRIu64
                 " bytes)", l->max_code_bytes);
        snprintf(pdesc, sizeof(pdesc), "Interpreter to check against, one of: %s (default: the first)",
                 pythons_or_default(l));
        json_t *deps = dependencies_schema();
        if (!deps)
                return NULL;
        return json_pack("{s:s, s:{s:o, s:o, s:o}, s:[s], s:b}", "type", "object", "properties",
                         "script", prop("string", sdesc),
                         "dependencies", deps,
                         "python", prop("string", pdesc),
                         "required", "script", "additionalProperties", 0);
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
            json_object_set_new(props, "python", prop("string", "name of the interpreter that ran the script")) < 0 ||
            json_object_set_new(props, "python_version", prop("string", "its version")) < 0 ||
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

json_t *mcp_tools_python_new(const McpLimits *l) {
        _cleanup_free_ char *exec_desc = execute_description(l);
        char vdesc[640];
        snprintf(vdesc, sizeof(vdesc),
                 "Check a Python script without running it: its syntax (compiled by the chosen interpreter in the "
                 "sandbox), its PEP 723 metadata (TOML), each requirement's PEP 508 syntax, requires-python against "
                 "the interpreter, and whether each requirement can be satisfied by the configured source (%s). "
                 "Returns valid and the problems found, line by line. Interpreters: %s.",
                 l->sources ? l->sources : "none is configured", pythons_or_default(l));
        json_t *ein = execute_input_schema(l), *eout = execute_output_schema();
        json_t *vin = validate_input_schema(l), *vout = validate_output_schema();
        json_t *cin = json_pack("{s:s, s:{}, s:b}", "type", "object", "properties", "additionalProperties", 0);
        json_t *cout = environment_output_schema();
        if (!exec_desc || !ein || !eout || !vin || !vout || !cin || !cout) {
                json_decref(ein);
                json_decref(eout);
                json_decref(vin);
                json_decref(vout);
                json_decref(cin);
                json_decref(cout);
                return NULL;
        }
        return json_pack(
                "[{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}},"
                " {s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}},"
                " {s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}]",
                "name", "execute_python", "title", "Run a Python script with its dependencies", "description",
                exec_desc, "inputSchema", ein, "outputSchema", eout, "annotations", "readOnlyHint", 0,
                "destructiveHint", 0, "idempotentHint", 0, "openWorldHint", 0,
                "name", "validate_script", "title", "Check a Python script without running it", "description", vdesc,
                "inputSchema", vin, "outputSchema", vout, "annotations", "readOnlyHint", 1, "destructiveHint", 0,
                "idempotentHint", 1, "openWorldHint", 0,
                "name", "check_environment", "title", "Describe the execution environment", "description",
                "Report what runs would get, from probes made by the server: each interpreter's version and "
                "importable scientific packages, the cgroup backend and its limits, the sandbox features, the "
                "configured dependency sources, the environment cache (size and entries) and the server's version.",
                "inputSchema", cin, "outputSchema", cout, "annotations", "readOnlyHint", 1, "destructiveHint", 0,
                "idempotentHint", 1, "openWorldHint", 0);
}

/* ---------------------------------------------------------------------------------------------
 * Validation. */

static char *timeout_seconds_apply(const McpLimits *l, json_t *v, uint32_t *ret) {
        double d;
        if (json_is_integer(v))
                d = (double) json_integer_value(v);
        else if (json_is_real(v) && isfinite(json_real_value(v)) && floor(json_real_value(v)) == json_real_value(v))
                d = json_real_value(v);
        else
                return problem("invalid argument 'timeout_seconds': must be an integer number of seconds (at most %"
                               PRIu32 "), got %s", l->max_timeout_s,
                               json_is_real(v) ? "a fractional number" : type_name(v));
        /* As mcp-python-exec-sandbox: clamped to [1, max], never an error; 0 means the default. */
        if (d == 0)
                *ret = l->default_timeout_s;
        else if (d < 1)
                *ret = 1;
        else if (d > l->max_timeout_s)
                *ret = l->max_timeout_s;
        else
                *ret = (uint32_t) d;
        return NULL;
}

static char *dependencies_apply(json_t *v, char **ret) {
        if (!json_is_array(v))
                return problem("invalid argument 'dependencies': must be an array of PEP 508 requirement strings, "
                               "got %s", type_name(v));
        if (json_array_size(v) > DEPENDENCIES_MAX)
                return problem("invalid argument 'dependencies': %zu entries, over the limit of %d",
                               json_array_size(v), DEPENDENCIES_MAX);
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
                if (!json_is_string(e))
                        return problem("invalid argument 'dependencies[%zu]': must be a string, got %s", i,
                                       type_name(e));
                const char *s = json_string_value(e);
                size_t n = json_string_length(e);
                if (str_is_blank(s, n))
                        return problem("invalid argument 'dependencies[%zu]': must not be empty", i);
                if (n > REQUIREMENT_MAX_BYTES)
                        return problem("invalid argument 'dependencies[%zu]': %zu bytes, over the limit of %d", i, n,
                                       REQUIREMENT_MAX_BYTES);
                if (strlen(s) != n || strpbrk(s, "\n\r"))
                        return problem("invalid argument 'dependencies[%zu]': must be one line without NUL", i);
        }
        *ret = json_dumps(v, JSON_COMPACT);
        return *ret ? NULL : problem("out of memory");
}

char *mcp_tool_python_args_validate(const McpLimits *l, McpTool tool, json_t *arguments, McpExecArgs *ret) {
        static const char *const execute_fields[] = { "script", "dependencies", "timeout_seconds", "python", "files" };
        static const char *const validate_fields[] = { "script", "dependencies", "python" };
        const char *const *fields = tool == MCP_TOOL_EXECUTE_PYTHON ? execute_fields
                                    : tool == MCP_TOOL_VALIDATE_SCRIPT ? validate_fields : NULL;
        size_t n_fields = tool == MCP_TOOL_EXECUTE_PYTHON ? ELEMENTSOF(execute_fields)
                          : tool == MCP_TOOL_VALIDATE_SCRIPT ? ELEMENTSOF(validate_fields) : 0;
        const char *key;
        json_t *v;

        json_object_foreach(arguments, key, v) {
                bool known = false;
                for (size_t i = 0; i < n_fields; i++)
                        known = known || strcmp(key, fields[i]) == 0;
                if (!known)
                        return tool == MCP_TOOL_CHECK_ENVIRONMENT
                                ? problem("invalid argument '%s': unknown property; check_environment takes no "
                                          "arguments", key)
                                : problem("invalid argument '%s': unknown property; %s accepts only %s", key,
                                          tool_name(tool),
                                          tool == MCP_TOOL_EXECUTE_PYTHON
                                                  ? "script, dependencies, timeout_seconds, python and files"
                                                  : "script, dependencies and python");
        }

        McpExecArgs a = { .tool = tool, .timeout_s = l->default_timeout_s };
        if (tool == MCP_TOOL_CHECK_ENVIRONMENT) {
                *ret = a;
                return NULL;
        }

        v = json_object_get(arguments, "script");
        if (!v)
                return problem("invalid argument 'script': required, the Python source");
        if (!json_is_string(v))
                return problem("invalid argument 'script': must be a string, got %s", type_name(v));
        a.code = json_string_value(v);
        a.code_len = json_string_length(v);
        if (str_is_blank(a.code, a.code_len))
                return problem("invalid argument 'script': must not be empty or only whitespace");
        if (a.code_len > l->max_code_bytes)
                return problem("invalid argument 'script': %zu bytes, over the limit of %" PRIu64
                               " bytes (MCP_EXEC_MAX_CODE_BYTES)", a.code_len, l->max_code_bytes);
        if (strlen(a.code) != a.code_len)
                return problem("invalid argument 'script': contains a NUL character");

        v = json_object_get(arguments, "timeout_seconds");
        if (v && !json_is_null(v)) {
                char *p = timeout_seconds_apply(l, v, &a.timeout_s);
                if (p)
                        return p;
        }
        v = json_object_get(arguments, "python");
        if (v && !json_is_null(v)) {
                char *p = mcp_python_arg_validate(l, v, &a.python);
                if (p)
                        return p;
        }
        v = json_object_get(arguments, "dependencies");
        if (v && !json_is_null(v)) {
                char *p = dependencies_apply(v, &a.dependencies_json);
                if (p)
                        return p;
        }
        /* Last: it allocates (freed with the call). Only execute_python runs code. */
        v = json_object_get(arguments, "files");
        if (tool == MCP_TOOL_EXECUTE_PYTHON && v && !json_is_null(v)) {
                char *p = mcp_files_arg_validate(l, v, &a);
                if (p) {
                        free(a.dependencies_json);
                        return p;
                }
        }
        *ret = a;
        return NULL;
}
