/* task.c: the task store (task.h): a list, small by its bounds, searched linearly. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "str-util.h"
#include "task.h"

void task_store_init(TaskStore *s, unsigned max_total, unsigned max_per_owner, uint64_t max_bytes,
                     uint64_t ttl_usec) {
        *s = (TaskStore) { .max_total = max_total, .max_per_owner = max_per_owner, .max_bytes = max_bytes,
                           .ttl_usec = ttl_usec };
        LIST_HEAD_INIT(s->tasks);
}

/* Gone for good (expired, evicted, removed): the keeper lets its copy go. */
static void task_drop(TaskStore *s, Task *t);

static void task_free(TaskStore *s, Task *t) {
        LIST_REMOVE(tasks, s->tasks, t);
        s->n_tasks--;
        s->bytes -= t->packed_len;
        free(t->packed);
        free(t);
}

/* Level 1 (the fastest: this runs on the loop) with long-distance matching, which finds the second
 * copy of the output however far on it is in the reply (its window is the whole reply). */
static int pack(const char *s, size_t n, void **ret, size_t *ret_len) {
        ZSTD_CCtx *cctx = ZSTD_createCCtx();
        if (!cctx)
                return -ENOMEM;
        size_t bound = ZSTD_compressBound(n);
        void *out = malloc(bound);
        size_t len = 0;
        int r = -ENOMEM;
        if (out && !ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1)) &&
            !ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_enableLongDistanceMatching, 1))) {
                len = ZSTD_compress2(cctx, out, bound, s, n);
                r = ZSTD_isError(len) ? -ENOMEM : 0; /* with a bound-sized buffer only memory can fail */
        }
        ZSTD_freeCCtx(cctx);
        if (r < 0) {
                free(out);
                return r;
        }
        void *shrunk = realloc(out, len ? len : 1);
        *ret = shrunk ?: out;
        *ret_len = len;
        return 0;
}

char *task_reply(const Task *t) {
        if (t->status != TASK_COMPLETED || !t->packed)
                return NULL;
        char *out = malloc(t->reply_len + 1);
        if (!out)
                return NULL;
        /* The frame's window is at most the reply's size (it is known when compressing). */
        size_t n = ZSTD_decompress(out, t->reply_len, t->packed, t->packed_len);
        if (ZSTD_isError(n) || n != t->reply_len) {
                free(out);
                return NULL;
        }
        out[n] = '\0';
        return out;
}

static void task_drop(TaskStore *s, Task *t) {
        if (s->keeper.dropped)
                s->keeper.dropped(s->keeper.userdata, t);
        task_free(s, t);
}

void task_store_done(TaskStore *s) {
        Task *t;
        while ((t = s->tasks))
                task_free(s, t);
}

bool task_status_is_terminal(TaskStatus status) {
        return status != TASK_WORKING;
}

static bool task_expired(const Task *t, uint64_t now) {
        return t->status != TASK_WORKING && now - t->ended_usec >= t->ttl_usec;
}

void task_store_sweep(TaskStore *s, uint64_t now) {
        LIST_FOREACH_SAFE(tasks, t, next, s->tasks)
                if (task_expired(t, now))
                        task_drop(s, t);
}

void task_fetched(Task *t) {
        if (t->status == TASK_WORKING || t->fetched)
                return;
        t->fetched = true;
        if (t->store->keeper.kept)
                t->store->keeper.kept(t->store->keeper.userdata, t);
}

/* Frees the oldest fetched task of owner (NULL: of anyone), never keep; false if there is none. */
/* The oldest fetched task (of owner, of tenant: NULL for any) but keep goes; false if there is none. */
static bool task_store_evict_fetched_of(TaskStore *s, const char *owner, const char *tenant, const Task *keep) {
        Task *oldest = NULL;
        LIST_FOREACH(tasks, t, s->tasks) /* newest first: the last match is the oldest */
                if (t->fetched && t != keep && (!owner || strcmp(t->owner, owner) == 0) &&
                    (!tenant || strcmp(t->tenant, tenant) == 0))
                        oldest = t;
        if (!oldest)
                return false;
        task_drop(s, oldest);
        return true;
}

static bool task_store_evict_fetched(TaskStore *s, const char *owner) {
        return task_store_evict_fetched_of(s, owner, NULL, NULL);
}

/* How many tasks owner has, and how many its tenant. */
static void task_store_count(const TaskStore *s, const TaskAsker *a, unsigned *ret_mine, unsigned *ret_ours) {
        unsigned mine = 0, ours = 0;
        LIST_FOREACH(tasks, t, s->tasks) {
                mine += strcmp(t->owner, a->owner) == 0;
                ours += strcmp(t->tenant, a->tenant) == 0;
        }
        *ret_mine = mine;
        *ret_ours = ours;
}

/* Fetched results make room until need more bytes fit; false if they cannot (and then none is
 * freed for nothing when need alone is over the bound). */
static bool task_store_make_room(TaskStore *s, uint64_t need, const Task *keep) {
        if (need > s->max_bytes)
                return false;
        while (need > s->max_bytes - MIN(s->bytes, s->max_bytes))
                if (!task_store_evict_fetched_of(s, NULL, NULL, keep))
                        return false;
        return true;
}

int task_store_create(TaskStore *s, const TaskAsker *a, uint64_t ttl_usec, uint64_t now_mono, uint64_t now_real,
                      Task **ret) {
        const char *owner = a->owner;
        if (strlen(owner) >= TASK_OWNER_MAX || strlen(a->tenant) >= TASK_TENANT_MAX)
                return -EINVAL;
        task_store_sweep(s, now_mono);
        unsigned mine, ours;
        task_store_count(s, a, &mine, &ours);
        /* The tenant's own fetched task first at its bound (a tenant's tasks make room only among
         * themselves); then the owner's own, at the total bound too: making room with it spares the
         * other clients' results. */
        if (ours >= a->tenant_max && task_store_evict_fetched_of(s, NULL, a->tenant, NULL))
                task_store_count(s, a, &mine, &ours);
        if ((mine >= s->max_per_owner || s->n_tasks >= s->max_total) && task_store_evict_fetched(s, owner))
                task_store_count(s, a, &mine, &ours);
        /* Bounds reached: the total is what the message names, as before any fetching. Another
         * owner's fetched task is taken only when it lets this one in. */
        if (s->n_tasks >= s->max_total &&
            (mine >= s->max_per_owner || ours >= a->tenant_max || !task_store_evict_fetched(s, NULL)))
                return -EBUSY;
        if (ours >= a->tenant_max)
                return -EUSERS;
        if (mine >= s->max_per_owner)
                return -EDQUOT;

        _cleanup_free_ Task *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        int r = str_random_id(t->id, s->tag, TASK_ID_BYTES);
        if (r < 0)
                return r;
        strcpy(t->owner, owner);
        strcpy(t->tenant, a->tenant);
        t->store = s;
        t->status = TASK_WORKING;
        t->created_usec = t->updated_usec = now_real;
        t->ttl_usec = ttl_usec > 0 && ttl_usec < s->ttl_usec ? ttl_usec : s->ttl_usec;
        Task *owned = TAKE_PTR(t);
        LIST_PREPEND(tasks, s->tasks, owned);
        s->n_tasks++;
        *ret = owned;
        return 0;
}

Task *task_store_find(TaskStore *s, const char *owner, const char *id, uint64_t now_mono) {
        task_store_sweep(s, now_mono);
        /* An id is a caller's secret of sorts: compared in constant time, so that timing does not
         * tell how much of a guess was right (issue 29 #8). */
        size_t n = strlen(id);
        LIST_FOREACH(tasks, t, s->tasks)
                if (str_secret_equal(id, n, t->id, strlen(t->id)))
                        /* Compared after the id: which owner a task has is not shown by timing to
                         * someone who would have to know the id first anyway. */
                        return strcmp(t->owner, owner) == 0 ? t : NULL;
        return NULL;
}

size_t task_store_list(TaskStore *s, const char *owner, uint64_t now_mono, Task **ret, size_t n) {
        task_store_sweep(s, now_mono);
        size_t k = 0;
        LIST_FOREACH(tasks, t, s->tasks)
                if (k < n && strcmp(t->owner, owner) == 0)
                        ret[k++] = t;
        return k;
}

void task_end(Task *t, TaskStatus status, char *reply, uint64_t now_mono, uint64_t now_real) {
        _cleanup_free_ char *plain = reply;
        if (t->status != TASK_WORKING)
                return;
        void *packed = NULL;
        size_t packed_len = 0, n = plain ? strlen(plain) : 0;
        if (status == TASK_COMPLETED && plain) {
                if (pack(plain, n, &packed, &packed_len) < 0)
                        status = TASK_FAILED; /* too_big 0: out of memory */
                else if (!task_store_make_room(t->store, packed_len, t)) {
                        /* Kept results nobody fetched fill the bound: this one is not kept, and says so. */
                        t->too_big = packed_len;
                        free(packed);
                        packed = NULL;
                        status = TASK_FAILED;
                }
        }
        if (!packed)
                packed_len = n = 0;
        t->status = status;
        t->packed = packed;
        t->packed_len = packed_len;
        t->reply_len = n;
        t->store->bytes += packed_len;
        t->run = NULL;
        t->ended_usec = now_mono;
        t->updated_usec = now_real;
        if (t->store->keeper.kept)
                t->store->keeper.kept(t->store->keeper.userdata, t);
}

void task_store_remove(TaskStore *s, Task *t) {
        task_drop(s, t);
}

int task_store_restore(TaskStore *s, const Task *from, void *packed, uint64_t now_mono, Task **ret) {
        _cleanup_free_ void *p = packed;
        LIST_FOREACH(tasks, t, s->tasks)
                if (strcmp(t->id, from->id) == 0)
                        return -EEXIST;
        if (!task_status_is_terminal(from->status) || now_mono - from->ended_usec >= from->ttl_usec ||
            from->ended_usec > now_mono)
                return -ESTALE;
        if (s->n_tasks >= s->max_total || from->packed_len > s->max_bytes - MIN(s->bytes, s->max_bytes))
                return -ENOSPC;
        Task *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        *t = *from;
        t->store = s;
        t->packed = TAKE_PTR(p);
        t->kept = false; /* copied from the record; the keeper marks what it keeps */
        t->run = t->waiters = NULL;
        t->ttl_usec = MIN(t->ttl_usec, s->ttl_usec);
        LIST_APPEND(tasks, s->tasks, t); /* older than any task made since the start */
        s->n_tasks++;
        s->bytes += t->packed_len;
        *ret = t;
        return 0;
}
