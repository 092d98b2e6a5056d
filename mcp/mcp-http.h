/* mcp-http.h: the protocol side of the HTTP transports (Streamable HTTP at /mcp, legacy HTTP+SSE at
 * /sse + /messages), pure and I/O-free: request-head checks and the status each failure gets,
 * the Host/Origin allow-list, the token compare, session ids, message classification, error
 * bodies and SSE framing. The daemon's glue (libmicrohttpd, the ring)
 * asks these functions what to answer and only moves bytes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp.h"
#include "str-util.h"

/* Paths served. */
#define MCP_HTTP_PATH_MCP "/mcp"
#define MCP_HTTP_PATH_SSE "/sse"
#define MCP_HTTP_PATH_MESSAGES "/messages"
#define MCP_HTTP_PATH_METRICS "/metrics" /* Prometheus text (metrics/), whatever the transport */
#define MCP_HTTP_PATH_HEALTH "/health"   /* a load balancer's check: ready or draining (issue 19.2) */
/* Protected Resource Metadata (RFC 9728), with OAuth: this path, and it followed by the resource's. */
#define MCP_HTTP_PATH_PRM "/.well-known/oauth-protected-resource"

/* The `MCP-Protocol-Version` assumed when the header is absent (transports.mdx, 2025-06-18+). */
#define MCP_HTTP_DEFAULT_PROTOCOL_VERSION "2025-03-26"

/* Session ids: base64url of MCP_HTTP_SESSION_ID_BYTES random bytes (visible ASCII only). */
#define MCP_HTTP_SESSION_ID_BYTES 24u
#define MCP_HTTP_SESSION_ID_LEN 32u /* characters, without the NUL */
#define MCP_HTTP_SESSION_ID_MAX 128u /* longest id we look up at all */

/* JSON-RPC codes used in HTTP error bodies (the SDK's choices, mcp.md §2.2). */
enum {
        MCP_HTTP_ERROR_SERVER = -32000,          /* generic transport-level rejection */
        MCP_HTTP_ERROR_SESSION_NOT_FOUND = -32001,
};

typedef enum McpHttpEndpoint {
        MCP_HTTP_EP_NONE,     /* not one of ours */
        MCP_HTTP_EP_MCP,      /* Streamable HTTP */
        MCP_HTTP_EP_SSE,      /* legacy: the event stream (GET) */
        MCP_HTTP_EP_MESSAGES, /* legacy: the POST endpoint */
        MCP_HTTP_EP_METRICS,  /* GET /metrics */
        MCP_HTTP_EP_HEALTH,   /* GET or HEAD /health */
        MCP_HTTP_EP_PRM,      /* GET MCP_HTTP_PATH_PRM[/...], with OAuth */
} McpHttpEndpoint;

/* Why a credential admits nobody, for the answer: *why a sentence (static, never the credential's
 * content), and whether it is an OAuth token that is valid but lacks the scope (403, not 401). */
typedef struct McpHttpAuthFailure {
        const char *why;
        bool insufficient_scope;
} McpHttpAuthFailure;

/* Whose credential (len bytes, as the request carried it, not NUL-terminated) this is: the name of
 * its principal (a tenant: 1 to MCP_PRINCIPAL_MAX bytes, copied into the verdict at once), or NULL
 * if it is nobody's (then *fail may say why). The daemon's answers from its tenants and OAuth
 * (daemon/tenant/); a static token's check takes the same time whatever the credential's bytes. */
typedef const char *(*McpHttpAuthenticateFn)(void *userdata, const char *credential, size_t len,
                                             McpHttpAuthFailure *fail);

/* What the server accepts; strings are borrowed. */
typedef struct McpHttpPolicy {
        bool streamable;                   /* serve /mcp */
        bool legacy;                       /* serve /sse and /messages */
        McpHttpAuthenticateFn authenticate; /* NULL: no authentication, every request's principal is "" */
        void *auth_userdata;
        /* OAuth (issue 31.2): the URL of this resource's metadata (RFC 9728), named in each 401's
         * WWW-Authenticate, and the scope a token needs; NULL: static tokens only. */
        const char *resource_metadata_url;
        const char *oauth_scope;
        const char *const *allowed_hosts;  /* extra Host values (name or name:port), beyond loopback */
        size_t n_allowed_hosts;
        bool any_host;                     /* "*" given: no Host check */
        const char *const *allowed_origins; /* extra Origins (scheme://host[:port]), beyond loopback */
        size_t n_allowed_origins;
        bool any_origin;                   /* "*" given: no Origin check */
        uint64_t max_body_bytes;
} McpHttpPolicy;

/* The head of one request, as the HTTP library parsed it. NULL = header absent. */
typedef struct McpHttpHead {
        const char *method;
        const char *path;  /* without the query */
        const char *host;
        const char *origin;
        const char *authorization;
        const char *x_mcp_auth;
        const char *accept;
        const char *content_type;
        const char *protocol_version; /* MCP-Protocol-Version */
        const char *session_id;       /* Mcp-Session-Id (Streamable) */
        const char *query_session_id; /* ?sessionId= (legacy /messages) */
        bool has_content_length;
        uint64_t content_length;      /* UINT64_MAX: not a number (mcp_http_head_content_length()) */
        const char *transfer_encoding;
        bool content_length_conflict; /* Content-Length given twice with different values */
} McpHttpHead;

/* Sets h's Content-Length from the header's value (NULL: absent). */
void mcp_http_head_content_length(McpHttpHead *h, const char *value);

typedef enum McpHttpNext {
        MCP_HTTP_REJECT,        /* answer status with an error body now */
        MCP_HTTP_MCP_POST,      /* read the body; then classify (session or initialize) */
        MCP_HTTP_MCP_DELETE,    /* end the session named by the header */
        MCP_HTTP_SSE_OPEN,      /* open a legacy event stream (new session) */
        MCP_HTTP_MESSAGES_POST, /* read the body; the session is query_session_id */
        MCP_HTTP_METRICS_GET,   /* answer the metrics text (same Host/Origin/token checks as every path) */
        MCP_HTTP_HEALTH_GET,    /* answer ready (200) or draining (503): Host/Origin checked, no token */
        MCP_HTTP_PRM_GET,       /* answer the Protected Resource Metadata: Host/Origin checked, no token */
} McpHttpNext;

typedef struct McpHttpVerdict {
        McpHttpNext next;
        McpHttpEndpoint endpoint;
        unsigned status;            /* REJECT: the HTTP status */
        int rpc_code;               /* REJECT: JSON-RPC error code for the body */
        char message[256];          /* REJECT: error message for the body (never echoes secrets) */
        const char *allow;          /* 405: the Allow header */
        bool www_authenticate;      /* 401, 403: add `WWW-Authenticate`: www_authenticate_value, else
                                     * MCP_HTTP_WWW_AUTHENTICATE* */
        char www_authenticate_value[768]; /* with OAuth: resource_metadata=, scope=, error= */
        bool token_wrong;           /* 401: a token was sent, and is not ours (error="invalid_token") */
        const char *oauth_error;    /* REJECT: the body is an OAuth error with this code (RFC 6749 §5.2:
                                     * {error, error_description}), not JSON-RPC's (mcp_http_check_head()) */
        bool close;                 /* add `Connection: close`: the body is never read */
        const char *retry_after;    /* 503: the Retry-After header (seconds), or NULL */
        const char *protocol_version; /* effective version (static string) */
        bool version_deferred;      /* MCP_POST with an MCP-Protocol-Version we do not know: the body
                                     * decides (a 2026-era body gets -32022 with the versions we speak,
                                     * any other mcp_http_refuse_version()) */
        /* Who asked (not REJECT, not /health): the authenticator's name for the credential, or ""
         * without authentication. A copy: the request may outlive a reload of the tenants. */
        char principal[MCP_PRINCIPAL_MAX + 1];
} McpHttpVerdict;

/* What a client without the token is told, in the 401's body and WWW-Authenticate (issue 30.3):
 * OAuth-capable clients (Claude Code, the Inspector, mcporter) meet a 401 by trying OAuth discovery
 * and registration, and their users saw only "Dynamic Client Registration rejected". A quoted
 * string of RFC 9110: no '"' or '\\'. */
#define MCP_HTTP_STATIC_TOKEN_HINT                                                                     \
        "mcp-execd takes a static bearer token, not OAuth: configure the client to send the header "  \
        "Authorization: Bearer <token> (the server's operator has the token)"
#define MCP_HTTP_WWW_AUTHENTICATE "Bearer realm=\"mcp-execd\", error_description=\"" MCP_HTTP_STATIC_TOKEN_HINT "\""
#define MCP_HTTP_WWW_AUTHENTICATE_WRONG                                                               \
        "Bearer realm=\"mcp-execd\", error=\"invalid_token\", error_description=\"" MCP_HTTP_STATIC_TOKEN_HINT "\""

/* Decides what to do with a request from its head alone, in this order: framing (400 and close:
 * RFC 9112 §6.3), Host/Origin (403), /health (no token: see mcp_http_health_body()), with a token
 * configured the paths of OAuth's discovery and registration (an OAuth error whose description is
 * MCP_HTTP_STATIC_TOKEN_HINT: 404 for the metadata, 400 for /register, /token and /authorize), token
 * (401), path (404), method (405 + Allow), Content-Length over the cap (413), Content-Type (415),
 * Accept (406), MCP-Protocol-Version (400), session header syntax (400/404). The session's
 * existence is the caller's to check. */
void mcp_http_check_head(const McpHttpPolicy *p, const McpHttpHead *h, McpHttpVerdict *ret);

/* Refusals decided after the head (the session's existence, the server's state, the body). */
typedef enum McpHttpRefusal {
        MCP_HTTP_REFUSE_SESSION_NOT_FOUND, /* 404: no such session, or it ended */
        MCP_HTTP_REFUSE_NO_SESSION,        /* 400: a POST to /mcp without a session that is no initialize */
        MCP_HTTP_REFUSE_SHUTTING_DOWN,     /* 503 */
        MCP_HTTP_REFUSE_DRAINING,          /* 503 with Retry-After: new calls go to another instance */
        MCP_HTTP_REFUSE_TOO_LARGE,         /* 413: a body (without Content-Length) over the cap */
        MCP_HTTP_REFUSE_METRICS,           /* 500: the metrics could not be rendered */
        MCP_HTTP_REFUSE_OUT_OF_MEMORY,     /* 400, JSON-RPC -32603: the message could not be handled */
} McpHttpRefusal;

void mcp_http_refuse(const McpHttpPolicy *p, McpHttpRefusal what, McpHttpVerdict *ret);

/* 400 for an MCP-Protocol-Version we do not speak, on a request of the 2025 era. */
void mcp_http_refuse_version(const char *header, McpHttpVerdict *ret);

/* Every one of max sessions has a call in flight or an open stream (open of them are open): 503
 * with Retry-After (RFC 9110 §10.2.3), since sessions free up as their calls end. */
#define MCP_HTTP_RETRY_AFTER_S "5"
void mcp_http_refuse_sessions_full(unsigned open, unsigned max, McpHttpVerdict *ret);

/* The body of an answer to GET /health: {"status":"ready"} (200) or {"status":"draining"} (503).
 * It needs no token so that a load balancer's check carries none (the token would sit in its
 * configuration and in every check): it tells nothing but whether new calls are taken, which
 * whoever can reach the port learns anyway from a 401 against a 503. Static string. */
const char *mcp_http_health_body(bool draining);

/* The pieces, exposed for tests. */
bool mcp_http_host_allowed(const McpHttpPolicy *p, const char *host);
bool mcp_http_origin_allowed(const McpHttpPolicy *p, const char *origin);
/* The principal of the request's credential, p->authenticate's answer for the first that names one
 * of: `Authorization: Bearer <t>`, `X-MCP-AUTH: <t>`, `X-MCP-AUTH: Bearer <t>` (trailing white space
 * trimmed, an empty one skipped). "" without authentication; NULL if none names a principal (then
 * *fail, when given, has the last one's reason). */
const char *mcp_http_authenticate(const McpHttpPolicy *p, const char *authorization, const char *x_mcp_auth,
                                  McpHttpAuthFailure *fail);
/* True if an Accept header value admits media type `type` ("application/json"), with wildcards,
 * parameters and q=0 handled. NULL (absent) admits everything. */
bool mcp_http_accepts(const char *accept, const char *type);
/* True if a Content-Type's essence is application/json. */
bool mcp_http_content_type_is_json(const char *content_type);
/* The version named by an MCP-Protocol-Version header: the default when absent, NULL when
 * unsupported. Returns a static string. */
const char *mcp_http_protocol_version(const char *header);

/* Session ids. format writes base64url of bytes[0..n) into out (size ≥ 4*n/3+2); valid checks the
 * syntax of a received id (1..MCP_HTTP_SESSION_ID_MAX visible ASCII characters, 0x21–0x7E). */
void mcp_http_session_id_format(const uint8_t *bytes, size_t n, char *out);
bool mcp_http_session_id_valid(const char *id);

typedef enum McpHttpMessageKind {
        MCP_HTTP_MSG_INVALID,      /* not JSON, not an object, a batch: mcp_server_handle() will say why */
        MCP_HTTP_MSG_REQUEST,
        MCP_HTTP_MSG_NOTIFICATION,
        MCP_HTTP_MSG_RESPONSE,
} McpHttpMessageKind;

typedef struct McpHttpMessageInfo {
        McpHttpMessageKind kind;
        bool is_initialize; /* a request whose method is "initialize" */
        bool is_ping;       /* a request whose method is "ping" */
} McpHttpMessageInfo;

/* Classifies one message body (the decision between 200, 202 and 400, and whether a session-less
 * POST may create a session). Returns 0 or -ENOMEM. */
int mcp_http_message_classify(const char *body, size_t len, McpHttpMessageInfo *ret);

/* The era of a POST to /mcp (2026-07-28 basic/transports/streamable-http.mdx). A request whose
 * body's _meta names a protocol version, or whose MCP-Protocol-Version header names a 2026 one,
 * stands alone: no session, and its headers must agree with its body. */
typedef struct McpHttpEra {
        bool modern;
        char *reject; /* modern: a 400 answer (JSON-RPC error with the request's id), or NULL; malloc'd */
} McpHttpEra;

/* The headers, NULL when absent: MCP-Protocol-Version, Mcp-Method, Mcp-Name. Returns 0 or -ENOMEM. */
int mcp_http_era_check(const char *body, size_t len, const char *version, const char *method, const char *name,
                       McpHttpEra *ret);

/* The status of a 2026-era POST answered at once (SDK ladder: a refusal before any method ran is
 * 400, no such method 404; anything a method answered, error or not, is 200; no request 400). */
unsigned mcp_http_modern_reply_status(const McpHttpMessageInfo *info, int rejected);

/* What a POST to /mcp without Mcp-Session-Id may do, by its message. */
typedef enum McpHttpSessionless {
        MCP_HTTP_SESSIONLESS_REFUSE,     /* MCP_HTTP_REFUSE_NO_SESSION (also the 2026-07-28 server/discover probe) */
        MCP_HTTP_SESSIONLESS_INITIALIZE, /* a new session, if there is room (else 503) */
        MCP_HTTP_SESSIONLESS_ANSWER,     /* no message at all: its error is answered, no session is kept */
} McpHttpSessionless;

McpHttpSessionless mcp_http_sessionless_post(const McpHttpMessageInfo *info);

/* The session table's eviction policy (MCP_EXEC_MAX_SESSIONS full, a new session asked for; README
 * "Limits"). A session has "worked" once a message on it was a request other than initialize and
 * ping (tools/list, tools/call, …): notifications and pings are what a flood or a health check
 * sends, and keep a session fresh without making it a client's working session. */
bool mcp_http_message_is_work(const McpHttpMessageInfo *info);

typedef struct McpHttpSessionUse {
        bool legacy;    /* HTTP+SSE: lives as long as its stream */
        bool busy;      /* a call in flight or an open stream */
        bool worked;    /* mcp_http_message_is_work() was true for one of its messages */
} McpHttpSessionUse;

/* Whether a session may be ended to make room for a new one: only a Streamable HTTP session that
 * is not busy and never worked (the least recently used of those goes). If none may, the new
 * session is refused (mcp_http_refuse_sessions_full()): a flood of initializes never ends a
 * working client's session; an idle one ends by MCP_EXEC_SESSION_IDLE_S. */
bool mcp_http_session_evictable(const McpHttpSessionUse *u);

/* The status of a POST to /mcp answered at once with a JSON-RPC message (info: its request):
 * 200 for an answered request, 400 for anything else (no message, a response or notification that
 * got an error, initialize on a session that has one, a session-less message that was no
 * successful initialize). */
unsigned mcp_http_post_reply_status(const McpHttpMessageInfo *info, bool new_session, bool initialized);

/* {"jsonrpc":"2.0","error":{"code":…,"message":…},"id":null}, malloc'd or NULL. */
char *mcp_http_error_body(int code, const char *message);
/* An OAuth error response's body (RFC 6749 §5.2): {"error": code, "error_description": message}. */
char *mcp_http_oauth_error_body(const char *code, const char *message);

/* SSE framing (WHATWG "server-sent events"): an event with an optional name; every line of data
 * becomes its own `data:` line, so a payload can never end the event early. Returns 0 or -ENOMEM. */
int mcp_http_sse_event(Buf *b, const char *event, const char *data, size_t len);
/* A comment line (keep-alive): ": text\n\n". text must hold no newline. */
int mcp_http_sse_comment(Buf *b, const char *text);
