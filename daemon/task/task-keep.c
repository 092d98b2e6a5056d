/* task-keep.c: an ended task's record, written for a keeper and read back by the next daemon
 * (task.h, task_record_head()). Pure: tests/unit/test-task.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int fail(const char **reterr_why, const char *why) {
        if (reterr_why)
                *reterr_why = why;
        return -EBADMSG;
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

int task_record_parse(const char *head, size_t n, Task *ret, const char **reterr_why) {
        char text[TASK_RECORD_HEAD_BYTES + 1];
        size_t len = strnlen(head, n);
        if (len > TASK_RECORD_HEAD_BYTES)
                return fail(reterr_why, "the head is too long");
        memcpy(text, head, len);
        text[len] = 0;
        Task t = { .kept_fd = -EBADF };
        bool seen[_F_MAX] = {};
        char end[TASK_ID_MAX + 1] = "";
        char *save = NULL, *line = strtok_r(text, "\n", &save);
        if (!line || strcmp(line, TASK_RECORD_MAGIC) != 0)
                return fail(reterr_why, "not a record of this format or version");
        while ((line = strtok_r(NULL, "\n", &save))) {
                char *value = strchr(line, ' ');
                if (!value)
                        return fail(reterr_why, "a line without a value");
                *value++ = 0;
                int k = 0;
                while (k < _F_MAX && strcmp(keys[k], line) != 0)
                        k++;
                if (k == _F_MAX)
                        continue; /* a newer daemon's */
                if (seen[k])
                        return fail(reterr_why, "a key given twice");
                seen[k] = true;
                uint64_t v = 0;
                char *text_field = k == F_ID ? t.id : k == F_OWNER ? t.owner : k == F_TENANT ? t.tenant : k == F_END ? end : NULL;
                size_t size = k == F_ID || k == F_END ? TASK_ID_MAX + 1 : k == F_OWNER ? TASK_OWNER_MAX : TASK_TENANT_MAX;
                if (text_field) {
                        if (strlen(value) >= size || !str_is_printable(value))
                                return fail(reterr_why, "a text field too long or not printable");
                        strcpy(text_field, value);
                        continue;
                }
                if (k == F_STATUS) {
                        int st = TASK_COMPLETED;
                        while (st <= TASK_CANCELLED && strcmp(status_names[st], value) != 0)
                                st++;
                        if (st > TASK_CANCELLED)
                                return fail(reterr_why, "a status that is not an end");
                        t.status = (TaskStatus) st;
                        continue;
                }
                if (str_parse_u64(value, &v) < 0 || (k == F_FETCHED && v > 1))
                        return fail(reterr_why, "a number that does not read");
                switch (k) {
                case F_CREATED: t.created_usec = v; break;
                case F_UPDATED: t.updated_usec = v; break;
                case F_ENDED: t.ended_usec = v; break;
                case F_TTL: t.ttl_usec = v; break;
                case F_FETCHED: t.fetched = v == 1; break;
                case F_TOO_BIG: t.too_big = v; break;
                case F_REPLY_LEN: t.reply_len = (size_t) v; break;
                case F_PACKED_LEN: t.packed_len = (size_t) v; break;
                }
        }
        for (int k = 0; k < _F_MAX; k++)
                if (!seen[k])
                        return fail(reterr_why, k == F_END ? "the record is cut short" : "a field is missing");
        if (strcmp(end, t.id) != 0)
                return fail(reterr_why, "the record is cut short (its end does not match its start)");
        if (!id_valid(t.id))
                return fail(reterr_why, "a task id of the wrong shape");
        if ((t.status == TASK_COMPLETED) != (t.packed_len > 0) || (t.packed_len > 0 && t.reply_len == 0))
                return fail(reterr_why, "a reply that does not match its status");
        *ret = t;
        return 0;
}
