/* pool.h: ready sandboxes (issue 16): runs whose Python has started, waiting for a call's code. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup.h"
#include "proc.h"
#include "ring.h"
#include "sandbox.h"

typedef struct RunPool RunPool;

typedef struct RunPoolConfig {
        Ring *ring;
        Sandbox *sandbox;
        const char *state_dir; /* private directory: each ready sandbox's staging directory */
        const char *python;    /* the default interpreter, resolved; NULL: no pool */
        unsigned size;         /* MCP_EXEC_WARM_POOL: sandboxes kept ready; 0: no pool */
        const char *preload;   /* MCP_EXEC_PRELOAD: comma-separated modules, or NULL */
        Cgroup *cgroup;        /* the runs' backend: each ready sandbox has its scope or cgroup; none:
                                * rlimits */
        uint32_t max_timeout_s; /* MCP_EXEC_MAX_TIMEOUT_S: with max_age, the scope's backstop */
        uint32_t session_backstop_s; /* a Python session's backstop when session_open may take a ready
                                      * sandbox (pysession_backstop_s()); 0: sessions are off */
        bool background;       /* made at a lower CPU weight, restored when taken: in rlimit mode by
                                * nice, which needs CAP_SYS_NICE; with a cgroup by its cpu.weight */
        uint64_t max_age_usec; /* a ready sandbox older than this is replaced, not used (a timer every
                                * max_age / 2 replaces them when no call comes); UINT64_MAX: never */
} RunPoolConfig;

/* A ready sandbox handed to a run (or to a Python session): its proc (the init holding its PID
 * namespace, placed and released, no operation in flight; its id names its scope, which the taker's
 * id becomes) and what the launcher reported when it became ready. The taker owns all of it and
 * sets the proc's handler. */
typedef struct RunReady {
        Proc *proc;
        uint64_t preload_utime_usec; /* CPU used before the call: the launcher's when ready (rlimits),
                                      * payload/'s when taken (cgroup): not the call's */
        uint64_t preload_stime_usec;
        uint64_t rss_bytes;          /* its memory at the start: resident when ready (rlimits),
                                      * payload/'s memory.current when taken (cgroup) */
        ExecAccount preload_account; /* payload/'s kernel account when taken (cgroup; nothing known
                                      * with rlimits): the preload's, not the call's */
} RunReady;

/* Makes the pool, inert: nothing is spawned before run_pool_check() has passed, because the
 * sandbox it spawns from is checked after the daemon has answered initialize (issue 16.6). *ret is
 * NULL (no pool) when the size is 0 or there is no interpreter. */
int run_pool_new(const RunPoolConfig *config, RunPool **ret, char **reterr_message);
/* The start's check, once sandbox_check() passed: with a preload, one sandbox is made now and waited
 * for (blocking, up to POOL_START_TIMEOUT_USEC): -ENOPKG and a malloc'd message naming the module
 * when one fails to import. Then the pool may fill. A NULL pool passes. */
int run_pool_check(RunPool *p, char **reterr_message);

/* Spawns what is missing, now, from the loop (start). */
void run_pool_fill(RunPool *p);
/* The same, on the next turn of the loop: after an answer, whose write is already on the ring. */
void run_pool_refill_later(RunPool *p);

/* Takes the oldest ready sandbox that is still alive and not too old (the others are destroyed).
 * Returns 0 and fills ret, or -EAGAIN when none is ready. Never spawns: refills come later. */
int run_pool_take(RunPool *p, RunReady *ret);

/* Destroys every ready sandbox and stops filling (shutdown). Filling ones are killed; their reads
 * complete on the ring. Idempotent. */
void run_pool_stop(RunPool *p);
/* Whether a read of the pool is still on the ring (run_pool_free() only after it is not). */
bool run_pool_busy(const RunPool *p);
RunPool *run_pool_free(RunPool *p);
DEFINE_POINTER_CLEANUP(RunPool, run_pool_free)

/* For /metrics: ready sandboxes and their resident memory when they became ready. */
unsigned run_pool_ready(const RunPool *p);
uint64_t run_pool_memory_bytes(const RunPool *p);
