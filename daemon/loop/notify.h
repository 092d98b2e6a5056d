/* notify.h: what the service manager hears from us (sd_notify(3)): READY=1, a one-line STATUS=,
 * STOPPING=1, and WATCHDOG=1 pinged from the loop itself. Every call is a no-op when
 * $NOTIFY_SOCKET is unset (plain stdio use). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"

typedef struct Notify {
        Ring *ring;
        RingOp op_watchdog;
        struct __kernel_timespec ts;
        uint64_t interval_usec; /* half of WatchdogSec=, 0 when the watchdog is off */
        bool stopping;
        uint32_t running, queued;
        uint64_t total;
        bool status_sent;
} Notify;

/* Arms the watchdog ping when $WATCHDOG_USEC is set for us: a ring timeout at half the interval,
 * so the ping stops when the loop stops (a hung loop is what the watchdog is for). */
void notify_init(Notify *n, Ring *ring);

/* READY=1 with the first STATUS=. */
void notify_ready(Notify *n, uint32_t running, uint32_t queued, uint64_t total);

/* STATUS=<runs in flight, queued, total>, sent only when one of them changed. */
void notify_status(Notify *n, uint32_t running, uint32_t queued, uint64_t total);

/* STOPPING=1 with a STATUS= that says why. Pings continue until notify_done(). */
void notify_stopping(Notify *n, const char *why);

/* A reload (SIGHUP) begins: RELOADING=1, so that `systemctl reload` waits for notify_reloaded()'s
 * READY=1. */
void notify_reloading(Notify *n);
void notify_reloaded(Notify *n);
/* Cancels the ping; its CQE may still arrive, so keep n alive until the ring has drained
 * (ring_inflight()). */
void notify_done(Notify *n);
