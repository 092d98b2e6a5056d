/* socket-util.c: listening TCP sockets named by "host:port" (MCP_EXEC_ADDR, MCP_EXEC_AGENT_ADDR). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "socket-util.h"

int socket_addr_parse(const char *addr, struct sockaddr_storage *ret_ss, socklen_t *ret_sl, bool *ret_any) {
        const char *colon = strrchr(addr, ':');
        if (!colon)
                return -EINVAL;
        uint16_t port = (uint16_t) strtoul(colon + 1, NULL, 10);
        size_t hl = (size_t) (colon - addr);
        char host[INET6_ADDRSTRLEN + 2] = "";
        if (hl >= sizeof(host))
                return -EINVAL;
        memcpy(host, addr, hl);
        host[hl] = '\0';

        struct sockaddr_storage ss = {};
        socklen_t sl;
        bool any = hl == 0;
        if (any || host[0] == '[') {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons(port);
                if (!any) {
                        host[hl - 1] = '\0';
                        if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
                                return -EINVAL;
                } else
                        s6->sin6_addr = in6addr_any;
                sl = sizeof(*s6);
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                s4->sin_family = AF_INET;
                s4->sin_port = htons(port);
                if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &s4->sin_addr) != 1)
                        return -EINVAL;
                sl = sizeof(*s4);
        }
        *ret_ss = ss;
        *ret_sl = sl;
        *ret_any = any;
        return 0;
}

int socket_listen_tcp(const char *addr, int *ret_fd) {
        struct sockaddr_storage ss;
        socklen_t sl;
        bool any;
        int r = socket_addr_parse(addr, &ss, &sl, &any);
        if (r < 0)
                return r;
        uint16_t port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *) &ss)->sin6_port
                                                       : ((struct sockaddr_in *) &ss)->sin_port);

        _cleanup_close_ int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 && any && errno == EAFNOSUPPORT) {
                /* No IPv6 on this host: every IPv4 interface. */
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                *s4 = (struct sockaddr_in) { .sin_family = AF_INET, .sin_port = htons(port),
                                             .sin_addr.s_addr = htonl(INADDR_ANY) };
                sl = sizeof(*s4);
                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        }
        if (fd < 0)
                return -errno;
        int one = 1, zero = 0;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ss.ss_family == AF_INET6 && any)
                (void) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        if (bind(fd, (struct sockaddr *) &ss, sl) < 0 || listen(fd, SOMAXCONN) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

void socket_describe(int fd, char *buf, size_t n) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        char a[INET6_ADDRSTRLEN] = "?";
        if (getsockname(fd, (struct sockaddr *) &ss, &sl) < 0) {
                snprintf(buf, n, "fd %d", fd);
                return;
        }
        if (ss.ss_family == AF_INET6) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &ss;
                inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
                snprintf(buf, n, "[%s]:%u", a, ntohs(s6->sin6_port));
        } else if (ss.ss_family == AF_INET) {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &ss;
                inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
                snprintf(buf, n, "%s:%u", a, ntohs(s4->sin_port));
        } else
                snprintf(buf, n, "fd %d (family %d)", fd, ss.ss_family);
}

bool socket_bound_to(int fd, const char *addr) {
        struct sockaddr_storage want, have;
        socklen_t wl, hl = sizeof(have);
        bool any;
        if (socket_addr_parse(addr, &want, &wl, &any) < 0 || getsockname(fd, (struct sockaddr *) &have, &hl) < 0)
                return false;
        if (have.ss_family == AF_INET6) {
                const struct sockaddr_in6 *h6 = (const struct sockaddr_in6 *) &have;
                if (any)
                        return ntohs(h6->sin6_port) == ntohs(((const struct sockaddr_in6 *) &want)->sin6_port) &&
                               IN6_IS_ADDR_UNSPECIFIED(&h6->sin6_addr);
                const struct sockaddr_in6 *w6 = (const struct sockaddr_in6 *) &want;
                return want.ss_family == AF_INET6 && h6->sin6_port == w6->sin6_port &&
                       memcmp(&h6->sin6_addr, &w6->sin6_addr, sizeof(h6->sin6_addr)) == 0;
        }
        if (have.ss_family == AF_INET) {
                const struct sockaddr_in *h4 = (const struct sockaddr_in *) &have;
                if (any)
                        return ntohs(h4->sin_port) == ntohs(((const struct sockaddr_in6 *) &want)->sin6_port) &&
                               h4->sin_addr.s_addr == htonl(INADDR_ANY);
                const struct sockaddr_in *w4 = (const struct sockaddr_in *) &want;
                return want.ss_family == AF_INET && h4->sin_port == w4->sin_port &&
                       h4->sin_addr.s_addr == w4->sin_addr.s_addr;
        }
        return false;
}
