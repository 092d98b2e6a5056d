/* sandbox-fs.c: the run's view of the filesystem: a read-only tmpfs root, /usr and a minimal /etc bound
 * read-only, fresh /proc, five device nodes, and a private size-capped /tmp holding the working
 * directory (a copy of the staging directory's regular files). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "sandbox-internal.h"

/* Where the new root is assembled before pivot_root. The host's /tmp, shadowed only inside the
 * run's private mount namespace; the staging directory (often below it) is opened before. */
#define NEWROOT "/tmp"

/* Read-only binds of host paths, when they exist. /etc is built, not bound: only what Python, numpy
 * (BLAS through /etc/alternatives), matplotlib (matplotlibrc, fonts) and the loader really read
 * (checked with strace -f on the scientific stack). */
static const char *const ro_binds[] = {
        "/usr",
        "/etc/ld.so.cache",
        "/etc/alternatives",
        "/etc/fonts",
        "/etc/matplotlibrc",
        "/etc/mime.types",
        "/etc/python3",
        "/etc/python3.11",
        "/etc/python3.12",
        "/etc/python3.13",
};

/* The merged-usr links (/bin → usr/bin …) are re-created as the same symlinks. */
static const char *const root_links[] = { "/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin" };

static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom" };

/* Written into the new /etc. nsswitch.conf keeps glibc on files only (no NSS module talks to a
 * daemon, none is reachable anyway). */
static const struct {
        const char *name;
        const char *content;
} etc_files[] = {
        { "passwd",
          "root:x:0:0:root:/root:/usr/sbin/nologin\n"
          "sandbox:x:65532:65532:sandbox:/tmp:/usr/sbin/nologin\n"
          "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" },
        { "group", "root:x:0:\nsandbox:x:65532:\nnogroup:x:65534:\n" },
        { "nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\n" },
        { "hosts", "127.0.0.1 localhost\n::1 localhost\n127.0.1.1 sandbox\n" },
        { "hostname", "sandbox\n" },
};

int sandbox_fs_plan(const Sandbox *s, const SandboxRunSpec *spec, SpawnPlan *plan) {
        uint64_t size = s->config.tmp_size_bytes ?: SANDBOX_TMP_SIZE_DEFAULT;
        /* tmpfs reads size=0 as unlimited: never let that through. */
        /* nr_inodes bounds the kernel memory of empty files, which size= does not count (about
         * 1 KiB of inode and dentry each: 300 000 empty files took 306 MB with a 4 KiB "used"
         * /tmp, in rlimit mode charged to no one). One inode per 4 KiB of size (16384 for the
         * default 64M, ~16 MiB of kernel memory), at least 1024, at most 65536: Python with
         * matplotlib writes a few hundred files at most. */
        uint64_t inodes = size / SANDBOX_TMP_BYTES_PER_INODE;
        inodes = inodes < SANDBOX_TMP_INODES_MIN ? SANDBOX_TMP_INODES_MIN
                 : inodes > SANDBOX_TMP_INODES_MAX ? SANDBOX_TMP_INODES_MAX
                                                   : inodes;
        snprintf(plan->tmp_options, sizeof(plan->tmp_options), "mode=1777,size=%llu,nr_inodes=%llu",
                 (unsigned long long) size, (unsigned long long) inodes);
        plan->tmp_size_bytes = size;
        plan->workdir = SANDBOX_WORK_DIR;
        plan->n_staged = 0;
        return 0;
}

static int fail(SpawnPlan *plan, int err, const char *step, const char *what) {
        plan->fail_step = step;
        plan->fail_what = what;
        return -err;
}

/* One directory of the staging tree: its regular files into plan->staged under prefix ("" or
 * "a/b/"), its subdirectories down to SANDBOX_STAGED_DEPTH_MAX (input files of issue 10). Takes
 * nothing: dfd stays the caller's. */
static int prepare_dir(SpawnPlan *plan, int dfd, const char *prefix, unsigned depth, size_t *used) {
        for (;;) {
                char buf[4096] __attribute__((aligned(8)));
                ssize_t n = getdents64(dfd, buf, sizeof(buf));
                if (n < 0)
                        return fail(plan, errno, "getdents64 ", plan->staging_dir);
                if (n == 0)
                        break;
                for (ssize_t off = 0; off < n;) {
                        const struct dirent64 *de = (const void *) (buf + off);
                        off += de->d_reclen;
                        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                        if (fd < 0) {
                                if (errno == ELOOP || errno == ENXIO)
                                        continue; /* symlink, socket */
                                return fail(plan, errno, "open staged file ", de->d_name);
                        }
                        struct stat st;
                        if (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
                                close(fd);
                                continue;
                        }
                        char path[SANDBOX_STAGED_PATH_MAX];
                        if ((size_t) snprintf(path, sizeof(path), "%s%s%s", prefix, de->d_name,
                                              S_ISDIR(st.st_mode) ? "/" : "") >= sizeof(path)) {
                                close(fd);
                                return fail(plan, ENAMETOOLONG, "staged file name too long ", de->d_name);
                        }
                        if (S_ISDIR(st.st_mode)) {
                                int r = depth + 1 < SANDBOX_STAGED_DEPTH_MAX
                                        ? prepare_dir(plan, fd, path, depth + 1, used)
                                        : fail(plan, E2BIG, "staging directory nested too deep", NULL);
                                close(fd);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        size_t len = strlen(path) + 1;
                        if (plan->n_staged >= SANDBOX_STAGED_MAX || *used + len > sizeof(plan->staged_names)) {
                                close(fd);
                                return fail(plan, E2BIG, "staging directory has too many files", NULL);
                        }
                        memcpy(plan->staged_names + *used, path, len);
                        plan->staged[plan->n_staged].fd = fd;
                        plan->staged[plan->n_staged].name = plan->staged_names + *used;
                        plan->n_staged++;
                        *used += len;
                }
        }
        return 0;
}

/* Opens the staging directory's regular files, in subdirectories too, while we still have the
 * daemon's uid (it is the daemon's private directory, mode 0700) and the host's filesystem; the
 * copies are made by the Python child as 65532, so they belong to the run's user. Symlinks and
 * other types are not copied. */
int sandbox_fs_prepare(SpawnPlan *plan) {
        /* The dependency environment: an O_PATH fd now, while the path is reachable with the
         * daemon's uid; bound through /proc/self/fd after the switch. */
        if (plan->env_dir) {
                plan->env_fd = open(plan->env_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (plan->env_fd < 0)
                        return fail(plan, errno, "open ", plan->env_dir);
        }
        if (!plan->staging_dir)
                return 0; /* the self-test */
        _cleanup_close_ int dfd = open(plan->staging_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return fail(plan, errno, "open ", plan->staging_dir);

        size_t used = 0;
        return prepare_dir(plan, dfd, "", 0, &used);
}

/* Makes the directories of a staged "a/b/name" below tmpfd (as the run's user, so they are its own);
 * returns an fd of the innermost one (or a dup of tmpfd) and points *ret_base at "name". */
static int make_parents(SpawnPlan *plan, int tmpfd, const char *name, char *buf, size_t size,
                        const char **ret_base) {
        if ((size_t) snprintf(buf, size, "%s", name) >= size)
                return fail(plan, ENAMETOOLONG, "create /tmp/", name);
        int cur = fcntl(tmpfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return fail(plan, errno, "create /tmp/", name);
        char *seg = buf;
        for (char *slash; (slash = strchr(seg, '/')); seg = slash + 1) {
                *slash = '\0';
                int next = -EBADF;
                if ((mkdirat(cur, seg, 0755) < 0 && errno != EEXIST) ||
                    (next = openat(cur, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
                        close(cur);
                        return fail(plan, errno, "mkdir /tmp/", name);
                }
                close(cur);
                cur = next;
        }
        *ret_base = seg;
        return cur;
}

static int copy_staged(SpawnPlan *plan, int tmpfd) {
        for (size_t i = 0; i < plan->n_staged; i++) {
                const char *name = plan->staged[i].name;
                _cleanup_close_ int in = plan->staged[i].fd;
                plan->staged[i].fd = -EBADF;
                char path[SANDBOX_STAGED_PATH_MAX];
                const char *base = name;
                _cleanup_close_ int dir = make_parents(plan, tmpfd, name, path, sizeof(path), &base);
                if (dir < 0)
                        return dir;
                _cleanup_close_ int out = openat(dir, base,
                                                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (out < 0)
                        return fail(plan, errno, "create /tmp/", name);
                for (;;) {
                        ssize_t n = sendfile(out, in, NULL, 1 << 30);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return fail(plan, errno, "copy to /tmp/", name);
                        if (n == 0)
                                break;
                }
        }
        return 0;
}

/* matplotlib's font cache from sandbox_warm_up(), so an import does not rebuild it (seconds).
 * Best effort: a staged file called ".cache" simply wins. */
static void write_seeds(const Sandbox *s, int tmpfd) {
        if (s->n_seeds == 0)
                return;
        if (mkdirat(tmpfd, ".cache", 0755) < 0 || mkdirat(tmpfd, SANDBOX_MPL_CACHE_DIR, 0755) < 0)
                return;
        _cleanup_close_ int dfd = openat(tmpfd, SANDBOX_MPL_CACHE_DIR,
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return;
        for (size_t i = 0; i < s->n_seeds; i++) {
                _cleanup_close_ int fd = openat(dfd, s->seeds[i].name,
                                                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd >= 0)
                        (void) !write(fd, s->seeds[i].data, s->seeds[i].len);
        }
}

/* The flags of the mount at path that a remount must keep: in a user namespace the atime and
 * nosuid/nodev/noexec flags of a mount inherited from the host are locked (EPERM otherwise). */
static unsigned long mount_locked_flags(const char *path) {
        struct statvfs sv;
        if (statvfs(path, &sv) < 0)
                return 0;
        return sv.f_flag & (ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_NOATIME | ST_NODIRATIME | ST_RELATIME);
}

static int remount_ro(const char *path) {
        unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
                              mount_locked_flags(path);
        return mount(NULL, path, NULL, flags, NULL) < 0 ? -errno : 0;
}

/* Every mount of our (new) mount namespace private: nothing mounted in it propagates back to the
 * host's namespace (on systemd hosts / is a shared mount). */
int sandbox_mount_private(void) {
        return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ? -errno : 0;
}

/* Creates the mount point (a directory or an empty file, like the source) for a bind below root. */
static int make_mount_point(const char *dst, bool dir) {
        if (dir)
                return mkdir(dst, 0755) < 0 && errno != EEXIST ? -errno : 0;
        int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

/* "/etc/fonts" → NEWROOT "/etc/fonts" in a fixed buffer. */
static const char *in_newroot(char *buf, size_t size, const char *path) {
        snprintf(buf, size, "%s%s", NEWROOT, path);
        return buf;
}

/* Sets and clears MOUNT_ATTR_* flags of the mount at path, and with recursive of every mount below
 * it, in one call (mount_setattr(2), Linux ≥ 5.12). The run's tree and the installer's host view. */
int sandbox_mount_setattr(const char *path, bool recursive, uint64_t set, uint64_t clr) {
        struct mount_attr attr = { .attr_set = set, .attr_clr = clr };
        if (syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &attr, sizeof(attr)) < 0)
                return -errno;
        return 0;
}

/* Makes the mount at path and every mount below it read-only, nosuid, nodev; on kernels without
 * mount_setattr, remounts each one we made. */
static int make_ro_tree(const char *path, const char *const *below, size_t n_below) {
        int r = sandbox_mount_setattr(path, true,
                                      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
        if (r != -ENOSYS)
                return r;
        char dst[512];
        for (size_t i = 0; i < n_below; i++) {
                if (access(in_newroot(dst, sizeof(dst), below[i]), F_OK) < 0)
                        continue;
                r = remount_ro(dst);
                if (r < 0)
                        return r;
        }
        return remount_ro(path);
}

/* The run's shares of the per-user-namespace limits (sandbox_shares_compute()), written in the
 * run's own user namespace: /proc/sys/user shows the limits of the opener's user namespace, and
 * the helper holds CAP_SYS_RESOURCE there (kernel/ucount.c, set_permissions()). Through the run's
 * own /proc, just mounted (the host's may be read-only, as in a container), before its /proc/sys
 * is made read-only. */
static int ucount_limits_write(SpawnPlan *plan) {
        const Sandbox *s = plan->sandbox;
        for (size_t i = 0; i < ELEMENTSOF(s->ucount_limits); i++) {
                const SandboxUcountLimit *l = &s->ucount_limits[i];
                if (!l->value[0])
                        continue; /* this kernel has no such limit */
                char path[128];
                _cleanup_close_ int fd = open(in_newroot(path, sizeof(path), l->path), O_WRONLY | O_CLOEXEC);
                if (fd < 0)
                        return fail(plan, errno, "open ", l->path);
                size_t len = strlen(l->value);
                ssize_t n = write(fd, l->value, len);
                if (n != (ssize_t) len)
                        return fail(plan, n < 0 ? errno : EIO, "write ", l->path);
        }
        return 0;
}

int sandbox_fs_setup(SpawnPlan *plan) {
        char dst[512];
        int r;

        r = sandbox_mount_private();
        if (r < 0)
                return fail(plan, -r, "make / private", NULL);

        if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=1024") < 0)
                return fail(plan, errno, "mount tmpfs for the new root", NULL);

        /* First everything that is created in the root tmpfs (it becomes read-only below). */
        static const char *const dirs[] = { "/etc", "/dev", "/proc", "/tmp" };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (mkdir(in_newroot(dst, sizeof(dst), dirs[i]), 0755) < 0)
                        return fail(plan, errno, "mkdir ", dirs[i]);

        for (size_t i = 0; i < ELEMENTSOF(root_links); i++) {
                char target[256];
                ssize_t n = readlink(root_links[i], target, sizeof(target) - 1);
                if (n < 0)
                        continue; /* absent, or a real directory (not merged-usr): not supported */
                target[n] = 0;
                if (symlink(target, in_newroot(dst, sizeof(dst), root_links[i])) < 0)
                        return fail(plan, errno, "symlink ", root_links[i]);
        }

        /* The timezone: the same symlink into /usr/share/zoneinfo. */
        {
                char target[256];
                ssize_t n = readlink("/etc/localtime", target, sizeof(target) - 1);
                if (n > 0) {
                        target[n] = 0;
                        if (symlink(target, NEWROOT "/etc/localtime") < 0)
                                return fail(plan, errno, "symlink /etc/localtime", NULL);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(etc_files); i++) {
                snprintf(dst, sizeof(dst), NEWROOT "/etc/%s", etc_files[i].name);
                _cleanup_close_ int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                size_t len = strlen(etc_files[i].content);
                if (fd < 0 || write(fd, etc_files[i].content, len) != (ssize_t) len)
                        return fail(plan, errno, "write /etc/", etc_files[i].name);
        }

        for (size_t i = 0; i < ELEMENTSOF(devices); i++) {
                r = make_mount_point(in_newroot(dst, sizeof(dst), devices[i]), false);
                if (r < 0)
                        return fail(plan, -r, "create ", devices[i]);
        }
        static const char *const dev_links[][2] = {
                { "/proc/self/fd", "/dev/fd" },      { "/proc/self/fd/0", "/dev/stdin" },
                { "/proc/self/fd/1", "/dev/stdout" }, { "/proc/self/fd/2", "/dev/stderr" },
                { "/tmp", "/dev/shm" }, /* POSIX semaphores (multiprocessing) live in the capped /tmp */
        };
        for (size_t i = 0; i < ELEMENTSOF(dev_links); i++)
                if (symlink(dev_links[i][0], in_newroot(dst, sizeof(dst), dev_links[i][1])) < 0)
                        return fail(plan, errno, "symlink ", dev_links[i][1]);

        /* /usr and the chosen /etc entries, bound from the host, then the whole tree (root tmpfs
         * included: no writes to /, /etc, /dev) read-only in one go. */
        for (size_t i = 0; i < ELEMENTSOF(ro_binds); i++) {
                struct stat st;
                if (stat(ro_binds[i], &st) < 0)
                        continue;
                in_newroot(dst, sizeof(dst), ro_binds[i]);
                r = make_mount_point(dst, S_ISDIR(st.st_mode));
                if (r < 0)
                        return fail(plan, -r, "create mount point ", ro_binds[i]);
                if (mount(ro_binds[i], dst, NULL, MS_BIND | MS_REC, NULL) < 0)
                        return fail(plan, errno, "bind ", ro_binds[i]);
        }
        if (plan->env_fd >= 0) {
                char src[64];
                snprintf(src, sizeof(src), "/proc/self/fd/%d", plan->env_fd);
                in_newroot(dst, sizeof(dst), SANDBOX_ENV_DIR);
                r = make_mount_point(dst, true);
                if (r < 0)
                        return fail(plan, -r, "create mount point ", SANDBOX_ENV_DIR);
                if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
                        return fail(plan, errno, "bind ", SANDBOX_ENV_DIR);
                r = make_ro_tree(dst, NULL, 0);
                if (r < 0)
                        return fail(plan, -r, "make read-only ", SANDBOX_ENV_DIR);
        }
        r = make_ro_tree(NEWROOT, ro_binds, ELEMENTSOF(ro_binds));
        if (r < 0)
                return fail(plan, -r, "make the new root read-only", NULL);

        /* /dev: the five harmless nodes, bound from the host (a tmpfs made in a user namespace
         * cannot hold working device nodes). Mounted after the read-only pass: they stay writable. */
        for (size_t i = 0; i < ELEMENTSOF(devices); i++)
                if (mount(devices[i], in_newroot(dst, sizeof(dst), devices[i]), NULL, MS_BIND, NULL) < 0)
                        return fail(plan, errno, "bind ", devices[i]);

        /* A fresh /proc of the run's PID namespace; what could change the kernel's state read-only,
         * as container runtimes do. */
        if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                /* EPERM here is the kernel's mount_too_revealing(): a user namespace may mount a
                 * proc only while the one it can see is fully visible, and a container runtime's
                 * masks (/proc/keys, a read-only /proc/sys…) cover parts of it. Said, because the
                 * fix is the container's, not ours (docs/container.md). */
                return fail(plan, errno, "mount /proc",
                            errno == EPERM ? " (refused while the /proc above is partly masked, as a "
                                             "container's is: run the container with /proc unmasked)"
                                           : NULL);
        /* Masked as Docker and runc mask them (moby oci/defaults.go, MaskedPaths): an empty
         * read-only tmpfs over a directory, the host's /dev/null over a file, only where the kernel
         * has the entry. Kernel memory (kcore), the keyrings of every user (keys; key-users is
         * ours), timers and scheduler state of every task on the host (timer_list, sched_debug,
         * latency_stats), hardware (acpi, scsi, asound): nothing Python needs, and each a source of
         * addresses or other tenants' activity. /sys/firmware is moot: the run has no /sys at all.
         * Decided beyond Docker (issue 15):
         * - /proc/cmdline is masked: it is the host's kernel command line, which on some hosts holds
         *   root=, cloud-init or iSCSI credentials and tokens; neither Python nor the scientific
         *   stack reads it.
         * - /proc/config.gz is masked: the host kernel's exact configuration (which hardening is
         *   off) is an exploit writer's map; nothing in a run needs it.
         * - /proc/self/mountinfo stays: it lists the run's own mount namespace only (the old root
         *   is detached after pivot_root), i.e. the mounts made above. Their root field does show
         *   host paths: /usr, the /etc entries bound from the host and, with dependencies, the
         *   environment's directory in the daemon's cache; that names nothing secret and nothing
         *   the run can reach, and masking a per-process file would break tools (psutil, df-like
         *   code) that parse it. */
        static const char *const proc_masked[] = {
                "/proc/acpi",        "/proc/asound",      "/proc/kcore",     "/proc/keys",
                "/proc/key-users",   "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                "/proc/sched_debug", "/proc/scsi",        "/proc/cmdline",   "/proc/config.gz",
        };
        for (size_t i = 0; i < ELEMENTSOF(proc_masked); i++) {
                struct stat st;
                in_newroot(dst, sizeof(dst), proc_masked[i]);
                if (lstat(dst, &st) < 0)
                        continue; /* a kernel without it (CONFIG_IKCONFIG_PROC, timer_stats…) */
                if (S_ISDIR(st.st_mode))
                        r = mount("tmpfs", dst, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                  "mode=0555,size=4k,nr_inodes=1");
                else
                        r = mount("/dev/null", dst, NULL, MS_BIND, NULL);
                if (r < 0)
                        return fail(plan, errno, "mask ", proc_masked[i]);
        }

        r = ucount_limits_write(plan);
        if (r < 0)
                return r;

        static const char *const proc_ro[] = { "/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus" };
        for (size_t i = 0; i < ELEMENTSOF(proc_ro); i++) {
                in_newroot(dst, sizeof(dst), proc_ro[i]);
                if (access(dst, F_OK) < 0)
                        continue; /* a kernel without CONFIG_MAGIC_SYSRQ… */
                if (mount(dst, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
                        return fail(plan, errno, "bind ", proc_ro[i]);
                r = make_ro_tree(dst, NULL, 0);
                if (r < 0)
                        return fail(plan, -r, "make read-only ", proc_ro[i]);
        }

        /* The run's private /tmp, capped; the working directory (filled by sandbox_fs_populate()). */
        if (mount("tmpfs", NEWROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, plan->tmp_options) < 0)
                return fail(plan, errno, "mount tmpfs /tmp", NULL);

        /* pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves
         * nothing of the host reachable (pivot_root(2), "NOTES"). */
        if (chdir(NEWROOT) < 0)
                return fail(plan, errno, "chdir to the new root", NULL);
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return fail(plan, errno, "pivot_root", NULL);
        if (umount2(".", MNT_DETACH) < 0)
                return fail(plan, errno, "detach the old root", NULL);
        if (chdir("/") < 0)
                return fail(plan, errno, "chdir /", NULL);
        return 0;
}

int sandbox_fs_populate(SpawnPlan *plan) {
        _cleanup_close_ int tmpfd = open(SANDBOX_WORK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tmpfd < 0)
                return fail(plan, errno, "open " SANDBOX_WORK_DIR, NULL);
        int r = copy_staged(plan, tmpfd);
        if (r < 0)
                return r;
        write_seeds(plan->sandbox, tmpfd);
        return 0;
}
