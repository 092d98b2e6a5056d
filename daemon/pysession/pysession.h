/* pysession.h: persistent Python sessions (issue 18): session_open, session_close and the calls of
 * exec and execute_python that name a session, each session one sandbox whose interpreter keeps
 * its __main__ between calls. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "run.h"
#include "scheduler.h"

typedef struct PySessions PySessions;

typedef struct PySessionsConfig {
        const RunEnv *env;      /* the runs' ring, sandbox, cgroup backend, state dir, interpreter, caps */
        uint32_t max;           /* MCP_EXEC_PY_SESSIONS_MAX: open at once, all callers; 0: no sessions */
        uint32_t idle_s;        /* MCP_EXEC_PY_SESSION_IDLE_S: the default and the largest idle_timeout_s */
        uint32_t lifetime_s;    /* MCP_EXEC_PY_SESSION_LIFETIME_S: a session ends this long after its open */
        uint32_t max_timeout_s; /* MCP_EXEC_MAX_TIMEOUT_S: with the lifetime, the scope's backstop */
        const char *tag;        /* MCP_EXEC_INSTANCE (borrowed): handles are "<tag>-<hex>"; NULL: "<hex>" */
} PySessionsConfig;

int pysessions_new(const PySessionsConfig *config, PySessions **ret);

/* The backstop of a session's scope (systemd's RuntimeMaxUSec, before the runs' grace): its lifetime,
 * a call's timeout past it, and a minute. The pool makes its ready sandboxes' scopes with at least
 * this, since session_open may take one (pool.c). */
uint32_t pysession_backstop_s(uint32_t lifetime_s, uint32_t max_timeout_s);

/* Puts the sessions in front of the scheduler's hook (the Python tools'): session_open,
 * session_close and every call with a `session` argument are ours, the rest goes on to the hook
 * that was there. Once, after that hook was attached. */
void pysessions_attach(PySessions *p, Scheduler *s);

/* A session_open we handed on to the hook we sit in front of (it names `python` or has
 * `dependencies`) comes back here once that hook (pyexec's) has prepared it: prep->python runs in
 * the session's sandbox, prep->env_dir is mounted there read-only (held until prep->release, which
 * is called once the session's sandbox is gone), prep->extra's members are added to the result.
 * Takes the call and prep's release in every case; call from the loop. */
void pysessions_open_prepared(PySessions *p, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep);

/* Kills every session (a call in flight is answered with a tool error giving reason). Idempotent. */
void pysessions_stop(PySessions *p, const char *reason);
/* Whether a session call or open is still to be answered (the teardown waits for them). A stopped
 * session's last operations are on the ring: pysessions_free() after the ring is drained. */
bool pysessions_busy(const PySessions *p);
/* Sessions open now (opening ones included, killed ones not), for metrics and check_environment. */
unsigned pysessions_count(const PySessions *p);
PySessions *pysessions_free(PySessions *p);
DEFINE_POINTER_CLEANUP(PySessions, pysessions_free)
