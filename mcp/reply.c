/* reply.c: the replies to a tools/call: a run's result (structuredContent, the same JSON as text,
 * the files as content items), a structured result and a tool error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "mcp-internal.h"

char *mcp_reply_result(json_t *id, json_t *result, json_t *stamp) {
        _cleanup_(json_decrefp) json_t *m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
                                                      "result", result);
        /* json_object_update() copies references: stamp stays the caller's. */
        if (!m || (stamp && json_object_update(json_object_get(m, "result"), stamp) < 0))
                return NULL;
        return mcp_json_dump(m);
}

char *mcp_reply_tool_error(json_t *id, const char *message, json_t *stamp) {
        /* A message may quote what the run made (a name, an error): jansson refuses invalid UTF-8. */
        size_t n;
        _cleanup_free_ char *fixed = utf8_repair(message ? message : "", message ? strlen(message) : 0, &n);
        json_t *text = fixed ? json_stringn(fixed, n) : NULL;
        json_t *result = text ? json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text", text, "isError", 1)
                              : NULL;
        return result ? mcp_reply_result(id, result, stamp) : NULL;
}

/* The backstop (issue 15): a reply that could not be built becomes a tool error that says which
 * part failed, formatted by hand from the id's compact JSON (which came from the request, so it is
 * valid JSON) and ASCII text, so it cannot fail for the reason the reply did. */
static char *reply_failed(const McpCall *c, const char *what) {
        char *m = NULL;
        if (asprintf(&m,
                     "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
                     "\"mcp-execd could not encode the result: %s\"}],\"isError\":true}}",
                     c->id_key, what) < 0)
                return NULL; /* asprintf(3) leaves m undefined */
        return m;
}

static json_t *repaired_string(const char *s, size_t len) {
        size_t n;
        _cleanup_free_ char *fixed = utf8_repair(s ? s : "", s ? len : 0, &n);
        return fixed ? json_stringn(fixed, n) : NULL;
}

/* Sets *ret_what to the part that failed (ASCII, no quotes or backslashes: reply_failed() puts it
 * in a JSON string as it is). */
static char *reply_result(const McpCall *c, const ExecResult *r, const char **ret_what) {
        json_t *out = repaired_string(r->stdout_data, r->stdout_len);
        json_t *err = repaired_string(r->stderr_data, r->stderr_len);
        if (!out || !err) {
                json_decref(out);
                json_decref(err);
                *ret_what = "stdout or stderr";
                return NULL;
        }
        _cleanup_(json_decrefp) json_t *sc = json_pack(
                "{s:o, s:o, s:I, s:I, s:b, s:b, s:o, s:b, s:b, s:I, s:I, s:I, s:s, s:I, s:b, s:I}",
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
                "queue_ms", (json_int_t) r->queue_ms,
                "warm", r->warm,
                "memory_at_start_bytes", (json_int_t) r->memory_at_start_bytes);
        *ret_what = "structuredContent";
        if (!sc)
                return NULL;
        /* Issue 15 #6: every result says what its mode could not bound. */
        *ret_what = "the unbounded field";
        json_t *unbounded = json_array();
        if (json_object_set_new(sc, "unbounded", unbounded) < 0)
                return NULL;
        if (!r->limits || strcmp(r->limits, "cgroup") != 0) {
                static const char *const names[] = MCP_RLIMIT_UNBOUNDED;
                for (size_t i = 0; i < ELEMENTSOF(names); i++)
                        if (json_array_append_new(unbounded, json_string(names[i])) < 0)
                                return NULL;
        }
        /* Issue 33.1: the kernel's account beyond CPU and memory, null where it has none (rlimit mode). */
        *ret_what = "the kernel's account";
        for (ExecAccountField f = 0; f < _EXEC_ACCOUNT_MAX; f++)
                if (json_object_set_new(sc, exec_account_name(f),
                                        exec_account_known(&r->account, f) ? json_integer((json_int_t) r->account.v[f])
                                                                           : json_null()) < 0)
                        return NULL;
        /* Issue 32.3: a run that could reach hosts says what it sent and received, and to whom. */
        *ret_what = "the egress field";
        if (r->egress) {
                const ExecEgress *e = r->egress;
                json_t *hosts = json_array();
                if (json_object_set_new(sc, "egress", json_pack("{s:I, s:I, s:I, s:I, s:o, s:b}", "bytes_sent",
                                                                (json_int_t) e->sent, "bytes_received",
                                                                (json_int_t) e->received, "connections",
                                                                (json_int_t) e->connections, "denied",
                                                                (json_int_t) e->denied, "hosts", hosts,
                                                                "hosts_truncated", e->hosts_truncated)) < 0)
                        return NULL;
                for (size_t i = 0; i < e->n_hosts; i++) {
                        const ExecEgressHost *h = &e->hosts[i];
                        if (json_array_append_new(hosts, json_pack("{s:s, s:i, s:b, s:I, s:I, s:I}", "host", h->host, "port",
                                                                   (int) h->port, "allowed", h->allowed, "connections",
                                                                   (json_int_t) h->connections, "bytes_sent",
                                                                   (json_int_t) h->sent, "bytes_received",
                                                                   (json_int_t) h->received)) < 0)
                                return NULL;
                }
        }
        /* execute_python's additions (interpreter, dependencies, environment). */
        *ret_what = "the interpreter, dependencies and environment fields";
        if (r->extra && (!json_is_object(r->extra) || json_object_update(sc, r->extra) < 0))
                return NULL;
        /* Clients that only read text content get the same JSON (the tools spec's advice for
         * structuredContent, and what mcp-exec returns). The files (issue 10): listed in sc, their bytes as content items after the text. */
        _cleanup_(json_decrefp) json_t *items = json_array();
        char nonce[17];
        *ret_what = "the outputs/ files";
        if (!items || mcp_files_result_add(r, sc, items, nonce) < 0)
                return NULL;
        *ret_what = "the text content";
        _cleanup_free_ char *text = json_dumps(sc, JSON_COMPACT);
        if (!text)
                return NULL;
        _cleanup_(json_decrefp) json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
        if (!content || json_array_extend(content, items) < 0)
                return NULL;
        *ret_what = "the reply";
        char *reply = mcp_reply_result(c->id, json_pack("{s:O, s:O, s:b}", "content", content,
                                                        "structuredContent", sc, "isError", 0),
                                        c->stamp);
        *ret_what = "the outputs/ files' bytes";
        return reply && r->n_files > 0 ? mcp_files_splice(reply, r, nonce) : reply;
}

char *mcp_call_reply_result(const McpCall *c, const ExecResult *r) {
        const char *what = "the reply";
        char *reply = reply_result(c, r, &what);
        return reply ?: reply_failed(c, what);
}

char *mcp_call_reply_tool_error(const McpCall *c, const char *message) {
        return mcp_reply_tool_error(c->id, message, c->stamp) ?: reply_failed(c, "a tool error");
}

char *mcp_call_reply_structured(const McpCall *c, json_t *sc) {
        if (!json_is_object(sc))
                return reply_failed(c, "structuredContent (not a JSON object)");
        _cleanup_free_ char *text = json_dumps(sc, JSON_COMPACT);
        char *reply = text ? mcp_reply_result(c->id, json_pack("{s:[{s:s, s:s}], s:O, s:b}", "content", "type",
                                                               "text", "text", text, "structuredContent", sc,
                                                               "isError", 0),
                                                c->stamp)
                           : NULL;
        return reply ?: reply_failed(c, "structuredContent");
}
