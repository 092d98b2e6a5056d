/* http-stream.c: one HTTP request (HttpRequest) from its head to MHD's completion: its answer
 * (a JSON body, an error, or an event stream fed as messages come), its suspension while it waits,
 * and the watch for the peer's hang-up while MHD is not looking. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http-internal.h"
#include "log.h"

#define HTTP_STREAM_BLOCK_BYTES (32u * 1024u)
/* A client that does not read its stream must not make us hold its replies for ever: past this
 * much beyond a few messages' worth, the stream (and with it the session's runs) is dropped. */
#define HTTP_STREAM_SLACK_BYTES (64u << 20)

static void on_hup(RingOp *op, int res);

HttpRequest *http_request_new(Http *h, struct MHD_Connection *conn) {
        HttpRequest *req = calloc(1, sizeof(*req));
        if (!req)
                return NULL;
        req->http = h;
        req->conn = conn;
        req->fd = -EBADF;
        req->op_hup.callback = on_hup;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
                req->fd = ci->connect_fd;
        LIST_PREPEND(requests, h->requests, req);
        h->n_requests++;
        h->trim = true;
        return req;
}

void http_request_free(HttpRequest *req) {
        Http *h = req->http;
        LIST_REMOVE(requests, h->requests, req);
        h->n_requests--;
        http_session_unref(req->session);
        buf_done(&req->body);
        buf_done(&req->out);
        free(req->reply);
        free(req);
}

static void hup_watch(HttpRequest *req) {
        if (req->fd < 0 || req->op_hup.busy)
                return;
        struct io_uring_sqe *sqe = ring_get_sqe(req->http->ring, &req->op_hup);
        io_uring_prep_poll_add(sqe, req->fd, POLLRDHUP);
}

static void on_hup(RingOp *op, int res) {
        HttpRequest *req = container_of(op, HttpRequest, op_hup);
        if (req->completed) {
                http_request_free(req);
                return;
        }
        if (!req->suspended)
                return; /* resumed meanwhile: MHD watches the socket again */
        if (res > 0) {
                /* The peer closed while MHD was not looking: resume so MHD sees it and ends the
                 * request (which cancels its call or its session's runs). */
                req->hup = true;
                req->suspended = false;
                MHD_resume_connection(req->conn);
                http_schedule(req->http);
                return;
        }
        /* Cancelled by a resume, then suspended again before this completion arrived: watch again. */
        hup_watch(req);
}

void http_request_suspend(HttpRequest *req) {
        if (req->suspended)
                return;
        MHD_suspend_connection(req->conn);
        req->suspended = true;
        hup_watch(req); /* if the previous watch is still being cancelled, on_hup() re-arms */
}

void http_request_resume(HttpRequest *req) {
        if (!req->suspended)
                return;
        req->suspended = false;
        ring_cancel(req->http->ring, &req->op_hup);
        MHD_resume_connection(req->conn);
        /* Not MHD_run() here: we may be inside an MHD callback or walking our own lists. */
        http_schedule(req->http);
}

/* MHD is done with the request (answered, failed, or the peer went away). */
void http_request_complete(HttpRequest *req) {
        Http *h = req->http;
        HttpSession *s = req->session;

        req->completed = true;
        req->suspended = false;
        /* A legacy stream that ends takes its session along (its calls have nowhere to answer). */
        if (s && s->legacy && s->stream == req) {
                s->stream = NULL;
                http_session_close(s, "its event stream ended");
        }
        /* A Streamable HTTP request that ends before its answer: nobody can receive it any more
         * (we keep no event history to resume from), so the run is cancelled. */
        if (req->call) {
                HttpCall *c = TAKE_PTR(req->call);
                c->req = NULL;
                (void) dispatch_call_cancel(&c->call);
        }
        if (req->op_hup.busy) {
                ring_cancel(h->ring, &req->op_hup);
                return; /* freed by on_hup() */
        }
        http_request_free(req);
}

/* ---- event streams -------------------------------------------------------------------------- */

/* Past the cap, what the client has left unread when something more comes for it (an event, or a
 * keep-alive while the stream is quiet): measured before it is queued, so that one answer larger
 * than the cap (a 64 MiB output is a 128 MiB reply) still reaches a client that reads. */
static bool stream_unread_past_cap(HttpRequest *req) {
        size_t pending = req->out.len - req->out_off;
        if (pending <= 4 * req->http->policy.max_body_bytes + HTTP_STREAM_SLACK_BYTES)
                return false;
        log_warning("an HTTP client is not reading its event stream (%zu bytes pending); closing it", pending);
        http_stream_fail(req);
        return true;
}

void http_stream_push(HttpRequest *req, const char *event, const char *data) {
        if (req->stream_end || req->stream_failed || stream_unread_past_cap(req))
                return;
        if (mcp_http_sse_event(&req->out, event, data, strlen(data)) < 0) {
                log_error("out of memory queueing an event; closing the stream");
                http_stream_fail(req);
                return;
        }
        http_request_resume(req);
}

void http_stream_comment(HttpRequest *req, const char *text) {
        if (req->stream_end || req->stream_failed || stream_unread_past_cap(req))
                return;
        if (mcp_http_sse_comment(&req->out, text) < 0)
                return;
        http_request_resume(req);
}

void http_stream_finish(HttpRequest *req) {
        req->stream_end = true;
        http_request_resume(req);
}

void http_stream_fail(HttpRequest *req) {
        req->stream_failed = true;
        /* The reader may not run for a while (a full socket buffer): shut the socket so MHD's next
         * write fails and it ends the request. shutdown(2) leaves the fd itself to MHD. */
        if (req->fd >= 0 && !req->completed)
                (void) shutdown(req->fd, SHUT_RDWR);
        http_request_resume(req);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
        HttpRequest *req = cls;
        if (req->stream_failed || req->hup)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        size_t avail = req->out.len - req->out_off;
        if (avail > 0) {
                size_t n = MIN(avail, max);
                memcpy(buf, req->out.data + req->out_off, n);
                req->out_off += n;
                if (req->out_off == req->out.len)
                        req->out.len = req->out_off = 0;
                req->last_write_usec = now_usec();
                return (ssize_t) n;
        }
        if (req->stream_end)
                return MHD_CONTENT_READER_END_OF_STREAM;
        /* Nothing to send: park the connection until http_stream_push() (returning 0 without it
         * would make MHD call us again at once, a busy loop). */
        http_request_suspend(req);
        return 0;
}

/* ---- responses ------------------------------------------------------------------------------ */

/* Queues status with body (taken; NULL: empty) and at most one extra header. */
enum MHD_Result http_respond(HttpRequest *req, unsigned status, const char *content_type, char *body,
                             const char *h1, const char *v1) {
        struct MHD_Response *resp = body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
                                         : MHD_create_response_from_buffer(0, (void *) "", MHD_RESPMEM_PERSISTENT);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        if (content_type)
                (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        if (h1 && v1)
                (void) MHD_add_response_header(resp, h1, v1);
        if (req->http->stopping)
                (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
        enum MHD_Result r = MHD_queue_response(req->conn, status, resp);
        MHD_destroy_response(resp);
        req->answered = true;
        return r;
}

enum MHD_Result http_respond_json(HttpRequest *req, unsigned status, char *body) {
        if (!body)
                return MHD_NO;
        return http_respond(req, status, "application/json", body, NULL, NULL);
}

/* A refusal as mcp/ decided it: its status, error body and the one header it asks for. */
enum MHD_Result http_respond_verdict(HttpRequest *req, const McpHttpVerdict *v) {
        char *body = v->oauth_error ? mcp_http_oauth_error_body(v->oauth_error, v->message)
                                    : mcp_http_error_body(v->rpc_code, v->message);
        if (!body)
                return MHD_NO;
        const char *h = NULL, *value = NULL;
        if (v->www_authenticate)
                h = MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                value = *v->www_authenticate_value ? v->www_authenticate_value
                        : v->token_wrong            ? MCP_HTTP_WWW_AUTHENTICATE_WRONG
                                                    : MCP_HTTP_WWW_AUTHENTICATE;
        else if (v->status == MHD_HTTP_METHOD_NOT_ALLOWED)
                h = MHD_HTTP_HEADER_ALLOW, value = v->allow ? v->allow : "POST";
        else if (v->retry_after)
                h = MHD_HTTP_HEADER_RETRY_AFTER, value = v->retry_after;
        else if (v->close && !req->http->stopping) /* when stopping, http_respond() adds it */
                h = MHD_HTTP_HEADER_CONNECTION, value = "close";
        return http_respond(req, v->status, "application/json", body, h, value);
}

enum MHD_Result http_respond_refusal(HttpRequest *req, McpHttpRefusal what) {
        McpHttpVerdict v;
        mcp_http_refuse(&req->http->policy, what, &v);
        return http_respond_verdict(req, &v);
}

enum MHD_Result http_respond_stream(HttpRequest *req) {
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, HTTP_STREAM_BLOCK_BYTES,
                                                                      stream_read, req, NULL);
        if (!resp)
                return MHD_NO;
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, no-transform");
        (void) MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        enum MHD_Result r = MHD_queue_response(req->conn, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        req->is_stream = true;
        req->answered = true;
        req->last_write_usec = now_usec();
        return r;
}
