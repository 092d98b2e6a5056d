/* test-egress-proxy.c: the egress proxy (issue 32.2) on a real io_uring loop, with loopback
 * sockets standing in for a run's listener and for servers (the proxy does not care in which
 * network namespace its listener is). CONNECT relays bytes both ways and counts them; a plain HTTP
 * request reaches the server rebuilt; a host not allowed, a name that resolves to loopback (the
 * rebinding case), a Host header naming another server and a head that never ends are refused
 * with their statuses; each connection's decision is told, and the run's account adds up. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "proxy.h"
#include "ring.h"
#include "unit-fixture.h"
#include "unit-net.h"

static Ring *ring;
static EgressProxy *px;
static EgressDecision decisions[16];
static char decision_hosts[16][EGRESS_HOST_MAX + 1];
static size_t n_decisions;

static void on_decided(void *userdata, const EgressDecision *d) {
        /* The first 16 are kept to look at; all are counted. */
        if (n_decisions < 16) {
                decisions[n_decisions] = *d;
                snprintf(decision_hosts[n_decisions], sizeof(decision_hosts[0]), "%s", d->host);
                decisions[n_decisions].host = decision_hosts[n_decisions];
                decisions[n_decisions].run_id = decisions[n_decisions].tenant = NULL;
                decisions[n_decisions].reason = NULL;
        }
        n_decisions++;
}

static int connect_to(uint16_t port) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int r = connect(fd, (struct sockaddr *) &a, sizeof(a));
        assert_true(r == 0 || errno == EINPROGRESS);
        return fd;
}

/* Turns the loop until fd has something to read (or its end); what it got, NUL-terminated. */
static size_t pump_read(int fd, char *buf, size_t size, size_t want) {
        size_t got = 0;
        for (int i = 0; i < 500 && got < want; i++) {
                assert_int_equal(ring_run_once(ring, 10000), 0);
                ssize_t n = recv(fd, buf + got, size - 1 - got, MSG_DONTWAIT);
                if (n == 0)
                        break;
                if (n > 0)
                        got += (size_t) n;
        }
        buf[got] = '\0';
        return got;
}

/* Turns the loop until the listener has a connection to accept. */
static int pump_accept(int lfd) {
        for (int i = 0; i < 500; i++) {
                assert_int_equal(ring_run_once(ring, 10000), 0);
                struct pollfd p = { .fd = lfd, .events = POLLIN };
                if (poll(&p, 1, 0) == 1)
                        return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        }
        fail_msg("the proxy never connected to the server");
        return -1;
}

static void send_all(int fd, const char *s) {
        assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t) strlen(s));
}

static int setup(void **state) {
        assert_int_equal(ring_new(64, &ring), 0);
        assert_int_equal(egress_proxy_new(&(EgressProxyConfig) { .ring = ring, .decided = on_decided,
                                                                 .head_timeout_usec = 300000 },
                                          &px),
                         0);
        n_decisions = 0;
        return 0;
}

static int teardown(void **state) {
        for (int i = 0; i < 200 && egress_proxy_busy(px); i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_int_equal(egress_proxy_free(px), 0);
        ring = ring_free(ring);
        return 0;
}

/* A run's listener served with this allowlist; its port. */
static EgressRun *run_with(const char *allow, uint16_t *ret_port) {
        EgressPolicy *p = NULL;
        char *err = NULL;
        if (egress_policy_parse(allow, &p, &err) < 0)
                fail_msg("%s: %s", allow, err);
        EgressRun *r = NULL;
        assert_int_equal(egress_run_new(px, unit_loopback_listener(ret_port), p, "0123456789abcdef", "alpha", &r), 0);
        egress_policy_free(p);
        return r;
}

/* A server on loopback, a run whose allowlist is that server alone, and a client connected to the
 * run's proxy. */
typedef struct Allowed {
        uint16_t sport;
        int server, client;
        EgressRun *run;
} Allowed;

static Allowed allowed_open(void) {
        Allowed a = {};
        a.server = unit_loopback_listener(&a.sport);
        char allow[64];
        uint16_t pport;
        snprintf(allow, sizeof(allow), "127.0.0.1:%u", a.sport);
        a.run = run_with(allow, &pport);
        a.client = connect_to(pport);
        return a;
}

/* Turns the loop until the proxy has told n decisions, and checks it has told no more. */
static void decisions_wait(size_t n) {
        for (int i = 0; i < 100 && n_decisions < n; i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_int_equal(n_decisions, n);
}

static void test_connect_relays_and_counts(void **state) {
        Allowed t = allowed_open();
        char req[128], buf[512];
        /* The tunnel's first bytes may come with the head: they go to the server first. */
        snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\nhello", t.sport, t.sport);
        send_all(t.client, req);
        int s = pump_accept(t.server);
        pump_read(t.client, buf, sizeof(buf), 39);
        assert_string_equal(buf, "HTTP/1.1 200 Connection established\r\n\r\n");
        assert_int_equal(recv(s, buf, sizeof(buf), 0), 5);
        send_all(s, "world!");
        assert_int_equal(pump_read(t.client, buf, sizeof(buf), 6), 6);
        assert_string_equal(buf, "world!");
        close(t.client); /* the run's end: the server sees the tunnel's end, then closes too */
        assert_int_equal(pump_read(s, buf, sizeof(buf), 1), 0);
        close(s);
        decisions_wait(1);
        assert_true(decisions[0].allowed);
        assert_string_equal(decisions[0].host, "127.0.0.1");
        assert_int_equal(decisions[0].sent, 5);
        assert_int_equal(decisions[0].received, 6);
        const EgressAccount *a = egress_run_account(t.run);
        assert_int_equal(a->sent, 5);
        assert_int_equal(a->received, 6);
        assert_int_equal(a->connections, 1);
        assert_int_equal(a->n_hosts, 1);
        assert_int_equal(a->hosts[0].port, t.sport);
        assert_true(a->hosts[0].allowed);
        egress_run_free(t.run);
        close(t.server);
}

static void test_http_rebuilt(void **state) {
        Allowed t = allowed_open();
        char req[256], buf[1024];
        snprintf(req, sizeof(req),
                 "POST http://127.0.0.1:%u/x?y HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nProxy-Connection: keep-alive\r\n"
                 "Content-Length: 4\r\n\r\nbodyGET http://other.example/ HTTP/1.1\r\n\r\n", t.sport, t.sport);
        send_all(t.client, req);
        int s = pump_accept(t.server);
        char want[256];
        snprintf(want, sizeof(want), "POST /x?y HTTP/1.1\r\nContent-Length: 4\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n\r\nbody", t.sport);
        size_t n = pump_read(s, buf, sizeof(buf), strlen(want));
        buf[n] = '\0';
        /* exactly the rebuilt request and its body: the request smuggled after it never reaches the server */
        assert_string_equal(buf, want);
        send_all(s, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
        close(s);
        pump_read(t.client, buf, sizeof(buf), 45);
        assert_non_null(strstr(buf, "204 No Content"));
        close(t.client);
        egress_run_free(t.run);
        close(t.server);
}

/* Each refusal: its status line and the proxy's sentence. */
static void refused_on(uint16_t pport, const char *req, const char *status) {
        char buf[1024];
        int c = connect_to(pport);
        send_all(c, req);
        pump_read(c, buf, sizeof(buf), sizeof(buf) - 1);
        if (strncmp(buf, status, strlen(status)) != 0)
                fail_msg("%s -> %s, expected %s", req, buf, status);
        assert_non_null(strstr(buf, "mcp-execd egress: "));
        close(c);
}

static void test_refusals(void **state) {
        uint16_t sport, pport;
        int server = unit_loopback_listener(&sport);
        char allow[96], req[256];
        /* localhost is allowed by name, but it resolves to loopback: a name may not lead there. */
        snprintf(allow, sizeof(allow), "127.0.0.1:%u,localhost:%u,a.example", sport, sport);
        EgressRun *r = run_with(allow, &pport);
        snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", sport + 1u);
        refused_on(pport, req, "HTTP/1.1 403 ");
        refused_on(pport, "CONNECT b.example:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 ");
        snprintf(req, sizeof(req), "CONNECT localhost:%u HTTP/1.1\r\n\r\n", sport);
        refused_on(pport, req, "HTTP/1.1 403 ");
        refused_on(pport, "GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n", "HTTP/1.1 400 ");
        refused_on(pport, "CONNECT user@a.example:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 400 ");
        refused_on(pport, "CONNECT a.exa", "HTTP/1.1 408 "); /* never ends: the head's deadline */
        decisions_wait(6);
        for (size_t i = 0; i < n_decisions; i++)
                assert_false(decisions[i].allowed);
        const EgressAccount *a = egress_run_account(r);
        assert_int_equal(a->connections, 6);
        assert_int_equal(a->denied, 6);
        assert_int_equal(a->sent + a->received, 0);
        bool saw_localhost = false;
        for (size_t i = 0; i < a->n_hosts; i++)
                saw_localhost = saw_localhost || (strcmp(a->hosts[i].host, "localhost") == 0 && !a->hosts[i].allowed);
        assert_true(saw_localhost);
        /* Nothing reached the server. */
        struct pollfd p = { .fd = server, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 0), 0);
        egress_run_free(r);
        close(server);
}

/* The rest of a head that arrives after its deadline's 408 is not read: one decision, nothing
 * connected. */
static void test_late_head(void **state) {
        Allowed t = allowed_open();
        char buf[512], rest[64];
        send_all(t.client, "CONNECT 127.0.0.1:");
        pump_read(t.client, buf, sizeof(buf), 12);
        assert_non_null(strstr(buf, "HTTP/1.1 408 "));
        snprintf(rest, sizeof(rest), "%u HTTP/1.1\r\n\r\n", t.sport);
        (void) send(t.client, rest, strlen(rest), MSG_NOSIGNAL); /* may find it closed */
        for (int i = 0; i < 30; i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_int_equal(n_decisions, 1);
        assert_false(decisions[0].allowed);
        struct pollfd p = { .fd = t.server, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 0), 0);
        close(t.client);
        egress_run_free(t.run);
        close(t.server);
}

/* The account lists at most EGRESS_ACCOUNT_HOSTS_MAX hosts; past them it says so, and its totals
 * still count every connection. */
static void test_account_bounded(void **state) {
        uint16_t pport;
        EgressRun *r = NULL;
        assert_int_equal(egress_run_new(px, unit_loopback_listener(&pport), NULL, "0123456789abcdef", "", &r), 0); /* no list */
        for (unsigned i = 0; i < EGRESS_ACCOUNT_HOSTS_MAX + 2; i++) {
                char req[96];
                snprintf(req, sizeof(req), "CONNECT h%u.example:443 HTTP/1.1\r\n\r\n", i);
                refused_on(pport, req, "HTTP/1.1 403 ");
        }
        decisions_wait(EGRESS_ACCOUNT_HOSTS_MAX + 2);
        const EgressAccount *a = egress_run_account(r);
        assert_int_equal(a->connections, EGRESS_ACCOUNT_HOSTS_MAX + 2);
        assert_int_equal(a->denied, EGRESS_ACCOUNT_HOSTS_MAX + 2);
        assert_int_equal(a->n_hosts, EGRESS_ACCOUNT_HOSTS_MAX);
        assert_true(a->hosts_truncated);
        egress_run_free(r);
}

/* A run that ends with a tunnel open: the tunnel is closed and its decision told. */
static void test_run_end_closes(void **state) {
        Allowed t = allowed_open();
        char req[128], buf[256];
        snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", t.sport);
        send_all(t.client, req);
        int s = pump_accept(t.server);
        pump_read(t.client, buf, sizeof(buf), 39);
        egress_run_free(t.run);
        assert_int_equal(pump_read(s, buf, sizeof(buf), 1), 0); /* the server sees the end */
        assert_int_equal(n_decisions, 1);
        close(s);
        close(t.client);
        close(t.server);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_connect_relays_and_counts),
                fixture_test(test_http_rebuilt),
                fixture_test(test_refusals),
                fixture_test(test_late_head),
                fixture_test(test_account_bounded),
                fixture_test(test_run_end_closes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
