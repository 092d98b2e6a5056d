/* main.c: mcp-execd's entry point. The only place that knows the whole sequence: configuration,
 * the sandbox, the interpreter probe, the session, the loop, and an orderly shutdown. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bus-events.h"
#include "cgroup.h"
#include "cleanup.h"
#include "config.h"
#include "fd-util.h"
#include "http-transport.h"
#include "log.h"
#include "mcp.h"
#include "metrics.h"
#include "notify.h"
#include "project-config.h"
#include "pyexec.h"
#include "ring.h"
#include "run.h"
#include "sandbox.h"
#include "scheduler.h"
#include "stdio-transport.h"
#include "str-util.h"

#define PROBE_TIMEOUT_S 30
#define SHUTDOWN_DEADLINE_USEC (5u * 1000u * 1000u)
/* systemd ends a scope this long after its run's deadline even if we are gone (RuntimeMaxUSec). */
#define CGROUP_BACKSTOP_GRACE_S 10

DEFINE_POINTER_CLEANUP(Cgroup, cgroup_free)

/* Runs inside the sandbox at start: what the exec description promises is what a run really
 * finds. find_spec() does not import, so the probe stays fast. */
static const char probe_code[] =
        "import importlib.util, sys\n"
        "print('version', sys.version.split()[0])\n"
        "found = [n for n, m in [('PyYAML', 'yaml'), ('Jinja2', 'jinja2'), ('Pillow', 'PIL'), ('numpy', 'numpy'),\n"
        "        ('pandas', 'pandas'), ('matplotlib', 'matplotlib')] if importlib.util.find_spec(m)]\n"
        "print('packages', ', '.join(found))\n";

static void help(void) {
        printf("Usage: %s [OPTIONS]\n"
               "\n"
               "MCP server whose exec tool runs Python in a fresh, network-less sandbox and returns its\n"
               "output, exit status and resource use. Speaks MCP over stdio (newline-delimited JSON-RPC).\n"
               "\n"
               "Options:\n"
               "  -h --help       Show this help and exit\n"
               "     --version    Show the version and exit\n"
               "\n"
               "Configuration comes from the environment (see README.md or mcp-execd(8)):\n",
               program_invocation_short_name);
        config_print_help(stdout);
}

static int parse_argv(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        int c;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("%s %s\n", PROJECT_NAME, PROJECT_VERSION);
                        return 0;
                default:
                        fprintf(stderr, "%s: unknown option '%s'; see --help\n", program_invocation_short_name,
                                argv[optind - 1]);
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument '%s'; see --help\n", program_invocation_short_name,
                        argv[optind]);
                return -EINVAL;
        }
        return 1;
}

static void warn_unknown_variables(void) {
        extern char **environ;
        config_warn_unknown(environ);
}

typedef struct Probe {
        bool done;
        char *version;
        char *packages;
        char *error;
} Probe;

static char *probe_field(const char *out, size_t len, const char *key) {
        size_t kl = strlen(key);
        for (const char *p = out; p && p < out + len;) {
                const char *nl = memchr(p, '\n', (size_t) (out + len - p));
                size_t ll = nl ? (size_t) (nl - p) : (size_t) (out + len - p);
                if (ll > kl && strncmp(p, key, kl) == 0 && p[kl] == ' ')
                        return strndup(p + kl + 1, ll - kl - 1);
                p = nl ? nl + 1 : NULL;
        }
        return NULL;
}

static void on_probe_done(Run *run, void *userdata) {
        Probe *p = userdata;
        McpExecResult r;

        p->done = true;
        if (run_error(run)) {
                p->error = strdup(run_error(run));
        } else {
                run_result(run, &r);
                if (r.exit_code != 0 || r.timed_out) {
                        if (asprintf(&p->error, "the interpreter probe ended with exit code %d%s", r.exit_code,
                                     r.timed_out ? " (timed out)" : "") < 0)
                                p->error = NULL;
                } else {
                        p->version = probe_field(r.stdout_data, r.stdout_len, "version");
                        p->packages = probe_field(r.stdout_data, r.stdout_len, "packages");
                }
        }
        run_release(run);
}

static int probe_python(const RunEnv *env, Probe *ret) {
        RunParams params = {
                .code = probe_code,
                .code_len = strlen(probe_code),
                .timeout_s = PROBE_TIMEOUT_S,
        };
        Run *run;
        int r = run_start(env, &params, on_probe_done, ret, &run);
        if (r < 0)
                return r;
        while (!ret->done) {
                r = ring_run_once(env->ring, 0);
                if (r < 0)
                        return r;
        }
        /* Let the run free itself (its last cancelled operations complete). */
        for (int i = 0; i < 10; i++)
                (void) ring_run_once(env->ring, 1000);
        return 0;
}

typedef struct Signals {
        RingOp op;
        int fd;
        struct signalfd_siginfo si;
        int received; /* last signal number, 0 if none */
        int count;
} Signals;

static void on_signal(RingOp *op, int res) {
        Signals *s = container_of(op, Signals, op);
        if (res == (int) sizeof(s->si)) {
                s->received = (int) s->si.ssi_signo;
                s->count++;
        }
}

static void signals_read(Ring *ring, Signals *s) {
        struct io_uring_sqe *sqe = ring_get_sqe(ring, &s->op);
        io_uring_prep_read(sqe, s->fd, &s->si, sizeof(s->si), (uint64_t) -1);
}

static int run_daemon(const Config *cfg) {
        _cleanup_free_ char *python = NULL;
        PyExec *pyexec = NULL; /* issue 8: interpreters, dependencies, the parity tools */
        _cleanup_(metrics_freep) Metrics *metrics = NULL;
        Notify notify = {};
        int r;

        static const CgroupWant wants[] = {
                [CGROUP_MODE_AUTO] = CGROUP_WANT_AUTO,
                [CGROUP_MODE_SYSTEMD] = CGROUP_WANT_SYSTEMD,
                [CGROUP_MODE_CGROUPFS] = CGROUP_WANT_CGROUPFS,
                [CGROUP_MODE_NONE] = CGROUP_WANT_NONE,
        };
        CgroupConfig ccfg = {
                .want = wants[cfg->cgroup],
                .slice = cfg->slice,
                .memory_max_bytes = cfg->memory_max_bytes,
                .pids_max = cfg->pids_max,
                .cpu_quota_percent = cfg->cpu_quota_percent,
                .backstop_grace_s = CGROUP_BACKSTOP_GRACE_S,
        };
        _cleanup_(cgroup_freep) Cgroup *cgroup = NULL;
        _cleanup_free_ char *cgroup_why = NULL;
        r = cgroup_new(&ccfg, &cgroup, &cgroup_why);
        if (r < 0) {
                log_error("refusing to start: MCP_EXEC_CGROUP=%s is not available: %s",
                          cfg->cgroup == CGROUP_MODE_SYSTEMD ? "systemd" : "cgroupfs",
                          cgroup_why ? cgroup_why : strerror(-r));
                return r;
        }
        if (cgroup_backend(cgroup) == CGROUP_BACKEND_NONE) {
                if (cfg->require_cgroup) {
                        log_error("refusing to start: MCP_EXEC_REQUIRE_CGROUP=1, but %s",
                                  cgroup_why ? cgroup_why : "no cgroup backend is available");
                        return -ENOMEDIUM;
                }
                log_warning("%s: memory, process and CPU limits are enforced with rlimits only",
                            cgroup_why ? cgroup_why : "MCP_EXEC_CGROUP=none");
        } else {
                log_info("cgroup backend %s", cgroup_describe(cgroup));
                r = cgroup_stop_stale(cgroup);
                if (r > 0)
                        log_info("stopped %d run scope(s) left by an earlier instance", r);
                else if (r < 0)
                        log_warning_errno(r, "cannot look for stale run scopes: %m, ignoring");
        }

        /* Replies go through the ring; a client that closed its end must not kill us. */
        (void) signal(SIGPIPE, SIG_IGN);

        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(-errno, "cannot block signals: %m");
        Signals sig = { .op.callback = on_signal, .fd = signalfd(-1, &mask, SFD_CLOEXEC) };
        if (sig.fd < 0)
                return log_error_errno(-errno, "cannot create a signalfd: %m");

        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned threads = cfg->cpu_quota_percent ? (cfg->cpu_quota_percent + 99) / 100 : (unsigned) MAX(ncpu, 1L);
        SandboxConfig scfg = {
                .tmp_size_bytes = cfg->tmp_size_bytes,
                .cpu_threads = MAX(threads, 1u),
                .rlimit_as_bytes = cfg->memory_max_bytes == UINT64_MAX ? 0 : cfg->memory_max_bytes,
                .rlimit_nproc = cfg->pids_max == UINT64_MAX ? 0 : cfg->pids_max,
                .rlimit_cpu_sec = (uint64_t) cfg->max_timeout_s + 1,
        };
        Sandbox *sandbox = NULL;
        _cleanup_free_ char *reason = NULL;
        r = sandbox_new(&scfg, &sandbox, &reason);
        if (r < 0) {
                log_error("refusing to start: the sandbox is not available: %s",
                          reason ? reason : strerror(-r));
                close(sig.fd);
                return r;
        }

        /* A private directory for the runs' staging directories: systemd's RuntimeDirectory= when we
         * are a service, else one of our own under $TMPDIR. */
        const char *base = getenv("RUNTIME_DIRECTORY") ?: getenv("TMPDIR") ?: "/tmp";
        _cleanup_free_ char *state_dir = NULL;
        if (asprintf(&state_dir, "%s/mcp-execd.XXXXXX", base) < 0 || !mkdtemp(state_dir)) {
                r = log_error_errno(-errno, "cannot create a private directory in %s: %m", base);
                sandbox_free(sandbox);
                close(sig.fd);
                return r;
        }

        Ring ring = {};
        r = ring_init(&ring, 256);
        if (r < 0) {
                log_error_errno(r, "cannot set up io_uring: %m");
                goto out_dir;
        }

        python = python_resolve(cfg->python);
        if (!python)
                log_warning("interpreter '%s' not found in " SANDBOX_PATH " (MCP_EXEC_PYTHON); every run will fail "
                            "with a tool error until it is installed", cfg->python);

        BusEvents bus;
        bus_events_start(&bus, &ring, cgroup);

        RunEnv env = {
                .ring = &ring,
                .sandbox = sandbox,
                .cgroup = cgroup,
                .state_dir = state_dir,
                .python = python,
                .python_name = cfg->python,
                .max_output_bytes = cfg->max_output_bytes,
                .max_return_bytes = cfg->max_return_bytes,
        };

        Probe probe = {};
        if (python) {
                r = probe_python(&env, &probe);
                if (r < 0) {
                        log_error_errno(r, "cannot probe the interpreter: %m");
                        goto out_ring;
                }
                if (probe.error)
                        log_warning("the interpreter probe failed: %s", probe.error);
                else
                        log_info("python %s in the sandbox; packages: %s", probe.version ?: "?",
                                 probe.packages && *probe.packages ? probe.packages : "none");
        }
        r = pyexec_setup(&env, cfg, cgroup, PROJECT_VERSION, &pyexec);
        if (r < 0)
                goto out_ring;

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
                .python_version = probe.version,
                .packages = probe.packages,
                .limits_by = cgroup_backend(cgroup) == CGROUP_BACKEND_NONE ? "rlimit" : "cgroup",
                .pythons = pyexec_names(pyexec),
                .sources = pyexec_sources(pyexec),
                .max_input_bytes = cfg->max_input_bytes,
                .max_return_bytes = cfg->max_return_bytes,
        };
        McpServer *mcp = mcp_server_new(&limits, PROJECT_VERSION);
        free(probe.version);
        free(probe.packages);
        free(probe.error);
        if (!mcp) {
                r = log_error_errno(-ENOMEM, "cannot set up the MCP session: %m");
                goto out_ring;
        }

        Scheduler scheduler;
        scheduler_init(&scheduler, &env, cfg->max_concurrent, cfg->queue_max);
        pyexec_attach(pyexec, &scheduler);

        /* Run records: structured into the journal when stderr is our journal stream (we are a
         * service), else one line each on stderr (metrics_stderr_is_journal()). */
        r = metrics_new(PROJECT_VERSION,
                        cfg->transport == TRANSPORT_STDIO ? "stdio" : cfg->transport == TRANSPORT_HTTP ? "http" : "sse",
                        metrics_stderr_is_journal() ? NULL : stderr, &metrics);
        if (r < 0) {
                log_error_errno(r, "cannot set up the metrics: %m");
                goto out_mcp;
        }
        scheduler_set_metrics(&scheduler, metrics);

        /* stdio: mcp is the one session. HTTP: each session gets its own, made like mcp. */
        Stdio *stdio = NULL;
        Http *http = NULL;
        const char *transport = cfg->transport == TRANSPORT_STDIO ? "stdio"
                                : cfg->transport == TRANSPORT_HTTP ? "HTTP (Streamable HTTP and HTTP+SSE)"
                                                                   : "HTTP+SSE";
        if (cfg->transport == TRANSPORT_STDIO)
                r = stdio_start(&ring, &scheduler, mcp, cfg->max_message_bytes, &stdio);
        else
                r = http_start(&ring, &scheduler, mcp, cfg, &http);
        if (r < 0) {
                log_error_errno(r, "cannot start the %s transport: %m", transport);
                goto out_mcp;
        }
        signals_read(&ring, &sig);
        log_info("%s %s serving MCP over %s (max %u concurrent runs, queue %u)", PROJECT_NAME,
                 PROJECT_VERSION, transport, cfg->max_concurrent, cfg->queue_max);

        metrics_daemon_started(metrics, &(MetricsStart) { .limits = limits.limits_by,
                                                          .max_concurrent = cfg->max_concurrent,
                                                          .queue_max = cfg->queue_max });
        notify_init(&notify, &ring);
        notify_ready(&notify, 0, 0, 0);

        uint64_t shutdown_deadline = 0;
        while (stdio ? !stdio_finished(stdio) : !http_finished(http)) {
                r = ring_run_once(&ring, shutdown_deadline ? 100000 : 0);
                if (r < 0) {
                        log_error_errno(r, "the io_uring loop failed: %m");
                        break;
                }
                notify_status(&notify, scheduler.n_running, scheduler.n_queued, scheduler.n_finished);
                if (sig.received && !sig.op.busy) {
                        if (sig.count > 1 || !shutdown_deadline) {
                                log_info("received %s: stopping; running calls are killed and answered",
                                         sigabbrev_np(sig.received) ?: "a signal");
                                if (stdio)
                                        stdio_stop_reading(stdio);
                                else
                                        http_stop(http); /* stop accepting; streams end after their answers */
                                char why[128];
                                snprintf(why, sizeof(why),
                                         "the run was stopped because mcp-execd is shutting down (SIG%s)",
                                         sigabbrev_np(sig.received) ?: "?");
                                if (!shutdown_deadline) {
                                        char sigwhy[32];
                                        snprintf(sigwhy, sizeof(sigwhy), "SIG%s", sigabbrev_np(sig.received) ?: "?");
                                        metrics_set_runs(metrics, scheduler.n_running, scheduler.n_queued);
                                        metrics_daemon_stopping(metrics, sigwhy);
                                        notify_stopping(&notify, sigwhy);
                                }
                                scheduler_shutdown(&scheduler, why);
                                shutdown_deadline = now_usec() + SHUTDOWN_DEADLINE_USEC;
                        }
                        signals_read(&ring, &sig);
                }
                if (shutdown_deadline && now_usec() > shutdown_deadline) {
                        log_warning("shutdown took longer than %u s; exiting anyway",
                                    SHUTDOWN_DEADLINE_USEC / 1000000);
                        break;
                }
        }
        if (!notify.stopping) {
                const char *why = r < 0 ? "loop-failed" : stdio && stdio_client_gone(stdio) ? "client-gone" : "end-of-input";
                metrics_set_runs(metrics, scheduler.n_running, scheduler.n_queued);
                metrics_daemon_stopping(metrics, why);
                notify_stopping(&notify, why);
        }
        r = 0;
        ring_cancel(&ring, &sig.op);
        stdio_free(stdio);
        http_free(http);

out_mcp:
        mcp_server_free(mcp);
        scheduler_done(&scheduler);
out_ring:
        pyexec_free(pyexec);
        notify_done(&notify);
        for (int i = 0; i < 20 && notify.op_watchdog.busy; i++)
                (void) ring_run_once(&ring, 10000);
        bus_events_stop(&bus);
        for (int i = 0; i < 20 && (sig.op.busy || bus.op_poll.busy || bus.op_timer.busy); i++)
                (void) ring_run_once(&ring, 10000);
        ring_done(&ring);
out_dir:
        (void) rm_rf(state_dir);
        sandbox_free(sandbox);
        close(sig.fd);
        return r;
}

int main(int argc, char **argv) {
        int r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        if (getenv("MCP_EXECD_DEBUG"))
                log_max_level = LOG_DEBUG;

        Config cfg;
        _cleanup_free_ char *problem = NULL;
        r = config_load(getenv, &cfg, &problem);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", program_invocation_short_name,
                        problem ? problem : strerror(-r));
                return 2;
        }
        warn_unknown_variables();

        r = run_daemon(&cfg);
        config_done(&cfg);
        return r < 0 ? 1 : 0;
}
