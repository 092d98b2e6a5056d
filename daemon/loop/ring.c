/* ring.c: the io_uring loop (liburing). Ops are tagged by pointer in user_data; a NULL user_data
 * marks completions nobody waits for (the cancel requests themselves). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "ring.h"

struct Ring {
        struct io_uring uring;
        /* Every SQE gets exactly one CQE (no multishot, no CQE_SKIP_SUCCESS): got minus seen. */
        unsigned inflight;
        RingAfterFn after;
        void *after_userdata;
};

int ring_new(unsigned entries, Ring **ret) {
        _cleanup_free_ Ring *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        int k = io_uring_queue_init(entries, &r->uring, 0);
        if (k < 0)
                return k;
        /* Children are cloned without CLONE_VM: keep them from inheriting the ring's mappings
         * (liburing man page io_uring_ring_dontfork(3)). */
        k = io_uring_ring_dontfork(&r->uring);
        if (k < 0) {
                io_uring_queue_exit(&r->uring);
                return k;
        }
        *ret = TAKE_PTR(r);
        return 0;
}

Ring *ring_free(Ring *r) {
        if (!r)
                return NULL;
        io_uring_queue_exit(&r->uring);
        free(r);
        return NULL;
}

int ring_set_after(Ring *r, RingAfterFn fn, void *userdata) {
        if (fn && r->after)
                return -EBUSY;
        r->after = fn;
        r->after_userdata = fn ? userdata : NULL;
        return 0;
}

struct io_uring_sqe *ring_get_sqe(Ring *r, RingOp *op) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&r->uring);
        while (!sqe) {
                (void) io_uring_submit(&r->uring);
                sqe = io_uring_get_sqe(&r->uring);
        }
        io_uring_sqe_set_data(sqe, op);
        r->inflight++;
        if (op)
                op->busy = true;
        return sqe;
}

void ring_cancel(Ring *r, RingOp *op) {
        if (!op->busy)
                return;
        struct io_uring_sqe *sqe = ring_get_sqe(r, NULL);
        io_uring_prep_cancel(sqe, op, 0);
}

unsigned ring_inflight(const Ring *r) {
        return r->inflight;
}

int ring_submit(Ring *r) {
        int k = io_uring_submit(&r->uring);
        return k < 0 && k != -EINTR ? k : 0;
}

int ring_run_once(Ring *r, uint64_t timeout_usec) {
        struct io_uring_cqe *cqe;
        struct __kernel_timespec ts = {
                .tv_sec = (long long) (timeout_usec / 1000000),
                .tv_nsec = (long long) (timeout_usec % 1000000) * 1000,
        };
        int k = io_uring_submit_and_wait_timeout(&r->uring, &cqe, 1, timeout_usec ? &ts : NULL, NULL);
        if (k < 0 && k != -ETIME && k != -EINTR)
                return k;

        while (io_uring_peek_cqe(&r->uring, &cqe) == 0) {
                RingOp *op = io_uring_cqe_get_data(cqe);
                int res = cqe->res;
                /* Mark the CQE seen before the callback: the callback may submit new work. */
                io_uring_cqe_seen(&r->uring, cqe);
                r->inflight--;
                if (op) {
                        op->busy = false;
                        op->callback(op, res);
                }
        }
        if (r->after)
                r->after(r->after_userdata);
        return 0;
}
