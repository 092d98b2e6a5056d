/* stdio-transport.c: the stdio transport. Reads fd 0 through the ring, frames lines (each message
 * capped), hands them to the session's McpServer and its actions to dispatch.c, and writes replies
 * to fd 1 in order, one write in flight, so a client that does not read never blocks the loop. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "dispatch.h"
#include "log.h"
#include "stdio-transport.h"
#include "str-util.h"

#define STDIO_READ_BUF_BYTES (64u * 1024u)
/* Progress is due at each whole second of a call: looked at four times a second, as HTTP does. */
#define STDIO_TICK_NSEC (250u * 1000u * 1000u)

struct Stdio {
        Ring *ring;
        Scheduler *scheduler;
        McpServer *mcp;
        McpLineReader lines;
        size_t max_message_bytes;
        int in_fd, out_fd; /* fd 0 and fd 1, or a unit test's pipes (stdio_start_fds()) */

        RingOp op_read;
        bool reading;     /* a read may be submitted */
        bool input_done;  /* EOF or stopped */
        bool eof;         /* the end of input was read (its lines may still wait behind a held one) */
        bool got_input;   /* a read brought bytes, or the end of input (stdio_got_input()) */
        char *held;       /* a message the session holds (MCP_ACTION_HOLD) until stdio_release(): no
                           * line after it is handled and no read is submitted until then */
        size_t held_len;
        char rbuf[STDIO_READ_BUF_BYTES];

        RingOp op_write;
        Buf pending;      /* replies not yet handed to the kernel */
        Buf inflight;     /* the write in flight */
        size_t inflight_off;
        bool output_failed;
        Dispatch dispatch; /* the session's calls in flight */

        RingOp op_hup;    /* POLLERR/POLLHUP on fd 1: the client closed its end of stdout */

        RingOp op_tick;   /* armed while a call asked for progress (dispatch_progress_tick()) */
        struct __kernel_timespec tick_ts;
};

static void stdio_flush(Stdio *t);

static void stdio_queue_reply(Stdio *t, char *reply) {
        if (!reply)
                return;
        if (!t->output_failed &&
            (buf_append(&t->pending, reply, strlen(reply)) < 0 || buf_append(&t->pending, "\n", 1) < 0))
                log_error("out of memory queueing a reply; dropped");
        free(reply);
        stdio_flush(t);
}

/* Nobody will read the answers: end the runs and stop. */
static void stdio_output_gone(Stdio *t, const char *why) {
        if (!t->output_failed)
                log_info("stdout is closed (%s): the client went away", why);
        t->output_failed = true;
        buf_done(&t->pending);
        if (t->op_write.busy)
                ring_cancel(t->ring, &t->op_write); /* its buffer is freed when it completes */
        else {
                buf_done(&t->inflight);
                t->inflight_off = 0;
        }
        ring_cancel(t->ring, &t->op_hup);
        ring_cancel(t->ring, &t->op_tick);
        dispatch_cancel_all(&t->dispatch);
        stdio_stop_reading(t);
}

static void on_write(RingOp *op, int res) {
        Stdio *t = container_of(op, Stdio, op_write);

        if (res < 0 || t->output_failed) {
                stdio_output_gone(t, strerror(res < 0 ? -res : EPIPE));
                return;
        }
        t->inflight_off += (size_t) res;
        if (t->inflight_off >= t->inflight.len) {
                t->inflight.len = 0;
                t->inflight_off = 0;
        }
        stdio_flush(t);
}

static void stdio_flush(Stdio *t) {
        if (t->op_write.busy || t->output_failed)
                return;
        if (t->inflight.len == 0) {
                if (t->pending.len == 0)
                        return;
                Buf swap = t->inflight;
                t->inflight = t->pending;
                t->pending = swap;
                t->pending.len = 0;
                t->inflight_off = 0;
        }
        struct io_uring_sqe *sqe = ring_get_sqe(t->ring, &t->op_write);
        io_uring_prep_write(sqe, t->out_fd, t->inflight.data + t->inflight_off,
                            (unsigned) MIN(t->inflight.len - t->inflight_off, (size_t) 1 << 30), (uint64_t) -1);
}

static void on_answer(Dispatch *d, void *ctx, char *reply) {
        stdio_queue_reply(d->userdata, reply);
}

static void stdio_arm_tick(Stdio *t) {
        if (t->op_tick.busy || t->output_failed)
                return;
        t->tick_ts = (struct __kernel_timespec) { .tv_nsec = STDIO_TICK_NSEC };
        io_uring_prep_timeout(ring_get_sqe(t->ring, &t->op_tick), &t->tick_ts, 0, 0);
}

/* Progress of the calls that asked for it, interleaved with the replies on stdout (JSON-RPC
 * lets notifications come between responses); the timer stops when no such call is left. */
static void on_tick(RingOp *op, int res) {
        Stdio *t = container_of(op, Stdio, op_tick);
        if (res == -ECANCELED || t->output_failed)
                return;
        dispatch_progress_tick(&t->dispatch, now_usec());
        if (dispatch_wants_progress(&t->dispatch))
                stdio_arm_tick(t);
}

static void on_call_new(Dispatch *d, DispatchCall *c, void *ctx) {
        if (c->progress_token || c->inline_created)
                stdio_arm_tick(d->userdata);
}

/* A progress notification: stdout carries every message of the one session. */
static bool on_call_notify(Dispatch *d, DispatchCall *c, const char *msg) {
        Stdio *t = d->userdata;
        if (t->output_failed)
                return false;
        char *copy = strdup(msg);
        if (!copy)
                return false;
        stdio_queue_reply(t, copy);
        return true;
}

static void on_call_reply(Dispatch *d, DispatchCall *c, char *reply) {
        stdio_queue_reply(d->userdata, reply);
}

static const DispatchOps stdio_dispatch_ops = {
        .answer = on_answer,
        .call_new = on_call_new,
        .call_reply = on_call_reply,
        .call_notify = on_call_notify,
};

static void handle_message(Stdio *t, const char *line, size_t len) {
        if (str_is_blank(line, len))
                return; /* tolerate empty lines between messages */

        McpAction a;
        if (mcp_server_handle(t->mcp, line, len, &a) < 0) {
                log_error("out of memory handling a message");
                stdio_queue_reply(t, mcp_error_reply_new(MCP_ERROR_INTERNAL, "Internal error: out of memory"));
        } else if (a.kind == MCP_ACTION_HOLD) {
                /* Kept whole, and everything after it waits in the line reader and the pipe: the
                 * messages are still handled in the order they came. */
                t->held = malloc(len ?: 1); /* the line's bytes as they are (NULs too) */
                t->held_len = len;
                if (t->held)
                        memcpy(t->held, line, len);
                else {
                        log_error("out of memory handling a message");
                        stdio_queue_reply(t, mcp_error_reply_new(MCP_ERROR_INTERNAL, "Internal error: out of memory"));
                }
        } else
                dispatch_action(&t->dispatch, &a, NULL);
        mcp_action_done(&a);
}

/* A client that vanishes (closes stdout, with or without stdin) would otherwise only be noticed
 * at the next reply, which for a long run comes at its deadline: watch fd 1 for the error a pipe
 * reports once its reader is gone (pipe(7): POLLERR), or a hangup. A regular file or /dev/null
 * never reports either, and the poll just stays armed. */
static void on_hup(RingOp *op, int res) {
        Stdio *t = container_of(op, Stdio, op_hup);

        if (res < 0 || !(res & (POLLERR | POLLHUP)))
                return; /* cancelled, or nothing to watch */
        stdio_output_gone(t, "POLLERR/POLLHUP on fd 1");
}

static void stdio_read(Stdio *t) {
        struct io_uring_sqe *sqe = ring_get_sqe(t->ring, &t->op_read);
        io_uring_prep_read(sqe, t->in_fd, t->rbuf, sizeof(t->rbuf), (uint64_t) -1);
}

static void oversize(Stdio *t) {
        char msg[160];
        snprintf(msg, sizeof(msg), "Invalid Request: message longer than %zu bytes (MCP_EXEC_MAX_MESSAGE_BYTES)",
                 t->max_message_bytes);
        stdio_queue_reply(t, mcp_error_reply_new(MCP_ERROR_INVALID_REQUEST, msg));
}

/* Handles the lines read so far, in order, until one is held; at the end of input, the last
 * unterminated line too, and then the input is done. Then reads on, unless a line is held. */
static void stdio_take_lines(Stdio *t) {
        const char *line;
        size_t len;
        McpLineStatus st;

        while (!t->held && (st = mcp_line_reader_next(&t->lines, &line, &len)) != MCP_LINE_NONE) {
                if (st == MCP_LINE_OVERSIZE)
                        oversize(t);
                else
                        handle_message(t, line, len);
        }
        if (t->eof)
                /* EOF: answer a last unterminated line, then finish what is in flight. */
                while (!t->held && (st = mcp_line_reader_finish(&t->lines, &line, &len)) != MCP_LINE_NONE) {
                        if (st == MCP_LINE_OVERSIZE)
                                oversize(t);
                        else
                                handle_message(t, line, len);
                }
        if (t->held || !t->reading)
                return;
        if (t->eof) {
                t->reading = false;
                t->input_done = true;
        } else
                stdio_read(t);
}

static void on_read(RingOp *op, int res) {
        Stdio *t = container_of(op, Stdio, op_read);

        if (!t->reading)
                return;
        if (res >= 0) /* bytes, or the end of input */
                t->got_input = true;
        if (res > 0) {
                if (mcp_line_reader_feed(&t->lines, t->rbuf, (size_t) res) < 0)
                        log_error("out of memory reading stdin");
        } else if (res == -EINTR || res == -EAGAIN) {
                stdio_read(t);
                return;
        } else {
                if (res < 0)
                        log_warning("reading stdin failed: %s; treating it as end of input", strerror(-res));
                t->eof = true;
        }
        stdio_take_lines(t);
}

void stdio_release(Stdio *t) {
        _cleanup_free_ char *held = TAKE_PTR(t->held);
        if (!held || !t->reading)
                return; /* stopped meanwhile: what was held goes unanswered, like input not yet read */
        handle_message(t, held, t->held_len);
        stdio_take_lines(t);
}

int stdio_start(Ring *ring, Scheduler *scheduler, McpServer *mcp, size_t max_message_bytes, Stdio **ret) {
        return stdio_start_fds(ring, scheduler, mcp, max_message_bytes, STDIN_FILENO, STDOUT_FILENO, ret);
}

int stdio_start_fds(Ring *ring, Scheduler *scheduler, McpServer *mcp, size_t max_message_bytes, int in_fd,
                    int out_fd, Stdio **ret) {
        Stdio *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->ring = ring;
        t->in_fd = in_fd;
        t->out_fd = out_fd;
        t->scheduler = scheduler;
        t->mcp = mcp;
        t->max_message_bytes = max_message_bytes;
        dispatch_init(&t->dispatch, scheduler, &stdio_dispatch_ops, t);
        mcp_line_reader_init(&t->lines, max_message_bytes);
        t->op_read.callback = on_read;
        t->op_write.callback = on_write;
        t->op_hup.callback = on_hup;
        t->op_tick.callback = on_tick;
        t->reading = true;
        stdio_read(t);
        io_uring_prep_poll_add(ring_get_sqe(ring, &t->op_hup), out_fd, POLLERR | POLLHUP);
        *ret = t;
        return 0;
}

void stdio_refuse_held(Stdio *t) {
        _cleanup_free_ char *held = TAKE_PTR(t->held);
        if (held)
                handle_message(t, held, t->held_len);
        /* What was read after it is answered too (refused alike); nothing more is read. */
        bool reading = t->reading;
        t->reading = false;
        stdio_take_lines(t);
        t->reading = reading;
}

bool stdio_got_input(const Stdio *t) {
        return t->got_input;
}

void stdio_stop_reading(Stdio *t) {
        if (!t->reading)
                return;
        t->reading = false;
        t->input_done = true;
        ring_cancel(t->ring, &t->op_read);
}

void stdio_set_tasks(Stdio *t, DispatchTasks *tasks) {
        dispatch_set_tasks(&t->dispatch, tasks, "stdio");
}

bool stdio_finished(const Stdio *t) {
        if (t->output_failed)
                return t->dispatch.n_calls == 0;
        return t->input_done && t->dispatch.n_calls == 0 && t->pending.len == 0 && t->inflight.len == 0;
}

bool stdio_client_gone(const Stdio *t) {
        return t->output_failed;
}

void stdio_cancel_io(Stdio *t) {
        if (!t)
                return;
        ring_cancel(t->ring, &t->op_read);
        ring_cancel(t->ring, &t->op_write);
        ring_cancel(t->ring, &t->op_hup);
        ring_cancel(t->ring, &t->op_tick);
}

bool stdio_io_busy(const Stdio *t) {
        return t && (t->op_read.busy || t->op_write.busy || t->op_hup.busy || t->op_tick.busy);
}

void stdio_free(Stdio *t) {
        if (!t)
                return;
        if (stdio_io_busy(t))
                return; /* leak rather than let the kernel write into freed memory; we exit next */
        dispatch_detach(&t->dispatch); /* answers that come after this are dropped */
        free(t->held);
        mcp_line_reader_done(&t->lines);
        buf_done(&t->pending);
        buf_done(&t->inflight);
        free(t);
}
