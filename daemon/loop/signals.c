/* signals.c: the signalfd and its one read on the ring. */
#include <errno.h>
#include <stdlib.h>
#include <sys/signalfd.h>

#include "signals.h"

struct Signals {
        Ring *ring;
        RingOp op;
        int fd;
        struct signalfd_siginfo si;
        int received; /* last signal number, 0 if none */
};

static void on_signal(RingOp *op, int res) {
        Signals *s = container_of(op, Signals, op);
        if (res == (int) sizeof(s->si))
                s->received = (int) s->si.ssi_signo;
}

int signals_new(Ring *ring, const sigset_t *mask, Signals **ret) {
        _cleanup_free_ Signals *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (Signals) { .ring = ring, .op.callback = on_signal, .fd = signalfd(-1, mask, SFD_CLOEXEC) };
        if (s->fd < 0)
                return -errno;
        *ret = TAKE_PTR(s);
        return 0;
}

Signals *signals_free(Signals *s) {
        if (!s || s->op.busy)
                return NULL;
        safe_close(s->fd);
        free(s);
        return NULL;
}

void signals_start(Signals *s) {
        struct io_uring_sqe *sqe = ring_get_sqe(s->ring, &s->op);
        io_uring_prep_read(sqe, s->fd, &s->si, sizeof(s->si), (uint64_t) -1);
}

int signals_next(Signals *s) {
        if (!s->received || s->op.busy)
                return 0;
        int sig = s->received;
        s->received = 0; /* each signal is told once */
        signals_start(s);
        return sig;
}

void signals_stop(Signals *s) {
        ring_cancel(s->ring, &s->op);
}
