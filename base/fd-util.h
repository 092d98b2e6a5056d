/* fd-util.h: small fd helpers (nonblocking, cloexec, whole writes, recursive removal). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Sets or clears O_NONBLOCK. Returns 0 or -errno. */
int fd_set_nonblock(int fd, bool nonblock);

/* Writes all of buf (retrying EINTR and short writes) to a blocking fd. Returns 0 or -errno. */
int fd_write_all(int fd, const void *buf, size_t len);

/* Writes a whole file (O_CREAT|O_EXCL, the given mode) below dirfd. Returns 0 or -errno. */
int fd_write_file_at(int dirfd, const char *name, const void *buf, size_t len, int mode);

/* Removes the directory tree at path, not following symlinks and not crossing mount points.
 * Returns 0 (also when path does not exist) or -errno of the first failure. */
int rm_rf(const char *path);

/* Counts the open fds of this process (for diagnostics and tests). Returns the count or -errno. */
int fd_count_open(void);
