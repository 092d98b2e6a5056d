/* task.h: the daemon's task store (issue 17.3): tasks by unguessable id, their owner, status,
 * timestamps and kept result, bounded in total and per owner, expired a TTL after they end. Knows
 * nothing of runs, JSON or transports: dispatch.c starts and cancels a task's run and tells the
 * store how it ended; mcp/ writes the task's answers. Times are passed in, so the store is pure
 * (tests/unit/test-task.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "list.h"

/* 128 random bits (getrandom(2)) as lowercase hex: not guessable, so knowing an id is not what
 * protects a task (its owner is), but it never leaks another owner's task by enumeration either. */
#define TASK_ID_BYTES 16
#define TASK_ID_LEN (2 * TASK_ID_BYTES)
/* With an instance tag (MCP_EXEC_INSTANCE, at most 16 characters) before it and '-'. */
#define TASK_TAG_MAX 16
#define TASK_ID_MAX (TASK_TAG_MAX + 1 + TASK_ID_LEN)
/* An owner: a 2025 HTTP session id, the bearer identity of 2026 HTTP requests, "stdio". */
#define TASK_OWNER_MAX 64
/* A tenant (issue 31): the name of whoever's credential made the task ("" for none), whatever its
 * owner; its bound is its tasks= (task_store_create()). */
#define TASK_TENANT_MAX 64

typedef enum TaskStatus {
        TASK_WORKING,
        TASK_COMPLETED, /* the run answered (a tool error too: that is a result) */
        TASK_FAILED,    /* no result could be kept: out of memory, or too_big */
        TASK_CANCELLED,
} TaskStatus;

typedef struct Task Task;
typedef struct TaskStore TaskStore;
struct Task {
        TaskStore *store;
        char id[TASK_ID_MAX + 1];
        char owner[TASK_OWNER_MAX];
        char tenant[TASK_TENANT_MAX];
        TaskStatus status;
        uint64_t created_usec;  /* CLOCK_REALTIME, for createdAt */
        uint64_t updated_usec;  /* CLOCK_REALTIME, for lastUpdatedAt */
        uint64_t ended_usec;    /* CLOCK_MONOTONIC when it left TASK_WORKING; the TTL runs from here */
        uint64_t ttl_usec;      /* how long the result is kept once it ended */
        bool fetched;           /* its owner has been told how it ended (task_fetched()) */
        void *packed;           /* TASK_COMPLETED: the run's JSON-RPC reply, as the call would have had it,
                                 * compressed (task_reply() gives it back) */
        size_t packed_len;      /* its bytes, counted in the store's */
        size_t reply_len;       /* the reply's own */
        uint64_t too_big;       /* TASK_FAILED: the result's bytes, which max_bytes could not hold (0: OOM) */
        int kept_fd;            /* the keeper's copy of it (TaskKeeper), or -EBADF */
        void *run;              /* TASK_WORKING: the dispatcher's record of the run (borrowed) */
        void *waiters;          /* TASK_WORKING: the dispatcher's requests waiting for the end (borrowed) */
        LIST_FIELDS(Task, tasks);
};

/* Whoever keeps ended tasks across a restart of the daemon (transport/dispatch.c: systemd's fd
 * store). kept: t ended, or its owner was told how (fetched); dropped: t is gone for good (expired,
 * evicted, removed). task_store_done() drops nothing: what is kept outlives the daemon. */
typedef struct TaskKeeper {
        void (*kept)(void *userdata, Task *t);
        void (*dropped)(void *userdata, Task *t);
        void *userdata;
} TaskKeeper;

struct TaskStore {
        Task *tasks;            /* newest first */
        unsigned n_tasks;
        uint64_t bytes;         /* the kept results' */
        uint64_t max_bytes;     /* MCP_EXEC_TASKS_MAX_BYTES */
        unsigned max_total;     /* MCP_EXEC_TASKS_MAX */
        unsigned max_per_owner; /* MCP_EXEC_TASKS_PER_CLIENT */
        uint64_t ttl_usec;      /* MCP_EXEC_TASK_TTL_S */
        const char *tag;        /* MCP_EXEC_INSTANCE, borrowed: ids are "<tag>-<hex>"; NULL: "<hex>" */
        TaskKeeper keeper;      /* none: zeroes */
};

/* A kept reply is compressed (zstd, with long-distance matching): it holds a run's output twice
 * (structuredContent, and its JSON as the text content), and control characters escaped as \u0001
 * in both, 13-19 bytes a byte of output; compressed it costs about what the output does, and the
 * repeats nothing. What is kept is counted in MCP_EXEC_TASKS_MAX_BYTES as compressed. */

void task_store_init(TaskStore *s, unsigned max_total, unsigned max_per_owner, uint64_t max_bytes,
                     uint64_t ttl_usec);
/* Frees every task; working ones' runs must have been let go first (their `run` is not touched). */
void task_store_done(TaskStore *s);

/* Frees the tasks whose result has been kept for their TTL. Working tasks never expire. The store
 * sweeps lazily, here, on every create, find and list (README "Tasks"): an expired result costs
 * memory only until the next task request of anyone, and no timer is needed. */
void task_store_sweep(TaskStore *s, uint64_t now_mono_usec);

/* Who asks for a task, and the bound of its tenant. */
typedef struct TaskAsker {
        const char *owner;   /* who may fetch it */
        const char *tenant;  /* whose credential: "" for none */
        unsigned tenant_max; /* the tenant's tasks= (UINT_MAX: none of its own) */
} TaskAsker;

/* A new working task of a->owner. ttl_usec 0: the store's; else at most the store's. At a bound, the
 * oldest fetched task (of the tenant, for its tasks=; of owner, for MCP_EXEC_TASKS_PER_CLIENT; of
 * anyone, for MCP_EXEC_TASKS_MAX) makes room: a result its client already has is kept for fetching
 * again, not at the price of refusing that client's next task. Returns 0, -EBUSY (MCP_EXEC_TASKS_MAX
 * tasks exist, none fetched), -EUSERS (the tenant has its tasks=, none fetched), -EDQUOT (owner has
 * MCP_EXEC_TASKS_PER_CLIENT, none fetched), -EINVAL (owner or tenant too long), -ENOMEM, or
 * getrandom(2)'s error. */
int task_store_create(TaskStore *s, const TaskAsker *a, uint64_t ttl_usec, uint64_t now_mono_usec,
                      uint64_t now_real_usec, Task **ret);

/* The task with this id if owner owns it and it has not expired, else NULL (another owner's task is
 * indistinguishable from none). */
Task *task_store_find(TaskStore *s, const char *owner, const char *id, uint64_t now_mono_usec);

/* Owner's tasks, newest first, at most n in ret; returns how many. */
size_t task_store_list(TaskStore *s, const char *owner, uint64_t now_mono_usec, Task **ret, size_t n);

/* The task left TASK_WORKING: status (not TASK_WORKING), and for TASK_COMPLETED reply (taken, may be
 * NULL only for the others). A task already ended (cancelled while its run was being killed) keeps
 * its first end; reply is freed. A reply the store's max_bytes cannot hold, after fetched results
 * made room, is freed and the task is TASK_FAILED with too_big set (its compressed size); one that
 * cannot be compressed (no memory) is TASK_FAILED with too_big 0. */
void task_end(Task *t, TaskStatus status, char *reply, uint64_t now_mono_usec, uint64_t now_real_usec);

/* A TASK_COMPLETED task's reply, NUL-terminated, malloc'd for the caller; NULL for another status
 * or without memory. */
char *task_reply(const Task *t);

bool task_status_is_terminal(TaskStatus status);

/* Its owner has been answered how t ended (its result, or that it failed or was cancelled): from
 * now on t gives its place to a new task at a bound. No effect on a working task. */
void task_fetched(Task *t);

/* Frees t now (a task whose creation could not be answered); its run must not exist. */
void task_store_remove(TaskStore *s, Task *t);

/* An ended task's record, for a keeper (task-keep.c): a text head of TASK_RECORD_HEAD_BYTES
 * (NUL-padded), then its packed reply. Another daemon, maybe a newer package's, reads it back:
 *   mcp-execd-task 1 / id / owner / tenant / status / created_usec / updated_usec / ended_usec /
 *   ttl_usec / fetched / too_big / reply_len / packed_len / end
 * one "<key> <value>" a line; a key this version does not know is skipped. */
#define TASK_RECORD_HEAD_BYTES 1024
#define TASK_RECORD_MAGIC "mcp-execd-task 1"
/* Its head. -EINVAL for a working task, or a field that cannot be one line. */
int task_record_head(const Task *t, char head[TASK_RECORD_HEAD_BYTES]);
/* Reads a head into *ret (its fields only: no store, no packed reply, kept_fd -EBADF). 0, or
 * -EBADMSG with *reterr_why (static text). */
int task_record_parse(const char *head, size_t n, Task *ret, const char **reterr_why);
/* Puts back an ended task from a record: from's fields, packed (taken, from's packed_len bytes,
 * compressed by this store's format). -EEXIST (its id is here), -ESTALE (its TTL is over),
 * -ENOSPC (the store's bounds are reached), -ENOMEM. */
int task_store_restore(TaskStore *s, const Task *from, void *packed, uint64_t now_mono_usec, Task **ret);
