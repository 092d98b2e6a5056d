/* fdstore.c: handing fds to systemd's fd store and taking them back at the next start
 * (fdstore.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "fd-util.h"
#include "fdstore.h"
#include "log.h"

bool fdstore_available(void) {
        const char *sock = getenv("NOTIFY_SOCKET");
        const char *max = getenv("FDSTORE");
        return sock && *sock && (!max || strtoul(max, NULL, 10) > 0);
}

bool fdstore_name_valid(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > FDSTORE_NAME_MAX)
                return false;
        for (const char *p = name; *p; p++)
                if (*p < ' ' || *p > '~' || *p == ':')
                        return false;
        return true;
}

int fdstore_push(const char *name, int fd) {
        if (!fdstore_name_valid(name))
                return -EINVAL;
        char msg[sizeof("FDSTORE=1\nFDNAME=") + FDSTORE_NAME_MAX];
        snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s", name);
        int r = sd_pid_notify_with_fds(0, 0, msg, &fd, 1);
        return r < 0 ? r : r == 0 ? -ENOTCONN : 0;
}

int fdstore_remove(const char *name) {
        if (!fdstore_name_valid(name))
                return -EINVAL;
        int r = sd_notifyf(0, "FDSTOREREMOVE=1\nFDNAME=%s", name);
        return r < 0 ? r : r == 0 ? -ENOTCONN : 0;
}

static void strv_free(char **l) {
        for (size_t i = 0; l && l[i]; i++)
                free(l[i]);
        free(l);
}

static bool name_ours(const char *name, const char *const *prefixes) {
        for (; *prefixes; prefixes++)
                if (strncmp(name, *prefixes, strlen(*prefixes)) == 0)
                        return true;
        return false;
}

int fdstore_take(const char *const *prefixes, FdStore **ret) {
        _cleanup_(fdstore_freep) FdStore *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        char **names = NULL;
        /* Not unset: the transport takes the sockets later with sd_listen_fds(). */
        int n = sd_listen_fds_with_names(0, &names);
        if (n <= 0) {
                strv_free(names);
                *ret = TAKE_PTR(s);
                return n < 0 ? n : 0;
        }
        s->v = calloc((size_t) n, sizeof(*s->v));
        if (!s->v) {
                strv_free(names);
                return -ENOMEM;
        }
        int sockets = 0; /* the socket unit's, before the store's */
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                const char *name = names && names[i] ? names[i] : "unknown";
                if (name_ours(name, prefixes)) {
                        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                        s->v[s->n].name = strdup(name);
                        s->v[s->n].fd = fd;
                        if (!s->v[s->n].name) {
                                safe_close(fd);
                                continue;
                        }
                        s->n++;
                } else if (s->n == 0)
                        sockets = i + 1;
                else {
                        /* Not ours and not the socket unit's: nothing here knows what it is. */
                        log_warning("systemd passed fd %d named \"%s\" after the fd store's; closing it", fd, name);
                        safe_close(fd);
                        (void) fdstore_remove(name);
                }
        }
        if (s->n > 0) {
                /* What sd_listen_fds() reads later: the sockets alone. */
                char count[16];
                snprintf(count, sizeof(count), "%d", sockets);
                _cleanup_free_ char *joined = NULL;
                size_t len = 0;
                for (int i = 0; i < sockets; i++)
                        len += strlen(names && names[i] ? names[i] : "unknown") + 1;
                joined = calloc(1, len + 1);
                for (int i = 0; joined && i < sockets; i++) {
                        if (i > 0)
                                strcat(joined, ":");
                        strcat(joined, names && names[i] ? names[i] : "unknown");
                }
                if (sockets == 0) {
                        (void) unsetenv("LISTEN_FDS");
                        (void) unsetenv("LISTEN_FDNAMES");
                } else {
                        (void) setenv("LISTEN_FDS", count, 1);
                        if (joined)
                                (void) setenv("LISTEN_FDNAMES", joined, 1);
                        else
                                (void) unsetenv("LISTEN_FDNAMES");
                }
        }
        strv_free(names);
        *ret = TAKE_PTR(s);
        return 0;
}

int fdstore_take_fd(FdStore *s, const char *name) {
        for (size_t i = 0; s && i < s->n; i++)
                if (s->v[i].fd >= 0 && strcmp(s->v[i].name, name) == 0)
                        return TAKE_FD(s->v[i].fd);
        return -ENOENT;
}

void fdstore_drop_untaken(FdStore *s) {
        for (size_t i = 0; s && i < s->n; i++) {
                if (s->v[i].fd < 0)
                        continue;
                log_warning("systemd's fd store passed \"%s\", which nothing here takes back; dropping it", s->v[i].name);
                s->v[i].fd = safe_close(s->v[i].fd);
                (void) fdstore_remove(s->v[i].name);
        }
}

FdStore *fdstore_free(FdStore *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++) {
                safe_close(s->v[i].fd);
                free(s->v[i].name);
        }
        free(s->v);
        free(s);
        return NULL;
}
