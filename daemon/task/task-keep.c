/* task-keep.c: an ended task's record, written for a keeper and read back by the next daemon
 * (task.h, task_record_head()). Pure: tests/unit/test-task.c. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "str-util.h"
#include "task.h"

static const char *const status_names[] = {
        [TASK_WORKING] = "working",
        [TASK_COMPLETED] = "completed",
        [TASK_FAILED] = "failed",
        [TASK_CANCELLED] = "cancelled",
};

/* A task id: str_random_id()'s, an instance tag of [a-z0-9] and '-', then hex; or hex alone. */
static bool id_valid(const char *s) {
        return str_id_shape_valid(s, TASK_ID_LEN, TASK_ID_MAX);
}

int task_record_head(const Task *t, char head[TASK_RECORD_HEAD_BYTES]) {
        if (t->status == TASK_WORKING || !id_valid(t->id) || !str_is_printable(t->owner) || !str_is_printable(t->tenant))
                return -EINVAL;
        memset(head, 0, TASK_RECORD_HEAD_BYTES);
        int n = snprintf(head, TASK_RECORD_HEAD_BYTES,
                         TASK_RECORD_MAGIC "\n"
                         "id %s\n"
                         "owner %s\n"
                         "tenant %s\n"
                         "status %s\n"
                         "created_usec %" PRIu64 "\n"
                         "updated_usec %" PRIu64 "\n"
                         "ended_usec %" PRIu64 "\n"
                         "ttl_usec %" PRIu64 "\n"
                         "fetched %d\n"
                         "too_big %" PRIu64 "\n"
                         "reply_len %zu\n"
                         "packed_len %zu\n"
                         "end %s\n",
                         t->id, t->owner, t->tenant, status_names[t->status], t->created_usec, t->updated_usec,
                         t->ended_usec, t->ttl_usec, t->fetched ? 1 : 0, t->too_big, t->reply_len, t->packed_len,
                         t->id);
        if (n < 0 || n >= TASK_RECORD_HEAD_BYTES) {
                memset(head, 0, TASK_RECORD_HEAD_BYTES);
                return -EINVAL;
        }
        return 0;
}

enum {
        F_ID, F_OWNER, F_TENANT, F_STATUS, F_CREATED, F_UPDATED, F_ENDED, F_TTL, F_FETCHED, F_TOO_BIG,
        F_REPLY_LEN, F_PACKED_LEN, F_END, _F_MAX,
};
static const char *const keys[_F_MAX] = {
        [F_ID] = "id", [F_OWNER] = "owner", [F_TENANT] = "tenant", [F_STATUS] = "status",
        [F_CREATED] = "created_usec", [F_UPDATED] = "updated_usec", [F_ENDED] = "ended_usec", [F_TTL] = "ttl_usec",
        [F_FETCHED] = "fetched", [F_TOO_BIG] = "too_big", [F_REPLY_LEN] = "reply_len",
        [F_PACKED_LEN] = "packed_len", [F_END] = "end",
};

/* What the fields read into, until the whole record is known to be good. */
typedef struct TaskParse {
        Task t;
        char end[TASK_ID_MAX + 1];
} TaskParse;

static const char *task_key(size_t k) {
        return keys[k];
}

static int task_field(size_t k, const char *value, void *userdata, const char **reterr_why) {
        TaskParse *p = userdata;
        Task *t = &p->t;
        switch (k) {
        case F_ID: return record_text(value, t->id, sizeof(t->id), reterr_why);
        case F_OWNER: return record_text(value, t->owner, sizeof(t->owner), reterr_why);
        case F_TENANT: return record_text(value, t->tenant, sizeof(t->tenant), reterr_why);
        case F_END: return record_text(value, p->end, sizeof(p->end), reterr_why);
        case F_STATUS:
                for (int st = TASK_COMPLETED; st <= TASK_CANCELLED; st++)
                        if (strcmp(status_names[st], value) == 0) {
                                t->status = (TaskStatus) st;
                                return 0;
                        }
                return record_fail(reterr_why, "a status that is not an end");
        }
        uint64_t v;
        if (record_u64(value, &v, reterr_why) < 0)
                return -EBADMSG;
        switch (k) {
        case F_CREATED: t->created_usec = v; break;
        case F_UPDATED: t->updated_usec = v; break;
        case F_ENDED: t->ended_usec = v; break;
        case F_TTL: t->ttl_usec = v; break;
        case F_FETCHED:
                if (v > 1)
                        return record_fail(reterr_why, "a number that does not read");
                t->fetched = v == 1;
                break;
        case F_TOO_BIG: t->too_big = v; break;
        case F_REPLY_LEN: t->reply_len = (size_t) v; break;
        case F_PACKED_LEN: t->packed_len = (size_t) v; break;
        }
        return 0;
}

static const RecordFormat task_format = {
        .magic = TASK_RECORD_MAGIC,
        .max_bytes = TASK_RECORD_HEAD_BYTES,
        .n_keys = _F_MAX,
        .key = task_key,
        .field = task_field,
};
static_assert(TASK_RECORD_HEAD_BYTES <= RECORD_BYTES_MAX, "a task's head is a record");

int task_record_parse(const char *head, size_t n, Task *ret, const char **reterr_why) {
        TaskParse p = {};
        int r = record_parse(&task_format, head, n, &p, reterr_why);
        if (r < 0)
                return r;
        const Task *t = &p.t;
        if (strcmp(p.end, t->id) != 0)
                return record_fail(reterr_why, "the record is cut short (its end does not match its start)");
        if (!id_valid(t->id))
                return record_fail(reterr_why, "a task id of the wrong shape");
        if ((t->status == TASK_COMPLETED) != (t->packed_len > 0) || (t->packed_len > 0 && t->reply_len == 0))
                return record_fail(reterr_why, "a reply that does not match its status");
        *ret = p.t;
        return 0;
}

int task_record_rebase(Task *t, uint64_t now_mono, uint64_t now_real) {
        uint64_t age = now_real > t->updated_usec ? now_real - t->updated_usec : 0;
        if (age >= t->ttl_usec)
                return -ESTALE;
        if (age <= now_mono)
                t->ended_usec = now_mono - age;
        else {
                t->ttl_usec -= age - now_mono;
                t->ended_usec = 0;
        }
        return 0;
}
