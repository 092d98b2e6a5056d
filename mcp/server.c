/* server.c: JSON-RPC 2.0 message handling and the MCP lifecycle of one session. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "mcp-internal.h"

/* Versions we speak through initialize (2025-11-25 … 2024-11-05); a request for any other gets the
 * newest, as the lifecycle's version negotiation says (the client then decides whether it can
 * continue). */
static const char *const protocol_versions[] = {
        "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
};

/* Versions whose requests stand alone, each naming its version in _meta (2026-07-28
 * basic/versioning.mdx: no handshake). server/discover lists these first, then the ones above. */
static const char *const protocol_versions_modern[] = {
        "2026-07-28",
};

/* The reserved _meta keys of a 2026-07-28 request and result (schema.mdx). */
#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"

/* How long a 2026 client may keep tools/list and server/discover (ttlMs, SEP-2549). The catalogue
 * changes only with the daemon's configuration (a restart), and a restarted daemon is a new
 * process whose clients re-discover; five minutes bounds how long a redeploy with other packages
 * goes unseen behind a load balancer. "public": the answer is the same for every client. */
#define LIST_TTL_MSEC 300000

/* What a model reads first (initialize, server/discover): when to use which tool, in under 1,500
 * characters (issue 30.4). It said once that nothing survives a call, and models never tried a
 * session. The details are in the tools' descriptions. */
static const char instructions[] =
        "mcp-execd runs Python code in locked-down sandboxes with no network access.\n"
        "- exec and execute_python run code in a fresh sandbox: nothing survives the call (no files, "
        "variables or processes). Input files go in `files`; files the code writes to outputs/ come back "
        "(images as images; plt.show() saves matplotlib figures there).\n"
        "- To keep state across calls (variables, imports, data loaded once, files in /tmp), open a session "
        "with session_open and pass its handle as `session` to exec or execute_python; close it with "
        "session_close. A session runs one call at a time and ends when idle too long.\n"
        "- execute_python also takes `dependencies` (pip-style requirements, installed once and cached, where "
        "the server has a package source) and `python` (another configured interpreter); check_environment "
        "says what this server has.\n"
        "- Every call has a timeout (timeout_s, up to the server's maximum). Longer work belongs in a task, "
        "if your client supports MCP tasks, or in several calls of one session.\n"
        "- A non-zero exit_code, timed_out=true or truncated=true is a normal result: read stdout and stderr.";

struct McpServer {
        McpLimits limits;
        char *python_version;
        char *packages;
        char *limits_by;
        char *pythons;
        char *sources;
        char *server_version;
        char *protocol_version;
        json_t *tools_list;
        json_t *stamp; /* what every 2026-07-28 result carries: resultType and _meta.serverInfo */
        char principal[MCP_PRINCIPAL_MAX + 1]; /* mcp_server_set_principal() */
        bool held; /* mcp_server_hold() */
        char *refused; /* mcp_server_refuse(): held requests are answered with this, not held */
};

/* tools_list: a catalogue to share (never modified: tools/list answers a deep copy), or NULL to build
 * one. */
static McpServer *server_new(const McpLimits *limits, const char *server_version, json_t *tools_list) {
        _cleanup_(mcp_server_freep) McpServer *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->limits = *limits;
        s->python_version = limits->python_version ? strdup(limits->python_version) : NULL;
        s->packages = limits->packages ? strdup(limits->packages) : NULL;
        s->limits_by = strdup(limits->limits_by ? limits->limits_by : "rlimit");
        s->pythons = limits->pythons ? strdup(limits->pythons) : NULL;
        s->sources = limits->sources ? strdup(limits->sources) : NULL;
        s->limits.pythons = s->pythons;
        s->limits.sources = s->sources;
        s->server_version = strdup(server_version);
        s->limits.python_version = s->python_version;
        s->limits.packages = s->packages;
        s->limits.limits_by = s->limits_by;
        s->tools_list = tools_list ? json_incref(tools_list) : mcp_tools_list_new(&s->limits);
        s->stamp = s->server_version ? json_pack("{s:s, s:{s:{s:s, s:s, s:s}}}", "resultType", "complete", "_meta",
                                                 META_SERVER_INFO, "name", "mcp-execd", "title",
                                                 "mcp-execd: sandboxed Python execution", "version",
                                                 s->server_version)
                                     : NULL;
        if (!s->server_version || !s->limits_by || !s->tools_list || !s->stamp ||
            (limits->python_version && !s->python_version) || (limits->packages && !s->packages) ||
            (limits->pythons && !s->pythons) || (limits->sources && !s->sources))
                return NULL;
        return TAKE_PTR(s);
}

McpServer *mcp_server_free(McpServer *s) {
        if (!s)
                return NULL;
        free(s->python_version);
        free(s->packages);
        free(s->limits_by);
        free(s->pythons);
        free(s->sources);
        free(s->server_version);
        free(s->protocol_version);
        free(s->refused);
        json_decref(s->tools_list);
        json_decref(s->stamp);
        free(s);
        return NULL;
}

McpServer *mcp_server_new(const McpLimits *limits, const char *server_version) {
        return server_new(limits, server_version, NULL);
}

/* One per HTTP session: the catalogue (about 80 KiB of jansson nodes, measured) is the template's,
 * shared, so thousands of sessions cost a few hundred bytes each. */
McpServer *mcp_server_new_like(const McpServer *s) {
        return server_new(&s->limits, s->server_version, s->tools_list);
}

void mcp_server_set_principal(McpServer *s, const char *name) {
        snprintf(s->principal, sizeof(s->principal), "%s", name ?: "");
}

void mcp_server_hold(McpServer *s) {
        s->held = true;
}

int mcp_server_refuse(McpServer *s, const char *why) {
        char *w = strdup(why);
        if (!w)
                return -ENOMEM;
        free(s->refused);
        s->refused = w;
        return 0;
}

int mcp_server_release(McpServer *s, const char *python_version, const char *packages) {
        _cleanup_free_ char *v = python_version ? strdup(python_version) : NULL,
                            *p = packages ? strdup(packages) : NULL;
        if ((python_version && !v) || (packages && !p))
                return -ENOMEM;
        McpLimits l = s->limits;
        l.python_version = v;
        l.packages = p;
        json_t *list = mcp_tools_list_new(&l);
        if (!list)
                return -ENOMEM;
        json_decref(s->tools_list);
        s->tools_list = list;
        free(s->python_version);
        free(s->packages);
        s->python_version = TAKE_PTR(v);
        s->packages = TAKE_PTR(p);
        s->limits.python_version = s->python_version;
        s->limits.packages = s->packages;
        s->held = false;
        return 0;
}

const char *mcp_server_protocol_version(const McpServer *s) {
        return s->protocol_version;
}

/* An error reply; id may be NULL when it could not be read (then it is omitted, which the
 * 2025-11-25 schema allows and SDK clients tolerate best). */
char *mcp_reply_error(json_t *id, int code, const char *message) {
        /* A message may quote the client's bytes (jansson's parse errors say "near '…'"), which need
         * not be UTF-8; json_pack() would refuse them and a parse error became "out of memory"
         * (found by fuzz-mcp-server). */
        _cleanup_free_ char *fixed = utf8_repair(message, strlen(message), NULL);
        if (!fixed)
                return NULL;
        _cleanup_(json_decrefp) json_t *m = json_pack("{s:s, s:{s:i, s:s}}", "jsonrpc", "2.0", "error",
                                                      "code", code, "message", fixed);
        if (!m)
                return NULL;
        if (id && json_object_set(m, "id", id) < 0)
                return NULL;
        return mcp_json_dump(m);
}

/* ret answers with an error reply: 0, or -ENOMEM when it could not be made. */
static int action_error(McpAction *ret, json_t *id, int code, const char *message) {
        ret->reply = mcp_reply_error(id, code, message);
        return ret->reply ? 0 : -ENOMEM;
}

char *mcp_error_reply_new(int code, const char *message) {
        return mcp_reply_error(NULL, code, message);
}

static char *reply_errorf(json_t *id, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static char *reply_errorf(json_t *id, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = mcp_problemv(fmt, ap);
        va_end(ap);
        return msg ? mcp_reply_error(id, code, msg) : NULL;
}

void mcp_action_done(McpAction *a) {
        free(a->reply);
        mcp_call_free(a->call);
        free(a->cancel_key);
        mcp_task_request_free(a->task);
        *a = (McpAction) {};
}

const McpExecArgs *mcp_call_args(const McpCall *c) {
        return &c->args;
}

const char *mcp_call_id_key(const McpCall *c) {
        return c->id_key;
}

char *mcp_call_reply_oom(McpCall *c) {
        return TAKE_PTR(c->reply_oom);
}

const char *mcp_call_principal(const McpCall *c) {
        return c->principal;
}

const char *mcp_call_progress_token(const McpCall *c) {
        return c->progress_token;
}

void mcp_call_set_lb_body_read(McpCall *c, uint64_t read_bytes, uint64_t body_bytes) {
        c->lb_body_read = read_bytes;
        c->lb_body_size = body_bytes;
}

bool mcp_call_lb_body_partial(const McpCall *c, uint64_t *ret_read, uint64_t *ret_size) {
        if (c->lb_body_read >= c->lb_body_size)
                return false;
        *ret_read = c->lb_body_read;
        *ret_size = c->lb_body_size;
        return true;
}

McpCall *mcp_call_free(McpCall *c) {
        if (!c)
                return NULL;
        json_decref(c->id);
        json_decref(c->arguments);
        free(c->id_key);
        free(c->progress_token);
        free(c->reply_oom);
        json_decref(c->stamp);
        mcp_exec_args_done(&c->args);
        free(c);
        return NULL;
}

static const char *negotiate(const char *requested) {
        for (size_t i = 0; i < ELEMENTSOF(protocol_versions); i++)
                if (strcmp(requested, protocol_versions[i]) == 0)
                        return protocol_versions[i];
        return protocol_versions[0];
}

static int handle_initialize(McpServer *s, json_t *id, json_t *params, McpAction *ret) {
        if (s->protocol_version) {
                return action_error(ret, id, MCP_ERROR_INVALID_REQUEST,
                                    "initialize: this session is already initialized");
        }
        json_t *v = params ? json_object_get(params, "protocolVersion") : NULL;
        if (!json_is_string(v)) {
                return action_error(ret, id, MCP_ERROR_INVALID_PARAMS,
                                    "initialize: params.protocolVersion must be a string");
        }
        /* An unknown version (one with a NUL inside too) gets our latest, as the spec asks. */
        const char *version = negotiate(mcp_json_name(v) ? json_string_value(v) : "");
        json_t *result = json_pack(
                "{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}",
                "protocolVersion", version,
                "capabilities", "tools", "listChanged", 0,
                "serverInfo", "name", "mcp-execd", "title", "mcp-execd: sandboxed Python execution",
                "version", s->server_version,
                "instructions", instructions);
        if (!result)
                return -ENOMEM;
        /* 2025-11-25's experimental tasks (basic/utilities/tasks.mdx): tools/call may be a task, and
         * tasks can be listed and cancelled. Older versions have no tasks. */
        if (strcmp(version, "2025-11-25") == 0 &&
            json_object_set_new(json_object_get(result, "capabilities"), "tasks",
                                json_pack("{s:{}, s:{}, s:{s:{s:{}}}}", "list", "cancel", "requests", "tools",
                                          "call")) < 0) {
                json_decref(result);
                return -ENOMEM;
        }
        ret->reply = mcp_reply_result(id, result, NULL);
        if (!ret->reply)
                return -ENOMEM;
        s->protocol_version = strdup(version);
        if (!s->protocol_version)
                return -ENOMEM;
        ret->is_initialize = true;
        return 0;
}

/* stamp: NULL for a 2025-era call, else what each of its results carries. as_task: a 2026-07-28
 * request that declared the tasks extension (the server then makes every call a task, SEP-2663);
 * a 2025 call asks with params.task. */
static int handle_tools_call(McpServer *s, json_t *id, json_t *params, json_t *stamp, bool as_task,
                             McpAction *ret) {
        json_t *name = params ? json_object_get(params, "name") : NULL;
        if (!json_is_string(name)) {
                return action_error(ret, id, MCP_ERROR_INVALID_PARAMS, "tools/call: params.name must be a string");
        }
        const McpToolDef *tool = mcp_json_name(name) ? mcp_tool_find(json_string_value(name)) : NULL;
        if (!tool) {
                McpQuote q;
                ret->reply = reply_errorf(id, MCP_ERROR_INVALID_PARAMS, "Unknown tool: %s%s",
                                          mcp_quote(&q, json_string_value(name), json_string_length(name)),
                                          mcp_json_name(name) ? "" : " (followed by a NUL character)");
                return ret->reply ? 0 : -ENOMEM;
        }
        json_t *arguments = json_object_get(params, "arguments");
        if (arguments && !json_is_object(arguments)) {
                return action_error(ret, id, MCP_ERROR_INVALID_PARAMS,
                                    "tools/call: params.arguments must be an object");
        }
        json_t *task = stamp ? NULL : json_object_get(params, "task");
        json_t *ttl = json_is_object(task) ? json_object_get(task, "ttl") : NULL;
        if ((task && !json_is_object(task)) || (ttl && !json_is_null(ttl) && !json_is_integer(ttl)) ||
            json_integer_value(ttl) < 0) {
                return action_error(ret, id, MCP_ERROR_INVALID_PARAMS,
                                    "tools/call: params.task must be an object whose ttl, if any, is a "
                                    "non-negative integer (milliseconds)");
        }

        _cleanup_(mcp_call_freep) McpCall *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->id = json_incref(id);
        c->stamp = json_incref(stamp);
        c->arguments = arguments ? json_incref(arguments) : json_object();
        c->id_key = mcp_json_dump(id);
        c->task = as_task || task;
        c->task_ttl_msec = json_is_integer(ttl) ? (uint64_t) json_integer_value(ttl) : 0;
        memcpy(c->principal, s->principal, sizeof(c->principal));
        if (!c->arguments || !c->id_key)
                return -ENOMEM;
        /* Made now, while memory is there: the answer when none is left for the real one (issue 15). */
        if (asprintf(&c->reply_oom,
                     "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
                     "\"mcp-execd could not build the reply: out of memory\"}],\"isError\":true}}",
                     c->id_key) < 0) {
                c->reply_oom = NULL; /* asprintf(3) leaves it undefined */
                return -ENOMEM;
        }
        /* progress.mdx: a token is a string or an integer; anything else asks for nothing. */
        json_t *meta = json_object_get(params, "_meta");
        json_t *token = json_is_object(meta) ? json_object_get(meta, "progressToken") : NULL;
        /* A task sends no progress: its request is answered at once, and nobody waits on it. */
        if (!c->task && (json_is_string(token) || json_is_integer(token)) &&
            !(c->progress_token = mcp_json_dump(token)))
                return -ENOMEM;
        mcp_call_trace_from_meta(c, meta);

        /* Invalid arguments are tool execution errors (isError), so the model can correct itself
         * (SEP-1303, 2025-11-25 "Error Handling"). */
        _cleanup_free_ char *problem = NULL;
        int r = mcp_tool_args_validate(&s->limits, tool, c->arguments, &c->args, &problem);
        if (r == -EINVAL) {
                ret->is_tool_error = true;
                memcpy(ret->traceparent, c->traceparent, sizeof(ret->traceparent));
                ret->reply = mcp_reply_tool_error(id, problem, stamp);
                return ret->reply ? 0 : -ENOMEM;
        }
        if (r < 0)
                return r;
        ret->kind = MCP_ACTION_CALL;
        ret->call = TAKE_PTR(c);
        return 0;
}

/* The tasks/ methods, and which revision has each: 2025-11-25's experimental tasks (through
 * initialize) or 2026-07-28's tasks extension (per request). */
static const struct {
        const char *method;
        McpTaskOp op;
        bool dated, modern;
} task_methods[] = {
        { "tasks/get", MCP_TASK_GET, true, true },
        { "tasks/result", MCP_TASK_RESULT, true, false },
        { "tasks/cancel", MCP_TASK_CANCEL, true, true },
        { "tasks/list", MCP_TASK_LIST, true, false },
        { "tasks/update", MCP_TASK_UPDATE, false, true },
};

/* Whether method is a tasks/ method of the revision (modern: 2026-07-28), and which. */
static bool task_method(const char *method, bool modern, McpTaskOp *ret_op) {
        for (size_t i = 0; i < ELEMENTSOF(task_methods); i++)
                if (strcmp(method, task_methods[i].method) == 0 &&
                    (modern ? task_methods[i].modern : task_methods[i].dated)) {
                        *ret_op = task_methods[i].op;
                        return true;
                }
        return false;
}

/* tools/list or tools/call while the start is held (mcp_server_hold()): kept for later; once the
 * start failed or was stopped (mcp_server_refuse()), answered, the call with a tool error (it did
 * not run), the list with an error. */
static int answer_held(McpServer *s, json_t *id, const char *method, json_t *stamp, McpAction *ret) {
        if (!s->refused) {
                ret->kind = MCP_ACTION_HOLD;
                return 0;
        }
        if (strcmp(method, "tools/call") == 0) {
                ret->is_tool_error = true;
                ret->reply = mcp_reply_tool_error(id, s->refused, stamp);
        } else
                ret->reply = reply_errorf(id, MCP_ERROR_INTERNAL, "%s: %s", method, s->refused);
        return ret->reply ? 0 : -ENOMEM;
}

static int handle_request(McpServer *s, const char *method, json_t *id, json_t *params, McpAction *ret) {
        ret->kind = MCP_ACTION_REPLY;

        if (strcmp(method, "initialize") == 0)
                return handle_initialize(s, id, params, ret);
        if (strcmp(method, "ping") == 0) {
                ret->reply = mcp_reply_result(id, json_object(), NULL);
                return ret->reply ? 0 : -ENOMEM;
        }

        McpTaskOp op;
        if (task_method(method, false, &op)) {
                if (!s->protocol_version) {
                        ret->reply = reply_errorf(id, MCP_ERROR_INVALID_REQUEST,
                                                  "%s: the session is not initialized; send initialize first",
                                                  method);
                        return ret->reply ? 0 : -ENOMEM;
                }
                return mcp_task_request_parse(op, id, params, NULL, ret);
        }

        bool known = strcmp(method, "tools/list") == 0 || strcmp(method, "tools/call") == 0;
        if (!known) {
                /* Also the 2026-07-28 `server/discover` probe: an immediate -32601 makes dual-era
                 * clients fall back to initialize (mcp.md §1.11). */
                ret->reply = reply_errorf(id, MCP_ERROR_METHOD_NOT_FOUND, "Method not found: %s",
                                          MCP_QUOTE(method));
                return ret->reply ? 0 : -ENOMEM;
        }
        if (s->held)
                return answer_held(s, id, method, NULL, ret);
        if (!s->protocol_version) {
                ret->reply = reply_errorf(id, MCP_ERROR_INVALID_REQUEST,
                                          "%s: the session is not initialized; send initialize first", method);
                return ret->reply ? 0 : -ENOMEM;
        }

        if (strcmp(method, "tools/list") == 0) {
                if (params && json_object_get(params, "cursor")) {
                        /* We never hand out a cursor: the list is one page. */
                        return action_error(ret, id, MCP_ERROR_INVALID_PARAMS, "tools/list: invalid cursor");
                }
                ret->reply = mcp_reply_result(id, json_deep_copy(s->tools_list), NULL);
                return ret->reply ? 0 : -ENOMEM;
        }
        return handle_tools_call(s, id, params, NULL, false, ret);
}

/* Every version we speak, newest era first: server/discover's supportedVersions and -32022's data.
 * New reference, or NULL. */
static json_t *supported_versions_new(void) {
        _cleanup_(json_decrefp) json_t *v = json_array();
        if (!v)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(protocol_versions_modern); i++)
                if (json_array_append_new(v, json_string(protocol_versions_modern[i])) < 0)
                        return NULL;
        for (size_t i = 0; i < ELEMENTSOF(protocol_versions); i++)
                if (json_array_append_new(v, json_string(protocol_versions[i])) < 0)
                        return NULL;
        return TAKE_PTR(v);
}

/* -32022 with what the client can retry with (2026-07-28 basic/versioning.mdx): the data's shape
 * is the one the official client reads ({supported, requested}) to pick a version and retry once. */
static char *reply_unsupported_version(json_t *id, json_t *requested) {
        _cleanup_(json_decrefp) json_t *supported = supported_versions_new();
        if (!supported)
                return NULL;
        /* Never echoed unbounded: a short string goes back as it came (what the client compares),
         * anything else (a long string, a NUL inside, another JSON type) as its quoted prefix. */
        const char *name = mcp_json_name(requested);
        _cleanup_free_ char *dumped = name ? NULL : mcp_json_dump(requested);
        McpQuote q;
        const char *shown = name ? mcp_quote(&q, name, strlen(name)) : dumped ? MCP_QUOTE(dumped) : "?";
        bool as_is = name && strcmp(shown, name) == 0;
        _cleanup_free_ char *msg = mcp_problem(
                "Unsupported protocol version %s: this server speaks 2026-07-28 per request, and 2025-11-25 and "
                "older through initialize", shown);
        _cleanup_(json_decrefp) json_t *echo = as_is ? json_incref(requested) : json_string(shown);
        _cleanup_(json_decrefp) json_t *m = msg && echo ? json_pack("{s:s, s:O, s:{s:i, s:s, s:{s:O, s:O}}}",
                                                                    "jsonrpc", "2.0", "id", id, "error", "code",
                                                                    MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION, "message",
                                                                    msg, "data", "supported", supported,
                                                                    "requested", echo)
                                                        : NULL;
        return m ? mcp_json_dump(m) : NULL;
}

bool mcp_protocol_version_is_modern(const char *v) {
        for (size_t i = 0; i < ELEMENTSOF(protocol_versions_modern); i++)
                if (strcmp(v, protocol_versions_modern[i]) == 0)
                        return true;
        return false;
}

/* A 2026-07-28 request: everything it needs is in itself, nothing of the session is read or kept.
 * The checks come in the order of the official SDK's inbound ladder (version, envelope, method,
 * params), so a request that fails several gets the error a 2026 client expects first. */
static int handle_modern_request(McpServer *s, const char *method, json_t *id, json_t *params, json_t *meta,
                                 McpAction *ret) {
        ret->kind = MCP_ACTION_REPLY;
        ret->is_modern = true;

        json_t *v = json_object_get(meta, META_PROTOCOL_VERSION);
        if (!mcp_json_name(v) || !mcp_protocol_version_is_modern(json_string_value(v))) {
                ret->rejected = json_is_string(v) ? MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION : MCP_ERROR_INVALID_PARAMS;
                ret->reply = json_is_string(v) ? reply_unsupported_version(id, v)
                                               : mcp_reply_error(id, MCP_ERROR_INVALID_PARAMS,
                                                                 "Invalid params: _meta." META_PROTOCOL_VERSION
                                                                 " must be a string");
                return ret->reply ? 0 : -ENOMEM;
        }
        json_t *caps = json_object_get(meta, META_CLIENT_CAPABILITIES);
        json_t *info = json_object_get(meta, META_CLIENT_INFO);
        if (!json_is_object(caps) || (info && !json_is_object(info))) {
                ret->rejected = MCP_ERROR_INVALID_PARAMS;
                return action_error(ret, id, MCP_ERROR_INVALID_PARAMS,
                                    json_is_object(caps)
                                            ? "Invalid params: _meta." META_CLIENT_INFO " must be an object"
                                            : "Invalid params: _meta." META_CLIENT_CAPABILITIES
                                              " must be an object (it is required in every 2026-07-28 request)");
        }

        json_t *extensions = json_object_get(caps, "extensions");
        bool tasks = json_is_object(extensions) && json_object_get(extensions, MCP_TASKS_EXTENSION);
        McpTaskOp op;
        if (task_method(method, true, &op)) {
                if (!tasks) {
                        /* SEP-2663 and SEP-2575: a method of an extension the request did not declare,
                         * with the capability it needs in data. */
                        _cleanup_(json_decrefp) json_t *m = json_pack(
                                "{s:s, s:O, s:{s:i, s:s, s:{s:{s:{s:{}}}}}}", "jsonrpc", "2.0", "id", id, "error",
                                "code", MCP_ERROR_MISSING_CAPABILITY, "message",
                                "Missing required client capability: declare the " MCP_TASKS_EXTENSION
                                " extension in _meta." META_CLIENT_CAPABILITIES ".extensions",
                                "data", "requiredCapabilities", "extensions", MCP_TASKS_EXTENSION);
                        ret->reply = m ? mcp_json_dump(m) : NULL;
                        return ret->reply ? 0 : -ENOMEM;
                }
                return mcp_task_request_parse(op, id, params, s->stamp, ret);
        }

        bool discover = strcmp(method, "server/discover") == 0, list = strcmp(method, "tools/list") == 0,
             call = strcmp(method, "tools/call") == 0;
        if (!discover && !list && !call) {
                /* initialize, ping and logging/setLevel are gone from 2026-07-28 (changelog.mdx): like any
                 * method the revision does not have, -32601. */
                ret->rejected = MCP_ERROR_METHOD_NOT_FOUND;
                bool removed = strcmp(method, "initialize") == 0 || strcmp(method, "ping") == 0 ||
                               strcmp(method, "logging/setLevel") == 0;
                ret->reply = reply_errorf(id, MCP_ERROR_METHOD_NOT_FOUND, "Method not found: %s%s",
                                          MCP_QUOTE(method),
                                          removed ? " (removed in protocol version 2026-07-28)" : "");
                return ret->reply ? 0 : -ENOMEM;
        }

        if (discover) {
                /* Answered even while the start is held: it says what we speak, not what we run. */
                _cleanup_(json_decrefp) json_t *versions = supported_versions_new();
                if (!versions)
                        return -ENOMEM;
                json_t *result = json_pack("{s:O, s:{s:{s:b}, s:{s:{}}}, s:s, s:i, s:s}", "supportedVersions",
                                           versions, "capabilities", "tools", "listChanged", 0, "extensions",
                                           MCP_TASKS_EXTENSION, "instructions", instructions,
                                           "ttlMs", LIST_TTL_MSEC, "cacheScope", "public");
                ret->reply = result ? mcp_reply_result(id, result, s->stamp) : NULL;
                return ret->reply ? 0 : -ENOMEM;
        }
        if (s->held)
                return answer_held(s, id, method, s->stamp, ret);
        if (list) {
                if (json_object_get(params, "cursor")) {
                        return action_error(ret, id, MCP_ERROR_INVALID_PARAMS, "tools/list: invalid cursor");
                }
                json_t *result = json_deep_copy(s->tools_list);
                if (!result || json_object_set_new(result, "ttlMs", json_integer(LIST_TTL_MSEC)) < 0 ||
                    json_object_set_new(result, "cacheScope", json_string("public")) < 0) {
                        json_decref(result);
                        return -ENOMEM;
                }
                ret->reply = mcp_reply_result(id, result, s->stamp);
                return ret->reply ? 0 : -ENOMEM;
        }
        return handle_tools_call(s, id, params, s->stamp, tasks, ret);
}

static int handle_notification(McpServer *s, const char *method, json_t *params, McpAction *ret) {
        ret->kind = MCP_ACTION_NONE;
        if (strcmp(method, "notifications/cancelled") == 0) {
                json_t *rid = params ? json_object_get(params, "requestId") : NULL;
                /* Invalid cancellations are ignored (cancellation.mdx). */
                if (!json_is_string(rid) && !json_is_integer(rid))
                        return 0;
                ret->cancel_key = mcp_json_dump(rid);
                if (!ret->cancel_key)
                        return -ENOMEM;
                ret->kind = MCP_ACTION_CANCEL;
        }
        /* notifications/initialized and unknown notifications need nothing, and are never answered. */
        return 0;
}

/* Integral reals that fit in 64 bits become integers again: in the text they were integers. */
static int ints_restore(json_t *v) {
        if (json_is_object(v)) {
                const char *k;
                json_t *x;
                json_object_foreach(v, k, x) {
                        json_t *n = NULL;
                        double d = json_is_real(x) ? json_real_value(x) : 0.5;
                        if (fabs(d) <= 9007199254740992.0 && d == (double) (json_int_t) d)
                                n = json_integer((json_int_t) d);
                        if (n ? json_object_set_new(v, k, n) < 0 : ints_restore(x) < 0)
                                return -ENOMEM;
                }
        } else if (json_is_array(v)) {
                for (size_t i = 0; i < json_array_size(v); i++) {
                        json_t *x = json_array_get(v, i), *n = NULL;
                        double d = json_is_real(x) ? json_real_value(x) : 0.5;
                        if (fabs(d) <= 9007199254740992.0 && d == (double) (json_int_t) d)
                                n = json_integer((json_int_t) d);
                        if (n ? json_array_set_new(v, i, n) < 0 : ints_restore(x) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* JSON numbers have no size limit, jansson's integers do (64 bits), and it refuses a message with
 * a larger one: valid JSON, then answered with an id-less -32700 that left an SDK client waiting
 * for its timeout (found by the bad-input catalogue). Such a message is read again with integers
 * as reals, and those that fit are made integers again: a huge timeout_s is clamped like any
 * large one, and the request keeps its id. NULL if it still cannot be read (1e400). */
static json_t *load_big_ints(const char *msg, size_t len) {
        json_error_t err;
        json_t *m = json_loadb(msg, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY |
                                                 JSON_DECODE_INT_AS_REAL, &err);
        if (m && ints_restore(m) < 0) {
                json_decref(m);
                return NULL;
        }
        return m;
}

int mcp_server_handle(McpServer *s, const char *msg, size_t len, McpAction *ret) {
        *ret = (McpAction) { .kind = MCP_ACTION_REPLY };

        json_error_t err;
        /* NULs are legitimate inside stdin data; duplicate keys are ambiguous and refused. */
        _cleanup_(json_decrefp) json_t *m = json_loadb(msg, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &err);
        if (!m && json_error_code(&err) == json_error_numeric_overflow)
                m = load_big_ints(msg, len);
        if (!m) {
                ret->reply = reply_errorf(NULL, MCP_ERROR_PARSE, "Parse error: %s (line %d, column %d)",
                                          err.text, err.line, err.column);
                return ret->reply ? 0 : -ENOMEM;
        }
        if (json_is_array(m)) {
                /* Batches existed only in 2025-03-26 and no SDK client sends them. */
                ret->reply = mcp_reply_error(NULL, MCP_ERROR_INVALID_REQUEST, "Invalid Request: batch arrays are "
                                             "not supported; send one message per line");
                return ret->reply ? 0 : -ENOMEM;
        }
        if (!json_is_object(m)) {
                return action_error(ret, NULL, MCP_ERROR_INVALID_REQUEST,
                                    "Invalid Request: a message must be a JSON object");
        }

        json_t *id = json_object_get(m, "id");
        bool id_ok = id && (json_is_string(id) || json_is_integer(id));
        json_t *reply_id = id_ok ? id : NULL;

        json_t *jsonrpc = json_object_get(m, "jsonrpc");
        if (!mcp_json_name(jsonrpc) || strcmp(json_string_value(jsonrpc), "2.0") != 0) {
                return action_error(ret, reply_id, MCP_ERROR_INVALID_REQUEST,
                                    "Invalid Request: \"jsonrpc\" must be \"2.0\"");
        }

        json_t *method = json_object_get(m, "method");
        if (!method) {
                if (json_object_get(m, "result") || json_object_get(m, "error")) {
                        ret->kind = MCP_ACTION_NONE; /* a response; we send no requests */
                        return 0;
                }
                return action_error(ret, reply_id, MCP_ERROR_INVALID_REQUEST, "Invalid Request: \"method\" is missing");
        }
        if (!json_is_string(method)) {
                return action_error(ret, reply_id, MCP_ERROR_INVALID_REQUEST,
                                    "Invalid Request: \"method\" must be a string");
        }

        json_t *params = json_object_get(m, "params");
        /* A method with a NUL inside ("tools/call\u0000x") is no method of ours: as a notification
         * it is ignored like any unknown one, as a request it is not found. */
        bool method_ok = mcp_json_name(method);
        if (!id) {
                if (!method_ok) {
                        ret->kind = MCP_ACTION_NONE;
                        return 0;
                }
                return handle_notification(s, json_string_value(method), json_is_object(params) ? params : NULL,
                                           ret);
        }
        if (!id_ok) {
                return action_error(ret, NULL, MCP_ERROR_INVALID_REQUEST,
                                    json_is_null(id)
                                            ? "Invalid Request: \"id\" must not be null"
                                            : "Invalid Request: \"id\" must be a string or an integer");
        }
        if (params && !json_is_object(params)) {
                return action_error(ret, id, MCP_ERROR_INVALID_PARAMS, "Invalid params: \"params\" must be an object");
        }
        /* The era is the request's own (2026-07-28 basic/versioning.mdx): one that names a protocol
         * version in _meta is of 2026-07-28 or later, whatever came before on this connection. */
        json_t *meta = params ? json_object_get(params, "_meta") : NULL;
        bool modern = json_is_object(meta) && json_object_get(meta, META_PROTOCOL_VERSION);
        if (!method_ok) {
                ret->is_modern = modern;
                ret->rejected = modern ? MCP_ERROR_METHOD_NOT_FOUND : 0;
                ret->reply = reply_errorf(id, MCP_ERROR_METHOD_NOT_FOUND,
                                          "Method not found: %s (followed by a NUL character)",
                                          MCP_QUOTE(json_string_value(method)));
                return ret->reply ? 0 : -ENOMEM;
        }
        if (modern)
                return handle_modern_request(s, json_string_value(method), id, params, meta, ret);
        return handle_request(s, json_string_value(method), id, params, ret);
}
