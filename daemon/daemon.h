/* daemon.h: the daemon object: everything mcp-execd runs (cgroup backend, sandbox, loop,
 * interpreters, MCP session, scheduler, metrics, transport), made from the configuration, run until
 * shutdown, freed in the reverse order of its making. */
#pragma once

#include "cleanup.h"
#include "config.h"

typedef struct Daemon Daemon;

/* Makes everything and starts the transport; nothing is served before daemon_run(). Over HTTP the
 * start's checks (the sandbox's self-test, the interpreters' probe) run here, before the
 * transport; over stdio they run in daemon_run(), after what stdin already held is answered.
 * cfg must outlive the daemon. Logs what failed (the caller exits with status 1). Returns 0 or
 * -errno. */
int daemon_new(const Config *cfg, Daemon **ret);

/* Serves until the transport is finished: the end of input, the client gone, or a signal (SIGTERM,
 * SIGINT, and SIGHUP over stdio: running calls are killed and answered, STOPPING=1; a second signal
 * repeats the stop; 5 s after the first the loop ends anyway). Over HTTP SIGHUP reads the tenants
 * file again (`systemctl reload`), and is a stop signal only during a drain or a stop. Over stdio, initialize and ping are answered at
 * once; tools/list and tools/call wait, in order, for the checks. READY=1 once they have passed.
 * Returns 0; -ENOTRECOVERABLE when a check failed (logged as at start: the caller exits with
 * status 1); or another -errno when the loop itself failed (logged). */
int daemon_run(Daemon *d);

/* Lets the calls finish (asking the scheduler and the Python jobs) while everything they use is
 * alive, frees the transport, cancels the loop's own operations and lets every operation in flight
 * complete (asking the ring), all within 2 s; then frees everything in the reverse order of
 * daemon_new(). A daemon_run() that gave up (its loop failed, or the shutdown ran out of time)
 * waits for nothing. */
Daemon *daemon_free(Daemon *d);
DEFINE_POINTER_CLEANUP(Daemon, daemon_free)
