/* bus-events.h: drives the cgroup backend's D-Bus connection (sd-bus) from the io_uring loop: a
 * poll on its fd, a timeout from sd_bus_get_timeout(), sd_bus_process() when either fires. When the
 * connection is lost the backend reconnects at the next run; the poll follows the new fd. */
#pragma once

#include "cgroup.h"
#include "ring.h"

typedef struct BusEvents {
        Ring *ring;
        Cgroup *cgroup;
        RingOp op_poll;
        RingOp op_timer;
        int armed_fd; /* the connection's fd the poll watches (a reconnection brings a new one) */
        int armed_mask;
        uint64_t armed_timeout;
        bool ready;    /* the poll or the timer fired: process */
        bool hooked;   /* holds the ring's after-batch hook */
        struct __kernel_timespec ts;
} BusEvents;

/* Installs itself as the ring's after-batch hook (ring_set_after()). No-op for backends without a
 * bus. Returns 0, or -EBUSY when another module holds the hook. */
int bus_events_start(BusEvents *b, Ring *ring, Cgroup *cgroup);

/* Gives the hook back and cancels the poll and the timer; keep b alive until the ring has drained
 * (ring_inflight()). */
void bus_events_stop(BusEvents *b);
