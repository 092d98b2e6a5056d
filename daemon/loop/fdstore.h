/* fdstore.h: systemd's file descriptor store (sd_notify(3) FDSTORE=1, systemd.service(5)
 * FileDescriptorStoreMax=): what the daemon hands to PID 1 to keep across its restart, and takes
 * back at its next start from $LISTEN_FDS/$LISTEN_FDNAMES, beside the socket unit's own fds. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"

/* sd_notify(3): an FDNAME is at most 255 characters, printable ASCII without ':'. */
#define FDSTORE_NAME_MAX 255

typedef struct FdStoreEntry {
        char *name;
        int fd; /* -EBADF once taken */
} FdStoreEntry;

/* The entries of one start whose names begin with a prefix of ours. */
typedef struct FdStore {
        FdStoreEntry *v;
        size_t n;
} FdStore;

/* Whether handing fds to the store can work here: $NOTIFY_SOCKET is set (a service of type notify
 * with NotifyAccess=), and $FDSTORE, which systemd ≥ 254 sets to FileDescriptorStoreMax=, is not
 * 0. systemd 252 sets no $FDSTORE: the caller asks the manager (cgroup_own_fd_store_max()). Fds the
 * store has no room for are closed by PID 1, which ends what they reach as a stop does. */
bool fdstore_available(void);

/* Takes the fds systemd passed whose names begin with one of prefixes (NULL-terminated), O_CLOEXEC from here, and leaves
 * $LISTEN_FDS and $LISTEN_FDNAMES naming only those before them (PID 1 passes a socket unit's fds
 * first, then the store's), so that sd_listen_fds() elsewhere sees the sockets alone. An fd of
 * another name after the sockets is closed and removed from the store (logged). Returns 0 (an
 * empty store when nothing was passed) or -errno. */
int fdstore_take(const char *const *prefixes, FdStore **ret);

/* The fd stored under name, which the caller owns from here; -ENOENT when there is none. */
int fdstore_take_fd(FdStore *s, const char *name);

/* Hands fd (a copy: the caller keeps its own) to the store under name. PID 1 drops a stored fd
 * that reports POLLHUP or POLLERR (a pipe or socket whose peer is gone), which is what we want of
 * a session that died meanwhile. 0 or -errno. */
int fdstore_push(const char *name, int fd);
/* Removes every fd stored under name. 0 or -errno. */
int fdstore_remove(const char *name);

/* Whether name may be an FDNAME. */
bool fdstore_name_valid(const char *name);

/* What no one took (a piece of something ended, a name of an older or newer daemon): logged,
 * closed and removed from the store. */
void fdstore_drop_untaken(FdStore *s);

/* Closes what was not taken (PID 1 keeps its copies: a start that fails before it takes the
 * sessions back leaves them to the next). NULL-safe; returns NULL. */
FdStore *fdstore_free(FdStore *s);
DEFINE_POINTER_CLEANUP(FdStore, fdstore_free)
