/* fuzz-mcp-http.c: the pure helpers of the HTTP transports (mcp/mcp-http.h): the request-head
 * verdict (Host/Origin allow-list, token, route, media types, protocol version, session ids), each
 * piece on its own, message classification, error bodies and SSE framing.
 * Input: one flags byte, then fields separated by "\n" in the order of `fields` below; a field
 * "-" is an absent header. Strings are exact allocations (no slack), so ASan sees overreads. */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "mcp-http.h"
#include "str-util.h"

enum {
        F_METHOD, F_PATH, F_HOST, F_ORIGIN, F_AUTHORIZATION, F_X_MCP_AUTH, F_ACCEPT, F_CONTENT_TYPE,
        F_PROTOCOL_VERSION, F_SESSION_ID, F_QUERY_SESSION_ID, F_TOKEN, F_ALLOWED_HOST, F_ALLOWED_ORIGIN,
        F_BODY, N_FIELDS,
};

static void check_json_line(const char *s, bool allow_nul) {
        FUZZ_CHECK(s);
        FUZZ_CHECK(!strchr(s, '\n'));
        json_error_t err;
        json_t *j = json_loads(s, allow_nul ? JSON_ALLOW_NUL : 0, &err);
        FUZZ_CHECK(j && json_is_object(j));
        json_decref(j);
}

/* The daemon's authenticator looks tenants up by token (daemon/tenant/); here the field F_TOKEN
 * is the one tenant's token. */
static const char *token_auth(void *userdata, const char *credential, size_t len, McpHttpAuthFailure *fail) {
        const char *token = userdata;
        FUZZ_CHECK(len > 0); /* an empty credential is never offered */
        return str_secret_equal(credential, len, token, strlen(token)) ? "fuzz" : NULL;
}

static bool authorized(const McpHttpPolicy *p, const McpHttpHead *h) {
        return mcp_http_authenticate(p, h->authorization, h->x_mcp_auth, NULL) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        uint8_t flags = data[0];
        char *f[N_FIELDS] = {};
        size_t flen[N_FIELDS] = {};
        const char *p = (const char *) data + 1, *end = (const char *) data + size;
        for (int i = 0; i < N_FIELDS && p <= end; i++) {
                const char *nl = i == F_BODY ? NULL : memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                if (!(n == 1 && p[0] == '-')) {
                        f[i] = strndup(p, n); /* headers cannot hold NULs: cut there, like a C parser */
                        FUZZ_CHECK(f[i]);
                        flen[i] = n;
                }
                p += n + 1;
        }

        const char *hosts[] = { f[F_ALLOWED_HOST] };
        const char *origins[] = { f[F_ALLOWED_ORIGIN] };
        McpHttpPolicy pol = {
                .streamable = !(flags & 1),
                .legacy = flags & 2,
                .authenticate = (flags & 4) && f[F_TOKEN] ? token_auth : NULL,
                .auth_userdata = f[F_TOKEN],
                .allowed_hosts = hosts,
                .n_allowed_hosts = f[F_ALLOWED_HOST] ? 1 : 0,
                .any_host = flags & 8,
                .allowed_origins = origins,
                .n_allowed_origins = f[F_ALLOWED_ORIGIN] ? 1 : 0,
                .any_origin = flags & 16,
                .max_body_bytes = 1 << 20,
        };
        McpHttpHead h = {
                .method = f[F_METHOD],
                .path = f[F_PATH],
                .host = f[F_HOST],
                .origin = f[F_ORIGIN],
                .authorization = f[F_AUTHORIZATION],
                .x_mcp_auth = f[F_X_MCP_AUTH],
                .accept = f[F_ACCEPT],
                .content_type = f[F_CONTENT_TYPE],
                .protocol_version = f[F_PROTOCOL_VERSION],
                .session_id = f[F_SESSION_ID],
                .query_session_id = f[F_QUERY_SESSION_ID],
                .has_content_length = flags & 32,
                .content_length = (flags & 64) ? (uint64_t) 1 << 21 : 10,
                .content_length_conflict = flags & 128,
        };
        McpHttpVerdict v;
        mcp_http_check_head(&pol, &h, &v);
        if (v.next == MCP_HTTP_REJECT) {
                FUZZ_CHECK(v.status >= 400 && v.status < 500);
                FUZZ_CHECK(memchr(v.message, '\0', sizeof(v.message)) && v.message[0]);
                FUZZ_CHECK(v.status != 405 || v.allow);
                /* The body of a rejection is one JSON object, whatever the message quotes. */
                char *body = mcp_http_error_body(v.rpc_code, v.message);
                if (body) /* NULL: the message quoted invalid UTF-8 (jansson refuses it) */
                        check_json_line(body, false);
                free(body);
        } else {
                /* A version we do not know is let through only to a POST to /mcp, whose body decides. */
                FUZZ_CHECK(v.protocol_version || (v.version_deferred && v.next == MCP_HTTP_MCP_POST));
                if (v.version_deferred) {
                        McpHttpVerdict refused = v;
                        mcp_http_refuse_version(h.protocol_version, &refused);
                        FUZZ_CHECK(refused.next == MCP_HTTP_REJECT && refused.status == 400);
                }
                FUZZ_CHECK(v.endpoint != MCP_HTTP_EP_NONE);
                /* Anything let through passed the Host, Origin and token checks. */
                FUZZ_CHECK(mcp_http_host_allowed(&pol, h.host));
                FUZZ_CHECK(mcp_http_origin_allowed(&pol, h.origin));
                FUZZ_CHECK(authorized(&pol, &h));
                /* ...and names who asked: the tenant, or nobody without authentication. */
                FUZZ_CHECK(strcmp(v.principal, pol.authenticate ? "fuzz" : "") == 0 || v.next == MCP_HTTP_HEALTH_GET);
        }

        /* Each piece on every field. */
        for (int i = 0; i < N_FIELDS; i++) {
                if (!f[i])
                        continue;
                (void) mcp_http_host_allowed(&pol, f[i]);
                (void) mcp_http_origin_allowed(&pol, f[i]);
                (void) mcp_http_accepts(f[i], "application/json");
                (void) mcp_http_accepts(f[i], "text/event-stream");
                (void) mcp_http_content_type_is_json(f[i]);
                const char *ver = mcp_http_protocol_version(f[i]);
                FUZZ_CHECK(!ver || strlen(ver) == 10);
                (void) mcp_http_session_id_valid(f[i]);
                McpHttpPolicy one = { .authenticate = token_auth, .auth_userdata = f[i] };
                (void) authorized(&one, &h);
        }
        if (f[F_TOKEN] && f[F_X_MCP_AUTH]) {
                size_t a = strlen(f[F_TOKEN]), b = strlen(f[F_X_MCP_AUTH]);
                FUZZ_CHECK(str_secret_equal(f[F_TOKEN], a, f[F_X_MCP_AUTH], b) ==
                           (a == b && memcmp(f[F_TOKEN], f[F_X_MCP_AUTH], a) == 0));
        }

        /* Session ids we issue are valid ids of the promised length. */
        if (size >= MCP_HTTP_SESSION_ID_BYTES) {
                char id[4 * MCP_HTTP_SESSION_ID_BYTES / 3 + 2];
                mcp_http_session_id_format(data + size - MCP_HTTP_SESSION_ID_BYTES, MCP_HTTP_SESSION_ID_BYTES, id);
                FUZZ_CHECK(strlen(id) == MCP_HTTP_SESSION_ID_LEN);
                FUZZ_CHECK(mcp_http_session_id_valid(id));
        }

        if (f[F_BODY]) {
                const char *body = (const char *) data + (size - flen[F_BODY]);
                McpHttpMessageInfo info;
                FUZZ_CHECK(mcp_http_message_classify(body, flen[F_BODY], &info) == 0);
                FUZZ_CHECK(!info.is_initialize || info.kind == MCP_HTTP_MSG_REQUEST);

                /* The 2026 era's header checks, with the head's fields as the headers: a refusal is
                 * one JSON line, and only ever for a request of that era. */
                McpHttpEra era;
                if (mcp_http_era_check(body, flen[F_BODY], f[F_PROTOCOL_VERSION], f[F_SESSION_ID], f[F_QUERY_SESSION_ID],
                                       &era) == 0 && era.reject) {
                        FUZZ_CHECK(era.modern && info.kind == MCP_HTTP_MSG_REQUEST);
                        check_json_line(era.reject, false);
                }
                free(era.reject);

                /* SSE: the payload never ends the event early, nor starts a field of its own. */
                Buf b = {};
                const char *ev = (flags & 128) ? "message" : NULL;
                FUZZ_CHECK(mcp_http_sse_event(&b, ev, body, flen[F_BODY]) == 0);
                FUZZ_CHECK(b.len >= 2 && b.data[b.len - 1] == '\n' && b.data[b.len - 2] == '\n');
                for (size_t i = 0; i + 2 < b.len; i++)
                        FUZZ_CHECK(b.data[i] != '\r' && !(b.data[i] == '\n' && b.data[i + 1] == '\n'));
                for (size_t i = 0; i < b.len - 1;) {
                        const char *line = b.data + i;
                        FUZZ_CHECK(strncmp(line, "data: ", 6) == 0 || (ev && strncmp(line, "event: ", 7) == 0));
                        const char *nl = memchr(line, '\n', b.len - i);
                        FUZZ_CHECK(nl);
                        i = (size_t) (nl - b.data) + 1;
                }
                buf_done(&b);
        }

        for (int i = 0; i < N_FIELDS; i++)
                free(f[i]);
        return 0;
}
