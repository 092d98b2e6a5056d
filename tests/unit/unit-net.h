/* unit-net.h: a loopback listener for the unit tests of what serves or connects over TCP (the egress
 * proxy, the agent check), header-only. Include after cmocka.h. */
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

/* A TCP socket (close-on-exec) listening on 127.0.0.1 at an ephemeral port; its port in *ret_port. */
static inline int unit_loopback_listener(uint16_t *ret_port) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        assert_int_equal(bind(fd, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(listen(fd, 16), 0);
        socklen_t len = sizeof(a);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &a, &len), 0);
        *ret_port = ntohs(a.sin_port);
        return fd;
}
