/* test-egress-policy.c: the egress allowlist (issue 32.1): entries and their errors, names and
 * wildcards and ports, addresses only by literal entries, and the classes of addresses that no name
 * may lead to (loopback, private, shared, link-local, metadata, unique-local; the documentation
 * ranges count as public). */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static EgressPolicy *parse_ok(const char *text) {
        EgressPolicy *p = NULL;
        char *err = NULL;
        int r = egress_policy_parse(text, &p, &err);
        if (r < 0)
                fail_msg("'%s' refused: %s", text, err ? err : strerror(-r));
        return p;
}

/* An address's sockaddr from its text (either family). */
static struct sockaddr_storage addr_of(const char *text) {
        struct sockaddr_storage ss = {};
        if (inet_pton(AF_INET, text, &((struct sockaddr_in *) &ss)->sin_addr) == 1)
                ss.ss_family = AF_INET;
        else if (inet_pton(AF_INET6, text, &((struct sockaddr_in6 *) &ss)->sin6_addr) == 1)
                ss.ss_family = AF_INET6;
        else
                fail_msg("no address: %s", text);
        return ss;
}

static const struct {
        const char *addr;
        EgressAddrClass cls;
} classes[] = {
        { "93.184.216.34", EGRESS_ADDR_PUBLIC },
        { "192.0.2.10", EGRESS_ADDR_PUBLIC },       /* documentation: the tests' internet */
        { "198.51.100.1", EGRESS_ADDR_PUBLIC },
        { "203.0.113.255", EGRESS_ADDR_PUBLIC },
        { "2001:db8::1", EGRESS_ADDR_PUBLIC },
        { "2606:4700::1111", EGRESS_ADDR_PUBLIC },
        { "127.0.0.1", EGRESS_ADDR_LOOPBACK },
        { "127.255.0.9", EGRESS_ADDR_LOOPBACK },
        { "::1", EGRESS_ADDR_LOOPBACK },
        { "10.0.0.1", EGRESS_ADDR_PRIVATE },
        { "172.16.0.1", EGRESS_ADDR_PRIVATE },
        { "172.31.255.255", EGRESS_ADDR_PRIVATE },
        { "172.32.0.1", EGRESS_ADDR_PUBLIC },
        { "192.168.1.1", EGRESS_ADDR_PRIVATE },
        { "100.64.0.1", EGRESS_ADDR_SHARED },
        { "100.127.255.255", EGRESS_ADDR_SHARED },
        { "100.128.0.1", EGRESS_ADDR_PUBLIC },
        { "169.254.169.254", EGRESS_ADDR_METADATA },
        { "fd00:ec2::254", EGRESS_ADDR_METADATA },
        { "169.254.1.1", EGRESS_ADDR_LINK_LOCAL },
        { "fe80::1", EGRESS_ADDR_LINK_LOCAL },
        { "fd12:3456::1", EGRESS_ADDR_UNIQUE_LOCAL },
        { "0.0.0.0", EGRESS_ADDR_UNSPECIFIED },
        { "::", EGRESS_ADDR_UNSPECIFIED },
        { "224.0.0.1", EGRESS_ADDR_MULTICAST },
        { "255.255.255.255", EGRESS_ADDR_MULTICAST },
        { "ff02::1", EGRESS_ADDR_MULTICAST },
        /* IPv6 spellings of IPv4 addresses are their IPv4's class */
        { "::ffff:127.0.0.1", EGRESS_ADDR_LOOPBACK },
        { "::ffff:169.254.169.254", EGRESS_ADDR_METADATA },
        { "::10.0.0.1", EGRESS_ADDR_PRIVATE },
        { "64:ff9b::7f00:1", EGRESS_ADDR_LOOPBACK },
        { "2002:7f00:1::", EGRESS_ADDR_LOOPBACK },
        { "2002:c000:20a::", EGRESS_ADDR_PUBLIC },
};

static void test_classes(void **state) {
        for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
                struct sockaddr_storage ss = addr_of(classes[i].addr);
                EgressAddrClass c = egress_addr_class((struct sockaddr *) &ss);
                if (c != classes[i].cls)
                        fail_msg("%s: %s, expected %s", classes[i].addr, egress_addr_class_name(c),
                                 egress_addr_class_name(classes[i].cls));
        }
}

static const struct {
        const char *in, *out; /* out NULL: refused */
} hosts[] = {
        { "Example.COM", "example.com" },
        { "example.com.", "example.com" },
        { "a-b_c.example", "a-b_c.example" },
        { "127.0.0.1", "127.0.0.1" },
        { "[::1]", "::1" },
        { "[2001:DB8:0:0::1]", "2001:db8::1" },
        { "", NULL },
        { ".", NULL },
        { "a..b", NULL },
        { ".a", NULL },
        { "a b", NULL },
        { "a/b", NULL },
        { "user@example.com", NULL },
        { "example.com:80", NULL },
        { "[::1", NULL },
        { "[fe80::1%eth0]", NULL },
        { "2130706433", NULL },     /* 127.0.0.1, in other spellings the resolver reads */
        { "127.1", NULL },
        { "0x7f.1", NULL },
        { "0177.0.0.1", NULL },
        { "a.0x7f000001", NULL },
};

static void test_hosts(void **state) {
        char out[EGRESS_HOST_MAX + 1];
        for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
                int r = egress_host_normalize(hosts[i].in, strlen(hosts[i].in), out);
                if (hosts[i].out && (r < 0 || strcmp(out, hosts[i].out) != 0))
                        fail_msg("'%s': %d '%s', expected '%s'", hosts[i].in, r, r < 0 ? "" : out, hosts[i].out);
                if (!hosts[i].out && r >= 0)
                        fail_msg("'%s' taken as '%s'", hosts[i].in, out);
        }
        char label[70] = { 0 };
        memset(label, 'a', 64);
        assert_int_equal(egress_host_normalize(label, 64, out), -EINVAL); /* a label is at most 63 */
        assert_int_equal(egress_host_normalize(label, 63, out), 0);
}

static void test_match(void **state) {
        EgressPolicy *p = parse_ok(" pypi.org , *.example.com:8443,files.example.org:80, 127.0.0.1:8000,[::1]:9000 ");
        assert_int_equal(egress_policy_count(p), 5);
        const struct {
                const char *host;
                uint16_t port;
                int rule; /* index, or -1: no rule */
        } cases[] = {
                { "pypi.org", 443, 0 },       { "pypi.org", 80, 0 },          { "pypi.org", 8080, -1 },
                { "www.pypi.org", 443, -1 },  { "a.example.com", 8443, 1 },   { "a.b.example.com", 8443, 1 },
                { "example.com", 8443, -1 },  { "a.example.com", 443, -1 },   { "xexample.com", 8443, -1 },
                { "files.example.org", 80, 2 }, { "files.example.org", 443, -1 }, { "127.0.0.1", 8000, 3 },
                { "127.0.0.1", 80, -1 },      { "::1", 9000, 4 },             { "::1", 8000, -1 },
                { "localhost", 8000, -1 },    { "93.184.216.34", 443, -1 }, /* an address is never a name */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const EgressRule *r = egress_policy_match(p, cases[i].host, cases[i].port);
                const EgressRule *want = cases[i].rule < 0 ? NULL : egress_policy_get(p, (size_t) cases[i].rule);
                if (r != want)
                        fail_msg("%s:%u matched rule %p, expected %d", cases[i].host, cases[i].port, (void *) r, cases[i].rule);
        }
        egress_policy_free(p);
}

/* A name rule reaches public addresses only; a literal rule its own address only. */
static void test_addr_allowed(void **state) {
        EgressPolicy *p = parse_ok("internal.example,10.1.2.3:5000");
        const EgressRule *name = egress_policy_get(p, 0), *lit = egress_policy_get(p, 1);
        const struct {
                const EgressRule *rule;
                const char *addr;
                bool allowed;
        } cases[] = {
                { name, "192.0.2.7", true },      { name, "2001:db8::7", true },    { name, "127.0.0.1", false },
                { name, "10.0.0.1", false },      { name, "169.254.169.254", false }, { name, "::ffff:10.1.2.3", false },
                { name, "fd00::1", false },       { name, "100.64.1.1", false },    { lit, "10.1.2.3", true },
                { lit, "10.1.2.4", false },       { lit, "192.0.2.7", false },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct sockaddr_storage ss = addr_of(cases[i].addr);
                if (egress_addr_allowed(cases[i].rule, (struct sockaddr *) &ss) != cases[i].allowed)
                        fail_msg("%s for rule %s: expected %s", cases[i].addr, cases[i].rule->host,
                                 cases[i].allowed ? "allowed" : "denied");
        }
        egress_policy_free(p);
}

static void test_bad_lists(void **state) {
        const struct {
                const char *text, *want;
        } bad[] = {
                { "a.com,,b.com", "an empty entry" },
                { "a.com,", "an empty entry" },
                { "*", "'*' alone would allow every host" },
                { "*.10.0.0.1", "a wildcard is for names, not addresses" },
                { "a.com:0", "the port is not a number from 1 to 65535" },
                { "a.com:65536", "the port is not a number from 1 to 65535" },
                { "a.com:http", "the port is not a number" },
                { "::1", "an IPv6 address is written in brackets" },
                { "[::1]x", "an IPv6 address is written in brackets" },
                { "http://a.com", "is a URL: write its host alone" },
                { "user@a.com", "is no host name" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                EgressPolicy *p = NULL;
                char *err = NULL;
                assert_int_equal(egress_policy_parse(bad[i].text, &p, &err), -EINVAL);
                assert_null(p);
                if (!err || !strstr(err, bad[i].want))
                        fail_msg("'%s': \"%s\" lacks \"%s\"", bad[i].text, err ? err : "(none)", bad[i].want);
                free(err);
        }
        /* No list is no policy. */
        EgressPolicy *p = (EgressPolicy *) 1;
        assert_int_equal(egress_policy_parse("  ", &p, NULL), 0);
        assert_null(p);
        assert_null(egress_policy_match(NULL, "a.com", 443));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_classes),
                cmocka_unit_test(test_hosts),
                cmocka_unit_test(test_match),
                cmocka_unit_test(test_addr_allowed),
                cmocka_unit_test(test_bad_lists),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
