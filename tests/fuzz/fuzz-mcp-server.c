/* fuzz-mcp-server.c: the stdio framing, JSON-RPC parsing and dispatch, the MCP lifecycle and every
 * tool's argument validation (exec, execute_python, validate_script, check_environment; code,
 * stdin, timeouts, python, dependencies, files), as the stdio transport drives them: the input is a
 * byte stream cut into lines by one McpLineReader and every line goes to one McpServer, so
 * sequences (initialize, then calls, cancellations, a second initialize) are explored. Every reply
 * must be one JSON-RPC line; every accepted call must be what its request asked for, within the
 * limits; its replies (result with files, structured result, tool error) encode it faithfully. */
#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#endif
#ifdef FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void) (p), (void) (n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void) (p), (void) (n))
#endif

#include "../unit/unit-limits.h"
#include "fuzz.h"
#include "mcp.h"


#define FUZZ_MAX_LINE 1024
#define FUZZ_CHUNK 509 /* feed in pieces, so lines (and oversize lines) straddle reads */

/* ---------------------------------------------------------------------------------------------
 * The harness's own JSON. Parsing every reply back was a fifth of the run time, nearly all of it
 * ASan's malloc (a stack trace per jansson value). jansson is Debian's uninstrumented library, so
 * ASan never checked its reads anyway: what the harness parses for its checks is allocated from a
 * bump arena, emptied (and poisoned) after each check. The server's own jansson calls, made outside
 * arena_begin()…arena_end(), still get malloc, with ASan and LeakSanitizer watching them. */
#define ARENA_BYTES (4u << 20)
static _Alignas(16) unsigned char arena[ARENA_BYTES];
static size_t arena_used;
static bool arena_on;

static void *arena_malloc(size_t n) {
        if (!arena_on)
                return malloc(n);
        size_t k = (n + 15) & ~(size_t) 15;
        if (k < n || k > sizeof(arena) - arena_used)
                return malloc(n);
        void *p = arena + arena_used;
        arena_used += k;
        ASAN_UNPOISON_MEMORY_REGION(p, n);
        return p;
}

static void arena_free(void *p) {
        if ((unsigned char *) p >= arena && (unsigned char *) p < arena + sizeof(arena))
                return; /* emptied at arena_end() */
        free(p);
}

static void arena_begin(void) {
        static bool installed;
        if (!installed) {
                json_set_alloc_funcs(arena_malloc, arena_free);
                ASAN_POISON_MEMORY_REGION(arena, sizeof(arena));
                installed = true;
        }
        FUZZ_CHECK(!arena_on);
        arena_on = true;
}

static void arena_end(void) {
        ASAN_POISON_MEMORY_REGION(arena, arena_used);
        arena_used = 0;
        arena_on = false;
}

static bool string_is(const json_t *v, const char *p, size_t n) {
        return json_is_string(v) && json_string_length(v) == n && (n == 0 || memcmp(json_string_value(v), p, n) == 0);
}

/* Within arena_begin(): the reply parsed; it is one JSON-RPC message. */
static json_t *reply_parse(const char *reply) {
        FUZZ_CHECK(reply);
        FUZZ_CHECK(!strchr(reply, '\n'));
        json_error_t err;
        json_t *j = json_loads(reply, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        FUZZ_CHECK(j);
        FUZZ_CHECK(json_is_object(j));
        json_t *v = json_object_get(j, "jsonrpc");
        FUZZ_CHECK(json_is_string(v) && strcmp(json_string_value(v), "2.0") == 0);
        FUZZ_CHECK(json_object_get(j, "result") || json_object_get(j, "error"));
        json_t *id = json_object_get(j, "id");
        FUZZ_CHECK(!id || json_is_string(id) || json_is_integer(id));
        return j;
}

/* Replies repeat: a mutated session mostly sends the lines its parent sent, and gets the same
 * replies. A reply byte for byte equal to one already parsed needs no second parse (jansson copies
 * every byte of a token with memcpy, which ASan intercepts: parsing stayed a sixth of the run time
 * with the arena). Remembered in static memory, compared in full (no hash trusted), so nothing is
 * allocated across inputs and a reply never checked is always parsed. */
#define SEEN_SLOTS 8192
#define SEEN_SMALL_BYTES 256
static struct {
        size_t len; /* 0: empty */
        char data[SEEN_SMALL_BYTES];
} seen_small[SEEN_SLOTS];
static size_t seen_big_len;
static char seen_big[32768]; /* the last large reply (the tool catalogue, mostly) */

/* Where reply[0..n) is remembered: its slot, or NULL if it is too large to remember. */
static void *seen_slot(const char *reply, size_t n, size_t **ret_len) {
        if (n > SEEN_SMALL_BYTES) {
                *ret_len = &seen_big_len;
                return n <= sizeof(seen_big) ? seen_big : NULL;
        }
        uint64_t h = 1469598103934665603u; /* FNV-1a picks the slot; the bytes decide */
        for (size_t i = 0; i < n; i++)
                h = (h ^ (unsigned char) reply[i]) * 1099511628211u;
        size_t slot = (size_t) (h ^ (h >> 32)) % SEEN_SLOTS;
        *ret_len = &seen_small[slot].len;
        return seen_small[slot].data;
}

static void check_reply(const char *reply) {
        FUZZ_CHECK(reply);
        size_t n = strlen(reply), *seen_len;
        char *seen = seen_slot(reply, n, &seen_len);
        if (seen && n > 0 && *seen_len == n && memcmp(seen, reply, n) == 0)
                return;
        arena_begin();
        json_decref(reply_parse(reply));
        arena_end();
        if (seen) {
                memcpy(seen, reply, n);
                *seen_len = n;
        }
}

/* ---------------------------------------------------------------------------------------------
 * Accepted calls. The request line is parsed again here (as the server did: integers beyond 64
 * bits as numbers), and what the server accepted is compared with what was asked. */

static const char *const exec_fields[] = { "code", "timeout_s", "stdin", "python", "files", NULL };
static const char *const execute_fields[] = { "script", "dependencies", "timeout_seconds", "python", "files", NULL };
static const char *const validate_fields[] = { "script", "dependencies", "python", NULL };
static const char *const no_fields[] = { NULL };

static const struct ToolSpec {
        const char *name;
        McpTool tool;
        const char *const *fields;
        const char *code, *timeout; /* their names, or NULL */
} tool_specs[] = {
        { "exec", MCP_TOOL_EXEC, exec_fields, "code", "timeout_s" },
        { "execute_python", MCP_TOOL_EXECUTE_PYTHON, execute_fields, "script", "timeout_seconds" },
        { "validate_script", MCP_TOOL_VALIDATE_SCRIPT, validate_fields, "script", NULL },
        { "check_environment", MCP_TOOL_CHECK_ENVIRONMENT, no_fields, NULL, NULL },
};

static bool field_known(const struct ToolSpec *t, const char *key) {
        for (const char *const *f = t->fields; *f; f++)
                if (strcmp(*f, key) == 0)
                        return true;
        return false;
}

static bool python_configured(const char *name) {
        size_t n = strlen(name);
        for (const char *p = unit_limits.pythons; *p;) {
                size_t k = strcspn(p, ",");
                if (k == n && memcmp(p, name, n) == 0)
                        return true;
                p += k + (p[k] == ',');
        }
        return false;
}

static bool blank(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!memchr(" \t\n\r\f\v", s[i], 6))
                        return false;
        return true;
}

/* mcp.h's rule for input file names, written out again. */
static bool file_name_valid(const char *s, size_t n) {
        if (n == 0 || n > MCP_FILE_NAME_MAX_BYTES || s[0] == '/')
                return false;
        size_t depth = 0, seg = 0;
        for (size_t i = 0; i <= n; i++) {
                if (i < n && s[i] != '/') {
                        if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
                                return false;
                        /* C1 controls U+0080..U+009F */
                        if ((unsigned char) s[i] == 0xc2 && i + 1 < n && (unsigned char) s[i + 1] >= 0x80 &&
                            (unsigned char) s[i + 1] <= 0x9f)
                                return false;
                        seg++;
                        continue;
                }
                if (seg == 0 || (seg == 1 && s[i - 1] == '.') || (seg == 2 && s[i - 1] == '.' && s[i - 2] == '.'))
                        return false;
                if (++depth > MCP_FILE_DEPTH_MAX)
                        return false;
                seg = 0;
        }
        return strcmp(s, EXEC_SCRIPT_NAME) != 0 && strcmp(s, EXEC_LAUNCHER_NAME) != 0;
}

/* Within arena_begin(). */
static void check_files(const McpExecArgs *a, json_t *files) {
        size_t n = json_is_array(files) ? json_array_size(files) : 0;
        FUZZ_CHECK(a->n_files == n);
        FUZZ_CHECK(n <= MCP_FILES_MAX);
        FUZZ_CHECK(n == 0 || (a->files && a->files_data));
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
                const ExecInputFile *f = &a->files[i];
                json_t *jf = json_array_get(files, i);
                json_t *name = json_object_get(jf, "name"), *content = json_object_get(jf, "content");
                json_t *enc = json_object_get(jf, "encoding");
                FUZZ_CHECK(f->name && string_is(name, f->name, strlen(f->name)));
                FUZZ_CHECK(file_name_valid(f->name, strlen(f->name)));
                char *why = mcp_file_name_check(f->name, strlen(f->name));
                FUZZ_CHECK(!why);
                /* The files lie one after another in files_data. */
                FUZZ_CHECK(f->data == a->files_data + off);
                off += f->len;
                FUZZ_CHECK(json_is_string(content));
                const char *c = json_string_value(content);
                size_t clen = json_string_length(content);
                if (string_is(enc, "base64", 6)) {
                        size_t sextets = 0;
                        for (size_t k = 0; k < clen; k++)
                                sextets += !memchr(" \t\r\n=", c[k], 5);
                        FUZZ_CHECK(f->len == sextets * 6 / 8);
                } else {
                        FUZZ_CHECK(!enc || json_is_null(enc) || string_is(enc, "utf-8", 5));
                        FUZZ_CHECK(f->len == clen && (clen == 0 || memcmp(f->data, c, clen) == 0));
                }
                /* No two files with one name, no file where another needs a directory. */
                for (size_t j = 0; j < i; j++) {
                        const char *x = a->files[j].name, *y = f->name;
                        size_t lx = strlen(x), ly = strlen(y);
                        FUZZ_CHECK(strcmp(x, y) != 0);
                        FUZZ_CHECK(!(lx < ly && memcmp(x, y, lx) == 0 && y[lx] == '/'));
                        FUZZ_CHECK(!(ly < lx && memcmp(x, y, ly) == 0 && x[ly] == '/'));
                }
        }
        FUZZ_CHECK(off <= unit_limits.max_input_bytes);
}

/* Within arena_begin(). */
static void check_dependencies(const McpExecArgs *a, json_t *deps) {
        if (!deps || json_is_null(deps)) {
                FUZZ_CHECK(!a->dependencies);
                return;
        }
        FUZZ_CHECK(a->dependencies);
        json_t *d = a->dependencies;
        FUZZ_CHECK(json_is_array(d));
        FUZZ_CHECK(json_array_size(d) <= 64);
        size_t i;
        json_t *e;
        json_array_foreach(d, i, e) {
                FUZZ_CHECK(json_is_string(e));
                const char *s = json_string_value(e);
                size_t n = json_string_length(e);
                FUZZ_CHECK(n > 0 && n <= 256 && !blank(s, n) && strlen(s) == n && !strpbrk(s, "\r\n"));
        }
        FUZZ_CHECK(json_equal(d, deps));
}

static void check_call_args(const McpCall *call, const char *line, size_t len) {
        const McpExecArgs *a = mcp_call_args(call);
        FUZZ_CHECK(mcp_call_id_key(call));

        arena_begin();
        size_t flags = JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY;
        json_error_t err;
        bool big = false;
        json_t *m = json_loadb(line, len, flags, &err);
        if (!m) {
                m = json_loadb(line, len, flags | JSON_DECODE_INT_AS_REAL, &err);
                big = true;
        }
        FUZZ_CHECK(json_is_object(m));
        /* Names compare whole: a NUL inside one is no match for the name before it. */
        FUZZ_CHECK(string_is(json_object_get(m, "jsonrpc"), "2.0", 3));
        FUZZ_CHECK(string_is(json_object_get(m, "method"), "tools/call", 10));
        json_t *params = json_object_get(m, "params");
        json_t *name = json_object_get(params, "name");
        FUZZ_CHECK(json_is_string(name));
        const struct ToolSpec *t = NULL;
        for (size_t i = 0; i < sizeof(tool_specs) / sizeof(tool_specs[0]); i++)
                if (string_is(name, tool_specs[i].name, strlen(tool_specs[i].name)))
                        t = &tool_specs[i];
        FUZZ_CHECK(t);
        FUZZ_CHECK(a->tool == t->tool);

        json_t *args = json_object_get(params, "arguments");
        FUZZ_CHECK(!args || json_is_object(args));
        const char *key;
        json_t *v;
        json_object_foreach(args, key, v)
                FUZZ_CHECK(field_known(t, key));

        v = t->code ? json_object_get(args, t->code) : NULL;
        if (t->code) {
                FUZZ_CHECK(a->code && string_is(v, a->code, a->code_len));
                FUZZ_CHECK(a->code_len > 0 && a->code_len <= unit_limits.max_code_bytes);
                FUZZ_CHECK(!memchr(a->code, '\0', a->code_len) && !blank(a->code, a->code_len));
        } else
                FUZZ_CHECK(!a->code && a->code_len == 0);

        v = json_object_get(args, "stdin"); /* exec's only */
        if (v && !json_is_null(v)) {
                FUZZ_CHECK(a->stdin_len <= unit_limits.max_stdin_bytes);
                FUZZ_CHECK(a->stdin_data && string_is(v, a->stdin_data, a->stdin_len));
        } else
                FUZZ_CHECK(!a->stdin_data && a->stdin_len == 0);

        uint32_t want = unit_limits.default_timeout_s;
        v = t->timeout ? json_object_get(args, t->timeout) : NULL;
        if (v && !json_is_null(v)) {
                FUZZ_CHECK(json_is_number(v));
                double d = json_number_value(v);
                want = d == 0 ? unit_limits.default_timeout_s
                       : d < 1 ? 1
                       : d > unit_limits.max_timeout_s ? unit_limits.max_timeout_s
                                                  : (uint32_t) d;
        }
        FUZZ_CHECK(a->timeout_s >= 1 && a->timeout_s <= unit_limits.max_timeout_s);
        FUZZ_CHECK(a->timeout_s == want);

        v = json_object_get(args, "python");
        if (v && !json_is_null(v))
                FUZZ_CHECK(a->python && string_is(v, a->python, strlen(a->python)) && python_configured(a->python));
        else
                FUZZ_CHECK(!a->python);

        check_dependencies(a, json_object_get(args, "dependencies"));
        check_files(a, json_object_get(args, "files"));

        json_t *meta = json_object_get(params, "_meta");
        json_t *token = json_is_object(meta) ? json_object_get(meta, "progressToken") : NULL;
        if (!big)
                FUZZ_CHECK(!mcp_call_progress_token(call) == !(json_is_string(token) || json_is_integer(token)));
        json_decref(m);
        arena_end();
}

/* Within arena_begin(): a base64 string that decodes to exactly p[0..n). */
static bool base64_is(const json_t *v, const char *p, size_t n) {
        if (!json_is_string(v))
                return false;
        size_t len = json_string_length(v), got = 0;
        char *out = malloc(mcp_base64_decoded_max(len));
        bool ok = out && mcp_base64_decode(json_string_value(v), len, out, &got, NULL) == 0 && got == n &&
                  (n == 0 || memcmp(out, p, n) == 0);
        free(out);
        return ok;
}

/* The run's result, with the input files as its outputs (every third one not returned): stdout and
 * stderr come back as they were (valid UTF-8 already), the files are listed in order, and each
 * returned one is a content item holding exactly its bytes. */
static void check_result(const McpCall *call) {
        const McpExecArgs *a = mcp_call_args(call);
        ExecOutputFile out[MCP_FILES_MAX];
        size_t returned = 0;
        for (size_t i = 0; i < a->n_files; i++) {
                const ExecInputFile *f = &a->files[i];
                out[i] = (ExecOutputFile) {
                        .name = f->name,
                        .bytes = f->len,
                        .mime = file_mime(f->data, f->len, true, f->name),
                        .returned = i % 3 != 2,
                        .data = f->data,
                        .len = f->len,
                };
                returned += out[i].returned;
        }
        json_t *extra = NULL;
        if (a->tool == MCP_TOOL_EXECUTE_PYTHON) {
                json_t *deps = a->dependencies ? json_incref(a->dependencies) : json_array();
                extra = json_pack("{s:s, s:s, s:o, s:n}", "python", a->python ? a->python : "python3",
                                  "python_version", "3.11.2", "dependencies", deps, "environment");
                FUZZ_CHECK(extra);
        }
        ExecResult r = {
                .stdout_data = a->code,
                .stdout_len = a->code_len,
                .stderr_data = a->stdin_data,
                .stderr_len = a->stdin_len,
                .exit_code = -9,
                .signal = "SIGKILL",
                .limits = "rlimit",
                .extra = extra,
                .files = out,
                .n_files = a->n_files,
                .run_id = "0123456789abcdef",
        };
        char *reply = mcp_call_reply_result(call, &r);
        json_decref(extra);

        arena_begin();
        json_t *j = reply_parse(reply);
        json_t *result = json_object_get(j, "result");
        FUZZ_CHECK(json_is_false(json_object_get(result, "isError")));
        json_t *sc = json_object_get(result, "structuredContent");
        FUZZ_CHECK(string_is(json_object_get(sc, "stdout"), a->code, a->code_len));
        FUZZ_CHECK(string_is(json_object_get(sc, "stderr"), a->stdin_data, a->stdin_len));
        json_t *unbounded = json_object_get(sc, "unbounded"); /* limits "rlimit": issue 15 #6 */
        FUZZ_CHECK(json_is_array(unbounded) && json_array_size(unbounded) == 4 &&
                   string_is(json_array_get(unbounded, 1), "memfd", 5));
        json_t *listed = json_object_get(sc, "files");
        FUZZ_CHECK(json_is_array(listed) && json_array_size(listed) == a->n_files);
        json_t *content = json_object_get(result, "content");
        FUZZ_CHECK(json_is_array(content) && json_array_size(content) == 1 + returned);
        /* The text item is the structured content, as JSON. */
        json_t *text = json_object_get(json_array_get(content, 0), "text");
        FUZZ_CHECK(json_is_string(text));
        json_error_t err;
        json_t *sc2 = json_loadb(json_string_value(text), json_string_length(text), JSON_ALLOW_NUL, &err);
        FUZZ_CHECK(sc2 && json_equal(sc, sc2));
        json_decref(sc2);
        for (size_t i = 0, k = 1; i < a->n_files; i++) {
                /* Listed as shown (issue 15): input names hold no controls, but may hold a '\\'. */
                char *shown = mcp_file_name_display(out[i].name);
                FUZZ_CHECK(shown);
                bool same = string_is(json_object_get(json_array_get(listed, i), "name"), shown, strlen(shown));
                free(shown);
                FUZZ_CHECK(same);
                if (!out[i].returned)
                        continue;
                json_t *item = json_array_get(content, k++);
                if (mime_is_image(out[i].mime)) {
                        FUZZ_CHECK(string_is(json_object_get(item, "type"), "image", 5));
                        FUZZ_CHECK(base64_is(json_object_get(item, "data"), out[i].data, out[i].len));
                        continue;
                }
                json_t *res = json_object_get(item, "resource");
                FUZZ_CHECK(string_is(json_object_get(item, "type"), "resource", 8));
                FUZZ_CHECK(string_is(json_object_get(res, "mimeType"), out[i].mime, strlen(out[i].mime)));
                if (file_is_text(out[i].data, out[i].len))
                        FUZZ_CHECK(string_is(json_object_get(res, "text"), out[i].data, out[i].len));
                else
                        FUZZ_CHECK(base64_is(json_object_get(res, "blob"), out[i].data, out[i].len));
        }
        json_decref(j);
        arena_end();
        free(reply);
}

/* validate_script's and check_environment's result: one JSON object, as structured content and
 * as text. */
static void check_structured(const McpCall *call) {
        const McpExecArgs *a = mcp_call_args(call);
        json_t *o = json_pack("{s:b, s:s, s:O?, s:[{s:n, s:s, s:s, s:s%}]}", "valid", 0, "python",
                              a->python ? a->python : "python3", "dependencies", a->dependencies, "problems",
                              "line", "check", "source", "message", "an echo", "text", a->code ? a->code : "",
                              a->code_len);
        FUZZ_CHECK(o);
        char *reply = mcp_call_reply_structured(call, o);

        arena_begin();
        json_t *j = reply_parse(reply);
        json_t *result = json_object_get(j, "result");
        FUZZ_CHECK(json_equal(json_object_get(result, "structuredContent"), o));
        json_t *text = json_object_get(json_array_get(json_object_get(result, "content"), 0), "text");
        FUZZ_CHECK(json_is_string(text));
        json_error_t err;
        json_t *o2 = json_loads(json_string_value(text), 0, &err);
        FUZZ_CHECK(o2 && json_equal(o, o2));
        json_decref(o2);
        json_decref(j);
        arena_end();
        json_decref(o);
        free(reply);
}

static void handle_line(McpServer *s, const char *line, size_t len) {
        McpAction a;
        FUZZ_CHECK(mcp_server_handle(s, line, len, &a) == 0);
        switch (a.kind) {
        case MCP_ACTION_NONE:
                break;
        case MCP_ACTION_REPLY:
                check_reply(a.reply);
                FUZZ_CHECK(!a.is_initialize || mcp_server_protocol_version(s));
                break;
        case MCP_ACTION_CANCEL:
                FUZZ_CHECK(a.cancel_key);
                break;
        case MCP_ACTION_HOLD:
                FUZZ_CHECK(false); /* a server never held (mcp_server_hold()) holds nothing */
                break;
        case MCP_ACTION_TASK: {
                /* Every answer a task request can get: none of that id, and one of each status. */
                FUZZ_CHECK(a.task);
                bool list = mcp_task_request_op(a.task) == MCP_TASK_LIST;
                FUZZ_CHECK(list == !mcp_task_request_task_id(a.task));
                char *reply = list ? mcp_task_reply_list(a.task, NULL, 0) : mcp_task_reply(a.task, NULL, false);
                check_reply(reply);
                free(reply);
                for (McpTaskStatus st = MCP_TASK_WORKING; st <= MCP_TASK_CANCELLED; st++) {
                        McpTaskView v = { .id = "0123456789abcdef0123456789abcdef", .status = st,
                                          .created_usec = 1, .updated_usec = 2, .ttl_msec = 3,
                                          .reply = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}" };
                        reply = list ? mcp_task_reply_list(a.task, &v, 1) : mcp_task_reply(a.task, &v, st != MCP_TASK_WORKING);
                        check_reply(reply);
                        free(reply);
                }
                break;
        }
        case MCP_ACTION_CALL: {
                /* A 2026-07-28 call stands alone: no initialize before it. */
                FUZZ_CHECK(mcp_server_protocol_version(s) || a.is_modern);
                check_call_args(a.call, line, len);
                McpTool tool = mcp_call_args(a.call)->tool;
                if (tool == MCP_TOOL_EXEC || tool == MCP_TOOL_EXECUTE_PYTHON)
                        check_result(a.call);
                else
                        check_structured(a.call);
                char *reply = mcp_call_reply_tool_error(a.call, "the run queue is full");
                check_reply(reply);
                free(reply);
                if (mcp_call_is_task(a.call, NULL)) {
                        McpTaskView v = { .id = "0123456789abcdef0123456789abcdef", .created_usec = 1,
                                          .updated_usec = 1, .ttl_msec = 1000 };
                        reply = mcp_call_reply_task_created(a.call, &v);
                        check_reply(reply);
                        free(reply);
                        reply = mcp_call_reply_error(a.call, MCP_ERROR_INVALID_REQUEST, "too many tasks");
                        check_reply(reply);
                        free(reply);
                }
                break;
        }
        }
        mcp_action_done(&a);
}

/* A session's only state is whether it was initialized. One server, kept across inputs, serves
 * every input until a session initializes it; then it is replaced at the end of that same input,
 * so every input starts from a fresh session (a crash reproduces from its input alone) and every
 * input frees as many blocks as it allocates (the old server and its protocol version against the
 * new server and that version). libFuzzer runs an input again, then a LeakSanitizer pass, whenever
 * one ends with more mallocs than frees; with the replacement at the start of the next input (as
 * before) that happened for most sessions, and a leak of the next input could hide behind the
 * frees of the old server. Now a surplus means a leak. */
static McpServer *server;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (!server)
                server = mcp_server_new(&unit_limits, "0.0.0-fuzz");
        McpServer *s = server;
        FUZZ_CHECK(s);
        McpLineReader lr;
        mcp_line_reader_init(&lr, FUZZ_MAX_LINE);

        const char *line;
        size_t len;
        McpLineStatus st;
        for (size_t off = 0; off < size; off += FUZZ_CHUNK) {
                size_t n = size - off < FUZZ_CHUNK ? size - off : FUZZ_CHUNK;
                FUZZ_CHECK(mcp_line_reader_feed(&lr, (const char *) data + off, n) == 0);
                while ((st = mcp_line_reader_next(&lr, &line, &len)) != MCP_LINE_NONE) {
                        if (st == MCP_LINE_OK) {
                                FUZZ_CHECK(len <= FUZZ_MAX_LINE);
                                handle_line(s, line, len);
                        }
                }
                /* Memory stays bounded whatever the stream: what is kept is at most one line. */
                FUZZ_CHECK(lr.buf.len - lr.start <= FUZZ_MAX_LINE);
        }
        while ((st = mcp_line_reader_finish(&lr, &line, &len)) != MCP_LINE_NONE)
                if (st == MCP_LINE_OK)
                        handle_line(s, line, len);

        /* The oversize-line error is well-formed too. */
        if (size > 0 && data[0] == '!') {
                char *reply = mcp_error_reply_new(MCP_ERROR_INVALID_REQUEST, "message too long");
                check_reply(reply);
                free(reply);
        }
        mcp_line_reader_done(&lr);

        if (mcp_server_protocol_version(server)) {
                server = mcp_server_free(server);
                server = mcp_server_new(&unit_limits, "0.0.0-fuzz");
                FUZZ_CHECK(server);
        }
        return 0;
}
