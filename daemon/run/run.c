/* run.c: the run state machine. A run is spawned held, placed in its cgroup, released, fed and
 * collected; it ends when no process of it is left and both output pipes are at EOF (or a bounded
 * grace after a kill has passed); only then is it answered. No process is left when the init said
 * so with Python's exit (SANDBOX_REPORT_ALONE), or else once the init has exited (the kernel kills
 * the rest of its PID namespace); in the first case the init's exit and the namespaces' teardown
 * come after the answer, and the run is freed only once its init is reaped. How it ended is
 * decided from our own flags and the cgroup's counters, never from the exit signal alone (an OOM
 * kill and a deadline kill are both SIGKILL). */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "log.h"
#include "output.h"
#include "outputs.h"
#include "py-launch.h"
#include "run-internal.h"
#include "run.h"
#include "spawn.h"
#include "str-util.h"

#define RUN_READ_BUF_BYTES (64u * 1024u)
#define RUN_SCRIPT_NAME MCP_RUN_SCRIPT
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

typedef struct RunStream {
        RingOp op;
        Run *run;
        int fd;
        int index;
        bool eof;
        char buf[RUN_READ_BUF_BYTES];
} RunStream;

struct Run {
        RunEnv env;
        char id[17];
        char *staging;
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
        size_t stdin_off;
        uint32_t timeout_s;
        uint64_t queue_ms;
        char *python;  /* RunParams.python, or NULL */
        char *env_dir; /* RunParams.env_dir, or NULL */
        bool user_code; /* RunParams.user_code: the launcher runs main.py; outputs/ is read back */
        Outputs outputs;

        /* Served by a ready sandbox (pool.c): released when its message is written on stdin. */
        bool warm;
        uint64_t preload_utime_usec, preload_stime_usec; /* the launcher's CPU when it became ready */
        uint64_t memory_at_start_bytes;                  /* its resident memory then */

        SandboxChild child;
        CgroupRun *cgroup;
        bool child_spawned;
        bool child_released; /* Python may run */
        bool init_exited;    /* pidfd said so, and it was reaped */
        bool exit_reported;  /* the init sent EXITED */
        bool payload_gone;   /* ... with SANDBOX_REPORT_ALONE: no process of the run is left */
        int wait_status;
        SandboxReport report;
        CgroupStats stats;
        bool stats_read;
        char *error;         /* infrastructure failure, for a tool error */

        bool timed_out;
        bool killed;         /* by us: deadline, cancellation or shutdown */
        bool placing;        /* systemd is making the run's scope: its init may not die yet */
        bool init_killed;
        bool grace_over;
        uint64_t t_spawn, t_placed, t_release, t_end;
        /* Only for the debug log of the cold path's steps (issue 16.5), CLOCK_MONOTONIC. */
        uint64_t t_call, t_staged, t_started, t_collected, t_eof, t_init_exit;

        Output output;
        RunStream streams[2];
        int stdin_fd;

        RunEnd end; /* decided when it is over */

        RingOp op_stdin, op_control, op_pidfd, op_timer, op_grace, op_start, op_place, op_let_go;
        struct __kernel_timespec deadline, grace, place;
};

static void run_maybe_finish(Run *run);
static void run_steps_log(const Run *run, const char *when);

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
        return run->streams[0].op.busy || run->streams[1].op.busy || run->op_stdin.busy ||
               run->op_control.busy || run->op_pidfd.busy || run->op_timer.busy || run->op_grace.busy ||
               run->op_start.busy || run->op_place.busy || run->op_let_go.busy;
}

static void run_staging_remove(Run *run) {
        if (!run->staging)
                return;
        int r = rm_rf(run->staging);
        if (r < 0)
                log_warning_errno(r, "run %s: cannot remove its staging directory: %m, ignoring", run->id);
        free(run->staging);
        run->staging = NULL;
}

static void run_free(Run *run) {
        run->stdin_fd = safe_close(run->stdin_fd);
        for (int i = 0; i < 2; i++)
                run->streams[i].fd = safe_close(run->streams[i].fd);
        if (run->child_spawned) {
                if (!run->init_exited) {
                        /* Never leave a live init or a zombie behind (a start that failed half-way,
                         * or an init that outlived its grace): kill and reap it. */
                        (void) sandbox_child_kill(&run->child);
                        siginfo_t si;
                        (void) waitid((idtype_t) P_PIDFD, (id_t) run->child.pidfd, &si, WEXITED);
                }
                sandbox_child_done(&run->child);
        }
        /* After the init is reaped: its PID namespace, hence every process of the run, is gone. */
        cgroup_run_free(run->cgroup);
        run_staging_remove(run);
        output_done(&run->output);
        outputs_done(&run->outputs);
        free(run->staging);
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

static void stream_read(Run *run, RunStream *s) {
        struct io_uring_sqe *sqe = ring_get_sqe(run->env.ring, &s->op);
        io_uring_prep_read(sqe, s->fd, s->buf, sizeof(s->buf), (uint64_t) -1);
}

static void on_stream(RingOp *op, int res) {
        RunStream *s = container_of(op, RunStream, op);
        Run *run = s->run;

        if (res > 0 && run->phase == RUN_RUNNING) {
                if (output_add(&run->output, s->index, s->buf, (size_t) res) < 0)
                        run_fail(run, "out of memory while collecting output");
                stream_read(run, s);
                return;
        }
        /* EOF, an error, or the run is over (a cancelled read). */
        s->eof = true;
        s->fd = safe_close(s->fd);
        if (run->streams[0].eof && run->streams[1].eof && !run->t_eof)
                run->t_eof = now_usec();
        run_maybe_finish(run);
        run_maybe_free(run);
}

static void stdin_write(Run *run) {
        struct io_uring_sqe *sqe = ring_get_sqe(run->env.ring, &run->op_stdin);
        size_t n = MIN(run->stdin_len - run->stdin_off, (size_t) 1 << 20);
        io_uring_prep_write(sqe, run->stdin_fd, run->stdin_data + run->stdin_off, (unsigned) n, (uint64_t) -1);
}

static void on_stdin(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_stdin);

        if (res > 0 && run->phase == RUN_RUNNING) {
                run->stdin_off += (size_t) res;
                if (run->stdin_off < run->stdin_len) {
                        stdin_write(run);
                        return;
                }
        }
        /* All written, or the code stopped reading (EPIPE: SIGPIPE is ignored): EOF for the code. */
        run->stdin_fd = safe_close(run->stdin_fd);
        run_maybe_free(run);
}

static void pidfd_poll(Run *run) {
        struct io_uring_sqe *sqe = ring_get_sqe(run->env.ring, &run->op_pidfd);
        io_uring_prep_poll_add(sqe, run->child.pidfd, POLLIN);
}

static void control_read(Run *run) {
        struct io_uring_sqe *sqe = ring_get_sqe(run->env.ring, &run->op_control);
        io_uring_prep_recv(sqe, run->child.control_fd, &run->report, sizeof(run->report), 0);
}

/* Lets the init go: it exits, and the kernel ends whatever is left in the run's PID namespace. */
static void run_let_init_go(Run *run) {
        if (run->child.control_fd >= 0)
                (void) shutdown(run->child.control_fd, SHUT_RDWR);
}

static void timer_arm(Run *run, RingOp *op, struct __kernel_timespec *ts, uint64_t usec) {
        ts->tv_sec = (long long) (usec / 1000000);
        ts->tv_nsec = (long long) (usec % 1000000) * 1000;
        struct io_uring_sqe *sqe = ring_get_sqe(run->env.ring, op);
        io_uring_prep_timeout(sqe, ts, 0, 0);
}

static void run_kill_init(Run *run) {
        if (!run->child_spawned || run->init_exited || run->init_killed)
                return;
        run->init_killed = true;
        int r = sandbox_child_kill(&run->child);
        if (r < 0 && r != -ESRCH)
                log_warning_errno(r, "run %s: cannot kill its init: %m", run->id);
}

/* The init of a run that is over (payload_gone) goes after the answer: the shutdown is queued on
 * the ring behind the answer's write, so the init's wake-up and exit cannot delay that write. */
static void on_let_go(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_let_go);
        /* Never leave the init waiting: the shutdown again, else the kill. */
        if (res < 0 && !run->init_exited &&
            (run->child.control_fd < 0 || shutdown(run->child.control_fd, SHUT_RDWR) < 0))
                (void) sandbox_child_kill(&run->child);
        run_maybe_free(run);
}

static void run_let_init_go_later(Run *run) {
        struct io_uring_sqe *sqe = ring_get_sqe(run->env.ring, &run->op_let_go);
        io_uring_prep_shutdown(sqe, run->child.control_fd, SHUT_RDWR);
}

/* Python is gone: the counters are final (up to leftovers, which die now), the init may go (now,
 * or after the answer when nothing of the run is left). Its outputs/ is read first, through the
 * run's root, which lives as long as the init. */
static void run_collect(Run *run) {
        if (run->user_code && run->child_spawned) {
                int r = outputs_collect(run->child.pid, SANDBOX_WORK_DIR, run->env.max_return_bytes,
                                        sandbox_run_host_uid(run->env.sandbox), sandbox_run_host_gid(run->env.sandbox),
                                        &run->outputs);
                if (r < 0)
                        log_warning_errno(r, "run %s: cannot read back its outputs: %m", run->id);
        }
        if (run->cgroup && cgroup_run_payload_fd(run->cgroup) >= 0) {
                /* Whatever the code left running in the background ends with it. */
                (void) cgroup_run_kill(run->cgroup);
                int r = cgroup_run_read(run->cgroup, &run->stats);
                if (r < 0)
                        log_warning_errno(r, "run %s: cannot read its cgroup counters: %m", run->id);
                else
                        run->stats_read = true;
        }
        run->t_collected = now_usec();
        if (!run->payload_gone)
                run_let_init_go(run);
}

static void on_control(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_control);

        if (res == (int) sizeof(SandboxReport) && run->phase == RUN_RUNNING) {
                switch (run->report.kind) {
                case SANDBOX_REPORT_STARTED:
                        /* Python runs: the init has copied the staging directory into the run's own
                         * tmpfs, so the host copy of the caller's code and files can go now rather
                         * than at the end. */
                        run->t_started = now_usec();
                        run_staging_remove(run);
                        control_read(run);
                        return;
                case SANDBOX_REPORT_EXITED:
                        run->exit_reported = true;
                        run->payload_gone = (run->report.flags & SANDBOX_REPORT_ALONE) != 0;
                        run->wait_status = run->report.value;
                        if (!run->t_end)
                                run->t_end = now_usec();
                        run_collect(run);
                        break;
                case SANDBOX_REPORT_FAILED:
                        run->report.detail[sizeof(run->report.detail) - 1] = '\0';
                        if (run->report.value == ENOENT && strncmp(run->report.detail, "execve", 6) == 0)
                                run_fail(run, "the interpreter %s could not be started inside the sandbox: %s "
                                              "(MCP_EXEC_PYTHON=%s)", run->env.python, strerror(ENOENT),
                                         run->env.python_name);
                        else
                                run_fail(run, "the sandbox could not start the run: %s: %s",
                                         run->report.detail, strerror(run->report.value));
                        run_let_init_go(run);
                        break;
                default:
                        break;
                }
        }
        run_maybe_finish(run);
        run_maybe_free(run);
}

static void on_pidfd(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_pidfd);

        if (res < 0) {
                /* Cancelled: the run is over without its init (run_free kills and reaps it). */
                run_maybe_free(run);
                return;
        }
        siginfo_t si = {};
        if (waitid((idtype_t) P_PIDFD, (id_t) run->child.pidfd, &si, WEXITED | WNOHANG) == 0 && si.si_pid == 0) {
                pidfd_poll(run);
                return;
        }
        run->init_exited = true;
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
                         si.si_code == CLD_EXITED ? "exit status" : "signal", si.si_status);
        if (!run->t_end)
                run->t_end = now_usec();
        run_maybe_finish(run);
        run_maybe_free(run);
}

static void on_timer(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_timer);

        if (res == -ETIME && run->phase == RUN_RUNNING && !run->killed) {
                /* The deadline: the flag is set before the kill, so the kill's SIGKILL is read as a
                 * timeout, not as an OOM or a crash. */
                run->timed_out = !run->exit_reported;
                run_kill(run);
                return;
        }
        run_maybe_free(run);
}

static void on_grace(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_grace);

        if (res == -ETIME && run->phase == RUN_RUNNING) {
                if (!run->init_exited && !run->init_killed) {
                        /* cgroup.kill did not bring Python's exit report: end the namespace. */
                        run_kill_init(run);
                        timer_arm(run, &run->op_grace, &run->grace, RUN_KILL_GRACE_USEC);
                        return;
                }
                /* The grace is over: answer with what we have. */
                run->grace_over = true;
                run_maybe_finish(run);
        }
        run_maybe_free(run);
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
        if (run->child_released && run->cgroup && cgroup_run_payload_fd(run->cgroup) >= 0 && !run->exit_reported) {
                r = cgroup_run_kill(run->cgroup);
                if (r < 0)
                        log_warning_errno(r, "run %s: cannot write cgroup.kill: %m; killing its init", run->id);
        }
        /* While systemd makes the scope the init must live: killed now, it would empty the scope
         * while we make its leaves, and systemd could not remove the scope's cgroup (seen: one in
         * ~250 runs left behind). on_placed() or the placement deadline kills it. */
        if (r < 0 && !run->placing)
                run_kill_init(run);

        ring_cancel(run->env.ring, &run->op_timer);
        if (!run->placing)
                timer_arm(run, &run->op_grace, &run->grace, RUN_KILL_GRACE_USEC);
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
                  run_step_ms(run, now_usec()), run->warm, run->child_spawned ? (int) run->child.pid : 0,
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
        };
        run_end_decide(&f, &run->end);
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
        bool streams_done = run->streams[0].eof && run->streams[1].eof;
        bool payload_over = run->init_exited || (run->payload_gone && !run->placing);
        if (!run->grace_over && !(payload_over && streams_done))
                return;

        /* Whatever is still in flight is cancelled; its CQE frees nothing but is awaited. The
         * pidfd's poll stays while the init is alive (payload_gone): on_pidfd() reaps it after the
         * answer, and the run is freed only then (run_ops_busy()). */
        ring_cancel(run->env.ring, &run->op_timer);
        ring_cancel(run->env.ring, &run->op_grace);
        ring_cancel(run->env.ring, &run->op_place);
        if (run->init_exited || run->grace_over)
                ring_cancel(run->env.ring, &run->op_pidfd);
        ring_cancel(run->env.ring, &run->op_stdin);
        ring_cancel(run->env.ring, &run->op_control);
        ring_cancel(run->env.ring, &run->streams[0].op);
        ring_cancel(run->env.ring, &run->streams[1].op);
        if (run->grace_over && !run->init_exited && !run->error)
                run_fail(run, "the run did not end within %u ms of being killed", 2 * RUN_KILL_GRACE_USEC / 1000);
        run_finish(run);
        if (run->payload_gone && !run->init_exited)
                run_let_init_go_later(run); /* behind the answer, queued by done() */
}

static void on_start_failed(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_start);
        run_finish(run);
        run_maybe_free(run);
}

/* An input file at its relative path below dfd (names validated by mcp/: no absolute path, no
 * . or .., no empty segment), its directories made on the way. */
static int run_stage_file(int dfd, const McpInputFile *f) {
        char path[MCP_FILE_NAME_MAX_BYTES + 1];
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
        if (asprintf(&run->staging, "%s/run-%s", run->env.state_dir, run->id) < 0) {
                run->staging = NULL;
                return -ENOMEM;
        }
        /* Private: the init reads it with our uid and copies it into the run's own tmpfs. */
        if (mkdir(run->staging, 0700) < 0) {
                int r = -errno;
                free(run->staging);
                run->staging = NULL;
                return r;
        }
        _cleanup_close_ int dfd = open(run->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
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
                int r = pyc ? fd_write_file_at(dfd, MCP_RUN_LAUNCHER, lc->pyc, lc->pyc_len, 0600)
                            : fd_write_file_at(dfd, MCP_RUN_LAUNCHER, py_launch, strlen(py_launch), 0600);
                if (r < 0)
                        return r;
        }
        return fd_write_file_at(dfd, RUN_SCRIPT_NAME, run->code, run->code_len, 0600);
}

/* Whether this run may be served by a ready sandbox: the caller's code, with the default
 * interpreter and no dependency environment (every backend: the pool makes each ready sandbox's
 * scope or cgroup with the runs' limits). */
static bool run_may_be_warm(const Run *run) {
        return run->env.pool && run->user_code && !run->env_dir &&
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
        memcpy(run->id, ready.id, sizeof(run->id));
        run->cgroup = ready.cgroup;
        run->child = ready.child;
        run->child_spawned = true;
        run->stdin_fd = ready.stdin_fd;
        run->streams[0].fd = ready.stdout_fd;
        run->streams[1].fd = ready.stderr_fd;
        run->preload_utime_usec = ready.preload_utime_usec;
        run->preload_stime_usec = ready.preload_stime_usec;
        run->memory_at_start_bytes = ready.rss_bytes;

        free(run->stdin_data);
        run->stdin_data = TAKE_PTR(buf);
        run->stdin_len = len;
        return 1;
}

/* Python may start: release the init (with the payload cgroup), feed stdin, start the clock. */
static void run_go(Run *run) {
        int payload = run->cgroup ? cgroup_run_payload_fd(run->cgroup) : -EBADF;
        /* A ready sandbox's init was released by the pool: its launcher waits for stdin. */
        int r = run->warm ? 0 : sandbox_child_release_into(&run->child, payload);
        if (r < 0) {
                run_fail(run, "cannot release the run's init: %s", strerror(-r));
                run_kill_init(run);
                return;
        }
        run->child_released = true;
        run->t_release = now_usec();
        if (run->stdin_len > 0)
                stdin_write(run);
        else
                run->stdin_fd = safe_close(run->stdin_fd);
        timer_arm(run, &run->op_timer, &run->deadline, (uint64_t) run->timeout_s * 1000000u);
}

/* systemd never finished the run's scope (a lost JobRemoved, a manager that hangs): give up. */
static void on_place_timeout(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_place);

        if (res == -ETIME && run->placing && run->phase == RUN_RUNNING) {
                run->placing = false;
                cgroup_run_cancel_place(run->cgroup);
                if (!run->killed)
                        run_fail(run, "systemd did not create the run's scope within %u s; the run was not started",
                                 RUN_PLACE_TIMEOUT_USEC / 1000000u);
                run->killed = true;
                run_kill_init(run);
                timer_arm(run, &run->op_grace, &run->grace, RUN_KILL_GRACE_USEC);
                return;
        }
        run_maybe_free(run);
}

static void on_placed(CgroupRun *cr, int error, const char *message, void *userdata) {
        Run *run = userdata;

        run->placing = false;
        run->t_placed = now_usec();
        ring_cancel(run->env.ring, &run->op_place);
        if (run->phase != RUN_RUNNING)
                return;
        if (run->killed) {
                /* Cancelled (or shut down) while waiting for its scope: the deferred kill. */
                run_kill_init(run);
                timer_arm(run, &run->op_grace, &run->grace, RUN_KILL_GRACE_USEC);
                return;
        }
        if (error < 0) {
                run_fail(run, "%s", message ? message : "cannot place the run in its cgroup");
                run_kill_init(run);
                return;
        }
        run_go(run);
}

/* Both ends of a pipe not handed over yet. */
static void pipe_closep(int (*p)[2]) {
        (*p)[0] = safe_close((*p)[0]);
        (*p)[1] = safe_close((*p)[1]);
}

static int run_spawn_failed(Run *run, int r) {
        /* EAGAIN from clone: a process limit of the daemon itself, not of the run. */
        run_fail(run, "cannot start the sandbox: %s%s", strerror(-r),
                 r == -EAGAIN ? " (the daemon is at a process limit: RLIMIT_NPROC of its user, or its cgroup's "
                                "pids.max; try again later)" : "");
        return r;
}

static int run_spawn(Run *run) {
        _cleanup_(pipe_closep) int in[2] = { -EBADF, -EBADF };
        _cleanup_(pipe_closep) int out[2] = { -EBADF, -EBADF };
        _cleanup_(pipe_closep) int err[2] = { -EBADF, -EBADF };
        int r;

        if (cgroup_backend(run->env.cgroup) != CGROUP_BACKEND_NONE) {
                r = cgroup_run_new(run->env.cgroup, run->id, run->timeout_s, &run->cgroup);
                if (r < 0) {
                        run_fail(run, "cannot create the run's cgroup (%s backend): %s",
                                 cgroup_backend_name(run->env.cgroup), strerror(-r));
                        return r;
                }
        }
        /* pipe2(2) leaves the array as it was when it fails. */
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
                return run_spawn_failed(run, -errno);
        SandboxRunSpec spec = {
                .python = run->python ? run->python : run->env.python,
                .env_dir = run->env_dir,
                .staging_dir = run->staging,
                .script = run->user_code ? MCP_RUN_LAUNCHER : RUN_SCRIPT_NAME,
                .stdin_fd = in[0],
                .stdout_fd = out[1],
                .stderr_fd = err[1],
                .supervisor_cgroup_fd = run->cgroup ? cgroup_run_supervisor_fd(run->cgroup) : -EBADF,
                .payload_cgroup_fd = run->cgroup ? cgroup_run_payload_fd(run->cgroup) : -EBADF,
                .rlimits = !run->cgroup,
        };
        r = sandbox_spawn(run->env.sandbox, &spec, &run->child);
        if (r < 0)
                return run_spawn_failed(run, r);
        run->child_spawned = true;
        run->t_spawn = now_usec();
        /* The child's ends close on the way out; ours go to the run. */
        run->stdin_fd = TAKE_FD(in[1]);
        run->streams[0].fd = TAKE_FD(out[0]);
        run->streams[1].fd = TAKE_FD(err[0]);
        return 0;
}

int run_start(const RunEnv *env, const RunParams *p, RunDoneFn done, void *userdata, Run **ret) {
        /* Freed here until the first operation is submitted; from then on it frees itself. */
        _cleanup_(run_freep) Run *run = calloc(1, sizeof(*run));
        if (!run)
                return -ENOMEM;
        run->t_call = now_usec();
        run->env = *env;
        run->done = done;
        run->userdata = userdata;
        run->stdin_fd = -EBADF;
        run->child = (SandboxChild) { .pidfd = -EBADF, .control_fd = -EBADF };
        run->timeout_s = p->timeout_s;
        run->queue_ms = p->queue_ms;
        run->user_code = p->user_code;
        output_init(&run->output, env->max_output_bytes);
        for (int i = 0; i < 2; i++)
                run->streams[i] = (RunStream) { .op.callback = on_stream, .run = run, .fd = -EBADF, .index = i };
        run->op_stdin.callback = on_stdin;
        run->op_control.callback = on_control;
        run->op_pidfd.callback = on_pidfd;
        run->op_timer.callback = on_timer;
        run->op_grace.callback = on_grace;
        run->op_start.callback = on_start_failed;
        run->op_place.callback = on_place_timeout;
        run->op_let_go.callback = on_let_go;
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
        else if ((r = run_stage(run, p)) < 0)
                run_fail(run, "cannot create the run's working directory in %s: %s", env->state_dir, strerror(-r));
        else {
                run->t_staged = now_usec();
                (void) run_spawn(run);
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
        stream_read(run, &run->streams[0]);
        stream_read(run, &run->streams[1]);
        control_read(run);
        pidfd_poll(run);

        _cleanup_free_ char *problem = NULL;
        /* A ready sandbox was placed in its scope or cgroup by the pool. */
        r = run->cgroup && !run->warm ? cgroup_run_place(run->cgroup, run->child.pid, run->child.pidfd,
                                                         on_placed, run, &problem)
                                      : 1;
        if (r < 0) {
                run_fail(run, "%s", problem ? problem : "cannot place the run in its cgroup");
                run_kill_init(run);
        } else if (r > 0)
                run_go(run);
        else {
                /* r == 0: on_placed() releases it once systemd's job is done. */
                run->placing = true;
                timer_arm(run, &run->op_place, &run->place, RUN_PLACE_TIMEOUT_USEC);
        }
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
        return run->cgroup ? cgroup_run_unit(run->cgroup) : NULL;
}

uint64_t run_place_usec(const Run *run) {
        return run->t_placed > run->t_spawn && run->t_spawn ? run->t_placed - run->t_spawn : 0;
}

void run_result(const Run *run, McpExecResult *ret) {
        McpExecResult r = {
                .stdout_data = run->output.stream[0].data,
                .stdout_len = run->output.stream[0].len,
                .stderr_data = run->output.stream[1].data,
                .stderr_len = run->output.stream[1].len,
                .truncated = run->output.truncated,
                .timed_out = run->timed_out,
                .limits = run->cgroup ? "cgroup" : "rlimit",
                .queue_ms = run->queue_ms,
                .files = run->outputs.files,
                .n_files = run->outputs.n_files,
                .files_unlisted = run->outputs.unlisted,
                .run_id = run->id,
                .exit_code = run->end.exit_code,
                .signal = run->end.signal[0] ? run->end.signal : NULL,
                .oom_killed = run->end.oom_killed,
                .pids_limit_hit = run->end.pids_limit_hit,
                .memory_peak_bytes = run->end.memory_peak_bytes,
                .cpu_user_us = run->end.cpu_user_usec,
                .cpu_system_us = run->end.cpu_system_usec,
                .warm = run->warm,
                .memory_at_start_bytes = run->memory_at_start_bytes,
        };
        uint64_t end = run->t_end ? run->t_end : now_usec();
        r.duration_ms = run->t_release && end > run->t_release ? (end - run->t_release) / 1000 : 0;
        *ret = r;
}

void run_end_decide(const RunEndFacts *f, RunEnd *ret) {
        RunEnd e = {};
        if (f->timed_out || !f->exit_reported) {
                /* mcp-exec's contract: -1 when timed out; the deadline kill is a SIGKILL. */
                e.exit_code = -1;
                snprintf(e.signal, sizeof(e.signal), "SIGKILL");
        } else if (WIFEXITED(f->wait_status)) {
                e.exit_code = WEXITSTATUS(f->wait_status);
        } else if (WIFSIGNALED(f->wait_status)) {
                e.exit_code = -WTERMSIG(f->wait_status);
                snprintf(e.signal, sizeof(e.signal), "SIG%s", sigabbrev_np(WTERMSIG(f->wait_status)) ?: "UNKNOWN");
        }
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
