/* tools-args.c: the shared leaves of the tool registry: each argument kind (code, stdin, timeout,
 * python, dependencies, files) is checked and described here once, for every tool that takes it, so
 * one mistake gets one message whatever the tool (only the argument's name differs). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "str-util.h"
#include "tools-internal.h"

/* Bounds on the dependencies argument: enough for any real script, small enough that the resolver's
 * input stays trivial. */
#define DEPENDENCIES_MAX 64
#define REQUIREMENT_MAX_BYTES 256

const char *mcp_tools_pythons(const McpLimits *l) {
        return l->pythons && *l->pythons ? l->pythons : "python3";
}

void mcp_exec_args_done(McpExecArgs *a) {
        json_decref(a->dependencies);
        free(a->files);
        free(a->files_data);
        a->dependencies = NULL;
        a->files = NULL;
        a->files_data = NULL;
        a->n_files = 0;
}

/* ---------------------------------------------------------------------------------------------
 * The checks. Each gets a value that is present and, for an optional argument, not null. */

static int code_check(const McpLimits *l, const char *name, json_t *v, McpExecArgs *a, char **ret_problem) {
        if (!json_is_string(v))
                return mcp_refuse(ret_problem, "invalid argument '%s': must be a string, got %s", name, mcp_json_type_name(v));
        a->code = json_string_value(v);
        a->code_len = json_string_length(v);
        if (str_is_blank(a->code, a->code_len))
                return mcp_refuse(ret_problem, "invalid argument '%s': must not be empty or only whitespace", name);
        /* Debian 12's Python 3.11.2 silently drops what follows a NUL at the end of a line ("print(1)\0"
         * runs and exits 0) or reports a misleading SyntaxError elsewhere; newer ones refuse the file
         * ("source code cannot contain null bytes"). Refuse it here, the same way for every Python,
         * before the size: the offset is what the caller needs to fix it. */
        const char *nul = memchr(a->code, '\0', a->code_len);
        if (nul)
                return mcp_refuse(ret_problem, "invalid argument '%s': contains a NUL character (\\u0000) at byte %zu; Python "
                                   "source cannot contain NUL", name, (size_t) (nul - a->code));
        if (a->code_len > l->max_code_bytes)
                return mcp_refuse(ret_problem, "invalid argument '%s': %zu bytes, over the limit of %" PRIu64
                                   " bytes (MCP_EXEC_MAX_CODE_BYTES)", name, a->code_len, l->max_code_bytes);
        return 0;
}

/* NULs are legitimate in stdin data: they reach the program byte-exact. */
static int stdin_check(const McpLimits *l, const char *name, json_t *v, McpExecArgs *a, char **ret_problem) {
        if (!json_is_string(v))
                return mcp_refuse(ret_problem, "invalid argument '%s': must be a string, got %s", name, mcp_json_type_name(v));
        a->stdin_data = json_string_value(v);
        a->stdin_len = json_string_length(v);
        if (a->stdin_len > l->max_stdin_bytes)
                return mcp_refuse(ret_problem, "invalid argument '%s': %zu bytes, over the limit of %" PRIu64
                                   " bytes (MCP_EXEC_MAX_STDIN_BYTES)", name, a->stdin_len, l->max_stdin_bytes);
        return 0;
}

/* The timeout as mcp-exec and mcp-python-exec-sandbox apply it: clamped, never an error for its
 * size; 0 means the default, negative means 1 s, above the maximum the maximum. An integral number
 * (5.0, 1e30) is an integer in JSON Schema's sense. */
static int timeout_check(const McpLimits *l, const char *name, json_t *v, McpExecArgs *a, char **ret_problem) {
        double d;
        if (json_is_integer(v))
                d = (double) json_integer_value(v);
        else if (json_is_real(v) && isfinite(json_real_value(v)) && floor(json_real_value(v)) == json_real_value(v))
                d = json_real_value(v);
        else
                return mcp_refuse(ret_problem, "invalid argument '%s': must be an integer number of seconds (at most %" PRIu32
                                   "), got %s", name, l->max_timeout_s,
                                   json_is_real(v) ? "a fractional number" : mcp_json_type_name(v));
        if (d == 0)
                a->timeout_s = l->default_timeout_s;
        else if (d < 0)
                a->timeout_s = 1;
        else if (d > l->max_timeout_s)
                a->timeout_s = l->max_timeout_s;
        else
                a->timeout_s = (uint32_t) d;
        return 0;
}

static int python_check(const McpLimits *l, const char *name, json_t *v, McpExecArgs *a, char **ret_problem) {
        if (!json_is_string(v))
                return mcp_refuse(ret_problem, "invalid argument '%s': must be a string, one of: %s, got %s", name,
                                   mcp_tools_pythons(l), mcp_json_type_name(v));
        const char *want = json_string_value(v);
        size_t n = strlen(want);
        for (const char *p = mcp_tools_pythons(l); *p;) {
                size_t k = strcspn(p, ",");
                if (k == n && strncmp(p, want, n) == 0 && n == json_string_length(v)) {
                        a->python = want;
                        return 0;
                }
                p += k;
                if (*p == ',')
                        p++;
        }
        return mcp_refuse(ret_problem, "invalid argument '%s': unknown interpreter '%s'; configured (MCP_EXEC_PYTHONS): %s", name,
                           MCP_QUOTE(want), mcp_tools_pythons(l));
}

static int dependencies_check(const McpLimits *l, const char *name, json_t *v, McpExecArgs *a, char **ret_problem) {
        if (!json_is_array(v))
                return mcp_refuse(ret_problem, "invalid argument '%s': must be an array of PEP 508 requirement strings, got %s",
                                   name, mcp_json_type_name(v));
        if (json_array_size(v) > DEPENDENCIES_MAX)
                return mcp_refuse(ret_problem, "invalid argument '%s': %zu entries, over the limit of %d", name,
                                   json_array_size(v), DEPENDENCIES_MAX);
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
                if (!json_is_string(e))
                        return mcp_refuse(ret_problem, "invalid argument '%s[%zu]': must be a string, got %s", name, i,
                                           mcp_json_type_name(e));
                const char *s = json_string_value(e);
                size_t n = json_string_length(e);
                if (str_is_blank(s, n))
                        return mcp_refuse(ret_problem, "invalid argument '%s[%zu]': must not be empty", name, i);
                if (n > REQUIREMENT_MAX_BYTES)
                        return mcp_refuse(ret_problem, "invalid argument '%s[%zu]': %zu bytes, over the limit of %d", name, i, n,
                                           REQUIREMENT_MAX_BYTES);
                if (strlen(s) != n || strpbrk(s, "\n\r"))
                        return mcp_refuse(ret_problem, "invalid argument '%s[%zu]': must be one line without NUL", name, i);
        }
        a->dependencies = json_incref(v);
        return 0;
}

/* A session's handle: only its shape here; whether it names a live session of the caller is the
 * daemon's question, answered with one message for every wrong handle. */
static int session_check(const McpLimits *l, const char *name, json_t *v, McpExecArgs *a, char **ret_problem) {
        if (!json_is_string(v))
                return mcp_refuse(ret_problem, "invalid argument '%s': must be a string (a handle from session_open), got %s",
                                  name, mcp_json_type_name(v));
        if (json_string_length(v) == 0 || json_string_length(v) > MCP_SESSION_HANDLE_MAX_BYTES ||
            strlen(json_string_value(v)) != json_string_length(v))
                return mcp_refuse(ret_problem, "invalid argument '%s': must be a handle from session_open (1 to %d "
                                  "characters)", name, MCP_SESSION_HANDLE_MAX_BYTES);
        a->session = json_string_value(v);
        return 0;
}

static int idle_timeout_check(const McpLimits *l, const char *name, json_t *v, McpExecArgs *a, char **ret_problem) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 604800)
                return mcp_refuse(ret_problem, "invalid argument '%s': must be a whole number of seconds from 1 to 604800 "
                                  "(larger than MCP_EXEC_PY_SESSION_IDLE_S is lowered to it)", name);
        a->idle_timeout_s = (uint32_t) json_integer_value(v);
        return 0;
}

static bool file_is_base64(json_t *f) {
        json_t *enc = json_object_get(f, "encoding");
        return mcp_json_name(enc) && strcmp(json_string_value(enc), "base64") == 0;
}

static int files_check(const McpLimits *l, const char *name, json_t *v, McpExecArgs *a, char **ret_problem) {
        if (!json_is_array(v))
                return mcp_refuse(ret_problem, "invalid argument '%s': must be an array of {name, content, encoding?} objects",
                                   name);
        size_t n = json_array_size(v);
        if (n == 0)
                return 0;
        if (n > MCP_FILES_MAX)
                return mcp_refuse(ret_problem, "invalid argument '%s': %zu files, over the limit of %d", name, n, MCP_FILES_MAX);

        /* First every name, encoding and (an upper bound of) the size, so nothing is decoded for a
         * call that is refused anyway. */
        uint64_t total = 0;
        size_t i;
        json_t *f;
        json_array_foreach(v, i, f) {
                if (!json_is_object(f))
                        return mcp_refuse(ret_problem, "invalid argument '%s[%zu]': must be an object {name, content, encoding?}",
                                           name, i);
                const char *key;
                json_t *x;
                json_object_foreach(f, key, x)
                        if (strcmp(key, "name") != 0 && strcmp(key, "content") != 0 && strcmp(key, "encoding") != 0)
                                return mcp_refuse(ret_problem, "invalid argument '%s[%zu].%s': unknown property; a file has name, "
                                                   "content and encoding", name, i, MCP_QUOTE(key));
                json_t *fname = json_object_get(f, "name"), *content = json_object_get(f, "content");
                json_t *enc = json_object_get(f, "encoding");
                if (!json_is_string(fname))
                        return mcp_refuse(ret_problem, "invalid argument '%s[%zu].name': required, a relative path inside the "
                                           "working directory", name, i);
                _cleanup_free_ char *why = mcp_file_name_check(json_string_value(fname), json_string_length(fname));
                if (why)
                        return mcp_refuse(ret_problem, "invalid argument '%s[%zu].name': %s", name, i, why);
                if (!json_is_string(content))
                        return mcp_refuse(ret_problem, "invalid argument '%s[%zu].content': required, a string (the file's text, "
                                           "or its bytes in base64 with encoding \"base64\")", name, i);
                if (enc && !json_is_null(enc) &&
                    (!mcp_json_name(enc) || (strcmp(json_string_value(enc), "utf-8") != 0 &&
                                             strcmp(json_string_value(enc), "base64") != 0)))
                        return mcp_refuse(ret_problem, "invalid argument '%s[%zu].encoding': must be \"utf-8\" or \"base64\"", name,
                                           i);
                total += file_is_base64(f) ? json_string_length(content) / 4 * 3 : json_string_length(content);
        }
        if (total > l->max_input_bytes + 3 * n) /* the base64 bound is exact but for padding */
                return mcp_refuse(ret_problem, "invalid argument '%s': about %" PRIu64 " bytes in total, over the limit of %" PRIu64
                                   " bytes (MCP_EXEC_MAX_INPUT_BYTES)", name, total, l->max_input_bytes);

        /* Two files with one name, or a file where another needs a directory. */
        for (size_t a1 = 0; a1 < n; a1++)
                for (size_t b = 0; b < n; b++) {
                        if (a1 == b)
                                continue;
                        json_t *na = json_object_get(json_array_get(v, a1), "name");
                        json_t *nb = json_object_get(json_array_get(v, b), "name");
                        size_t la = json_string_length(na), lb = json_string_length(nb);
                        const char *sa = json_string_value(na), *sb = json_string_value(nb);
                        if (a1 < b && la == lb && memcmp(sa, sb, la) == 0)
                                return mcp_refuse(ret_problem, "invalid argument '%s[%zu].name': \"%s\" is given twice", name, b,
                                                  mcp_quote(&(McpQuote) {}, sb, lb));
                        if (lb > la && memcmp(sa, sb, la) == 0 && sb[la] == '/')
                                return mcp_refuse(ret_problem, "invalid argument '%s[%zu].name': \"%s\" is a file, and %s[%zu] "
                                                   "needs it as a directory", name, a1, mcp_quote(&(McpQuote) {}, sa, la), name, b);
                }

        size_t cap = 0;
        json_array_foreach(v, i, f) {
                size_t len = json_string_length(json_object_get(f, "content"));
                cap += file_is_base64(f) ? mcp_base64_decoded_max(len) : len;
        }
        _cleanup_free_ ExecInputFile *files = calloc(n, sizeof(*files));
        _cleanup_free_ char *data = malloc(cap + 1);
        if (!files || !data)
                return -ENOMEM;
        size_t used = 0;
        json_array_foreach(v, i, f) {
                json_t *content = json_object_get(f, "content");
                size_t len = json_string_length(content);
                files[i].name = json_string_value(json_object_get(f, "name"));
                files[i].data = data + used;
                if (file_is_base64(f)) {
                        size_t bad = 0;
                        if (mcp_base64_decode(json_string_value(content), len, data + used, &len, &bad) < 0)
                                return mcp_refuse(ret_problem, "invalid argument '%s[%zu].content': not valid base64 (at offset "
                                                   "%zu of %zu)", name, i, bad, json_string_length(content));
                } else
                        memcpy(data + used, json_string_value(content), len);
                files[i].len = len;
                used += len;
        }
        if (used > l->max_input_bytes)
                return mcp_refuse(ret_problem, "invalid argument '%s': %zu bytes in total, over the limit of %" PRIu64
                                   " bytes (MCP_EXEC_MAX_INPUT_BYTES)", name, used, l->max_input_bytes);
        a->files = TAKE_PTR(files);
        a->files_data = TAKE_PTR(data);
        a->n_files = n;
        return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The schemas. */

/* {type, description}: the argument's description followed by what the limits say. */
static json_t *prop_new(const char *type, const char *description, const char *tail) {
        _cleanup_free_ char *d = NULL;
        if (asprintf(&d, "%s%s", description, tail) < 0)
                return NULL;
        return json_pack("{s:s, s:s}", "type", type, "description", d);
}

static json_t *code_schema_new(const McpLimits *l, const char *description) {
        char tail[64];
        snprintf(tail, sizeof(tail), "at most %" PRIu64 " bytes)", l->max_code_bytes);
        return prop_new("string", description, tail);
}

static json_t *stdin_schema_new(const McpLimits *l, const char *description) {
        char tail[64];
        snprintf(tail, sizeof(tail), "at most %" PRIu64 " bytes)", l->max_stdin_bytes);
        return prop_new("string", description, tail);
}

static json_t *timeout_schema_new(const McpLimits *l, const char *description) {
        char tail[96];
        snprintf(tail, sizeof(tail), "default %" PRIu32 ", at most %" PRIu32 "; larger values are clamped)",
                 l->default_timeout_s, l->max_timeout_s);
        return prop_new("integer", description, tail);
}

static json_t *python_schema_new(const McpLimits *l, const char *description) {
        _cleanup_free_ char *tail = NULL;
        if (asprintf(&tail, "%s (default: the first)", mcp_tools_pythons(l)) < 0)
                return NULL;
        return prop_new("string", description, tail);
}

static json_t *dependencies_schema_new(const McpLimits *l, const char *description) {
        char d[256];
        if (description) /* a tool without a script (session_open) says what they are for */
                snprintf(d, sizeof(d), "%s (at most %d), e.g. [\"requests>=2.31\"]", description, DEPENDENCIES_MAX);
        else
                snprintf(d, sizeof(d),
                         "PEP 508 requirements to install before the run (at most %d), merged with the script's PEP "
                         "723 block; for the same package this list wins, e.g. [\"requests>=2.31\"]",
                         DEPENDENCIES_MAX);
        return json_pack("{s:s, s:{s:s, s:i}, s:i, s:s}", "type", "array", "items", "type", "string", "maxLength",
                         REQUIREMENT_MAX_BYTES, "maxItems", DEPENDENCIES_MAX, "description", d);
}

static json_t *session_schema_new(const McpLimits *l, const char *description) {
        return json_pack("{s:s, s:i, s:s}", "type", "string", "maxLength", MCP_SESSION_HANDLE_MAX_BYTES,
                         "description", description);
}

static json_t *idle_timeout_schema_new(const McpLimits *l, const char *description) {
        return json_pack("{s:s, s:i, s:i, s:s}", "type", "integer", "minimum", 1, "maximum", 604800,
                         "description", description);
}

static json_t *files_schema_new(const McpLimits *l, const char *description) {
        char d[512];
        snprintf(d, sizeof(d),
                 "Files to create in the working directory before the code starts (at most %d, %" PRIu64
                 " bytes in total): name is a relative path (subdirectories are created; no absolute paths, "
                 "no . or .. segments), content is the text, or the bytes in base64 when encoding is \"base64\"",
                 MCP_FILES_MAX, l->max_input_bytes);
        return json_pack("{s:s, s:i, s:s, s:{s:s, s:{s:{s:s, s:i}, s:{s:s}, s:{s:s, s:[s,s]}}, s:[s,s], s:b}}",
                         "type", "array", "maxItems", MCP_FILES_MAX, "description", d,
                         "items", "type", "object", "properties",
                         "name", "type", "string", "maxLength", MCP_FILE_NAME_MAX_BYTES,
                         "content", "type", "string",
                         "encoding", "type", "string", "enum", "utf-8", "base64",
                         "required", "name", "content", "additionalProperties", 0);
}

/* ---------------------------------------------------------------------------------------------
 * The leaves, by kind. */

static const struct {
        int (*check)(const McpLimits *l, const char *name, json_t *v, McpExecArgs *a, char **ret_problem);
        json_t *(*schema_new)(const McpLimits *l, const char *description);
        const char *what; /* for "required, …" */
} leaves[_MCP_ARG_KIND_MAX] = {
        [MCP_ARG_CODE] = { code_check, code_schema_new, "the Python source" },
        [MCP_ARG_STDIN] = { stdin_check, stdin_schema_new, "the data piped to stdin" },
        [MCP_ARG_TIMEOUT] = { timeout_check, timeout_schema_new, "a timeout in seconds" },
        [MCP_ARG_PYTHON] = { python_check, python_schema_new, "the name of an interpreter" },
        [MCP_ARG_DEPENDENCIES] = { dependencies_check, dependencies_schema_new, "an array of requirements" },
        [MCP_ARG_SESSION] = { session_check, session_schema_new, "a handle from session_open" },
        [MCP_ARG_IDLE_TIMEOUT] = { idle_timeout_check, idle_timeout_schema_new, "a number of seconds" },
        [MCP_ARG_FILES] = { files_check, files_schema_new, "an array of files" },
};

int mcp_tool_arg_check(const McpLimits *l, const McpToolArg *arg, json_t *v, McpExecArgs *a, char **ret_problem) {
        /* null is the same as absent for an optional argument; a required one must be there with a value. */
        if (!v || (json_is_null(v) && !arg->required))
                return arg->required ? mcp_refuse(ret_problem, "invalid argument '%s': required, %s", arg->name,
                                                  leaves[arg->kind].what)
                                     : 0;
        return leaves[arg->kind].check(l, arg->name, v, a, ret_problem);
}

json_t *mcp_tool_arg_schema_new(const McpLimits *l, const McpToolArg *arg) {
        return leaves[arg->kind].schema_new(l, arg->description);
}
