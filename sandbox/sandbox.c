/* sandbox.c: namespace probe, self-test, the run's init (PID 1) with its helper and Python child, warm-up. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "sandbox-init.h"
#include "sandbox-internal.h"
#include "sandbox.h"

/* One run, as processes (host view):
 *
 *   daemon ── clone3(NEWUSER|NEWPID|NEWNET|NEWIPC|NEWUTS|NEWNS, PIDFD[, INTO_CGROUP supervisor/])
 *     └─ init (PID 1; kuid of the daemon: root stays host uid 0, unmapped, so it may write the
 *        │  root-owned cgroup.procs that CLONE_INTO_CGROUP checks; holds all namespace caps)
 *        ├─ mount helper (uid 65532; after 'M', before the release): builds the new root, exits
 *        └─ Python child (after 'R'; INTO_CGROUP payload/): uid 65532, setsid, own cgroup ns,
 *           copies the staged files, drops caps, no_new_privs, seccomp, waits for the go pipe,
 *           execve
 *
 * Without a cgroup (rlimit mode: nothing comes with the release) there is no mount helper: the
 * Python child is forked at once, before 'M' (its fork overlaps the daemon's writing of the id
 * maps), waits on the maps pipe, which the init closes at 'M', then builds the new root itself and
 * goes on as above, while the init waits for 'R' and execs the init program (that exec overlaps
 * the mounts). One process and two hand-overs fewer on the way to Python (issue 16.5); the child's
 * CPU time up to then is reported to the init program and not charged to the run.
 *
 * Up to here the init is a clone of the daemon (the setup). Once the Python child exists, the init
 * execs the run's init program (sandbox-init.c, from a sealed memfd, empty environment), which
 * holds nothing of the daemon, makes itself non-dumpable and closes the go pipe's write end; only
 * then does the Python child exec Python: no code of the caller runs while a copy of the daemon's
 * memory shares the run's namespaces, or while PID 1's memory is open to the run (issue 15.4).
 *
 * control_fd (SOCK_SEQPACKET): daemon → init 'M' (id maps written, from sandbox_spawn), 'R'
 * (release, maybe with the payload cgroup fd); init → daemon SandboxReport messages, and before
 * them, in an egress run, one EgressMessage with the run's listener. EOF on it ends the init, and
 * with it the PID namespace. */

/* glibc 2.36 has no clone3() wrapper and <linux/sched.h> fights <sched.h>: our own copy of the
 * v2 struct (kernel ≥ 5.7, for the cgroup field). */
struct clone_args_v2 {
        uint64_t flags;
        uint64_t pidfd;
        uint64_t child_tid;
        uint64_t parent_tid;
        uint64_t exit_signal;
        uint64_t stack;
        uint64_t stack_size;
        uint64_t tls;
        uint64_t set_tid;
        uint64_t set_tid_size;
        uint64_t cgroup;
};

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

#define RUN_NS_FLAGS (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS)

/* What the daemon sends the init on control_fd: the id maps are written (from sandbox_spawn), then
 * the release (optionally with the payload cgroup). */
#define MAPS_MESSAGE 'M'
#define RELEASE_MESSAGE 'R'

/* What the init of an egress run sends first on control_fd, before it waits for 'M': err 0 with the
 * listening socket (SCM_RIGHTS), or the errno of the step that failed and no fd. */
typedef struct EgressMessage {
        int32_t err;
} EgressMessage;

static pid_t raw_clone3(uint64_t flags, int *ret_pidfd, int cgroup_fd) {
        struct clone_args_v2 args = {
                .flags = flags,
                .pidfd = (uint64_t) (uintptr_t) ret_pidfd,
                .exit_signal = SIGCHLD,
        };
        if (cgroup_fd >= 0) {
                args.flags |= CLONE_INTO_CGROUP;
                args.cgroup = (uint64_t) cgroup_fd;
        }
        return (pid_t) syscall(SYS_clone3, &args, sizeof(args));
}

/* ---------------------------------------------------------------------------------------------
 * Process-wide state and the namespace probe. */

static const struct {
        int flag;
        const char *name;
} namespace_table[] = {
        { CLONE_NEWUSER,   "user"    },
        { CLONE_NEWPID,    "pid"     },
        { CLONE_NEWNET,    "network" },
        { CLONE_NEWIPC,    "ipc"     },
        { CLONE_NEWUTS,    "uts"     },
        { CLONE_NEWNS,     "mount"   },
        { CLONE_NEWCGROUP, "cgroup"  },
};

/* Clones a child into the given namespaces that exits at once; returns 0 or -errno of clone3. */
static int probe_clone(uint64_t flags) {
        int pidfd = -EBADF;
        pid_t pid = raw_clone3(flags | CLONE_PIDFD, &pidfd, -EBADF);
        if (pid < 0)
                return -errno;
        if (pid == 0)
                _exit(0);

        siginfo_t si;
        while (waitid(P_PIDFD, (id_t) pidfd, &si, WEXITED) < 0 && errno == EINTR)
                ;
        safe_close(pidfd);
        return 0;
}

static const char *probe_hint(int err, bool user) {
        switch (err) {
        case EPERM:
                return user ? "user namespaces are disabled (kernel.unprivileged_userns_clone=0, "
                              "or a container seccomp profile or LSM forbids them)"
                            : "a container seccomp profile or LSM forbids it";
        case ENOSPC:
                return "a namespace count limit is reached (/proc/sys/user/max_*_namespaces)";
        case EINVAL:
                return "the kernel was built without it";
        case ENOSYS:
                return "the kernel has no clone3 (Linux ≥ 5.3 needed)";
        default:
                return "unexpected error";
        }
}

/* Tries each namespace on its own (each with a user namespace, as the runs do) to name the one
 * the kernel refuses. */
static int probe_namespaces(char **reterr_reason) {
        int r = probe_clone(RUN_NS_FLAGS | CLONE_NEWCGROUP);
        if (r >= 0)
                return 0;

        const char *name = "user";
        int err = -r;
        if (probe_clone(CLONE_NEWUSER) >= 0)
                for (size_t i = 1; i < ELEMENTSOF(namespace_table); i++) {
                        int q = probe_clone(CLONE_NEWUSER | (uint64_t) namespace_table[i].flag);
                        if (q < 0) {
                                name = namespace_table[i].name;
                                err = -q;
                                break;
                        }
                }

        if (reterr_reason) {
                char *s = NULL;
                if (asprintf(&s, "the kernel refused to create a %s namespace (clone3: %s): %s; "
                             "runs cannot be confined, refusing to start",
                             name, strerror(err), probe_hint(err, strcmp(name, "user") == 0)) >= 0)
                        *reterr_reason = s;
        }
        return -err;
}

static int spawn_internal(const Sandbox *s, const SandboxRunSpec *spec, bool self_test, SandboxChild *ret);

static int self_test_fail(char **reterr_reason, int r, const char *step) {
        if (reterr_reason) {
                char *m = NULL;
                if (asprintf(&m, "the sandbox self-test failed at \"%s\": %s", step, strerror(-r)) >= 0)
                        *reterr_reason = m;
        }
        return r;
}

/* Waits (blocking, up to timeout_ms) for the run's last report: EXITED or FAILED. */
static int child_wait_final(SandboxChild *c, int timeout_ms, SandboxReport *rep) {
        for (;;) {
                struct pollfd p = { .fd = c->control_fd, .events = POLLIN };
                int n = poll(&p, 1, timeout_ms);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -ETIMEDOUT;
                ssize_t k = recv(c->control_fd, rep, sizeof(*rep), 0);
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (k != (ssize_t) sizeof(*rep))
                        return k < 0 ? -errno : -EPROTO;
                rep->detail[sizeof(rep->detail) - 1] = 0;
                if (rep->kind == SANDBOX_REPORT_EXITED || rep->kind == SANDBOX_REPORT_FAILED)
                        return 0;
        }
}

/* Lets the init go (killing the run first if asked) and reaps it. */
static void child_end(SandboxChild *c, bool kill) {
        if (kill)
                (void) sandbox_child_kill(c);
        c->control_fd = safe_close(c->control_fd);
        siginfo_t si;
        while (waitid(P_PIDFD, (id_t) c->pidfd, &si, WEXITED) < 0 && errno == EINTR)
                ;
        sandbox_child_done(c);
}

/* A run of the daemon's own (the self-test, the warm-up): its stdio on nul (/dev/null), no cgroups
 * of its own. */
static SandboxRunSpec own_run_spec(const char *python, const char *staging_dir, const char *script, int nul) {
        return (SandboxRunSpec) {
                .python = python,
                .staging_dir = staging_dir,
                .script = script,
                .stdin_fd = nul,
                .stdout_fd = nul,
                .stderr_fd = nul,
                .supervisor_cgroup_fd = -EBADF,
                .payload_cgroup_fd = -EBADF,
        };
}

/* Runs the whole spawn path once at start, with /usr/bin/true in place of Python: a kernel or
 * container that refuses a mount, pivot_root, the id maps or the seccomp filter is found now,
 * with the step that failed, instead of at the first run (issue 4, point 9). An execve that
 * fails with ENOENT still counts: every step of the confinement ran before it. */
static int sandbox_self_test(const Sandbox *s, char **reterr_reason) {
        _cleanup_close_ int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (nul < 0)
                return self_test_fail(reterr_reason, -errno, "open /dev/null");

        SandboxRunSpec spec = own_run_spec("/usr/bin/true", NULL, "self-test", nul);
        SandboxChild c;
        int r = spawn_internal(s, &spec, true, &c);
        if (r < 0)
                return self_test_fail(reterr_reason, r, "clone3 and id maps");

        SandboxReport rep = {};
        r = sandbox_child_release(&c);
        if (r >= 0)
                r = child_wait_final(&c, 10000, &rep);
        if (r >= 0 && rep.kind == SANDBOX_REPORT_EXITED)
                r = WIFEXITED(rep.value) && WEXITSTATUS(rep.value) == 0 ? 0 : -ECHILD;
        else if (r >= 0 && !(rep.value == ENOENT && strncmp(rep.detail, "execve ", 7) == 0))
                r = -(rep.value > 0 ? rep.value : EIO);
        child_end(&c, r < 0);
        if (r < 0)
                return self_test_fail(reterr_reason, r,
                                      rep.kind == SANDBOX_REPORT_FAILED ? rep.detail : "waiting for the init");
        return 0;
}

/* Reads the files matplotlib left in the warm-up run's cache directory (through the init's root,
 * as the daemon reads outputs). */
static int warm_up_harvest(Sandbox *s, pid_t init) {
        char path[128];
        snprintf(path, sizeof(path), "/proc/%d/root" SANDBOX_WORK_DIR "/" SANDBOX_MPL_CACHE_DIR, (int) init);
        _cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT ? 0 : -errno; /* no matplotlib: nothing to keep */
        DIR *d = fdopendir(dfd);
        if (!d)
                return -errno;
        TAKE_FD(dfd);
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d)) && s->n_seeds < ELEMENTSOF(s->seeds)) {
                if (strncmp(de->d_name, "fontlist-", 9) != 0 || strlen(de->d_name) >= sizeof(s->seeds[0].name))
                        continue;
                _cleanup_close_ int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
                    st.st_size > SANDBOX_SEED_MAX_BYTES)
                        continue;
                char *data = malloc((size_t) st.st_size + 1);
                if (!data) {
                        r = -ENOMEM;
                        break;
                }
                if (pread(fd, data, (size_t) st.st_size, 0) != st.st_size) {
                        free(data);
                        continue;
                }
                SandboxSeed *seed = &s->seeds[s->n_seeds++];
                strcpy(seed->name, de->d_name);
                seed->data = data;
                seed->len = (size_t) st.st_size;
        }
        closedir(d);
        return r;
}

int sandbox_warm_up(Sandbox *s, const char *python) {
        static const char code[] = "try:\n    import matplotlib.font_manager\nexcept ImportError:\n    pass\n";
        char staging[PATH_MAX];
        int r;

        if (s->n_seeds > 0)
                return 0;
        snprintf(staging, sizeof(staging), "%s/sandbox-warm-up-XXXXXX", getenv("TMPDIR") ?: "/tmp");
        if (!mkdtemp(staging))
                return -errno;
        {
                _cleanup_close_ int dfd = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                r = dfd < 0 ? -errno : fd_write_file_at(dfd, "warm-up.py", code, sizeof(code) - 1, 0600);
        }
        _cleanup_close_ int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (r >= 0 && nul < 0)
                r = -errno;
        SandboxChild c = { .pidfd = -EBADF, .control_fd = -EBADF, .egress_listen_fd = -EBADF };
        if (r >= 0) {
                SandboxRunSpec spec = own_run_spec(python, staging, "warm-up.py", nul);
                r = sandbox_spawn(s, &spec, &c);
        }
        if (r >= 0) {
                SandboxReport rep = {};
                r = sandbox_child_release(&c);
                if (r >= 0)
                        r = child_wait_final(&c, 120000, &rep);
                if (r >= 0 && rep.kind == SANDBOX_REPORT_FAILED)
                        r = -(rep.value > 0 ? rep.value : EIO);
                else if (r >= 0 && !(WIFEXITED(rep.value) && WEXITSTATUS(rep.value) == 0))
                        r = -ECHILD;
                if (r >= 0)
                        r = warm_up_harvest(s, c.pid); /* while the init keeps the run's /tmp */
                child_end(&c, r < 0);
        }
        (void) rm_rf(staging);
        return r;
}

/* ---------------------------------------------------------------------------------------------
 * Per-run shares of the daemon user's per-user budgets (issue 15.1).
 *
 * Each run's user namespace is created by the daemon's user, and the kernel charges what the run
 * holds of some per-user budgets to that creator at every level up to the initial namespace
 * (kernel/ucount.c: inc_ucount() and inc_rlimit_ucounts() walk ns->ucounts up to init_user_ns):
 * inotify instances and watches, fanotify groups and marks (user_namespaces(7), inotify(7)),
 * POSIX message-queue bytes (mq_overview(7), RLIMIT_MSGQUEUE) and queued signals
 * (RLIMIT_SIGPENDING). Unbounded, one run holding 128 inotify_init1 made every inotify_init1 of
 * root on the host fail with EMFILE; 9 mq_open made root's mq_open fail. So each run gets a share:
 * what the daemon's user may hold, halved (the other half stays for that user and the host: PID 1
 * under the shipped unit, the desktop's file watchers over stdio), divided by every sandbox that
 * may hold caller code at once: MCP_EXEC_MAX_CONCURRENT runs plus MCP_EXEC_PY_SESSIONS_MAX
 * sessions (a session keeps what it holds between calls: four idle sessions of a 1-run daemon took
 * all 128 inotify instances of root, issue 29 #2). With the kernel's defaults and 4 sandboxes:
 *   max_inotify_instances 128          → 16 per run      max_inotify_watches 8192‥~1M → 1/8 each
 *   max_fanotify_groups 128            → 16 per run      max_fanotify_marks           → 1/8
 *   RLIMIT_MSGQUEUE 819200 bytes       → 102400 bytes: one default queue (10 × 8192 B) per run
 *   RLIMIT_SIGPENDING (ulimit -i)      → 1/8 of it
 * Python itself needs none of them; a share of 0 (more runs than budget) just refuses them.
 * The ucount limits are written in the run's own user namespace (its /proc/sys/user, writable by
 * the run's capabilities there, before /proc/sys goes read-only): a charge is checked against the
 * limit of every level, so a lower limit there bounds the run and raises nothing on the host. The
 * rlimits are set on Python (sandbox_lockdown()): the charge at the run's level is checked against
 * them. Both hold for a root and an unprivileged daemon alike: the budget is its user's either way. */

static uint64_t read_u64_file(const char *path, bool *ret_found) {
        FILE *f = fopen(path, "re");
        unsigned long long v = 0;
        *ret_found = f && fscanf(f, "%llu", &v) == 1;
        if (f)
                (void) fclose(f);
        return *ret_found ? (uint64_t) v : 0;
}

static uint64_t rlimit_share_basis(int resource, uint64_t fallback) {
        struct rlimit rl;
        if (getrlimit(resource, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                return fallback; /* unlimited for the daemon's user: keep runs as small as by default */
        return rl.rlim_cur;
}

static void sandbox_shares_compute(Sandbox *s) {
        static const char *const paths[ELEMENTSOF(s->ucount_limits)] = {
                "/proc/sys/user/max_inotify_instances",
                "/proc/sys/user/max_inotify_watches",
                "/proc/sys/user/max_fanotify_groups",
                "/proc/sys/user/max_fanotify_marks",
        };
        uint64_t runs = MAX(s->config.max_sandboxes, 1u);
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                bool found;
                /* The daemon's own user namespace's limit (in the initial one, the same as
                 * /proc/sys/fs/inotify/max_user_*). */
                uint64_t v = read_u64_file(paths[i], &found);
                s->ucount_limits[i].path = paths[i];
                if (found)
                        (void) snprintf(s->ucount_limits[i].value, sizeof(s->ucount_limits[i].value),
                                        "%" PRIu64 "\n", v / 2 / runs);
        }
        s->msgqueue_bytes = rlimit_share_basis(RLIMIT_MSGQUEUE, 819200) / 2 / runs;
        s->sigpending = rlimit_share_basis(RLIMIT_SIGPENDING, 4096) / 2 / runs;
}

/* The run's init program (sandbox-init.c), linked into us by sandbox/incbin.py. */
extern const unsigned char sandbox_init_program[];
extern const unsigned char sandbox_init_program_end[];

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

/* Copies the init program into a sealed memfd, exec'd by every run's init (execveat on the fd):
 * nothing to install or find, and it works after the run's pivot_root. MFD_EXEC where the kernel
 * knows it (6.3+, where vm.memfd_noexec may otherwise refuse the exec). */
static int init_program_load(Sandbox *s, char **reterr_reason) {
        const unsigned char *p = sandbox_init_program;
        size_t left = (size_t) (sandbox_init_program_end - sandbox_init_program);
        _cleanup_close_ int fd = memfd_create("sandbox-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
        if (fd < 0 && errno == EINVAL)
                fd = memfd_create("sandbox-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                goto fail;
        while (left > 0) {
                ssize_t n = write(fd, p, left);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        goto fail;
                p += n;
                left -= (size_t) n;
        }
        if (fchmod(fd, 0555) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                goto fail;
        s->init_fd = TAKE_FD(fd);
        /* Our copy is read once: its pages (read-only, backed by our own file) leave our RSS, about
         * 0.7 MiB of an idle daemon's (issue 16.6); a later read would fault them in again. */
        uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
        uintptr_t from = ((uintptr_t) sandbox_init_program + page - 1) & ~(page - 1),
                  to = (uintptr_t) sandbox_init_program_end & ~(page - 1);
        if (to > from)
                (void) madvise((void *) from, to - from, MADV_DONTNEED);
        return 0;
fail:;
        int e = errno;
        if (reterr_reason && asprintf(reterr_reason, "cannot load the run's init program into a memfd: %s",
                                      strerror(e)) < 0)
                *reterr_reason = NULL;
        return -e;
}

int sandbox_new_unchecked(const SandboxConfig *config, Sandbox **ret, char **reterr_reason) {
        /* sandbox_freep: the seccomp program and the seeds built below go with it on any failure. */
        _cleanup_(sandbox_freep) Sandbox *s = calloc(1, sizeof(Sandbox));
        if (!s)
                return -ENOMEM;
        s->config = *config;
        if (s->config.cpu_threads == 0)
                s->config.cpu_threads = 1;
        s->init_fd = -EBADF;
        s->host_uid = geteuid();
        s->host_gid = getegid();
        s->privileged = s->host_uid == 0;
        sandbox_shares_compute(s);

        *ret = TAKE_PTR(s);
        return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The reserved host uids (issue 29.5). A root daemon's runs are host uid 65532 and its installer
 * 65533. kill(2) checks uids, not namespaces: a host process of uid 65532 that can see the runs'
 * pids can signal every run (stop a session's interpreter), one of 65533 can ptrace the installer.
 * The package creates both users (sysusers.d, mcp-execd-run and mcp-execd-install); a passwd entry
 * of another name (65532 is distroless's "nonroot") or such a process refuses the start. Processes
 * in a PID namespace of their own (a container's) cannot see the runs' pids and are not counted; an
 * installer of another mcp-execd instance (its parent is an mcp-execd) is that instance's. A
 * check at the start, not a guard: what starts later with those uids is the host's to prevent, by
 * the users the package makes. */

static const struct {
        uid_t uid;
        const char *name;
        const char *whose;
} reserved_uids[] = {
        { SANDBOX_UID, "mcp-execd-run", "the runs'" },
        { SANDBOX_INSTALL_UID, "mcp-execd-install", "the dependency installer's" },
};

/* From /proc/<pid>/status: the uids (real, effective, saved), how many PID namespaces the pid has
 * from ours, and the parent. false when it is gone. */
static bool proc_status_ids(int dfd, const char *pid, uid_t uids[3], unsigned *nslevels, pid_t *ppid) {
        char path[300], buf[4096];
        snprintf(path, sizeof(path), "%s/status", pid);
        _cleanup_close_ int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return false;
        buf[n] = 0;
        const char *u = strstr(buf, "\nUid:"), *ns = strstr(buf, "\nNSpid:"), *pp = strstr(buf, "\nPPid:");
        unsigned long r, e, sv;
        if (!u || sscanf(u + 5, "%lu %lu %lu", &r, &e, &sv) != 3)
                return false;
        uids[0] = (uid_t) r, uids[1] = (uid_t) e, uids[2] = (uid_t) sv;
        *nslevels = 1;
        if (ns) {
                const char *end = strchr(ns + 1, '\n');
                *nslevels = 0;
                for (const char *q = ns + 7; *q && q != end; q++)
                        if ((*q >= '0' && *q <= '9') && (q[-1] == ' ' || q[-1] == '\t'))
                                (*nslevels)++;
        }
        long parent = 0;
        *ppid = pp && sscanf(pp + 6, "%ld", &parent) == 1 ? (pid_t) parent : 0;
        return true;
}

/* Whether pid runs an mcp-execd: its executable's file is named so (another build's or version's
 * too, and one replaced by an upgrade, "… (deleted)"). An accident, not an adversary, is what this
 * check is for: a host user who can run processes as 65532 is beyond what the start can refuse. */
static bool proc_is_mcp_execd(pid_t pid) {
        char path[64], exe[PATH_MAX];
        snprintf(path, sizeof(path), "/proc/%d/exe", (int) pid);
        ssize_t n = readlink(path, exe, sizeof(exe) - 1);
        if (n <= 0)
                return false;
        exe[n] = 0;
        static const char deleted[] = " (deleted)";
        size_t len = (size_t) n;
        if (len > strlen(deleted) && strcmp(exe + len - strlen(deleted), deleted) == 0)
                exe[len - strlen(deleted)] = 0;
        const char *base = strrchr(exe, '/');
        return strcmp(base ? base + 1 : exe, "mcp-execd") == 0;
}

/* Whether pid or one of its first ancestors is an mcp-execd: an installer (uid 65533, in our PID
 * namespace) runs pip, whose children run more. */
static bool descends_from_mcp_execd(int dfd, pid_t pid) {
        for (int depth = 0; pid > 1 && depth < 16; depth++) {
                if (proc_is_mcp_execd(pid))
                        return true;
                char name[16];
                uid_t uids[3];
                unsigned levels;
                snprintf(name, sizeof(name), "%d", (int) pid);
                if (!proc_status_ids(dfd, name, uids, &levels, &pid))
                        return false;
        }
        return false;
}

static int reserved_uids_scan(char **reterr_reason) {
        for (size_t i = 0; i < ELEMENTSOF(reserved_uids); i++) {
                errno = 0;
                struct passwd *pw = getpwuid(reserved_uids[i].uid);
                if (pw && strcmp(pw->pw_name, reserved_uids[i].name) != 0)
                        return asprintf(reterr_reason, "uid %u, %s uid, is the user '%s' in the passwd database; mcp-execd "
                                        "reserves uids %u and %u (the package creates them as %s and %s): give '%s' "
                                        "another uid", (unsigned) reserved_uids[i].uid, reserved_uids[i].whose, pw->pw_name,
                                        (unsigned) SANDBOX_UID, (unsigned) SANDBOX_INSTALL_UID, reserved_uids[0].name,
                                        reserved_uids[1].name, pw->pw_name) < 0 ? -ENOMEM : -EADDRINUSE;
        }
        _cleanup_close_ int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = dfd < 0 ? NULL : fdopendir(fcntl(dfd, F_DUPFD_CLOEXEC, 3));
        if (!d)
                return 0; /* no /proc to look in: the passwd check is what there is */
        int r = 0;
        for (struct dirent *de; r == 0 && (de = readdir(d));) {
                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                uid_t uids[3];
                unsigned levels;
                pid_t ppid;
                if (!proc_status_ids(dfd, de->d_name, uids, &levels, &ppid) || levels != 1)
                        continue;
                for (size_t i = 0; r == 0 && i < ELEMENTSOF(reserved_uids); i++) {
                        uid_t u = reserved_uids[i].uid;
                        if (uids[0] != u && uids[1] != u && uids[2] != u)
                                continue;
                        if (descends_from_mcp_execd(dfd, ppid))
                                continue; /* an instance's installer, its pip, its access check */
                        char path[300], comm[32] = "?";
                        snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
                        _cleanup_close_ int cfd = open(path, O_RDONLY | O_CLOEXEC);
                        ssize_t n = cfd < 0 ? -1 : read(cfd, comm, sizeof(comm) - 1);
                        if (n > 0) {
                                comm[n] = 0;
                                comm[strcspn(comm, "\n")] = 0;
                        }
                        r = asprintf(reterr_reason, "process %s (%s) runs as uid %u, %s uid, outside mcp-execd: it could "
                                     "signal or trace them; mcp-execd reserves uids %u and %u: stop it, or give it "
                                     "another uid", de->d_name, comm, (unsigned) u, reserved_uids[i].whose,
                                     (unsigned) SANDBOX_UID, (unsigned) SANDBOX_INSTALL_UID) < 0 ? -ENOMEM : -EADDRINUSE;
                }
        }
        closedir(d);
        return r;
}

int sandbox_check(Sandbox *s, char **reterr_reason) {
        int r = s->privileged ? reserved_uids_scan(reterr_reason) : 0;
        if (r < 0)
                return r;

        r = probe_namespaces(reterr_reason);
        if (r < 0)
                return r;

        r = init_program_load(s, reterr_reason);
        if (r < 0)
                return r;

        r = sandbox_seccomp_build(s, reterr_reason);
        if (r < 0)
                return r;

        return sandbox_self_test(s, reterr_reason);
}

int sandbox_new(const SandboxConfig *config, Sandbox **ret, char **reterr_reason) {
        _cleanup_(sandbox_freep) Sandbox *s = NULL;
        int r = sandbox_new_unchecked(config, &s, reterr_reason);
        if (r < 0)
                return r;
        r = sandbox_check(s, reterr_reason);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

Sandbox *sandbox_free(Sandbox *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_seeds; i++)
                free(s->seeds[i].data);
        free(s->seccomp_bpf);
        free(s->seccomp_egress_bpf);
        safe_close(s->init_fd);
        free(s);
        return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Helpers for the child side: no malloc, no stdio, only syscalls and our own string copies. */

static size_t str_copy(char *dst, size_t size, const char *a, const char *b) {
        size_t n = 0;
        for (const char *p = a; p && *p && n + 1 < size; p++)
                dst[n++] = *p;
        for (const char *p = b; p && *p && n + 1 < size; p++)
                dst[n++] = *p;
        dst[n] = 0;
        return n;
}

static void report_send(int fd, const SandboxReport *rep) {
        ssize_t n;
        do
                n = send(fd, rep, sizeof(*rep), MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        /* The daemon is gone (EPIPE): the run has no one to report to. Exiting ends it. */
        if (n < 0)
                _exit(1);
}

static void report_failed(int fd, int err, const char *step, const char *what) {
        SandboxReport rep = { .kind = SANDBOX_REPORT_FAILED, .value = err };
        str_copy(rep.detail, sizeof(rep.detail), step, what);
        report_send(fd, &rep);
}

/* Every signal back to its default and unblocked, so Python starts like from a shell. */
void sandbox_signals_reset(void) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) sigaction(sig, &sa, NULL);
        sigset_t all;
        sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
}

/* Closes every fd except the ones in keep (any order, -EBADF entries ignored). */
int sandbox_close_all_but(const int *keep, size_t n) {
        int sorted[8];
        size_t m = 0;
        for (size_t i = 0; i < n && m < ELEMENTSOF(sorted); i++)
                if (keep[i] >= 0)
                        sorted[m++] = keep[i];
        for (size_t i = 1; i < m; i++)
                for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                        int t = sorted[j];
                        sorted[j] = sorted[j - 1];
                        sorted[j - 1] = t;
                }
        unsigned lo = 0;
        for (size_t i = 0; i < m; i++) {
                if ((unsigned) sorted[i] > lo && close_range(lo, (unsigned) sorted[i] - 1, 0) < 0)
                        return -errno;
                lo = (unsigned) sorted[i] + 1;
        }
        return close_range(lo, ~0U, 0) < 0 ? -errno : 0;
}

/* ---------------------------------------------------------------------------------------------
 * The init's two children. The mount helper, forked as soon as the id maps exist (before the
 * release, so its work overlaps the daemon's cgroup placement), builds the run's view of the
 * system in the shared mount namespace and exits. The Python child, forked after the release
 * (into the payload cgroup), copies the staged files into /tmp, drops every privilege and execs
 * Python. A failure is written to exec_fd as a ChildError and the child exits 127; success is
 * EOF on exec_fd (the helper exits, the Python child's execve closes it: O_CLOEXEC). */

typedef SandboxChildError ChildError;

static uint64_t timeval_usec(const struct timeval *tv) {
        return (uint64_t) tv->tv_sec * 1000000 + (uint64_t) tv->tv_usec;
}

_Noreturn static void child_fail(int exec_fd, int err, const char *step, const char *what) {
        ChildError e = { .err = err };
        str_copy(e.step, sizeof(e.step), step, what);
        ssize_t n;
        do
                n = write(exec_fd, &e, sizeof(e));
        while (n < 0 && errno == EINTR);
        _exit(127);
}

#define CHILD_CHECK(expr, step, what)                                           \
        do {                                                                    \
                if ((expr) < 0)                                                 \
                        child_fail(plan->exec_fd, errno, step, what);           \
        } while (0)

_Noreturn static void child_main(SpawnPlan *plan) {
        /* The init closed the daemon's 0, 1, 2, so exec_fd may sit there: lift it out of the way of
         * the dup2()s below. */
        if (plan->exec_fd < 3) {
                int fd = fcntl(plan->exec_fd, F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        _exit(127);
                plan->exec_fd = fd;
        }
        sandbox_signals_reset();

        /* Forked before the id maps (mount_in_child): nothing below works until they exist. EOF
         * once the init has seen 'M'; if the init dies instead, so do we, with its namespace. */
        if (plan->maps_fd >= 0) {
                char c;
                while (read(plan->maps_fd, &c, 1) < 0 && errno == EINTR)
                        ;
                plan->maps_fd = safe_close(plan->maps_fd);
        }

        /* Drop the daemon's supplementary groups while we still may (only root's gid_map allows
         * setgroups; unprivileged the kernel keeps them and "deny" was written). */
        if (plan->privileged)
                CHILD_CHECK(setgroups(0, NULL), "setgroups", NULL);

        CHILD_CHECK(setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID), "setresgid", NULL);
        CHILD_CHECK(setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID), "setresuid", NULL);
        /* No uid 0 is mapped in the run's user namespace, so the switch keeps the namespace
         * capabilities (capabilities(7): the "root" that loses them on setuid is uid 0 of the
         * namespace): unshare() below needs one, and so do the mounts. All are dropped in
         * sandbox_lockdown(). */

        /* Without a cgroup (rlimits) we were forked before the id maps, not after the release:
         * build the run's root ourselves, as the mount helper does (helper_main()), while PID 1
         * becomes the init program; one process fewer, and the init's exec overlaps the mounts.
         * What that work cost is not the run's: our CPU time so far goes to the init program
         * (a ChildError with err 0), which subtracts it. */
        if (plan->mount_in_child) {
                int r = sandbox_fs_setup(plan);
                if (r < 0)
                        child_fail(plan->exec_fd, -r, plan->fail_step, plan->fail_what);
                struct rusage ru = {};
                (void) getrusage(RUSAGE_SELF, &ru);
                ChildError base = { .utime_usec = timeval_usec(&ru.ru_utime), .stime_usec = timeval_usec(&ru.ru_stime) };
                ssize_t n;
                do
                        n = write(plan->exec_fd, &base, sizeof(base));
                while (n < 0 && errno == EINTR);
                if (n != (ssize_t) sizeof(base))
                        _exit(127); /* the init program is gone: so is the run */
        }

        /* A new session: no controlling terminal of the daemon's is reachable (TIOCSTI). */
        CHILD_CHECK(setsid(), "setsid", NULL);

        /* A ready sandbox made ahead weighs less than the runs (issue 16.4) until a call takes it
         * (sandbox_child_foreground()): nice 19, which counts within a cgroup and within the
         * autogroup the session just made is (sched(7), "The autogroup feature": when no cpu
         * cgroup applies). That autogroup's own nice, which weighs it against the other sessions,
         * is raised by the launcher (launch.py): writing /proc/self/autogroup needs a dumpable
         * process, which this one is not after its setresuid, until its execve. Raising a nice
         * value needs no privilege; a failure only leaves it at the runs' weight. */
        if (plan->background)
                (void) setpriority(PRIO_PROCESS, 0, 19);

        /* Our own cgroup namespace, rooted where we were cloned (the payload cgroup): the run sees
         * "0::/". The init cannot do it before cloning us: with nsdelegate (systemd's default)
         * CLONE_INTO_CGROUP outside the caller's cgroup namespace root fails. */
        CHILD_CHECK(unshare(CLONE_NEWCGROUP), "unshare", " CLONE_NEWCGROUP");

        /* The staged files (opened by the init with the daemon's uid) into the run's /tmp, as the
         * run's user, charged to the payload cgroup. */
        int r = sandbox_fs_populate(plan);
        if (r < 0)
                child_fail(plan->exec_fd, -r, plan->fail_step, plan->fail_what);

        /* The run's three pipe ends onto 0, 1, 2. First lift them above 2 so no dup2() clobbers
         * another of them, then close everything else: no fd of the daemon reaches Python. */
        int in = fcntl(plan->stdin_fd, F_DUPFD_CLOEXEC, 3);
        int out = fcntl(plan->stdout_fd, F_DUPFD_CLOEXEC, 3);
        int err = fcntl(plan->stderr_fd, F_DUPFD_CLOEXEC, 3);
        if (in < 0 || out < 0 || err < 0)
                child_fail(plan->exec_fd, errno, "dup", NULL);
        CHILD_CHECK(dup2(in, 0), "dup2", " stdin");
        CHILD_CHECK(dup2(out, 1), "dup2", " stdout");
        CHILD_CHECK(dup2(err, 2), "dup2", " stderr");
        int keep[] = { 0, 1, 2, plan->exec_fd, plan->go_fd };
        r = sandbox_close_all_but(keep, ELEMENTSOF(keep));
        if (r < 0)
                child_fail(plan->exec_fd, -r, "close_range", NULL);

        CHILD_CHECK(chdir(plan->workdir), "chdir ", plan->workdir);

        r = sandbox_lockdown(plan);
        if (r < 0)
                child_fail(plan->exec_fd, -r, plan->fail_step, plan->fail_what);

        /* Until PID 1 is the init program, it is a copy of the daemon: wait until the program
         * closes the go pipe's write end (EOF here; if PID 1 dies instead, so do we, with its PID
         * namespace). go_fd is O_CLOEXEC: Python never sees it. */
        char go;
        while (read(plan->go_fd, &go, 1) < 0 && errno == EINTR)
                ;

        execve(plan->python, (char **) plan->argv, (char **) plan->envp);
        child_fail(plan->exec_fd, errno, "execve ", plan->python);
}

_Noreturn static void helper_main(SpawnPlan *plan) {
        /* Files created in a tmpfs of the run's user namespace must belong to a mapped uid
         * (EOVERFLOW otherwise: as root we are the unmapped host uid 0). */
        CHILD_CHECK(setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID), "setresgid", NULL);
        CHILD_CHECK(setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID), "setresuid", NULL);
        int r = sandbox_fs_setup(plan);
        if (r < 0)
                child_fail(plan->exec_fd, -r, plan->fail_step, plan->fail_what);
        _exit(0);
}

/* ---------------------------------------------------------------------------------------------
 * The init: PID 1 of the run. */

typedef struct InitState {
        int control_fd;
        int signal_fd;
        struct rusage base; /* RUSAGE_CHILDREN once the mount helper was reaped: not the run's */
} InitState;

/* Reaps every child that has exited. Only reached when Python never ran (its reaping and the
 * EXITED report are the init program's, sandbox-init.c). */
static void init_reap(void) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

/* Waits for the message `want` (MAPS_MESSAGE, RELEASE_MESSAGE). Returns true when it came, false
 * on EOF (the daemon dropped the run before releasing it). The release may carry the payload
 * cgroup (SCM_RIGHTS): a manager that places the init by PID creates that cgroup only after the
 * init exists. */
static bool init_wait_message(int control_fd, char want, int *payload_cgroup_fd) {
        for (;;) {
                char buf[16];
                union {
                        struct cmsghdr align;
                        char buf[CMSG_SPACE(sizeof(int))];
                } control = {};
                struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
                struct msghdr mh = {
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = &control,
                        .msg_controllen = sizeof(control),
                };
                ssize_t n = recvmsg(control_fd, &mh, MSG_CMSG_CLOEXEC);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return false;
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                    cm->cmsg_len == CMSG_LEN(sizeof(int))) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
                        safe_close(*payload_cgroup_fd);
                        *payload_cgroup_fd = fd;
                }
                if (buf[0] == want)
                        return true;
        }
}

/* Decimal digits of v into buf (no stdio after the clone). */
static const char *fmt_u64(char buf[static 24], uint64_t v) {
        char *p = buf + 23;
        *p = 0;
        do
                *--p = (char) ('0' + v % 10);
        while ((v /= 10) != 0);
        return p;
}

/* CAP_KILL in the run's user namespace, kept across the exec below as an ambient capability: the
 * init program stops and continues the run's processes (SANDBOX_COMMAND_STOP), which a root daemon's
 * init, an unmapped uid there, may not do by its uid (a run is 65532). Everything else the exec
 * drops: no uid 0 is mapped in the namespace, so the exec gives no other capability
 * (capabilities(7)). Python's own setup cleared the ambient set before its exec
 * (sandbox_lockdown()): the run has none. Best effort: without it a root daemon's session in rlimit
 * mode would not be stopped between its calls, which tests/blackbox/pysession-freeze.test.mjs
 * would see. */
static void init_keep_cap_kill(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        if (syscall(SYS_capget, &h, d) < 0)
                return;
        d[CAP_TO_INDEX(CAP_KILL)].inheritable |= CAP_TO_MASK(CAP_KILL);
        if (syscall(SYS_capset, &h, d) < 0)
                return;
        (void) prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_KILL, 0, 0);
}

/* Becomes the run's init program (sandbox-init.c) with an empty environment; only returns on
 * failure, with errno set. control_fd, exec_fd and go_fd go across the exec, everything else of
 * ours (signal_fd, the memfd) is O_CLOEXEC. */
static void init_exec_program(InitState *st, const SpawnPlan *plan, pid_t python, int exec_fd, int go_fd) {
        char a[SANDBOX_INIT_ARGC][24];
        const char *argv[SANDBOX_INIT_ARGC + 1] = { "sandbox-init" };
        argv[SANDBOX_INIT_ARG_CONTROL_FD] = fmt_u64(a[SANDBOX_INIT_ARG_CONTROL_FD], (uint64_t) st->control_fd);
        argv[SANDBOX_INIT_ARG_EXEC_FD] = fmt_u64(a[SANDBOX_INIT_ARG_EXEC_FD], (uint64_t) exec_fd);
        argv[SANDBOX_INIT_ARG_PYTHON_PID] = fmt_u64(a[SANDBOX_INIT_ARG_PYTHON_PID], (uint64_t) python);
        argv[SANDBOX_INIT_ARG_BASE_UTIME] = fmt_u64(a[SANDBOX_INIT_ARG_BASE_UTIME], timeval_usec(&st->base.ru_utime));
        argv[SANDBOX_INIT_ARG_BASE_STIME] = fmt_u64(a[SANDBOX_INIT_ARG_BASE_STIME], timeval_usec(&st->base.ru_stime));
        argv[SANDBOX_INIT_ARG_GO_FD] = fmt_u64(a[SANDBOX_INIT_ARG_GO_FD], (uint64_t) go_fd);
        argv[SANDBOX_INIT_ARGC] = NULL;
        static const char *const envp[] = { NULL };

        if (fcntl(st->control_fd, F_SETFD, 0) < 0 || fcntl(exec_fd, F_SETFD, 0) < 0 ||
            fcntl(go_fd, F_SETFD, 0) < 0)
                return;
        init_keep_cap_kill();
        (void) syscall(SYS_execveat, plan->init_fd, "", (char *const *) argv, (char *const *) envp,
                       AT_EMPTY_PATH);
}

/* A failure of init_start_python(): reported once the daemon listens (after the release). */
static int init_start_failed(InitState *st, SpawnPlan *plan, bool released, int err, const char *step,
                             const char *what) {
        if (!released && !init_wait_message(st->control_fd, RELEASE_MESSAGE, &plan->payload_cgroup_fd))
                _exit(0);
        report_failed(st->control_fd, err, step, what);
        return -1;
}

/* Starts the Python child, then execs the init program, which reports whether Python started.
 * Returns only on failure, -1 with the report already sent.
 *
 * Not released yet (mount_in_child, called before the id maps): the child is forked now, so that
 * its fork overlaps the daemon's writing of the maps, and waits on the maps pipe; this process
 * lets it go at 'M' (after sethostname), then waits for the release before the exec. */
static int init_start_python(InitState *st, SpawnPlan *plan, bool released) {
        int p[2], go[2] = { -EBADF, -EBADF }, maps[2] = { -EBADF, -EBADF };
        if (pipe2(p, O_CLOEXEC) < 0)
                return init_start_failed(st, plan, released, errno, "pipe2", NULL);
        if (pipe2(go, O_CLOEXEC) < 0 || (!released && pipe2(maps, O_CLOEXEC) < 0)) {
                int e = errno;
                safe_close(p[0]);
                safe_close(p[1]);
                safe_close(go[0]); /* pipe2() leaves the array as it was when it fails */
                safe_close(go[1]);
                return init_start_failed(st, plan, released, e, "pipe2", NULL);
        }
        plan->exec_fd = p[1];
        plan->go_fd = go[0];
        plan->maps_fd = maps[0];

        pid_t pid = raw_clone3(0, NULL, plan->payload_cgroup_fd);
        if (pid < 0) {
                int e = errno;
                safe_close(p[0]);
                safe_close(p[1]);
                safe_close(go[0]);
                safe_close(go[1]);
                safe_close(maps[0]);
                safe_close(maps[1]);
                return init_start_failed(st, plan, released, e, "clone3 python",
                                         plan->payload_cgroup_fd >= 0 ? " into the payload cgroup" : NULL);
        }
        if (pid == 0) {
                safe_close(p[0]);
                safe_close(go[1]);
                safe_close(maps[1]);
                safe_close(st->control_fd);
                safe_close(st->signal_fd);
                child_main(plan);
        }
        safe_close(p[1]);
        plan->go_fd = safe_close(go[0]);
        plan->maps_fd = safe_close(maps[0]);
        /* The init holds no end of the run's pipes: EOF on stdout must mean no process of the run
         * holds it any more. */
        plan->stdin_fd = safe_close(plan->stdin_fd);
        plan->stdout_fd = safe_close(plan->stdout_fd);
        plan->stderr_fd = safe_close(plan->stderr_fd);
        plan->payload_cgroup_fd = safe_close(plan->payload_cgroup_fd);
        for (size_t i = 0; i < plan->n_staged; i++)
                plan->staged[i].fd = safe_close(plan->staged[i].fd);
        plan->env_fd = safe_close(plan->env_fd);

        if (!released) {
                /* EOF instead of a message: the daemon dropped the run. Python never ran (the go
                 * pipe is still ours), and our exit ends the namespace with the child in it. */
                if (!init_wait_message(st->control_fd, MAPS_MESSAGE, &plan->payload_cgroup_fd))
                        _exit(0);
                if (sethostname("sandbox", strlen("sandbox")) < 0) {
                        int e = errno;
                        (void) kill(pid, SIGKILL);
                        safe_close(p[0]);
                        safe_close(go[1]);
                        safe_close(maps[1]);
                        return init_start_failed(st, plan, false, e, "sethostname", NULL);
                }
                safe_close(maps[1]); /* the child may switch to the run's uid now */
                if (!init_wait_message(st->control_fd, RELEASE_MESSAGE, &plan->payload_cgroup_fd))
                        _exit(0);
        }

        init_exec_program(st, plan, pid, p[0], go[1]);

        /* The exec failed: the child still waits on the go pipe (our end is open), so it never
         * ran Python. Kill it and say why. */
        int e = errno;
        (void) kill(pid, SIGKILL);
        safe_close(p[0]);
        safe_close(go[1]);
        report_failed(st->control_fd, e, "execve", " of the run's init program (sandbox-init)");
        return -1;
}

_Noreturn static void init_serve_failed(InitState *st);

/* An egress run's listener (SandboxRunSpec.egress_port): lo up, then a TCP socket listening on
 * 127.0.0.1:port, all in the run's network namespace, which our user namespace owns (we hold
 * CAP_NET_ADMIN and CAP_NET_BIND_SERVICE there: any port will do). The bind would succeed with lo
 * down, but every connection to it would fail (ENETUNREACH): lo must be up, and is brought up
 * here and nowhere else. Returns the socket, or -errno. */
static int init_egress_listen(uint16_t port) {
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct ifreq ifr = {};
        str_copy(ifr.ifr_name, sizeof(ifr.ifr_name), "lo", NULL);
        int r = ioctl(fd, SIOCGIFFLAGS, &ifr);
        if (r >= 0) {
                ifr.ifr_flags |= IFF_UP;
                r = ioctl(fd, SIOCSIFFLAGS, &ifr);
        }
        r = r < 0 ? -errno : 0;
        safe_close(fd);
        if (r < 0)
                return r;

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct sockaddr_in sa = {
                .sin_family = AF_INET,
                .sin_port = htons(port),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        };
        if (bind(fd, (const struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
                r = -errno;
                safe_close(fd);
                return r;
        }
        return fd;
}

/* One message on the control socket, with fd attached (SCM_RIGHTS) when fd >= 0: the daemon's
 * payload cgroup to the init, the init's egress listener to the daemon. Returns 0 or -errno. */
static int send_with_fd(int sock, const void *data, size_t len, int fd, int flags) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { .iov_base = (void *) data, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (fd >= 0) {
                mh.msg_control = &control;
                mh.msg_controllen = sizeof(control);
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        }
        ssize_t n;
        do
                n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
        while (n < 0 && errno == EINTR);
        return n < 0 ? -errno : 0;
}

/* Makes the listener and sends it to the daemon (or why it could not), which takes it for its
 * proxy; our copy is closed before any other process of the run exists, so no process of the run
 * ever holds it: the code must not accept the connections meant for the proxy. Returns false when
 * it failed (the daemon kills us once it has read why). */
static bool init_egress_send(int control_fd, uint16_t port) {
        int fd = init_egress_listen(port);
        EgressMessage m = { .err = fd < 0 ? -fd : 0 };
        int r = send_with_fd(control_fd, &m, sizeof(m), fd, 0);
        safe_close(fd);
        if (r < 0)
                _exit(1); /* the daemon is gone */
        return fd >= 0;
}

_Noreturn static void init_main(SpawnPlan *plan) {
        /* We are a copy of the daemon: its signal handlers, mask and fds are ours until we drop
         * them. Keep only control_fd, the run's pipe ends and the payload cgroup. The daemon's
         * stdio (fd 0/1 may be its MCP transport) goes too. */
        int keep[] = { plan->control_fd, plan->stdin_fd, plan->stdout_fd, plan->stderr_fd,
                       plan->payload_cgroup_fd, plan->init_fd };
        if (sandbox_close_all_but(keep, ELEMENTSOF(keep)) < 0)
                _exit(1);

        /* PID 1 of a namespace only gets signals it has a handler for (pid_namespaces(7)), but say
         * it explicitly: SIGTERM, SIGINT, SIGHUP… are ignored, only SIGKILL ends the init.
         * SIGCHLD is blocked and read from a signalfd. */
        sandbox_signals_reset();
        static const int ignored[] = {
                SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTSTP,
                SIGTTIN, SIGTTOU, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGWINCH, SIGURG, SIGIO, SIGPWR,
        };
        struct sigaction ign = { .sa_handler = SIG_IGN };
        for (size_t i = 0; i < ELEMENTSOF(ignored); i++)
                (void) sigaction(ignored[i], &ign, NULL);
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        (void) sigprocmask(SIG_BLOCK, &chld, NULL);

        InitState st = { .control_fd = plan->control_fd, .signal_fd = -EBADF };

        /* What the host's ps and the run's /proc/1/comm show (we are a copy of the daemon). */
        (void) prctl(PR_SET_NAME, "sandbox-init");

        /* Dying with the daemon: PR_SET_PDEATHSIG, and the race where the daemon died before it
         * was set. getppid() is 0 for us (the parent is outside our PID namespace), so the race is
         * caught by control_fd instead: once the daemon is gone, it reads EOF below. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);

        /* The egress listener first: the daemon waits for it (spawn_internal()), and it must be
         * gone from here before the Python child or the mount helper is forked. A failure was sent
         * instead: wait for the daemon's kill (or its EOF). */
        if (plan->egress_port != 0 && !init_egress_send(st.control_fd, plan->egress_port))
                init_serve_failed(&st);

        /* Everything that does not depend on the release is done while the daemon places us in
         * our cgroup; a failure is kept and reported after the release (the daemon only listens
         * then). First the staging files, with the daemon's uid, before the helper hides the
         * host's filesystem. */
        ChildError setup = {};
        int r = sandbox_fs_prepare(plan);
        if (r < 0) {
                setup.err = -r;
                str_copy(setup.step, sizeof(setup.step), plan->fail_step, plan->fail_what);
        }

        /* No cgroup comes with the release: the Python child is started now and builds the root
         * itself (no mount helper), while this process waits for the maps and the release and
         * becomes the init program. */
        if (setup.err == 0 && plan->mount_in_child) {
                st.signal_fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
                if (st.signal_fd >= 0) {
                        (void) init_start_python(&st, plan, false);
                        init_serve_failed(&st);
                }
                setup.err = errno;
                str_copy(setup.step, sizeof(setup.step), "signalfd", NULL);
        }

        if (!init_wait_message(st.control_fd, MAPS_MESSAGE, &plan->payload_cgroup_fd))
                _exit(0);

        if (setup.err == 0 && sethostname("sandbox", strlen("sandbox")) < 0) {
                setup.err = errno;
                str_copy(setup.step, sizeof(setup.step), "sethostname", NULL);
        }
        int helper_fd = -EBADF;
        pid_t helper = 0;
        if (setup.err == 0) {
                int p[2];
                pid_t pid = -1;
                if (pipe2(p, O_CLOEXEC) >= 0) {
                        plan->exec_fd = p[1];
                        pid = raw_clone3(0, NULL, -EBADF);
                        if (pid == 0) {
                                safe_close(p[0]);
                                helper_main(plan);
                        }
                        if (pid < 0)
                                safe_close(p[0]);
                        else {
                                helper_fd = p[0];
                                helper = pid;
                        }
                        plan->exec_fd = safe_close(p[1]);
                }
                if (pid < 0) {
                        setup.err = errno;
                        str_copy(setup.step, sizeof(setup.step), "start the mount helper", NULL);
                }
        }

        if (!init_wait_message(st.control_fd, RELEASE_MESSAGE, &plan->payload_cgroup_fd))
                _exit(0);

        if (helper_fd >= 0) {
                ssize_t n;
                do
                        n = read(helper_fd, &setup, sizeof(setup));
                while (n < 0 && errno == EINTR);
                if (n != (ssize_t) sizeof(setup))
                        setup = (ChildError) {}; /* EOF: the helper finished */
                setup.step[sizeof(setup.step) - 1] = 0;
                helper_fd = safe_close(helper_fd);
                /* EOF means it exited: reap it now, so the run never sees it, not even as a zombie. */
                while (waitpid(helper, NULL, 0) < 0 && errno == EINTR)
                        ;
                (void) getrusage(RUSAGE_CHILDREN, &st.base);
        }

        st.signal_fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        if (setup.err == 0 && st.signal_fd < 0) {
                setup.err = errno;
                str_copy(setup.step, sizeof(setup.step), "signalfd", NULL);
        }
        if (setup.err != 0)
                report_failed(st.control_fd, setup.err, setup.step, NULL);
        else
                (void) init_start_python(&st, plan, true);
        init_serve_failed(&st);
}

/* Python never ran (a failure was reported): reap until the daemon closes control_fd. Exiting as
 * PID 1 kills whatever is left in the namespace (SIGKILL to every process, by the kernel). */
_Noreturn static void init_serve_failed(InitState *st) {
        for (;;) {
                init_reap();
                struct pollfd pfd[2] = {
                        { .fd = st->control_fd, .events = POLLIN },
                        { .fd = st->signal_fd, .events = POLLIN },
                };
                int n = poll(pfd, st->signal_fd >= 0 ? 2 : 1, -1);
                if (n < 0 && errno != EINTR)
                        _exit(1);
                if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        char buf[16];
                        ssize_t k = recv(st->control_fd, buf, sizeof(buf), MSG_DONTWAIT);
                        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
                                _exit(0);
                }
                if (n > 0 && st->signal_fd >= 0 && (pfd[1].revents & POLLIN)) {
                        struct signalfd_siginfo si;
                        while (read(st->signal_fd, &si, sizeof(si)) > 0)
                                ;
                }
        }
}

/* ---------------------------------------------------------------------------------------------
 * The daemon side. */

static int write_file(const char *path, const char *text) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, text, strlen(text));
        if (n < 0)
                return -errno;
        return (size_t) n == strlen(text) ? 0 : -EIO;
}

/* The one id-map writer (user_namespaces(7), "User and group ID mappings"): one uid and one gid
 * inside, each mapped to one host id. "deny" goes to setgroups first: an unprivileged writer may
 * only write gid_map after it. The runs (written by the daemon into the init's namespace) and the
 * installer (written by itself, pid 0) both come through here. */
int sandbox_id_maps_write(pid_t pid, uid_t uid, gid_t gid, uid_t host_uid, gid_t host_gid,
                          bool deny_setgroups) {
        char proc[32], path[64], map[64];
        int r;

        if (pid > 0)
                snprintf(proc, sizeof(proc), "/proc/%d", (int) pid);
        else
                snprintf(proc, sizeof(proc), "/proc/self");
        if (deny_setgroups) {
                snprintf(path, sizeof(path), "%s/setgroups", proc);
                r = write_file(path, "deny");
                if (r < 0)
                        return r;
        }
        snprintf(path, sizeof(path), "%s/uid_map", proc);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned) uid, (unsigned) host_uid);
        r = write_file(path, map);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/gid_map", proc);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned) gid, (unsigned) host_gid);
        return write_file(path, map);
}

/* Maps the run's uid/gid 65532 to an unprivileged host id: 65532 itself when we are root, else our
 * own uid (the only one an unprivileged process may map, and only with setgroups denied). */
static int write_id_maps(const Sandbox *s, pid_t pid) {
        return sandbox_id_maps_write(pid, SANDBOX_UID, SANDBOX_GID,
                                     s->privileged ? SANDBOX_UID : s->host_uid,
                                     s->privileged ? SANDBOX_GID : s->host_gid, !s->privileged);
}

/* staging_dir may be NULL only for our own self-test (nothing to copy). */
static int plan_build(const Sandbox *s, const SandboxRunSpec *spec, bool self_test, SpawnPlan *plan) {
        *plan = (SpawnPlan) {
                .sandbox = s,
                .privileged = s->privileged,
                .python = spec->python,
                .staging_dir = spec->staging_dir,
                .env_dir = spec->env_dir,
                .env_fd = -EBADF,
                .stdin_fd = spec->stdin_fd,
                .stdout_fd = spec->stdout_fd,
                .stderr_fd = spec->stderr_fd,
                .payload_cgroup_fd = spec->payload_cgroup_fd,
                .rlimits = spec->rlimits,
                /* No cgroup: nothing comes with the release, so the Python child may exist before
                 * it and do the mount helper's work itself (init_main()). */
                .mount_in_child = spec->rlimits,
                .background = spec->background,
                .egress_port = spec->egress_port,
                .exec_fd = -EBADF,
                .go_fd = -EBADF,
                .maps_fd = -EBADF,
                .init_fd = s->init_fd,
                .control_fd = -EBADF,
        };
        if (!spec->python || spec->python[0] != '/' || !spec->script || (!spec->staging_dir && !self_test))
                return -EINVAL;
        if (strchr(spec->script, '/'))
                return -EINVAL;

        snprintf(plan->threads, sizeof(plan->threads), "%u", s->config.cpu_threads);
        static const char *const thread_vars[] = {
                "OMP_NUM_THREADS=", "OPENBLAS_NUM_THREADS=", "MKL_NUM_THREADS=", "NUMEXPR_NUM_THREADS=",
        };
        size_t n = 0;
        plan->envp[n++] = "PATH=" SANDBOX_PATH;
        plan->envp[n++] = "HOME=" SANDBOX_WORK_DIR;
        plan->envp[n++] = "TMPDIR=" SANDBOX_WORK_DIR;
        plan->envp[n++] = "LANG=C.UTF-8";
        plan->envp[n++] = "MPLBACKEND=Agg";
        plan->envp[n++] = "PYTHONDONTWRITEBYTECODE=1";
        /* PyPy sizes its nursery at half the cache size /proc/cpuinfo reports, and that is the
         * host's: a host claiming 480 MB of cache gave a 240 MB nursery, which the run's 256M
         * RLIMIT_AS refused ("cannot allocate nursery", issue 29 #6). 4M is PyPy's own choice where
         * it finds no size, a generous nursery for any real cache, and fits every run's limit.
         * CPython ignores it. */
        plan->envp[n++] = "PYPY_GC_NURSERY=4M";
        for (size_t i = 0; i < ELEMENTSOF(thread_vars); i++) {
                str_copy(plan->thread_env[i], sizeof(plan->thread_env[i]), thread_vars[i], plan->threads);
                plan->envp[n++] = plan->thread_env[i];
        }
        /* An egress run reaches hosts only through the daemon's proxy, at the listener the init
         * makes (init_egress_listen()): pip, urllib, requests, httpx and curl read these, in one
         * case or the other (curl reads http_proxy in lower case only). NO_PROXY empty: nothing
         * inherited or defaulted sends a host around the proxy (there is no way around it anyway:
         * the error is then the proxy's own, not a refused connection). */
        if (spec->egress_port != 0) {
                static const char *const proxy_vars[ELEMENTSOF(plan->proxy_env)] = {
                        "HTTP_PROXY=", "HTTPS_PROXY=", "ALL_PROXY=", "http_proxy=", "https_proxy=", "all_proxy=",
                };
                char url[32];
                snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned) spec->egress_port);
                for (size_t i = 0; i < ELEMENTSOF(proxy_vars); i++) {
                        str_copy(plan->proxy_env[i], sizeof(plan->proxy_env[i]), proxy_vars[i], url);
                        plan->envp[n++] = plan->proxy_env[i];
                }
                plan->envp[n++] = "NO_PROXY=";
                plan->envp[n++] = "no_proxy=";
        }
        plan->envp[n] = NULL;

        plan->argv[0] = spec->python;
        plan->argv[1] = "-I";
        plan->argv[2] = spec->script;
        plan->argv[3] = NULL;

        return sandbox_fs_plan(s, spec, plan);
}

static uint64_t now_msec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* The egress run's listener, from its init (init_egress_send()): the first message on control_fd,
 * sent as soon as the init has made it, its first work after dropping the daemon's fds and signal
 * handlers. This waits for the new process to be scheduled and get that far (a few ms, see
 * sandbox_spawn()); the bound is for an init that never gets the CPU. Returns the fd (O_CLOEXEC)
 * or -errno: the init's own failure, -ETIMEDOUT, or -ECHILD when the init exited without a word. */
static int egress_listener_receive(int control_fd) {
        uint64_t deadline = now_msec() + SANDBOX_EGRESS_LISTEN_TIMEOUT_MSEC;
        for (;;) {
                uint64_t now = now_msec();
                if (now >= deadline)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = control_fd, .events = POLLIN };
                int n = poll(&p, 1, (int) (deadline - now));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -ETIMEDOUT;

                EgressMessage m = {};
                union {
                        struct cmsghdr align;
                        char buf[CMSG_SPACE(sizeof(int))];
                } control = {};
                struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
                struct msghdr mh = {
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = &control,
                        .msg_controllen = sizeof(control),
                };
                ssize_t k = recvmsg(control_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -ECHILD;
                _cleanup_close_ int fd = -EBADF;
                struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
                if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                    cm->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
                if (k != (ssize_t) sizeof(m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
                        return -EPROTO;
                if (m.err != 0)
                        return m.err > 0 ? -m.err : -EPROTO;
                if (fd < 0)
                        return -EPROTO;
                return TAKE_FD(fd);
        }
}

static int spawn_internal(const Sandbox *s, const SandboxRunSpec *spec, bool self_test, SandboxChild *ret) {
        _cleanup_free_ SpawnPlan *plan = malloc(sizeof(SpawnPlan));
        if (!plan)
                return -ENOMEM;
        int r = plan_build(s, spec, self_test, plan);
        if (r < 0)
                return r;

        int pair[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        _cleanup_close_ int ours = pair[0], theirs = pair[1];
        plan->control_fd = theirs;

        int pidfd = -EBADF;
        pid_t pid = raw_clone3(RUN_NS_FLAGS | CLONE_PIDFD, &pidfd, spec->supervisor_cgroup_fd);
        if (pid < 0)
                return -errno;
        if (pid == 0)
                init_main(plan);

        _cleanup_close_ int pidfd_owned = pidfd;
        _cleanup_close_ int egress_listen_fd = -EBADF;
        r = write_id_maps(s, pid);
        if (r >= 0) {
                /* The init may now start its mount helper (setresuid to 65532 needs the map). */
                char m = MAPS_MESSAGE;
                if (send(ours, &m, 1, MSG_NOSIGNAL) < 0)
                        r = -errno;
        }
        if (r >= 0 && spec->egress_port != 0) {
                /* The init sent it, or why not, before it waited for the maps: it is first in line.
                 * Our copy of the init's end goes first, so that an init that died is EOF here. */
                theirs = safe_close(theirs);
                r = egress_listener_receive(ours);
                if (r >= 0)
                        egress_listen_fd = r;
        }
        if (r >= 0)
                r = fd_set_nonblock(ours, true);
        if (r < 0) {
                /* The init never got released: kill and reap it here, the caller has no pid. */
                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                siginfo_t si;
                while (waitid(P_PIDFD, (id_t) pidfd, &si, WEXITED) < 0 && errno == EINTR)
                        ;
                return r;
        }

        *ret = (SandboxChild) {
                .pid = pid,
                .pidfd = TAKE_FD(pidfd_owned),
                .control_fd = TAKE_FD(ours),
                .egress_listen_fd = TAKE_FD(egress_listen_fd),
        };
        return 0;
}

int sandbox_spawn(Sandbox *s, const SandboxRunSpec *spec, SandboxChild *ret) {
        return spawn_internal(s, spec, false, ret);
}

int sandbox_child_release_into(SandboxChild *c, int payload_cgroup_fd) {
        char m = RELEASE_MESSAGE;
        if (c->control_fd < 0)
                return -EBADF;
        return send_with_fd(c->control_fd, &m, 1, payload_cgroup_fd, MSG_DONTWAIT);
}

int sandbox_child_release(SandboxChild *c) {
        return sandbox_child_release_into(c, -EBADF);
}

int sandbox_child_foreground(const SandboxChild *c) {
        char path[96], buf[64];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) c->pid, (int) c->pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return n < 0 ? -errno : -ESRCH;
        buf[n] = 0;
        char *end;
        long python = strtol(buf, &end, 10);
        if (python <= 0 || end == buf)
                return -ESRCH;

        snprintf(path, sizeof(path), "/proc/%ld/autogroup", python);
        _cleanup_close_ int ag = open(path, O_WRONLY | O_CLOEXEC);
        if (ag < 0 && errno != ENOENT) /* ENOENT: a kernel without autogroup */
                return -errno;
        if (ag >= 0 && write(ag, "0", 1) != 1)
                return -errno;

        snprintf(path, sizeof(path), "/proc/%ld/task", python);
        DIR *d = opendir(path); /* glibc opens it O_CLOEXEC */
        if (!d)
                return -errno;
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && setpriority(PRIO_PROCESS, (id_t) atoi(de->d_name), 0) < 0) {
                        r = -errno;
                        break;
                }
        closedir(d);
        return r;
}

uid_t sandbox_run_host_uid(const Sandbox *s) {
        return s && s->privileged ? SANDBOX_UID : (uid_t) -1;
}

gid_t sandbox_run_host_gid(const Sandbox *s) {
        return s && s->privileged ? SANDBOX_GID : (gid_t) -1;
}

int sandbox_child_kill(SandboxChild *c) {
        if (c->pidfd < 0)
                return -ESRCH;
        if (syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0) < 0)
                return -errno;
        return 0;
}

int sandbox_child_command(const SandboxChild *c, SandboxCommandKind kind) {
        if (c->control_fd < 0)
                return -EPIPE;
        SandboxCommand cmd = { .kind = kind };
        ssize_t n;
        do
                n = send(c->control_fd, &cmd, sizeof(cmd), MSG_DONTWAIT | MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return n == (ssize_t) sizeof(cmd) ? 0 : -EIO;
}

void sandbox_child_done(SandboxChild *c) {
        c->control_fd = safe_close(c->control_fd);
        c->pidfd = safe_close(c->pidfd);
        c->egress_listen_fd = safe_close(c->egress_listen_fd);
}
