/* pysession.h: persistent Python sessions (issue 18): session_open, session_close and the calls of
 * exec and execute_python that name a session, each session one sandbox whose interpreter keeps
 * its __main__ between calls. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fdstore.h"
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
        /* Prepares a session_open that names `python` or has `dependencies` (pyexec's, joined by the
         * daemon), RouteVTable.submit's contract: it answers what cannot be prepared and hands the
         * rest to pysessions_open_prepared(). NULL: such an open gets a tool error. */
        int (*prepare)(void *userdata, McpCall *call, void *owner, JobReplyFn reply);
        void *prepare_userdata;
        /* The most sessions a tenant (mcp_call_principal()) may hold open, its `sessions=` in the
         * tenants file (issue 31.3); 0: no bound of its own (config.max still holds). NULL: none. */
        unsigned (*tenant_max)(void *userdata, const char *tenant);
        void *tenant_userdata;
        /* What a session of tenant may reach (issue 32), as it opens (the scheduler's egress_of):
         * it then gets a listener that env->egress serves, and never a ready sandbox. NULL: none. */
        const EgressPolicy *(*egress_of)(void *userdata, const char *tenant);
        void *egress_userdata;
        /* Sessions are handed to systemd's fd store and outlive a restart (fdstore_available() and
         * the systemd backend; docs/sessions.md): false, they end with the daemon. */
        bool keep;
} PySessionsConfig;

int pysessions_new(const PySessionsConfig *config, PySessions **ret);

/* The backstop of a session's scope (systemd's RuntimeMaxUSec, before the runs' grace): its lifetime,
 * a call's timeout past it, and a minute. The pool makes its ready sandboxes' scopes with at least
 * this, since session_open may take one (pool.c). */
uint32_t pysession_backstop_s(uint32_t lifetime_s, uint32_t max_timeout_s);

/* The scheduler whose slots a busy session holds. Once, before p joins the route table. */
void pysessions_attach(PySessions *p, Scheduler *s);

/* The calls p serves (route.h; userdata: the PySessions): session_open, session_close, and exec and
 * execute_python naming a session. */
extern const RouteVTable pysessions_route_vtable;

/* A session_open we handed to config.prepare (it names `python` or has `dependencies`) comes back
 * here once it is prepared: prep->python runs in
 * the session's sandbox, prep->env_dir is mounted there read-only (held until prep->release, which
 * is called once the session's sandbox is gone), prep->extra's members are added to the result.
 * Takes the call and prep's release in every case; call from the loop. */
void pysessions_open_prepared(PySessions *p, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep);

/* The fd store's names of a session's pieces: PYSESSION_STORE_PREFIX "<run id>.<role>". */
#define PYSESSION_STORE_PREFIX "pysession."
/* Before cgroup_stop_stale(): the scopes of the sessions in st are spared (cgroup_keep_scope()). */
void pysessions_store_keep_scopes(const FdStore *st, Cgroup *cgroup);
/* Takes back the sessions whose pieces are in st (fdstore_take(), PYSESSION_STORE_PREFIX), after a
 * restart, before any call is served: each is checked (every piece there, its record whole and
 * its own, its init alive, frozen between calls) and answers its handle's calls again; one that
 * fails a check is killed and its pieces dropped, with the reason logged. Takes the fds it uses. */
void pysessions_adopt(PySessions *p, FdStore *st);

/* Kills every session (a call in flight is answered with a tool error giving reason), but one in
 * the fd store that is idle, which is let go (pys_store_leave()). Idempotent. */
void pysessions_stop(PySessions *p, const char *reason);
/* Whether a session call or open is still to be answered (the teardown waits for them). A stopped
 * session's last operations are on the ring: pysessions_free() after the ring is drained. */
bool pysessions_busy(const PySessions *p);
/* Sessions open now (opening ones included, killed ones not), for metrics and check_environment. */
unsigned pysessions_count(const PySessions *p);
PySessions *pysessions_free(PySessions *p);
DEFINE_POINTER_CLEANUP(PySessions, pysessions_free)
