/* run.c: the run state machine. A run is spawned held, placed in its cgroup, released, fed and
 * collected; it ends when no process of it is left and both output pipes are at EOF (or a bounded
 * grace after a kill has passed); only then is it answered. No process is left when the init said
 * so with Python's exit (SANDBOX_REPORT_ALONE), or else once the init has exited (the kernel kills
 * the rest of its PID namespace); in the first case the init's exit and the namespaces' teardown
 * come after the answer, and the run is freed only once its init is reaped. How it ended is
 * decided from our own flags and the cgroup's counters, never from the exit signal alone (an OOM
 * kill and a deadline kill are both SIGKILL). The process itself (its pidfd, pipes, scope or cgroup,
 * staging directory, timer and reaping) is a Proc (proc.h), a cold run's own or a ready sandbox's;
 * this file decides what its events mean for the run. */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "log.h"
#include "output.h"
#include "outputs.h"
#include "proc.h"
#include "py-launch.h"
#include "run-internal.h"
#include "run.h"
#include "spawn.h"
#include "str-util.h"

#define RUN_SCRIPT_NAME EXEC_SCRIPT_NAME
/* After a kill the kernel tears the run down in milliseconds; this bounds how long a reply can lag
 * behind the deadline if something does not go away. */
#define RUN_KILL_GRACE_USEC (2u * 1000u * 1000u)
/* How long systemd may take to make a run's scope (60-500 ms measured under emulation). */
#define RUN_PLACE_TIMEOUT_USEC (60u * 1000u * 1000u)

typedef enum RunPhase {
        RUN_STARTING, /* failed before spawning: done is called from the loop */
        RUN_RUNNING,  /* spawned: placing, released, or ending */
        RUN_FINISHED, /* done called */
} RunPhase;

struct Run {
        RunEnv env;
        char id[17];
        RunPhase phase;
        RunDoneFn done;
        void *userdata;
        bool owner_released; /* the owner gave the run back */
        bool in_done;        /* done() is running: a run_release() from it must not free the run
                              * under the completion handler that called done() */

        char *code;
        size_t code_len;
        char *stdin_data;
        size_t stdin_len;
        uint32_t timeout_s;
        uint64_t queue_ms;
        char *python;  /* RunParams.python, or NULL */
        char *env_dir; /* RunParams.env_dir, or NULL */
        bool user_code; /* RunParams.user_code: the launcher runs main.py; outputs/ is read back */
        bool own_slice; /* RunParams.tenant has a slice of its own: no ready sandbox is in it */
        /* Issue 32: the run's egress (RunParams.egress set): served by env.egress while it runs;
         * its account, copied when it ends, is what the result says. */
        bool egress_wanted;
        EgressRun *egress;
        EgressAccount egress_account; /* copied when it ended */
        ExecEgress egress_result;     /* what the result says, pointing into egress_account */
        ExecEgressHost *egress_hosts;
        Outputs outputs;

        /* Served by a ready sandbox (pool.c): released when its message is written on stdin. */
        bool warm;
        uint64_t preload_utime_usec, preload_stime_usec; /* the launcher's CPU when it became ready */
        uint64_t memory_at_start_bytes;                  /* its resident memory then */
        ExecAccount preload_account;                     /* payload/'s kernel account then (cgroup) */

        /* The sandboxed process: its pidfd, pipes, scope or cgroup, staging directory and one timer,
         * which is the placement's deadline while placing, the run's deadline once released, and
         * the grace once killed. NULL until made (a start that failed before). */
        Proc *proc;
        bool child_released; /* Python may run */
        bool exit_reported;  /* the init sent EXITED */
        bool payload_gone;   /* ... with SANDBOX_REPORT_ALONE: no process of the run is left */
        int wait_status;
        SandboxReport report; /* the EXITED one: the init's rusage */
        CgroupStats stats;
        bool stats_read;
        char *error;         /* infrastructure failure, for a tool error */

        bool timed_out;
        bool killed;         /* by us: deadline, cancellation or shutdown */
        bool init_killed;
        bool grace_over;
        uint64_t t_spawn, t_placed, t_release, t_end;
        /* Only for the debug log of the cold path's steps (issue 16.5), CLOCK_MONOTONIC. */
        uint64_t t_call, t_staged, t_started, t_collected, t_eof, t_init_exit;

        Output output;

        RunEnd end; /* decided when it is over */

        RingOp op_start;
};

static const ProcHandler run_proc_handler;
static void run_maybe_finish(Run *run);
static void run_steps_log(const Run *run, const char *when);
static void run_go(Run *run);
static void run_egress_snapshot(Run *run);

static void run_fail(Run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_fail(Run *run, const char *fmt, ...) {
        if (run->error)
                return;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&run->error, fmt, ap) < 0)
                run->error = NULL;
        va_end(ap);
        if (!run->error)
                run->error = strdup("internal error (out of memory)");
}

static bool run_ops_busy(const Run *run) {
        return run->op_start.busy || (run->proc && proc_busy(run->proc));
}

static void run_free(Run *run) {
        /* A live init is killed and reaped first: its PID namespace, hence every process of the
         * run, is gone before its cgroup and staging directory are. */
        egress_run_free(run->egress); /* before its listener's namespace goes: nothing more is accepted */
        proc_free(run->proc);
        output_done(&run->output);
        egress_account_done(&run->egress_account);
        free(run->egress_hosts);
        outputs_done(&run->outputs);
        free(run->code);
        free(run->stdin_data);
        free(run->python);
        free(run->env_dir);
        free(run->error);
        free(run);
}
DEFINE_POINTER_CLEANUP(Run, run_free)

/* Frees the run once the owner released it and no kernel operation still references it. */
static void run_maybe_free(Run *run) {
        if (run->owner_released && run->phase == RUN_FINISHED && !run_ops_busy(run))
                run_free(run);
}

static bool run_init_exited(const Run *run) {
        return run->proc && proc_init_exited(run->proc);
}

static void run_kill_init(Run *run) {
        if (!run->proc || !proc_spawned(run->proc) || proc_init_exited(run->proc) || run->init_killed)
                return;
        run->init_killed = true;
        int r = proc_kill_init(run->proc);
        if (r < 0 && r != -ESRCH)
                log_warning_errno(r, "run %s: cannot kill its init: %m", run->id);
}

static void run_on_output(Proc *p, int stream, const char *buf, ssize_t n, void *userdata) {
        Run *run = userdata;

        if (n > 0 && run->phase == RUN_RUNNING) {
                if (output_add(&run->output, stream, buf, (size_t) n) < 0)
                        run_fail(run, "out of memory while collecting output");
                proc_read(p, stream, SIZE_MAX);
                return;
        }
        /* EOF, an error, or the run is over (a cancelled read). */
        if (proc_eof(p, 0) && proc_eof(p, 1) && !run->t_eof)
                run->t_eof = now_usec();
        run_maybe_finish(run);
        run_maybe_free(run);
}

static void run_on_written(Proc *p, int error, void *userdata) {
        /* All written, or the code stopped reading (EPIPE: SIGPIPE is ignored): stdin is closed,
         * EOF for the code. */
        run_maybe_free(userdata);
}

static void run_on_settled(Proc *p, void *userdata) {
        run_maybe_free(userdata);
}

/* Python is gone: the counters are final (up to leftovers, which die now), the init may go (now,
 * or after the answer when nothing of the run is left). Its outputs/ is read first, through the
 * run's root, which lives as long as the init. */
static void run_collect(Run *run) {
        if (run->user_code && proc_spawned(run->proc)) {
                int r = run_outputs_read(&run->env, run->proc, &run->outputs);
                if (r < 0)
                        log_warning_errno(r, "run %s: cannot read back its outputs: %m", run->id);
        }
        /* Whatever the code left running in the background ends with it. */
        if (proc_kill_payload(run->proc) != -EBADF) {
                int r = proc_read_stats(run->proc, &run->stats);
                if (r < 0)
                        log_warning_errno(r, "run %s: cannot read its cgroup counters: %m", run->id);
                else
                        run->stats_read = true;
        }
        run->t_collected = now_usec();
        if (!run->payload_gone)
                proc_let_go(run->proc);
}

static void run_on_report(Proc *p, const SandboxReport *report, void *userdata) {
        Run *run = userdata;

        if (report && run->phase == RUN_RUNNING) {
                switch (report->kind) {
                case SANDBOX_REPORT_STARTED:
                        /* Python runs (the proc removed the staging directory, copied in). */
                        run->t_started = now_usec();
                        proc_watch_reports(p);
                        return;
                case SANDBOX_REPORT_EXITED:
                        run->report = *report;
                        run->exit_reported = true;
                        run->payload_gone = (report->flags & SANDBOX_REPORT_ALONE) != 0;
                        run->wait_status = report->value;
                        if (!run->t_end)
                                run->t_end = now_usec();
                        run_collect(run);
                        break;
                case SANDBOX_REPORT_FAILED:
                        if (report->value == ENOENT && strncmp(report->detail, "execve", 6) == 0)
                                run_fail(run, "the interpreter %s could not be started inside the sandbox: %s "
                                              "(MCP_EXEC_PYTHON=%s)", run->env.python, strerror(ENOENT),
                                         run->env.python_name);
                        else
                                run_fail(run, "the sandbox could not start the run: %s: %s",
                                         report->detail, strerror(report->value));
                        proc_let_go(p);
                        break;
                default:
                        break;
                }
        }
        run_maybe_finish(run);
        run_maybe_free(run);
}

static void run_on_exited(Proc *p, const siginfo_t *si, void *userdata) {
        Run *run = userdata;

        if (!si) {
                /* Cancelled: the run is over without its init (run_free kills and reaps it). */
                run_maybe_free(run);
                return;
        }
        run->t_init_exit = now_usec();
        if (run->phase != RUN_RUNNING) {
                /* Answered already (payload_gone): the init is reaped now, and the run may go. */
                if (log_max_level >= LOG_DEBUG)
                        run_steps_log(run, "reaped");
                run_maybe_free(run);
                return;
        }
        if (!run->exit_reported && !run->killed && !run->error)
                run_fail(run, "the run's init ended unexpectedly (%s %d)",
                         si->si_code == CLD_EXITED ? "exit status" : "signal", si->si_status);
        if (!run->t_end)
                run->t_end = now_usec();
        run_maybe_finish(run);
        run_maybe_free(run);
}

/* systemd never finished the run's scope (a lost JobRemoved, a manager that hangs): give up. */
static void run_place_timeout(Run *run) {
        proc_place_cancel(run->proc);
        if (!run->killed)
                run_fail(run, "systemd did not create the run's scope within %u s; the run was not started",
                         RUN_PLACE_TIMEOUT_USEC / 1000000u);
        run->killed = true;
        run_kill_init(run);
        proc_timer_arm(run->proc, RUN_KILL_GRACE_USEC);
}

static void run_grace_over(Run *run) {
        if (!run_init_exited(run) && !run->init_killed) {
                /* cgroup.kill did not bring Python's exit report: end the namespace. */
                run_kill_init(run);
                proc_timer_arm(run->proc, RUN_KILL_GRACE_USEC);
                return;
        }
        /* The grace is over: answer with what we have. */
        run->grace_over = true;
        run_maybe_finish(run);
        run_maybe_free(run);
}

/* The one timer: the placement's deadline while placing, the grace once killed, else the run's. */
static void run_on_timer(Proc *p, void *userdata) {
        Run *run = userdata;

        if (run->phase != RUN_RUNNING) {
                run_maybe_free(run);
                return;
        }
        if (proc_placing(p))
                run_place_timeout(run);
        else if (run->killed)
                run_grace_over(run);
        else {
                /* The deadline: the flag is set before the kill, so the kill's SIGKILL is read as a
                 * timeout, not as an OOM or a crash. */
                run->timed_out = !run->exit_reported;
                run_kill(run);
        }
}

void run_kill(Run *run) {
        if (run->phase != RUN_RUNNING || run->killed)
                return;
        run->killed = true;
        if (run->child_released && !run->t_end)
                run->t_end = now_usec();

        /* With a cgroup, kill one level down: payload/ goes, the init and the counters stay for the
         * accounting reads (a whole-scope kill loses them within ~30 ms). Otherwise kill the init:
         * the kernel ends its PID namespace with it. */
        int r = -EBADF;
        if (run->child_released && !run->exit_reported) {
                r = proc_kill_payload(run->proc);
                if (r < 0 && r != -EBADF)
                        log_warning_errno(r, "run %s: cannot write cgroup.kill: %m; killing its init", run->id);
        }
        /* While systemd makes the scope the proc keeps the init alive (proc_kill_init()): the kill
         * follows the placement, or its deadline. */
        if (r < 0)
                run_kill_init(run);
        if (!proc_placing(run->proc))
                proc_timer_arm(run->proc, RUN_KILL_GRACE_USEC); /* instead of the deadline */
}

/* ms from the call to t, for the step log; -1 when the step did not happen (yet). */
static double run_step_ms(const Run *run, uint64_t t) {
        return t && run->t_call && t >= run->t_call ? (double) (t - run->t_call) / 1000.0 : -1.0;
}

/* One debug line per run with the time of each step from run_start() (MCP_EXECD_DEBUG=1; read by
 * bench/steps.py, see bench/README.md, "The cold path, step by step"). */
static void run_steps_log(const Run *run, const char *when) {
        log_debug("run %s steps %s (ms from the call): staged %.3f spawned %.3f released %.3f "
                  "started %.3f exited %.3f collected %.3f eof %.3f init-reaped %.3f now %.3f warm %d "
                  "init %d call-at-usec %" PRIu64,
                  run->id, when, run_step_ms(run, run->t_staged), run_step_ms(run, run->t_spawn),
                  run_step_ms(run, run->t_release), run_step_ms(run, run->t_started),
                  run_step_ms(run, run->t_end), run_step_ms(run, run->t_collected),
                  run_step_ms(run, run->t_eof), run_step_ms(run, run->t_init_exit),
                  run_step_ms(run, now_usec()), run->warm, run->proc ? (int) proc_pid(run->proc) : 0,
                  run->t_call);
}

/* The run is over: how it ended is decided now, from what is final, and done() is called. */
static void run_finish(Run *run) {
        RunEndFacts f = {
                .timed_out = run->timed_out,
                .exit_reported = run->exit_reported,
                .wait_status = run->wait_status,
                .stats = run->stats_read ? &run->stats : NULL,
                .utime_usec = run->report.utime_usec,
                .stime_usec = run->report.stime_usec,
                .maxrss_bytes = run->report.maxrss_bytes,
                .preload_utime_usec = run->preload_utime_usec,
                .preload_stime_usec = run->preload_stime_usec,
                .memory_at_start_bytes = run->memory_at_start_bytes,
                .preload_account = run->warm ? &run->preload_account : NULL,
        };
        run_end_decide(&f, &run->end);
        /* Its connections end with it (the proxy tells each decision); what they did is kept. */
        run_egress_snapshot(run);
        egress_run_free(TAKE_PTR(run->egress));
        /* Nothing is added once the phase leaves RUN_RUNNING (on_stream). On ENOMEM the reply
         * encoder still repairs the streams; only the cap may then be passed by a few bytes. */
        if (output_finish(&run->output) < 0)
                log_warning("run %s: out of memory holding its output to the cap in UTF-8 bytes", run->id);
        run->phase = RUN_FINISHED;
        if (log_max_level >= LOG_DEBUG)
                run_steps_log(run, "answer");
        /* Every caller calls run_maybe_free() next, which frees a run released by done(). */
        run->in_done = true;
        run->done(run, run->userdata);
        run->in_done = false;
}

static void run_maybe_finish(Run *run) {
        if (run->phase != RUN_RUNNING)
                return;
        Proc *p = run->proc;
        bool streams_done = proc_eof(p, 0) && proc_eof(p, 1);
        bool payload_over = proc_init_exited(p) || (run->payload_gone && !proc_placing(p));
        if (!run->grace_over && !(payload_over && streams_done))
                return;

        /* Whatever is still in flight is cancelled; its CQE frees nothing but is awaited. The
         * pidfd's watch stays while the init is alive (payload_gone): run_on_exited() reaps it after the
         * answer, and the run is freed only then (run_ops_busy()). */
        proc_cancel(p, PROC_OP_TIMER | PROC_OP_STDIN | PROC_OP_REPORTS | PROC_OP_STREAMS |
                               (proc_init_exited(p) || run->grace_over ? PROC_OP_EXIT : 0));
        if (run->grace_over && !proc_init_exited(p) && !run->error)
                run_fail(run, "the run did not end within %u ms of being killed", 2 * RUN_KILL_GRACE_USEC / 1000);
        run_finish(run);
        if (run->payload_gone && !proc_init_exited(p))
                proc_let_go_later(p); /* behind the answer, queued by done() */
}

static void on_start_failed(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_start);
        run_finish(run);
        run_maybe_free(run);
}

/* An input file at its relative path below dfd (names validated by mcp/: no absolute path, no
 * . or .., no empty segment), its directories made on the way. */
static int run_stage_file(int dfd, const ExecInputFile *f) {
        char path[EXEC_FILE_NAME_MAX_BYTES + 1];
        if (strlen(f->name) >= sizeof(path))
                return -ENAMETOOLONG;
        strcpy(path, f->name);
        _cleanup_close_ int cur = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        char *seg = path;
        for (char *slash; (slash = strchr(seg, '/')); seg = slash + 1) {
                *slash = '\0';
                if (mkdirat(cur, seg, 0755) < 0 && errno != EEXIST)
                        return -errno;
                int next = openat(cur, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return -errno;
                close(cur);
                cur = next;
        }
        return fd_write_file_at(cur, seg, f->data, f->len, 0644);
}

static int run_stage(Run *run, const RunParams *p) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/run-%s", run->env.state_dir, run->id) < 0)
                return -ENOMEM;
        /* Private: the init reads it with our uid and copies it into the run's own tmpfs. */
        _cleanup_close_ int dfd = proc_staging_make(run->proc, path);
        if (dfd < 0)
                return dfd;
        for (size_t i = 0; i < p->n_files; i++) {
                int r = run_stage_file(dfd, &p->files[i]);
                if (r < 0)
                        return r;
        }
        if (run->user_code) {
                /* Bytecode only for the interpreter that compiled it (its magic number and marshal
                 * format are its own); the file keeps its name: Python knows bytecode by its magic. */
                const RunLauncherCode *lc = run->env.launcher_code;
                bool pyc = lc && lc->pyc && run->env.python && (!run->python || strcmp(run->python, run->env.python) == 0);
                int r = pyc ? fd_write_file_at(dfd, EXEC_LAUNCHER_NAME, lc->pyc, lc->pyc_len, 0600)
                            : fd_write_file_at(dfd, EXEC_LAUNCHER_NAME, py_launch, strlen(py_launch), 0600);
                if (r < 0)
                        return r;
        }
        return fd_write_file_at(dfd, RUN_SCRIPT_NAME, run->code, run->code_len, 0600);
}

/* Whether this run may be served by a ready sandbox: the caller's code, with the default
 * interpreter and no dependency environment (every backend: the pool makes each ready sandbox's
 * scope or cgroup with the runs' limits). */
static bool run_may_be_warm(const Run *run) {
        return run->env.pool && run->user_code && !run->env_dir && !run->own_slice && !run->egress_wanted &&
               (!run->python || (run->env.python && strcmp(run->python, run->env.python) == 0));
}

/* Takes a ready sandbox, if one is there, and makes the run's stdin the message (main.py and the
 * input files) followed by the caller's stdin. Returns 1 when taken, 0 when the run is to be cold
 * (none ready, or no memory for the message: the cold path needs less at once). */
static int run_take_ready(Run *run, const RunParams *p) {
        if (!run_may_be_warm(run))
                return 0;
        size_t len;
        _cleanup_free_ char *buf = run_launcher_message(RUN_SCRIPT_NAME, run->code, run->code_len, p->files,
                                                        p->n_files, run->stdin_data, run->stdin_len, &len);
        if (!buf)
                return 0; /* the cold path copies less at once */
        RunReady ready;
        if (run_pool_take(run->env.pool, &ready) < 0)
                return 0;
        run->warm = true;
        /* The run is the ready sandbox's: its id names its scope (the journal record's unit). */
        run->proc = ready.proc;
        proc_set_handler(run->proc, &run_proc_handler, run);
        memcpy(run->id, proc_id(run->proc), sizeof(run->id));
        run->preload_utime_usec = ready.preload_utime_usec;
        run->preload_stime_usec = ready.preload_stime_usec;
        run->memory_at_start_bytes = ready.rss_bytes;
        run->preload_account = ready.preload_account;

        free(run->stdin_data);
        run->stdin_data = TAKE_PTR(buf);
        run->stdin_len = len;
        return 1;
}

/* Python may start: release the init (with the payload cgroup), feed stdin, start the clock. */
static void run_go(Run *run) {
        /* A ready sandbox's init was released by the pool: its launcher waits for stdin. */
        int r = run->warm ? 0 : proc_release(run->proc);
        if (r < 0) {
                run_fail(run, "cannot release the run's init: %s", strerror(-r));
                run_kill_init(run);
                return;
        }
        run->child_released = true;
        run->t_release = now_usec();
        if (run->stdin_len > 0)
                proc_write(run->proc, run->stdin_data, run->stdin_len, true);
        else
                proc_stdin_close(run->proc);
        proc_timer_arm(run->proc, (uint64_t) run->timeout_s * 1000000u);
}

static void run_on_placed(Proc *p, int error, const char *message, void *userdata) {
        Run *run = userdata;

        run->t_placed = now_usec();
        if (run->phase != RUN_RUNNING)
                return;
        if (run->killed) {
                /* Cancelled (or shut down) while waiting for its scope: the deferred kill is done
                 * (proc_kill_init()), its grace starts. */
                proc_timer_arm(p, RUN_KILL_GRACE_USEC);
                return;
        }
        proc_timer_clear(p); /* the placement's deadline */
        if (error < 0) {
                run_fail(run, "%s", message ? message : "cannot place the run in its cgroup");
                run_kill_init(run);
                return;
        }
        run_go(run);
}

static int run_spawn_failed(Run *run, int r) {
        /* EAGAIN from clone: a process limit of the daemon itself, not of the run. */
        run_fail(run, "cannot start the sandbox: %s%s", strerror(-r),
                 r == -EAGAIN ? " (the daemon is at a process limit: RLIMIT_NPROC of its user, or its cgroup's "
                                "pids.max; try again later)" : "");
        return r;
}

static int run_spawn(Run *run, const RunParams *p) {
        int r = proc_spawn(run->proc, &(ProcSpawn) {
                .python = run->python ? run->python : run->env.python,
                .env_dir = run->env_dir,
                .script = run->user_code ? EXEC_LAUNCHER_NAME : RUN_SCRIPT_NAME,
                .egress_port = run->egress_wanted ? EGRESS_PROXY_PORT : 0,
        });
        if (r < 0)
                return run_spawn_failed(run, r);
        run->t_spawn = now_usec();
        if (run->egress_wanted) {
                /* The listener in the run's namespace is the proxy's from now on. */
                r = egress_run_new(run->env.egress, proc_take_egress_fd(run->proc), p->egress, run->id, p->tenant,
                                   &run->egress);
                if (r < 0) {
                        run_fail(run, "cannot serve the run's egress: %s", strerror(-r));
                        return r;
                }
        }
        return 0;
}

/* The egress account as the result says it: copied, since the proxy's goes with the run's. */
static void run_egress_snapshot(Run *run) {
        if (!run->egress)
                return;
        if (egress_account_copy(egress_run_account(run->egress), &run->egress_account) < 0 ||
            egress_account_since(&run->egress_account, &(EgressAccount) {}, &run->egress_result, &run->egress_hosts) < 0) {
                /* the totals still hold; the list could not be kept */
                const EgressAccount *a = egress_run_account(run->egress);
                run->egress_result = (ExecEgress) { .sent = a->sent, .received = a->received, .connections = a->connections,
                                                    .denied = a->denied, .hosts_truncated = true };
        }
}

static const ProcHandler run_proc_handler = {
        .placed = run_on_placed,
        .report = run_on_report,
        .exited = run_on_exited,
        .output = run_on_output,
        .written = run_on_written,
        .timer = run_on_timer,
        .settled = run_on_settled,
};

int run_start(const RunEnv *env, const RunParams *p, RunDoneFn done, void *userdata, Run **ret) {
        /* Freed here until the first operation is submitted; from then on it frees itself. */
        _cleanup_(run_freep) Run *run = calloc(1, sizeof(*run));
        if (!run)
                return -ENOMEM;
        run->t_call = now_usec();
        run->env = *env;
        run->done = done;
        run->userdata = userdata;
        run->timeout_s = p->timeout_s;
        run->queue_ms = p->queue_ms;
        run->user_code = p->user_code;
        run->own_slice = cgroup_tenant_slice(env->cgroup, p->tenant) != NULL;
        run->egress_wanted = p->egress && env->egress;
        output_init(&run->output, env->max_output_bytes);
        run->op_start.callback = on_start_failed;
        run->code = malloc(p->code_len + 1);
        run->stdin_data = malloc(p->stdin_len + 1);
        if (!run->code || !run->stdin_data)
                return -ENOMEM;
        memcpy(run->code, p->code, p->code_len);
        run->code_len = p->code_len;
        if (p->stdin_len)
                memcpy(run->stdin_data, p->stdin_data, p->stdin_len);
        run->stdin_len = p->stdin_len;
        if ((p->python && !(run->python = strdup(p->python))) || (p->env_dir && !(run->env_dir = strdup(p->env_dir))))
                run_fail(run, "out of memory");

        int r = str_random_hex(run->id, 8);
        if (run->error || r < 0)
                run_fail(run, "cannot make a run id: %s", strerror(-r)); /* keeps an earlier error */
        else if (!env->python && !run->python)
                run_fail(run, "the interpreter '%s' was not found in " SANDBOX_PATH " "
                              "(MCP_EXEC_PYTHON)", env->python_name);
        else if (run_take_ready(run, p) > 0)
                ; /* served by a ready sandbox: nothing to stage or spawn */
        else if ((r = proc_new(&(ProcSpec) { .ring = env->ring, .sandbox = env->sandbox,
                                             .cgroup = env->cgroup, .id = run->id,
                                             .backstop_s = run->timeout_s, .tenant = p->tenant },
                               &run_proc_handler, run, &run->proc)) < 0)
                run_fail(run, "cannot create the run's cgroup (%s backend): %s",
                         cgroup_backend_name(env->cgroup), strerror(-r));
        else if ((r = run_stage(run, p)) < 0)
                run_fail(run, "cannot create the run's working directory in %s: %s", env->state_dir, strerror(-r));
        else {
                run->t_staged = now_usec();
                (void) run_spawn(run, p);
        }

        if (run->error) {
                /* Answer from the loop, never from inside run_start. run_free kills and reaps a
                 * half-started child. */
                struct io_uring_sqe *sqe = ring_get_sqe(env->ring, &run->op_start);
                io_uring_prep_nop(sqe);
                *ret = TAKE_PTR(run);
                return 0;
        }

        run->phase = RUN_RUNNING;
        proc_read(run->proc, 0, SIZE_MAX);
        proc_read(run->proc, 1, SIZE_MAX);
        proc_watch_reports(run->proc);
        proc_watch_exit(run->proc);

        _cleanup_free_ char *problem = NULL;
        /* A ready sandbox was placed in its scope or cgroup by the pool. */
        r = run->warm ? 1 : proc_place(run->proc, &problem);
        if (r < 0) {
                run_fail(run, "%s", problem ? problem : "cannot place the run in its cgroup");
                run_kill_init(run);
        } else if (r > 0)
                run_go(run);
        else
                /* r == 0: run_on_placed() releases it once systemd's job is done. */
                proc_timer_arm(run->proc, RUN_PLACE_TIMEOUT_USEC);
        *ret = TAKE_PTR(run);
        return 0;
}

const char *run_error(const Run *run) {
        return run->error;
}

const Output *run_output(const Run *run) {
        return &run->output;
}

const char *run_id(const Run *run) {
        return run->id;
}

const char *run_unit(const Run *run) {
        return run->proc ? proc_unit(run->proc) : NULL;
}

uint64_t run_place_usec(const Run *run) {
        return run->t_placed > run->t_spawn && run->t_spawn ? run->t_placed - run->t_spawn : 0;
}

int run_outputs_read(const RunEnv *env, const Proc *p, Outputs *ret) {
        return outputs_collect(proc_pid(p), SANDBOX_WORK_DIR, env->max_return_bytes,
                               sandbox_run_host_uid(env->sandbox), sandbox_run_host_gid(env->sandbox), ret);
}

void run_result_build(const char *run_id, const char *limits, const Output *output, const Outputs *outputs,
                      const RunEnd *end, ExecResult *ret) {
        *ret = (ExecResult) {
                .stdout_data = output->stream[0].data,
                .stdout_len = output->stream[0].len,
                .stderr_data = output->stream[1].data,
                .stderr_len = output->stream[1].len,
                .truncated = output->truncated,
                .limits = limits,
                .files = outputs->files,
                .n_files = outputs->n_files,
                .files_unlisted = outputs->unlisted,
                .run_id = run_id,
                .exit_code = end->exit_code,
                .signal = end->signal[0] ? end->signal : NULL,
                .oom_killed = end->oom_killed,
                .pids_limit_hit = end->pids_limit_hit,
                .memory_peak_bytes = end->memory_peak_bytes,
                .cpu_user_us = end->cpu_user_usec,
                .cpu_system_us = end->cpu_system_usec,
                .account = end->account,
        };
}

/* Slack for the bound: a clock tick of rounding per process, and the moments between the end and
 * the counters' read. */
#define RUN_BOUND_SLACK_USEC (50u * 1000u)

bool run_end_bound(RunEnd *e, uint64_t wall_usec, uint64_t memory_max_bytes, const char *run_id) {
        static uint64_t cpus; /* read once (glibc reads /sys): every CPU there can be, an upper bound */
        if (cpus == 0) {
                long n = sysconf(_SC_NPROCESSORS_CONF);
                cpus = n > 0 ? (uint64_t) n : 1;
        }
        uint64_t cpu_max = (wall_usec + RUN_BOUND_SLACK_USEC) * cpus;
        bool clamped = false;
        if (e->cpu_user_usec > cpu_max || e->cpu_system_usec > cpu_max - MIN(e->cpu_user_usec, cpu_max)) {
                log_warning("run %s: CPU time %" PRIu64 "+%" PRIu64 " us is more than %" PRIu64 " us of wall time "
                            "on %" PRIu64 " CPUs allow: reported as that bound",
                            run_id, e->cpu_user_usec, e->cpu_system_usec, wall_usec, cpus);
                uint64_t total = e->cpu_user_usec + e->cpu_system_usec;
                if (e->cpu_user_usec > UINT64_MAX / 2 || e->cpu_system_usec > UINT64_MAX / 2 || total == 0) {
                        e->cpu_user_usec = cpu_max;
                        e->cpu_system_usec = 0;
                } else {
                        /* the same split, scaled down to the bound */
                        e->cpu_user_usec = (uint64_t) ((long double) e->cpu_user_usec * cpu_max / total);
                        e->cpu_system_usec = cpu_max - e->cpu_user_usec;
                }
                clamped = true;
        }
        if (memory_max_bytes != UINT64_MAX && memory_max_bytes != 0 && e->memory_peak_bytes > memory_max_bytes) {
                log_warning("run %s: memory peak %" PRIu64 " bytes is more than its limit %" PRIu64 ": reported as the limit",
                            run_id, e->memory_peak_bytes, memory_max_bytes);
                e->memory_peak_bytes = memory_max_bytes;
                clamped = true;
        }
        return clamped;
}

void run_result(const Run *run, ExecResult *ret) {
        ExecResult r;
        uint64_t end = run->t_end ? run->t_end : now_usec();
        uint64_t wall = run->t_release && end > run->t_release ? end - run->t_release : 0;
        RunEnd e = run->end;
        (void) run_end_bound(&e, wall, run->env.memory_max_bytes, run->id);
        run_result_build(run->id, run->proc ? proc_limits(run->proc) : "rlimit", &run->output, &run->outputs,
                         &e, &r);
        /* The result points into what it is built from: the signal's name into the run's, which
         * outlives this copy. */
        r.signal = run->end.signal[0] ? run->end.signal : NULL;
        r.timed_out = run->timed_out;
        r.queue_ms = run->queue_ms;
        r.warm = run->warm;
        r.memory_at_start_bytes = run->memory_at_start_bytes;
        r.duration_ms = wall / 1000;
        r.egress = run->egress_wanted ? &run->egress_result : NULL;
        *ret = r;
}

void run_end_wait_status(int wait_status, RunEnd *e) {
        if (WIFEXITED(wait_status)) {
                e->exit_code = WEXITSTATUS(wait_status);
                e->signal[0] = '\0';
        } else if (WIFSIGNALED(wait_status)) {
                e->exit_code = -WTERMSIG(wait_status);
                snprintf(e->signal, sizeof(e->signal), "SIG%s", sigabbrev_np(WTERMSIG(wait_status)) ?: "UNKNOWN");
        }
}

void run_end_decide(const RunEndFacts *f, RunEnd *ret) {
        RunEnd e = {};
        if (f->timed_out || !f->exit_reported) {
                /* mcp-exec's contract: -1 when timed out; the deadline kill is a SIGKILL. */
                e.exit_code = -1;
                snprintf(e.signal, sizeof(e.signal), "SIGKILL");
        } else
                run_end_wait_status(f->wait_status, &e);
        if (f->stats) {
                /* A ready sandbox's payload/ counted its preload too: less what it had spent when
                 * the call took it (pool.c). The peak stays the cgroup's, preload included. */
                e.memory_peak_bytes = f->stats->memory_peak_bytes;
                e.cpu_user_usec = f->stats->cpu_user_usec > f->preload_utime_usec
                                          ? f->stats->cpu_user_usec - f->preload_utime_usec : 0;
                e.cpu_system_usec = f->stats->cpu_system_usec > f->preload_stime_usec
                                            ? f->stats->cpu_system_usec - f->preload_stime_usec : 0;
                e.oom_killed = f->stats->oom_killed;
                e.pids_limit_hit = f->stats->pids_limit_hit;
                /* The same for the pressure and I/O totals; pids.peak stays the cgroup's. */
                exec_account_since(&f->stats->account, f->preload_account, &e.account);
        } else if (f->exit_reported) {
                /* Without counters (rlimits): what the init measured of the processes it reaped,
                 * less what a ready sandbox's launcher had spent before the call's release. */
                e.cpu_user_usec = f->utime_usec > f->preload_utime_usec
                                          ? f->utime_usec - f->preload_utime_usec : 0;
                e.cpu_system_usec = f->stime_usec > f->preload_stime_usec
                                            ? f->stime_usec - f->preload_stime_usec : 0;
                e.memory_peak_bytes = f->maxrss_bytes;
        }
        /* The peak is at least what was there at the start. The kernel's RSS counters are
         * approximate (per-CPU batches) and its high-water mark is updated lazily: a maxrss read at
         * exit was seen a few pages below the RSS the launcher read when it became ready. */
        if (e.memory_peak_bytes < f->memory_at_start_bytes)
                e.memory_peak_bytes = f->memory_at_start_bytes;
        *ret = e;
}

void run_release(Run *run) {
        run->owner_released = true;
        /* From inside done(): the completion handler that called it frees the run afterwards. */
        if (!run->in_done)
                run_maybe_free(run);
}

const RunOps run_ops_sandbox = {
        .start = run_start,
        .kill = run_kill,
        .error = run_error,
        .result = run_result,
        .id = run_id,
        .unit = run_unit,
        .place_usec = run_place_usec,
        .release = run_release,
        .output = run_output,
};
