/* state-dir.c: the daemon's private directory and the removal of those killed daemons left
 * (state-dir.h). The lock is an flock(2) on base/mcp-execd.XXXXXX/lock: the kernel releases it
 * when the daemon's last fd to it closes, however the daemon ends. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "state-dir.h"

#define LOCK_NAME "lock"
#define LOCK_NAME_NEW "lock.new"

int state_dir_new(const char *base, char **ret_path, int *ret_lock_fd) {
        _cleanup_free_ char *dir = NULL;
        if (asprintf(&dir, "%s/" STATE_DIR_PREFIX "XXXXXX", base) < 0) {
                dir = NULL;
                return -ENOMEM;
        }
        if (!mkdtemp(dir))
                return -errno;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = dfd < 0 ? -errno : 0;
        _cleanup_close_ int lfd = -EBADF;
        if (r == 0) {
                lfd = openat(dfd, LOCK_NAME_NEW, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                r = lfd < 0 ? -errno : 0;
        }
        /* Locked under another name, then renamed: a daemon starting now (state_dirs_clean_stale())
         * never finds a "lock" that is not locked yet, so it never takes a live directory for a
         * dead one. */
        if (r == 0 && flock(lfd, LOCK_EX | LOCK_NB) < 0)
                r = -errno;
        if (r == 0 && renameat(dfd, LOCK_NAME_NEW, dfd, LOCK_NAME) < 0)
                r = -errno;
        if (r < 0) {
                (void) rm_rf(dir);
                return r;
        }
        *ret_path = TAKE_PTR(dir);
        *ret_lock_fd = TAKE_FD(lfd);
        return 0;
}

static bool name_is_state_dir(const char *name) {
        size_t n = strlen(STATE_DIR_PREFIX);
        return strncmp(name, STATE_DIR_PREFIX, n) == 0 && strlen(name + n) == 6 && !strchr(name + n, '/');
}

unsigned state_dirs_clean_stale(const char *base) {
        DIR *d = opendir(base);
        if (!d)
                return 0;
        unsigned removed = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (!name_is_state_dir(de->d_name))
                        continue;
                _cleanup_close_ int dfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_uid != geteuid())
                        continue;
                _cleanup_close_ int lfd = openat(dfd, LOCK_NAME, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
                /* Held (EWOULDBLOCK): its daemon lives. Ours now: it is dead, and we keep the lock
                 * while removing, so another daemon starting at once skips it. */
                if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) < 0)
                        continue;
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s/%s", base, de->d_name) < 0) {
                        path = NULL;
                        break;
                }
                if (rm_rf(path) >= 0)
                        removed++;
        }
        (void) closedir(d);
        return removed;
}
