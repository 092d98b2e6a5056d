/* fuzz-egress-request.c: egress_request_parse() over any bytes, and egress_policy_parse() over the
 * same bytes as a list. A head taken names a normalized host and a port; a plain HTTP request's
 * forwarded head starts with its method and an origin-form target, holds exactly one Host line (the
 * one the proxy wrote) and ends with Connection: close and the blank line, and has no Proxy-*
 * header. A refusal has a status and a sentence. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "policy.h"
#include "request.h"

static size_t count_lines_starting(const char *s, size_t len, const char *prefix) {
        size_t n = 0, pl = strlen(prefix);
        for (const char *l = s; l < s + len;) {
                const char *e = memmem(l, (size_t) (s + len - l), "\r\n", 2);
                if (!e)
                        break;
                n += (size_t) (e - l) >= pl && strncasecmp(l, prefix, pl) == 0;
                l = e + 2;
        }
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        EgressRequest req;
        int status;
        const char *why;
        int r = egress_request_parse((const char *) data, size, &req, &status, &why);
        if (r == 0) {
                char norm[EGRESS_HOST_MAX + 1];
                FUZZ_CHECK(status == 0 && req.port > 0 && req.head_len <= size && req.head_len <= EGRESS_HEAD_MAX);
                FUZZ_CHECK(egress_host_normalize(req.host, strlen(req.host), norm) == 0 || strchr(req.host, ':'));
                if (req.kind == EGRESS_REQUEST_HTTP) {
                        const char *f = req.forward;
                        FUZZ_CHECK(f && req.forward_len > 4 && strlen(f) == req.forward_len);
                        const char *sp = strchr(f, ' ');
                        FUZZ_CHECK(sp && sp[1] == '/');
                        FUZZ_CHECK(memcmp(f + req.forward_len - 23, "\r\nConnection: close\r\n\r\n", 23) == 0);
                        FUZZ_CHECK(count_lines_starting(f, req.forward_len, "host:") == 1);
                        FUZZ_CHECK(count_lines_starting(f, req.forward_len, "proxy-") == 0);
                        FUZZ_CHECK(count_lines_starting(f, req.forward_len, "connection:") == 1);
                } else
                        FUZZ_CHECK(!req.forward);
                egress_request_done(&req);
        } else if (r == -EAGAIN) {
                FUZZ_CHECK(size < EGRESS_HEAD_MAX);
        } else {
                FUZZ_CHECK(r == -EINVAL || r == -EMSGSIZE || r == -ENOMEM);
                FUZZ_CHECK(why && status >= 400 && status <= 501);
        }

        /* The same bytes as an allowlist (NUL-terminated copy). */
        char *text = strndup((const char *) data, size);
        if (text) {
                EgressPolicy *p = NULL;
                char *err = NULL;
                r = egress_policy_parse(text, &p, &err);
                FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
                FUZZ_CHECK(r != -EINVAL || (err && strlen(err) < 512));
                for (size_t i = 0; i < egress_policy_count(p); i++) {
                        const EgressRule *rule = egress_policy_get(p, i);
                        FUZZ_CHECK(rule->host[0] && (!rule->wildcard || !rule->literal));
                        /* each rule admits what it names */
                        if (!rule->wildcard)
                                FUZZ_CHECK(egress_policy_match(p, rule->host, rule->port ? rule->port : 443) != NULL);
                }
                free(err);
                egress_policy_free(p);
                free(text);
        }
        return 0;
}
