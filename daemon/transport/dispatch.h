/* dispatch.h: the one path from a parsed MCP action to the scheduler, shared by every transport:
 * a session's calls in flight (one list), duplicate request ids refused, cancellation by id,
 * refusals answered as tool errors, and each answer handed back to the transport that owns the
 * session. Talks to the scheduler through scheduler.h only (a unit test links fakes of those
 * functions: tests/unit/test-dispatch.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fdstore.h"
#include "list.h"
#include "mcp.h"
#include "output.h"
#include "scheduler.h"
#include "task.h"

typedef struct Dispatch Dispatch;
typedef struct DispatchCall DispatchCall;
typedef struct DispatchTasks DispatchTasks;

/* One accepted tools/call between scheduler_submit() and its answer. The scheduler's owner of the
 * call; the transport may allocate it larger (DispatchOps.call_size) with this as its first member. */
struct DispatchCall {
        Dispatch *dispatch;     /* the session it belongs to; NULL once that is gone (answer dropped) */
        char *id_key;           /* mcp_call_id_key() */
        char *progress_token;   /* mcp_call_progress_token(), or NULL */
        uint32_t timeout_s;
        uint64_t t0_usec;       /* accepted */
        uint64_t progress_sent; /* the last progress notification's value (whole seconds) */
        OutputCursor streamed;  /* how much of the run's output its progress notifications carried */
        LIST_FIELDS(DispatchCall, calls);
        /* Or a 2025 tasks/result waiting for its task to end (tasks.mdx: it blocks): never the
         * scheduler's; answered from the task when it ends, or NULL when cancelled. */
        McpTaskRequest *wait;
        Task *wait_task;        /* the task it waits for, until answered */
        /* Or a 2026 tools/call made a task, waiting up to inline_until (CLOCK_MONOTONIC) for its
         * run's answer, which it then gets inline as a plain call would, the task never seen; else
         * this, the CreateTaskResult, at inline_until (dispatch_progress_tick()). */
        char *inline_created;
        uint64_t inline_until;
        LIST_FIELDS(DispatchCall, waiters);
};

/* What a transport does with the answers. ctx is what it passed to dispatch_action() (HTTP: the
 * request the message came on; stdio: NULL). Every function takes reply (malloc'd). */
typedef struct DispatchOps {
        size_t call_size;       /* 0: sizeof(DispatchCall) */
        /* An answer that is no call's (a REPLY action, a refused duplicate id). */
        void (*answer)(Dispatch *d, void *ctx, char *reply);
        /* A call was accepted and is on the list, about to be submitted (optional). */
        void (*call_new)(Dispatch *d, DispatchCall *c, void *ctx);
        /* A call's answer, or NULL: cancelled, send nothing. c is off the list already and is freed
         * when this returns; d may be freed by it (nothing touches d afterwards). */
        void (*call_reply)(Dispatch *d, DispatchCall *c, char *reply);
        /* A notification for call c (its progress), sent on the call's own stream: true if it was
         * queued for the client, false if c has no stream to carry it now (msg is borrowed). NULL:
         * the transport sends no progress. */
        bool (*call_notify)(Dispatch *d, DispatchCall *c, const char *msg);
} DispatchOps;

/* One session's dispatch (stdio has one; each HTTP session one). Embedded in the transport's
 * session object, which must outlive its calls or dispatch_detach() them. */
struct Dispatch {
        Scheduler *scheduler;
        const DispatchOps *ops;
        void *userdata;         /* the transport's session */
        DispatchCall *calls;    /* in flight, newest first */
        unsigned n_calls;
        DispatchTasks *tasks;   /* the daemon's tasks, or NULL: a call asking for a task runs as a call */
        char owner[TASK_OWNER_MAX]; /* whose tasks this session sees (dispatch_set_tasks()) */
};

void dispatch_init(Dispatch *d, Scheduler *scheduler, const DispatchOps *ops, void *userdata);

/* The session creates and sees the tasks of owner (stdio: "stdio"; HTTP: its 2025 session, or the
 * tenant of 2026 requests, "tenant:<name>"): a task is reachable from any later session with the same owner,
 * and from no other. owner is truncated to TASK_OWNER_MAX - 1 bytes. */
void dispatch_set_tasks(Dispatch *d, DispatchTasks *tasks, const char *owner);

/* The daemon's tasks (README "Tasks"): the store, and the one Dispatch their runs go through, so a
 * task's run is exactly a call's (same scheduler, sandbox, limits, record) but belongs to no
 * session and outlives the request and connection that made it. */
typedef struct DispatchTasksConfig {
        unsigned max_total;     /* MCP_EXEC_TASKS_MAX */
        unsigned max_per_owner; /* MCP_EXEC_TASKS_PER_CLIENT */
        uint64_t max_bytes;     /* MCP_EXEC_TASKS_MAX_BYTES: the results kept, together */
        uint64_t ttl_usec;      /* MCP_EXEC_TASK_TTL_S */
        /* MCP_EXEC_TASK_INLINE_MS: how long a 2026 call that may be a task
         * (mcp_call_task_may_inline()) waits for its run before it becomes one; 0: at once. */
        uint64_t inline_usec;
        const char *tag; /* MCP_EXEC_INSTANCE (borrowed, outlives the tasks), the prefix of task ids, or NULL */
        /* The most tasks a tenant (mcp_call_principal()) may have kept, its tasks= in the tenants
         * file read now; UINT_MAX for none. NULL: no tenant has a bound of its own. */
        unsigned (*tenant_max)(void *userdata, const char *tenant);
        void *tenant_userdata;
        /* Ended tasks of 2026 tenants outlive a restart in systemd's fd store (task-keeper.h). */
        bool keep;
} DispatchTasksConfig;
int dispatch_tasks_new(Scheduler *scheduler, const DispatchTasksConfig *cfg, DispatchTasks **ret);
/* The tasks an earlier daemon kept in st (fdstore_take(), TASK_KEEPER_PREFIX), put back before
 * anything is served. */
void dispatch_tasks_adopt(DispatchTasks *t, FdStore *st);
/* owner is gone for good (a 2025 HTTP session ended): nobody can fetch its tasks any more, so their
 * runs are cancelled and the tasks freed now rather than at their TTL. */
void dispatch_tasks_drop_owner(DispatchTasks *t, const char *owner);
/* Cancels every task's run (stdio's client went away; the daemon stops): each task ends cancelled. */
void dispatch_tasks_cancel_all(DispatchTasks *t);
/* Lets go of the runs the scheduler still holds (their answers are dropped) and frees the store. */
DispatchTasks *dispatch_tasks_free(DispatchTasks *t);
DEFINE_POINTER_CLEANUP(DispatchTasks, dispatch_tasks_free)

/* Carries out a (the result of mcp_server_handle()) and takes what it uses out of it (the caller
 * still calls mcp_action_done()):
 *   NONE:   nothing;
 *   REPLY:  a refused tool call is counted (scheduler_note_rejected()); the reply goes to answer();
 *   CANCEL: the session's call with that id is cancelled (never answered);
 *   CALL:   a request id still in flight is refused (counted, answered as a tool error); else the
 *           call is submitted, and a refusal (queue full, out of memory) is its answer. A call that
 *           asks to be a task (mcp_call_is_task()) is made a task of the session's owner and
 *           answered at once (or refused with a JSON-RPC error naming the bound it hit); its run
 *           goes through the daemon's task Dispatch and its answer into the task;
 *   TASK:   answered from the task store (tasks/get, tasks/result, tasks/list, tasks/cancel, which
 *           cancels the run as CANCEL does a call's, tasks/update). */
void dispatch_action(Dispatch *d, McpAction *a, void *ctx);

/* The session's call with this id key, or NULL. */
DispatchCall *dispatch_find(const Dispatch *d, const char *id_key);

/* Cancels one call: dropped if queued, killed if running; call_reply() gets NULL (maybe at once,
 * which frees c). True if the scheduler knew it. A waiting tasks/result stops waiting (NULL, at
 * once); its task goes on. */
bool dispatch_call_cancel(DispatchCall *c);

/* Cancels every call of the session (its connection or session went away). */
void dispatch_cancel_all(Dispatch *d);

/* The session goes before the scheduler has answered its calls (shutdown ran out of time): each
 * call leaves the list and gets call_reply(NULL) now (which must not free d here); the scheduler's
 * answer, when it comes, is dropped. */
void dispatch_detach(Dispatch *d);

/* Progress (issue 17.4), for calls that asked (a progressToken, either era): "accepted" (0) when
 * a call is accepted, then once per whole second it has run (the transport calls this a few times
 * a second, at its own pace), each carrying the run's output that is new since the last one
 * (output_stream_next(): whole characters, at most MCP_EXEC_MAX_OUTPUT_BYTES in all, the result
 * unchanged). Nothing of the output is logged. */
void dispatch_progress_tick(Dispatch *d, uint64_t now_usec);

/* Whether a call of the session asked for progress, or waits to be answered inline: the transport
 * keeps ticking while one does. */
bool dispatch_wants_progress(const Dispatch *d);

/* For scheduler_set_sessions(): the session (its Dispatch) a call belongs to, for per-session limits. */
const void *dispatch_session_of(const void *owner);

/* The reply when the daemon is out of memory for a call. */
#define DISPATCH_OOM_MESSAGE "mcp-execd is out of memory"
