/* signals.h: SIGTERM, SIGINT and SIGHUP read from a signalfd on the ring, so a signal is one more
 * completion of the loop and never interrupts a callback. */
#pragma once

#include <signal.h>
#include <stdbool.h>

#include "ring.h"

typedef struct Signals Signals;

/* A signalfd for mask, whose signals the caller has blocked (sigprocmask(2)). Returns 0 or -errno. */
int signals_new(Ring *ring, const sigset_t *mask, Signals **ret);

/* Frees s. Its read must be over (signals_stop(), then the ring drained): if it is not, s is left
 * alone rather than have the kernel write into freed memory (we exit next). */
Signals *signals_free(Signals *s);
DEFINE_POINTER_CLEANUP(Signals, signals_free)

/* Starts reading. */
void signals_start(Signals *s);

/* After a completion of the read that brought a signal: its number, once (re-arming the read); 0
 * while the read is in flight, or when nothing new came. */
int signals_next(Signals *s);

/* Cancels the read; its CQE may still come. */
void signals_stop(Signals *s);
