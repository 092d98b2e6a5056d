/* pool.c: ready sandboxes (issue 16): made ahead of the calls, each used by one call, then gone.
 *
 * How a ready sandbox is made. It is a run like any other (sandbox_spawn(): fresh user, PID, net,
 * mount, IPC and UTS namespaces, the mounts, uid 65532, seccomp; PID 1 becomes the init program
 * before Python is exec'd, issue 15.4), released at once, whose script is the launcher in warm mode
 * (launch.py, staged with a first line `_WARM = (<MCP_EXEC_PRELOAD>)`). No call's data exists yet:
 * the staging directory holds only the launcher. The launcher imports the preload (its output
 * discarded), writes one fixed-size ready line on stdout ("MCPEXECD-READY <user µs> <system µs>
 * <rss bytes>") and blocks reading stdin. The pool reads exactly that line from the ring (so the
 * stdout the call sees starts clean), then the sandbox is ready: no operation of ours is in flight
 * on it, it is a proc (proc.h: three fds, a pidfd and the control socket) that a call takes whole.
 *
 * How a call takes one (run.c): the oldest ready one that is alive (nothing readable on its stdout,
 * its init not exited) and younger than max_age; it becomes the run's. The run writes one message
 * on its stdin (8-byte length, then main.py and the input files as records), followed by the
 * caller's stdin; the launcher reads exactly the message, writes the files into /tmp itself (as the
 * run's user, so charged to the run, as a cold run's copy is), and runs main.py as a cold run does.
 * The moment that write starts is the run's release: duration and the deadline count from it.
 * session_open takes one the same way (pysession/session.c), and its message makes the launcher a session.
 *
 * Accounting. The launcher's ready line is written before any caller code exists in that process
 * (it is ours and the operator's preload), so its CPU figures are the preload's own CPU: run.c
 * subtracts them from what the init reports at Python's exit (getrusage of the reaped Python).
 * memory_peak_bytes stays the peak (the largest RSS in rlimit mode, which includes the preload);
 * memory_at_start_bytes says how much was resident when the code was released.
 *
 * Refills. Never on the answer's path: run_pool_take() does not spawn; the scheduler calls
 * run_pool_refill_later() after it has handed an answer to the transport (a run's, or one that is
 * no run's: the first fill comes after initialize's answer), which queues a no-op on the ring
 * behind the answer's write, and spawns only when it completes.
 *
 * With a cgroup backend (issue 16.1) each ready sandbox is made with the run's cgroups: a transient
 * scope (systemd; placed by PID after the spawn, asynchronously, as a cold run's: the init stays
 * held until systemd's job is done) or run-<id>/ (cgroupfs; the init cloned into supervisor/),
 * limits and all, and Python is released into payload/. A call takes the CgroupRun with the
 * sandbox, and the sandbox's id becomes the run's (its unit). The accounting then reads payload/:
 * its cpu.stat and memory.current when the call takes it are what the preload spent and holds,
 * subtracted from (CPU) or reported beside (memory_at_start_bytes) the counters at the end.
 * The lower weight there is the cpu.weight of the scope's (or run-<id>/'s) own cgroup, POOL_CPU_
 * WEIGHT until taken, CGROUP_CPU_WEIGHT_RUN when a call takes it: not payload/'s, because
 * cpu.weight only shares CPU among siblings, and the scope's siblings are the other runs' scopes
 * (payload/'s is the idle supervisor/). A delegated scope's own cpu.weight is formally systemd's:
 * it may write it again when it re-applies the unit (daemon-reload, a property change), and then
 * writes the unit's CPUWeight, unset, so the runs' weight. That is why the scope is created at the
 * runs' weight and lowered by us, not created with CPUWeight=10 and raised by us: the only way
 * systemd can undo it is a ready sandbox refilling at the runs' weight, never a call at the
 * refill's. The lower weight in rlimit mode: a root daemon's ready sandboxes start at nice 19 and
 * their session's autogroup at nice 19 (SandboxRunSpec.background, launch.py), and
 * sandbox_child_foreground() gives both back when a call takes one (or it is not used). Without
 * CAP_SYS_NICE a nice value raised for the refill could not be lowered again for the call: an
 * unprivileged daemon refills at the runs' weight.
 *
 * A pool that fails to make sandboxes POOL_FAILURES_MAX times in a row pauses (warning once): calls
 * take the cold path, which reports its own errors, and the pool tries one sandbox again after an
 * answer once POOL_RETRY_USEC have passed (a process limit of the daemon's user, a full disk or an
 * upgrade in progress may pass). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "list.h"
#include "log.h"
#include "exec-result.h"
#include "pool.h"
#include "py-launch.h"
#include "spawn.h"
#include "str-util.h"

#define POOL_READY_BYTES 256 /* launch.py's _READY_BYTES */
#define POOL_READY_PREFIX "MCPEXECD-READY "
#define POOL_FAILED_PREFIX "MCPEXECD-FAILED "
#define POOL_FAILURES_MAX 3
/* A ready sandbox's cgroup's cpu.weight while it is made and waits (1..10000; the runs have 100):
 * against a busy run a refill gets 1/11 of a contended CPU, so it does not slow the calls. */
#define POOL_CPU_WEIGHT 10
#define POOL_RETRY_USEC (60u * 1000u * 1000u)
/* The preload check at start: importing a large stack (pandas, matplotlib) on a loaded machine. */
#define POOL_START_TIMEOUT_USEC (120u * 1000u * 1000u)

typedef struct PoolEntry PoolEntry;
struct PoolEntry {
        RunPool *pool;
        LIST_FIELDS(PoolEntry, entries);
        bool ready;
        bool background; /* made at the lower weight: given the runs' back when taken */
        /* The sandbox: its id (the run id a call takes with it: mcp-execd-run-<id>.scope), staging
         * directory, scope or cgroup (none in rlimit mode); its one operation is the ready line's read. */
        Proc *proc;
        uint64_t t_spawn, t_ready;
        uint64_t utime_usec, stime_usec, rss_bytes;
        ExecAccount account;
        char line[POOL_READY_BYTES + 1];
};

struct RunPool {
        RunPoolConfig config;
        char *state_dir, *python;
        char *launcher; /* "_WARM = (…)\n" + launch.py */
        size_t launcher_len;
        PoolEntry *entries; /* filling and ready, oldest first */
        unsigned n_entries, n_ready;
        unsigned failures; /* in a row */
        uint64_t t_failed;  /* of the last one */
        uint64_t serial;
        bool stopped;
        bool checked; /* run_pool_check() passed: the sandbox is checked, the preload imports */
        RingOp op_refill;
        RingOp op_age; /* replaces ready sandboxes older than max_age, every max_age / 2 */
        struct __kernel_timespec age_ts;
};

/* The preload list as a Python tuple literal, then launch.py (spawn.c). */
static int launcher_build(RunPool *p) {
        _cleanup_free_ char *head = run_launcher_warm_head(p->config.preload);
        if (!head)
                return -ENOMEM;
        size_t hl = strlen(head);
        size_t ll = strlen(py_launch);
        p->launcher = malloc(hl + ll + 1);
        if (!p->launcher)
                return -ENOMEM;
        memcpy(p->launcher, head, hl);
        memcpy(p->launcher + hl, py_launch, ll + 1);
        p->launcher_len = hl + ll;
        return 0;
}

/* Kills the sandbox (its init, hence its PID namespace) and reaps it. */
static void entry_destroy(PoolEntry *e) {
        RunPool *p = e->pool;
        if (LIST_IS_LINKED(entries, p->entries, e)) {
                LIST_REMOVE(entries, p->entries, e);
                p->n_entries--;
                if (e->ready)
                        p->n_ready--;
        }
        /* Killed and reaped, then its cgroup and staging directory go (proc_free()). */
        e->proc = proc_free(e->proc);
        free(e);
}

static void pool_failed(RunPool *p, const char *what) {
        p->failures++;
        p->t_failed = now_usec();
        if (p->failures == POOL_FAILURES_MAX)
                log_warning("warm pool: %s; %u failures in a row, no sandbox is made ready for %u s "
                            "(calls take the cold path meanwhile)",
                            what, p->failures, POOL_RETRY_USEC / 1000000u);
        else if (p->failures < POOL_FAILURES_MAX)
                log_debug("warm pool: %s", what);
}

/* Parses the ready line. 1: ready; 0: the launcher failed (ret_failed points at its text); -EPROTO. */
static int entry_parse_line(PoolEntry *e, size_t n, const char **ret_failed) {
        e->line[MIN(n, (size_t) POOL_READY_BYTES)] = 0;
        char *nl = strchr(e->line, '\n');
        if (nl)
                *nl = 0;
        if (n == POOL_READY_BYTES && strncmp(e->line, POOL_READY_PREFIX, strlen(POOL_READY_PREFIX)) == 0) {
                unsigned long long u, s, rss;
                if (sscanf(e->line + strlen(POOL_READY_PREFIX), "%llu %llu %llu", &u, &s, &rss) != 3)
                        return -EPROTO;
                e->utime_usec = u;
                e->stime_usec = s;
                e->rss_bytes = rss;
                return 1;
        }
        if (strncmp(e->line, POOL_FAILED_PREFIX, strlen(POOL_FAILED_PREFIX)) == 0) {
                *ret_failed = e->line + strlen(POOL_FAILED_PREFIX);
                return 0;
        }
        return -EPROTO;
}

static void entry_became_ready(PoolEntry *e) {
        e->ready = true;
        e->t_ready = now_usec();
        e->pool->n_ready++;
        e->pool->failures = 0;
        /* Python runs the launcher: the init has copied it into the sandbox's /tmp. */
        proc_staging_remove(e->proc);
}

static void on_ready_line(Proc *proc, int stream, const char *buf, ssize_t res, void *userdata) {
        PoolEntry *e = userdata;
        RunPool *p = e->pool;

        if (p->stopped || res <= 0) {
                if (!p->stopped)
                        pool_failed(p, res == 0 ? "a sandbox's Python exited before it was ready"
                                                : "cannot read a sandbox's ready line");
                entry_destroy(e);
                return;
        }
        memcpy(e->line, buf, (size_t) res); /* at most POOL_READY_BYTES: proc_read()'s bound */
        const char *failed = NULL;
        int r = entry_parse_line(e, (size_t) res, &failed);
        if (r > 0) {
                entry_became_ready(e);
                return;
        }
        if (r == 0)
                log_warning("warm pool: a module of MCP_EXEC_PRELOAD no longer imports: %s", failed);
        pool_failed(p, r == 0 ? "the preload failed" : "a sandbox wrote an unexpected ready line");
        entry_destroy(e);
}

static void entry_read_line(PoolEntry *e);

/* The backstop of a ready sandbox's scope (systemd's RuntimeMaxUSec, counted from the scope's
 * start, which follows the spawn): this + the grace every run's scope gets (daemon.c
 * CGROUP_BACKSTOP_GRACE_S, which covers the kill's grace). A ready sandbox may wait max_age
 * counted from its spawn (run_pool_take() never hands out an older one), then serve a call of up
 * to MCP_EXEC_MAX_TIMEOUT_S (600 + 300 + 10 s with the defaults); or become a Python session, which
 * lives up to its own backstop (pysession_backstop_s(): MCP_EXEC_PY_SESSION_LIFETIME_S and more).
 * The scope's RuntimeMaxUSec is set once, when systemd makes it: systemd's dbus-scope.c takes it
 * only while the transient unit is being created (UNIT_STUB; so in the sources read, which predate
 * PIDFDs, v255), not from SetUnitProperties when a session takes the sandbox later; so a ready
 * sandbox's scope has the longer of the two from its start.
 * Only a daemon that died, and whose sandboxes outlived it (PR_SET_PDEATHSIG aside), ever meets
 * it; the next start stops such scopes anyway (cgroup_stop_stale()). */
static uint32_t pool_backstop_s(const RunPool *p) {
        uint64_t s = p->config.max_age_usec == UINT64_MAX ? UINT32_MAX / 2
                                                         : (p->config.max_age_usec + 999999u) / 1000000u;
        s += MAX(p->config.max_timeout_s, p->config.session_backstop_s);
        return (uint32_t) MIN(s, (uint64_t) UINT32_MAX / 2);
}

/* Python may start: the lower weight first (a ready sandbox never runs at the runs' weight before
 * a call takes it, when it can have a lower one), then the release into payload/. */
static int entry_release(PoolEntry *e) {
        RunPool *p = e->pool;
        if (proc_has_cgroup(e->proc) && e->background) {
                int r = proc_set_cpu_weight(e->proc, POOL_CPU_WEIGHT);
                if (r < 0) {
                        /* No cpu controller for the runs' cgroups (a user manager may not delegate
                         * it): ready sandboxes wait at the runs' weight, as unprivileged rlimit
                         * mode's do. */
                        log_debug("warm pool: cannot lower a ready sandbox's cpu.weight (%s); "
                                  "ready sandboxes are made at the runs' weight", strerror(-r));
                        e->background = false;
                        p->config.background = false;
                }
        }
        return proc_release(e->proc);
}

/* systemd made the scope (or could not): the sandbox goes on like a cgroupfs one, or goes. */
static void entry_on_placed(Proc *proc, int error, const char *message, void *userdata) {
        PoolEntry *e = userdata;
        RunPool *p = e->pool;
        if (p->stopped) {
                entry_destroy(e);
                return;
        }
        if (error < 0) {
                pool_failed(p, message ? message : "cannot place a ready sandbox in its scope");
                entry_destroy(e);
                return;
        }
        int r = entry_release(e);
        if (r < 0) {
                pool_failed(p, "cannot release a ready sandbox");
                entry_destroy(e);
                return;
        }
        entry_read_line(e);
}

static const ProcHandler entry_proc_handler = {
        .placed = entry_on_placed,
        .output = on_ready_line,
};

/* Spawns one sandbox, in its own scope or cgroup if with_cgroup, and releases it (with a scope, once
 * systemd has made it: proc_placing() until then, and entry_on_placed() also starts the read); its
 * Python starts the launcher in warm mode, at a lower CPU weight if background. */
static int entry_spawn(RunPool *p, bool background, bool with_cgroup, PoolEntry **ret) {
        PoolEntry *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        *e = (PoolEntry) { .pool = p, .background = background };
        char id[17];
        _cleanup_free_ char *staging = NULL;
        int r = str_random_hex(id, 8);
        if (r < 0)
                goto fail;
        /* Made now with the runs' limits (cgroupfs: the init is cloned into supervisor/). */
        r = proc_new(&(ProcSpec) { .ring = p->config.ring, .sandbox = p->config.sandbox,
                                   .cgroup = with_cgroup ? p->config.cgroup : NULL, .id = id,
                                   .backstop_s = pool_backstop_s(p) },
                     &entry_proc_handler, e, &e->proc);
        if (r < 0)
                goto fail;
        if (asprintf(&staging, "%s/ready-%" PRIu64, p->state_dir, ++p->serial) < 0) {
                staging = NULL;
                r = -ENOMEM;
                goto fail;
        }
        r = run_launcher_spawn(e->proc, &(RunLauncherSpec) { .python = p->python, .staging = staging,
                                                             .launcher = p->launcher,
                                                             .launcher_len = p->launcher_len,
                                                             .background = background });
        if (r < 0)
                goto fail;
        e->t_spawn = now_usec();
        LIST_APPEND(entries, p->entries, e);
        p->n_entries++;
        _cleanup_free_ char *problem = NULL;
        r = proc_place(e->proc, &problem);
        if (r < 0) {
                log_debug("warm pool: %s", problem ? problem : "cannot place a ready sandbox");
                entry_destroy(e);
                return r;
        }
        if (r == 0) {
                /* The init lives until systemd's job is done (proc_kill_init(): an init killed
                 * meanwhile leaves a scope systemd cannot remove). */
                *ret = e;
                return 0;
        }
        r = entry_release(e);
        if (r < 0) {
                entry_destroy(e);
                return r;
        }
        *ret = e;
        return 0;
fail:
        entry_destroy(e);
        return r;
}

static void entry_read_line(PoolEntry *e) {
        if (proc_placing(e->proc))
                return; /* entry_on_placed() reads */
        proc_read(e->proc, 0, POOL_READY_BYTES);
}

static void age_arm(RunPool *p);

/* Paused after a streak of failures; one more attempt is allowed once POOL_RETRY_USEC passed. */
static bool pool_paused(const RunPool *p) {
        return p->failures >= POOL_FAILURES_MAX && now_usec() - p->t_failed < POOL_RETRY_USEC;
}

void run_pool_fill(RunPool *p) {
        if (!p || !p->checked)
                return;
        bool with_cgroup = p->config.cgroup && cgroup_backend(p->config.cgroup) != CGROUP_BACKEND_NONE;
        while (!p->stopped && !pool_paused(p) && p->n_entries < p->config.size) {
                PoolEntry *e = NULL;
                int r = entry_spawn(p, p->config.background, with_cgroup, &e);
                if (r < 0) {
                        char what[128];
                        snprintf(what, sizeof(what), "cannot spawn a sandbox: %s", strerror(-r));
                        pool_failed(p, what);
                        continue;
                }
                entry_read_line(e);
        }
        age_arm(p);
}

static void age_arm(RunPool *p) {
        if (p->stopped || p->op_age.busy || p->config.max_age_usec == UINT64_MAX)
                return;
        uint64_t usec = MAX(p->config.max_age_usec / 2, (uint64_t) 1000000);
        p->age_ts = (struct __kernel_timespec) { .tv_sec = (long long) (usec / 1000000),
                                                 .tv_nsec = (long long) (usec % 1000000) * 1000 };
        struct io_uring_sqe *sqe = ring_get_sqe(p->config.ring, &p->op_age);
        io_uring_prep_timeout(sqe, &p->age_ts, 0, 0);
}

/* A ready sandbox is not kept past max_age even when no call comes: an upgraded /usr reaches the
 * next call (issue 16.4). The replacement is made at once: the daemon is idle, or the sandbox would
 * have been taken. */
static void on_age(RingOp *op, int res) {
        RunPool *p = container_of(op, RunPool, op_age);
        if (p->stopped || res != -ETIME)
                return;
        uint64_t now = now_usec();
        LIST_FOREACH_SAFE(entries, e, n, p->entries) {
                if (now - e->t_spawn <= p->config.max_age_usec)
                        continue;
                /* Also one that never became ready (a scope systemd never made, a preload that
                 * hangs): it would hold its place in the pool for ever. A read in flight completes
                 * at EOF once its sandbox is dead, and destroys it. */
                if (proc_busy(e->proc))
                        (void) proc_kill_init(e->proc);
                else
                        entry_destroy(e);
        }
        run_pool_fill(p);
        age_arm(p);
}

static void on_refill(RingOp *op, int res) {
        RunPool *p = container_of(op, RunPool, op_refill);
        run_pool_fill(p);
}

void run_pool_refill_later(RunPool *p) {
        if (!p || !p->checked || p->stopped || p->op_refill.busy || p->n_entries >= p->config.size || pool_paused(p))
                return;
        struct io_uring_sqe *sqe = ring_get_sqe(p->config.ring, &p->op_refill);
        io_uring_prep_nop(sqe);
}

/* Alive and untouched: its init has not exited and nothing was written on its stdout since the
 * ready line (the launcher is blocked reading stdin). Its age counts from its spawn, which its
 * scope's backstop counts on (pool_backstop_s()). */
static bool entry_usable(const PoolEntry *e, uint64_t now) {
        if (now - e->t_spawn > e->pool->config.max_age_usec)
                return false;
        struct pollfd pfd[2] = {
                { .fd = proc_stream_fd(e->proc, 0), .events = POLLIN },
                { .fd = proc_pidfd(e->proc), .events = POLLIN },
        };
        return poll(pfd, 2, 0) == 0;
}

int run_pool_take(RunPool *p, RunReady *ret) {
        if (!p || p->stopped)
                return -EAGAIN;
        uint64_t now = now_usec();
        LIST_FOREACH_SAFE(entries, e, n, p->entries) {
                if (!e->ready)
                        continue;
                if (!entry_usable(e, now)) {
                        entry_destroy(e);
                        continue;
                }
                /* The runs' CPU weight back, or the sandbox is not used: a call never runs at the
                 * refill's weight. Refused (no CAP_SYS_NICE after all): later ones are made at the
                 * runs' weight. */
                if (proc_has_cgroup(e->proc)) {
                        /* The runs' weight back, then what payload/ spent and holds now: the
                         * preload's, not the call's (issue 16.3). */
                        int r = e->background ? proc_set_cpu_weight(e->proc, CGROUP_CPU_WEIGHT_RUN) : 0;
                        CgroupUsage u = {};
                        if (r >= 0)
                                r = proc_read_usage(e->proc, &u);
                        if (r < 0) {
                                log_debug("warm pool: a ready sandbox's cgroup cannot be %s (%s), not used",
                                          e->background ? "given the runs' weight back or read" : "read",
                                          strerror(-r));
                                entry_destroy(e);
                                continue;
                        }
                        e->utime_usec = u.cpu_user_usec;
                        e->stime_usec = u.cpu_system_usec;
                        e->rss_bytes = u.memory_current_bytes;
                        e->account = u.account;
                } else if (e->background) {
                        int r = proc_foreground(e->proc);
                        if (r == -EPERM || r == -EACCES) {
                                log_warning_errno(r, "warm pool: cannot give a ready sandbox the runs' CPU weight "
                                                  "back: %m; ready sandboxes are made at the runs' weight from now on");
                                p->config.background = false;
                        } else if (r < 0)
                                log_debug("warm pool: a ready sandbox could not be given the runs' CPU weight "
                                          "back (%s), not used", strerror(-r));
                        if (r < 0) {
                                entry_destroy(e);
                                continue;
                        }
                }
                *ret = (RunReady) {
                        .proc = TAKE_PTR(e->proc),
                        .preload_utime_usec = e->utime_usec,
                        .preload_stime_usec = e->stime_usec,
                        .rss_bytes = e->rss_bytes,
                        .preload_account = e->account,
                };
                proc_set_handler(ret->proc, NULL, NULL); /* the taker sets its own */
                entry_destroy(e);
                return 0;
        }
        return -EAGAIN;
}

/* The start's check of MCP_EXEC_PRELOAD: one sandbox made and waited for here. */
static int pool_check_preload(RunPool *p, char **reterr_message) {
        /* At the runs' weight: the daemon's start waits for it. Without a scope or cgroup even
         * with those backends: systemd's job would need the loop, which does not run yet. It runs
         * the operator's imports, no caller's code, under the rlimits of rlimit mode; with a
         * cgroup it is then not kept for a call (a call always gets the runs' cgroup). */
        PoolEntry *e = NULL;
        int r = entry_spawn(p, false, false, &e);
        if (r < 0) {
                if (asprintf(reterr_message, "cannot start a sandbox to check MCP_EXEC_PRELOAD=%s: %s",
                             p->config.preload, strerror(-r)) < 0)
                        *reterr_message = NULL;
                return r;
        }
        uint64_t deadline = now_usec() + POOL_START_TIMEOUT_USEC;
        size_t got = 0;
        while (got < POOL_READY_BYTES) {
                uint64_t now = now_usec();
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                struct pollfd pfd = { .fd = proc_stream_fd(e->proc, 0), .events = POLLIN };
                int k = poll(&pfd, 1, (int) ((deadline - now) / 1000) + 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        r = k < 0 ? -errno : -ETIMEDOUT;
                        break;
                }
                ssize_t n = read(proc_stream_fd(e->proc, 0), e->line + got, POOL_READY_BYTES - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : -EPIPE;
                        break;
                }
                got += (size_t) n;
        }
        const char *failed = NULL;
        int q = r < 0 && got == 0 ? r : entry_parse_line(e, got, &failed);
        if (q > 0) {
                if (p->config.cgroup && cgroup_backend(p->config.cgroup) != CGROUP_BACKEND_NONE)
                        entry_destroy(e);
                else
                        entry_became_ready(e);
                return 0;
        }
        /* Python's own complaint, if it wrote one (a missing interpreter, a crash); the sandbox is
         * ended first, and the read does not wait, so a hung import cannot hang the start. */
        char why[512] = "";
        if (q != 0) {
                (void) proc_kill_init(e->proc);
                (void) fd_set_nonblock(proc_stream_fd(e->proc, 1), true);
                ssize_t n = read(proc_stream_fd(e->proc, 1), why, sizeof(why) - 1);
                why[MAX(n, (ssize_t) 0)] = 0;
                for (char *c = why; *c; c++)
                        if (*c == '\n')
                                *c = ' ';
        }
        if (q == 0)
                r = asprintf(reterr_message,
                             "MCP_EXEC_PRELOAD=%s: a module cannot be imported in the sandbox: %s",
                             p->config.preload, failed);
        else
                r = asprintf(reterr_message,
                             "MCP_EXEC_PRELOAD=%s: the sandbox's Python did not become ready (%s)%s%s",
                             p->config.preload, strerror(r == -ETIMEDOUT ? ETIMEDOUT : EPROTO),
                             why[0] ? ": " : "", why);
        if (r < 0)
                *reterr_message = NULL;
        entry_destroy(e);
        return -ENOPKG;
}

int run_pool_new(const RunPoolConfig *config, RunPool **ret, char **reterr_message) {
        *ret = NULL;
        if (config->size == 0 || !config->python)
                return 0;
        _cleanup_(run_pool_freep) RunPool *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->config = *config;
        p->config.preload = NULL; /* ours, below */
        p->op_refill.callback = on_refill;
        p->op_age.callback = on_age;
        if (!(p->state_dir = strdup(config->state_dir)) || !(p->python = strdup(config->python)) ||
            (config->preload && !(p->config.preload = strdup(config->preload))))
                return -ENOMEM;
        int r = launcher_build(p);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

int run_pool_check(RunPool *p, char **reterr_message) {
        if (!p)
                return 0;
        if (p->config.preload && *p->config.preload) {
                int r = pool_check_preload(p, reterr_message);
                if (r < 0)
                        return r;
        }
        p->checked = true;
        return 0;
}

void run_pool_stop(RunPool *p) {
        if (!p || p->stopped)
                return;
        p->stopped = true;
        LIST_FOREACH_SAFE(entries, e, n, p->entries) {
                if (proc_busy(e->proc)) {
                        /* Its read completes (EOF once the sandbox is dead) and destroys it. */
                        (void) proc_kill_init(e->proc);
                        proc_cancel(e->proc, PROC_OP_STREAMS);
                } else
                        entry_destroy(e);
        }
        if (p->op_refill.busy)
                ring_cancel(p->config.ring, &p->op_refill);
        if (p->op_age.busy)
                ring_cancel(p->config.ring, &p->op_age);
}

bool run_pool_busy(const RunPool *p) {
        if (!p)
                return false;
        if (p->op_refill.busy || p->op_age.busy)
                return true;
        LIST_FOREACH(entries, e, p->entries)
                if (proc_busy(e->proc))
                        return true;
        return false;
}

RunPool *run_pool_free(RunPool *p) {
        if (!p)
                return NULL;
        /* Whatever is left (a teardown that gave up on the ring): kill and reap, leak nothing. */
        LIST_FOREACH_SAFE(entries, e, n, p->entries)
                if (!proc_busy(e->proc))
                        entry_destroy(e);
        free((char *) p->config.preload);
        free(p->state_dir);
        free(p->python);
        free(p->launcher);
        free(p);
        return NULL;
}

unsigned run_pool_ready(const RunPool *p) {
        return p ? p->n_ready : 0;
}

uint64_t run_pool_memory_bytes(const RunPool *p) {
        uint64_t sum = 0;
        if (p)
                LIST_FOREACH(entries, e, p->entries)
                        if (e->ready)
                                sum += e->rss_bytes;
        return sum;
}
