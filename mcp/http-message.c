/* http-message.c: message-level pieces of the HTTP transports: classifying a body, error bodies,
 * and SSE framing. */
#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "mcp-http.h"
#include "mcp-internal.h"

int mcp_http_message_classify(const char *body, size_t len, McpHttpMessageInfo *ret) {
        *ret = (McpHttpMessageInfo) { .kind = MCP_HTTP_MSG_INVALID };
        json_error_t err;
        /* Integers as reals: a number too big for jansson's integers (in the arguments, say) must not
         * make a request look like no message at all; mcp_server_handle() answers it for its id. */
        _cleanup_(json_decrefp) json_t *m = json_loadb(body, len, JSON_ALLOW_NUL | JSON_DECODE_ANY |
                                                                  JSON_DECODE_INT_AS_REAL, &err);
        if (!m || !json_is_object(m))
                return 0;
        json_t *id = json_object_get(m, "id");
        json_t *method = json_object_get(m, "method");
        if (json_is_string(method)) {
                if (!id) {
                        ret->kind = MCP_HTTP_MSG_NOTIFICATION;
                        return 0;
                }
                double v = json_is_real(id) ? json_real_value(id) : 0.5;
                bool integral = v >= -9007199254740992.0 && v <= 9007199254740992.0 && v == (double) (long long) v;
                if (!json_is_string(id) && !integral)
                        return 0;
                ret->kind = MCP_HTTP_MSG_REQUEST;
                bool named = mcp_json_name(method);
                ret->is_initialize = named && strcmp(json_string_value(method), "initialize") == 0;
                ret->is_ping = named && strcmp(json_string_value(method), "ping") == 0;
                return 0;
        }
        if (!method && id && (json_object_get(m, "result") || json_object_get(m, "error")))
                ret->kind = MCP_HTTP_MSG_RESPONSE;
        return 0;
}

/* A header's value as the client sent it, quoted only if it is short and printable. */
static const char *shown(const char *v) {
        if (!v)
                return "(absent)";
        bool ok = strlen(v) <= 64;
        for (const char *c = v; ok && *c; c++)
                ok = *c >= 0x20 && *c < 0x7f && *c != '"';
        return ok ? v : "(unprintable)";
}

/* Whether a header's value is v: surrounding spaces and tabs are no part of a field value (RFC 9110
 * §5.5), and the conformance suite sends "exec  " for "exec". */
static bool header_is(const char *h, const char *v) {
        if (!h)
                return false;
        h += strspn(h, " \t");
        size_t n = strlen(h);
        while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
                n--;
        return n == strlen(v) && memcmp(h, v, n) == 0;
}

/* Which body field Mcp-Name mirrors, per method (SEP-2243 "Standard Request Headers"; the methods
 * we serve and those we answer -32601 alike, so a mismatch is always a header error). */
static const struct {
        const char *method;
        const char *field;
} name_sources[] = {
        { "tools/call", "name" },
        { "prompts/get", "name" },
        { "resources/read", "uri" },
        { "tasks/get", "taskId" },
        { "tasks/update", "taskId" },
        { "tasks/cancel", "taskId" },
};

int mcp_http_era_check(const char *body, size_t len, const char *version, const char *method_h, const char *name_h,
                       McpHttpEra *ret) {
        *ret = (McpHttpEra) {};
        json_error_t err;
        _cleanup_(json_decrefp) json_t *m = json_loadb(body, len, JSON_ALLOW_NUL | JSON_DECODE_ANY |
                                                                  JSON_DECODE_INT_AS_REAL, &err);
        json_t *method = json_is_object(m) ? json_object_get(m, "method") : NULL;
        if (!mcp_json_name(method))
                return 0; /* no message of any era: mcp_server_handle() says what is wrong */
        json_t *params = json_object_get(m, "params");
        json_t *meta = json_is_object(params) ? json_object_get(params, "_meta") : NULL;
        json_t *pv = json_is_object(meta) ? json_object_get(meta, "io.modelcontextprotocol/protocolVersion") : NULL;
        ret->modern = pv || (version && mcp_protocol_version_is_modern(version));
        json_t *id = json_object_get(m, "id");
        /* Notifications are exempt from the header checks (the SDK's ladder): they are answered 202
         * whatever they say. */
        double idv = json_is_real(id) ? json_real_value(id) : 0.5;
        bool integral = idv >= -9007199254740992.0 && idv <= 9007199254740992.0 && idv == (double) (long long) idv;
        if (!ret->modern || !(json_is_string(id) || integral))
                return 0; /* a notification, or an id mcp_server_handle() refuses */

        /* In the SDK ladder's order: version header against body, the envelope, then the standard
         * headers' presence and agreement. The first that fails is the refusal. */
        const char *name = json_string_value(method);
        int code = MCP_ERROR_HEADER_MISMATCH;
        _cleanup_free_ char *why = NULL;
        if (version && mcp_json_name(pv) && !header_is(version, json_string_value(pv)))
                why = mcp_problem("Header mismatch: MCP-Protocol-Version %s, but the body's _meta says %s",
                                  shown(version), shown(json_string_value(pv)));
        else if (!pv) {
                code = MCP_ERROR_INVALID_PARAMS;
                why = mcp_problem("Invalid params: a %s request needs "
                                  "_meta.io.modelcontextprotocol/protocolVersion (and clientCapabilities)",
                                  shown(version));
        } else if (!version)
                why = mcp_problem("Header mismatch: the MCP-Protocol-Version header is required");
        else if (!header_is(method_h, name))
                why = mcp_problem("Header mismatch: Mcp-Method %s, but the body's method is %s", shown(method_h),
                                  shown(name));
        else {
                const char *field = NULL;
                for (size_t i = 0; i < ELEMENTSOF(name_sources) && !field; i++)
                        if (strcmp(name, name_sources[i].method) == 0)
                                field = name_sources[i].field;
                json_t *v = field && json_is_object(params) ? json_object_get(params, field) : NULL;
                /* A body without the field is the method's params error, in band. */
                if (!mcp_json_name(v) || header_is(name_h, json_string_value(v)))
                        return 0; /* every header agrees */
                why = mcp_problem("Header mismatch: Mcp-Name %s, but the body's params.%s is %s", shown(name_h), field,
                                  shown(json_string_value(v)));
        }
        if (!why)
                return -ENOMEM;
        /* The answer's id is the request's (read as a real, like everything here). */
        _cleanup_(json_decrefp) json_t *rid = json_is_real(id) ? json_integer((json_int_t) idv) : json_incref(id);
        ret->reject = rid ? mcp_reply_error(rid, code, why) : NULL;
        return ret->reject ? 0 : -ENOMEM;
}

unsigned mcp_http_modern_reply_status(const McpHttpMessageInfo *info, int rejected) {
        if (rejected)
                return rejected == MCP_ERROR_METHOD_NOT_FOUND ? 404 : 400;
        return info->kind == MCP_HTTP_MSG_REQUEST ? 200 : 400;
}

McpHttpSessionless mcp_http_sessionless_post(const McpHttpMessageInfo *info) {
        if (info->kind == MCP_HTTP_MSG_INVALID)
                return MCP_HTTP_SESSIONLESS_ANSWER;
        /* A 400 with a JSON-RPC error makes dual-era clients fall back to initialize (mcp.md §1.11). */
        return info->is_initialize ? MCP_HTTP_SESSIONLESS_INITIALIZE : MCP_HTTP_SESSIONLESS_REFUSE;
}

bool mcp_http_message_is_work(const McpHttpMessageInfo *info) {
        return info->kind == MCP_HTTP_MSG_REQUEST && !info->is_initialize && !info->is_ping;
}

bool mcp_http_session_evictable(const McpHttpSessionUse *u) {
        /* Issue 15 #9: ending the least recently used idle session let a flood of initializes end a
         * client that pauses between calls (agents do, for seconds). A working session is never
         * ended for room, however long it has been idle: MCP_EXEC_SESSION_IDLE_S ends it, and until
         * then a new session gets 503 + Retry-After, which a client retries and an operator sees in
         * the log, while a lost session is a client's work gone. */
        return !u->legacy && !u->busy && !u->worked;
}

unsigned mcp_http_post_reply_status(const McpHttpMessageInfo *info, bool new_session, bool initialized) {
        bool ok = info->kind == MCP_HTTP_MSG_REQUEST && !(info->is_initialize && !new_session) &&
                  !(new_session && !initialized);
        return ok ? 200 : 400;
}

char *mcp_http_error_body(int code, const char *message) {
        return mcp_reply_error(json_null(), code, message);
}

char *mcp_http_oauth_error_body(const char *code, const char *message) {
        _cleanup_(json_decrefp) json_t *m = json_pack("{s:s, s:s}", "error", code, "error_description", message);
        return m ? mcp_json_dump(m) : NULL;
}

int mcp_http_sse_event(Buf *b, const char *event, const char *data, size_t len) {
        if (event && (buf_append(b, "event: ", 7) < 0 || buf_append(b, event, strlen(event)) < 0 ||
                      buf_append(b, "\n", 1) < 0))
                return -ENOMEM;
        /* A CR, LF or CRLF ends an SSE line: split there so the payload stays inside this event. */
        size_t i = 0;
        do {
                size_t n = 0;
                while (i + n < len && data[i + n] != '\n' && data[i + n] != '\r')
                        n++;
                if (buf_append(b, "data: ", 6) < 0 || buf_append(b, data + i, n) < 0 || buf_append(b, "\n", 1) < 0)
                        return -ENOMEM;
                i += n;
                if (i < len && data[i] == '\r' && i + 1 < len && data[i + 1] == '\n')
                        i++;
                if (i < len)
                        i++;
                else
                        break;
        } while (true);
        return buf_append(b, "\n", 1);
}

int mcp_http_sse_comment(Buf *b, const char *text) {
        if (buf_append(b, ": ", 2) < 0 || buf_append(b, text, strlen(text)) < 0 || buf_append(b, "\n\n", 2) < 0)
                return -ENOMEM;
        return 0;
}
