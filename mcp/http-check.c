/* http-check.c: what an HTTP request may do, decided from its head: the Host/Origin allow-list
 * (DNS rebinding), the token, the route, media types, the protocol version and session ids. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "mcp-http.h"
#include "str-util.h"
#include "mcp.h"

/* Versions a Streamable HTTP client may name in MCP-Protocol-Version (the header exists since
 * 2025-06-18; 2025-03-26 is what its absence means; 2024-11-05 clients use the legacy transport
 * but a proxy may still forward the header). */
static const char *const http_versions[] = {
        "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
};

static bool ascii_ieq(const char *a, size_t alen, const char *b) {
        return strlen(b) == alen && strncasecmp(a, b, alen) == 0;
}

/* The host part of an authority ("name", "name:port", "[v6]", "[v6]:port"), as a span. */
static void authority_host(const char *auth, size_t len, const char **ret, size_t *ret_len) {
        if (len > 0 && auth[0] == '[') {
                const char *end = memchr(auth, ']', len);
                *ret = auth;
                *ret_len = end ? (size_t) (end - auth) + 1 : len;
                return;
        }
        const char *colon = memchr(auth, ':', len);
        *ret = auth;
        *ret_len = colon ? (size_t) (colon - auth) : len;
}

static bool host_is_loopback(const char *h, size_t n) {
        if (ascii_ieq(h, n, "localhost") || ascii_ieq(h, n, "[::1]"))
                return true;
        /* 127.0.0.0/8, written as a dotted quad. */
        if (n < 9 || n > 15 || strncmp(h, "127.", 4) != 0)
                return false;
        for (size_t i = 4; i < n; i++)
                if (!(h[i] == '.' || (h[i] >= '0' && h[i] <= '9')))
                        return false;
        return true;
}

/* An authority is allowed if its host is loopback, or it matches a configured entry either whole
 * (with the port) or by host alone (an entry without a port allows every port). */
static bool authority_allowed(const char *auth, size_t len, const char *const *list, size_t n_list) {
        const char *h;
        size_t hl;
        authority_host(auth, len, &h, &hl);
        if (hl == 0)
                return false;
        if (host_is_loopback(h, hl))
                return true;
        for (size_t i = 0; i < n_list; i++)
                if (ascii_ieq(auth, len, list[i]) || ascii_ieq(h, hl, list[i]))
                        return true;
        return false;
}

bool mcp_http_host_allowed(const McpHttpPolicy *p, const char *host) {
        if (p->any_host || !host)
                return true; /* HTTP/1.0 without Host: no browser sends that, so no rebinding */
        return authority_allowed(host, strlen(host), p->allowed_hosts, p->n_allowed_hosts);
}

bool mcp_http_origin_allowed(const McpHttpPolicy *p, const char *origin) {
        if (p->any_origin || !origin)
                return true; /* not a browser: nothing to check (Host still is) */
        size_t len = strlen(origin);
        while (len > 0 && origin[len - 1] == '/')
                len--;
        for (size_t i = 0; i < p->n_allowed_origins; i++)
                if (ascii_ieq(origin, len, p->allowed_origins[i]))
                        return true;
        /* Loopback pages, http or https, any port. "null" (sandboxed frames, file:) is refused. */
        const char *sep = strstr(origin, "://");
        /* The authority starts after "://" and must lie within the trimmed length ("http://" trims to
         * "http:", and len - (auth - origin) would wrap around; found by fuzz-mcp-http). */
        if (!sep || (size_t) (sep - origin) + 3 > len)
                return false;
        size_t scheme_len = (size_t) (sep - origin);
        if (!ascii_ieq(origin, scheme_len, "http") && !ascii_ieq(origin, scheme_len, "https"))
                return false;
        const char *auth = sep + 3;
        size_t alen = len - (size_t) (auth - origin);
        if (memchr(auth, '/', alen) || memchr(auth, '@', alen))
                return false;
        const char *h;
        size_t hl;
        authority_host(auth, alen, &h, &hl);
        return hl > 0 && host_is_loopback(h, hl);
}

/* "Bearer <t>" (scheme case-insensitive, RFC 7235) → <t>; else NULL. */
static const char *bearer_value(const char *v) {
        if (strncasecmp(v, "Bearer", 6) != 0 || (v[6] != ' ' && v[6] != '\t'))
                return NULL;
        v += 6;
        while (*v == ' ' || *v == '\t')
                v++;
        return v;
}

/* p's principal for value (trailing white space trimmed), or NULL: none, or empty. */
static const char *credential_principal(const McpHttpPolicy *p, const char *value, McpHttpAuthFailure *fail) {
        if (!value)
                return NULL;
        size_t n = strlen(value);
        while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'))
                n--;
        if (n == 0)
                return NULL;
        McpHttpAuthFailure f = {};
        const char *who = p->authenticate(p->auth_userdata, value, n, &f);
        if (who && *who && strlen(who) <= MCP_PRINCIPAL_MAX)
                return who;
        if (f.why)
                *fail = f;
        return NULL;
}

const char *mcp_http_authenticate(const McpHttpPolicy *p, const char *authorization, const char *x_mcp_auth,
                                  McpHttpAuthFailure *ret_fail) {
        if (!p->authenticate)
                return "";
        McpHttpAuthFailure fail = {};
        const char *who = NULL;
        if (authorization)
                who = credential_principal(p, bearer_value(authorization), &fail);
        if (!who && x_mcp_auth) /* mcp-exec sends the bare token; accept a Bearer prefix too */
                who = credential_principal(p, x_mcp_auth, &fail);
        if (!who && x_mcp_auth)
                who = credential_principal(p, bearer_value(x_mcp_auth), &fail);
        if (!who && ret_fail)
                *ret_fail = fail;
        return who;
}

/* Whether path is this resource's metadata: MCP_HTTP_PATH_PRM, or it followed by a path (RFC 9728
 * §3.1 puts the resource's path after it; clients try both). */
static bool is_prm_path(const char *path) {
        size_t n = strlen(MCP_HTTP_PATH_PRM);
        return path && strncmp(path, MCP_HTTP_PATH_PRM, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* A 401 or 403 with OAuth (RFC 6750 §3, RFC 9728 §5.1): where the metadata is, the scope, and, when
 * a token was sent, why it was not taken. A quoted-string holds no '"' or '\\' (ours never do). */
static void oauth_challenge(const McpHttpPolicy *p, McpHttpVerdict *v, const char *error, const char *why) {
        int k = snprintf(v->www_authenticate_value, sizeof(v->www_authenticate_value),
                         "Bearer resource_metadata=\"%s\", scope=\"%s\"", p->resource_metadata_url,
                         p->oauth_scope ?: "");
        if (error && k > 0 && (size_t) k < sizeof(v->www_authenticate_value))
                snprintf(v->www_authenticate_value + k, sizeof(v->www_authenticate_value) - (size_t) k,
                         ", error=\"%s\", error_description=\"%s\"", error, why ?: error);
}

static const char *skip_ws(const char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        return s;
}

/* q=0 in a media range's parameters means "not acceptable" (RFC 9110 §12.4.2). */
static bool params_q_zero(const char *p, size_t n) {
        for (size_t i = 0; i + 1 < n; i++) {
                if (p[i] != ';')
                        continue;
                const char *q = skip_ws(p + i + 1);
                if ((q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
                        q += 2;
                        if (*q != '0')
                                return false;
                        q++;
                        if (*q == '.')
                                for (q++; *q == '0'; q++)
                                        ;
                        return *q == '\0' || *q == ';' || *q == ',' || *q == ' ' || *q == '\t';
                }
        }
        return false;
}

bool mcp_http_accepts(const char *accept, const char *type) {
        if (!accept)
                return true;
        const char *slash = strchr(type, '/');
        size_t major_len = slash ? (size_t) (slash - type) : strlen(type);
        for (const char *p = accept; *p;) {
                p = skip_ws(p);
                size_t n = strcspn(p, ",");
                size_t essence = strcspn(p, ";,");
                size_t e = essence;
                while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '\t'))
                        e--;
                bool match = ascii_ieq(p, e, type) || ascii_ieq(p, e, "*/*") ||
                             (e == major_len + 2 && strncasecmp(p, type, major_len + 1) == 0 &&
                              p[major_len + 1] == '*');
                if (match && !params_q_zero(p + essence, n - essence))
                        return true;
                p += n;
                if (*p == ',')
                        p++;
        }
        return false;
}

bool mcp_http_content_type_is_json(const char *ct) {
        if (!ct)
                return false;
        ct = skip_ws(ct);
        size_t e = strcspn(ct, ";");
        while (e > 0 && (ct[e - 1] == ' ' || ct[e - 1] == '\t'))
                e--;
        return ascii_ieq(ct, e, "application/json");
}

const char *mcp_http_protocol_version(const char *header) {
        if (!header)
                return MCP_HTTP_DEFAULT_PROTOCOL_VERSION;
        for (size_t i = 0; i < ELEMENTSOF(http_versions); i++)
                if (strcmp(header, http_versions[i]) == 0)
                        return http_versions[i];
        return NULL;
}

void mcp_http_session_id_format(const uint8_t *bytes, size_t n, char *out) {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        size_t o = 0;
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) bytes[i] << 16;
                size_t k = MIN(n - i, (size_t) 3);
                if (k > 1)
                        v |= (uint32_t) bytes[i + 1] << 8;
                if (k > 2)
                        v |= bytes[i + 2];
                out[o++] = alphabet[(v >> 18) & 63];
                out[o++] = alphabet[(v >> 12) & 63];
                if (k > 1)
                        out[o++] = alphabet[(v >> 6) & 63];
                if (k > 2)
                        out[o++] = alphabet[v & 63];
        }
        out[o] = '\0';
}

bool mcp_http_session_id_valid(const char *id) {
        size_t n = 0;
        for (; id[n]; n++)
                if ((unsigned char) id[n] < 0x21 || (unsigned char) id[n] > 0x7e || n >= MCP_HTTP_SESSION_ID_MAX)
                        return false;
        return n > 0;
}

static void reject(McpHttpVerdict *v, unsigned status, int code, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void reject(McpHttpVerdict *v, unsigned status, int code, const char *fmt, ...) {
        va_list ap;
        v->next = MCP_HTTP_REJECT;
        v->status = status;
        v->rpc_code = code;
        va_start(ap, fmt);
        (void) vsnprintf(v->message, sizeof(v->message), fmt, ap);
        va_end(ap);
}

#define REJECT(...) do { reject(__VA_ARGS__); return; } while (0)

static void refuse(const McpHttpPolicy *p, McpHttpRefusal what, McpHttpVerdict *v);

#define UNAUTHORIZED_MESSAGE "Unauthorized: " MCP_HTTP_STATIC_TOKEN_HINT " (or X-MCP-AUTH: <token>)"
_Static_assert(sizeof(UNAUTHORIZED_MESSAGE) <= sizeof(((McpHttpVerdict *) NULL)->message), "the 401's message is cut");

/* The paths an OAuth client tries after a 401 (the MCP authorization specification: RFC 9728's
 * and RFC 8414's metadata, OpenID's, then the default endpoints at the server's root), each with
 * the status that makes the client stop there and show the error's description: 404 for a
 * metadata document (there is none), 400 for an endpoint. 0: not one of them. */
static unsigned oauth_path_status(const char *path) {
        static const struct {
                const char *prefix;
                unsigned status;
        } paths[] = {
                { "/.well-known/oauth-protected-resource", 404 },
                { "/.well-known/oauth-authorization-server", 404 },
                { "/.well-known/openid-configuration", 404 },
                { "/register", 400 },
                { "/token", 400 },
                { "/authorize", 400 },
        };
        if (!path)
                return 0;
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
                size_t n = strlen(paths[i].prefix);
                if (strncmp(path, paths[i].prefix, n) == 0 && (path[n] == '\0' || path[n] == '/'))
                        return paths[i].status;
        }
        return 0;
}

static McpHttpEndpoint route(const McpHttpPolicy *p, const char *path) {
        if (!path)
                return MCP_HTTP_EP_NONE;
        if (p->streamable && (strcmp(path, MCP_HTTP_PATH_MCP) == 0 || strcmp(path, MCP_HTTP_PATH_MCP "/") == 0))
                return MCP_HTTP_EP_MCP;
        if (p->legacy && (strcmp(path, MCP_HTTP_PATH_SSE) == 0 || strcmp(path, MCP_HTTP_PATH_SSE "/") == 0))
                return MCP_HTTP_EP_SSE;
        if (p->legacy &&
            (strcmp(path, MCP_HTTP_PATH_MESSAGES) == 0 || strcmp(path, MCP_HTTP_PATH_MESSAGES "/") == 0))
                return MCP_HTTP_EP_MESSAGES;
        if (strcmp(path, MCP_HTTP_PATH_METRICS) == 0)
                return MCP_HTTP_EP_METRICS;
        if (strcmp(path, MCP_HTTP_PATH_HEALTH) == 0)
                return MCP_HTTP_EP_HEALTH;
        return MCP_HTTP_EP_NONE;
}

static bool body_checks(const McpHttpPolicy *p, const McpHttpHead *h, McpHttpVerdict *v) {
        if (h->has_content_length && h->content_length > p->max_body_bytes) {
                refuse(p, MCP_HTTP_REFUSE_TOO_LARGE, v);
                return false;
        }
        if (!mcp_http_content_type_is_json(h->content_type)) {
                reject(v, 415, MCP_HTTP_ERROR_SERVER,
                       "Unsupported Media Type: Content-Type must be application/json");
                return false;
        }
        return true;
}

/* An endpoint that serves one method: any other gets 405 with Allow naming it. */
static bool method_check(const char *m, const char *method, McpHttpVerdict *v) {
        if (strcmp(m, method) == 0)
                return true;
        v->allow = method; /* a literal: static */
        reject(v, 405, MCP_HTTP_ERROR_SERVER, "Method not allowed.");
        return false;
}

void mcp_http_refuse_version(const char *header, McpHttpVerdict *v) {
        /* The value is the client's; quote it only if it is short and printable. */
        bool printable = strlen(header) <= 32;
        for (const char *c = header; printable && *c; c++)
                printable = *c >= 0x20 && *c < 0x7f && *c != '"';
        reject(v, 400, MCP_HTTP_ERROR_SERVER,
               "Bad Request: Unsupported protocol version: %s (supported versions: 2026-07-28, 2025-11-25, "
               "2025-06-18, 2025-03-26, 2024-11-05)",
               printable ? header : "(unprintable)");
}

/* defer: a POST, whose body may be of the 2026 era, which names its version there too. */
static bool version_check(const McpHttpHead *h, McpHttpVerdict *v, bool defer) {
        v->protocol_version = mcp_http_protocol_version(h->protocol_version);
        if (v->protocol_version)
                return true;
        if (defer) {
                v->version_deferred = true;
                return true;
        }
        mcp_http_refuse_version(h->protocol_version, v);
        return false;
}

static bool session_syntax(const McpHttpPolicy *p, const McpHttpHead *h, McpHttpVerdict *v) {
        if (h->session_id && !mcp_http_session_id_valid(h->session_id)) {
                refuse(p, MCP_HTTP_REFUSE_SESSION_NOT_FOUND, v);
                return false;
        }
        return true;
}

/* Fills in a refusal, keeping what the head's checks found so far (the protocol version). */
static void refuse(const McpHttpPolicy *p, McpHttpRefusal what, McpHttpVerdict *v) {
        switch (what) {
        case MCP_HTTP_REFUSE_SESSION_NOT_FOUND:
                return reject(v, 404, MCP_HTTP_ERROR_SESSION_NOT_FOUND, "Session not found");
        case MCP_HTTP_REFUSE_NO_SESSION:
                return reject(v, 400, MCP_HTTP_ERROR_SERVER, "Bad Request: No valid session ID provided");
        case MCP_HTTP_REFUSE_SHUTTING_DOWN:
                return reject(v, 503, MCP_HTTP_ERROR_SERVER, "Service Unavailable: mcp-execd is shutting down");
        case MCP_HTTP_REFUSE_DRAINING:
                /* Nothing of the request was done: a load balancer may send it to another instance
                 * (HAProxy's retry-on 503), a client may retry it after a second. */
                v->retry_after = "1";
                return reject(v, 503, MCP_HTTP_ERROR_SERVER,
                              "Service Unavailable: mcp-execd is draining (it finishes the calls in flight, "
                              "then stops); send the request to another instance");
        case MCP_HTTP_REFUSE_TOO_LARGE:
                return reject(v, 413, MCP_HTTP_ERROR_SERVER,
                              "Payload Too Large: the body is over %llu bytes (MCP_EXEC_MAX_MESSAGE_BYTES)",
                              (unsigned long long) p->max_body_bytes);
        case MCP_HTTP_REFUSE_METRICS:
                return reject(v, 500, MCP_HTTP_ERROR_SERVER,
                              "Internal Server Error: the metrics are not available");
        case MCP_HTTP_REFUSE_OUT_OF_MEMORY:
                return reject(v, 400, MCP_ERROR_INTERNAL, "Internal error: out of memory");
        }
        abort();
}

void mcp_http_refuse(const McpHttpPolicy *p, McpHttpRefusal what, McpHttpVerdict *v) {
        *v = (McpHttpVerdict) {};
        refuse(p, what, v);
}

void mcp_http_refuse_sessions_full(unsigned open, unsigned max, McpHttpVerdict *v) {
        *v = (McpHttpVerdict) {};
        reject(v, 503, MCP_HTTP_ERROR_SERVER,
               "Service Unavailable: %u sessions are open (MCP_EXEC_MAX_SESSIONS=%u) and each is in use (has "
               "made a request other than initialize and ping, has a call in flight or an open stream); retry "
               "later",
               open, max);
        v->retry_after = MCP_HTTP_RETRY_AFTER_S;
}

void mcp_http_head_content_length(McpHttpHead *h, const char *value) {
        h->has_content_length = value;
        h->content_length = 0;
        if (!value)
                return;
        char *end;
        errno = 0;
        unsigned long long n = strtoull(value, &end, 10);
        h->content_length = errno || *end ? UINT64_MAX : n;
}

/* RFC 9112 §6.3, framing libmicrohttpd lets through but we refuse, before any other check (as
 * MHD's own 400s for a bad Content-Length or chunk come first), with the connection closed since
 * the body is never read:
 * - Content-Length with Transfer-Encoding: such a request "might indicate an attempt to perform
 *   request smuggling" through a front end and "ought to be handled as an error"; MHD 0.9.75 reads
 *   it as chunked.
 * - chunked not the final coding: no knowable length, "MUST respond with 400 and then close"; MHD
 *   knows only "chunked" and would wait for the body till its timeout.
 * - two different Content-Lengths: "invalid" (MHD 0.9.75 takes one of them).
 * (A NUL in a header cannot be seen: MHD 0.9.75 ends the value at it.) */
static bool framing_check(const McpHttpHead *h, McpHttpVerdict *v) {
        const char *bad = NULL;
        if (h->transfer_encoding && h->has_content_length)
                bad = "Bad Request: both Content-Length and Transfer-Encoding";
        else if (h->transfer_encoding && strcasecmp(h->transfer_encoding, "chunked") != 0)
                bad = "Bad Request: the only Transfer-Encoding accepted is chunked";
        else if (h->content_length_conflict)
                bad = "Bad Request: Content-Length given twice with different values";
        if (!bad)
                return true;
        reject(v, 400, MCP_HTTP_ERROR_SERVER, "%s", bad);
        v->close = true;
        return false;
}

/* A path answered to GET and HEAD alone, before the token. */
static void get_or_head(const McpHttpHead *h, McpHttpEndpoint endpoint, McpHttpNext next, McpHttpVerdict *v) {
        v->endpoint = endpoint;
        const char *m = h->method ? h->method : "";
        if (strcmp(m, "HEAD") != 0 && !method_check(m, "GET", v)) {
                v->allow = "GET, HEAD";
                return;
        }
        v->next = next;
}

void mcp_http_check_head(const McpHttpPolicy *p, const McpHttpHead *h, McpHttpVerdict *v) {
        *v = (McpHttpVerdict) { .next = MCP_HTTP_REJECT, .protocol_version = MCP_HTTP_DEFAULT_PROTOCOL_VERSION };

        if (!framing_check(h, v))
                return;

        /* 403 before anything else: a rebinding page learns nothing, not even whether a token is
         * needed (transports.mdx "Security Warning"). */
        if (!mcp_http_host_allowed(p, h->host))
                REJECT(v, 403, MCP_HTTP_ERROR_SERVER, "Forbidden: Host header not allowed");
        if (!mcp_http_origin_allowed(p, h->origin))
                REJECT(v, 403, MCP_HTTP_ERROR_SERVER, "Forbidden: Origin header not allowed");
        /* Before the token: a load balancer's check carries none (mcp-http.h); the metadata is how
         * a client learns where to get one. */
        if (route(p, h->path) == MCP_HTTP_EP_HEALTH) {
                get_or_head(h, MCP_HTTP_EP_HEALTH, MCP_HTTP_HEALTH_GET, v);
                return;
        }
        if (p->authenticate && p->resource_metadata_url && is_prm_path(h->path)) {
                get_or_head(h, MCP_HTTP_EP_PRM, MCP_HTTP_PRM_GET, v);
                return;
        }
        if (p->authenticate) {
                unsigned status = oauth_path_status(h->path);
                if (status && p->resource_metadata_url) /* the authorization server is elsewhere */
                        REJECT(v, 404, MCP_HTTP_ERROR_SERVER, "Not Found: this server is an OAuth resource server; "
                               "its authorization server is named in %s", p->resource_metadata_url);
                if (status) {
                        v->oauth_error = "invalid_request";
                        REJECT(v, status, MCP_HTTP_ERROR_SERVER, "%s", MCP_HTTP_STATIC_TOKEN_HINT);
                }
        }
        McpHttpAuthFailure fail = {};
        const char *who = mcp_http_authenticate(p, h->authorization, h->x_mcp_auth, &fail);
        if (!who) {
                v->www_authenticate = true;
                v->token_wrong = h->authorization || h->x_mcp_auth;
                if (p->resource_metadata_url && fail.insufficient_scope) {
                        oauth_challenge(p, v, "insufficient_scope", fail.why);
                        REJECT(v, 403, MCP_HTTP_ERROR_SERVER, "Forbidden: %s (%s)", fail.why, p->oauth_scope ?: "");
                }
                if (p->resource_metadata_url) {
                        if (v->token_wrong && !fail.why)
                                fail.why = "the token is neither a tenant's static token nor an access token";
                        oauth_challenge(p, v, v->token_wrong ? "invalid_token" : NULL, fail.why);
                        REJECT(v, 401, MCP_HTTP_ERROR_SESSION_NOT_FOUND, "Unauthorized: %s",
                               fail.why ?: "an OAuth access token for this server, or a static token, is required "
                                            "as Authorization: Bearer <token> (WWW-Authenticate names the metadata)");
                }
                REJECT(v, 401, MCP_HTTP_ERROR_SESSION_NOT_FOUND, "%s", UNAUTHORIZED_MESSAGE);
        }
        memcpy(v->principal, who, strlen(who) + 1); /* at most MCP_PRINCIPAL_MAX: credential_principal() */

        v->endpoint = route(p, h->path);
        const char *m = h->method ? h->method : "";
        switch (v->endpoint) {
        case MCP_HTTP_EP_NONE:
                REJECT(v, 404, MCP_HTTP_ERROR_SERVER, "Not Found");

        case MCP_HTTP_EP_MCP:
                if (strcmp(m, "POST") == 0) {
                        if (!body_checks(p, h, v))
                                return;
                        if (!mcp_http_accepts(h->accept, "application/json") ||
                            !mcp_http_accepts(h->accept, "text/event-stream") || !h->accept)
                                REJECT(v, 406, MCP_HTTP_ERROR_SERVER,
                                              "Not Acceptable: Client must accept both application/json and "
                                              "text/event-stream");
                        if (!version_check(h, v, true) || !session_syntax(p, h, v))
                                return;
                        v->next = MCP_HTTP_MCP_POST;
                        return;
                }
                if (strcmp(m, "DELETE") == 0) {
                        if (!version_check(h, v, false))
                                return;
                        if (!h->session_id)
                                REJECT(v, 400, MCP_HTTP_ERROR_SERVER,
                                              "Bad Request: Mcp-Session-Id header is required");
                        if (!session_syntax(p, h, v))
                                return;
                        v->next = MCP_HTTP_MCP_DELETE;
                        return;
                }
                v->allow = "POST, DELETE";
                REJECT(v, 405, MCP_HTTP_ERROR_SERVER,
                              strcmp(m, "GET") == 0 ? "Method Not Allowed: this server offers no GET stream"
                                                    : "Method not allowed.");

        case MCP_HTTP_EP_SSE:
                if (!method_check(m, "GET", v))
                        return;
                if (!mcp_http_accepts(h->accept, "text/event-stream"))
                        REJECT(v, 406, MCP_HTTP_ERROR_SERVER,
                                      "Not Acceptable: Client must accept text/event-stream");
                v->protocol_version = "2024-11-05";
                v->next = MCP_HTTP_SSE_OPEN;
                return;

        case MCP_HTTP_EP_MESSAGES:
                if (!method_check(m, "POST", v))
                        return;
                if (!body_checks(p, h, v))
                        return;
                if (!h->query_session_id || !*h->query_session_id)
                        REJECT(v, 400, MCP_HTTP_ERROR_SERVER,
                                      "Bad Request: the sessionId query parameter is required");
                if (!mcp_http_session_id_valid(h->query_session_id)) {
                        refuse(p, MCP_HTTP_REFUSE_SESSION_NOT_FOUND, v);
                        return;
                }
                v->protocol_version = "2024-11-05";
                v->next = MCP_HTTP_MESSAGES_POST;
                return;

        case MCP_HTTP_EP_METRICS:
                if (!method_check(m, "GET", v))
                        return;
                v->next = MCP_HTTP_METRICS_GET;
                return;
        case MCP_HTTP_EP_HEALTH:
        case MCP_HTTP_EP_PRM:
                return; /* answered before the token check */
        }
}

const char *mcp_http_health_body(bool draining) {
        return draining ? "{\"status\":\"draining\"}" : "{\"status\":\"ready\"}";
}
