/* lb-agent.h: HAProxy's agent check (issue 33.4; HAProxy's configuration manual, "agent-check"): a
 * TCP listener that answers each connection with one line, this instance's free capacity ("ready
 * 75%") or "drain", and closes it. HAProxy sets the server's weight to that percentage of the weight
 * it was configured with, and sends a draining instance no new calls while those in flight finish. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/* What the answer is made of, as the daemon sees it now. */
typedef struct LbAgentLoad {
        uint32_t slots;      /* MCP_EXEC_MAX_CONCURRENT */
        uint32_t running;    /* slots held: runs, and Python sessions' calls */
        uint32_t queued;     /* calls waiting for a slot */
        uint32_t pool_ready; /* ready sandboxes now */
        uint32_t pool_size;  /* MCP_EXEC_WARM_POOL, 0 when there is no pool */
        bool draining;       /* stopping, or draining (MCP_EXEC_DRAIN_S): new calls get 503 */
} LbAgentLoad;

#define LB_AGENT_LINE_MAX 16

/* The line for load, '\n' included: "drain" while draining; else "ready N%", N the share of free
 * slots (a queued call takes one more), three quarters of it when no sandbox is ready and all of it
 * when the pool is full, never below 1 (a zero weight is a drain to HAProxy: when every instance is
 * full, calls still spread over them and wait in their queues). Returns its length. */
size_t lb_agent_answer(const LbAgentLoad *load, char buf[static LB_AGENT_LINE_MAX]);

typedef void (*LbAgentLoadFn)(void *userdata, LbAgentLoad *ret);
typedef struct LbAgent LbAgent;

/* Answers on addr ("host:port", MCP_EXEC_AGENT_ADDR): on the socket systemd passed that is bound to
 * it (read without unsetting $LISTEN_FDS), else on a socket of its own. load() is asked at each
 * connection. Returns 0, or -errno with *reterr_what naming what failed (a static string). */
int lb_agent_new(Ring *ring, const char *addr, LbAgentLoadFn load, void *userdata, LbAgent **ret,
                 const char **reterr_what);
/* Stops accepting (the cancel's CQE may still come: free after the ring has drained). */
void lb_agent_stop(LbAgent *a);
/* Frees a; left alone (we exit next) while its accept is still on the ring. */
LbAgent *lb_agent_free(LbAgent *a);
DEFINE_POINTER_CLEANUP(LbAgent, lb_agent_free)
