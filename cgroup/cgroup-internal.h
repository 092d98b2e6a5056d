/* cgroup-internal.h: the backend interface of cgroup/ (CgroupOps) and the cgroupfs file helpers
 * every backend shares; included by cgroup/ and its unit test only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-bus.h>

#include "cgroup.h"
#include "cleanup.h"
#include "str-util.h"

#define CGROUP_MOUNT "/sys/fs/cgroup"
#define CGROUP_RECENT_JOBS 32

/* A backend, crun's libcrun_cgroup_manager shape: the dispatcher (cgroup.c) calls these, a backend
 * never calls the dispatcher. A NULL member means the documented default. */
typedef struct CgroupOps {
        CgroupBackend backend;
        const char *name; /* cgroup_backend_name() */

        /* Sets the backend up in c (config and slice already filled) and writes c->describe. On
         * failure returns -errno with a malloc'd reason in *reterr, and leaves nothing to close. */
        int (*open)(Cgroup *c, char **reterr);
        void (*close)(Cgroup *c);             /* NULL: nothing to release */
        int (*stop_stale)(Cgroup *c);         /* NULL: returns 0 */

        /* Event-loop integration (cgroup.h). NULL: no fd (-EBADF), mask 0, no timeout
         * (UINT64_MAX), nothing to process (0). */
        int (*event_fd)(Cgroup *c);
        int (*event_mask)(Cgroup *c);
        uint64_t (*event_timeout)(Cgroup *c);
        int (*event_process)(Cgroup *c);

        /* Creates the run's cgroups before its init is spawned. NULL: nothing before spawn. On
         * failure cgroup_run_free() follows, which calls run_destroy. */
        int (*run_create)(CgroupRun *cr);
        /* The init is cloned straight into supervisor/ (cgroup_run_supervisor_fd). */
        bool clone_into_supervisor;
        /* Starts placing the init (cr->pid, cr->pidfd, cr->placed, cr->userdata are set): returns 0
         * when cr->placed will be called from event_process, or -errno with *reterr. NULL: nothing
         * to place, cgroup_run_place() returns 1. */
        int (*run_place)(CgroupRun *cr, char **reterr);
        void (*run_cancel)(CgroupRun *cr);    /* NULL: no placement is ever in flight */
        /* Removes what the backend created for the run; the leaves' fds are closed already, run_fd
         * not yet. NULL: nothing to remove. */
        void (*run_destroy)(CgroupRun *cr);
        int (*run_kill)(CgroupRun *cr);       /* NULL: -EBADF (no payload/) */
        /* Makes t's slice or sets its bounds, and writes its name (a unit, or a directory below
         * base_fd) to ret_slice. NULL: tenants have no slice (-EOPNOTSUPP). */
        int (*tenant_apply)(Cgroup *c, const CgroupTenant *t, char *ret_slice, size_t size, char **reterr);
        int (*run_read)(CgroupRun *cr, CgroupStats *ret); /* NULL: -EBADF (no counters) */
} CgroupOps;

/* Whether unit was given to cgroup_keep_scope(). */
bool cg_scope_kept(const Cgroup *c, const char *unit);

extern const CgroupOps cgroup_systemd_ops;
extern const CgroupOps cgroup_fs_ops;
extern const CgroupOps cgroup_none_ops;

typedef struct CgroupRecentJob {
        char *path;
        char *result;
} CgroupRecentJob;

/* The systemd backend's connection state: cgroup-systemd.c's alone. */
typedef struct CgroupSystemd {
        sd_bus *bus;
        bool direct;           /* the manager's private socket: signals carry no sender */
        bool pidfds_refused;   /* the manager predates PIDFDs (systemd < 255) */
        sd_bus_slot *job_match;
        CgroupRun *pending;    /* runs waiting for their start job */
        CgroupRecentJob recent[CGROUP_RECENT_JOBS]; /* JobRemoved seen before the job's reply */
        unsigned recent_next;
} CgroupSystemd;

/* A tenant with a slice of its own (cgroup_tenants_set()). */
typedef struct CgroupTenantSlice {
        char name[CGROUP_TENANT_NAME_MAX + 1];
        char slice[192]; /* systemd: the unit; cgroupfs: the directory below base_fd */
} CgroupTenantSlice;

struct Cgroup {
        const CgroupOps *ops;
        CgroupConfig config;
        char *slice;
        char describe[256];
        CgroupTenantSlice *tenants; /* the last cgroup_tenants_set()'s */
        size_t n_tenants;
        char **keep;                /* scopes cgroup_stop_stale() spares (cgroup_keep_scope()) */
        size_t n_keep;

        int base_fd;           /* cgroupfs: our delegated cgroup, parent of every run's cgroup */
        CgroupSystemd systemd;
};

/* A placement in flight with the systemd backend: cgroup-systemd.c's alone. */
typedef struct CgroupSystemdRun {
        bool retried;
        bool used_pidfd;
        char *job;
        sd_bus_slot *call;
        CgroupRun *next_pending;
} CgroupSystemdRun;

struct CgroupRun {
        Cgroup *cgroup;
        char id[64];
        char unit[128];
        uint32_t timeout_s;
        char slice[192];   /* its tenant's slice (CgroupTenantSlice.slice), or "": the daemon's */
        int run_fd;        /* the scope's or the run's own cgroup directory */
        int supervisor_fd;
        int payload_fd;

        /* What cgroup_run_place() was given, for the backend's run_place. */
        pid_t pid;
        int pidfd;
        CgroupPlacedFn placed;
        void *userdata;

        char *run_path;    /* cgroupfs: the run's cgroup below base_fd, for removal */
        CgroupSystemdRun systemd;
};

/* The dispatcher's backend choice with an explicit table (indexed by CgroupBackend), so the unit
 * test can check auto's fallback order with stand-in backends. cgroup_new() passes the real one. */
int cgroup_new_with(const CgroupConfig *config, const CgroupOps *const backends[3], Cgroup **ret,
                    char **reterr);

/* Shared cgroupfs file helpers (cgroup-util.c). All return 0 (or what is said) or -errno. */
int cg_write_at(int dirfd, const char *file, const char *value);
/* Reads at most size - 1 bytes of file and NUL-terminates them. */
int cg_read_at(int dirfd, const char *file, char *buf, size_t size);
/* The value of key in a flat-keyed file's text ("key value\n" lines: memory.events, cpu.stat);
 * -ENOENT when absent. */
int cg_keyed_value(const char *text, const char *key, uint64_t *ret);
/* Enables the controllers a run can do without (cpu, io) for dirfd's children, each if offered. */
void cg_enable_optional(int dirfd);
/* The total= of the line ("some", "full") of a pressure file's text (cpu.pressure, …), µs. */
int cg_pressure_total(const char *text, const char *line, uint64_t *ret);
/* The sums of rbytes= and wbytes= over io.stat's devices; -EBADMSG for a line without them. */
int cg_io_bytes(const char *text, uint64_t *ret_read, uint64_t *ret_written);
/* fd's pressure totals, I/O bytes and pids.peak, each known if the kernel has it. */
void cg_account_read(int fd, ExecAccount *ret);
/* 1 if path is a cgroup v2 mount, 0 if something else. */
int cg_is_cgroup2(const char *path);
/* The cgroup v2 path of pid below the mount ("0::/x/y" in /proc/pid/cgroup), malloc'd. */
int cg_own_path(pid_t pid, char **ret);
/* Moves every process of from_fd's own cgroup into to_fd's. */
int cg_move_all(int from_fd, int to_fd);
/* supervisor/ and payload/ inside run_fd, memory and pids (cpu if offered) enabled for them; with
 * move_init, init_pid (and whatever else sits in run_fd itself) first moves into supervisor/. */
int cg_make_leaves(int run_fd, bool move_init, pid_t init_pid, int *ret_supervisor_fd, int *ret_payload_fd);
/* payload/'s counters, and the OOM and pids events of payload/ and of the run's cgroup (run_fd,
 * -EBADF to skip it). */
int cg_stats_read(int payload_fd, int run_fd, CgroupStats *ret);
/* The slice unit of tenant name below parent (a slice's unit name): mcp-execd.slice's
 * mcp-execd-tenant-<name>.slice, '-' in name written \x2d. -EINVAL when parent is no slice,
 * -ENAMETOOLONG when it does not fit size. */
int cg_tenant_unit_name(const char *parent, const char *name, char *ret, size_t size);
/* Writes payload_fd's cgroup.kill. */
int cg_kill(int payload_fd);

/* The run_kill and run_read of the backends whose runs have payload/ (systemd, cgroupfs). */
int cg_run_kill(CgroupRun *cr);
int cg_run_read(CgroupRun *cr, CgroupStats *ret);
