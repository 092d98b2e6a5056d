/* cgroup-util.c: the cgroupfs file operations both backends use (a systemd scope's cgroup is also
 * split, read and killed through cgroupfs): plain and keyed files, a run's two leaves (supervisor/
 * for the init, payload/ for Python), cgroup.kill and the counters. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cgroup-internal.h"

int cg_reason(char **reterr, int r, const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        int k = vasprintf(reterr, format, ap);
        va_end(ap);
        if (k < 0) {
                *reterr = NULL;
                return -ENOMEM;
        }
        return r;
}

int cg_write_at(int dirfd, const char *file, const char *value) {
        _cleanup_close_ int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        size_t n = strlen(value);
        ssize_t k = write(fd, value, n);
        if (k < 0)
                return -errno;
        return (size_t) k == n ? 0 : -EIO;
}

int cg_read_at(int dirfd, const char *file, char *buf, size_t size) {
        _cleanup_close_ int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        ssize_t k = read(fd, buf, size - 1);
        if (k < 0)
                return -errno;
        buf[k] = '\0';
        return 0;
}

/* The line after p, or NULL at the end of the text. */
static const char *next_line(const char *p) {
        const char *nl = strchr(p, '\n');
        return nl ? nl + 1 : NULL;
}

int cg_keyed_value(const char *text, const char *key, uint64_t *ret) {
        size_t kl = strlen(key);
        for (const char *p = text; p && *p; p = next_line(p))
                if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
                        *ret = strtoull(p + kl + 1, NULL, 10);
                        return 0;
                }
        return -ENOENT;
}

int cg_is_cgroup2(const char *path) {
        struct statfs s;
        if (statfs(path, &s) < 0)
                return -errno;
        return s.f_type == CGROUP2_SUPER_MAGIC;
}

int cg_own_path(pid_t pid, char **ret) {
        char file[64], buf[4096];
        snprintf(file, sizeof(file), "/proc/%d/cgroup", (int) pid);
        int r = cg_read_at(AT_FDCWD, file, buf, sizeof(buf));
        if (r < 0)
                return r;
        for (const char *p = buf; p && *p; p = next_line(p))
                if (strncmp(p, "0::", 3) == 0) {
                        char *path = strndup(p + 3, strcspn(p + 3, "\n"));
                        if (!path)
                                return -ENOMEM;
                        *ret = path;
                        return 0;
                }
        return -ENOENT;
}

/* Only the run's processes can be in from_fd's cgroup (a delegated scope's); one that exits
 * meanwhile is skipped. Eight rounds, for processes forked while we move. */
int cg_move_all(int from_fd, int to_fd) {
        for (unsigned round = 0; round < 8; round++) {
                char buf[512];
                int r = cg_read_at(from_fd, "cgroup.procs", buf, sizeof(buf));
                if (r < 0)
                        return r;
                if (!buf[0])
                        return 0;
                for (char *p = buf, *nl; *p; p = nl ? nl + 1 : p + strlen(p)) {
                        nl = strchr(p, '\n');
                        if (nl)
                                *nl = '\0';
                        if (!*p)
                                continue;
                        r = cg_write_at(to_fd, "cgroup.procs", p);
                        if (r < 0 && r != -ESRCH)
                                return r;
                        if (!nl)
                                break;
                }
        }
        return -EBUSY;
}

/* Order matters: a cgroup with processes cannot enable controllers for children (EBUSY, "no
 * internal processes"), so the init leaves the run's cgroup first. */
int cg_make_leaves(int run_fd, bool move_init, pid_t init_pid, int *ret_supervisor_fd, int *ret_payload_fd) {
        int r;

        if (mkdirat(run_fd, "supervisor", 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mkdirat(run_fd, "payload", 0755) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int supervisor_fd = openat(run_fd, "supervisor", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (supervisor_fd < 0)
                return -errno;
        if (move_init) {
                char pid[32];
                snprintf(pid, sizeof(pid), "%d", (int) init_pid);
                r = cg_write_at(supervisor_fd, "cgroup.procs", pid);
                if (r < 0)
                        return r;
                /* The init's mount helper may have been forked after the manager moved the init:
                 * it is in the scope's own cgroup then, and enabling controllers there fails with
                 * EBUSY (no internal processes) until it is moved too. */
                r = cg_move_all(run_fd, supervisor_fd);
                if (r < 0 && r != -EBUSY) /* EBUSY: one that could not be moved yet, see below */
                        return r;
        }
        /* memory and pids are required; cpu may not be delegated (older user managers). A mount
         * helper that was exiting while we moved it (its move ESRCH, skipped) still counts in the
         * scope's own cgroup for a moment: EBUSY. Seen about once in 300 runs of the fleet test
         * (and a first move that gave up on it returned that EBUSY before this retry): up to 200
         * ms, on this rare path only, until the helper is gone or moved. */
        for (unsigned i = 0;; i++) {
                r = cg_write_at(run_fd, "cgroup.subtree_control", "+memory +pids");
                if (r != -EBUSY || !move_init || i == 200)
                        break;
                (void) usleep(1000);
                r = cg_move_all(run_fd, supervisor_fd);
                if (r < 0 && r != -EBUSY)
                        return r;
        }
        if (r < 0)
                return r;
        (void) cg_write_at(run_fd, "cgroup.subtree_control", "+cpu");
        _cleanup_close_ int payload_fd = openat(run_fd, "payload", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (payload_fd < 0)
                return -errno;
        *ret_supervisor_fd = TAKE_FD(supervisor_fd);
        *ret_payload_fd = TAKE_FD(payload_fd);
        return 0;
}

int cg_stats_read(int payload_fd, int run_fd, CgroupStats *ret) {
        char buf[2048];
        uint64_t v = 0;
        int r;
        CgroupStats s = {};

        if (payload_fd < 0)
                return -EBADF;
        if ((r = cg_read_at(payload_fd, "memory.peak", buf, sizeof(buf))) < 0)
                return r;
        s.memory_peak_bytes = strtoull(buf, NULL, 10);
        if ((r = cg_read_at(payload_fd, "cpu.stat", buf, sizeof(buf))) < 0)
                return r;
        if (cg_keyed_value(buf, "user_usec", &s.cpu_user_usec) < 0 ||
            cg_keyed_value(buf, "system_usec", &s.cpu_system_usec) < 0)
                return -EBADMSG;
        /* The limits sit on the run's cgroup, the processes in payload/: memory.events is
         * hierarchical and charged to the victim's cgroup, pids.events "max" was counted in the
         * forking task's cgroup before Linux 6.13 and in the limiting one since. Read both. */
        int fds[] = { payload_fd, run_fd };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                if (fds[i] < 0)
                        continue;
                if (cg_read_at(fds[i], "memory.events", buf, sizeof(buf)) >= 0 &&
                    ((cg_keyed_value(buf, "oom_kill", &v) >= 0 && v > 0) ||
                     (cg_keyed_value(buf, "oom_group_kill", &v) >= 0 && v > 0)))
                        s.oom_killed = true;
                if (cg_read_at(fds[i], "pids.events", buf, sizeof(buf)) >= 0 &&
                    cg_keyed_value(buf, "max", &v) >= 0 && v > 0)
                        s.pids_limit_hit = true;
        }
        *ret = s;
        return 0;
}

int cg_kill(int payload_fd) {
        if (payload_fd < 0)
                return -EBADF;
        /* cgroup.kill (5.14) SIGKILLs the whole subtree, concurrent forks and setsid()'d or
         * double-forked processes included; the init in supervisor/ is untouched. */
        return cg_write_at(payload_fd, "cgroup.kill", "1");
}

int cg_run_kill(CgroupRun *cr) {
        return cg_kill(cr->payload_fd);
}

int cg_run_read(CgroupRun *cr, CgroupStats *ret) {
        return cg_stats_read(cr->payload_fd, cr->run_fd, ret);
}

/* The tenant's slice unit: mcp-execd.slice's child mcp-execd-tenant-<name>.slice ('-' is the
 * hierarchy's separator in a slice's name, so one in the tenant's name is written \x2d, as
 * systemd-escape(1) does; the other characters of a name need no escaping). */
int cg_tenant_unit_name(const char *parent, const char *name, char *ret, size_t size) {
        size_t n = strlen(parent);
        if (n < 6 || strcmp(parent + n - 6, ".slice") != 0)
                return -EINVAL;
        n -= 6;
        bool root = n == 1 && parent[0] == '-'; /* -.slice: the tenant's is a top-level slice */
        int k = snprintf(ret, size, "%.*s%stenant-", root ? 0 : (int) n, parent, root ? "" : "-");
        for (const char *p = name; *p && k >= 0 && (size_t) k < size; p++)
                k += *p == '-' ? snprintf(ret + k, size - (size_t) k, "\\x2d")
                               : snprintf(ret + k, size - (size_t) k, "%c", *p);
        if (k < 0 || (size_t) k + 7 >= size)
                return -ENAMETOOLONG;
        strcpy(ret + k, ".slice");
        return 0;
}
