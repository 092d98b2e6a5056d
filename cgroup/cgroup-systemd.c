/* cgroup-systemd.c: the systemd backend (cgroup_systemd_ops): one transient scope per run, created
 * over sd-bus (the system manager when we are root, the user's manager otherwise). The sequence is
 * systemd-run --scope's (src/run/run.c): match JobRemoved first, StartTransientUnit with the held
 * init's PID, wait for the job's result "done" (only then are the processes in the scope's cgroup),
 * then make the two leaves. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "cgroup-internal.h"
#include "cleanup.h"

#define SYSTEMD_SERVICE "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
#define USEC_INFINITY UINT64_MAX
#define SCOPE_STOP_TIMEOUT_USEC (1000u * 1000u)

static void placed_done(CgroupRun *cr, int error, const char *message);
static void bus_drop(Cgroup *c);
static int bus_setup(Cgroup *c, char **reterr);

static void pending_remove(CgroupRun *cr) {
        for (CgroupRun **p = &cr->cgroup->systemd.pending; *p; p = &(*p)->systemd.next_pending)
                if (*p == cr) {
                        *p = cr->systemd.next_pending;
                        break;
                }
        cr->systemd.next_pending = NULL;
}

/* The job finished: "done" means the init is in the scope's cgroup. */
static void job_finished(CgroupRun *cr, const char *result) {
        pending_remove(cr);
        free(cr->systemd.job);
        cr->systemd.job = NULL;
        if (strcmp(result, "done") != 0) {
                char msg[512];
                snprintf(msg, sizeof(msg), "systemd could not start the run's scope %s: the start job's result is "
                         "\"%s\"", cr->unit, result);
                placed_done(cr, -EIO, msg);
                return;
        }

        /* The scope's cgroup is the init's now (GetUnit + ControlGroup would cost a round trip;
         * /proc/<pid>/cgroup says the same once the job is done, as measured on 252). */
        _cleanup_free_ char *own = NULL, *path = NULL;
        int r = cg_own_path(cr->pid, &own);
        if (r >= 0 && asprintf(&path, CGROUP_MOUNT "%s", own) < 0)
                r = -ENOMEM;
        if (r >= 0 && (cr->run_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                r = -errno;
        if (r >= 0)
                r = cg_make_leaves(cr->run_fd, true, cr->pid, &cr->supervisor_fd, &cr->payload_fd);
        if (r < 0) {
                /* Say what was still in the scope's own cgroup (EBUSY: no internal processes). */
                char procs[128] = "";
                if (cr->run_fd < 0 || cg_read_at(cr->run_fd, "cgroup.procs", procs, sizeof(procs)) < 0)
                        procs[0] = '\0';
                for (char *p = procs; *p; p++)
                        if (*p == '\n')
                                *p = ' ';
                char msg[1024];
                snprintf(msg, sizeof(msg), "cannot set up the cgroups of scope %s (%s): %s (init %d; processes in "
                         "the scope's own cgroup: %s)", cr->unit, path ? path : "?", strerror(-r), (int) cr->pid,
                         procs[0] ? procs : "none");
                placed_done(cr, r, msg);
                return;
        }
        placed_done(cr, 0, NULL);
}

static void placed_done(CgroupRun *cr, int error, const char *message) {
        CgroupPlacedFn f = cr->placed;
        cr->placed = NULL;
        if (f)
                f(cr, error, message, cr->userdata);
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Cgroup *c = userdata;
        uint32_t id;
        const char *job, *unit, *result;

        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0)
                return 0;
        for (CgroupRun *cr = c->systemd.pending; cr; cr = cr->systemd.next_pending)
                if (cr->systemd.job && strcmp(cr->systemd.job, job) == 0) {
                        job_finished(cr, result);
                        return 0;
                }
        /* Possibly one of ours whose StartTransientUnit reply we have not processed yet. */
        if (strncmp(unit, "mcp-execd-run-", 14) == 0) {
                CgroupRecentJob *slot = &c->systemd.recent[c->systemd.recent_next++ % CGROUP_RECENT_JOBS];
                free(slot->path);
                free(slot->result);
                slot->path = strdup(job);
                slot->result = strdup(result);
        }
        return 0;
}

static int start_scope(CgroupRun *cr);

static int on_reset_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        CgroupRun *cr = userdata;
        cr->systemd.call = sd_bus_slot_unref(cr->systemd.call);
        int r = start_scope(cr);
        if (r < 0) {
                char msg[512];
                snprintf(msg, sizeof(msg), "cannot ask systemd for scope %s: %s", cr->unit, strerror(-r));
                placed_done(cr, r, msg);
        }
        return 0;
}

static int on_start_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        CgroupRun *cr = userdata;
        Cgroup *c = cr->cgroup;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        cr->systemd.call = sd_bus_slot_unref(cr->systemd.call);
        if (e) {
                if (cr->systemd.used_pidfd &&
                    (sd_bus_error_has_name(e, SD_BUS_ERROR_PROPERTY_READ_ONLY) ||
                     sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownProperty"))) {
                        /* systemd < 255 has no PIDFDs: use PIDs from now on. */
                        c->systemd.pidfds_refused = true;
                } else if (!cr->systemd.retried &&
                           sd_bus_error_has_name(e, "org.freedesktop.systemd1.UnitExists")) {
                        /* A leftover of the same name: reset it and retry once (crun's recovery). */
                        cr->systemd.retried = true;
                        int r = sd_bus_call_method_async(c->systemd.bus, &cr->systemd.call, SYSTEMD_SERVICE,
                                                         SYSTEMD_PATH, SYSTEMD_MANAGER, "ResetFailedUnit",
                                                         on_reset_reply, cr, "s", cr->unit);
                        if (r >= 0)
                                return 0;
                } else if (!sd_bus_is_open(c->systemd.bus)) {
                        /* sd-bus answers calls in flight itself when the connection ends. */
                        pending_remove(cr);
                        placed_done(cr, -ECONNRESET, "the connection to systemd was lost (daemon-reexec, or a restart of "
                                    "the bus) before the run's scope was created; the run was not started");
                        return 0;
                } else {
                        char msg[768];
                        snprintf(msg, sizeof(msg), "systemd refused to create the run's scope %s: %s (%s)", cr->unit,
                                 e->message ? e->message : "no message", e->name);
                        pending_remove(cr);
                        placed_done(cr, -sd_bus_error_get_errno(e) ?: -EIO, msg);
                        return 0;
                }
                int r = start_scope(cr);
                if (r < 0) {
                        pending_remove(cr);
                        placed_done(cr, r, "cannot ask systemd for the run's scope");
                }
                return 0;
        }

        const char *job;
        if (sd_bus_message_read(m, "o", &job) < 0 || !(cr->systemd.job = strdup(job))) {
                pending_remove(cr);
                placed_done(cr, -EBADMSG, "unexpected reply from systemd to StartTransientUnit");
                return 0;
        }
        for (unsigned i = 0; i < CGROUP_RECENT_JOBS; i++)
                if (c->systemd.recent[i].path && strcmp(c->systemd.recent[i].path, job) == 0) {
                        _cleanup_free_ char *result = TAKE_PTR(c->systemd.recent[i].result);
                        free(c->systemd.recent[i].path);
                        c->systemd.recent[i].path = NULL;
                        job_finished(cr, result ? result : "failed");
                        return 0;
                }
        return 0; /* JobRemoved follows */
}

static int start_scope(CgroupRun *cr) {
        Cgroup *c = cr->cgroup;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(c->systemd.bus, &m, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "ss", cr->unit, "fail");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;

        char description[128];
        /* The run id and our PID only: never anything of the caller's. The PID tells another
         * daemon's start that this scope is not stale (systemd_stop_stale()). */
        snprintf(description, sizeof(description), "mcp-execd run %s of daemon %d", cr->id, (int) getpid());
        uint64_t cpu = c->config.cpu_quota_percent ? (uint64_t) c->config.cpu_quota_percent * 10000u : USEC_INFINITY;
        /* The backstop: if we die, PID 1 still ends the run shortly after its deadline. The init
         * ignores SIGTERM (PID 1 of its namespace), hence KillSignal=SIGKILL. */
        uint64_t runtime = ((uint64_t) cr->timeout_s + c->config.backstop_grace_s) * 1000000u;
        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)",
                                  "Description", "s", description,
                                  "Slice", "s", cr->slice[0] ? cr->slice : c->slice,
                                  "Delegate", "b", 1,
                                  "MemoryAccounting", "b", 1,
                                  "TasksAccounting", "b", 1,
                                  "CPUAccounting", "b", 1,
                                  /* io.stat of the run's own cgroups (issue 33.1) */
                                  "IOAccounting", "b", 1,
                                  "MemoryMax", "t", c->config.memory_max_bytes,
                                  "MemorySwapMax", "t", (uint64_t) 0,
                                  "TasksMax", "t", c->config.pids_max,
                                  "CPUQuotaPerSecUSec", "t", cpu,
                                  "RuntimeMaxUSec", "t", runtime,
                                  "KillSignal", "i", (int32_t) SIGKILL,
                                  "TimeoutStopUSec", "t", (uint64_t) SCOPE_STOP_TIMEOUT_USEC,
                                  "CollectMode", "s", "inactive-or-failed",
                                  /* Delegate=yes makes it "continue" already; never "kill", which
                                   * would take the init and the counters with the OOM victim. */
                                  "OOMPolicy", "s", "continue");
        if (r < 0)
                return r;
        cr->systemd.used_pidfd = cr->pidfd >= 0 && !c->systemd.pidfds_refused;
        if (cr->systemd.used_pidfd)
                r = sd_bus_message_append(m, "(sv)", "PIDFDs", "ah", 1, cr->pidfd);
        else
                r = sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t) cr->pid);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return r;
        return sd_bus_call_async(c->systemd.bus, &cr->systemd.call, m, on_start_reply, cr, 0);
}

static int systemd_run_place(CgroupRun *cr, char **reterr) {
        Cgroup *c = cr->cgroup;
        int r;

        snprintf(cr->unit, sizeof(cr->unit), "mcp-execd-run-%s.scope", cr->id);
        if (!c->systemd.bus) {
                _cleanup_free_ char *why = NULL;
                r = bus_setup(c, &why);
                if (r < 0)
                        return reason_set(reterr, r, "systemd cannot be reached to create the run's scope (the "
                                         "connection was lost; reconnecting failed: %s)", why ?: strerror(-r));
        }
        r = start_scope(cr);
        if (r < 0)
                return reason_set(reterr, r, "cannot ask systemd for the run's scope: %s", strerror(-r));
        cr->systemd.next_pending = cr->cgroup->systemd.pending;
        cr->cgroup->systemd.pending = cr;
        return 0;
}

/* Forgets the placement in flight: its call, its place among the pending, its job. */
static void placement_drop(CgroupRun *cr) {
        cr->systemd.call = sd_bus_slot_unref(cr->systemd.call);
        pending_remove(cr);
        free(cr->systemd.job);
        cr->systemd.job = NULL;
}

static void systemd_run_cancel(CgroupRun *cr) {
        placement_drop(cr);
        cr->placed = NULL;
}

static int bus_open_private(const char *address, sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return r;
        r = sd_bus_start(bus);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}

/* The system manager when we are root, the user's otherwise. */
static int bus_connect(Cgroup *c, char **reterr) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *address = NULL;
        bool system = geteuid() == 0;
        int r;

        /* The manager's private socket is the faster path (measured: 13 ms vs 22-26 ms per call
         * under emulation); fall back to the bus. */
        if (system)
                address = strdup("unix:path=/run/systemd/private");
        else if (getenv("XDG_RUNTIME_DIR") &&
                 asprintf(&address, "unix:path=%s/systemd/private", getenv("XDG_RUNTIME_DIR")) < 0)
                address = NULL;
        r = address ? bus_open_private(address, &bus) : -ENOENT;
        if (r >= 0)
                c->systemd.direct = true;
        else {
                r = system ? sd_bus_open_system(&bus) : sd_bus_open_user(&bus);
                if (r < 0)
                        return reason_set(reterr, r, "cannot connect to the %s: %s",
                                         system ? "system manager" : "user's systemd manager", strerror(-r));
        }
        c->systemd.bus = TAKE_PTR(bus);
        return 0;
}

/* Connects and subscribes to JobRemoved: at start, and again after the connection was lost. */
static int bus_setup(Cgroup *c, char **reterr) {
        int r = bus_connect(c, reterr);
        if (r < 0)
                return r;
        /* Before any StartTransientUnit: the race-free order (org.freedesktop.systemd1(5)). On the
         * private socket signals carry no sender. */
        r = sd_bus_match_signal(c->systemd.bus, &c->systemd.job_match, c->systemd.direct ? NULL : SYSTEMD_SERVICE,
                                SYSTEMD_PATH, SYSTEMD_MANAGER, "JobRemoved", on_job_removed, c);
        if (r < 0) {
                bus_drop(c);
                return reason_set(reterr, r, "cannot subscribe to systemd's JobRemoved: %s", strerror(-r));
        }
        return 0;
}

static int systemd_open(Cgroup *c, char **reterr) {
        if (sd_booted() <= 0)
                return reason_set(reterr, -ENOMEDIUM, "systemd is not the init system");
        if (cg_is_cgroup2(CGROUP_MOUNT) <= 0)
                return reason_set(reterr, -ENOMEDIUM, "%s is not a pure cgroup v2 hierarchy", CGROUP_MOUNT);
        int r = bus_setup(c, reterr);
        if (r < 0)
                return r;
        snprintf(c->describe, sizeof(c->describe), "systemd: one scope per run in %s, %s manager%s", c->slice,
                 geteuid() == 0 ? "system" : "user", c->systemd.direct ? " (private socket)" : "");
        return 0;
}

static void bus_drop(Cgroup *c) {
        c->systemd.job_match = sd_bus_slot_unref(c->systemd.job_match);
        c->systemd.bus = sd_bus_flush_close_unref(c->systemd.bus);
        c->systemd.direct = false;
        for (unsigned i = 0; i < CGROUP_RECENT_JOBS; i++) {
                free(c->systemd.recent[i].path);
                free(c->systemd.recent[i].result);
                c->systemd.recent[i] = (CgroupRecentJob) {};
        }
}

static void systemd_close(Cgroup *c) {
        bus_drop(c);
}

/* The connection ended (systemctl daemon-reexec closes the manager's private connections; a
 * restart of dbus-daemon ends a bus connection). Runs already placed need no bus (their kill and
 * counters go through cgroupfs) and go on; a run still waiting for its start job cannot learn the
 * result and fails now, with a clear message (its init is killed, so its scope, if systemd made
 * one, empties and is collected). The next placement reconnects. */
static void bus_lost(Cgroup *c) {
        while (c->systemd.pending) {
                CgroupRun *cr = c->systemd.pending;
                placement_drop(cr);
                placed_done(cr, -ECONNRESET, "the connection to systemd was lost (daemon-reexec, or a restart of the "
                            "bus) while the run's scope was being created; the run was not started");
        }
        bus_drop(c);
}

/* Whether the scope whose Description is d belongs to a daemon that is alive: "… of daemon <pid>",
 * and that PID is an mcp-execd (several instances share a host, issue 19.3, and two desktop
 * clients may each start one over stdio: one's start must not kill the other's runs). A PID
 * reused by another mcp-execd keeps a stale scope until that one's own start; its backstop
 * (RuntimeMaxSec=) ends it anyway. */
static bool scope_owner_alive(const char *d) {
        const char *p = d ? strstr(d, " of daemon ") : NULL;
        if (!p)
                return false;
        char *end;
        errno = 0;
        long pid = strtol(p + strlen(" of daemon "), &end, 10);
        if (errno != 0 || *end != '\0' || pid <= 1 || pid == (long) getpid())
                return false;
        char path[64], comm[32] = "";
        snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, comm, sizeof(comm) - 1) : -1;
        if (n <= 0)
                return false;
        comm[n] = '\0';
        comm[strcspn(comm, "\n")] = '\0';
        return strcmp(comm, "mcp-execd") == 0;
}

static int systemd_stop_stale(Cgroup *c) {
        sd_bus *bus = c->systemd.bus;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r, n = 0;

        r = sd_bus_call_method(bus, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "ListUnitsByPatterns", &error,
                               &reply, "asas", 0, 1, "mcp-execd-run-*.scope");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        if (r < 0)
                return r;
        const char *name, *d, *load, *active, *sub, *follow, *path, *jtype, *jpath;
        uint32_t jid;
        while ((r = sd_bus_message_read(reply, "(ssssssouso)", &name, &d, &load, &active, &sub, &follow, &path,
                                        &jid, &jtype, &jpath)) > 0) {
                /* A live daemon's, or a Python session this daemon took back from the fd store. */
                if (scope_owner_alive(d) || cg_scope_kept(c, name))
                        continue;
                /* SIGKILL the whole scope, then stop it; a failed one is reset so its name frees. */
                (void) sd_bus_call_method(bus, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "KillUnit", NULL, NULL,
                                          "ssi", name, "all", (int32_t) SIGKILL);
                (void) sd_bus_call_method(bus, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "StopUnit", NULL, NULL,
                                          "ss", name, "replace");
                (void) sd_bus_call_method(bus, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "ResetFailedUnit",
                                          NULL, NULL, "s", name);
                n++;
        }
        return r < 0 ? r : n;
}

int cgroup_own_fd_store_max(Cgroup *c, uint32_t *ret) {
        if (cgroup_backend(c) != CGROUP_BACKEND_SYSTEMD || !c->systemd.bus)
                return -EOPNOTSUPP;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(c->systemd.bus, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnitByPID",
                                   &error, &reply, "u", (uint32_t) getpid());
        if (r < 0)
                return r;
        const char *path;
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        /* Not a service (a scope of a login session, a test's transient unit): no store. */
        return sd_bus_get_property_trivial(c->systemd.bus, SYSTEMD_SERVICE, path, "org.freedesktop.systemd1.Service",
                                           "FileDescriptorStoreMax", &error, 'u', ret);
}

/* The bounds as properties of the slice, appended to m (an a(sv) container is open). */
static int tenant_properties(sd_bus_message *m, const CgroupTenant *t) {
        return sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)", "MemoryAccounting", "b", 1, "TasksAccounting", "b", 1,
                                     "MemoryMax", "t", t->memory_max_bytes, "TasksMax", "t", t->pids_max, "CPUWeight", "t",
                                     t->cpu_weight, "MemorySwapMax", "t", (uint64_t) 0);
}

/* SetUnitProperties (runtime) sets a slice's bounds whether it runs or not: a slice needs no unit
 * file, so the manager loads one by its name alone, and the scopes started in it later start it.
 * The properties live in /run/systemd/system.control/ until a reboot, as `systemctl set-property
 * --runtime` leaves them. */
static int systemd_tenant_apply(Cgroup *c, const CgroupTenant *t, char *ret_slice, size_t size, char **reterr) {
        int r = cg_tenant_unit_name(c->slice, t->name, ret_slice, size);
        if (r < 0)
                return reason_set(reterr, r, "no slice name for tenant %s below %s", t->name, c->slice);
        if (!c->systemd.bus) {
                _cleanup_free_ char *why = NULL;
                r = bus_setup(c, &why);
                if (r < 0)
                        return reason_set(reterr, r, "systemd cannot be reached to set up the slice of tenant %s: %s",
                                         t->name, why ?: strerror(-r));
        }
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        r = sd_bus_message_new_method_call(c->systemd.bus, &m, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(m, "sb", ret_slice, 1);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = tenant_properties(m, t);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_call(c->systemd.bus, m, 0, &error, NULL);
        if (r < 0)
                return reason_set(reterr, r, "systemd did not set the bounds of %s (tenant %s): %s", ret_slice, t->name,
                                 error.message ?: strerror(-r));
        return 0;
}

static int systemd_event_fd(Cgroup *c) {
        return c->systemd.bus ? sd_bus_get_fd(c->systemd.bus) : -EBADF;
}

static int systemd_event_mask(Cgroup *c) {
        int e = c->systemd.bus ? sd_bus_get_events(c->systemd.bus) : 0;
        return e < 0 ? POLLIN : e;
}

static uint64_t systemd_event_timeout(Cgroup *c) {
        uint64_t t = UINT64_MAX;
        if (c->systemd.bus && sd_bus_get_timeout(c->systemd.bus, &t) < 0)
                t = UINT64_MAX;
        return t;
}

static int systemd_event_process(Cgroup *c) {
        if (!c->systemd.bus)
                return 0;
        int r;
        do
                r = sd_bus_process(c->systemd.bus, NULL);
        while (r > 0);
        if (r < 0 || !sd_bus_is_open(c->systemd.bus)) {
                bus_lost(c);
                return r < 0 ? r : -ECONNRESET;
        }
        return r;
}

const CgroupOps cgroup_systemd_ops = {
        .backend = CGROUP_BACKEND_SYSTEMD,
        .name = "systemd",
        .open = systemd_open,
        .close = systemd_close,
        .stop_stale = systemd_stop_stale,
        .event_fd = systemd_event_fd,
        .event_mask = systemd_event_mask,
        .event_timeout = systemd_event_timeout,
        .event_process = systemd_event_process,
        .run_place = systemd_run_place,
        .run_cancel = systemd_run_cancel,
        /* No run_destroy: the scope's cgroup is systemd's to remove (cgroup_run_free). */
        .run_kill = cg_run_kill,
        .run_read = cg_run_read,
        .tenant_apply = systemd_tenant_apply,
};
