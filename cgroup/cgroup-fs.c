/* cgroup-fs.c: the cgroupfs backend: per-run child cgroups (run-<id>/, limits on it, supervisor/
 * and payload/ inside) of the cgroup v2 subtree delegated to us, made before the init is cloned. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-internal.h"

/* A limit as the cgroup files take it: "max" for infinity, else the number followed by suffix. */
static void limit_format(char *buf, size_t size, bool infinite, uint64_t value, const char *suffix) {
        if (infinite)
                snprintf(buf, size, "max%s", suffix);
        else
                snprintf(buf, size, "%" PRIu64 "%s", value, suffix);
}

static int fs_limits(const CgroupConfig *config, int fd) {
        char v[64];
        int r;

        limit_format(v, sizeof(v), config->memory_max_bytes == UINT64_MAX, config->memory_max_bytes, "");
        if ((r = cg_write_at(fd, "memory.max", v)) < 0)
                return r;
        (void) cg_write_at(fd, "memory.swap.max", "0"); /* absent without swap accounting */
        limit_format(v, sizeof(v), config->pids_max == UINT64_MAX, config->pids_max, "");
        if ((r = cg_write_at(fd, "pids.max", v)) < 0)
                return r;
        /* cpu.max is "quota period" in µs: percent of one CPU per 100 ms. */
        limit_format(v, sizeof(v), config->cpu_quota_percent == 0,
                     (uint64_t) config->cpu_quota_percent * 1000, " 100000");
        return cg_write_at(fd, "cpu.max", v);
}

/* Our own cgroup v2 must be writable and offer memory and pids. We move ourselves into a leaf
 * ("daemon/") so the cgroup can enable controllers for the runs' cgroups beside it. */
static int fs_open(Cgroup *c, char **reterr) {
        int r = cg_is_cgroup2(CGROUP_MOUNT);
        if (r <= 0)
                return reason_set(reterr, -ENODEV, "%s is not a cgroup v2 mount", CGROUP_MOUNT);

        _cleanup_free_ char *own = NULL;
        r = cg_own_path(getpid(), &own);
        if (r < 0)
                return reason_set(reterr, r, "cannot read our cgroup: %s", strerror(-r));
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, CGROUP_MOUNT "%s", own) < 0)
                return -ENOMEM;
        /* Already moved into our leaf (a restart inside the same cgroup)? Use the parent. */
        size_t n = strlen(path);
        if (n > 7 && strcmp(path + n - 7, "/daemon") == 0)
                path[n - 7] = '\0';

        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return reason_set(reterr, -errno, "cannot open our cgroup %s: %m", path);
        char ctl[256];
        if ((r = cg_read_at(fd, "cgroup.controllers", ctl, sizeof(ctl))) < 0 || !strstr(ctl, "memory") ||
            !strstr(ctl, "pids"))
                return reason_set(reterr, -ENODEV, "our cgroup %s does not offer the memory and pids controllers",
                                 path);
        if (faccessat(fd, "cgroup.subtree_control", W_OK, 0) < 0 || faccessat(fd, "cgroup.procs", W_OK, 0) < 0)
                return reason_set(reterr, -EACCES, "our cgroup %s is not delegated to us (not writable)",
                                 path);
        if (mkdirat(fd, "daemon", 0755) < 0 && errno != EEXIST)
                return reason_set(reterr, -errno, "cannot create %s/daemon: %m", path);
        _cleanup_close_ int leaf = openat(fd, "daemon", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char pid[32];
        snprintf(pid, sizeof(pid), "%d", (int) getpid());
        if (leaf < 0 || (r = cg_write_at(leaf, "cgroup.procs", pid)) < 0)
                return reason_set(reterr, -EACCES, "cannot move ourselves into %s/daemon: %s", path,
                                 strerror(leaf < 0 ? errno : -r));
        r = cg_write_at(fd, "cgroup.subtree_control", "+memory +pids");
        if (r < 0)
                return reason_set(reterr, r, "cannot enable memory and pids in %s: %s", path, strerror(-r));
        cg_enable_optional(fd);
        c->base_fd = TAKE_FD(fd);
        snprintf(c->describe, sizeof(c->describe), "cgroupfs: per-run cgroups below %s", path);
        return 0;
}

/* tenant-<name>/ below our subtree: its runs' cgroups are made in it, and its files bound them all. */
static int fs_tenant_apply(Cgroup *c, const CgroupTenant *t, char *ret_slice, size_t size, char **reterr) {
        snprintf(ret_slice, size, "tenant-%s", t->name);
        if (mkdirat(c->base_fd, ret_slice, 0755) < 0 && errno != EEXIST)
                return reason_set(reterr, -errno, "cannot create the cgroup %s of tenant %s: %m", ret_slice, t->name);
        _cleanup_close_ int fd = openat(c->base_fd, ret_slice, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return reason_set(reterr, -errno, "cannot open the cgroup %s of tenant %s: %m", ret_slice, t->name);
        char v[64];
        int r = cg_write_at(fd, "cgroup.subtree_control", "+memory +pids");
        if (r >= 0) {
                limit_format(v, sizeof(v), t->memory_max_bytes == UINT64_MAX, t->memory_max_bytes, "");
                r = cg_write_at(fd, "memory.max", v);
        }
        if (r >= 0) {
                limit_format(v, sizeof(v), t->pids_max == UINT64_MAX, t->pids_max, "");
                r = cg_write_at(fd, "pids.max", v);
        }
        if (r < 0)
                return reason_set(reterr, r, "cannot set the bounds of tenant %s in its cgroup %s: %s", t->name,
                                 ret_slice, strerror(-r));
        /* cpu.weight exists where our subtree enabled cpu (fs_open(), optional there too). */
        snprintf(v, sizeof(v), "%" PRIu64, t->cpu_weight);
        if (faccessat(fd, "cpu.weight", W_OK, 0) == 0 && (r = cg_write_at(fd, "cpu.weight", v)) < 0)
                return reason_set(reterr, r, "cannot set cpu.weight of tenant %s: %s", t->name, strerror(-r));
        cg_enable_optional(fd);
        return 0;
}

static void fs_close(Cgroup *c) {
        c->base_fd = safe_close(c->base_fd);
}

static int fs_run_create(CgroupRun *cr) {
        Cgroup *c = cr->cgroup;
        char name[sizeof(cr->slice) + sizeof(cr->id) + 8];
        int r;

        /* In its tenant's cgroup when it has one: a path below base_fd either way. */
        snprintf(name, sizeof(name), "%s%srun-%s", cr->slice, cr->slice[0] ? "/" : "", cr->id);
        cr->run_path = strdup(name);
        if (!cr->run_path)
                return -ENOMEM;
        if (mkdirat(c->base_fd, name, 0755) < 0)
                return -errno;
        cr->run_fd = openat(c->base_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cr->run_fd < 0)
                return -errno;
        r = fs_limits(&c->config, cr->run_fd);
        if (r < 0)
                return r;
        return cg_make_leaves(cr->run_fd, false, 0, &cr->supervisor_fd, &cr->payload_fd);
}

static void fs_run_destroy(CgroupRun *cr) {
        /* The whole run cgroup is ours to remove. A cgroup whose processes are all reaped is empty
         * for rmdir, zombies do not count. run_fd < 0: mkdir failed, nothing of ours is there. */
        if (cr->run_fd >= 0) {
                (void) unlinkat(cr->run_fd, "payload", AT_REMOVEDIR);
                (void) unlinkat(cr->run_fd, "supervisor", AT_REMOVEDIR);
                if (cr->run_path)
                        (void) unlinkat(cr->cgroup->base_fd, cr->run_path, AT_REMOVEDIR);
        }
        free(cr->run_path);
        cr->run_path = NULL;
}

const CgroupOps cgroup_fs_ops = {
        .backend = CGROUP_BACKEND_CGROUPFS,
        .name = "cgroupfs",
        .open = fs_open,
        .close = fs_close,
        .run_create = fs_run_create,
        .clone_into_supervisor = true,
        .run_destroy = fs_run_destroy,
        .run_kill = cg_run_kill,
        .run_read = cg_run_read,
        .tenant_apply = fs_tenant_apply,
};
