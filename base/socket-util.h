/* socket-util.h: TCP listening sockets by address ("host:port", as MCP_EXEC_ADDR takes them): parse,
 * bind, describe, and tell whether a socket (one systemd passed) is bound to an address. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* addr as config_parse_addr() accepts it: "host:port", "[v6]:port", ":port" (every interface:
 * IPv6 dual-stack, or IPv4 where IPv6 is off), "localhost:port" (127.0.0.1). Returns 0 or
 * -EINVAL. */
int socket_addr_parse(const char *addr, struct sockaddr_storage *ret_ss, socklen_t *ret_sl, bool *ret_any);

/* A nonblocking, close-on-exec listening TCP socket bound to addr. Returns 0 or -errno. */
int socket_listen_tcp(const char *addr, int *ret_fd);

/* "127.0.0.1:8080", "[::1]:8080", or "fd N" when the fd has no such address. */
void socket_describe(int fd, char *buf, size_t n);

/* Whether fd is a socket bound to addr (its family, address and port; ":port" matches a socket
 * bound to every interface, IPv4 or IPv6). */
bool socket_bound_to(int fd, const char *addr);
