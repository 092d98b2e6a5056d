/* tools.c: the tool catalogue (schemas, descriptions from the configuration in force), argument
 * validation and result encoding. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "mcp-internal.h"
#include "str-util.h"


static const char *const exec_fields[] = { "code", "timeout_s", "stdin", "python", "files" };

bool mcp_tool_exists(const char *name) {
        return strcmp(name, "exec") == 0 || mcp_tool_python_lookup(name) != MCP_TOOL_EXEC;
}

/* "1 MiB" style for descriptions, exact when it is not a round number. */
static void format_bytes(char *out, size_t n, uint64_t v) {
        static const char *const units[] = { "GiB", "MiB", "KiB" };
        static const unsigned shifts[] = { 30, 20, 10 };
        if (v == UINT64_MAX) {
                snprintf(out, n, "unlimited");
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (v >= ((uint64_t) 1 << shifts[i]) && v % ((uint64_t) 1 << shifts[i]) == 0) {
                        snprintf(out, n, "%" PRIu64 " %s", v >> shifts[i], units[i]);
                        return;
                }
        snprintf(out, n, "%" PRIu64 " bytes", v);
}

static char *exec_description(const McpLimits *l) {
        char out[32], code[32], in[32], mem[32], tmp[32], pids[32], cpu[32], fin[32], fret[32];
        format_bytes(out, sizeof(out), l->max_output_bytes);
        format_bytes(code, sizeof(code), l->max_code_bytes);
        format_bytes(in, sizeof(in), l->max_stdin_bytes);
        format_bytes(mem, sizeof(mem), l->memory_max_bytes);
        format_bytes(tmp, sizeof(tmp), l->tmp_size_bytes);
        format_bytes(fin, sizeof(fin), l->max_input_bytes);
        format_bytes(fret, sizeof(fret), l->max_return_bytes);
        if (l->pids_max == UINT64_MAX)
                snprintf(pids, sizeof(pids), "unlimited");
        else
                snprintf(pids, sizeof(pids), "%" PRIu64, l->pids_max);
        if (l->cpu_quota_percent == 0)
                snprintf(cpu, sizeof(cpu), "unlimited");
        else
                snprintf(cpu, sizeof(cpu), "%" PRIu32 "%% of one CPU", l->cpu_quota_percent);

        char *d = NULL;
        if (asprintf(&d,
                     "Run Python %s code in a fresh, locked-down sandbox with no network access, and return its "
                     "stdout, stderr, exit code and resource use. The code is saved as a script and run with "
                     "`python -I`; `stdin` is fed to it. Nothing persists between calls: each run starts from an "
                     "empty working directory. Importable: the standard library%s%s.\n"
                     "Limits in force: wall-clock timeout %" PRIu32 " s by default, at most %" PRIu32 " s "
                     "(timeout_s; 0 or absent means the default, larger values are clamped, negative means 1 s); "
                     "stdout and stderr together are capped at %s (the first bytes are kept and truncated is "
                     "true); code up to %s; stdin up to %s; memory %s; processes %s; CPU %s; /tmp %s; "
                     "limits enforced by %s.\n"
                     "Files: `files` creates input files in the working directory before the code starts "
                     "(relative paths, text or base64, %s in total). Files the code writes to outputs/ (the "
                     "directory exists) come back: PNG, JPEG, GIF and WebP images as image content, other files "
                     "as embedded resources, up to %s in total; all are listed in `files`, with returned=false "
                     "for what did not fit. Figures need no ceremony: matplotlib uses the Agg backend, "
                     "plt.show() saves every open figure to outputs/figure-N.png (and closes it), and figures "
                     "still open when the code ends are saved the same way.\n"
                     "A non-zero exit_code, timed_out=true or truncated=true is a normal result, not a tool error.",
                     l->python_version ? l->python_version : "3",
                     l->packages && *l->packages ? ", " : "", l->packages ? l->packages : "",
                     l->default_timeout_s, l->max_timeout_s, out, code, in, mem, pids, cpu, tmp,
                     l->limits_by ? l->limits_by : "rlimit", fin, fret) < 0)
                return NULL;
        return d;
}

static json_t *exec_input_schema(const McpLimits *l) {
        char tdesc[160];
        snprintf(tdesc, sizeof(tdesc),
                 "Wall-clock timeout in seconds (default %" PRIu32 ", at most %" PRIu32 "; larger values are clamped)",
                 l->default_timeout_s, l->max_timeout_s);
        char sdesc[96], cdesc[96];
        snprintf(sdesc, sizeof(sdesc), "Data piped to the program's stdin (at most %" PRIu64 " bytes)",
                 l->max_stdin_bytes);
        snprintf(cdesc, sizeof(cdesc), "Python source to execute (required, at most %" PRIu64 " bytes)",
                 l->max_code_bytes);
        char pdesc[256];
        snprintf(pdesc, sizeof(pdesc), "Interpreter to run the code with, one of: %s (default: the first)",
                 l->pythons ? l->pythons : "python3");
        json_t *files = mcp_files_input_schema(l);
        if (!files)
                return NULL;
        return json_pack("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}, s:o}, s:[s], s:b}",
                         "type", "object",
                         "properties",
                         "code", "type", "string", "description", cdesc,
                         "timeout_s", "type", "integer", "description", tdesc,
                         "stdin", "type", "string", "description", sdesc,
                         "python", "type", "string", "description", pdesc,
                         "files", files,
                         "required", "code",
                         "additionalProperties", 0);
}

static json_t *exec_output_schema(void) {
        static const struct {
                const char *name, *type, *description;
        } fields[] = {
                { "stdout", "string", "captured stdout (invalid UTF-8 replaced by U+FFFD)" },
                { "stderr", "string", "captured stderr (invalid UTF-8 replaced by U+FFFD)" },
                { "exit_code", "integer", "exit status; -1 when timed out; -N when killed by signal N" },
                { "duration_ms", "integer", "wall time of the run itself, without queue wait" },
                { "truncated", "boolean", "true when output was dropped by the combined cap" },
                { "timed_out", "boolean", "true when the deadline killed the run" },
                { "signal", NULL, "name of the signal that ended the run, or null" },
                { "oom_killed", "boolean", "true when the memory limit killed a process of the run" },
                { "pids_limit_hit", "boolean", "true when the run hit its process limit" },
                { "memory_peak_bytes", "integer", "peak memory of the run" },
                { "cpu_user_us", "integer", "user CPU time of the run" },
                { "cpu_system_us", "integer", "system CPU time of the run" },
                { "limits", "string", "what enforced the limits: cgroup or rlimit" },
                { "queue_ms", "integer", "time spent waiting for a free slot" },
        };
        _cleanup_(json_decrefp) json_t *props = json_object();
        _cleanup_(json_decrefp) json_t *required = json_array();
        if (!props || !required)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                json_t *p = fields[i].type
                        ? json_pack("{s:s, s:s}", "type", fields[i].type, "description", fields[i].description)
                        : json_pack("{s:[s,s], s:s}", "type", "string", "null", "description",
                                    fields[i].description);
                if (!p || json_object_set_new(props, fields[i].name, p) < 0 ||
                    json_array_append_new(required, json_string(fields[i].name)) < 0)
                        return NULL;
        }
        json_t *schema = json_pack("{s:s, s:O, s:O}", "type", "object", "properties", props, "required", required);
        if (schema && mcp_files_output_schema_add(schema) < 0) {
                json_decref(schema);
                return NULL;
        }
        return schema;
}

json_t *mcp_tools_list_new(const McpLimits *limits) {
        _cleanup_free_ char *description = exec_description(limits);
        json_t *in = exec_input_schema(limits), *out = exec_output_schema();
        if (!description || !in || !out) {
                json_decref(in);
                json_decref(out);
                return NULL;
        }
        json_t *python_tools = mcp_tools_python_new(limits);
        if (!python_tools) {
                json_decref(in);
                json_decref(out);
                return NULL;
        }
        json_t *exec = json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:b, s:b, s:b, s:b}}",
                                 "name", "exec",
                                 "title", "Run Python in a sandbox",
                                 "description", description,
                                 "inputSchema", in,
                                 "outputSchema", out,
                                 "annotations", "readOnlyHint", 0, "destructiveHint", 0, "idempotentHint", 0,
                                 "openWorldHint", 0);
        if (!exec || json_array_insert_new(python_tools, 0, exec) < 0) {
                json_decref(python_tools);
                return NULL;
        }
        return json_pack("{s:o}", "tools", python_tools);
}

json_t *mcp_exec_output_schema_new(void) {
        return exec_output_schema();
}

static const char *json_type_name(const json_t *v) {
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

static char *problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *problem(const char *fmt, ...) {
        char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        return r < 0 ? NULL : msg;
}

/* timeout_s as mcp-exec applies it: absent or 0 → default, negative → 1, above max → max. An
 * integral number (5.0, 1e30) is an integer in JSON Schema's sense. */
static char *timeout_apply(const McpLimits *l, json_t *v, uint32_t *ret) {
        double d;
        if (json_is_integer(v))
                d = (double) json_integer_value(v);
        else if (json_is_real(v) && isfinite(json_real_value(v)) && floor(json_real_value(v)) == json_real_value(v))
                d = json_real_value(v);
        else
                return problem("invalid argument 'timeout_s': must be an integer number of seconds (at most %" PRIu32
                               "), got %s", l->max_timeout_s, json_is_real(v) ? "a fractional number" : json_type_name(v));
        if (d == 0)
                *ret = l->default_timeout_s;
        else if (d < 0)
                *ret = 1;
        else if (d > l->max_timeout_s)
                *ret = l->max_timeout_s;
        else
                *ret = (uint32_t) d;
        return NULL;
}

char *mcp_tool_args_validate(const McpLimits *l, const char *name, json_t *arguments, McpExecArgs *ret) {
        const char *key;
        json_t *v;

        McpTool tool = mcp_tool_python_lookup(name);
        if (tool != MCP_TOOL_EXEC)
                return mcp_tool_python_args_validate(l, tool, arguments, ret);

        json_object_foreach(arguments, key, v) {
                bool known = false;
                for (size_t i = 0; i < ELEMENTSOF(exec_fields); i++)
                        known = known || strcmp(key, exec_fields[i]) == 0;
                if (!known)
                        return problem("invalid argument '%s': unknown property; %s accepts only code, timeout_s, "
                                       "stdin, python and files", key, name);
        }

        McpExecArgs a = { .timeout_s = l->default_timeout_s };

        v = json_object_get(arguments, "code");
        if (!v)
                return problem("invalid argument 'code': required, the Python source to run");
        if (!json_is_string(v))
                return problem("invalid argument 'code': must be a string, got %s", json_type_name(v));
        a.code = json_string_value(v);
        a.code_len = json_string_length(v);
        if (str_is_blank(a.code, a.code_len))
                return problem("invalid argument 'code': must not be empty or only whitespace");
        /* Debian 12's Python 3.11.2 silently drops what follows a NUL at the end of a line ("print(1)\0"
         * runs and exits 0) or reports a misleading SyntaxError elsewhere; newer ones refuse the file
         * ("source code cannot contain null bytes"). Refuse it here, the same way for every Python. */
        const char *nul = memchr(a.code, '\0', a.code_len);
        if (nul)
                return problem("invalid argument 'code': contains a NUL character (\\u0000) at byte %zu; Python "
                               "source cannot contain NUL", (size_t) (nul - a.code));
        if (a.code_len > l->max_code_bytes)
                return problem("invalid argument 'code': %zu bytes, over the limit of %" PRIu64
                               " bytes (MCP_EXEC_MAX_CODE_BYTES)", a.code_len, l->max_code_bytes);

        v = json_object_get(arguments, "stdin");
        if (v && !json_is_null(v)) {
                if (!json_is_string(v))
                        return problem("invalid argument 'stdin': must be a string, got %s", json_type_name(v));
                a.stdin_data = json_string_value(v);
                a.stdin_len = json_string_length(v);
                if (a.stdin_len > l->max_stdin_bytes)
                        return problem("invalid argument 'stdin': %zu bytes, over the limit of %" PRIu64
                                       " bytes (MCP_EXEC_MAX_STDIN_BYTES)", a.stdin_len, l->max_stdin_bytes);
        }

        v = json_object_get(arguments, "timeout_s");
        if (v && !json_is_null(v)) {
                char *p = timeout_apply(l, v, &a.timeout_s);
                if (p)
                        return p;
        }

        v = json_object_get(arguments, "python");
        if (v && !json_is_null(v)) {
                char *p = mcp_python_arg_validate(l, v, &a.python);
                if (p)
                        return p;
        }

        /* Last: it allocates (freed with the call). */
        v = json_object_get(arguments, "files");
        if (v && !json_is_null(v)) {
                char *p = mcp_files_arg_validate(l, v, &a);
                if (p)
                        return p;
        }

        *ret = a;
        return NULL;
}

static json_t *repaired_string(const char *s, size_t len) {
        size_t n;
        _cleanup_free_ char *fixed = mcp_utf8_repair(s ? s : "", s ? len : 0, &n);
        return fixed ? json_stringn(fixed, n) : NULL;
}

char *mcp_call_reply_result(const McpCall *c, const McpExecResult *r) {
        json_t *out = repaired_string(r->stdout_data, r->stdout_len);
        json_t *err = repaired_string(r->stderr_data, r->stderr_len);
        if (!out || !err) {
                json_decref(out);
                json_decref(err);
                return NULL;
        }
        _cleanup_(json_decrefp) json_t *sc = json_pack(
                "{s:o, s:o, s:I, s:I, s:b, s:b, s:o, s:b, s:b, s:I, s:I, s:I, s:s, s:I}",
                "stdout", out,
                "stderr", err,
                "exit_code", (json_int_t) r->exit_code,
                "duration_ms", (json_int_t) r->duration_ms,
                "truncated", r->truncated,
                "timed_out", r->timed_out,
                "signal", r->signal ? json_string(r->signal) : json_null(),
                "oom_killed", r->oom_killed,
                "pids_limit_hit", r->pids_limit_hit,
                "memory_peak_bytes", (json_int_t) r->memory_peak_bytes,
                "cpu_user_us", (json_int_t) r->cpu_user_us,
                "cpu_system_us", (json_int_t) r->cpu_system_us,
                "limits", r->limits ? r->limits : "rlimit",
                "queue_ms", (json_int_t) r->queue_ms);
        if (!sc)
                return NULL;
        if (r->extra_json) {
                /* execute_python's additions (interpreter, dependencies, environment). */
                _cleanup_(json_decrefp) json_t *extra = json_loads(r->extra_json, 0, NULL);
                if (!json_is_object(extra) || json_object_update(sc, extra) < 0)
                        return NULL;
        }
        /* Clients that only read text content get the same JSON (the tools spec's advice for
         * structuredContent, and what mcp-exec returns). */
        /* The files (issue 10): listed in sc, their bytes as content items after the text. */
        _cleanup_(json_decrefp) json_t *items = json_array();
        char nonce[17];
        if (!items || mcp_files_result_add(r, sc, items, nonce) < 0)
                return NULL;
        _cleanup_free_ char *text = json_dumps(sc, JSON_COMPACT);
        if (!text)
                return NULL;
        _cleanup_(json_decrefp) json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
        if (!content || json_array_extend(content, items) < 0)
                return NULL;
        _cleanup_(json_decrefp) json_t *m = json_pack(
                "{s:s, s:O, s:{s:O, s:O, s:b}}",
                "jsonrpc", "2.0", "id", c->id,
                "result", "content", content, "structuredContent", sc, "isError", 0);
        char *reply = m ? mcp_json_dump(m) : NULL;
        return reply && r->n_files > 0 ? mcp_files_splice(reply, r, nonce) : reply;
}

char *mcp_call_reply_tool_error(const McpCall *c, const char *message) {
        _cleanup_(json_decrefp) json_t *m = json_pack(
                "{s:s, s:O, s:{s:[{s:s, s:s}], s:b}}",
                "jsonrpc", "2.0", "id", c->id,
                "result", "content", "type", "text", "text", message, "isError", 1);
        return m ? mcp_json_dump(m) : NULL;
}

char *mcp_call_reply_structured(const McpCall *c, const char *json_object) {
        _cleanup_(json_decrefp) json_t *sc = json_loads(json_object, 0, NULL);
        if (!json_is_object(sc))
                return NULL;
        _cleanup_free_ char *text = json_dumps(sc, JSON_COMPACT);
        if (!text)
                return NULL;
        _cleanup_(json_decrefp) json_t *m = json_pack(
                "{s:s, s:O, s:{s:[{s:s, s:s}], s:O, s:b}}",
                "jsonrpc", "2.0", "id", c->id,
                "result", "content", "type", "text", "text", text, "structuredContent", sc, "isError", 0);
        return m ? mcp_json_dump(m) : NULL;
}
