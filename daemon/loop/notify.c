/* notify.c: sd_notify READY/STATUS/STOPPING and the watchdog ping, driven by the ring. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "notify.h"

static void watchdog_arm(Notify *n) {
        n->ts.tv_sec = (long long) (n->interval_usec / 1000000);
        n->ts.tv_nsec = (long long) (n->interval_usec % 1000000) * 1000;
        struct io_uring_sqe *sqe = ring_get_sqe(n->ring, &n->op_watchdog);
        io_uring_prep_timeout(sqe, &n->ts, 0, 0);
}

static void on_watchdog(RingOp *op, int res) {
        Notify *n = container_of(op, Notify, op_watchdog);
        if (res == -ECANCELED || n->interval_usec == 0)
                return;
        (void) sd_notify(0, "WATCHDOG=1");
        watchdog_arm(n);
}

void notify_init(Notify *n, Ring *ring) {
        *n = (Notify) { .ring = ring, .op_watchdog.callback = on_watchdog };
        uint64_t usec = 0;
        /* sd_watchdog_enabled(3): > 0 when WATCHDOG_USEC is set and WATCHDOG_PID is us (or unset). */
        int r = sd_watchdog_enabled(0, &usec);
        if (r < 0)
                log_warning_errno(r, "ignoring a malformed $WATCHDOG_USEC: %m");
        if (r <= 0 || usec == 0)
                return;
        n->interval_usec = usec / 2;
        if (n->interval_usec == 0)
                n->interval_usec = 1;
        log_debug("watchdog: pinging every %" PRIu64 " ms", n->interval_usec / 1000);
        (void) sd_notify(0, "WATCHDOG=1");
        watchdog_arm(n);
}

void notify_status_format(const NotifyStatus *st, char *buf, size_t size) {
        char pool[32] = "pool off", tenants[NOTIFY_TENANT_SHOWN + 48] = "";
        if (st->pool_size > 0)
                snprintf(pool, sizeof(pool), "pool %" PRIu32 "/%" PRIu32 " ready", st->pool_ready, st->pool_size);
        if (st->tenants > 0 && st->busiest && *st->busiest) {
                char name[NOTIFY_TENANT_SHOWN + 1];
                size_t i = 0;
                for (; st->busiest[i] && i < NOTIFY_TENANT_SHOWN; i++) {
                        unsigned char c = (unsigned char) st->busiest[i];
                        name[i] = c > ' ' && c < 0x7f ? (char) c : '?';
                }
                name[i] = '\0';
                snprintf(tenants, sizeof(tenants), ", busiest %s%s (%" PRIu32 ")", name, st->busiest[i] ? "…" : "",
                         st->busiest_calls);
        }
        snprintf(buf, size,
                 "runs %" PRIu32 "/%" PRIu32 ", queued %" PRIu32 "; %s; sessions %" PRIu32 "; tenants %" PRIu32
                 "%s; %" PRIu64 " total",
                 st->running, st->slots, st->queued, pool, st->sessions, st->tenants, tenants, st->total);
}

static void status_send(Notify *n, const char *prefix) {
        char msg[NOTIFY_STATUS_MAX + 96];
        if (n->stopping)
                snprintf(msg, sizeof(msg), "%sSTATUS=stopping (%s): %s", prefix, n->why, n->status);
        else
                snprintf(msg, sizeof(msg), "%sSTATUS=%s", prefix, n->status);
        (void) sd_notify(0, msg);
        n->status_sent = true;
}

void notify_ready(Notify *n, const NotifyStatus *st) {
        notify_status_format(st, n->status, sizeof(n->status));
        status_send(n, "READY=1\n");
}

void notify_status(Notify *n, const NotifyStatus *st) {
        if (!n->status_sent)
                return;
        char line[NOTIFY_STATUS_MAX];
        notify_status_format(st, line, sizeof(line));
        if (strcmp(line, n->status) == 0)
                return;
        memcpy(n->status, line, sizeof(line));
        status_send(n, "");
}

void notify_stopping(Notify *n, const char *why) {
        if (n->stopping)
                return;
        n->stopping = true;
        snprintf(n->why, sizeof(n->why), "%s", why);
        status_send(n, "STOPPING=1\n");
}

void notify_reloading(Notify *n) {
        (void) n;
        char msg[64];
        /* MONOTONIC_USEC: systemd ≥ 253 (Type=notify-reload) matches the reload with it; older ones
         * ignore it. CLOCK_MONOTONIC, as sd_notify(3) asks. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
                 (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u);
        (void) sd_notify(0, msg);
}

void notify_reloaded(Notify *n) {
        (void) n;
        (void) sd_notify(0, "READY=1");
}

void notify_done(Notify *n) {
        n->interval_usec = 0;
        if (n->op_watchdog.busy)
                ring_cancel(n->ring, &n->op_watchdog);
}
