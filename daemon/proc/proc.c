/* proc.c: one sandboxed process (proc.h): its spawn, placement and release, its events on the ring,
 * its ends and its accounting reads, and the clean-up that leaves no init, zombie, cgroup or staging
 * directory behind. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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
#include "proc.h"
#include "str-util.h"

#define PROC_READ_BYTES (64u * 1024u)
/* A write of stdin at a time: a pipe takes what fits, the rest follows on the next completion. */
#define PROC_WRITE_BYTES ((size_t) 1 << 20)

typedef struct ProcStream {
        RingOp op;
        Proc *proc;
        int fd;
        int index;
        bool eof;
        char buf[PROC_READ_BYTES];
} ProcStream;

struct Proc {
        Ring *ring;
        Sandbox *sandbox;
        const ProcHandler *handler;
        void *userdata;
        char id[17];
        char *staging;
        SandboxChild child;
        CgroupRun *cgroup;
        int stdin_fd;
        ProcStream streams[2];

        bool spawned;
        bool placing;      /* systemd is making the scope: the init may not die yet */
        bool kill_pending; /* proc_kill_init() while placing: done once the placement is over */
        bool init_killed;
        bool init_exited;  /* reaped */
        bool abandoned;    /* proc_free() with operations in flight: freed by the last completion */
        bool leave;        /* proc_leave(): its processes outlive us, nothing is killed or reaped */
        bool adopted;      /* proc_adopt(): the init is not our child (waitid(2) cannot reap it) */

        const char *wbuf;
        size_t wlen, woff;
        bool wclose, wstop;

        SandboxReport report;
        uint64_t timer_want; /* when the timer is to fire (now_usec()); 0: never */
        struct __kernel_timespec timer_ts;
        RingOp op_stdin, op_control, op_pidfd, op_timer, op_let_go;
};

static const ProcHandler handler_none = {};

static void proc_destroy(Proc *p);

/* A completion of an abandoned proc: nothing is called, the last one frees it. Returns true when the
 * completion is to stop there. */
static bool proc_gone(Proc *p) {
        if (!p->abandoned)
                return false;
        if (!proc_busy(p))
                proc_destroy(p);
        return true;
}

static void staging_remove(Proc *p) {
        if (!p->staging)
                return;
        int r = rm_rf(p->staging);
        if (r < 0)
                log_warning_errno(r, "run %s: cannot remove its staging directory: %m, ignoring", p->id);
        free(p->staging);
        p->staging = NULL;
}

/* ---- the ring's completions ----------------------------------------------------------------- */

static void on_stream(RingOp *op, int res) {
        ProcStream *s = container_of(op, ProcStream, op);
        Proc *p = s->proc;
        if (proc_gone(p))
                return;
        if (res <= 0) {
                s->eof = true;
                s->fd = safe_close(s->fd);
        }
        if (p->handler->output)
                p->handler->output(p, s->index, s->buf, res, p->userdata);
}

static void stdin_submit(Proc *p) {
        struct io_uring_sqe *sqe = ring_get_sqe(p->ring, &p->op_stdin);
        size_t n = MIN(p->wlen - p->woff, PROC_WRITE_BYTES);
        io_uring_prep_write(sqe, p->stdin_fd, p->wbuf + p->woff, (unsigned) n, (uint64_t) -1);
}

static void on_stdin(RingOp *op, int res) {
        Proc *p = container_of(op, Proc, op_stdin);
        if (proc_gone(p))
                return;
        if (res > 0 && !p->wstop) {
                p->woff += (size_t) res;
                if (p->woff < p->wlen) {
                        stdin_submit(p);
                        return;
                }
        }
        int error = res > 0 && !p->wstop ? 0 : res < 0 ? res : -EPIPE;
        p->wbuf = NULL;
        if (p->wclose)
                p->stdin_fd = safe_close(p->stdin_fd);
        if (p->handler->written)
                p->handler->written(p, error, p->userdata);
}

static void on_control(RingOp *op, int res) {
        Proc *p = container_of(op, Proc, op_control);
        if (proc_gone(p))
                return;
        const SandboxReport *report = NULL;
        if (res == (int) sizeof(SandboxReport)) {
                report = &p->report;
                if (p->report.kind == SANDBOX_REPORT_FAILED)
                        p->report.detail[sizeof(p->report.detail) - 1] = '\0';
                /* Python runs: the init has copied the staging directory into the sandbox's own
                 * tmpfs, so the host copy of the caller's code and files can go now rather than at
                 * the end. */
                if (p->report.kind == SANDBOX_REPORT_STARTED)
                        staging_remove(p);
        }
        if (p->handler->report)
                p->handler->report(p, report, p->userdata);
}

static void on_pidfd(RingOp *op, int res) {
        Proc *p = container_of(op, Proc, op_pidfd);
        if (proc_gone(p))
                return;
        if (res < 0) {
                if (p->handler->exited)
                        p->handler->exited(p, NULL, p->userdata);
                return;
        }
        siginfo_t si = {};
        /* A pidfd is readable once its process has exited (pidfd_open(2)), child or not; only a
         * child's exit is ours to reap and read. */
        int r = p->adopted ? 0 : waitid((idtype_t) P_PIDFD, (id_t) p->child.pidfd, &si, WEXITED | WNOHANG);
        if (r == 0 && si.si_pid == 0 && !p->adopted) {
                proc_watch_exit(p); /* woken without an exit: watch again */
                return;
        }
        p->init_exited = true;
        if (p->handler->exited)
                p->handler->exited(p, &si, p->userdata);
}

static void timer_submit(Proc *p, uint64_t usec) {
        p->timer_ts = (struct __kernel_timespec) { .tv_sec = (long long) (usec / 1000000),
                                                   .tv_nsec = (long long) (usec % 1000000) * 1000 };
        struct io_uring_sqe *sqe = ring_get_sqe(p->ring, &p->op_timer);
        io_uring_prep_timeout(sqe, &p->timer_ts, 0, 0);
}

static void on_timer(RingOp *op, int res) {
        Proc *p = container_of(op, Proc, op_timer);
        if (proc_gone(p))
                return;
        if (p->timer_want == 0) {
                if (p->handler->settled)
                        p->handler->settled(p, p->userdata);
                return;
        }
        uint64_t now = now_usec();
        if (now < p->timer_want) {
                timer_submit(p, p->timer_want - now); /* moved meanwhile (its op was cancelled) */
                return;
        }
        p->timer_want = 0;
        if (p->handler->timer)
                p->handler->timer(p, p->userdata);
}

static void on_let_go(RingOp *op, int res) {
        Proc *p = container_of(op, Proc, op_let_go);
        if (proc_gone(p))
                return;
        /* Never leave the init waiting: the shutdown again, else the kill. */
        if (res < 0 && !p->init_exited &&
            (p->child.control_fd < 0 || shutdown(p->child.control_fd, SHUT_RDWR) < 0))
                (void) sandbox_child_kill(&p->child);
        if (p->handler->settled)
                p->handler->settled(p, p->userdata);
}

/* ---- making it ------------------------------------------------------------------------------ */

int proc_new(const ProcSpec *spec, const ProcHandler *handler, void *userdata, Proc **ret) {
        _cleanup_(proc_freep) Proc *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->ring = spec->ring;
        p->sandbox = spec->sandbox;
        p->child = (SandboxChild) { .pidfd = -EBADF, .control_fd = -EBADF, .egress_listen_fd = -EBADF };
        p->stdin_fd = -EBADF;
        for (int i = 0; i < 2; i++)
                p->streams[i] = (ProcStream) { .op.callback = on_stream, .proc = p, .fd = -EBADF,
                                               .index = i };
        p->op_stdin.callback = on_stdin;
        p->op_control.callback = on_control;
        p->op_pidfd.callback = on_pidfd;
        p->op_timer.callback = on_timer;
        p->op_let_go.callback = on_let_go;
        proc_set_handler(p, handler, userdata);
        snprintf(p->id, sizeof(p->id), "%s", spec->id);
        if (spec->cgroup && cgroup_backend(spec->cgroup) != CGROUP_BACKEND_NONE) {
                int r = cgroup_run_new(spec->cgroup, p->id, spec->backstop_s, spec->tenant, &p->cgroup);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

int proc_adopt(const ProcSpec *spec, pid_t pid, const ProcFds *fds, CgroupRun *cr, const ProcHandler *handler,
               void *userdata, Proc **ret) {
        _cleanup_(cgroup_run_freep) CgroupRun *cgroup = cr;
        _cleanup_close_ int pidfd = fds->pidfd, control_fd = fds->control_fd, stdin_fd = fds->stdin_fd,
                            stdout_fd = fds->stdout_fd, stderr_fd = fds->stderr_fd;
        Proc *p;
        int r = proc_new(&(ProcSpec) { .ring = spec->ring, .sandbox = spec->sandbox, .id = spec->id }, handler,
                         userdata, &p);
        if (r < 0)
                return r;
        p->cgroup = TAKE_PTR(cgroup);
        p->child = (SandboxChild) { .pid = pid, .pidfd = TAKE_FD(pidfd), .control_fd = TAKE_FD(control_fd),
                                    .egress_listen_fd = -EBADF };
        p->stdin_fd = TAKE_FD(stdin_fd);
        p->streams[0].fd = TAKE_FD(stdout_fd);
        p->streams[1].fd = TAKE_FD(stderr_fd);
        p->spawned = true;
        p->adopted = true;
        *ret = p;
        return 0;
}

void proc_fds(const Proc *p, ProcFds *ret) {
        *ret = (ProcFds) {
                .pidfd = p->child.pidfd,
                .control_fd = p->child.control_fd,
                .stdin_fd = p->stdin_fd,
                .stdout_fd = p->streams[0].fd,
                .stderr_fd = p->streams[1].fd,
                .cgroup_fd = p->cgroup ? cgroup_run_fd(p->cgroup) : -EBADF,
                .payload_fd = p->cgroup ? cgroup_run_payload_fd(p->cgroup) : -EBADF,
        };
}

void proc_set_handler(Proc *p, const ProcHandler *handler, void *userdata) {
        p->handler = handler ?: &handler_none;
        p->userdata = userdata;
}

int proc_staging_make(Proc *p, const char *path) {
        staging_remove(p);
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        if (mkdir(copy, 0700) < 0)
                return -errno;
        p->staging = TAKE_PTR(copy); /* ours from here, whatever becomes of the rest */
        int dfd = open(p->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dfd < 0 ? -errno : dfd;
}

void proc_staging_remove(Proc *p) {
        staging_remove(p);
}

/* Both ends of a pipe not handed over yet. */
static void pipe_closep(int (*q)[2]) {
        (*q)[0] = safe_close((*q)[0]);
        (*q)[1] = safe_close((*q)[1]);
}

int proc_spawn(Proc *p, const ProcSpawn *spawn) {
        _cleanup_(pipe_closep) int in[2] = { -EBADF, -EBADF };
        _cleanup_(pipe_closep) int out[2] = { -EBADF, -EBADF };
        _cleanup_(pipe_closep) int err[2] = { -EBADF, -EBADF };

        if (p->spawned)
                return -EBUSY;
        /* pipe2(2) leaves the array as it was when it fails. */
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
                return -errno;
        SandboxRunSpec s = {
                .python = spawn->python,
                .env_dir = spawn->env_dir,
                .staging_dir = p->staging,
                .script = spawn->script,
                .stdin_fd = in[0],
                .stdout_fd = out[1],
                .stderr_fd = err[1],
                .supervisor_cgroup_fd = p->cgroup ? cgroup_run_supervisor_fd(p->cgroup) : -EBADF,
                .payload_cgroup_fd = p->cgroup ? cgroup_run_payload_fd(p->cgroup) : -EBADF,
                .rlimits = !p->cgroup,
                /* With a cgroup the lower weight is its cpu.weight (proc_set_cpu_weight()), not nice. */
                .background = spawn->background && !p->cgroup,
                .egress_port = spawn->egress_port,
        };
        int r = sandbox_spawn(p->sandbox, &s, &p->child);
        if (r < 0)
                return r;
        p->spawned = true;
        /* The child's ends close on the way out; ours stay with the proc. */
        p->stdin_fd = TAKE_FD(in[1]);
        p->streams[0].fd = TAKE_FD(out[0]);
        p->streams[1].fd = TAKE_FD(err[0]);
        return 0;
}

int proc_take_egress_fd(Proc *p) {
        return TAKE_FD(p->child.egress_listen_fd);
}

static void cgroup_placed(CgroupRun *cr, int error, const char *message, void *userdata) {
        Proc *p = userdata;
        p->placing = false;
        if (p->kill_pending)
                (void) proc_kill_init(p); /* the kill that waited for the scope */
        if (p->handler->placed)
                p->handler->placed(p, error, message, p->userdata);
}

int proc_place(Proc *p, char **reterr_message) {
        if (!p->cgroup)
                return 1;
        int r = cgroup_run_place(p->cgroup, p->child.pid, p->child.pidfd, cgroup_placed, p, reterr_message);
        if (r == 0)
                p->placing = true;
        return r;
}

void proc_place_cancel(Proc *p) {
        if (!p->placing)
                return;
        cgroup_run_cancel_place(p->cgroup);
        p->placing = false;
        if (p->kill_pending)
                (void) proc_kill_init(p);
}

int proc_release(Proc *p) {
        return sandbox_child_release_into(&p->child, p->cgroup ? cgroup_run_payload_fd(p->cgroup) : -EBADF);
}

/* ---- operations ----------------------------------------------------------------------------- */

void proc_watch_exit(Proc *p) {
        struct io_uring_sqe *sqe = ring_get_sqe(p->ring, &p->op_pidfd);
        io_uring_prep_poll_add(sqe, p->child.pidfd, POLLIN);
}

void proc_watch_reports(Proc *p) {
        struct io_uring_sqe *sqe = ring_get_sqe(p->ring, &p->op_control);
        io_uring_prep_recv(sqe, p->child.control_fd, &p->report, sizeof(p->report), 0);
}

void proc_read(Proc *p, int stream, size_t max) {
        ProcStream *s = &p->streams[stream];
        struct io_uring_sqe *sqe = ring_get_sqe(p->ring, &s->op);
        io_uring_prep_read(sqe, s->fd, s->buf, (unsigned) MIN(max, sizeof(s->buf)), (uint64_t) -1);
}

void proc_write(Proc *p, const void *buf, size_t len, bool close_after) {
        p->wbuf = buf;
        p->wlen = len;
        p->woff = 0;
        p->wclose = close_after;
        p->wstop = false;
        stdin_submit(p);
}

void proc_stdin_close(Proc *p) {
        p->stdin_fd = safe_close(p->stdin_fd);
}

/* The timer is a wanted moment, not an operation: an op still on the ring is never submitted again
 * (its CQE would come twice); it is cancelled and on_timer() submits the one wanted now, if any. */
void proc_timer_arm(Proc *p, uint64_t usec) {
        p->timer_want = now_usec() + usec;
        if (p->op_timer.busy)
                ring_cancel(p->ring, &p->op_timer);
        else
                timer_submit(p, usec);
}

void proc_timer_clear(Proc *p) {
        p->timer_want = 0;
        ring_cancel(p->ring, &p->op_timer);
}

void proc_cancel(Proc *p, unsigned ops) {
        if (ops & PROC_OP_STREAMS)
                for (int i = 0; i < 2; i++)
                        ring_cancel(p->ring, &p->streams[i].op);
        if (ops & PROC_OP_STDIN) {
                p->wstop = true;
                ring_cancel(p->ring, &p->op_stdin);
        }
        if (ops & PROC_OP_REPORTS)
                ring_cancel(p->ring, &p->op_control);
        if (ops & PROC_OP_EXIT)
                ring_cancel(p->ring, &p->op_pidfd);
        if (ops & PROC_OP_TIMER)
                proc_timer_clear(p);
}

bool proc_busy(const Proc *p) {
        return p->streams[0].op.busy || p->streams[1].op.busy || p->op_stdin.busy || p->op_control.busy ||
               p->op_pidfd.busy || p->op_timer.busy || p->op_let_go.busy;
}

/* ---- ends ----------------------------------------------------------------------------------- */

int proc_kill_payload(Proc *p) {
        if (!p->cgroup || cgroup_run_payload_fd(p->cgroup) < 0)
                return -EBADF;
        return cgroup_run_kill(p->cgroup);
}

int proc_kill_init(Proc *p) {
        if (!p->spawned || p->init_exited || p->init_killed)
                return 0;
        if (p->placing) {
                p->kill_pending = true;
                return 0;
        }
        p->kill_pending = false;
        p->init_killed = true;
        return sandbox_child_kill(&p->child);
}

void proc_interrupt(Proc *p) {
        (void) sandbox_child_command(&p->child, SANDBOX_COMMAND_INTERRUPT);
}

int proc_keep(Proc *p) {
        return sandbox_child_command(&p->child, SANDBOX_COMMAND_KEEP);
}

void proc_let_go(Proc *p) {
        if (p->child.control_fd >= 0)
                (void) shutdown(p->child.control_fd, SHUT_RDWR);
}

void proc_let_go_later(Proc *p) {
        struct io_uring_sqe *sqe = ring_get_sqe(p->ring, &p->op_let_go);
        io_uring_prep_shutdown(sqe, p->child.control_fd, SHUT_RDWR);
}

/* ---- accounting ----------------------------------------------------------------------------- */

int proc_read_stats(Proc *p, CgroupStats *ret) {
        if (!p->cgroup || cgroup_run_payload_fd(p->cgroup) < 0)
                return -ENODATA;
        return cgroup_run_read(p->cgroup, ret);
}

int proc_read_usage(Proc *p, CgroupUsage *ret) {
        if (!p->cgroup || cgroup_run_payload_fd(p->cgroup) < 0)
                return -ENODATA;
        return cgroup_run_usage(p->cgroup, ret);
}

int proc_ask_usage(Proc *p) {
        return sandbox_child_command(&p->child, SANDBOX_COMMAND_USAGE);
}

int proc_freeze(Proc *p, bool frozen) {
        if (p->cgroup)
                return cgroup_run_freeze(p->cgroup, frozen);
        return sandbox_child_command(&p->child, frozen ? SANDBOX_COMMAND_STOP : SANDBOX_COMMAND_CONT);
}

int proc_set_cpu_weight(Proc *p, uint64_t weight) {
        if (!p->cgroup)
                return -ENODATA;
        return cgroup_run_set_cpu_weight(p->cgroup, weight);
}

int proc_foreground(Proc *p) {
        return sandbox_child_foreground(&p->child);
}

/* ---- what it is ----------------------------------------------------------------------------- */

const char *proc_id(const Proc *p) {
        return p->id;
}

pid_t proc_pid(const Proc *p) {
        return p->spawned ? p->child.pid : 0;
}

int proc_pidfd(const Proc *p) {
        return p->child.pidfd;
}

int proc_stream_fd(const Proc *p, int stream) {
        return p->streams[stream].fd;
}

bool proc_has_cgroup(const Proc *p) {
        return p->cgroup;
}

const char *proc_limits(const Proc *p) {
        return p->cgroup ? "cgroup" : "rlimit";
}

const char *proc_unit(const Proc *p) {
        return p->cgroup ? cgroup_run_unit(p->cgroup) : NULL;
}

bool proc_spawned(const Proc *p) {
        return p->spawned;
}

bool proc_placing(const Proc *p) {
        return p->placing;
}

bool proc_init_exited(const Proc *p) {
        return p->init_exited;
}

bool proc_eof(const Proc *p, int stream) {
        return p->streams[stream].eof;
}

/* ---- the end -------------------------------------------------------------------------------- */

static void proc_destroy(Proc *p) {
        p->stdin_fd = safe_close(p->stdin_fd);
        for (int i = 0; i < 2; i++)
                p->streams[i].fd = safe_close(p->streams[i].fd);
        if (p->spawned && !p->leave && !p->init_exited) {
                /* Never leave a live init or a zombie behind (a start that failed half-way, an init
                 * that outlived its grace, a ready sandbox not used). An adopted init is PID 1's
                 * child: PID 1 reaps it. */
                (void) sandbox_child_kill(&p->child);
                siginfo_t si;
                while (!p->adopted && waitid((idtype_t) P_PIDFD, (id_t) p->child.pidfd, &si, WEXITED) < 0 &&
                       errno == EINTR)
                        ;
        }
        if (p->spawned)
                sandbox_child_done(&p->child);
        /* After the init is reaped: its PID namespace, hence every process of it, is gone (cgroupfs
         * removes empty cgroups only); a placement in flight is given up, and the scope systemd may
         * still make is empty and collected. */
        cgroup_run_free(p->cgroup);
        staging_remove(p);
        free(p);
}

Proc *proc_free(Proc *p) {
        if (!p)
                return NULL;
        if (!proc_busy(p)) {
                proc_destroy(p);
                return NULL;
        }
        /* Its reads complete at EOF once the sandbox is dead, the rest when cancelled. */
        p->abandoned = true;
        p->handler = &handler_none;
        if (p->spawned && !p->init_exited && !p->leave)
                (void) sandbox_child_kill(&p->child);
        proc_cancel(p, PROC_OP_STREAMS | PROC_OP_STDIN | PROC_OP_REPORTS | PROC_OP_EXIT | PROC_OP_TIMER);
        return NULL;
}

Proc *proc_leave(Proc *p) {
        if (!p)
                return NULL;
        p->leave = true;
        return proc_free(p);
}
