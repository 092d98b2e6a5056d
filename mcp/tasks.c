/* tasks.c: the task requests and answers of both eras (README "Tasks"): 2025-11-25's experimental
 * tasks (basic/utilities/tasks.mdx: CreateTaskResult {task}, tasks/get, tasks/result, tasks/cancel,
 * tasks/list) and 2026-07-28's io.modelcontextprotocol/tasks extension (SEP-2663: a flat
 * CreateTaskResult with resultType "task", tasks/get inlining the result, tasks/cancel and
 * tasks/update acknowledged with an empty result). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cleanup.h"
#include "mcp-internal.h"

/* How often a client should poll (pollInterval, ms): a run takes seconds; polling faster buys
 * little and costs a request each time. */
#define TASK_POLL_MSEC 1000

static const char *const status_names[] = {
        [MCP_TASK_WORKING] = "working",
        [MCP_TASK_COMPLETED] = "completed",
        [MCP_TASK_FAILED] = "failed",
        [MCP_TASK_CANCELLED] = "cancelled",
};

McpTaskOp mcp_task_request_op(const McpTaskRequest *r) {
        return r->op;
}

bool mcp_task_request_shows_result(const McpTaskRequest *r) {
        return r->op == MCP_TASK_RESULT || (r->op == MCP_TASK_GET && r->stamp);
}

const char *mcp_task_request_task_id(const McpTaskRequest *r) {
        return r->task_id;
}

const char *mcp_task_request_id_key(const McpTaskRequest *r) {
        return r->id_key;
}

McpTaskRequest *mcp_task_request_free(McpTaskRequest *r) {
        if (!r)
                return NULL;
        json_decref(r->id);
        json_decref(r->stamp);
        free(r->task_id);
        free(r->id_key);
        free(r->reply_oom);
        free(r);
        return NULL;
}

char *mcp_task_reply_oom(McpTaskRequest *r) {
        return TAKE_PTR(r->reply_oom);
}

static char *error_reply(json_t *id, int code, const char *message) {
        _cleanup_(json_decrefp) json_t *m = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                                                      "code", code, "message", message);
        return m ? mcp_json_dump(m) : NULL;
}

int mcp_task_request_parse(McpTaskOp op, json_t *id, json_t *params, json_t *stamp, McpAction *ret) {
        json_t *tid = params ? json_object_get(params, "taskId") : NULL;
        if (op != MCP_TASK_LIST && !mcp_json_name(tid)) {
                ret->reply = error_reply(id, MCP_ERROR_INVALID_PARAMS, "Invalid params: params.taskId must be a string");
                return ret->reply ? 0 : -ENOMEM;
        }
        if (op == MCP_TASK_LIST && params && json_object_get(params, "cursor")) {
                /* Never given: the whole list fits one page (it is bounded by MCP_EXEC_TASKS_PER_CLIENT). */
                ret->reply = error_reply(id, MCP_ERROR_INVALID_PARAMS, "tasks/list: invalid cursor");
                return ret->reply ? 0 : -ENOMEM;
        }
        _cleanup_(mcp_task_request_freep) McpTaskRequest *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->id = json_incref(id);
        r->stamp = json_incref(stamp);
        r->op = op;
        if (op != MCP_TASK_LIST && !(r->task_id = strdup(json_string_value(tid))))
                return -ENOMEM;
        r->id_key = mcp_json_dump(id);
        if (!r->id_key || asprintf(&r->reply_oom,
                                "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":"
                                "\"Internal error: mcp-execd is out of memory\"}}",
                                r->id_key, MCP_ERROR_INTERNAL) < 0) {
                r->reply_oom = NULL; /* asprintf(3) leaves it undefined */
                return -ENOMEM;
        }
        ret->kind = MCP_ACTION_TASK;
        ret->task = TAKE_PTR(r);
        return 0;
}

bool mcp_call_is_task(const McpCall *c, uint64_t *ret_ttl_msec) {
        if (ret_ttl_msec)
                *ret_ttl_msec = c->task_ttl_msec;
        return c->task;
}

bool mcp_call_task_may_inline(const McpCall *c) {
        return c->task && c->stamp;
}

char *mcp_call_reply_error(const McpCall *c, int code, const char *message) {
        return error_reply(c->id, code, message);
}

/* ISO 8601 in UTC with milliseconds, as both eras' createdAt/lastUpdatedAt. */
static json_t *timestamp_new(uint64_t usec) {
        time_t sec = (time_t) (usec / 1000000u);
        struct tm tm;
        if (!gmtime_r(&sec, &tm))
                return NULL;
        char b[64];
        snprintf(b, sizeof(b), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned) (usec / 1000u % 1000u));
        return json_string(b);
}

/* Why a failed task has no result, for its statusMessage and errors. malloc'd, NULL on ENOMEM. */
static char *failure_new(const McpTaskView *t) {
        if (t->too_big)
                return mcp_problem("mcp-execd could not keep the task's result: its %" PRIu64 " bytes did not fit in "
                                   "MCP_EXEC_TASKS_MAX_BYTES=%" PRIu64 " beside the results not fetched yet; fetch "
                                   "results as they end, or run the call again",
                                   t->too_big, t->max_bytes);
        return strdup("mcp-execd could not keep the task's result: out of memory");
}

/* The Task object of the era: 2025 {ttl, pollInterval}, 2026 {ttlMs, pollIntervalMs}; a failed
 * task's statusMessage says why (both eras have the member). */
static json_t *task_object_new(const McpTaskView *t, bool modern) {
        _cleanup_(json_decrefp) json_t *created = timestamp_new(t->created_usec), *updated = timestamp_new(t->updated_usec);
        if (!created || !updated)
                return NULL;
        _cleanup_(json_decrefp) json_t *o = json_pack(
                "{s:s, s:s, s:O, s:O, s:I, s:i}", "taskId", t->id, "status", status_names[t->status], "createdAt",
                created, "lastUpdatedAt", updated, modern ? "ttlMs" : "ttl", (json_int_t) t->ttl_msec,
                modern ? "pollIntervalMs" : "pollInterval", TASK_POLL_MSEC);
        if (o && t->status == MCP_TASK_FAILED) {
                _cleanup_free_ char *why = failure_new(t);
                if (!why || json_object_set_new(o, "statusMessage", json_string(why)) < 0)
                        return NULL;
        }
        return TAKE_PTR(o);
}

char *mcp_call_reply_task_created(const McpCall *c, const McpTaskView *t) {
        bool modern = c->stamp;
        _cleanup_(json_decrefp) json_t *task = task_object_new(t, modern);
        if (!task)
                return NULL;
        if (!modern)
                return mcp_reply_result(c->id, json_pack("{s:O}", "task", task), NULL);
        _cleanup_(json_decrefp) json_t *result = json_deep_copy(task);
        if (!result || json_object_update(result, c->stamp) < 0 ||
            json_object_set_new(result, "resultType", json_string("task")) < 0)
                return NULL;
        /* Not mcp_reply_result(): its stamp would say resultType "complete". */
        _cleanup_(json_decrefp) json_t *m = json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", c->id, "result", result);
        return m ? mcp_json_dump(m) : NULL;
}

/* The call's result out of its JSON-RPC reply (which the run's encoder made, so it is ours). */
static json_t *reply_result_get(const char *reply) {
        json_error_t err;
        _cleanup_(json_decrefp) json_t *m = reply ? json_loads(reply, JSON_ALLOW_NUL, &err) : NULL;
        json_t *result = m ? json_object_get(m, "result") : NULL;
        return result ? json_incref(result) : NULL;
}

static char *reply_unknown(const McpTaskRequest *r) {
        _cleanup_free_ char *msg = mcp_problem(
                "Invalid params: no task %s (unknown, expired, not yours, or lost when mcp-execd restarted)",
                MCP_QUOTE(r->task_id));
        return msg ? error_reply(r->id, MCP_ERROR_INVALID_PARAMS, msg) : NULL;
}

char *mcp_task_reply_other_instance(const McpTaskRequest *r, const char *tag) {
        _cleanup_free_ char *msg = mcp_problem(
                "Invalid params: no task %s here: it was made by instance %s, which is gone or unreachable, "
                "and its tasks with it; run the call again", MCP_QUOTE(r->task_id), tag);
        return msg ? error_reply(r->id, MCP_ERROR_INVALID_PARAMS, msg) : NULL;
}

char *mcp_task_reply(const McpTaskRequest *r, const McpTaskView *t, bool was_terminal) {
        bool modern = r->stamp;
        if (!t)
                return reply_unknown(r);

        switch (r->op) {
        case MCP_TASK_CANCEL:
                if (modern) /* an acknowledgement, the same for a task that had ended (SEP-2663) */
                        return mcp_reply_result(r->id, json_object(), r->stamp);
                if (was_terminal) {
                        _cleanup_free_ char *msg = mcp_problem(
                                "Invalid params: cannot cancel task %s: it is already %s", t->id,
                                status_names[t->status]);
                        return msg ? error_reply(r->id, MCP_ERROR_INVALID_PARAMS, msg) : NULL;
                }
                return mcp_reply_result(r->id, task_object_new(t, false), NULL);
        case MCP_TASK_UPDATE:
                return mcp_reply_result(r->id, json_object(), r->stamp);
        case MCP_TASK_GET: {
                _cleanup_(json_decrefp) json_t *task = task_object_new(t, modern);
                if (!task)
                        return NULL;
                if (modern && t->status == MCP_TASK_COMPLETED) {
                        json_t *result = reply_result_get(t->reply);
                        if (!result || json_object_set_new(task, "result", result) < 0)
                                return NULL;
                }
                if (modern && t->status == MCP_TASK_FAILED) {
                        _cleanup_free_ char *why = failure_new(t);
                        json_t *e = why ? json_pack("{s:i, s:s}", "code", MCP_ERROR_INTERNAL, "message", why) : NULL;
                        if (!e || json_object_set_new(task, "error", e) < 0)
                                return NULL;
                }
                return mcp_reply_result(r->id, json_incref(task), r->stamp);
        }
        case MCP_TASK_RESULT: {
                if (t->status != MCP_TASK_COMPLETED) {
                        _cleanup_free_ char *why = t->status == MCP_TASK_FAILED ? failure_new(t) : NULL;
                        _cleanup_free_ char *msg = mcp_problem("Invalid params: task %s has no result: it is %s%s%s",
                                                               t->id, status_names[t->status], why ? ": " : "",
                                                               why ?: "");
                        return msg ? error_reply(r->id, MCP_ERROR_INVALID_PARAMS, msg) : NULL;
                }
                _cleanup_(json_decrefp) json_t *result = reply_result_get(t->reply);
                if (!result)
                        return NULL;
                json_t *meta = json_object_get(result, "_meta");
                if (!meta) {
                        meta = json_object();
                        if (!meta || json_object_set_new(result, "_meta", meta) < 0)
                                return NULL;
                }
                if (json_object_set_new(meta, MCP_META_RELATED_TASK, json_pack("{s:s}", "taskId", t->id)) < 0)
                        return NULL;
                return mcp_reply_result(r->id, json_incref(result), NULL);
        }
        case MCP_TASK_LIST:
                break;
        }
        return NULL;
}

bool mcp_task_reply_tells_end(const McpTaskRequest *r, const McpTaskView *t) {
        if (!t || t->status == MCP_TASK_WORKING)
                return false;
        switch (r->op) {
        case MCP_TASK_GET:
                return r->stamp || t->status != MCP_TASK_COMPLETED;
        case MCP_TASK_RESULT:
        case MCP_TASK_CANCEL:
                return true;
        case MCP_TASK_LIST:
        case MCP_TASK_UPDATE:
                break;
        }
        return false;
}

char *mcp_task_reply_list(const McpTaskRequest *r, const McpTaskView *tasks, size_t n) {
        _cleanup_(json_decrefp) json_t *list = json_array();
        if (!list)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(list, task_object_new(&tasks[i], r->stamp)) < 0)
                        return NULL;
        return mcp_reply_result(r->id, json_pack("{s:O}", "tasks", list), r->stamp);
}
