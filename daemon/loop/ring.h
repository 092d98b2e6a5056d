/* ring.h: the one io_uring loop. Every operation in flight is a RingOp owned by its object (a run,
 * a transport); the CQE's user_data points back at it, so completions dispatch without lookups. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <liburing.h>

#include "cleanup.h"

typedef struct RingOp RingOp;
typedef void (*RingCallback)(RingOp *op, int res);

struct RingOp {
        RingCallback callback;
        bool busy; /* submitted and its CQE not yet seen: the op's buffers must stay alive */
};

/* Opaque: its owner (the daemon) makes and frees it, every other module holds a pointer. */
typedef struct Ring Ring;

/* Called after every batch of completions: lets a library with its own buffered state (sd-bus)
 * process what arrived and re-arm its fd and timeout. */
typedef void (*RingAfterFn)(void *userdata);

#define container_of(ptr, type, member) ((type *) ((char *) (ptr) - offsetof(type, member)))

int ring_new(unsigned entries, Ring **ret);
Ring *ring_free(Ring *r);
DEFINE_POINTER_CLEANUP(Ring, ring_free)

/* Installs (fn non-NULL) or removes (fn NULL) the one after-batch hook. Only one module may hold
 * it: -EBUSY when another hook is installed. */
int ring_set_after(Ring *r, RingAfterFn fn, void *userdata);

/* An SQE for op (flushing the submission queue first if it is full). op->callback must be set.
 * Never returns NULL. */
struct io_uring_sqe *ring_get_sqe(Ring *r, RingOp *op);

/* Asks the kernel to cancel op if it is in flight; its CQE still arrives (with -ECANCELED or its
 * real result), so its buffers must live until then. */
void ring_cancel(Ring *r, RingOp *op);

/* Operations submitted (or queued for submission) whose CQE has not been seen yet, the cancel
 * requests included: 0 when nothing the kernel does can still write into our memory. */
unsigned ring_inflight(const Ring *r);

/* Hands what is queued to the kernel now, without waiting (before the loop blocks elsewhere).
 * Returns 0 or -errno. */
int ring_submit(Ring *r);

/* Submits what is queued, waits for at least one completion (or timeout_usec, 0 = no timeout)
 * and dispatches every completion. Returns 0 or -errno. */
int ring_run_once(Ring *r, uint64_t timeout_usec);
