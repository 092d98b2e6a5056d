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

void cg_enable_optional(int dirfd) {
        /* One write each: a controller the parent does not offer fails alone. cpu for cpu.weight
         * and the quota (older user managers may not delegate it); io for io.stat's bytes. */
        static const char *const optional[] = { "+cpu", "+io" };
        for (size_t i = 0; i < ELEMENTSOF(optional); i++)
                (void) cg_write_at(dirfd, "cgroup.subtree_control", optional[i]);
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
        cg_enable_optional(run_fd);
        _cleanup_close_ int payload_fd = openat(run_fd, "payload", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (payload_fd < 0)
                return -errno;
        *ret_supervisor_fd = TAKE_FD(supervisor_fd);
        *ret_payload_fd = TAKE_FD(payload_fd);
        return 0;
}

/* Pressure stall information: "some avg10=… avg60=… avg300=… total=<µs>" and a "full" line
 * (Documentation/accounting/psi.rst). Rows of one file are adjacent: it is read once. */
static const struct {
        ExecAccountField field;
        const char *file, *line;
} pressure_rows[] = {
        { EXEC_ACCOUNT_CPU_PRESSURE_SOME_US, "cpu.pressure", "some" },
        { EXEC_ACCOUNT_MEMORY_PRESSURE_SOME_US, "memory.pressure", "some" },
        { EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US, "memory.pressure", "full" },
        { EXEC_ACCOUNT_IO_PRESSURE_SOME_US, "io.pressure", "some" },
        { EXEC_ACCOUNT_IO_PRESSURE_FULL_US, "io.pressure", "full" },
};

/* The number spelled by [p, end): digits only. */
static int parse_u64(const char *p, const char *end, uint64_t *ret) {
        uint64_t v = 0;
        if (p == end)
                return -EBADMSG;
        for (; p < end; p++) {
                if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return -EBADMSG;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        *ret = v;
        return 0;
}

/* The value of "<key>=<n>" among the space-separated words of the line starting at p. */
static int line_value(const char *p, const char *key, uint64_t *ret) {
        size_t kl = strlen(key);
        const char *eol = strchrnul(p, '\n');
        while (p < eol) {
                const char *word_end = memchr(p, ' ', (size_t) (eol - p)) ?: eol;
                if ((size_t) (word_end - p) > kl && strncmp(p, key, kl) == 0 && p[kl] == '=')
                        return parse_u64(p + kl + 1, word_end, ret);
                p = word_end < eol ? word_end + 1 : eol;
        }
        return -ENOENT;
}

int cg_pressure_total(const char *text, const char *line, uint64_t *ret) {
        size_t n = strlen(line);
        for (const char *p = text; p && *p; p = next_line(p))
                if (strncmp(p, line, n) == 0 && p[n] == ' ')
                        return line_value(p + n + 1, "total", ret);
        return -ENOENT;
}

int cg_io_bytes(const char *text, uint64_t *ret_read, uint64_t *ret_written) {
        uint64_t rd = 0, wr = 0;
        /* "MAJ:MIN rbytes=… wbytes=… rios=… wios=… dbytes=… dios=…", a line per device. */
        for (const char *p = text; p && *p; p = next_line(p)) {
                uint64_t r = 0, w = 0;
                if (*p == '\n')
                        continue;
                if (line_value(p, "rbytes", &r) < 0 || line_value(p, "wbytes", &w) < 0)
                        return -EBADMSG;
                rd += r;
                wr += w;
        }
        *ret_read = rd;
        *ret_written = wr;
        return 0;
}

void cg_account_read(int fd, ExecAccount *ret) {
        char buf[8192];
        ExecAccount a = {};
        const char *file = NULL;
        bool have = false;
        uint64_t v, w;

        /* A file the kernel does not have (PSI disabled: EOPNOTSUPP on read; no io controller; no
         * pids.peak before 6.1) leaves its fields unknown: the result says null, not 0. */
        for (size_t i = 0; i < ELEMENTSOF(pressure_rows); i++) {
                if (!file || strcmp(file, pressure_rows[i].file) != 0) {
                        file = pressure_rows[i].file;
                        have = cg_read_at(fd, file, buf, sizeof(buf)) >= 0;
                }
                if (have && cg_pressure_total(buf, pressure_rows[i].line, &v) >= 0)
                        exec_account_set(&a, pressure_rows[i].field, v);
        }
        if (cg_read_at(fd, "io.stat", buf, sizeof(buf)) >= 0 && cg_io_bytes(buf, &v, &w) >= 0) {
                exec_account_set(&a, EXEC_ACCOUNT_IO_READ_BYTES, v);
                exec_account_set(&a, EXEC_ACCOUNT_IO_WRITE_BYTES, w);
        }
        if (cg_read_at(fd, "pids.peak", buf, sizeof(buf)) >= 0 && parse_u64(buf, strchrnul(buf, '\n'), &v) >= 0)
                exec_account_set(&a, EXEC_ACCOUNT_PIDS_PEAK, v);
        *ret = a;
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
        cg_account_read(payload_fd, &s.account);
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
