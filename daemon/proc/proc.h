/* proc.h: one sandboxed process, from its spawn to its reaping: the init's pidfd and control socket,
 * the three pipes, the scope or cgroup (or rlimits), the staging directory, one timer, and its end.
 * A cold run, a ready sandbox of the pool (then the run or Python session that takes it) and a
 * Python session each hold one; what they make of its events is theirs.
 *
 * The model is systemd's PidRef with an sd-event child-pidfd source: the process is named by its
 * pidfd, never by a pid alone; its events come from the ring, one RingOp each, and are dispatched to
 * the handler its current owner set. Every callback is the last thing the completion that calls it
 * does, so a callback may free the proc (or its owner). */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "ring.h"
#include "sandbox.h"

typedef struct Proc Proc;

/* What the owner makes of the proc's events; each may be NULL (the event is then only accounted).
 * Called from the loop, never from inside a proc_*() call. */
typedef struct ProcHandler {
        /* proc_place() answered later: error 0 (placed; the init is still held, proc_release() lets
         * Python start), or -errno with systemd's message (may be NULL). */
        void (*placed)(Proc *p, int error, const char *message, void *userdata);
        /* One report of the init (proc_watch_reports()); NULL when the socket failed, closed or the
         * read was cancelled. Not re-armed: the owner calls proc_watch_reports() for the next. */
        void (*report)(Proc *p, const SandboxReport *report, void *userdata);
        /* The init exited and is reaped (si), or the watch was cancelled (si NULL). */
        void (*exited)(Proc *p, const siginfo_t *si, void *userdata);
        /* n > 0 bytes read on stream (0 stdout, 1 stderr) by proc_read(); n <= 0: EOF, an error or a
         * cancelled read, and the stream's fd is closed (proc_eof()). */
        void (*output)(Proc *p, int stream, const char *buf, ssize_t n, void *userdata);
        /* proc_write()'s buffer is written whole (0), or not (-errno; -EPIPE: the reader is gone). */
        void (*written)(Proc *p, int error, void *userdata);
        /* The moment proc_timer_arm() asked for has come. */
        void (*timer)(Proc *p, void *userdata);
        /* An operation that carries no news came back (a cleared timer, proc_let_go_later()'s
         * shutdown): the owner may free what is over. */
        void (*settled)(Proc *p, void *userdata);
} ProcHandler;

typedef struct ProcSpec {
        Ring *ring;
        Sandbox *sandbox;
        Cgroup *cgroup;      /* the runs' backend: a scope or cgroup of the proc's own; none: rlimits */
        const char *id;      /* 16 hex digits: its scope is mcp-execd-run-<id>.scope */
        uint32_t backstop_s; /* its scope's lifetime backstop (cgroup_run_new()'s timeout_s) */
        const char *tenant;  /* whose: its scope goes in the tenant's slice if it has one; NULL: ours */
} ProcSpec;

/* Makes a proc, nothing spawned yet: its scope or cgroup (cgroupfs: created now, so the init can be
 * cloned into it). Returns 0, or -errno (cgroup_run_new()'s). */
int proc_new(const ProcSpec *spec, const ProcHandler *handler, void *userdata, Proc **ret);

/* The fds that reach a spawned, placed and released proc (a Python session's, for systemd's fd
 * store: pysession/store.c). Borrowed from the proc; -EBADF where it has none. */
typedef struct ProcFds {
        int pidfd, control_fd, stdin_fd, stdout_fd, stderr_fd;
        int cgroup_fd, payload_fd; /* its scope's cgroup and payload/ (systemd or cgroupfs), or -EBADF */
} ProcFds;
void proc_fds(const Proc *p, ProcFds *ret);

/* A proc made again from those fds after a restart of the daemon: the init (pid) is no child of
 * ours any more (PID 1 reaps it), placed and released, its cgroups cr (taken, as are the fds, also
 * on failure). Nothing is watched yet. 0 or -errno. */
int proc_adopt(const ProcSpec *spec, pid_t pid, const ProcFds *fds, CgroupRun *cr, const ProcHandler *handler,
               void *userdata, Proc **ret);

/* Gives the proc to another owner (a ready sandbox taken by a run or session). */
void proc_set_handler(Proc *p, const ProcHandler *handler, void *userdata);

/* Makes path (mode 0700, private: the init reads it with our uid) the proc's staging directory,
 * which the proc removes once the init has copied it (the STARTED report), or when freed. Returns an
 * O_DIRECTORY fd of it for the caller to fill, or -errno. */
int proc_staging_make(Proc *p, const char *path);
/* Removes it now (Python has started: a ready line was read). */
void proc_staging_remove(Proc *p);

typedef struct ProcSpawn {
        const char *python;  /* interpreter path inside the sandbox */
        const char *env_dir; /* host directory bound read-only at SANDBOX_ENV_DIR, or NULL */
        const char *script;  /* file in the staging directory Python runs */
        bool background;     /* rlimit mode: Python starts at nice 19 (SandboxRunSpec.background) */
        uint16_t egress_port; /* a listener at 127.0.0.1:port in the run's namespace (SandboxRunSpec), or 0 */
} ProcSpawn;

/* Makes the pipes and clones the init into its namespaces (and its cgroup), held: Python does not
 * start before proc_release(). Returns 0 or -errno (-EAGAIN: a process limit of the daemon). */
int proc_spawn(Proc *p, const ProcSpawn *spawn);
/* The listener of a proc spawned with egress_port, for the caller to take (the egress proxy), or
 * -EBADF. */
int proc_take_egress_fd(Proc *p);

/* Places the held init in its scope (systemd: by PID, asynchronously) and makes payload/. Returns 1
 * when placed (or there is nothing to place: cgroupfs, rlimits), 0 when handler->placed follows
 * (proc_placing() until then), or -errno with a malloc'd *reterr_message. */
int proc_place(Proc *p, char **reterr_message);
/* Gives up a placement in flight (placed is not called); a kill asked for meanwhile happens now. */
void proc_place_cancel(Proc *p);

/* Lets the held init start Python, in payload/ when there is one. Returns 0 or -errno. */
int proc_release(Proc *p);

/* Watches: the init's exit (handler->exited, reaped), its reports (handler->report, one). */
void proc_watch_exit(Proc *p);
void proc_watch_reports(Proc *p);
/* One read of at most max bytes (and the proc's buffer) on stream 0 (stdout) or 1 (stderr). */
void proc_read(Proc *p, int stream, size_t max);
/* Writes buf whole on the process's stdin (in pieces of at most 1 MiB); buf must live until
 * handler->written. close_after: stdin is closed then (EOF for the code), also when it failed. */
void proc_write(Proc *p, const void *buf, size_t len, bool close_after);
/* Closes the process's stdin now. */
void proc_stdin_close(Proc *p);

/* The one timer: handler->timer usec from now. Arming again moves it; clearing drops it. */
void proc_timer_arm(Proc *p, uint64_t usec);
void proc_timer_clear(Proc *p);

/* Operations to cancel (their completions still come, as cancelled: NULL, <= 0 or settled). */
typedef enum ProcOps {
        PROC_OP_STREAMS = 1u << 0,
        PROC_OP_STDIN = 1u << 1,
        PROC_OP_REPORTS = 1u << 2,
        PROC_OP_EXIT = 1u << 3,
        PROC_OP_TIMER = 1u << 4,
} ProcOps;
void proc_cancel(Proc *p, unsigned ops);
/* Whether an operation of the proc is still on the ring (its memory must stay). */
bool proc_busy(const Proc *p);

/* Ends. Every process of the code (payload/'s cgroup.kill): the init and the counters stay for the
 * accounting reads; -EBADF without a payload cgroup, else 0 or -errno. */
int proc_kill_payload(Proc *p);
/* SIGKILL to the init, which ends its PID namespace. While systemd makes the scope the init must
 * live (killed then, it would empty the scope while its leaves are made, and systemd could not
 * remove it: seen in one of ~250 runs): the kill then waits for the placement's end. Once; 0, or
 * -errno of the kill (-ESRCH: gone already). */
int proc_kill_init(Proc *p);
/* SIGINT to the init's children: the launcher and whatever the code left there; sent by the init,
 * by their pids in the run's namespace, never by host pids (which may be reused by then). */
void proc_interrupt(Proc *p);
/* The init no longer dies with the daemon (SANDBOX_COMMAND_KEEP): its control socket's EOF alone
 * ends it, for a proc whose fds systemd's fd store holds. 0 or -errno. */
int proc_keep(Proc *p);
/* Lets the init go (shutdown of its control socket): it exits, and the kernel ends what is left in
 * its PID namespace. _later: queued on the ring, behind what the loop has queued (an answer's write),
 * so the init's exit cannot delay it; handler->settled follows. */
void proc_let_go(Proc *p);
void proc_let_go_later(Proc *p);

/* Accounting, read from the kernel: payload/'s counters (and the scope's OOM and pids events) and
 * its usage at one moment. -ENODATA without a cgroup: then proc_ask_usage(). */
int proc_read_stats(Proc *p, CgroupStats *ret);
int proc_read_usage(Proc *p, CgroupUsage *ret);
/* Rlimit mode's accounting: the init reads the run's usage from the run's /proc, where the code
 * cannot write it, and answers with a SANDBOX_REPORT_USAGE (handler->report: the reports must be
 * watched). 0 or -errno. */
int proc_ask_usage(Proc *p);

/* A Python session between its calls runs nothing (issue 29.1): payload/'s cgroup.freeze, or
 * without a cgroup the init's SIGSTOP to every process of the run (and SIGCONT to thaw). 0 or
 * -errno. */
int proc_freeze(Proc *p, bool frozen);

/* The CPU weight of a ready sandbox (issue 16.4): its cgroup's cpu.weight (-ENODATA without one),
 * or in rlimit mode the runs' nice given back (sandbox_child_foreground()). */
int proc_set_cpu_weight(Proc *p, uint64_t weight);
int proc_foreground(Proc *p);

const char *proc_id(const Proc *p);
pid_t proc_pid(const Proc *p);          /* the init's host pid, 0 before the spawn */
int proc_pidfd(const Proc *p);
int proc_stream_fd(const Proc *p, int stream); /* the daemon's end of stdout (0) or stderr (1) */
bool proc_has_cgroup(const Proc *p);
const char *proc_limits(const Proc *p); /* "cgroup" or "rlimit", as results say it */
const char *proc_unit(const Proc *p);   /* its scope, or NULL */
bool proc_spawned(const Proc *p);
bool proc_placing(const Proc *p);
bool proc_init_exited(const Proc *p);
bool proc_eof(const Proc *p, int stream);

/* Frees the proc: a live init is killed and reaped (its PID namespace, hence every process of it,
 * is gone), then its cgroup and staging directory are removed. With an operation still on the ring
 * everything is killed and cancelled, no callback is called any more, and the memory goes once the
 * last completion is back. NULL-safe; returns NULL. */
Proc *proc_free(Proc *p);
DEFINE_POINTER_CLEANUP(Proc, proc_free)
/* Frees the proc but leaves its processes alone: its operations are cancelled and our fds closed,
 * nothing is killed or reaped (the init of a Python session whose fds systemd's fd store holds, at
 * the daemon's stop: the next daemon takes it back; see docs/sessions.md). NULL-safe; returns NULL. */
Proc *proc_leave(Proc *p);
