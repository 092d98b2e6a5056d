/* policy.c: the egress allowlist and the address classes (policy.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "str-util.h"

#define EGRESS_RULES_MAX 256 /* a list longer than this is a mistake, not a policy */

struct EgressPolicy {
        size_t n;
        EgressRule *v;
};

/* ---- address classes ------------------------------------------------------------------------ */

/* An IPv4 range: address and prefix length, host order. */
static const struct {
        uint32_t net;
        unsigned len;
        EgressAddrClass cls;
} v4_ranges[] = {
        /* Most specific first: the metadata address lies in link-local. */
        { 0xA9FEA9FEu, 32, EGRESS_ADDR_METADATA },     /* 169.254.169.254 */
        { 0x00000000u, 8, EGRESS_ADDR_UNSPECIFIED },   /* 0.0.0.0/8 */
        { 0x7F000000u, 8, EGRESS_ADDR_LOOPBACK },      /* 127.0.0.0/8 */
        { 0x0A000000u, 8, EGRESS_ADDR_PRIVATE },       /* 10.0.0.0/8 */
        { 0xAC100000u, 12, EGRESS_ADDR_PRIVATE },      /* 172.16.0.0/12 */
        { 0xC0A80000u, 16, EGRESS_ADDR_PRIVATE },      /* 192.168.0.0/16 */
        { 0x64400000u, 10, EGRESS_ADDR_SHARED },       /* 100.64.0.0/10 */
        { 0xA9FE0000u, 16, EGRESS_ADDR_LINK_LOCAL },   /* 169.254.0.0/16 */
        { 0xE0000000u, 3, EGRESS_ADDR_MULTICAST },     /* 224.0.0.0/4 and 240.0.0.0/4 (reserved, broadcast) */
};

static EgressAddrClass v4_class(uint32_t a) {
        for (size_t i = 0; i < ELEMENTSOF(v4_ranges); i++) {
                uint32_t mask = v4_ranges[i].len ? ~0u << (32 - v4_ranges[i].len) : 0;
                if ((a & mask) == v4_ranges[i].net)
                        return v4_ranges[i].cls;
        }
        return EGRESS_ADDR_PUBLIC;
}

static uint32_t v4_at(const uint8_t *b) {
        return (uint32_t) b[0] << 24 | (uint32_t) b[1] << 16 | (uint32_t) b[2] << 8 | b[3];
}

static EgressAddrClass v6_class(const struct in6_addr *a) {
        const uint8_t *b = a->s6_addr;
        static const uint8_t zero[16], metadata[16] = { 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02 };
        static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
        if (memcmp(b, zero, 16) == 0)
                return EGRESS_ADDR_UNSPECIFIED;
        if (memcmp(b, zero, 15) == 0 && b[15] == 1)
                return EGRESS_ADDR_LOOPBACK;
        /* Addresses that carry an IPv4 address are its class: mapped (::ffff:a.b.c.d), compatible
         * (::a.b.c.d), NAT64 (64:ff9b::/96), 6to4 (2002:a.b.c.d::/48): each can lead to it. */
        if (IN6_IS_ADDR_V4MAPPED(a) || memcmp(b, zero, 12) == 0 || memcmp(b, nat64, 12) == 0)
                return v4_class(v4_at(b + 12));
        if (b[0] == 0x20 && b[1] == 0x02)
                return v4_class(v4_at(b + 2));
        if (memcmp(b, metadata, 16) == 0)
                return EGRESS_ADDR_METADATA;
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
                return EGRESS_ADDR_LINK_LOCAL;
        if ((b[0] & 0xfe) == 0xfc)
                return EGRESS_ADDR_UNIQUE_LOCAL;
        if (b[0] == 0xff)
                return EGRESS_ADDR_MULTICAST;
        return EGRESS_ADDR_PUBLIC;
}

EgressAddrClass egress_addr_class(const struct sockaddr *sa) {
        if (sa->sa_family == AF_INET)
                return v4_class(ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr));
        if (sa->sa_family == AF_INET6)
                return v6_class(&((const struct sockaddr_in6 *) sa)->sin6_addr);
        return EGRESS_ADDR_UNSPECIFIED; /* no address of the internet */
}

static const char *const class_names[_EGRESS_ADDR_CLASS_MAX] = {
        [EGRESS_ADDR_PUBLIC] = "public",
        [EGRESS_ADDR_LOOPBACK] = "loopback",
        [EGRESS_ADDR_PRIVATE] = "private",
        [EGRESS_ADDR_SHARED] = "shared",
        [EGRESS_ADDR_LINK_LOCAL] = "link-local",
        [EGRESS_ADDR_METADATA] = "cloud metadata",
        [EGRESS_ADDR_UNIQUE_LOCAL] = "unique-local",
        [EGRESS_ADDR_UNSPECIFIED] = "unspecified",
        [EGRESS_ADDR_MULTICAST] = "multicast or reserved",
};

const char *egress_addr_class_name(EgressAddrClass c) {
        return (unsigned) c < _EGRESS_ADDR_CLASS_MAX ? class_names[c] : "?";
}

/* ---- hosts ---------------------------------------------------------------------------------- */

/* An IP address written as a request may write it: dotted quad, or IPv6 in brackets (no zone). */
static bool parse_literal(const char *host, size_t len, struct sockaddr_storage *ret) {
        char buf[64];
        bool v6 = len >= 2 && host[0] == '[' && host[len - 1] == ']';
        if (v6) {
                host++;
                len -= 2;
        }
        if (len == 0 || len >= sizeof(buf))
                return false;
        memcpy(buf, host, len);
        buf[len] = '\0';
        *ret = (struct sockaddr_storage) {};
        if (v6) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) ret;
                s6->sin6_family = AF_INET6;
                return inet_pton(AF_INET6, buf, &s6->sin6_addr) == 1;
        }
        struct sockaddr_in *s4 = (struct sockaddr_in *) ret;
        s4->sin_family = AF_INET;
        return inet_pton(AF_INET, buf, &s4->sin_addr) == 1;
}

static bool addr_equal(const struct sockaddr *a, const struct sockaddr *b) {
        if (a->sa_family != b->sa_family)
                return false;
        if (a->sa_family == AF_INET)
                return ((const struct sockaddr_in *) a)->sin_addr.s_addr == ((const struct sockaddr_in *) b)->sin_addr.s_addr;
        return memcmp(&((const struct sockaddr_in6 *) a)->sin6_addr, &((const struct sockaddr_in6 *) b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
}

int egress_host_normalize(const char *host, size_t len, char ret[EGRESS_HOST_MAX + 1]) {
        struct sockaddr_storage ss;
        if (parse_literal(host, len, &ss)) {
                /* The canonical text, so that a rule's literal and a request's compare as text too. */
                const void *a = ss.ss_family == AF_INET ? (const void *) &((struct sockaddr_in *) &ss)->sin_addr
                                                        : (const void *) &((struct sockaddr_in6 *) &ss)->sin6_addr;
                return inet_ntop(ss.ss_family, a, ret, EGRESS_HOST_MAX + 1) ? 0 : -EINVAL;
        }
        if (len > 0 && host[len - 1] == '.')
                len--;
        if (len == 0 || len > EGRESS_HOST_MAX)
                return -EINVAL;
        size_t label = 0, last = 0;
        bool last_numeric = true;
        for (size_t i = 0; i < len; i++) {
                char c = host[i];
                if (c >= 'A' && c <= 'Z')
                        c = (char) (c - 'A' + 'a');
                if (c == '.') {
                        if (label == 0)
                                return -EINVAL;
                        label = 0;
                        last = i + 1;
                        last_numeric = true;
                } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
                        if (++label > 63)
                                return -EINVAL;
                        last_numeric = last_numeric && c >= '0' && c <= '9';
                } else
                        return -EINVAL;
                ret[i] = c;
        }
        if (label == 0)
                return -EINVAL;
        /* No top-level name is all digits or hex: "2130706433", "127.1" or "0x7f.1" would be an
         * address in another spelling, which the resolver reads as one. */
        if (last_numeric || (len - last > 2 && ret[last] == '0' && ret[last + 1] == 'x'))
                return -EINVAL;
        ret[len] = '\0';
        return 0;
}

/* ---- the list ------------------------------------------------------------------------------- */

static int parse_port(const char *s, size_t len, uint16_t *ret) {
        unsigned v = 0;
        if (len == 0 || len > 5)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned) (s[i] - '0');
        }
        if (v == 0 || v > 65535)
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

int egress_authority_split(const char *s, size_t len, size_t *ret_host_len, uint16_t *ret_port) {
        const char *colon = NULL;
        if (len > 0 && s[0] == '[') {
                const char *close = memchr(s, ']', len);
                if (!close)
                        return -EINVAL;
                if ((size_t) (close - s) + 1 < len) {
                        if (close[1] != ':')
                                return -EINVAL;
                        colon = close + 1;
                }
        } else {
                colon = memchr(s, ':', len);
                if (colon && memchr(colon + 1, ':', len - (size_t) (colon + 1 - s)))
                        return -EINVAL; /* a bare IPv6 address: which colon starts the port? */
        }
        *ret_port = 0;
        *ret_host_len = colon ? (size_t) (colon - s) : len;
        if (colon && parse_port(colon + 1, len - *ret_host_len - 1, ret_port) < 0)
                return -ERANGE;
        return 0;
}

static int parse_entry(const char *s, size_t len, EgressRule *r, char **reterr) {
        *r = (EgressRule) {};
        if (memmem(s, len, "://", 3))
                return reason_set(reterr, -EINVAL, "'%.*s' is a URL: write its host alone, host or host:port", (int) (len > 80 ? 80 : len), s);
        size_t hlen;
        int k = egress_authority_split(s, len, &hlen, &r->port);
        if (k == -ERANGE)
                return reason_set(reterr, -EINVAL, "'%.*s': the port is not a number from 1 to 65535", (int) len, s);
        if (k < 0)
                return reason_set(reterr, -EINVAL, "'%.*s': an IPv6 address is written in brackets, [addr] or [addr]:port",
                             (int) len, s);
        if (hlen >= 2 && s[0] == '*' && s[1] == '.') {
                r->wildcard = true;
                s += 2;
                hlen -= 2;
        } else if (hlen == 1 && s[0] == '*')
                return reason_set(reterr, -EINVAL, "'*' alone would allow every host: list the hosts, or *.domain");
        if (parse_literal(s, hlen, &r->addr)) {
                if (r->wildcard)
                        return reason_set(reterr, -EINVAL, "'*.%.*s': a wildcard is for names, not addresses", (int) hlen, s);
                r->literal = true;
        }
        if (egress_host_normalize(s, hlen, r->host) < 0)
                return reason_set(reterr, -EINVAL, "'%.*s' is no host name, IPv4 address or [IPv6] address", (int) (hlen > 80 ? 80 : hlen), s);
        return 0;
}

int egress_policy_parse(const char *text, EgressPolicy **ret, char **reterr) {
        if (reterr)
                *reterr = NULL;
        *ret = NULL;
        _cleanup_(egress_policy_freep) EgressPolicy *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        if (text[strspn(text, " \t")] == '\0')
                return 0; /* no list: no policy */
        for (const char *s = text;; s++) {
                size_t n = strcspn(s, ",");
                const char *b = s, *e = s + n;
                while (b < e && (*b == ' ' || *b == '\t'))
                        b++;
                while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
                        e--;
                if (e == b)
                        return reason_set(reterr, -EINVAL, "an empty entry (two commas, or one at an end)");
                if (p->n >= EGRESS_RULES_MAX)
                        return reason_set(reterr, -EINVAL, "more than %d entries", EGRESS_RULES_MAX);
                EgressRule *v = realloc(p->v, (p->n + 1) * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                p->v = v;
                int r = parse_entry(b, (size_t) (e - b), &p->v[p->n], reterr);
                if (r < 0)
                        return r;
                p->n++;
                s += n;
                if (*s == '\0')
                        break;
        }
        if (p->n > 0)
                *ret = TAKE_PTR(p);
        return 0;
}

EgressPolicy *egress_policy_free(EgressPolicy *p) {
        if (p) {
                free(p->v);
                free(p);
        }
        return NULL;
}

int egress_policy_dup(const EgressPolicy *p, EgressPolicy **ret) {
        *ret = NULL;
        if (!p)
                return 0;
        _cleanup_(egress_policy_freep) EgressPolicy *c = calloc(1, sizeof(*c));
        if (!c || !(c->v = malloc(p->n * sizeof(*c->v))))
                return -ENOMEM;
        memcpy(c->v, p->v, p->n * sizeof(*c->v));
        c->n = p->n;
        *ret = TAKE_PTR(c);
        return 0;
}

size_t egress_policy_count(const EgressPolicy *p) {
        return p ? p->n : 0;
}

const EgressRule *egress_policy_get(const EgressPolicy *p, size_t i) {
        return p && i < p->n ? &p->v[i] : NULL;
}

static bool port_matches(const EgressRule *r, uint16_t port) {
        return r->port ? r->port == port : port == 443 || port == 80;
}

const EgressRule *egress_policy_match(const EgressPolicy *p, const char *host, uint16_t port) {
        if (!p)
                return NULL;
        /* host is normalized: an address is its bare text (egress_host_normalize()). */
        struct sockaddr_storage ss = {};
        bool literal = false;
        if (inet_pton(AF_INET, host, &((struct sockaddr_in *) &ss)->sin_addr) == 1) {
                ss.ss_family = AF_INET;
                literal = true;
        } else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *) &ss)->sin6_addr) == 1) {
                ss.ss_family = AF_INET6;
                literal = true;
        }
        size_t hl = strlen(host);
        for (size_t i = 0; i < p->n; i++) {
                const EgressRule *r = &p->v[i];
                if (!port_matches(r, port) || r->literal != literal)
                        continue;
                if (literal) {
                        if (addr_equal((const struct sockaddr *) &r->addr, (const struct sockaddr *) &ss))
                                return r;
                } else if (!r->wildcard) {
                        if (strcmp(r->host, host) == 0)
                                return r;
                } else {
                        size_t dl = strlen(r->host);
                        if (hl > dl + 1 && host[hl - dl - 1] == '.' && strcmp(host + hl - dl, r->host) == 0)
                                return r;
                }
        }
        return NULL;
}

bool egress_addr_allowed(const EgressRule *rule, const struct sockaddr *addr) {
        if (rule->literal)
                return addr_equal((const struct sockaddr *) &rule->addr, addr);
        return egress_addr_class(addr) == EGRESS_ADDR_PUBLIC;
}
