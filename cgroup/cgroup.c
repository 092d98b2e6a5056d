/* cgroup.c: backend selection, the cgroupfs backend, and what every backend shares: the two
 * leaves of a run (supervisor/ for the init, payload/ for Python), cgroup.kill and the counters. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cgroup-internal.h"
#include "cleanup.h"

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

static int read_at(int dirfd, const char *file, char *buf, size_t size) {
        _cleanup_close_ int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        ssize_t k = read(fd, buf, size - 1);
        if (k < 0)
                return -errno;
        buf[k] = '\0';
        return 0;
}

/* The value of key in a flat-keyed file ("key value\n" lines: memory.events, cpu.stat, …). */
static int keyed_value(const char *text, const char *key, uint64_t *ret) {
        size_t kl = strlen(key);
        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
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

/* The cgroup v2 path of pid below the mount ("0::/x/y" in /proc/pid/cgroup). */
int cg_own_path(pid_t pid, char **ret) {
        char file[64], buf[4096];
        snprintf(file, sizeof(file), "/proc/%d/cgroup", (int) pid);
        int r = read_at(AT_FDCWD, file, buf, sizeof(buf));
        if (r < 0)
                return r;
        for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, "0::", 3) == 0) {
                        size_t n = strcspn(p + 3, "\n");
                        *ret = strndup(p + 3, n);
                        return *ret ? 0 : -ENOMEM;
                }
        return -ENOENT;
}

/* Inside a run's cgroup: supervisor/ and payload/, controllers enabled for them, the init moved
 * into supervisor/ if it sits in the run's cgroup itself (placed by PID). Order matters: a cgroup
 * with processes cannot enable controllers for children (EBUSY, "no internal processes"), so the
 * init leaves first. */
/* Moves every process of from_fd's own cgroup into to_fd's. Only the run's processes can be
 * there (a delegated scope's cgroup); one that exits meanwhile is skipped. Returns 0 or -errno. */
static int cg_move_all(int from_fd, int to_fd) {
        for (unsigned round = 0; round < 8; round++) {
                char buf[512];
                int r = read_at(from_fd, "cgroup.procs", buf, sizeof(buf));
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

int cg_make_leaves(CgroupRun *cr, bool move_init, pid_t init_pid) {
        int r;

        if (mkdirat(cr->run_fd, "supervisor", 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mkdirat(cr->run_fd, "payload", 0755) < 0 && errno != EEXIST)
                return -errno;
        cr->supervisor_fd = openat(cr->run_fd, "supervisor", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cr->supervisor_fd < 0)
                return -errno;
        if (move_init) {
                char pid[32];
                snprintf(pid, sizeof(pid), "%d", (int) init_pid);
                r = cg_write_at(cr->supervisor_fd, "cgroup.procs", pid);
                if (r < 0)
                        return r;
                /* The init's mount helper may have been forked after the manager moved the init:
                 * it is in the scope's own cgroup then, and enabling controllers there fails with
                 * EBUSY (no internal processes) until it is moved too. */
                r = cg_move_all(cr->run_fd, cr->supervisor_fd);
                if (r < 0)
                        return r;
        }
        /* memory and pids are required; cpu may not be delegated (older user managers). */
        r = cg_write_at(cr->run_fd, "cgroup.subtree_control", "+memory +pids");
        if (r < 0)
                return r;
        (void) cg_write_at(cr->run_fd, "cgroup.subtree_control", "+cpu");
        cr->payload_fd = openat(cr->run_fd, "payload", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cr->payload_fd < 0)
                return -errno;
        return 0;
}

static int cgroupfs_limits(Cgroup *c, int fd) {
        char v[64];
        int r;

        if (c->config.memory_max_bytes == UINT64_MAX)
                snprintf(v, sizeof(v), "max");
        else
                snprintf(v, sizeof(v), "%" PRIu64, c->config.memory_max_bytes);
        if ((r = cg_write_at(fd, "memory.max", v)) < 0)
                return r;
        (void) cg_write_at(fd, "memory.swap.max", "0"); /* absent without swap accounting */
        if (c->config.pids_max == UINT64_MAX)
                snprintf(v, sizeof(v), "max");
        else
                snprintf(v, sizeof(v), "%" PRIu64, c->config.pids_max);
        if ((r = cg_write_at(fd, "pids.max", v)) < 0)
                return r;
        if (c->config.cpu_quota_percent == 0)
                snprintf(v, sizeof(v), "max 100000");
        else
                snprintf(v, sizeof(v), "%" PRIu64 " 100000", (uint64_t) c->config.cpu_quota_percent * 1000);
        return cg_write_at(fd, "cpu.max", v);
}

/* The cgroupfs backend needs our own cgroup v2 to be writable and to offer memory and pids. We
 * move ourselves into a leaf ("daemon/") so the cgroup can enable controllers for the runs'
 * cgroups beside it. */
static int cgroupfs_open(Cgroup *c, char **reterr) {
        int r = cg_is_cgroup2(CGROUP_MOUNT);
        if (r <= 0)
                return asprintf(reterr, "%s is not a cgroup v2 mount", CGROUP_MOUNT) < 0 ? -ENOMEM : -ENODEV;

        _cleanup_free_ char *own = NULL;
        r = cg_own_path(getpid(), &own);
        if (r < 0)
                return asprintf(reterr, "cannot read our cgroup: %s", strerror(-r)) < 0 ? -ENOMEM : r;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, CGROUP_MOUNT "%s", own) < 0)
                return -ENOMEM;
        /* Already moved into our leaf (a restart inside the same cgroup)? Use the parent. */
        size_t n = strlen(path);
        if (n > 7 && strcmp(path + n - 7, "/daemon") == 0)
                path[n - 7] = '\0';

        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return asprintf(reterr, "cannot open our cgroup %s: %m", path) < 0 ? -ENOMEM : -errno;
        char ctl[256];
        if ((r = read_at(fd, "cgroup.controllers", ctl, sizeof(ctl))) < 0 || !strstr(ctl, "memory") ||
            !strstr(ctl, "pids"))
                return asprintf(reterr, "our cgroup %s does not offer the memory and pids controllers", path) < 0
                               ? -ENOMEM : -ENODEV;
        if (faccessat(fd, "cgroup.subtree_control", W_OK, 0) < 0 || faccessat(fd, "cgroup.procs", W_OK, 0) < 0)
                return asprintf(reterr, "our cgroup %s is not delegated to us (not writable)", path) < 0 ? -ENOMEM
                                                                                                       : -EACCES;
        if (mkdirat(fd, "daemon", 0755) < 0 && errno != EEXIST)
                return asprintf(reterr, "cannot create %s/daemon: %m", path) < 0 ? -ENOMEM : -errno;
        _cleanup_close_ int leaf = openat(fd, "daemon", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char pid[32];
        snprintf(pid, sizeof(pid), "%d", (int) getpid());
        if (leaf < 0 || (r = cg_write_at(leaf, "cgroup.procs", pid)) < 0)
                return asprintf(reterr, "cannot move ourselves into %s/daemon: %s", path,
                                strerror(leaf < 0 ? errno : -r)) < 0 ? -ENOMEM : -EACCES;
        r = cg_write_at(fd, "cgroup.subtree_control", "+memory +pids");
        if (r < 0)
                return asprintf(reterr, "cannot enable memory and pids in %s: %s", path, strerror(-r)) < 0 ? -ENOMEM
                                                                                                           : r;
        (void) cg_write_at(fd, "cgroup.subtree_control", "+cpu");
        c->base_fd = TAKE_FD(fd);
        snprintf(c->describe, sizeof(c->describe), "cgroupfs: per-run cgroups below %s", path);
        return 0;
}

int cgroup_new(const CgroupConfig *config, Cgroup **ret, char **reterr) {
        *reterr = NULL;
        Cgroup *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->config = *config;
        c->base_fd = -EBADF;
        c->slice = strdup(config->slice ? config->slice : "mcp-execd.slice");
        if (!c->slice) {
                free(c);
                return -ENOMEM;
        }
        c->config.slice = c->slice;

        _cleanup_free_ char *why_systemd = NULL, *why_cgroupfs = NULL;
        int r;

        if (config->want == CGROUP_WANT_AUTO || config->want == CGROUP_WANT_SYSTEMD) {
                r = cg_systemd_open(c, &why_systemd);
                if (r >= 0) {
                        c->backend = CGROUP_BACKEND_SYSTEMD;
                        *ret = c;
                        return 0;
                }
                if (config->want == CGROUP_WANT_SYSTEMD) {
                        *reterr = TAKE_PTR(why_systemd);
                        cgroup_free(c);
                        return r;
                }
        }
        if (config->want == CGROUP_WANT_AUTO || config->want == CGROUP_WANT_CGROUPFS) {
                r = cgroupfs_open(c, &why_cgroupfs);
                if (r >= 0) {
                        c->backend = CGROUP_BACKEND_CGROUPFS;
                        *ret = c;
                        return 0;
                }
                if (config->want == CGROUP_WANT_CGROUPFS) {
                        *reterr = TAKE_PTR(why_cgroupfs);
                        cgroup_free(c);
                        return r;
                }
        }
        c->backend = CGROUP_BACKEND_NONE;
        snprintf(c->describe, sizeof(c->describe), "none: limits by rlimits only");
        if (config->want == CGROUP_WANT_AUTO &&
            asprintf(reterr, "no cgroup backend available (systemd: %s; cgroupfs: %s)",
                     why_systemd ? why_systemd : "?", why_cgroupfs ? why_cgroupfs : "?") < 0)
                *reterr = NULL;
        *ret = c;
        return 0;
}

Cgroup *cgroup_free(Cgroup *c) {
        if (!c)
                return NULL;
        cg_systemd_close(c);
        safe_close(c->base_fd);
        free(c->slice);
        free(c);
        return NULL;
}

CgroupBackend cgroup_backend(const Cgroup *c) {
        return c->backend;
}

const char *cgroup_backend_name(const Cgroup *c) {
        static const char *const names[] = {
                [CGROUP_BACKEND_SYSTEMD] = "systemd",
                [CGROUP_BACKEND_CGROUPFS] = "cgroupfs",
                [CGROUP_BACKEND_NONE] = "none",
        };
        return names[c->backend];
}

const char *cgroup_describe(const Cgroup *c) {
        return c->describe;
}

int cgroup_stop_stale(Cgroup *c) {
        if (c->backend == CGROUP_BACKEND_SYSTEMD)
                return cg_systemd_stop_stale(c);
        return 0;
}

int cgroup_run_new(Cgroup *c, const char *run_id, uint32_t timeout_s, CgroupRun **ret) {
        CgroupRun *cr = calloc(1, sizeof(*cr));
        if (!cr)
                return -ENOMEM;
        *cr = (CgroupRun) {
                .cgroup = c, .timeout_s = timeout_s, .run_fd = -EBADF, .supervisor_fd = -EBADF,
                .payload_fd = -EBADF, .pidfd = -EBADF,
        };
        snprintf(cr->id, sizeof(cr->id), "%s", run_id);

        if (c->backend == CGROUP_BACKEND_CGROUPFS) {
                char name[96];
                snprintf(name, sizeof(name), "run-%s", run_id);
                int r = 0;
                if (mkdirat(c->base_fd, name, 0755) < 0)
                        r = -errno;
                else if ((cr->run_fd = openat(c->base_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                        r = -errno;
                else if (!(cr->run_path = strdup(name)))
                        r = -ENOMEM;
                else if ((r = cgroupfs_limits(c, cr->run_fd)) >= 0)
                        r = cg_make_leaves(cr, false, 0);
                if (r < 0) {
                        if (!cr->run_path)
                                cr->run_path = strdup(name);
                        cgroup_run_free(cr);
                        return r;
                }
        }
        *ret = cr;
        return 0;
}

int cgroup_run_supervisor_fd(const CgroupRun *cr) {
        return cr->cgroup->backend == CGROUP_BACKEND_CGROUPFS ? cr->supervisor_fd : -EBADF;
}

int cgroup_run_place(CgroupRun *cr, pid_t init_pid, int init_pidfd, CgroupPlacedFn placed, void *userdata,
                char **reterr) {
        *reterr = NULL;
        if (cr->cgroup->backend != CGROUP_BACKEND_SYSTEMD)
                return 1; /* none: nothing to do; cgroupfs: cloned straight into supervisor/ */
        cr->pid = init_pid;
        cr->pidfd = init_pidfd;
        cr->placed = placed;
        cr->userdata = userdata;
        int r = cg_systemd_place(cr, reterr);
        return r < 0 ? r : 0;
}

int cgroup_run_payload_fd(const CgroupRun *cr) {
        return cr->payload_fd;
}

const char *cgroup_run_unit(const CgroupRun *cr) {
        return cr->unit[0] ? cr->unit : NULL;
}

int cgroup_run_kill(CgroupRun *cr) {
        if (cr->payload_fd < 0)
                return -EBADF;
        /* cgroup.kill (5.14) SIGKILLs the whole subtree, concurrent forks and setsid()'d or
         * double-forked processes included; the init in supervisor/ is untouched. */
        return cg_write_at(cr->payload_fd, "cgroup.kill", "1");
}

int cgroup_run_read(CgroupRun *cr, CgroupStats *ret) {
        char buf[2048];
        uint64_t v = 0;
        int r;
        CgroupStats s = {};

        if (cr->payload_fd < 0)
                return -EBADF;
        if ((r = read_at(cr->payload_fd, "memory.peak", buf, sizeof(buf))) < 0)
                return r;
        s.memory_peak_bytes = strtoull(buf, NULL, 10);
        if ((r = read_at(cr->payload_fd, "cpu.stat", buf, sizeof(buf))) < 0)
                return r;
        if (keyed_value(buf, "user_usec", &s.cpu_user_usec) < 0 ||
            keyed_value(buf, "system_usec", &s.cpu_system_usec) < 0)
                return -EBADMSG;
        /* The limits sit on the run's cgroup, the processes in payload/: memory.events is
         * hierarchical and charged to the victim's cgroup, pids.events "max" was counted in the
         * forking task's cgroup before Linux 6.13 and in the limiting one since. Read both. */
        int fds[] = { cr->payload_fd, cr->run_fd };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                if (fds[i] < 0)
                        continue;
                if (read_at(fds[i], "memory.events", buf, sizeof(buf)) >= 0 &&
                    ((keyed_value(buf, "oom_kill", &v) >= 0 && v > 0) ||
                     (keyed_value(buf, "oom_group_kill", &v) >= 0 && v > 0)))
                        s.oom_killed = true;
                if (read_at(fds[i], "pids.events", buf, sizeof(buf)) >= 0 && keyed_value(buf, "max", &v) >= 0 &&
                    v > 0)
                        s.pids_limit_hit = true;
        }
        *ret = s;
        return 0;
}

void cgroup_run_cancel_place(CgroupRun *cr) {
        if (cr)
                cg_systemd_run_cancel(cr);
}

CgroupRun *cgroup_run_free(CgroupRun *cr) {
        if (!cr)
                return NULL;
        cg_systemd_run_cancel(cr);
        cr->supervisor_fd = safe_close(cr->supervisor_fd);
        cr->payload_fd = safe_close(cr->payload_fd);
        if (cr->run_fd >= 0 && cr->cgroup->backend == CGROUP_BACKEND_CGROUPFS) {
                /* With cgroupfs the whole run cgroup is ours to remove. A cgroup whose processes
                 * are all reaped is empty for rmdir, zombies do not count. */
                (void) unlinkat(cr->run_fd, "payload", AT_REMOVEDIR);
                (void) unlinkat(cr->run_fd, "supervisor", AT_REMOVEDIR);
                if (cr->run_path)
                        (void) unlinkat(cr->cgroup->base_fd, cr->run_path, AT_REMOVEDIR);
        }
        /* A scope's cgroup, leaves included, is systemd's to remove once the scope is empty: it
         * walks the tree (nftw) and removes it bottom up. Removing payload/ here as well raced that
         * walk: a leaf vanishing under it ends the walk early, the scope's rmdir then fails on the
         * remaining supervisor/, and systemd forgets the unit with its cgroup left behind (seen in
         * the systemd-tier soak: one scope in ~250 runs). */
        safe_close(cr->run_fd);
        free(cr->run_path);
        free(cr);
        return NULL;
}
