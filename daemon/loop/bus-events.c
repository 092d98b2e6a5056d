/* bus-events.c: sd-bus on the io_uring loop. sd-bus buffers messages internally, so after any
 * batch of completions (which may have queued calls) the hook processes and re-arms. */
#include <poll.h>

#include "bus-events.h"
#include "log.h"
#include "str-util.h"

static void on_poll(RingOp *op, int res) {
        BusEvents *b = container_of(op, BusEvents, op_poll);
        b->armed_mask = 0;
        b->ready = true;
}

static void on_timer(RingOp *op, int res) {
        BusEvents *b = container_of(op, BusEvents, op_timer);
        b->armed_timeout = 0;
        if (res == -ETIME)
                b->ready = true;
}

static void bus_events_after(void *userdata) {
        BusEvents *b = userdata;
        if (!b->cgroup)
                return;

        /* Always process: calls queued by the callbacks of this batch may be sendable now. */
        int r = cgroup_event_process(b->cgroup);
        b->ready = false;
        if (r < 0)
                /* The backend has failed the runs that waited for a scope; the next run reconnects. */
                log_warning_errno(r, "the connection to systemd was lost: %m; runs waiting for their scope were "
                                  "failed, the next run reconnects");

        int fd = cgroup_event_fd(b->cgroup);
        int mask = fd >= 0 ? cgroup_event_mask(b->cgroup) | POLLIN : 0;
        if (b->op_poll.busy) {
                /* Re-armed once the cancellation completes (on_poll, then this hook again). */
                if (fd != b->armed_fd || mask != b->armed_mask)
                        ring_cancel(b->ring, &b->op_poll);
        } else if (fd >= 0) {
                struct io_uring_sqe *sqe = ring_get_sqe(b->ring, &b->op_poll);
                io_uring_prep_poll_add(sqe, fd, (unsigned) mask);
                b->armed_fd = fd;
                b->armed_mask = mask;
        }
        if (fd < 0)
                return;

        uint64_t t = cgroup_event_timeout(b->cgroup);
        if (t != UINT64_MAX && !b->op_timer.busy) {
                uint64_t now = now_usec();
                uint64_t rel = t > now ? t - now : 0;
                b->ts.tv_sec = (long long) (rel / 1000000);
                b->ts.tv_nsec = (long long) (rel % 1000000) * 1000;
                struct io_uring_sqe *sqe = ring_get_sqe(b->ring, &b->op_timer);
                io_uring_prep_timeout(sqe, &b->ts, 0, 0);
                b->armed_timeout = t;
        }
}

int bus_events_start(BusEvents *b, Ring *ring, Cgroup *cgroup) {
        *b = (BusEvents) { .ring = ring, .cgroup = cgroup, .armed_fd = -EBADF };
        b->op_poll.callback = on_poll;
        b->op_timer.callback = on_timer;
        if (cgroup_event_fd(cgroup) < 0)
                return 0;
        int r = ring_set_after(ring, bus_events_after, b);
        if (r < 0)
                return r;
        b->hooked = true;
        bus_events_after(b);
        return 0;
}

void bus_events_stop(BusEvents *b) {
        if (!b->ring)
                return;
        if (b->hooked)
                (void) ring_set_after(b->ring, NULL, NULL);
        b->hooked = false;
        ring_cancel(b->ring, &b->op_poll);
        ring_cancel(b->ring, &b->op_timer);
}
