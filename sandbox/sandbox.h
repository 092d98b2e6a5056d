/* sandbox.h: runs in fresh namespaces (our own init as their PID 1), and the confined installer. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"
#include "project-config.h" /* SANDBOX_PATH: Python's PATH inside the sandbox, where a bare name is looked up */

/* Process-wide sandbox state, built once at start (the seccomp filter, probed kernel facts).
 * Opaque. */
typedef struct Sandbox Sandbox;

typedef struct SandboxConfig {
        uint64_t tmp_size_bytes; /* size of the run's private tmpfs /tmp (MCP_EXEC_TMP_SIZE) */
        unsigned cpu_threads;    /* OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, … given to Python */
        unsigned max_sandboxes;  /* sandboxes that may hold caller code at once (runs and Python
                                  * sessions): they share the daemon user's per-user budgets
                                  * (inotify, fanotify, mqueue, pending signals) */
        /* rlimits applied only when no cgroup enforces the limits (limits: "rlimit"); 0 = leave unset */
        uint64_t rlimit_as_bytes;
        uint64_t rlimit_nproc;
        uint64_t rlimit_cpu_sec;
} SandboxConfig;

/* Builds the process-wide state and checks that the kernel gives every namespace we need (then
 * runs the whole spawn path once, with /usr/bin/true for Python, so a refused mount or filter
 * is found here, a few ms).
 * On failure returns -errno and, if reterr_reason is non-NULL, a malloc'd sentence saying which
 * namespace or feature was refused and why (the daemon prints it and refuses to start). */
int sandbox_new(const SandboxConfig *config, Sandbox **ret, char **reterr_reason);

/* sandbox_new() in two halves, for a daemon that answers its client before it checks (issue 16.6):
 * the configuration and what it computes from its own limits, then everything else: the
 * namespace probe, the init program's memfd, the seccomp filter (libseccomp compiles it) and the
 * self-test, which take a few ms (clones and waits) and give the same errors and sentences as
 * sandbox_new(). Nothing may be spawned before sandbox_check() has returned 0.
 *
 * Run as root, its first step looks for a host process of a reserved uid (the runs' 65532, the
 * installer's 65533) outside any mcp-execd: -EADDRINUSE, with the process named in the reason,
 * before any other step. The caller may look again (the check is then repeated from its start)
 * and should, for SANDBOX_RESERVED_UIDS_SETTLE_USEC, before it refuses: an installer whose daemon
 * was just killed is such a process until its parent-death signal has ended it. */
int sandbox_new_unchecked(const SandboxConfig *config, Sandbox **ret, char **reterr_reason);
int sandbox_check(Sandbox *s, char **reterr_reason);
#define SANDBOX_RESERVED_UIDS_SETTLE_USEC (3u * 1000u * 1000u)
Sandbox *sandbox_free(Sandbox *s);
DEFINE_POINTER_CLEANUP(Sandbox, sandbox_free)

typedef struct SandboxRunSpec {
        const char *python;      /* absolute path of the interpreter, as seen inside the sandbox */
        const char *staging_dir; /* host directory holding the run's files (script, inputs); the
                                  * init makes a copy of its contents the run's working directory */
        const char *script;      /* file name of the code inside staging_dir, run as `python -I <script>` */
        int stdin_fd;            /* the run's ends of its three pipes; the daemon closes them after spawn */
        int stdout_fd;
        int stderr_fd;
        int supervisor_cgroup_fd; /* cgroup directory for the init (CLONE_INTO_CGROUP), or -EBADF */
        int payload_cgroup_fd;    /* cgroup directory Python is started in (CLONE_INTO_CGROUP), or -EBADF */
        bool rlimits;             /* apply SandboxConfig's rlimit_* (no cgroup enforces limits) */
        const char *env_dir;      /* host directory bound read-only at SANDBOX_ENV_DIR (a dependency
                                   * venv; python is then usually SANDBOX_ENV_DIR "/bin/python"), or NULL */
        bool background;          /* a ready sandbox made ahead (issue 16): Python starts at nice 19, in an
                                   * autogroup at nice 19 (its setsid makes one); see
                                   * sandbox_child_foreground() */
        uint16_t egress_port;     /* 0: no network at all (a down lo, sockets AF_UNIX only). Otherwise the
                                   * run may reach hosts only through the daemon's HTTP proxy: its lo is up,
                                   * a TCP listener on 127.0.0.1:egress_port in its network namespace is
                                   * handed to the daemon (SandboxChild.egress_listen_fd), Python's
                                   * HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and lower-case) name it, NO_PROXY
                                   * is empty, and seccomp also allows TCP sockets (AF_INET, AF_INET6
                                   * SOCK_STREAM; no UDP, raw or other family). Nothing but lo exists in
                                   * the namespace: the listener is the only way out. */
} SandboxRunSpec;

/* A spawned run. The init is held (it has not started Python) until sandbox_child_release(). */
typedef struct SandboxChild {
        pid_t pid;      /* host pid of the run's init (its PID 1) */
        int pidfd;      /* pidfd of the init, O_CLOEXEC; readable once it has exited */
        int control_fd; /* SOCK_SEQPACKET to the init, O_CLOEXEC|O_NONBLOCK: the init sends
                         * SandboxReport messages; closing it tells the init to exit, which ends
                         * every process left in the run's PID namespace */
        int egress_listen_fd; /* egress runs (SandboxRunSpec.egress_port): the listening TCP socket
                               * bound to 127.0.0.1:egress_port inside the run's network namespace,
                               * O_CLOEXEC, blocking; every connection the run makes to that address
                               * arrives here. The daemon takes it (TAKE_FD) and accepts on it for its
                               * proxy; no process of the run holds it. It keeps the run's network
                               * namespace alive while open. -EBADF when the run has no egress. */
} SandboxChild;

/* Clones the run's init into new namespaces. Returns 0 and fills ret, or -errno. An egress run
 * (egress_port ≠ 0) blocks until the init has handed over its listener: the new process must be
 * scheduled and make it, 2–5 ms more than a run without egress on a loaded 2-CPU machine (most of
 * it the init's start, 0.2–0.6 ms bringing lo up and listening); -ETIMEDOUT after
 * SANDBOX_EGRESS_LISTEN_TIMEOUT_MSEC, or the errno of the listener's step that failed (bringing lo
 * up, bind, listen). On any failure the init is killed and reaped. */
int sandbox_spawn(Sandbox *s, const SandboxRunSpec *spec, SandboxChild *ret);
#define SANDBOX_EGRESS_LISTEN_TIMEOUT_MSEC 5000

/* Lets the held init set itself up and start Python. Returns 0 or -errno. */
int sandbox_child_release(SandboxChild *c);

/* The same, passing the cgroup Python is to be started in (it replaces the spec's
 * payload_cgroup_fd), for managers that can only create it after the init exists (a systemd scope
 * placed by PID). The fd is duplicated into the init; the caller keeps its own. */
int sandbox_child_release_into(SandboxChild *c, int payload_cgroup_fd);

/* Gives a background run's Python (SandboxRunSpec.background) the runs' CPU weight back: nice 0 for
 * each of its threads and for its autogroup. Lowering a nice value needs CAP_SYS_NICE (a root
 * daemon): -EPERM otherwise, and the run must then not be used for a call. Python must be the
 * init's only child (a ready sandbox's launcher, blocked on stdin). Returns 0 or -errno. */
int sandbox_child_foreground(const SandboxChild *c);

/* SIGKILLs the init, which ends every process of the run (the kernel kills a PID namespace
 * whose init dies). Used at a deadline or cancellation when no cgroup.kill is available.
 * Returns 0 or -errno (-ESRCH if it is already gone). */
int sandbox_child_kill(SandboxChild *c);

/* Closes control_fd (the init exits), pidfd and egress_listen_fd if still held. Does not reap: the
 * daemon reaps the init with waitid(P_PIDFD) before calling this, or relies on SIGCHLD handling.
 * Idempotent. */
void sandbox_child_done(SandboxChild *c);

typedef enum SandboxReportKind {
        SANDBOX_REPORT_STARTED = 1, /* Python was started; value = its pid inside the namespace */
        SANDBOX_REPORT_EXITED = 2,  /* Python exited; value = its wait status (as from waitpid) */
        SANDBOX_REPORT_FAILED = 3,  /* setup or exec failed; value = errno; detail says which step */
        SANDBOX_REPORT_USAGE = 4,   /* the answer to SANDBOX_COMMAND_USAGE; value = the processes counted */
} SandboxReportKind;

#define SANDBOX_REPORT_DETAIL_MAX 200

/* EXITED: when it was sent, the init had no child left (waitpid: ECHILD), so no process of the run
 * but the init itself existed: every process of a PID namespace descends from its init, and an
 * orphan is reparented to it before its parent's exit is reported. The run's code has ended for
 * good; only the init (ours) and the namespaces' teardown are left, which need not delay the
 * answer. Without it (a background process was still there), the run is over only once the init
 * has exited and the kernel has killed the rest (pid_namespaces(7)). */
#define SANDBOX_REPORT_ALONE 1u

/* One message from the init over control_fd. Fixed size; sent with one send() per message. */
typedef struct SandboxReport {
        int32_t kind;  /* SandboxReportKind */
        int32_t value;
        /* EXITED: getrusage(RUSAGE_CHILDREN) of the init at the time Python was reaped
         * (every process of the run that was reaped so far; the init's mount helper, or the Python
         * child's own building of the root in rlimit mode, excluded).
         * maxrss is at least the daemon's RSS at spawn: Python's process is a copy of it until
         * its execve, and the kernel keeps that high-water mark. */
        uint64_t utime_usec;
        uint64_t stime_usec;
        uint64_t maxrss_bytes; /* peak RSS of the largest process, not the sum */
        /* USAGE: the same figures for the run so far, read by the init and never by the code: the
         * CPU time of every live process of the run from its /proc/<pid>/stat (its threads, and its
         * children it has reaped; to the clock tick), plus what the init has reaped; the largest
         * VmHWM of a live process, or of a reaped one. */
        uint32_t flags;        /* EXITED only: SANDBOX_REPORT_ALONE */
        char detail[SANDBOX_REPORT_DETAIL_MAX]; /* FAILED only: NUL-terminated, e.g. "execve /usr/bin/python3" */
} SandboxReport;

/* What the daemon asks of the init over control_fd, one SandboxCommand per message. Stopping and
 * continuing is rlimit mode's freezer (a cgroup's cgroup.freeze does it otherwise): a Python
 * session between its calls runs nothing. Interrupting is a session's deadline and cancel. The init
 * sends each signal from inside the run's PID namespace (kill(-1), or its children by their pids
 * there), so no host pid, which could be reused by then, is ever signalled (issue 29.8); it keeps
 * CAP_KILL in the run's user namespace for that alone. */
typedef enum SandboxCommandKind {
        SANDBOX_COMMAND_STOP = 1,  /* SIGSTOP to every process of the run but the init */
        SANDBOX_COMMAND_CONT = 2,  /* SIGCONT to the same */
        SANDBOX_COMMAND_USAGE = 3, /* a SANDBOX_REPORT_USAGE follows */
        SANDBOX_COMMAND_INTERRUPT = 4, /* SIGINT to the init's children: Python, and orphans of the run */
        /* The init no longer dies with the daemon (its PR_SET_PDEATHSIG is cleared): a Python session
         * whose fds the daemon handed to systemd's fd store outlives a restart of the daemon
         * (docs/sessions.md). EOF on control_fd still ends it: once no process (the daemon, PID 1's
         * store) holds the daemon's end, the init exits. */
        SANDBOX_COMMAND_KEEP = 5,
} SandboxCommandKind;

typedef struct SandboxCommand {
        int32_t kind; /* SandboxCommandKind */
} SandboxCommand;

/* Sends one command (never blocks: the socket's buffer holds far more than the few a run is ever
 * sent). Returns 0 or -errno (-EPIPE: the init is gone). */
int sandbox_child_command(const SandboxChild *c, SandboxCommandKind kind);

/* Additions (sandbox/ owner): */

/* The run's identity inside its user namespace. Mapped to host uid/gid 65532 when the daemon is
 * root, to the daemon's own uid/gid otherwise. */
#define SANDBOX_UID 65532
#define SANDBOX_GID 65532
/* The host ids a run's files belong to when the daemon is root (SANDBOX_UID/GID themselves), for
 * reading them back with the run's permissions; -1 when the daemon is not root (the run is then
 * mapped to the daemon's own ids, and reads need no switch). */
uid_t sandbox_run_host_uid(const Sandbox *s);
gid_t sandbox_run_host_gid(const Sandbox *s);

/* The run's working directory (and HOME, TMPDIR) inside the sandbox: the private size-capped tmpfs
 * holding a copy of staging_dir's regular files (subdirectories too, 8 levels deep, at most 256
 * files; symlinks are skipped). staging_dir is read with the daemon's own uid, so it may be
 * private (0700); the copies belong to the run's user. While the init is alive the daemon reads
 * outputs at /proc/<init pid>/root/tmp/<name>. */
#define SANDBOX_WORK_DIR "/tmp"

/* Where SandboxRunSpec.env_dir appears inside the sandbox, read-only, nosuid, nodev. It is bound, not
 * copied, so its permissions stay: it must be readable by the run's host uid (65532 when the daemon
 * is root; unlike staging_dir, which may be private). */
#define SANDBOX_ENV_DIR "/venv"

/* Optional, once after sandbox_new(): runs trusted code (`import matplotlib.font_manager`) in one
 * sandbox with this interpreter and keeps the font cache matplotlib writes there; every later run
 * starts with a copy in $HOME/.cache/matplotlib, so an import of matplotlib does not rebuild it
 * (1–4 s per run otherwise). Blocks until that run ends (a few seconds). Returns 0 (also when
 * matplotlib is not installed: nothing is kept) or -errno (the runs then work as before). */
int sandbox_warm_up(Sandbox *s, const char *python);

/* Report order on control_fd: STARTED then EXITED; or FAILED alone (no EXITED follows). In every
 * case the init then lives, reaping, until control_fd is closed. */

/* ---------------------------------------------------------------------------------------------
 * The second entry point: the confinement of the dependency installer (pip or uv, run by the
 * environment cache outside any run). Not a run: it needs the package index and writes one
 * directory of the host. sandbox-install.c; it shares the id-map writer, the mount helpers and the
 * child's fd and signal hygiene with the run path above. */

/* As root, the installer runs as this unprivileged user (not the runs' 65532): it owns only its
 * own directory, and the cache gives the finished tree back to root before anyone uses it. When
 * the daemon is not root, the installer keeps the daemon's uid. */
#define SANDBOX_INSTALL_UID 65533
#define SANDBOX_INSTALL_GID 65533

typedef struct SandboxInstallSpec {
        const char *const *argv;  /* argv[0]: absolute path of the installer's interpreter; NULL-terminated */
        const char *work_dir;     /* existing host directory: the one writable place (and the cwd); handed
                                   * to SANDBOX_INSTALL_UID here when the daemon is root */
        const char *index_url;    /* the package index the installer reaches, or NULL. NULL or a
                                   * file: URL: an empty network namespace of its own; otherwise
                                   * the host's network */
        const char *const *keep;  /* NULL-terminated paths never hidden (the cache, the wheelhouse, the
                                   * installer's own binaries), or NULL */
        int output_fd;            /* its stdout and stderr (stdin is /dev/null); the caller closes it after */
} SandboxInstallSpec;

/* A spawned installer, held before it confines itself until sandbox_installer_release(). */
typedef struct SandboxInstaller {
        pid_t pid;  /* host pid; once released also its process group (kill(-pid) ends what it started) */
        int pidfd;  /* O_CLOEXEC */
        int go_fd;  /* writing one byte releases it; closing it unreleased makes it exit 125 */
} SandboxInstaller;

/* Forks the installer, held. Once released it: makes its own process group, drops to
 * SANDBOX_INSTALL_UID (as root), dies with the daemon, gets an environment built from nothing, then
 * a user namespace mapping only its own uid and gid, a mount namespace where the whole host is
 * read-only (nosuid) but work_dir, and where home directories and credentials are hidden by empty
 * tmpfs (unless listed in keep), and, per index_url, no network; then execs argv. If confinement
 * fails it prints "mcp-execd: cannot confine the installer: <step>: <error>" to output_fd and exits
 * 124. Returns 0 and fills ret, or -errno. */
int sandbox_spawn_installer(const SandboxInstallSpec *spec, SandboxInstaller *ret);

/* Lets the held installer go (after the caller placed it in its cgroup). Closes go_fd. Returns 0
 * or -errno (the installer is then killed). */
int sandbox_installer_release(SandboxInstaller *c);

/* Closes pidfd and go_fd (an unreleased installer then exits 125). Does not kill or reap. Idempotent. */
void sandbox_installer_done(SandboxInstaller *c);

/* Whether the installer's user (SANDBOX_INSTALL_UID as root, else ours) may access path with mode
 * (access(2)'s R_OK|X_OK…), checked the way the kernel will check the installer: as root, in a
 * short-lived child that has dropped to that uid, gid and no supplementary groups. For the sources
 * (a wheelhouse, a file:// index) at start, so that a 0700 directory is refused before the first
 * call rather than by pip's "Permission denied" (issue 15, 7c). Writes the uid checked to ret_uid
 * (always). Returns 0 or -errno (-EACCES, -ENOENT…). */
int sandbox_installer_access(const char *path, int mode, uid_t *ret_uid);
