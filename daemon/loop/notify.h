/* notify.h: what the service manager hears from us (sd_notify(3)): READY=1, a one-line STATUS=,
 * STOPPING=1, and WATCHDOG=1 pinged from the loop itself. Every call is a no-op when
 * $NOTIFY_SOCKET is unset (plain stdio use). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/* What `systemctl status` says at a glance (issue 33.5): the run slots, the ready sandboxes, the
 * Python sessions, the tenants with calls, and the calls answered. */
typedef struct NotifyStatus {
        uint32_t running, slots, queued; /* slots held (runs, sessions' calls) of MCP_EXEC_MAX_CONCURRENT */
        uint32_t pool_ready, pool_size;  /* ready sandboxes of MCP_EXEC_WARM_POOL; size 0: no pool */
        uint32_t sessions;               /* Python sessions open */
        uint32_t tenants;                /* tenants with a call running or waiting */
        const char *busiest;             /* the one of them with the most, or NULL */
        uint32_t busiest_calls;
        uint64_t total;                  /* calls the run queue has finished */
} NotifyStatus;

/* Long enough for every field and a tenant's name cut to NOTIFY_TENANT_SHOWN characters. */
#define NOTIFY_STATUS_MAX 256
#define NOTIFY_TENANT_SHOWN 32

/* "runs 3/4, queued 1; pool 2/2 ready; sessions 1; tenants 2, busiest alice (3); 127 total" into
 * buf: one line, the tenant's name cut and anything but printable ASCII in it replaced by '?' (a
 * name is not ours to trust, and a newline would be another sd_notify assignment). */
void notify_status_format(const NotifyStatus *st, char *buf, size_t size);

typedef struct Notify {
        Ring *ring;
        RingOp op_watchdog;
        struct __kernel_timespec ts;
        uint64_t interval_usec; /* half of WatchdogSec=, 0 when the watchdog is off */
        bool stopping;
        char why[32];           /* the stop's reason, once stopping */
        char status[NOTIFY_STATUS_MAX]; /* the last STATUS= sent, without the stop's prefix */
        bool status_sent;
} Notify;

/* Arms the watchdog ping when $WATCHDOG_USEC is set for us: a ring timeout at half the interval,
 * so the ping stops when the loop stops (a hung loop is what the watchdog is for). */
void notify_init(Notify *n, Ring *ring);

/* READY=1 with the first STATUS=. */
void notify_ready(Notify *n, const NotifyStatus *st);

/* STATUS=, notify_status_format()'s line, sent only when it changed; while stopping (a drain lets
 * calls finish) with "stopping (SIGTERM): " before it. */
void notify_status(Notify *n, const NotifyStatus *st);

/* STOPPING=1 with a STATUS= that says why, before the last line. Pings continue until notify_done(). */
void notify_stopping(Notify *n, const char *why);

/* A reload (SIGHUP) begins: RELOADING=1, so that `systemctl reload` waits for notify_reloaded()'s
 * READY=1. */
void notify_reloading(Notify *n);
void notify_reloaded(Notify *n);
/* Cancels the ping; its CQE may still arrive, so keep n alive until the ring has drained
 * (ring_inflight()). */
void notify_done(Notify *n);
