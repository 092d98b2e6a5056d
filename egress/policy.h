/* policy.h: what a run may reach (issue 32.1): an allowlist of names and ports, and the classes of
 * addresses that no name may lead to. Pure: no sockets, no resolver; the proxy (issue 32.2) asks
 * it twice, for the name a request names and for each address that name resolves to.
 *
 * The list is comma-separated entries (a tenant's egress= field, or MCP_EXEC_EGRESS_ALLOW):
 *   example.com          that host, ports 443 and 80
 *   example.com:8443     that host, that port only
 *   *.example.com        any name below it (a.example.com, a.b.example.com), not example.com
 *   127.0.0.1:8000       an address, written literally: the only way to a loopback, private,
 *   [fd00::1]:443        link-local, shared, unique-local or metadata address
 * Names are compared in lower case, without a trailing dot. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cleanup.h"

#define EGRESS_HOST_MAX 253 /* a DNS name's text (RFC 1035), without the trailing dot */

/* What an address is, for the rule that only a literal entry reaches anything but the public
 * internet. The documentation ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24,
 * 2001:db8::/32) count as public, so that tests can stand in for the internet with them. */
typedef enum EgressAddrClass {
        EGRESS_ADDR_PUBLIC,
        EGRESS_ADDR_LOOPBACK,     /* 127.0.0.0/8, ::1 */
        EGRESS_ADDR_PRIVATE,      /* 10/8, 172.16/12, 192.168/16 (RFC 1918) */
        EGRESS_ADDR_SHARED,       /* 100.64.0.0/10 (RFC 6598) */
        EGRESS_ADDR_LINK_LOCAL,   /* 169.254.0.0/16, fe80::/10 */
        EGRESS_ADDR_METADATA,     /* 169.254.169.254, fd00:ec2::254: the clouds' instance metadata */
        EGRESS_ADDR_UNIQUE_LOCAL, /* fc00::/7 */
        EGRESS_ADDR_UNSPECIFIED,  /* 0.0.0.0/8, :: */
        EGRESS_ADDR_MULTICAST,    /* 224.0.0.0/4, ff00::/8, and 240.0.0.0/4 with the broadcast */
        _EGRESS_ADDR_CLASS_MAX,
} EgressAddrClass;

/* The class of an AF_INET or AF_INET6 address (an IPv4-mapped IPv6 address is its IPv4's). */
EgressAddrClass egress_addr_class(const struct sockaddr *sa);
const char *egress_addr_class_name(EgressAddrClass c);

typedef struct EgressRule {
        char host[EGRESS_HOST_MAX + 1]; /* lower case; for a wildcard the domain after "*." */
        bool wildcard;                   /* "*.host" */
        bool literal;                    /* an IP address, written as such (host holds its text) */
        struct sockaddr_storage addr;    /* literal: the address (port 0) */
        uint16_t port;                   /* 0: 443 and 80 */
} EgressRule;

typedef struct EgressPolicy EgressPolicy;

/* Parses the list. An empty list (or only white space) is no policy: *ret NULL, 0. On a bad entry:
 * -EINVAL and *reterr names it and says why. */
int egress_policy_parse(const char *text, EgressPolicy **ret, char **reterr);
EgressPolicy *egress_policy_free(EgressPolicy *p);
/* A copy (NULL for NULL): a run keeps the policy it started with, whatever a reload makes. -ENOMEM. */
int egress_policy_dup(const EgressPolicy *p, EgressPolicy **ret);
DEFINE_POINTER_CLEANUP(EgressPolicy, egress_policy_free)

size_t egress_policy_count(const EgressPolicy *p);
const EgressRule *egress_policy_get(const EgressPolicy *p, size_t i);

/* Normalizes a host as a request names it (a DNS name, an IPv4 address, or an IPv6 address
 * in brackets) into ret: lower case, no trailing dot, no brackets. -EINVAL when it is none of those
 * (empty, a character outside [a-z0-9.-_], an empty or 64-character label, too long). */
int egress_host_normalize(const char *host, size_t len, char ret[EGRESS_HOST_MAX + 1]);

/* Splits "host[:port]" (host may be "[v6]", and a bare IPv6 address is refused: which colon would
 * start its port?) at its port: the host's length, and the port (0: none given). -ERANGE for a port
 * that is not 1..65535 in decimal, -EINVAL for a malformed authority. The allowlist's entries and
 * the proxy's requests are split by this one reading. */
int egress_authority_split(const char *s, size_t len, size_t *ret_host_len, uint16_t *ret_port);

/* The rule that lets a request for host (normalized) and port through, or NULL. A name is matched
 * by name rules, an address only by literal rules (an IP literal asked for is never a name). */
const EgressRule *egress_policy_match(const EgressPolicy *p, const char *host, uint16_t port);

/* Whether a connection to addr may be made for rule: a public address always (rule's name
 * resolved there); any other class only when rule is that very address, written literally. So a
 * name that resolves to 127.0.0.1 or 169.254.169.254 never reaches it (DNS rebinding). */
bool egress_addr_allowed(const EgressRule *rule, const struct sockaddr *addr);
