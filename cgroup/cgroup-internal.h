/* cgroup-internal.h: what the backends of cgroup/ share (never included outside cgroup/). */
#pragma once

#include <systemd/sd-bus.h>

#include "cgroup.h"

#define CGROUP_MOUNT "/sys/fs/cgroup"
#define CGROUP_RECENT_JOBS 32

typedef struct CgroupRecentJob {
        char *path;
        char *result;
} CgroupRecentJob;

struct Cgroup {
        CgroupBackend backend;
        CgroupConfig config;
        char *slice;
        char describe[256];

        /* cgroupfs: our delegated cgroup, parent of every run's cgroup */
        int base_fd;

        /* systemd */
        sd_bus *bus;
        bool direct;           /* the manager's private socket: signals carry no sender */
        bool pidfds_refused;   /* the manager predates PIDFDs (systemd < 255) */
        sd_bus_slot *job_match;
        CgroupRun *pending;    /* runs waiting for their start job */
        CgroupRecentJob recent[CGROUP_RECENT_JOBS]; /* JobRemoved seen before the job's reply */
        unsigned recent_next;
};

struct CgroupRun {
        Cgroup *cgroup;
        char id[64];
        char unit[128];
        uint32_t timeout_s;
        int run_fd;        /* the scope's or the run's own cgroup directory */
        int supervisor_fd;
        int payload_fd;
        char *run_path;    /* cgroupfs: path below the mount, for removal */

        /* systemd placement in flight */
        pid_t pid;
        int pidfd;
        bool retried;
        bool used_pidfd;
        char *job;
        sd_bus_slot *call;
        CgroupPlacedFn placed;
        void *userdata;
        CgroupRun *next_pending;
};

/* Shared cgroupfs operations (cgroup.c). */
int cg_write_at(int dirfd, const char *file, const char *value);
int cg_make_leaves(CgroupRun *cr, bool move_init, pid_t init_pid);
int cg_is_cgroup2(const char *path);
int cg_own_path(pid_t pid, char **ret);

/* systemd backend (cgroup-systemd.c). */
int cg_systemd_open(Cgroup *c, char **reterr);
int cg_systemd_place(CgroupRun *cr, char **reterr);
void cg_systemd_run_cancel(CgroupRun *cr);
int cg_systemd_stop_stale(Cgroup *c);
void cg_systemd_close(Cgroup *c);
