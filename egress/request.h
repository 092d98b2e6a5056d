/* request.h: the head of a request a run sends its egress proxy (issue 32.2): HTTP CONNECT for TLS
 * (passed through, never looked into) and plain HTTP in absolute form. Pure and strict: what it
 * takes is what the proxy decides on (a name and a port, never a path, query or header is kept),
 * and for plain HTTP the head the origin server gets is rebuilt here, so that what the proxy
 * judged and what the server reads are the same request. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "policy.h"

#define EGRESS_HEAD_MAX 8192 /* a request head (request line and headers) longer than this is refused */

typedef enum EgressRequestKind {
        EGRESS_REQUEST_CONNECT, /* CONNECT host:port: a tunnel, its bytes relayed as they are */
        EGRESS_REQUEST_HTTP,    /* GET http://host[:port]/path …: one request, forwarded rebuilt */
} EgressRequestKind;

typedef struct EgressRequest {
        EgressRequestKind kind;
        char host[EGRESS_HOST_MAX + 1]; /* normalized (egress_host_normalize()) */
        uint16_t port;
        size_t head_len;        /* the bytes of the input the head took, its blank line included */
        /* HTTP: the body's length (Content-Length, 0 without), and the head to send the origin
         * server (malloc'd): the request line in origin form, the headers but the hop-by-hop ones
         * and Proxy-*, and Connection: close (one request per connection: another request on it
         * would go to this server whatever host it names). */
        uint64_t content_length;
        char *forward;
        size_t forward_len;
} EgressRequest;

/* Parses the head at the start of buf (len bytes). Returns 0 with *ret filled; -EAGAIN when the head
 * is not complete yet (read more); or, with *ret_status the HTTP status to answer and *reterr a
 * sentence (static) saying what was wrong: -EMSGSIZE (no end within EGRESS_HEAD_MAX: 431), -EINVAL
 * (malformed, or what the proxy does not forward: 400, 405, 411, 501), -ENOMEM (500). */
int egress_request_parse(const char *buf, size_t len, EgressRequest *ret, int *ret_status, const char **reterr);
void egress_request_done(EgressRequest *r);
