/* run.c: the run state machine. A run ends when its init has exited and both output pipes are
 * at EOF (or a bounded grace after a kill has passed); only then is it answered. */
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
#include "run.h"
#include "str-util.h"

#define RUN_READ_BUF_BYTES (64u * 1024u)
#define RUN_SCRIPT_NAME "main.py"
/* After a kill the kernel tears the namespace down in milliseconds; this bounds how long a reply
 * can lag behind the deadline if something (a stuck pipe holder) does not go away. */
#define RUN_KILL_GRACE_USEC (2u * 1000u * 1000u)

typedef enum RunPhase {
        RUN_STARTING,  /* done will be called from the loop (start failure) */
        RUN_RUNNING,
        RUN_FINISHED,  /* done called */
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
        bool released;     /* the owner gave the run back */

        char *code;
        size_t code_len;
        char *stdin_data;
        size_t stdin_len;
        size_t stdin_off;
        uint32_t timeout_s;
        uint64_t queue_ms;

        SandboxChild child;
        bool child_spawned;
        bool init_exited;   /* pidfd said so, and it was reaped */
        bool exit_reported; /* the init sent EXITED */
        int wait_status;
        SandboxReport report;
        char *error;        /* infrastructure failure, for a tool error */

        bool timed_out;
        bool killed;        /* by us: deadline, cancellation or shutdown */
        bool grace_over;
        uint64_t t_release, t_end;

        Output output;
        RunStream streams[2];
        int stdin_fd;

        char signame[16];

        RingOp op_stdin, op_control, op_pidfd, op_timer, op_grace, op_start;
        struct __kernel_timespec deadline, grace;
};

static void run_maybe_finish(Run *run);

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
               run->op_start.busy;
}

static void run_free(Run *run) {
        run->stdin_fd = safe_close(run->stdin_fd);
        for (int i = 0; i < 2; i++)
                run->streams[i].fd = safe_close(run->streams[i].fd);
        if (run->child_spawned) {
                if (!run->init_exited) {
                        /* Never leave a zombie or a live init behind (a start that failed half-way,
                         * or an init that outlived its grace): kill and reap it. */
                        (void) sandbox_child_kill(&run->child);
                        siginfo_t si;
                        (void) waitid((idtype_t) P_PIDFD, (id_t) run->child.pidfd, &si, WEXITED);
                }
                sandbox_child_done(&run->child);
        }
        if (run->staging) {
                int r = rm_rf(run->staging);
                if (r < 0)
                        log_warning_errno(r, "run %s: cannot remove its staging directory: %m, ignoring", run->id);
        }
        output_done(&run->output);
        free(run->staging);
        free(run->code);
        free(run->stdin_data);
        free(run->error);
        free(run);
}

/* Frees the run once the owner released it and no kernel operation still references it. */
static void run_maybe_free(Run *run) {
        if (run->released && run->phase == RUN_FINISHED && !run_ops_busy(run))
                run_free(run);
}

static void on_stream(RingOp *op, int res);

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

static void control_read(Run *run) {
        struct io_uring_sqe *sqe = ring_get_sqe(run->env.ring, &run->op_control);
        io_uring_prep_recv(sqe, run->child.control_fd, &run->report, sizeof(run->report), 0);
}

/* Lets the init go: it exits, and the kernel ends whatever is left in the run's PID namespace. */
static void run_let_init_go(Run *run) {
        if (run->child.control_fd >= 0) {
                (void) shutdown(run->child.control_fd, SHUT_RDWR);
        }
}

static void on_control(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_control);

        if (res == (int) sizeof(SandboxReport) && run->phase == RUN_RUNNING) {
                switch (run->report.kind) {
                case SANDBOX_REPORT_STARTED:
                        break;
                case SANDBOX_REPORT_EXITED:
                        if (!run->killed) {
                                run->t_end = now_usec();
                                run->exit_reported = true;
                                run->wait_status = run->report.value;
                                if (WIFSIGNALED(run->wait_status))
                                        snprintf(run->signame, sizeof(run->signame), "SIG%s",
                                                 sigabbrev_np(WTERMSIG(run->wait_status)) ?: "UNKNOWN");
                        }
                        /* Accounting reads (cgroup counters) belong here, while the init keeps the
                         * run's cgroups alive; then the init may go. */
                        run_let_init_go(run);
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
                if (run->report.kind == SANDBOX_REPORT_STARTED) {
                        control_read(run);
                        return;
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
                /* Not exited after all: wait again. */
                struct io_uring_sqe *sqe = ring_get_sqe(run->env.ring, &run->op_pidfd);
                io_uring_prep_poll_add(sqe, run->child.pidfd, POLLIN);
                return;
        }
        run->init_exited = true;
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
                /* The deadline. */
                run->timed_out = !run->exit_reported;
                run_kill(run);
                return;
        }
        run_maybe_free(run);
}

static void on_grace(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_grace);

        if (res == -ETIME && run->phase == RUN_RUNNING) {
                /* The grace after a kill is over: answer with what we have. */
                run->grace_over = true;
                run_maybe_finish(run);
        }
        run_maybe_free(run);
}

static void timer_arm(Run *run, RingOp *op, struct __kernel_timespec *ts, uint64_t usec) {
        ts->tv_sec = (long long) (usec / 1000000);
        ts->tv_nsec = (long long) (usec % 1000000) * 1000;
        struct io_uring_sqe *sqe = ring_get_sqe(run->env.ring, op);
        io_uring_prep_timeout(sqe, ts, 0, 0);
}

void run_kill(Run *run) {
        if (run->phase != RUN_RUNNING || run->killed)
                return;
        run->killed = true;
        if (!run->t_end)
                run->t_end = now_usec();
        if (run->child_spawned && !run->init_exited) {
                int r = sandbox_child_kill(&run->child);
                if (r < 0 && r != -ESRCH)
                        log_warning_errno(r, "run %s: cannot kill its init: %m", run->id);
        }
        /* Bound the wait for the pipes and the init to go. */
        ring_cancel(run->env.ring, &run->op_timer);
        timer_arm(run, &run->op_grace, &run->grace, RUN_KILL_GRACE_USEC);
}

static void run_maybe_finish(Run *run) {
        if (run->phase != RUN_RUNNING)
                return;
        bool streams_done = run->streams[0].eof && run->streams[1].eof;
        if (!run->grace_over && !(run->init_exited && streams_done))
                return;

        run->phase = RUN_FINISHED;
        /* Whatever is still in flight is cancelled; its CQE frees nothing but is awaited. */
        ring_cancel(run->env.ring, &run->op_timer);
        ring_cancel(run->env.ring, &run->op_grace);
        ring_cancel(run->env.ring, &run->op_pidfd);
        ring_cancel(run->env.ring, &run->op_stdin);
        ring_cancel(run->env.ring, &run->op_control);
        ring_cancel(run->env.ring, &run->streams[0].op);
        ring_cancel(run->env.ring, &run->streams[1].op);
        if (run->grace_over && !run->init_exited && !run->error)
                run_fail(run, "the run did not end within %u ms of being killed",
                         RUN_KILL_GRACE_USEC / 1000);
        run->done(run, run->userdata);
}

static void on_start_failed(RingOp *op, int res) {
        Run *run = container_of(op, Run, op_start);
        run->phase = RUN_FINISHED;
        run->done(run, run->userdata);
        run_maybe_free(run);
}

static int run_stage(Run *run) {
        int r = str_random_hex(run->id, 8);
        if (r < 0)
                return r;
        if (asprintf(&run->staging, "%s/run-%s", run->env.state_dir, run->id) < 0) {
                run->staging = NULL;
                return -ENOMEM;
        }
        /* FIXME(sandbox phase 2): Python reads the staging directory itself until the init copies it
         * into the run's tmpfs, so it must be readable by the run's uid for now. */
        if (mkdir(run->staging, 0755) < 0) {
                r = -errno;
                free(run->staging);
                run->staging = NULL;
                return r;
        }
        _cleanup_close_ int dfd = open(run->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        return fd_write_file_at(dfd, RUN_SCRIPT_NAME, run->code, run->code_len, 0644);
}

static int run_spawn(Run *run) {
        int in[2] = { -EBADF, -EBADF }, out[2] = { -EBADF, -EBADF }, err[2] = { -EBADF, -EBADF };
        int r;

        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
                r = -errno;
                goto fail;
        }
        SandboxRunSpec spec = {
                .python = run->env.python,
                .staging_dir = run->staging,
                .script = RUN_SCRIPT_NAME,
                .stdin_fd = in[0],
                .stdout_fd = out[1],
                .stderr_fd = err[1],
                .supervisor_cgroup_fd = -EBADF,
                .payload_cgroup_fd = -EBADF,
                .rlimits = true,
        };
        r = sandbox_spawn(run->env.sandbox, &spec, &run->child);
        if (r < 0)
                goto fail;
        run->child_spawned = true;
        in[0] = safe_close(in[0]);
        out[1] = safe_close(out[1]);
        err[1] = safe_close(err[1]);
        run->stdin_fd = in[1];
        run->streams[0].fd = out[0];
        run->streams[1].fd = err[0];

        /* Placement in the run's cgroup happens here, while the init is held (issue 5). */

        r = sandbox_child_release(&run->child);
        if (r < 0)
                return r;
        run->t_release = now_usec();
        return 0;

fail:
        for (int i = 0; i < 2; i++) {
                safe_close(in[i]);
                safe_close(out[i]);
                safe_close(err[i]);
        }
        return r;
}

int run_start(const RunEnv *env, const RunParams *p, RunDoneFn done, void *userdata, Run **ret) {
        Run *run = calloc(1, sizeof(*run));
        if (!run)
                return -ENOMEM;
        run->env = *env;
        run->done = done;
        run->userdata = userdata;
        run->stdin_fd = -EBADF;
        run->child = (SandboxChild) { .pidfd = -EBADF, .control_fd = -EBADF };
        run->timeout_s = p->timeout_s;
        run->queue_ms = p->queue_ms;
        output_init(&run->output, env->max_output_bytes);
        for (int i = 0; i < 2; i++)
                run->streams[i] = (RunStream) { .op.callback = on_stream, .run = run, .fd = -EBADF, .index = i };
        run->op_stdin.callback = on_stdin;
        run->op_control.callback = on_control;
        run->op_pidfd.callback = on_pidfd;
        run->op_timer.callback = on_timer;
        run->op_grace.callback = on_grace;
        run->op_start.callback = on_start_failed;
        run->code = malloc(p->code_len + 1);
        run->stdin_data = malloc(p->stdin_len + 1);
        if (!run->code || !run->stdin_data) {
                free(run->code);
                free(run->stdin_data);
                free(run);
                return -ENOMEM;
        }
        memcpy(run->code, p->code, p->code_len);
        run->code_len = p->code_len;
        if (p->stdin_len)
                memcpy(run->stdin_data, p->stdin_data, p->stdin_len);
        run->stdin_len = p->stdin_len;

        int r;
        if (!env->python) {
                run_fail(run, "the interpreter '%s' was not found in /usr/local/bin:/usr/bin:/bin "
                              "(MCP_EXEC_PYTHON)", env->python_name);
        } else if ((r = run_stage(run)) < 0) {
                run_fail(run, "cannot create the run's working directory in %s: %s", env->state_dir, strerror(-r));
        } else if ((r = run_spawn(run)) < 0) {
                run_fail(run, "cannot start the sandbox: %s", strerror(-r));
        }

        if (run->error) {
                /* Kill a half-started child, and answer from the loop, never from inside run_start. */
                if (run->child_spawned)
                        (void) sandbox_child_kill(&run->child);
                struct io_uring_sqe *sqe = ring_get_sqe(env->ring, &run->op_start);
                io_uring_prep_nop(sqe);
                *ret = run;
                return 0;
        }

        run->phase = RUN_RUNNING;
        stream_read(run, &run->streams[0]);
        stream_read(run, &run->streams[1]);
        control_read(run);
        struct io_uring_sqe *sqe = ring_get_sqe(env->ring, &run->op_pidfd);
        io_uring_prep_poll_add(sqe, run->child.pidfd, POLLIN);
        if (run->stdin_len > 0)
                stdin_write(run);
        else
                run->stdin_fd = safe_close(run->stdin_fd);
        timer_arm(run, &run->op_timer, &run->deadline, (uint64_t) run->timeout_s * 1000000u);
        *ret = run;
        return 0;
}

const char *run_error(const Run *run) {
        return run->error;
}

const char *run_id(const Run *run) {
        return run->id;
}

void run_result(const Run *run, McpExecResult *ret) {
        McpExecResult r = {
                .stdout_data = run->output.stream[0].data,
                .stdout_len = run->output.stream[0].len,
                .stderr_data = run->output.stream[1].data,
                .stderr_len = run->output.stream[1].len,
                .truncated = run->output.truncated,
                .timed_out = run->timed_out,
                .limits = "rlimit",
                .queue_ms = run->queue_ms,
        };
        uint64_t end = run->t_end ? run->t_end : now_usec();
        r.duration_ms = run->t_release && end > run->t_release ? (end - run->t_release) / 1000 : 0;

        if (run->timed_out || (run->killed && !run->exit_reported)) {
                /* mcp-exec's contract: -1 when timed out; the deadline kill is a SIGKILL. */
                r.exit_code = -1;
                r.signal = "SIGKILL";
        } else if (WIFEXITED(run->wait_status)) {
                r.exit_code = WEXITSTATUS(run->wait_status);
        } else if (WIFSIGNALED(run->wait_status)) {
                r.exit_code = -WTERMSIG(run->wait_status);
                r.signal = run->signame;
        }
        if (run->exit_reported) {
                r.cpu_user_us = run->report.utime_usec;
                r.cpu_system_us = run->report.stime_usec;
                r.memory_peak_bytes = run->report.maxrss_bytes;
        }
        *ret = r;
}

void run_release(Run *run) {
        run->released = true;
        run_maybe_free(run);
}
