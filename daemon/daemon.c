/* daemon.c: the daemon object, the only place that knows the whole sequence: the cgroup backend,
 * the sandbox, the loop, the session, the transport, the start's checks (the sandbox's self-test,
 * the interpreters' probe), and an orderly shutdown whose teardown follows ownership. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bus-events.h"
#include "cgroup.h"
#include "daemon.h"
#include "fd-util.h"
#include "fdstore.h"
#include "http-transport.h"
#include "lb-agent.h"
#include "log.h"
#include "mcp.h"
#include "metrics.h"
#include "notify.h"
#include "oauth.h"
#include "pool.h"
#include "project-config.h"
#include "pyexec.h"
#include "pysession.h"
#include "ring.h"
#include "run.h"
#include "sandbox.h"
#include "scheduler.h"
#include "signals.h"
#include "state-dir.h"
#include "stdio-transport.h"
#include "str-util.h"
#include "task-keeper.h"
#include "tenants.h"

#define RING_ENTRIES 256
#define SHUTDOWN_DEADLINE_USEC (5u * 1000u * 1000u)
/* stdio: how long the start waits for the client's first bytes before its checks (daemon_run()). */
#define DAEMON_FIRST_INPUT_USEC (100u * 1000u)
/* After the loop: how long the calls and the kernel operations still in flight may take to
 * complete before we free what they point into anyway (a run killed at shutdown ends within its
 * kill grace; a cancelled read completes at once). */
#define TEARDOWN_DEADLINE_USEC (2u * 1000u * 1000u)
/* systemd ends a scope this long after its run's deadline even if we are gone (RuntimeMaxUSec). */
#define CGROUP_BACKSTOP_GRACE_S 10
/* A ready sandbox older than this is replaced rather than used: an upgraded /usr (a new Python, new
 * packages) reaches the calls within this bound (issue 16.4). */
#define DAEMON_POOL_MAX_AGE_USEC (10ull * 60u * 1000u * 1000u)

struct Daemon {
        const Config *config;
        Cgroup *cgroup;
        FdStore *fdstore; /* the Python sessions systemd kept for us, until they are taken back */
        bool fdstore_usable; /* sessions and tasks are handed to systemd's fd store (issue 33.3) */
        Sandbox *sandbox;
        char *state_dir; /* the runs' staging directories; removed with its contents at the end */
        int state_dir_lock; /* held while state_dir exists (state-dir.h) */
        Ring *ring;
        Signals *signals;
        char *python;    /* MCP_EXEC_PYTHON resolved in SANDBOX_PATH, or NULL */
        BusEvents bus;
        RunEnv env;
        RunLauncherCode launcher_code; /* what d->env.launcher_code points at: empty until the probe */
        RunPool *pool;   /* ready sandboxes (issue 16), or NULL */
        PyExec *pyexec;
        PySessions *pysessions; /* persistent Python sessions (issue 18) */
        McpServer *mcp;  /* stdio: the one session; HTTP: the template of each session's */
        Scheduler scheduler;
        DispatchTasks *tasks; /* every transport's tasks (README "Tasks") */
        Metrics *metrics;
        Stdio *stdio;    /* one of the two transports */
        Http *http;
        LbAgent *lb_agent; /* HTTP: HAProxy's agent check (MCP_EXEC_AGENT_ADDR), or NULL */
        Tenants *tenants; /* HTTP: who may call (MCP_EXEC_TENANTS, MCP_EXEC_AUTH_TOKEN), lent to http; NULL: anyone */
        EgressProxy *egress;          /* the runs' way out (issue 32), serving those with an allowlist */
        EgressPolicy *egress_default; /* MCP_EXEC_EGRESS_ALLOW: calls of no tenant and of the tenant default */
        OAuth *oauth;     /* HTTP: OAuth access tokens (MCP_EXEC_OAUTH_*), lent to http; NULL: none */
        unsigned stop_signals; /* signals that asked for the stop (SIGHUP over HTTP reloads instead) */
        Notify notify;
        const char *transport_name;
        uint64_t shutdown_deadline; /* 0 until a signal asked us to stop */
        uint64_t drain_deadline;    /* HTTP, MCP_EXEC_DRAIN_S: 0 until a signal began a drain */
        const char *drain_signal;   /* the signal that began it ("TERM") */
        bool checking;              /* the start's checks are under way */
        uint64_t checks_t0;         /* when they began */
        RingOp op_recheck;          /* a reserved uid was in use: the sandbox's check again, soon */
        struct __kernel_timespec recheck_ts;
        bool ready;                 /* they passed: calls are served */
        bool refused;               /* they failed: we exit with status 1 */
        bool refused_config;        /* a setting failed its check (MCP_EXEC_PRELOAD): status 2 */
        bool running;               /* daemon_run() has begun */
        bool announced;             /* READY=1 said, the start recorded */
        bool stopping;              /* STOPPING=1 said, the stop recorded */
        bool gave_up;               /* the loop failed, or the shutdown ran out of time */
};

static const char *daemon_limits_by(const Daemon *d) {
        return cgroup_backend(d->cgroup) == CGROUP_BACKEND_NONE ? "rlimit" : "cgroup";
}

static int daemon_cgroup_setup(Daemon *d) {
        static const CgroupWant wants[] = {
                [CGROUP_MODE_AUTO] = CGROUP_WANT_AUTO,
                [CGROUP_MODE_SYSTEMD] = CGROUP_WANT_SYSTEMD,
                [CGROUP_MODE_CGROUPFS] = CGROUP_WANT_CGROUPFS,
                [CGROUP_MODE_NONE] = CGROUP_WANT_NONE,
        };
        const Config *cfg = d->config;
        CgroupConfig ccfg = {
                .want = wants[cfg->cgroup],
                .slice = cfg->slice,
                .memory_max_bytes = cfg->memory_max_bytes,
                .pids_max = cfg->pids_max,
                .cpu_quota_percent = cfg->cpu_quota_percent,
                .backstop_grace_s = CGROUP_BACKSTOP_GRACE_S,
        };
        _cleanup_(cgroup_freep) Cgroup *cgroup = NULL;
        _cleanup_free_ char *why = NULL;
        int r = cgroup_new(&ccfg, &cgroup, &why);
        if (r < 0) {
                log_error("refusing to start: MCP_EXEC_CGROUP=%s is not available: %s",
                          cfg->cgroup == CGROUP_MODE_SYSTEMD ? "systemd" : "cgroupfs", why ? why : strerror(-r));
                return r;
        }
        if (cgroup_backend(cgroup) == CGROUP_BACKEND_NONE) {
                if (cfg->require_cgroup) {
                        log_error("refusing to start: MCP_EXEC_REQUIRE_CGROUP=1, but %s",
                                  why ? why : "no cgroup backend is available");
                        return -ENOMEDIUM;
                }
                log_warning("%s: memory, process and CPU limits are enforced with rlimits only",
                            why ? why : "MCP_EXEC_CGROUP=none");
        } else
                log_info("cgroup backend %s", cgroup_describe(cgroup));
        d->cgroup = TAKE_PTR(cgroup);
        return 0;
}

/* Systemd's fd store (issue 33.3): the pieces of the Python sessions and the ended tasks an earlier
 * instance handed to it, taken before the transport reads its sockets from $LISTEN_FDS, their scopes spared from the
 * stale scopes' stop; pysessions_adopt() and dispatch_tasks_adopt() take them back once they can be
 * served. */
static int daemon_fdstore_setup(Daemon *d) {
        static const char *const prefixes[] = { PYSESSION_STORE_PREFIX, TASK_KEEPER_PREFIX, NULL };
        int r = fdstore_take(prefixes, &d->fdstore);
        if (r < 0)
                return log_error_errno(r, "cannot read the fds systemd passed: %m");
        pysessions_store_keep_scopes(d->fdstore, d->cgroup);
        d->fdstore_usable = d->config->transport != TRANSPORT_STDIO && fdstore_available();
        if (d->fdstore_usable && !getenv("FDSTORE")) {
                /* systemd before 254 sets no $FDSTORE: its manager says the unit's FileDescriptorStoreMax=
                 * (0: what we hand it would be closed, with a warning each time). */
                uint32_t max;
                r = cgroup_own_fd_store_max(d->cgroup, &max);
                if (r >= 0)
                        d->fdstore_usable = max > 0;
                else if (r != -EOPNOTSUPP)
                        log_info("cannot ask systemd for our FileDescriptorStoreMax= (%s): Python sessions and tasks "
                                 "are handed to its fd store as the unit says", strerror(-r));
        }
        if (d->fdstore_usable)
                log_debug("Python sessions and tasks are kept in systemd's fd store across a restart");
        return 0;
}

/* Scopes an earlier instance left (systemd: a blocking ListUnitsByPatterns and a stop of each),
 * stopped before our first run: with the start's checks, after initialize is answered. */
static void daemon_cgroup_stop_stale(Daemon *d) {
        if (cgroup_backend(d->cgroup) == CGROUP_BACKEND_NONE)
                return;
        int r = cgroup_stop_stale(d->cgroup);
        if (r > 0)
                log_info("stopped %d run scope(s) left by an earlier instance", r);
        else if (r < 0)
                log_warning_errno(r, "cannot look for stale run scopes: %m, ignoring");
}

/* The sandbox, and a private directory for the runs' staging directories: systemd's
 * RuntimeDirectory= when we are a service, else one of our own under $TMPDIR. */
static int daemon_sandbox_setup(Daemon *d) {
        const Config *cfg = d->config;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned threads = cfg->cpu_quota_percent ? (cfg->cpu_quota_percent + 99) / 100 : (unsigned) MAX(ncpu, 1L);
        SandboxConfig scfg = {
                .tmp_size_bytes = cfg->tmp_size_bytes,
                .cpu_threads = MAX(threads, 1u),
                .max_sandboxes = cfg->max_concurrent + cfg->py_sessions_max,
                .rlimit_as_bytes = cfg->memory_max_bytes == UINT64_MAX ? 0 : cfg->memory_max_bytes,
                .rlimit_nproc = cfg->pids_max == UINT64_MAX ? 0 : cfg->pids_max,
                .rlimit_cpu_sec = (uint64_t) cfg->max_timeout_s + 1,
        };
        _cleanup_(sandbox_freep) Sandbox *sandbox = NULL;
        _cleanup_free_ char *reason = NULL;
        /* Checked later, in daemon_checks_start(), with the same sentences. */
        int r = sandbox_new_unchecked(&scfg, &sandbox, &reason);
        if (r < 0) {
                log_error("refusing to start: the sandbox is not available: %s", reason ? reason : strerror(-r));
                return r;
        }

        const char *base = getenv("RUNTIME_DIRECTORY") ?: getenv("TMPDIR") ?: "/tmp";
        /* A daemon killed (SIGKILL, a crash) left its callers' staged code and files here; under
         * systemd RuntimeDirectory= goes with the unit, but stdio daemons share TMPDIR. */
        unsigned stale = state_dirs_clean_stale(base);
        if (stale > 0)
                log_info("removed %u private director%s in %s that mcp-execd instances which were killed had "
                         "left", stale, stale == 1 ? "y" : "ies", base);
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int lock_fd = -EBADF;
        r = state_dir_new(base, &dir, &lock_fd);
        if (r < 0)
                return log_error_errno(r, "cannot create a private directory in %s: %m", base);
        d->sandbox = TAKE_PTR(sandbox);
        d->state_dir = TAKE_PTR(dir);
        d->state_dir_lock = TAKE_FD(lock_fd);
        return 0;
}

/* The loop and what rides on it from the start: the signals, the cgroup backend's bus. */
static int daemon_loop_setup(Daemon *d, const sigset_t *mask) {
        int r = ring_new(RING_ENTRIES, &d->ring);
        if (r < 0)
                return log_error_errno(r, "cannot set up io_uring: %m");
        r = signals_new(d->ring, mask, &d->signals);
        if (r < 0)
                return log_error_errno(r, "cannot create a signalfd: %m");

        d->python = python_resolve(d->config->python);
        if (!d->python)
                log_warning("interpreter '%s' not found in " SANDBOX_PATH " (MCP_EXEC_PYTHON); every run will fail "
                            "with a tool error until it is installed", d->config->python);
        r = bus_events_start(&d->bus, d->ring, d->cgroup);
        if (r < 0)
                return log_error_errno(r, "cannot drive the cgroup backend's bus from the loop: %m");
        return 0;
}

/* Ready sandboxes (issue 16), with every backend: a scope (systemd) or a cgroup (cgroupfs) of
 * their own per ready sandbox, or rlimits (none). Made inert here: the start's checks check the
 * preload once the sandbox has passed its own, and the first answer after that fills it. */
static int daemon_pool_setup(Daemon *d) {
        const Config *cfg = d->config;
        if (cfg->warm_pool == 0 || !d->python)
                return 0;
        bool cgroup = cgroup_backend(d->cgroup) != CGROUP_BACKEND_NONE;
        RunPoolConfig pcfg = {
                .ring = d->ring,
                .sandbox = d->sandbox,
                .state_dir = d->state_dir,
                .python = d->python,
                .size = cfg->warm_pool,
                .preload = cfg->preload,
                .cgroup = d->cgroup,
                .max_timeout_s = cfg->max_timeout_s,
                /* session_open takes ready sandboxes too (pysession/session.c). */
                .session_backstop_s = cfg->py_sessions_max > 0
                                              ? pysession_backstop_s(cfg->py_session_lifetime_s, cfg->max_timeout_s)
                                              : 0,
                /* A cgroup's cpu.weight is ours to raise again; in rlimit mode only root may give the
                 * refill's lowered nice value back (CAP_SYS_NICE). */
                .background = cgroup || geteuid() == 0,
                .max_age_usec = DAEMON_POOL_MAX_AGE_USEC,
        };
        _cleanup_free_ char *why = NULL;
        int r = run_pool_new(&pcfg, &d->pool, &why);
        if (r < 0)
                return log_error_errno(r, "cannot set up the warm pool: %m");
        d->env.pool = d->pool;
        return 0;
}

/* The MCP session: the tool descriptions state the limits and what the interpreters' probe found.
 * Made before the probe has answered (stdio), it holds what depends on it until then. */
static int daemon_session_setup(Daemon *d) {
        const Config *cfg = d->config;
        McpLimits limits = {
                .default_timeout_s = cfg->default_timeout_s,
                .max_timeout_s = cfg->max_timeout_s,
                .max_code_bytes = cfg->max_code_bytes,
                .max_stdin_bytes = cfg->max_stdin_bytes,
                .max_output_bytes = cfg->max_output_bytes,
                .memory_max_bytes = cfg->memory_max_bytes,
                .pids_max = cfg->pids_max,
                .cpu_quota_percent = cfg->cpu_quota_percent,
                .tmp_size_bytes = cfg->tmp_size_bytes,
                .python_version = pyexec_version(d->pyexec),
                .packages = pyexec_packages(d->pyexec),
                .limits_by = daemon_limits_by(d),
                .pythons = pyexec_names(d->pyexec),
                .sources = pyexec_sources(d->pyexec),
                .max_input_bytes = cfg->max_input_bytes,
                .max_return_bytes = cfg->max_return_bytes,
        };
        d->mcp = mcp_server_new(&limits, PROJECT_VERSION);
        if (!d->mcp)
                return log_error_errno(-ENOMEM, "cannot set up the MCP session: %m");
        if (!d->ready)
                mcp_server_hold(d->mcp);
        return 0;
}

/* The status line's numbers, now (notify.h). */
static NotifyStatus daemon_status(const Daemon *d) {
        NotifyStatus st = {
                .running = d->scheduler.n_running,
                .slots = d->scheduler.max_running,
                .queued = d->scheduler.n_queued,
                .pool_ready = run_pool_ready(d->pool),
                .pool_size = d->pool ? d->config->warm_pool : 0,
                .sessions = d->pysessions ? pysessions_count(d->pysessions) : 0,
                .total = d->scheduler.n_finished,
        };
        st.tenants = scheduler_tenants_busy(&d->scheduler, &st.busiest, &st.busiest_calls);
        return st;
}

/* The agent check's numbers, at each of HAProxy's connections (lb-agent.h): a daemon stopping or
 * draining says drain, so that the balancer sends it nothing new while its calls finish. */
static void daemon_lb_load(void *userdata, LbAgentLoad *ret) {
        const Daemon *d = userdata;
        *ret = (LbAgentLoad) {
                .slots = d->scheduler.max_running,
                .running = d->scheduler.n_running,
                .queued = d->scheduler.n_queued,
                .pool_ready = run_pool_ready(d->pool),
                .pool_size = d->pool ? d->config->warm_pool : 0,
                .draining = !d->ready || d->drain_deadline || d->shutdown_deadline,
        };
}

/* The start is over and it went well: READY=1, and its record. Once, when both the checks have
 * passed and daemon_run() has begun. */
static void daemon_announce(Daemon *d) {
        const Config *cfg = d->config;
        if (d->announced || !d->ready || !d->running)
                return;
        d->announced = true;
        log_info("%s %s serving MCP over %s (max %u concurrent runs, queue %u, %u Python sessions; the "
                 "per-user kernel budgets are shared by %u sandboxes)", PROJECT_NAME, PROJECT_VERSION,
                 d->transport_name, cfg->max_concurrent, cfg->queue_max, cfg->py_sessions_max,
                 cfg->max_concurrent + cfg->py_sessions_max);
        metrics_daemon_started(d->metrics, &(MetricsStart) { .limits = daemon_limits_by(d),
                                                             .max_concurrent = cfg->max_concurrent,
                                                             .queue_max = cfg->queue_max });
        NotifyStatus st = daemon_status(d);
        notify_ready(&d->notify, &st);
}

/* Over stdio, what the session held (and what was read after it) is answered: a call with a tool
 * error saying why it did not run, a tools/list with an error; what is not read yet, nothing. */
static void daemon_refuse_held(Daemon *d, const char *why) {
        if (!d->stdio || !d->mcp || d->ready)
                return;
        if (mcp_server_refuse(d->mcp, why) < 0) {
                log_error("out of memory: the calls held during the start go unanswered");
                return;
        }
        stdio_refuse_held(d->stdio);
}

/* A check failed (logged, and why is the client's account of it): nothing more is read, what was
 * held is answered with why, and once the answers are written the daemon exits with status 1
 * (2 for a setting), as it always did when the sandbox or the probe failed at start. */
static void daemon_refuse(Daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void daemon_refuse(Daemon *d, const char *fmt, ...) {
        d->checking = false;
        d->refused = true;
        if (d->stdio)
                stdio_stop_reading(d->stdio);
        char why[512];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        daemon_refuse_held(d, why);
}

static void daemon_on_probed(void *userdata, int r) {
        Daemon *d = userdata;
        d->checking = false;
        if (d->shutdown_deadline)
                return; /* stopped during the start (its probes killed): nothing is served any more */
        if (r < 0) {
                log_error_errno(r, "cannot probe the interpreter: %m");
                daemon_refuse(d, "mcp-execd could not start: cannot probe the interpreter: %s", strerror(-r));
                return;
        }
        if (d->mcp) { /* stdio: the session was made before, and holds the calls that came */
                r = mcp_server_release(d->mcp, pyexec_version(d->pyexec), pyexec_packages(d->pyexec));
                if (r < 0) {
                        log_error_errno(r, "cannot set up the MCP session: %m");
                        daemon_refuse(d, "mcp-execd could not start: cannot set up the MCP session: %s",
                                      strerror(-r));
                        return;
                }
        }
        /* From now on a cold run of the default interpreter stages the launcher's bytecode (every
         * RunEnv points at d->launcher_code; its bytes are pyexec's, which outlives the runs). */
        const RunLauncherCode *lc = pyexec_launcher_code(d->pyexec);
        if (lc)
                d->launcher_code = *lc;
        d->ready = true;
        /* What the start allocated and freed (the probes' output, the sandbox's filter compiled by
         * libseccomp) goes back to the kernel: an idle daemon's RSS (issue 16.6). */
        (void) malloc_trim(0);
        daemon_announce(d);
        if (d->stdio) {
                stdio_release(d->stdio);
                /* Over stdio initialize was answered before the checks: fill now, after what was
                 * held; over HTTP the first answer fills the pool. */
                run_pool_refill_later(d->pool);
        }
}

/* The start's checks, after the transport has answered what it could (issue 16.6): the sandbox
 * (the namespace probe and the self-test: a few ms, blocking), the scopes an earlier instance
 * left, then the interpreters' probe, on the loop; daemon_on_probed() ends them. Until then the
 * session holds tools/list and tools/call. */
static void daemon_on_recheck(RingOp *op, int res);

static int daemon_checks_start(Daemon *d) {
        _cleanup_free_ char *reason = NULL;
        d->checking = true;
        if (d->checks_t0 == 0)
                d->checks_t0 = now_usec();
        int r = sandbox_check(d->sandbox, &reason);
        if (r == -EADDRINUSE && now_usec() - d->checks_t0 < SANDBOX_RESERVED_UIDS_SETTLE_USEC) {
                /* Counted only if it lasts (sandbox.h): looked at again in 100 ms. The loop serves
                 * meanwhile: stdin is read and its calls held, so a refusal still answers them. */
                log_debug("the sandbox's check, again in 100 ms: %s", reason ? reason : strerror(-r));
                d->recheck_ts = (struct __kernel_timespec) { .tv_nsec = 100 * 1000 * 1000 };
                d->op_recheck.callback = daemon_on_recheck;
                io_uring_prep_timeout(ring_get_sqe(d->ring, &d->op_recheck), &d->recheck_ts, 0, 0);
                return 0;
        }
        if (r < 0) {
                log_error("refusing to start: the sandbox is not available: %s", reason ? reason : strerror(-r));
                daemon_refuse(d, "mcp-execd could not start: the sandbox is not available: %s",
                              reason ? reason : strerror(-r));
                return r;
        }
        /* MCP_EXEC_PRELOAD is checked in a sandbox, so after the sandbox's own check; a module that
         * does not import is a bad value, refused like one (status 2). */
        r = run_pool_check(d->pool, &reason);
        if (r < 0) {
                if (r == -ENOPKG)
                        log_error("refusing to start: %s", reason ? reason : "MCP_EXEC_PRELOAD cannot be imported");
                else
                        log_error_errno(r, "refusing to start: cannot check MCP_EXEC_PRELOAD: %m");
                d->refused_config = true;
                daemon_refuse(d, "mcp-execd could not start: %s",
                              r == -ENOPKG && reason ? reason : "MCP_EXEC_PRELOAD cannot be checked");
                return r;
        }
        daemon_cgroup_stop_stale(d);
        r = pyexec_probe_start(d->pyexec, daemon_on_probed, d);
        if (r < 0) {
                log_error_errno(r, "cannot probe the interpreter: %m");
                daemon_refuse(d, "mcp-execd could not start: cannot probe the interpreter: %s", strerror(-r));
                return r;
        }
        return 0;
}

static void daemon_on_recheck(RingOp *op, int res) {
        Daemon *d = container_of(op, Daemon, op_recheck);
        if (d->checking && !d->shutdown_deadline && !d->refused)
                (void) daemon_checks_start(d); /* a failure is answered and logged there */
}

static unsigned daemon_py_sessions_count(const void *userdata) {
        return pysessions_count(userdata);
}

/* A session_open naming an interpreter or dependencies goes from the sessions to pyexec, and once
 * prepared back to the sessions: the two folders do not know each other, the daemon joins them. */
static int daemon_py_session_prepare(void *userdata, McpCall *call, void *owner, JobReplyFn reply) {
        return pyexec_session_prepare(userdata, call, owner, reply);
}

static void daemon_py_session_open(void *userdata, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep) {
        pysessions_open_prepared(userdata, call, owner, reply, prep);
}

/* The route table (route.h): the run queue's row is the scheduler's own; each room below says in
 * its vtable which calls it serves, so the order of these rows changes no route, and a call two
 * rooms claim refuses the start. Shutdown asks them in this order. */
static int daemon_routes_setup(Daemon *d) {
        const RouteRoom rooms[] = {
                { &pysessions_route_vtable, d->pysessions },
                { &pyexec_route_vtable, d->pyexec },
        };
        for (size_t i = 0; i < ELEMENTSOF(rooms); i++) {
                int r = scheduler_route(&d->scheduler, rooms[i].vtable, rooms[i].userdata);
                if (r < 0)
                        return log_error_errno(r, "cannot route the calls of %s: %m", rooms[i].vtable->name);
        }
        return 0;
}

/* The scheduler, its run records (structured into the journal when stderr is our journal stream,
 * we are a service; else one line each on stderr) and the transport. */
/* PySessionsConfig.tenant_max: the tenant's sessions= of the tenants loaded now (a reload's new
 * bound holds from the next session_open; sessions already open stay). */
static unsigned daemon_tenant_sessions_max(void *userdata, const char *tenant) {
        Daemon *d = userdata;
        const Tenant *t = tenants_find_name(d->tenants, tenant);
        return t ? t->limits.sessions : 0;
}

/* A run's egress decision, into the journal and the counters (issue 32.3). */
static void daemon_egress_decided(void *userdata, const EgressDecision *e) {
        Daemon *d = userdata;
        if (d->metrics)
                metrics_egress(d->metrics, &(MetricsEgress) { .run_id = e->run_id, .tenant = e->tenant, .host = e->host,
                                                              .port = e->port, .allowed = e->allowed, .reason = e->reason,
                                                              .sent = e->sent, .received = e->received });
}

/* The allowlist of a run of tenant as it starts: the tenant's egress= line, or
 * MCP_EXEC_EGRESS_ALLOW for calls of no tenant and of the tenant default; NULL: no network. */
static const EgressPolicy *daemon_egress_of(void *userdata, const char *tenant) {
        Daemon *d = userdata;
        const Tenant *t = *tenant ? tenants_find_name(d->tenants, tenant) : NULL;
        if (t && t->egress)
                return t->egress;
        return !*tenant || strcmp(tenant, TENANT_NAME_AUTH_TOKEN) == 0 ? d->egress_default : NULL;
}

/* The proxy the runs with an allowlist reach (issue 32): always there (an eventfd, nothing more
 * until a run needs it), so that a reload may give a tenant egress. */
static int daemon_egress_setup(Daemon *d) {
        const Config *cfg = d->config;
        _cleanup_free_ char *err = NULL;
        int r = egress_policy_parse(cfg->egress_allow ?: "", &d->egress_default, &err);
        if (r < 0) /* the configuration checked it already */
                return log_error_errno(r, "MCP_EXEC_EGRESS_ALLOW: %s", err ?: strerror(-r));
        r = egress_proxy_new(&(EgressProxyConfig) { .ring = d->ring, .decided = daemon_egress_decided, .userdata = d },
                             &d->egress);
        if (r < 0)
                return log_error_errno(r, "cannot set up the egress proxy: %m");
        d->env.egress = d->egress;
        if (d->egress_default)
                log_info("egress: runs of no tenant may reach %zu entries of MCP_EXEC_EGRESS_ALLOW through the proxy",
                         egress_policy_count(d->egress_default));
        return 0;
}

/* The scheduler's view of a tenant's line (runs=, queue=, weight=), of the tenants loaded now. */
static bool daemon_tenant_queue_limits(void *userdata, const char *tenant, SchedulerTenantLimits *ret) {
        Daemon *d = userdata;
        const Tenant *t = tenants_find_name(d->tenants, tenant);
        if (!t)
                return false;
        *ret = (SchedulerTenantLimits) { .runs = t->limits.runs,
                                         .queue = t->limits.queue == UINT_MAX ? UINT32_MAX : t->limits.queue,
                                         .weight = t->limits.weight };
        return true;
}

/* DispatchTasksConfig.tenant_max: the tenant's tasks= of the tenants loaded now (tasks kept stay). */
static unsigned daemon_tenant_tasks_max(void *userdata, const char *tenant) {
        Daemon *d = userdata;
        const Tenant *t = tenants_find_name(d->tenants, tenant);
        return t ? t->limits.tasks : UINT_MAX;
}

/* Whether a tenant's line bounds its slice (memory=, pids=, a weight= of its own): only those
 * tenants get one, so that the others keep the ready sandboxes, which wait in the daemon's slice. */
static bool tenant_has_slice(const Tenant *t) {
        return t->limits.memory_max != UINT64_MAX || t->limits.pids_max != UINT64_MAX || t->limits.weight != 100;
}

/* check_environment's auth.limits for the caller's tenant: its line's bounds (null where the line
 * sets none) and where its slice is; without cgroups, that its slice's bounds do not hold. */
static json_t *daemon_tenant_limits_json(void *userdata, const char *tenant) {
        Daemon *d = userdata;
        const Tenant *t = tenants_find_name(d->tenants, tenant);
        if (!t)
                return NULL;
        const TenantLimits *l = &t->limits;
        const char *slice = cgroup_tenant_slice(d->cgroup, tenant);
        const char *slice_bounds = !tenant_has_slice(t) ? NULL
                                   : slice               ? "enforced"
                                                         : "not enforced: no cgroups here (rlimit mode), only the counts hold";
#define COUNT_OR_NULL(v, none) ((v) == (none) ? json_null() : json_integer((json_int_t) (v)))
        return json_pack("{s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:s?, s:s?}", "runs", COUNT_OR_NULL(l->runs, 0u),
                         "queue", COUNT_OR_NULL(l->queue, UINT_MAX), "sessions", COUNT_OR_NULL(l->sessions, 0u),
                         "tasks", COUNT_OR_NULL(l->tasks, UINT_MAX), "weight", (json_int_t) l->weight,
                         "memory_max_bytes", COUNT_OR_NULL(l->memory_max, UINT64_MAX), "pids_max",
                         COUNT_OR_NULL(l->pids_max, UINT64_MAX), "slice", slice, "slice_bounds", slice_bounds);
#undef COUNT_OR_NULL
}

/* HAProxy's agent check (issue 33.4), before the HTTP transport takes the socket systemd passed:
 * a fleet's socket unit passes the agent's too, which is told apart by its address. */
static int daemon_lb_agent_setup(Daemon *d) {
        const Config *cfg = d->config;
        if (!cfg->agent_addr)
                return 0;
        if (cfg->transport == TRANSPORT_STDIO) {
                log_warning("MCP_EXEC_AGENT_ADDR is not served over stdio: a load balancer's instances serve HTTP");
                return 0;
        }
        const char *what = NULL;
        int r = lb_agent_new(d->ring, cfg->agent_addr, daemon_lb_load, d, &d->lb_agent, &what);
        if (r < 0)
                return log_error_errno(r, "agent check on %s (MCP_EXEC_AGENT_ADDR): %s: %m", cfg->agent_addr, what);
        log_info("agent check on %s: each connection gets this instance's free capacity (ready N%%) or drain",
                 cfg->agent_addr);
        return 0;
}

static int daemon_serving_setup(Daemon *d) {
        const Config *cfg = d->config;
        scheduler_init(&d->scheduler, &d->env, cfg->max_concurrent, cfg->queue_max);
        scheduler_set_tenants(&d->scheduler, daemon_tenant_queue_limits, d);
        scheduler_set_egress(&d->scheduler, daemon_egress_of, d);
        pyexec_attach(d->pyexec, &d->scheduler);
        int q = pysessions_new(&(PySessionsConfig) { .env = &d->env, .max = cfg->py_sessions_max,
                                                    .idle_s = cfg->py_session_idle_s,
                                                    .lifetime_s = cfg->py_session_lifetime_s,
                                                    .max_timeout_s = cfg->max_timeout_s, .tag = cfg->instance,
                                                    .prepare = daemon_py_session_prepare,
                                                    .prepare_userdata = d->pyexec,
                                                    .tenant_max = daemon_tenant_sessions_max,
                                                    .tenant_userdata = d,
                                                    .egress_of = daemon_egress_of,
                                                    .egress_userdata = d,
                                                    .keep = d->fdstore_usable &&
                                                            cgroup_backend(d->cgroup) == CGROUP_BACKEND_SYSTEMD },
                               &d->pysessions);
        if (q < 0)
                return log_error_errno(q, "cannot set up the Python sessions: %m");
        pysessions_attach(d->pysessions, &d->scheduler);
        pysessions_adopt(d->pysessions, d->fdstore);
        pyexec_set_py_sessions(d->pyexec, daemon_py_sessions_count, d->pysessions);
        pyexec_set_session_open(d->pyexec, daemon_py_session_open, d->pysessions);
        pyexec_set_tenant_limits(d->pyexec, daemon_tenant_limits_json, d);
        q = daemon_routes_setup(d);
        if (q < 0)
                return q;

        const char *transport = cfg->transport == TRANSPORT_STDIO  ? "stdio"
                                : cfg->transport == TRANSPORT_HTTP ? "http"
                                                                   : "sse";
        int r = metrics_new(PROJECT_VERSION, transport, metrics_stderr_is_journal() ? NULL : stderr, &d->metrics);
        if (r < 0)
                return log_error_errno(r, "cannot set up the metrics: %m");
        scheduler_set_metrics(&d->scheduler, d->metrics);
        DispatchTasksConfig tcfg = {
                .max_total = cfg->tasks_max,
                .max_per_owner = cfg->tasks_per_client,
                .max_bytes = cfg->tasks_max_bytes,
                .ttl_usec = (uint64_t) cfg->task_ttl_s * 1000000u,
                .inline_usec = (uint64_t) cfg->task_inline_ms * 1000u,
                .tag = cfg->instance,
                .tenant_max = daemon_tenant_tasks_max,
                .tenant_userdata = d,
                .keep = d->fdstore_usable,
        };
        r = dispatch_tasks_new(&d->scheduler, &tcfg, &d->tasks);
        if (r < 0)
                return log_error_errno(r, "cannot set up the tasks: %m");
        dispatch_tasks_adopt(d->tasks, d->fdstore);
        fdstore_drop_untaken(d->fdstore);
        d->fdstore = fdstore_free(d->fdstore);

        d->transport_name = cfg->transport == TRANSPORT_STDIO  ? "stdio"
                            : cfg->transport == TRANSPORT_HTTP ? "HTTP (Streamable HTTP and HTTP+SSE)"
                                                               : "HTTP+SSE";
        r = daemon_lb_agent_setup(d);
        if (r < 0)
                return r;
        if (cfg->transport == TRANSPORT_STDIO)
                r = stdio_start(d->ring, &d->scheduler, d->mcp, cfg->max_message_bytes, &d->stdio);
        else
                r = http_start(d->ring, &d->scheduler, d->mcp, cfg, &d->http);
        if (r < 0)
                return log_error_errno(r, "cannot start the %s transport: %m", d->transport_name);
        if (d->stdio)
                stdio_set_tasks(d->stdio, d->tasks);
        else {
                http_set_tasks(d->http, d->tasks);
                http_set_tenants(d->http, d->tenants);
                http_set_oauth(d->http, d->oauth);
        }
        return 0;
}

/* "tenants: 2 from /etc/mcp-execd/tenants, and default (MCP_EXEC_AUTH_TOKEN)". */
static void log_tenants(const Daemon *d, const char *prefix) {
        bool token = d->config->auth_token;
        log_info("%stenants: %zu from %s%s", prefix, tenants_count(d->tenants) - token, d->config->tenants,
                 token ? ", and " TENANT_NAME_AUTH_TOKEN " (MCP_EXEC_AUTH_TOKEN)" : "");
}

/* The tenants, before anything else is made: a file that cannot be used refuses the start, as a
 * bad setting does (status 2). Over stdio the one client is the one caller, with no credential to
 * tell callers apart: nothing is read. */
static int daemon_tenants_setup(Daemon *d) {
        const Config *cfg = d->config;
        if (cfg->transport == TRANSPORT_STDIO) {
                if (cfg->tenants)
                        log_warning("MCP_EXEC_TENANTS is not read over stdio: its one client is its one caller");
                return 0;
        }
        _cleanup_free_ char *err = NULL;
        int r = tenants_load_config(cfg, geteuid(), &d->tenants, &err);
        if (r < 0) {
                log_error("cannot use the tenants file (MCP_EXEC_TENANTS=%s): %s", cfg->tenants ?: "",
                          err ?: strerror(-r));
                return -ENOPKG;
        }
        if (cfg->tenants)
                log_tenants(d, "");
        free(TAKE_PTR(err));
        r = oauth_new(cfg, &d->oauth, &err);
        if (r < 0) {
                log_error("cannot use MCP_EXEC_OAUTH_JWKS=%s: %s", cfg->oauth_jwks ?: "", err ?: strerror(-r));
                return -ENOPKG;
        }
        if (d->oauth)
                log_info("OAuth: access tokens of %s for %s (scope %s, tenant in the claim %s); metadata at %s",
                         cfg->oauth_issuer, cfg->oauth_resource, cfg->oauth_scope, cfg->oauth_tenant_claim,
                         oauth_metadata_url(d->oauth));
        return 0;
}

/* The slices of the tenants that bound one (cgroup_tenants_set()): at start and at each reload.
 * Without cgroups their memory=, pids= and weight='s CPU share cannot hold: a warning, and
 * check_environment says so to each such tenant; their counts (runs=, queue=, …) still hold.
 * Returns what cgroup_tenants_set() returned. */
static int daemon_tenant_slices(Daemon *d, const Tenants *t, const char *prefix) {
        size_t n = 0, all = tenants_count(t);
        _cleanup_free_ CgroupTenant *v = all ? calloc(all, sizeof(*v)) : NULL;
        if (all && !v)
                return log_error_errno(-ENOMEM, "%scannot set up the tenants' slices: %m", prefix);
        for (size_t i = 0; i < all; i++) {
                const Tenant *x = tenants_get(t, i);
                if (tenant_has_slice(x))
                        v[n++] = (CgroupTenant) { .name = x->name, .memory_max_bytes = x->limits.memory_max,
                                                  .pids_max = x->limits.pids_max, .cpu_weight = x->limits.weight };
        }
        _cleanup_free_ char *err = NULL;
        int r = cgroup_tenants_set(d->cgroup, v, n, &err);
        if (r == -EOPNOTSUPP)
                log_warning("%s%zu tenants bound memory, processes or CPU weight, which without cgroups cannot hold "
                            "(MCP_EXEC_CGROUP=none): their runs= queue= sessions= tasks= and queue weight do; %s",
                            prefix, n, err ?: "");
        else if (r < 0)
                log_error("%scannot set up the tenants' slices: %s", prefix, err ?: strerror(-r));
        else if (n > 0)
                log_info("%s%zu tenants in slices of their own (%s backend)", prefix, n, cgroup_backend_name(d->cgroup));
        return r;
}

/* SIGHUP over HTTP (`systemctl reload`): the tenants file again. One that cannot be used keeps the
 * tenants of before, and the log says why. Nothing in flight is touched: a request already let in
 * carries its tenant's name (not a pointer into the old set), and sessions and tasks are found by
 * that name, so a tenant whose line stays keeps them all. */
static void daemon_reload(Daemon *d) {
        const Config *cfg = d->config;
        if (!cfg->tenants) {
                log_info("received HUP: nothing to read again (MCP_EXEC_TENANTS is not set)");
                return;
        }
        notify_reloading(&d->notify);
        _cleanup_(tenants_freep) Tenants *t = NULL;
        _cleanup_free_ char *err = NULL;
        int r = tenants_load_config(cfg, geteuid(), &t, &err);
        if (r < 0)
                log_error("received HUP: the tenants file %s cannot be used, the %zu tenants of before stay: %s",
                          cfg->tenants, tenants_count(d->tenants), err ?: strerror(-r));
        else {
                http_set_tenants(d->http, t);
                (void) daemon_tenant_slices(d, t, "received HUP: ");
                tenants_free(d->tenants);
                d->tenants = TAKE_PTR(t);
                log_tenants(d, "received HUP: ");
        }
        notify_reloaded(&d->notify);
}

int daemon_new(const Config *cfg, Daemon **ret) {
        _cleanup_(daemon_freep) Daemon *d = calloc(1, sizeof(*d));
        if (!d)
                return log_error_errno(-ENOMEM, "cannot set up the daemon: %m");
        d->config = cfg;
        d->state_dir_lock = -EBADF;

        int r = daemon_tenants_setup(d);
        if (r < 0)
                return r;
        r = daemon_cgroup_setup(d);
        if (r < 0)
                return r;
        r = daemon_fdstore_setup(d);
        if (r < 0)
                return r;
        /* A slice that cannot be made refuses the start, with systemd's reason: its tenant's bounds
         * would silently not hold. Without cgroups the bounds are said not to hold, and serving goes on. */
        r = daemon_tenant_slices(d, d->tenants, "");
        if (r < 0 && r != -EOPNOTSUPP)
                return r;

        /* Replies go through the ring; a client that closed its end must not kill us. The signals
         * we stop on are read from the loop (signals.h), never delivered. */
        (void) signal(SIGPIPE, SIG_IGN);
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(-errno, "cannot block signals: %m");

        r = daemon_sandbox_setup(d);
        if (r < 0)
                return r;
        r = daemon_loop_setup(d, &mask);
        if (r < 0)
                return r;

        d->env = (RunEnv) {
                .ring = d->ring,
                .sandbox = d->sandbox,
                .cgroup = d->cgroup,
                .state_dir = d->state_dir,
                .python = d->python,
                .python_name = cfg->python,
                .max_output_bytes = cfg->max_output_bytes,
                .max_return_bytes = cfg->max_return_bytes,
                .memory_max_bytes = cfg->memory_max_bytes,
                .launcher_code = &d->launcher_code,
        };
        r = daemon_egress_setup(d);
        if (r < 0)
                return r;
        r = daemon_pool_setup(d);
        if (r < 0)
                return r;
        /* Interpreters, dependencies, the Python tools. */
        r = pyexec_new(&d->env, cfg, d->cgroup, PROJECT_VERSION, &d->pyexec);
        if (r < 0)
                return r;
        /* Over HTTP nothing is served before the checks have passed: each session is made from the
         * one made here, with what the probe found. Over stdio the transport starts first and
         * answers initialize at once; daemon_run() checks after that. */
        if (cfg->transport != TRANSPORT_STDIO) {
                r = daemon_checks_start(d);
                while (r >= 0 && d->checking)
                        r = ring_run_once(d->ring, 0);
                if (d->refused)
                        return d->refused_config ? -ENOPKG : -ENOTRECOVERABLE;
                if (r < 0)
                        return r;
        }
        r = daemon_session_setup(d);
        if (r < 0)
                return r;
        r = daemon_serving_setup(d);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(d);
        return 0;
}

/* STOPPING=1 and the stop's record, once. */
static void daemon_stopping(Daemon *d, const char *why) {
        if (d->stopping)
                return;
        d->stopping = true;
        metrics_set_runs(d->metrics, d->scheduler.n_running, d->scheduler.n_queued);
        metrics_daemon_stopping(d->metrics, why);
        notify_stopping(&d->notify, why);
}

/* Stops taking calls (stdin is no longer read; HTTP accepts nothing new, streams end after their
 * answers) and kills the running calls, which are answered. */
static void daemon_stop(Daemon *d, const char *name) {
        if (d->checking)
                pyexec_probe_stop(d->pyexec); /* a stop during the start: its record is not made */
        if (!d->drain_deadline)
                log_info("received %s: stopping; running calls are killed and answered", name ?: "a signal");
        if (d->stdio)
                stdio_stop_reading(d->stdio);
        else
                http_stop(d->http);
        char why[160];
        snprintf(why, sizeof(why), "the call did not run: mcp-execd is shutting down (SIG%s) during its start",
                 name ?: "?");
        daemon_refuse_held(d, why); /* stdio, stopped during the start's checks */
        if (d->drain_deadline)
                snprintf(why, sizeof(why),
                         "the run was stopped because mcp-execd is shutting down (SIG%s) and its drain "
                         "(MCP_EXEC_DRAIN_S=%" PRIu32 ") is over",
                         name ?: "?", d->config->drain_s);
        else
                snprintf(why, sizeof(why), "the run was stopped because mcp-execd is shutting down (SIG%s)",
                         name ?: "?");
        if (!d->shutdown_deadline && d->announced && !d->stopping) {
                char sigwhy[32];
                snprintf(sigwhy, sizeof(sigwhy), "SIG%s", name ?: "?");
                daemon_stopping(d, sigwhy);
        }
        scheduler_shutdown(&d->scheduler, why);
        run_pool_stop(d->pool);
        d->shutdown_deadline = now_usec() + SHUTDOWN_DEADLINE_USEC;
}

/* Whether a stop begins with a drain: HTTP (a load balancer's instance; over stdio the one client
 * is what stops us), serving (a stop during the start's checks has nothing to finish), and
 * MCP_EXEC_DRAIN_S set. */
static bool daemon_may_drain(const Daemon *d) {
        return d->http && d->ready && d->config->drain_s > 0;
}

/* The calls: queued or running in the scheduler, or a Python tool's job. */
static bool daemon_calls_busy(const Daemon *d);

/* A signal: with a drain (issue 19.2), new calls are refused with 503 and /health says draining
 * while the calls in flight finish, for at most MCP_EXEC_DRAIN_S; then, or at a second signal, or
 * as soon as nothing is in flight, the stop. Without, the stop at once; a second signal does it
 * again. */
static void daemon_on_signal(Daemon *d) {
        int sig = signals_next(d->signals);
        if (sig == 0)
                return;
        if (sig == SIGHUP && d->http && !d->drain_deadline && !d->shutdown_deadline) {
                daemon_reload(d);
                return;
        }
        /* A stop already begun without a signal (stdin's end): the first signal changes nothing. */
        if (++d->stop_signals <= 1 && d->shutdown_deadline)
                return;
        const char *name = sigabbrev_np(sig);
        if (!d->drain_deadline && !d->shutdown_deadline && daemon_may_drain(d)) {
                d->drain_deadline = now_usec() + (uint64_t) d->config->drain_s * 1000000u;
                d->drain_signal = name;
                log_info("received %s: draining: new requests get 503, the %" PRIu32 " call(s) in flight finish "
                         "within %" PRIu32 " s (MCP_EXEC_DRAIN_S)",
                         name ?: "a signal", scheduler_active(&d->scheduler), d->config->drain_s);
                http_drain(d->http);
                run_pool_stop(d->pool); /* no call will take a ready sandbox any more */
                if (d->announced) {
                        char sigwhy[32];
                        snprintf(sigwhy, sizeof(sigwhy), "SIG%s", name ?: "?");
                        daemon_stopping(d, sigwhy);
                }
                return;
        }
        if (d->drain_deadline)
                log_info("received %s during the drain: stopping now; running calls are killed and answered",
                         name ?: "a signal");
        daemon_stop(d, name);
}

/* During a drain: the stop, once nothing is in flight or the drain's time is over. */
static void daemon_drain_check(Daemon *d) {
        if (!d->drain_deadline || d->shutdown_deadline)
                return;
        bool over = now_usec() >= d->drain_deadline;
        if (!over && daemon_calls_busy(d))
                return;
        if (over)
                log_warning("the drain's %" PRIu32 " s (MCP_EXEC_DRAIN_S) are over with %" PRIu32 " call(s) in flight: "
                            "they are stopped",
                            d->config->drain_s, scheduler_active(&d->scheduler));
        else
                log_info("drained: no call is in flight any more; stopping");
        daemon_stop(d, d->drain_signal);
}

static bool daemon_finished(const Daemon *d) {
        return d->stdio ? stdio_finished(d->stdio) : http_finished(d->http);
}

/* Whether the loop goes on: until the transport is finished, and over stdio until the checks
 * are over too (a client that sends initialize and closes stdin still gets the sandbox checked
 * and the start recorded), unless a signal stops us first. */
static bool daemon_serving(const Daemon *d) {
        if (d->refused)
                return !daemon_finished(d); /* the answers already given are written */
        return !daemon_finished(d) || (d->checking && !d->shutdown_deadline);
}

int daemon_run(Daemon *d) {
        signals_start(d->signals);
        notify_init(&d->notify, d->ring);
        d->running = true;
        daemon_announce(d); /* HTTP: the checks are over */

        int r = 0;
        if (!d->ready) {
                /* stdio: what stdin already holds (the client's initialize, when it wrote it at
                 * once) is answered and its answer handed to the kernel before the checks. A client
                 * writes at once, but on a loaded machine its write may land a moment after we get
                 * here; a check that fails fast then ended the daemon with nothing read, and the
                 * client got no answer at all (seen once in a CI run). So wait for its first bytes,
                 * a little. */
                uint64_t until = now_usec() + DAEMON_FIRST_INPUT_USEC;
                do
                        r = ring_run_once(d->ring, 1000);
                while (r >= 0 && d->stdio && !stdio_got_input(d->stdio) && now_usec() < until);
                if (r >= 0)
                        r = ring_submit(d->ring);
                if (r >= 0)
                        (void) daemon_checks_start(d);
        }
        while (r >= 0 && daemon_serving(d)) {
                r = ring_run_once(d->ring, d->shutdown_deadline || d->drain_deadline ? 100000 : 0);
                if (r < 0) {
                        log_error_errno(r, "the io_uring loop failed: %m");
                        d->gave_up = true;
                        break;
                }
                NotifyStatus st = daemon_status(d);
                notify_status(&d->notify, &st);
                daemon_on_signal(d);
                daemon_drain_check(d);
                if (d->shutdown_deadline && now_usec() > d->shutdown_deadline) {
                        log_warning("shutdown took longer than %u s; exiting anyway", SHUTDOWN_DEADLINE_USEC / 1000000);
                        d->gave_up = true;
                        break;
                }
        }
        if (r < 0 && !d->gave_up) {
                log_error_errno(r, "the io_uring loop failed: %m");
                d->gave_up = true;
        }
        if (d->refused)
                return d->refused_config ? -ENOPKG : -ENOTRECOVERABLE;
        if (d->announced)
                daemon_stopping(d, r < 0                                      ? "loop-failed"
                                   : d->stdio && stdio_client_gone(d->stdio) ? "client-gone"
                                                                              : "end-of-input");
        return r;
}

typedef bool (*DaemonBusyFn)(const Daemon *d);
typedef void (*DaemonNudgeFn)(Daemon *d);

/* Runs the loop while busy(d), until the deadline, calling nudge(d) (if any) before each turn;
 * false when it gave up (the loop failed, or the deadline passed), so that nothing completes into
 * what is freed next. */
static bool daemon_drain(Daemon *d, DaemonBusyFn busy, DaemonNudgeFn nudge, uint64_t deadline) {
        while (busy(d)) {
                uint64_t now = now_usec();
                if (now >= deadline)
                        return false;
                if (nudge)
                        nudge(d);
                if (ring_run_once(d->ring, deadline - now) < 0)
                        return false;
        }
        return true;
}

/* The calls: queued or running in the scheduler, or a Python tool's job. */
static bool daemon_calls_busy(const Daemon *d) {
        return scheduler_active(&d->scheduler) > 0 || (d->pyexec && pyexec_busy(d->pyexec)) ||
               pysessions_busy(d->pysessions);
}

/* The transport's own reads, writes, polls and requests. */
static bool daemon_transport_busy(const Daemon *d) {
        return stdio_io_busy(d->stdio) || http_io_busy(d->http);
}

/* A blocking read of a pipe or tty is not always cancelled at the first request: ask again. */
static void daemon_transport_cancel(Daemon *d) {
        stdio_cancel_io(d->stdio);
}

/* Anything the kernel may still complete: what the owners above left (released runs freeing
 * themselves, cancel requests, the loop's own reads and timers). */
static bool daemon_ring_busy(const Daemon *d) {
        return ring_inflight(d->ring) > 0;
}

Daemon *daemon_free(Daemon *d) {
        if (!d)
                return NULL;
        uint64_t deadline = now_usec() + TEARDOWN_DEADLINE_USEC;
        /* A loop that gave up waits for nothing more: what is in flight is left to the kernel. */
        bool drained = d->ring && !d->gave_up;

        /* 1. The calls finish while everything they use is alive: the transport takes their answers,
         *    the bus places and removes their scopes, the watchdog keeps pinging. Then the
         *    transport's own operations are cancelled and the loop turns until they are back; then it
         *    goes, and the session. */
        if (d->signals)
                signals_stop(d->signals);
        /* Nobody is left to fetch a task's result (stdio's client is gone; a signal already killed
         * every run): the tasks' runs die like the calls'. */
        dispatch_tasks_cancel_all(d->tasks);
        if (drained)
                drained = daemon_drain(d, daemon_calls_busy, NULL, deadline);
        stdio_cancel_io(d->stdio);
        http_cancel_io(d->http);
        if (drained)
                drained = daemon_drain(d, daemon_transport_busy, daemon_transport_cancel, deadline);
        stdio_free(d->stdio);
        http_free(d->http);
        tenants_free(d->tenants); /* after the transport, which borrows them */
        oauth_free(d->oauth);
        d->tasks = dispatch_tasks_free(d->tasks);
        mcp_server_free(d->mcp);
        /* No ready sandbox outlives the daemon (their inits also die with it: PR_SET_PDEATHSIG). */
        run_pool_stop(d->pool);
        pysessions_stop(d->pysessions, "mcp-execd is stopping");

        /* 2. The loop's own operations are cancelled; every operation still in flight completes
         *    while its owner is alive. A drain that gave up leaves them to the kernel: the ring is
         *    closed next and we exit, nothing is freed under a completion that can still run. */
        notify_done(&d->notify);
        lb_agent_stop(d->lb_agent);
        bus_events_stop(&d->bus);
        if (drained)
                drained = daemon_drain(d, daemon_ring_busy, NULL, deadline);
        if (!drained && d->ring)
                log_debug("teardown: %u operation(s) still in flight, left to the kernel", ring_inflight(d->ring));

        /* 3. Reverse order of daemon_new(). */
        /* The sessions before the scheduler: a call they still hold gives its slot back. */
        pysessions_free(d->pysessions);
        metrics_free(d->metrics);
        scheduler_done(&d->scheduler);
        pyexec_free(d->pyexec);
        run_pool_free(d->pool);
        /* A name still being resolved (a resolver thread of glibc's) keeps the proxy: we exit. */
        if (egress_proxy_free(d->egress) < 0)
                log_debug("teardown: the egress proxy still waits for a name being resolved, left to the exit");
        egress_policy_free(d->egress_default);
        signals_free(d->signals);
        lb_agent_free(d->lb_agent);
        ring_free(d->ring);
        free(d->python);
        if (d->state_dir)
                (void) rm_rf(d->state_dir);
        free(d->state_dir);
        safe_close(d->state_dir_lock); /* after the removal: until then it is ours */
        sandbox_free(d->sandbox);
        fdstore_free(d->fdstore);
        cgroup_free(d->cgroup);
        free(d);
        return NULL;
}
