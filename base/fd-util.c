/* fd-util.c: small fd helpers (nonblocking, cloexec, whole writes, recursive removal). */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"

int fd_set_nonblock(int fd, bool nonblock) {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0)
                return -errno;
        int nflags = nonblock ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
        if (nflags != flags && fcntl(fd, F_SETFL, nflags) < 0)
                return -errno;
        return 0;
}

int fd_write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

int fd_write_file_at(int dirfd, const char *name, const void *buf, size_t len, int mode) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                                        mode);
        if (fd < 0)
                return -errno;
        return fd_write_all(fd, buf, len);
}

static int rm_rf_children(int dirfd, dev_t dev) {
        DIR *d = fdopendir(dirfd);
        if (!d) {
                (void) close(dirfd);
                return -errno;
        }

        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;

                struct stat st;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (r == 0 && errno != ENOENT)
                                r = -errno;
                        continue;
                }
                if (S_ISDIR(st.st_mode)) {
                        /* Never descend into another file system (a mount in a working directory). */
                        if (st.st_dev != dev)
                                continue;
                        int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0) {
                                if (r == 0)
                                        r = -errno;
                                continue;
                        }
                        int q = rm_rf_children(sub, dev);
                        if (q < 0 && r == 0)
                                r = q;
                        if (unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0 && r == 0 && errno != ENOENT)
                                r = -errno;
                } else if (unlinkat(dirfd, de->d_name, 0) < 0 && r == 0 && errno != ENOENT)
                        r = -errno;
        }
        (void) closedir(d);
        return r;
}

int rm_rf(const char *path) {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;

        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                (void) close(fd);
                return r;
        }
        int r = rm_rf_children(fd, st.st_dev);
        if (rmdir(path) < 0 && r == 0 && errno != ENOENT)
                r = -errno;
        return r;
}

int fd_count_open(void) {
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                return -errno;
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        (void) closedir(d);
        return n - 1; /* the directory's own fd */
}
