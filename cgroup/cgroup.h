/* cgroup.h: where each run is placed and accounted: a transient systemd scope per run (systemd),
 * per-run child cgroups of a delegated subtree (cgroupfs), or nothing (none: rlimits only). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"
#include "exec-account.h"

typedef enum CgroupWant {
        CGROUP_WANT_AUTO,     /* systemd, then cgroupfs, then none */
        CGROUP_WANT_SYSTEMD,
        CGROUP_WANT_CGROUPFS,
        CGROUP_WANT_NONE,
} CgroupWant;

typedef enum CgroupBackend {
        CGROUP_BACKEND_SYSTEMD,
        CGROUP_BACKEND_CGROUPFS,
        CGROUP_BACKEND_NONE,
} CgroupBackend;

typedef struct CgroupConfig {
        CgroupWant want;
        const char *slice;          /* systemd: the slice of the run scopes */
        uint64_t memory_max_bytes;  /* UINT64_MAX: infinity */
        uint64_t pids_max;          /* UINT64_MAX: infinity */
        uint32_t cpu_quota_percent; /* 0: infinity */
        uint32_t backstop_grace_s;  /* systemd RuntimeMaxUSec = timeout + this */
} CgroupConfig;

/* The process-wide backend. Opaque. */
typedef struct Cgroup Cgroup;

/* Chooses and sets up the backend. Falls back along auto's order; an explicitly wanted backend
 * that is unavailable is an error. On failure returns -errno and a malloc'd explanation in
 * *reterr (also, for a fallback to none under auto, *reterr says why — a warning to log). */
int cgroup_new(const CgroupConfig *config, Cgroup **ret, char **reterr);
Cgroup *cgroup_free(Cgroup *c);
DEFINE_POINTER_CLEANUP(Cgroup, cgroup_free)

/* NULL, no Cgroup at all (proc/ takes one: rlimits), is the none backend. */
CgroupBackend cgroup_backend(const Cgroup *c);
const char *cgroup_backend_name(const Cgroup *c); /* "systemd", "cgroupfs", "none" */
/* One line for logs: which manager or subtree, which slice. */
const char *cgroup_describe(const Cgroup *c);

/* Stops and resets run scopes (mcp-execd-run-*.scope) left by an earlier instance that died
 * (systemd: those whose daemon, named in the Description, is not a live mcp-execd).
 * Returns the number stopped, or -errno. Blocking: call at start only. */
int cgroup_stop_stale(Cgroup *c);
/* Spares the scope named unit from cgroup_stop_stale(): a Python session's, taken back from
 * systemd's fd store after a restart (pysession/store.c), whose Description names the daemon that
 * made it. Before cgroup_stop_stale(). 0 or -ENOMEM. */
int cgroup_keep_scope(Cgroup *c, const char *unit);
/* The FileDescriptorStoreMax= of the service we run as (systemd backend: the unit of our PID,
 * asked over the manager's bus), for a systemd without $FDSTORE (before 254). -EOPNOTSUPP with
 * another backend, -errno when the manager cannot say. Blocking: call at start only. */
int cgroup_own_fd_store_max(Cgroup *c, uint32_t *ret);

/* Event-loop integration for the systemd backend's D-Bus connection. event_fd is -EBADF when the
 * backend needs no events. event_timeout is absolute CLOCK_MONOTONIC µs, UINT64_MAX for none.
 * event_process dispatches what arrived (callbacks of cgroup_run_place run from here). */
int cgroup_event_fd(Cgroup *c);
int cgroup_event_mask(Cgroup *c);     /* poll(2) events to wait for */
uint64_t cgroup_event_timeout(Cgroup *c);
int cgroup_event_process(Cgroup *c);  /* ≥ 0, or -errno when the connection failed */

/* A tenant's own slice (issue 31.3): the scopes (cgroupfs: the cgroups) of its runs and sessions
 * are placed in it, so that its bounds hold for all of them together. */
typedef struct CgroupTenant {
        const char *name;          /* 1 to CGROUP_TENANT_NAME_MAX of [A-Za-z0-9_-] */
        uint64_t memory_max_bytes; /* UINT64_MAX: none */
        uint64_t pids_max;         /* UINT64_MAX: none */
        uint64_t cpu_weight;       /* 1..10000 (100: the kernel's default) */
} CgroupTenant;
#define CGROUP_TENANT_NAME_MAX 32

/* Makes the tenants' slices, or sets their bounds anew (a reload): systemd, the slice
 * <slice-prefix>-tenant-<name>.slice (mcp-execd-tenant-<name>.slice; '-' in a name escaped as \x2d)
 * with MemoryMax, TasksMax and CPUWeight set for the runtime; cgroupfs, tenant-<name>/ below our
 * subtree with memory.max, pids.max and cpu.weight. The set replaces the last: a tenant not in v
 * places its next runs in the daemon's own slice (its slice stays, with what still runs in it).
 * none: nothing (the bounds cannot hold; -EOPNOTSUPP when n > 0, and the set is still kept).
 * Blocking (a D-Bus round trip each): call at start and at a reload. Returns 0 or -errno with
 * *reterr saying which tenant and why; on failure the tenants before it are set. */
int cgroup_tenants_set(Cgroup *c, const CgroupTenant *v, size_t n, char **reterr);
/* The slice (systemd: its unit; cgroupfs: its directory below our subtree) of tenant, or NULL when
 * it has none (not in the set, or the none backend). */
const char *cgroup_tenant_slice(const Cgroup *c, const char *tenant);

/* One run's cgroups. */
typedef struct CgroupRun CgroupRun;

typedef struct CgroupStats {
        uint64_t memory_peak_bytes;
        uint64_t cpu_user_usec;
        uint64_t cpu_system_usec;
        bool oom_killed;     /* memory.events oom_kill > 0 */
        bool pids_limit_hit; /* pids.events max > 0 */
        ExecAccount account; /* payload/'s pressure totals, I/O bytes, pids.peak (issue 33.1) */
} CgroupStats;

/* Prepares a run, in tenant's slice when it has one (cgroup_tenant_slice(); NULL or "": the
 * daemon's). For cgroupfs the cgroups are created now, so the init can be cloned straight into
 * supervisor/. Returns 0 or -errno. */
int cgroup_run_new(Cgroup *c, const char *run_id, uint32_t timeout_s, const char *tenant, CgroupRun **ret);

/* The cgroup the run's init is to be cloned into (CLONE_INTO_CGROUP), or -EBADF when the init is
 * placed after spawn (systemd: by PID). Owned by the CgroupRun. */
int cgroup_run_supervisor_fd(const CgroupRun *cr);

typedef void (*CgroupPlacedFn)(CgroupRun *cr, int error, const char *message, void *userdata);

/* Places the held init (host pid, and its pidfd for managers that take PIDFDs) and makes payload/. Returns 1 when done synchronously, 0 when
 * placed() will be called later from cgroup_event_process() (never after cgroup_run_free()), or
 * -errno with *reterr_message (malloc'd) saying what the manager answered. */
int cgroup_run_place(CgroupRun *cr, pid_t init_pid, int init_pidfd, CgroupPlacedFn placed, void *userdata,
                char **reterr_message);

/* Gives up a placement in flight: placed() will not be called. NULL-safe. */
void cgroup_run_cancel_place(CgroupRun *cr);

/* The payload cgroup for CLONE_INTO_CGROUP of Python, once placed; owned by the CgroupRun. */
int cgroup_run_payload_fd(const CgroupRun *cr);

/* The scope's unit name (systemd), or NULL. */
const char *cgroup_run_unit(const CgroupRun *cr);

/* Kills every process of the run's code: writes payload/cgroup.kill. The init and the counters
 * survive. Returns 0 or -errno. */
int cgroup_run_kill(CgroupRun *cr);

/* Freezes (or thaws) every process of the run's code: writes payload/cgroup.freeze. The kernel
 * stops them as they next leave the kernel (cgroup-v2(7), "cgroup.freeze"); a kill still reaches a
 * frozen process. A Python session between its calls (issue 29.1). Returns 0 or -errno. */
int cgroup_run_freeze(CgroupRun *cr, bool frozen);

/* Reads payload/'s counters (and the scope's OOM and pids events). Returns 0 or -errno. */
int cgroup_run_read(CgroupRun *cr, CgroupStats *ret);

/* payload/'s CPU and memory at one moment: a ready sandbox's when a call takes it (issue 16.1),
 * what was spent and held before the call's code was released. */
typedef struct CgroupUsage {
        uint64_t cpu_usage_usec;
        uint64_t cpu_user_usec;
        uint64_t cpu_system_usec;
        uint64_t memory_current_bytes;
        ExecAccount account; /* the pressure totals, I/O bytes and pids.peak so far */
} CgroupUsage;
int cgroup_run_usage(CgroupRun *cr, CgroupUsage *ret);

/* The runs' CPU weight: neither backend sets one, so a run's cgroup has the kernel's default. */
#define CGROUP_CPU_WEIGHT_RUN 100
/* Writes cpu.weight of the run's own cgroup (the scope's, or run-<id>/), a sibling of the other
 * runs' cgroups: a ready sandbox waits at a lower weight (issue 16.4). Once placed. Returns 0, or
 * -errno (-ENOENT when the cpu controller is not enabled for the runs' cgroups). */
int cgroup_run_set_cpu_weight(CgroupRun *cr, uint64_t weight);

/* A run's cgroups taken back after a restart of the daemon (a Python session from the fd store,
 * systemd backend): its scope's name, the scope's cgroup directory and payload/ (fds the CgroupRun
 * owns from here, also on failure). Placed already; nothing is created. 0 or -errno. */
int cgroup_run_adopt(Cgroup *c, const char *run_id, const char *unit, int run_fd, int payload_fd, CgroupRun **ret);
/* The run's scope cgroup and payload/ directories (cgroup_run_adopt()'s), -EBADF before placed. */
int cgroup_run_fd(const CgroupRun *cr);
/* Whether payload/ is frozen (its cgroup.freeze reads 1): 1, 0, or -errno. */
int cgroup_run_frozen(CgroupRun *cr);

/* Removes what the daemon created (payload/; for cgroupfs the whole run cgroup), after the init
 * was reaped. Cancels a placement in flight. NULL-safe. */
CgroupRun *cgroup_run_free(CgroupRun *cr);
DEFINE_POINTER_CLEANUP(CgroupRun, cgroup_run_free)
