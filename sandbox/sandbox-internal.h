/* sandbox-internal.h: what the files of sandbox/ share (process-wide state, the spawn plan). Not an API. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox.h"

struct sock_filter;

#define SANDBOX_STAGED_MAX 256                          /* files copied from staging_dir */
#define SANDBOX_STAGED_DEPTH_MAX 8                      /* levels of its subdirectories */
#define SANDBOX_STAGED_PATH_MAX 512                     /* "a/b/name" below it */
#define SANDBOX_TMP_SIZE_DEFAULT (64ULL * 1024 * 1024)  /* when the config says 0 */
#define SANDBOX_NOFILE_MAX 1024                         /* RLIMIT_NOFILE of the run */
#define SANDBOX_TMP_BYTES_PER_INODE 4096                /* /tmp's nr_inodes: one per 4 KiB of size, */
#define SANDBOX_TMP_INODES_MIN 1024                     /* at least this many */
#define SANDBOX_TMP_INODES_MAX 65536                    /* and at most this many */

/* matplotlib's font cache, relative to the run's HOME (SANDBOX_WORK_DIR). */
#define SANDBOX_MPL_CACHE_DIR ".cache/matplotlib"
#define SANDBOX_SEED_MAX_BYTES (4 * 1024 * 1024)

/* A file every run starts with in SANDBOX_MPL_CACHE_DIR, made by sandbox_warm_up(). */
typedef struct SandboxSeed {
        char name[64];
        char *data;
        size_t len;
} SandboxSeed;

/* A per-user-namespace limit of /proc/sys/user written in each run's own user namespace by the
 * mount helper, or by the Python child in rlimit mode (see sandbox_shares_compute() in sandbox.c). */
typedef struct SandboxUcountLimit {
        const char *path;  /* /proc/sys/user/… */
        char value[24];    /* decimal, newline-terminated; empty: the kernel has no such file */
} SandboxUcountLimit;

struct Sandbox {
        SandboxConfig config;
        SandboxUcountLimit ucount_limits[4];
        uint64_t msgqueue_bytes;  /* RLIMIT_MSGQUEUE of the run */
        uint64_t sigpending;      /* RLIMIT_SIGPENDING of the run */
        uid_t host_uid; /* the daemon's euid/egid at sandbox_new() */
        gid_t host_gid;
        bool privileged; /* root: maps 65532 → 65532; else 65532 → host_uid with setgroups denied */
        struct sock_filter *seccomp_bpf; /* built once by sandbox_seccomp_build() */
        size_t seccomp_len;              /* number of instructions */
        struct sock_filter *seccomp_egress_bpf; /* the same, but TCP sockets allowed: egress runs */
        size_t seccomp_egress_len;
        SandboxSeed seeds[4];
        size_t n_seeds;
        int init_fd; /* sealed memfd of the run's init program (sandbox-init.c) */
};

/* Everything the init and the Python child need, prepared by the daemon before clone3: after the
 * clone they only make syscalls and copy strings into fixed buffers (no malloc, no stdio). */
typedef struct SpawnPlan {
        const Sandbox *sandbox;
        bool privileged;
        bool rlimits;
        bool background;       /* SandboxRunSpec.background */
        uint16_t egress_port;  /* SandboxRunSpec.egress_port: the init's listener, Python's proxy
                                  variables and the egress seccomp filter; or 0 */
        bool mount_in_child;   /* the Python child, forked before the id maps, builds the root itself
                                  (no mount helper): rlimits */
        const char *python;
        const char *staging_dir;
        const char *env_dir;   /* bound read-only at SANDBOX_ENV_DIR, or NULL */
        int env_fd;            /* O_PATH of env_dir, opened with the daemon's uid; or -EBADF */
        const char *workdir; /* the cwd given to Python */
        const char *argv[4];
        const char *envp[24];
        char threads[16];
        char thread_env[4][48];
        char proxy_env[6][48]; /* HTTP_PROXY=http://127.0.0.1:<egress_port> … */

        int control_fd;        /* the init's end of control_fd */
        int stdin_fd, stdout_fd, stderr_fd;
        int payload_cgroup_fd; /* or -EBADF */
        int exec_fd;           /* child → init: SandboxChildError on failure, EOF on success */
        int go_fd;             /* the Python child's: EOF once PID 1 is the init program */
        int maps_fd;           /* the Python child's: EOF once the id maps exist (mount_in_child) */
        int init_fd;           /* the Sandbox's init_fd, exec'd by the init */

        /* sandbox-fs.c */
        char tmp_options[64];   /* mount options of the run's /tmp */
        uint64_t tmp_size_bytes;
        size_t n_staged;        /* the staging directory's regular files, opened before the uid switch */
        struct {
                int fd;
                const char *name; /* into staged_names */
        } staged[SANDBOX_STAGED_MAX];
        char staged_names[16384];

        /* Set by a failing step of the Python child: what to name in the FAILED report. */
        const char *fail_step;
        const char *fail_what;
} SpawnPlan;

/* sandbox-fs.c */
int sandbox_fs_plan(const Sandbox *s, const SandboxRunSpec *spec, SpawnPlan *plan);
int sandbox_fs_prepare(SpawnPlan *plan);  /* the init, daemon's uid: open the staging files */
int sandbox_fs_setup(SpawnPlan *plan);    /* mount helper (or the Python child in rlimit mode), uid
                                              65532: new root, /proc, /dev, /tmp, pivot */
int sandbox_fs_populate(SpawnPlan *plan); /* Python child, uid 65532: staged files and seeds into /tmp */

/* sandbox-lockdown.c */
int sandbox_seccomp_build(Sandbox *s, char **reterr_reason);
int sandbox_lockdown(SpawnPlan *plan); /* rlimits, capabilities, no_new_privs, seccomp: last before execve */

/* Shared by the run path and the installer (sandbox-install.c). */
/* sandbox.c: the id maps of a user namespace (pid 0: our own), and the child's hygiene */
int sandbox_id_maps_write(pid_t pid, uid_t uid, gid_t gid, uid_t host_uid, gid_t host_gid,
                          bool deny_setgroups);
void sandbox_signals_reset(void);                    /* every signal default and unblocked */
int sandbox_close_all_but(const int *keep, size_t n); /* -EBADF entries ignored; at most 8 */
/* sandbox-fs.c */
int sandbox_mount_private(void);
int sandbox_mount_setattr(const char *path, bool recursive, uint64_t set, uint64_t clr);
