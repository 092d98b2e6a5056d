/* request.c: the egress proxy's request heads (request.h). Strict where being lenient would let
 * what the proxy judged differ from what the server reads: no user information in an authority,
 * no Host header naming another server, no folded or CR-less lines, no NUL, no chunked or doubly
 * sized request body. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "request.h"
#include "str-util.h"

/* A refusal: its status and its sentence. */
#define REFUSE(status, why)              \
        do {                             \
                *ret_status = (status);  \
                *reterr = (why);         \
                return -EINVAL;          \
        } while (0)

/* Methods forwarded as plain HTTP (RFC 9110's, but TRACE and CONNECT). */
static const char *const http_methods[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH" };

/* Headers that are the connection's, not the request's (RFC 9110 7.6.1), and the proxy's own:
 * never forwarded. Host is rebuilt from the authority the proxy checked. */
static const char *const dropped_headers[] = { "connection", "keep-alive", "proxy-connection", "proxy-authorization",
                                               "proxy-authenticate", "te", "trailer", "upgrade", "host" };

static bool is_tchar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* host[:port] of an authority (no user information); port defaults to default_port (0: required). */
static int parse_authority(const char *s, size_t len, uint16_t default_port, char host[EGRESS_HOST_MAX + 1],
                           uint16_t *ret_port) {
        if (memchr(s, '@', len))
                return -EPERM;
        size_t hlen;
        uint16_t port;
        if (egress_authority_split(s, len, &hlen, &port) < 0)
                return -EINVAL;
        if (port == 0)
                port = default_port;
        if (port == 0)
                return -EINVAL;
        *ret_port = port;
        return egress_host_normalize(s, hlen, host);
}

static bool in_list(const char *name, size_t len, const char *const *list, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (strlen(list[i]) == len && strncasecmp(list[i], name, len) == 0)
                        return true;
        return false;
}

int egress_request_parse(const char *buf, size_t len, EgressRequest *ret, int *ret_status, const char **reterr) {
        *ret = (EgressRequest) {};
        *ret_status = 400;
        *reterr = NULL;
        size_t scan = len < EGRESS_HEAD_MAX ? len : EGRESS_HEAD_MAX;
        const char *end = memmem(buf, scan, "\r\n\r\n", 4);
        if (!end) {
                if (memchr(buf, '\0', scan))
                        REFUSE(400, "the request holds a NUL byte");
                if (len >= EGRESS_HEAD_MAX) {
                        *ret_status = 431;
                        *reterr = "the request's head is longer than 8192 bytes";
                        return -EMSGSIZE;
                }
                return -EAGAIN;
        }
        size_t head_len = (size_t) (end - buf) + 4;
        if (memchr(buf, '\0', head_len))
                REFUSE(400, "the request holds a NUL byte");

        /* The request line: METHOD SP target SP HTTP/1.x */
        const char *eol = memmem(buf, head_len, "\r\n", 2);
        if (memchr(buf, '\n', (size_t) (eol - buf)))
                REFUSE(400, "a line ends without CR");
        const char *sp1 = memchr(buf, ' ', (size_t) (eol - buf));
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t) (eol - sp1 - 1)) : NULL;
        if (!sp1 || !sp2 || sp1 == buf || sp2 == sp1 + 1)
                REFUSE(400, "the request line is not METHOD TARGET HTTP/1.1");
        size_t mlen = (size_t) (sp1 - buf);
        for (size_t i = 0; i < mlen; i++)
                if (buf[i] < 'A' || buf[i] > 'Z')
                        REFUSE(400, "the method is not upper-case letters");
        const char *version = sp2 + 1;
        size_t vlen = (size_t) (eol - version);
        if (!((vlen == 8 && memcmp(version, "HTTP/1.1", 8) == 0) || (vlen == 8 && memcmp(version, "HTTP/1.0", 8) == 0)))
                REFUSE(400, "the protocol is not HTTP/1.1 or HTTP/1.0");
        const char *target = sp1 + 1;
        size_t tlen = (size_t) (sp2 - target);
        for (size_t i = 0; i < tlen; i++)
                if ((unsigned char) target[i] <= 0x20 || (unsigned char) target[i] >= 0x7f || target[i] == '#')
                        REFUSE(400, "the request target holds a character a URL may not");

        const char *path = "/";
        size_t path_len = 1;
        int r;
        if (mlen == 7 && memcmp(buf, "CONNECT", 7) == 0) {
                ret->kind = EGRESS_REQUEST_CONNECT;
                r = parse_authority(target, tlen, 0, ret->host, &ret->port);
                if (r == -EPERM)
                        REFUSE(400, "the authority holds user information (user@host)");
                if (r < 0)
                        REFUSE(400, "CONNECT names no host:port");
        } else {
                ret->kind = EGRESS_REQUEST_HTTP;
                if (!in_list(buf, mlen, http_methods, ELEMENTSOF(http_methods)))
                        REFUSE(405, "the proxy forwards GET, HEAD, POST, PUT, DELETE, OPTIONS and PATCH, and CONNECT");
                if (tlen >= 8 && strncasecmp(target, "https://", 8) == 0)
                        REFUSE(400, "an https:// URL is asked for with CONNECT, not through the proxy as plain HTTP");
                if (tlen < 7 || strncasecmp(target, "http://", 7) != 0)
                        REFUSE(400, "the request target is not an absolute http:// URL");
                const char *auth = target + 7;
                size_t alen = strcspn(auth, "/? ");
                if (auth + alen > sp2)
                        alen = (size_t) (sp2 - auth);
                r = parse_authority(auth, alen, 80, ret->host, &ret->port);
                if (r == -EPERM)
                        REFUSE(400, "the authority holds user information (user@host)");
                if (r < 0)
                        REFUSE(400, "the URL names no host");
                if (auth + alen < sp2) {
                        path = auth + alen;
                        path_len = (size_t) (sp2 - path);
                }
        }

        /* The headers. */
        _cleanup_(buf_done) Buf out = {};
        bool forward = ret->kind == EGRESS_REQUEST_HTTP;
        if (forward && (buf_append(&out, buf, mlen + 1) < 0 || (path[0] == '?' && buf_append(&out, "/", 1) < 0) ||
                        buf_append(&out, path, path_len) < 0 || buf_append(&out, " ", 1) < 0 ||
                        buf_append(&out, version, vlen) < 0 || buf_append(&out, "\r\n", 2) < 0))
                goto oom;
        bool have_length = false;
        for (const char *l = eol + 2; l < end + 2;) {
                const char *le = memmem(l, (size_t) (end + 2 - l), "\r\n", 2);
                size_t ll = (size_t) (le - l);
                if (memchr(l, '\n', ll))
                        REFUSE(400, "a line ends without CR");
                if (l[0] == ' ' || l[0] == '\t')
                        REFUSE(400, "a header is folded over lines");
                const char *colon = memchr(l, ':', ll);
                size_t nlen = colon ? (size_t) (colon - l) : 0;
                for (size_t i = 0; i < nlen; i++)
                        if (!is_tchar(l[i]))
                                nlen = 0;
                if (nlen == 0)
                        REFUSE(400, "a header line is not Name: value");
                const char *v = colon + 1, *ve = le;
                while (v < ve && (*v == ' ' || *v == '\t'))
                        v++;
                while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                        ve--;
                for (const char *c = v; c < ve; c++)
                        if ((unsigned char) *c < 0x20 && *c != '\t')
                                REFUSE(400, "a header value holds a control character");
                size_t vl = (size_t) (ve - v);
                if (nlen == 4 && strncasecmp(l, "host", 4) == 0) {
                        char h[EGRESS_HOST_MAX + 1];
                        uint16_t hp;
                        if (parse_authority(v, vl, ret->kind == EGRESS_REQUEST_HTTP ? 80 : ret->port, h, &hp) < 0 ||
                            strcmp(h, ret->host) != 0 || hp != ret->port)
                                REFUSE(400, "the Host header names another server than the request line");
                } else if (nlen == 14 && strncasecmp(l, "content-length", 14) == 0) {
                        uint64_t n = 0;
                        if (vl == 0 || vl > 15)
                                REFUSE(400, "Content-Length is not a length");
                        for (size_t i = 0; i < vl; i++) {
                                if (v[i] < '0' || v[i] > '9')
                                        REFUSE(400, "Content-Length is not a length");
                                n = n * 10 + (uint64_t) (v[i] - '0');
                        }
                        if (have_length && n != ret->content_length)
                                REFUSE(400, "two Content-Length headers disagree");
                        have_length = true;
                        ret->content_length = n;
                } else if (nlen == 17 && strncasecmp(l, "transfer-encoding", 17) == 0 && forward) {
                        *ret_status = 501;
                        *reterr = "a request body in a transfer coding (chunked) is not forwarded: send Content-Length";
                        return -EINVAL;
                }
                if (forward && !in_list(l, nlen, dropped_headers, ELEMENTSOF(dropped_headers)) &&
                    buf_append(&out, l, ll + 2) < 0)
                        goto oom;
                l = le + 2;
        }
        if (forward) {
                /* Host: the authority checked above, in the form a server expects. */
                char hostline[EGRESS_HOST_MAX + 32];
                bool v6 = strchr(ret->host, ':') != NULL;
                int k = ret->port == 80 ? snprintf(hostline, sizeof(hostline), "Host: %s%s%s\r\n", v6 ? "[" : "", ret->host, v6 ? "]" : "")
                                        : snprintf(hostline, sizeof(hostline), "Host: %s%s%s:%u\r\n", v6 ? "[" : "", ret->host,
                                                   v6 ? "]" : "", ret->port);
                if (buf_append(&out, hostline, (size_t) k) < 0 || buf_append(&out, "Connection: close\r\n\r\n", 21) < 0)
                        goto oom;
                ret->forward_len = out.len;
                ret->forward = TAKE_PTR(out.data);
        }
        ret->head_len = head_len;
        *ret_status = 0;
        return 0;
oom:
        *ret_status = 500;
        *reterr = "the proxy is out of memory";
        return -ENOMEM;
}

void egress_request_done(EgressRequest *r) {
        free(r->forward);
        r->forward = NULL;
}
