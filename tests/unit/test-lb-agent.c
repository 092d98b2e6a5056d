/* test-lb-agent.c: daemon/loop/lb-agent.h: the agent check's line for each load, and its listener on
 * a ring: the socket systemd passed is found by its address, each connection gets the line of the
 * load at that moment and is closed, and a client that sends and stays holds nothing. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include <systemd/sd-daemon.h>

#include "fd-util.h"
#include "lb-agent.h"
#include "socket-util.h"
#include "unit-net.h"

static void test_answer(void **state) {
        static const struct {
                LbAgentLoad load;
                const char *line;
        } cases[] = {
                { { .slots = 4 }, "ready 100%\n" },
                { { .slots = 4, .running = 1 }, "ready 75%\n" },
                { { .slots = 4, .running = 3 }, "ready 25%\n" },
                /* A queued call takes a slot as a running one does. */
                { { .slots = 4, .running = 2, .queued = 1 }, "ready 25%\n" },
                /* Full, or more than full: 1, never 0 (HAProxy takes 0 for a drain). */
                { { .slots = 4, .running = 4 }, "ready 1%\n" },
                { { .slots = 4, .running = 4, .queued = 60 }, "ready 1%\n" },
                { { .slots = 3, .running = 1 }, "ready 66%\n" },
                /* Ready sandboxes: an empty pool costs a quarter, a full one nothing. */
                { { .slots = 4, .pool_size = 2, .pool_ready = 2 }, "ready 100%\n" },
                { { .slots = 4, .pool_size = 2, .pool_ready = 1 }, "ready 87%\n" },
                { { .slots = 4, .pool_size = 2, .pool_ready = 0 }, "ready 75%\n" },
                { { .slots = 4, .running = 2, .pool_size = 2, .pool_ready = 0 }, "ready 37%\n" },
                { { .slots = 4, .pool_size = 2, .pool_ready = 5 }, "ready 100%\n" }, /* never above 100 */
                { { .slots = 1, .running = 1, .pool_size = 1 }, "ready 1%\n" },
                /* Draining says nothing else. */
                { { .slots = 4, .draining = true }, "drain\n" },
                { { .slots = 4, .running = 4, .queued = 3, .draining = true }, "drain\n" },
                { { .slots = 0 }, "ready 100%\n" }, /* never divides by zero */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char line[LB_AGENT_LINE_MAX];
                size_t n = lb_agent_answer(&cases[i].load, line);
                print_message("case %zu: %s", i, line);
                assert_string_equal(line, cases[i].line);
                assert_int_equal(n, strlen(cases[i].line));
        }
}

static void fake_load(void *userdata, LbAgentLoad *ret) {
        *ret = *(const LbAgentLoad *) userdata;
}

static Ring *ring_or_skip(void) {
        Ring *r = NULL;
        int k = ring_new(8, &r);
        if (k == -ENOSYS || k == -EPERM)
                skip(); /* io_uring disabled here */
        assert_int_equal(k, 0);
        return r;
}

static int connect_to(uint16_t port) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        /* The listener's backlog completes the handshake before the ring accepts. */
        assert_int_equal(connect(fd, (struct sockaddr *) &a, sizeof(a)), 0);
        struct timeval tv = { .tv_sec = 10 };
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
        return fd;
}

/* Turns the ring until the client's line and the end of the connection have come. */
static void read_line(Ring *ring, int fd, char *buf, size_t size) {
        size_t got = 0;
        for (;;) {
                assert_int_equal(ring_run_once(ring, 100000), 0);
                ssize_t n = recv(fd, buf + got, size - 1 - got, MSG_DONTWAIT);
                if (n == 0)
                        break; /* closed by the agent */
                if (n < 0) {
                        assert_true(errno == EAGAIN);
                        continue;
                }
                got += (size_t) n;
                assert_true(got < size - 1);
        }
        buf[got] = '\0';
}

static void test_listener(void **state) {
        /* A listening socket at an ephemeral port, passed as systemd passes one (fd 3, $LISTEN_FDS). */
        if (fcntl(SD_LISTEN_FDS_START, F_GETFD) >= 0)
                skip(); /* fd 3 is taken in this process */
        uint16_t port;
        int l = unit_loopback_listener(&port);
        if (l != SD_LISTEN_FDS_START) { /* socket() gives the lowest free fd: often 3 itself */
                assert_int_equal(dup2(l, SD_LISTEN_FDS_START), SD_LISTEN_FDS_START);
                close(l);
        }
        char addr[32], pid[16];
        snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
        snprintf(pid, sizeof(pid), "%d", (int) getpid());
        setenv("LISTEN_PID", pid, 1);
        setenv("LISTEN_FDS", "1", 1);
        assert_true(socket_bound_to(SD_LISTEN_FDS_START, addr));
        char other[32];
        snprintf(other, sizeof(other), "127.0.0.1:%u", port == 65535 ? 1 : port + 1);
        assert_false(socket_bound_to(SD_LISTEN_FDS_START, other));

        _cleanup_(ring_freep) Ring *ring = ring_or_skip();
        LbAgentLoad load = { .slots = 4 };
        LbAgent *agent = NULL;
        const char *what = NULL;
        assert_int_equal(lb_agent_new(ring, addr, fake_load, &load, &agent, &what), 0);
        int open_before = fd_count_open();

        char line[64];
        int c = connect_to(port);
        read_line(ring, c, line, sizeof(line));
        assert_string_equal(line, "ready 100%\n");
        close(c);

        /* Each connection is answered from the load at that moment. */
        load.running = 3;
        c = connect_to(port);
        read_line(ring, c, line, sizeof(line));
        assert_string_equal(line, "ready 25%\n");
        close(c);

        /* A client that sends (HAProxy's agent-send) and never closes holds nothing: the agent has
         * answered and closed its end, and answers the next one. */
        int stay = connect_to(port);
        assert_int_equal(send(stay, "mcp_execd/i8081\n", 16, 0), 16);
        read_line(ring, stay, line, sizeof(line));
        assert_string_equal(line, "ready 25%\n");
        load.draining = true;
        c = connect_to(port);
        read_line(ring, c, line, sizeof(line));
        assert_string_equal(line, "drain\n");
        close(c);
        /* Only the client's own fd is open beyond what was before: the agent kept none. */
        assert_int_equal(fd_count_open(), open_before + 1);
        close(stay);

        lb_agent_stop(agent);
        while (ring_inflight(ring) > 0)
                assert_int_equal(ring_run_once(ring, 1000000), 0);
        assert_null(lb_agent_free(agent));
        /* The listening socket went with it. */
        assert_true(fcntl(SD_LISTEN_FDS_START, F_GETFD) < 0);
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
}

static void test_bind_failure(void **state) {
        _cleanup_(ring_freep) Ring *ring = ring_or_skip();
        /* Its own socket, at an address that is not this host's: the error says what failed. */
        LbAgentLoad load = { .slots = 1 };
        LbAgent *agent = NULL;
        const char *what = NULL;
        int r = lb_agent_new(ring, "192.0.2.1:18081", fake_load, &load, &agent, &what);
        assert_true(r < 0);
        assert_null(agent);
        assert_non_null(strstr(what, "cannot listen on it"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_answer),
                cmocka_unit_test(test_listener),
                cmocka_unit_test(test_bind_failure),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
