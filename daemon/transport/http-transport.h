/* http-transport.h: the HTTP transports (Streamable HTTP at /mcp, legacy HTTP+SSE at /sse and
 * /messages) on libmicrohttpd, driven from the ring: one McpServer per HTTP session, every call
 * through the shared scheduler. */
#pragma once

#include <stdbool.h>

#include "config.h"
#include "dispatch.h"
#include "mcp.h"
#include "ring.h"
#include "scheduler.h"
#include "oauth.h"
#include "tenants.h"

typedef struct Http Http;

/* Before anything is set up: refuses (-EACCES, logged, naming MCP_EXEC_AUTH_TOKEN and the address)
 * to serve a non-loopback address (MCP_EXEC_ADDR or the socket systemd passes) without a token,
 * unless cfg->allow_unauthenticated_network. Returns 0 otherwise. */
int http_check_exposure(const Config *cfg);

/* Listens on cfg->addr (or the socket systemd passed, sd_listen_fds(3)) and serves what
 * cfg->transport says (http: both transports; sse: the legacy one). template gives each new session
 * its limits (it is only read, never used as a session). Returns 0 or -errno (logged). */
int http_start(Ring *ring, Scheduler *scheduler, const McpServer *template, const Config *cfg, Http **ret);

/* Shutdown: stops accepting connections, refuses new requests, and ends event streams once what
 * they hold is sent. The caller answers in-flight calls through scheduler_shutdown(). */
void http_stop(Http *h);

/* Tasks (dispatch.h): sessions made from now on create and see them. */
void http_set_tasks(Http *h, DispatchTasks *tasks);

/* Who may call (tenants.h; borrowed, until the next call): each request's credential must be one of
 * theirs when MCP_EXEC_AUTH_TOKEN or MCP_EXEC_TENANTS is set. A reload hands the new set here and
 * frees the old one after: a request already authenticated keeps its tenant's name, not a pointer. */
void http_set_tenants(Http *h, const Tenants *tenants);

/* OAuth access tokens (oauth.h; borrowed, for the transport's life), beside the static tokens:
 * the metadata is served and each 401 names it. */
void http_set_oauth(Http *h, OAuth *oauth);

/* Before http_stop(), when a drain is configured (MCP_EXEC_DRAIN_S): new MCP requests get 503 with
 * Retry-After and GET /health answers draining (503), so a load balancer sends new calls
 * elsewhere, while the calls in flight go on and are answered. The listener stays open (a health
 * check that gets no connection at all would say less). */
void http_drain(Http *h);

/* After http_stop(): true once every call is answered and every request is done. */
bool http_finished(const Http *h);

/* Closes every connection and frees the transport. */
/* Teardown, by ownership: http_cancel_io() completes every request and stops libmicrohttpd, and
 * asks the kernel to cancel the transport's poll and timer; the owner turns the loop until
 * !http_io_busy(), then calls http_free(). */
void http_cancel_io(Http *h);
bool http_io_busy(const Http *h);

/* Cancels what calls remain and frees the transport; if its kernel operations are still in flight
 * (the owner gave up waiting), it is left allocated rather than let the kernel complete into freed
 * memory: we exit next. */
void http_free(Http *h);
