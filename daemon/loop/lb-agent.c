/* lb-agent.c: the agent check's listener: one accept on the ring at a time, one line, close. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <systemd/sd-daemon.h>

#include "fd-util.h"
#include "lb-agent.h"
#include "log.h"
#include "socket-util.h"

/* Out of fds or memory: accept again after this pause, not in a loop of failures. */
#define LB_AGENT_RETRY_NSEC (100 * 1000 * 1000)

struct LbAgent {
        Ring *ring;
        int fd;
        LbAgentLoadFn load;
        void *userdata;
        RingOp op_accept, op_retry;
        struct __kernel_timespec retry_ts;
        bool stopped;
        bool warned; /* a failing accept is logged once */
};

size_t lb_agent_answer(const LbAgentLoad *load, char buf[static LB_AGENT_LINE_MAX]) {
        if (load->draining)
                return (size_t) snprintf(buf, LB_AGENT_LINE_MAX, "drain\n");
        uint64_t slots = load->slots ? load->slots : 1;
        uint64_t busy = (uint64_t) load->running + load->queued;
        uint64_t pct = busy >= slots ? 0 : (slots - busy) * 100 / slots;
        if (load->pool_size > 0) {
                uint64_t ready = load->pool_ready < load->pool_size ? load->pool_ready : load->pool_size;
                pct = pct * (3 * (uint64_t) load->pool_size + ready) / (4 * (uint64_t) load->pool_size);
        }
        if (pct < 1)
                pct = 1;
        return (size_t) snprintf(buf, LB_AGENT_LINE_MAX, "ready %u%%\n", (unsigned) pct);
}

static void lb_agent_accept(LbAgent *a) {
        if (a->stopped)
                return;
        io_uring_prep_accept(ring_get_sqe(a->ring, &a->op_accept), a->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

/* One line and close: the connection is ours only for these few calls, which do not block (a new
 * socket's send buffer takes 16 bytes), so a client that sends or stays holds nothing of ours. */
static void lb_agent_answer_fd(LbAgent *a, int fd) {
        LbAgentLoad load = {};
        a->load(a->userdata, &load);
        char line[LB_AGENT_LINE_MAX];
        size_t n = lb_agent_answer(&load, line);
        (void) send(fd, line, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        /* FIN after the line; what the client sent (agent-send) is read away, or the close would
         * answer with a reset that may reach it before the line. */
        (void) shutdown(fd, SHUT_WR);
        char sink[256];
        (void) recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
        safe_close(fd);
}

static void on_retry(RingOp *op, int res) {
        LbAgent *a = container_of(op, LbAgent, op_retry);
        lb_agent_accept(a);
}

static void on_accept(RingOp *op, int res) {
        LbAgent *a = container_of(op, LbAgent, op_accept);
        if (res >= 0) {
                lb_agent_answer_fd(a, res);
                lb_agent_accept(a);
                return;
        }
        if (res == -ECANCELED || a->stopped)
                return;
        switch (res) {
        case -EINTR:
        case -EAGAIN:
        case -ECONNABORTED:
        case -EPROTO:
        case -EPERM: /* a firewall refused it */
                lb_agent_accept(a);
                return;
        default:
                if (!a->warned)
                        log_warning_errno(res, "agent check (MCP_EXEC_AGENT_ADDR): cannot accept: %m; trying again");
                a->warned = true;
                a->retry_ts = (struct __kernel_timespec) { .tv_nsec = LB_AGENT_RETRY_NSEC };
                io_uring_prep_timeout(ring_get_sqe(a->ring, &a->op_retry), &a->retry_ts, 0, 0);
        }
}

/* The socket systemd passed that is bound to addr, or -ENOENT. */
static int lb_agent_passed(const char *addr) {
        int n = sd_listen_fds(0);
        for (int i = SD_LISTEN_FDS_START; i < SD_LISTEN_FDS_START + MAX(n, 0); i++)
                if (sd_is_socket(i, AF_UNSPEC, SOCK_STREAM, 1) > 0 && socket_bound_to(i, addr))
                        return i;
        return -ENOENT;
}

int lb_agent_new(Ring *ring, const char *addr, LbAgentLoadFn load, void *userdata, LbAgent **ret,
                 const char **reterr_what) {
        _cleanup_free_ LbAgent *a = calloc(1, sizeof(*a));
        if (!a) {
                *reterr_what = "cannot allocate it";
                return -ENOMEM;
        }
        *a = (LbAgent) { .ring = ring, .fd = -EBADF, .load = load, .userdata = userdata,
                         .op_accept.callback = on_accept, .op_retry.callback = on_retry };
        int fd = lb_agent_passed(addr);
        if (fd >= 0) {
                int r = fd_set_nonblock(fd, true);
                if (r < 0) {
                        *reterr_what = "cannot make the socket systemd passed nonblocking";
                        return r;
                }
        } else {
                int r = socket_listen_tcp(addr, &fd);
                if (r < 0) {
                        *reterr_what = "cannot listen on it (and systemd passed no socket bound to it)";
                        return r;
                }
        }
        a->fd = fd;
        lb_agent_accept(a);
        *ret = TAKE_PTR(a);
        return 0;
}

void lb_agent_stop(LbAgent *a) {
        if (!a || a->stopped)
                return;
        a->stopped = true;
        if (a->op_accept.busy)
                ring_cancel(a->ring, &a->op_accept);
        if (a->op_retry.busy)
                ring_cancel(a->ring, &a->op_retry);
}

LbAgent *lb_agent_free(LbAgent *a) {
        if (!a || a->op_accept.busy || a->op_retry.busy)
                return NULL;
        safe_close(a->fd);
        free(a);
        return NULL;
}
