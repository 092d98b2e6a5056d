/* task-keeper.c: the task store's keeper in systemd's fd store (task-keeper.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "str-util.h"
#include "task-keeper.h"

#define OWNER_KEPT "tenant:"

static void keeper_name(const char *id, char out[FDSTORE_NAME_MAX + 1]) {
        snprintf(out, FDSTORE_NAME_MAX + 1, TASK_KEEPER_PREFIX "%s", id);
}

static int write_all(int fd, const void *p, size_t n, off_t at) {
        while (n > 0) {
                ssize_t k = pwrite(fd, p, n, at);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EIO;
                p = (const char *) p + k;
                n -= (size_t) k;
                at += k;
        }
        return 0;
}

static void on_kept(void *userdata, Task *t) {
        if (strncmp(t->owner, OWNER_KEPT, strlen(OWNER_KEPT)) != 0)
                return;
        char head[TASK_RECORD_HEAD_BYTES];
        int r = task_record_head(t, head);
        if (r < 0)
                return;
        if (t->kept_fd >= 0) {
                /* The same file as PID 1's copy: its head again (fetched) is all that changes. */
                r = write_all(t->kept_fd, head, sizeof(head), 0);
                if (r < 0)
                        log_warning_errno(r, "task %.8s…: cannot write its record again: %m", t->id);
                return;
        }
        _cleanup_close_ int fd = memfd_create("mcp-execd-task", MFD_CLOEXEC);
        r = fd < 0 ? -errno : write_all(fd, head, sizeof(head), 0);
        if (r >= 0 && t->packed_len > 0)
                r = write_all(fd, t->packed, t->packed_len, sizeof(head));
        char name[FDSTORE_NAME_MAX + 1];
        keeper_name(t->id, name);
        if (r >= 0)
                r = fdstore_push(name, fd);
        if (r < 0) {
                log_warning_errno(r, "task %.8s…: cannot keep its result across a restart: %m", t->id);
                return;
        }
        t->kept_fd = TAKE_FD(fd);
}

static void on_dropped(void *userdata, Task *t) {
        if (t->kept_fd < 0)
                return;
        char name[FDSTORE_NAME_MAX + 1];
        keeper_name(t->id, name);
        (void) fdstore_remove(name);
        t->kept_fd = safe_close(t->kept_fd);
}

void task_keeper_install(TaskStore *s) {
        s->keeper = (TaskKeeper) { .kept = on_kept, .dropped = on_dropped };
}

/* One kept task back in s; why it cannot be, or NULL. */
static const char *adopt_one(TaskStore *s, const char *name, int fd) {
        char head[TASK_RECORD_HEAD_BYTES], want[FDSTORE_NAME_MAX + 1];
        Task from;
        const char *why = NULL;
        struct stat st;
        ssize_t n = pread(fd, head, sizeof(head), 0);
        if (n != (ssize_t) sizeof(head) || fstat(fd, &st) < 0)
                return "its record cannot be read";
        if (task_record_parse(head, sizeof(head), &from, &why) < 0)
                return why;
        keeper_name(from.id, want);
        if (strcmp(want, name) != 0)
                return "its record names another task";
        if ((uint64_t) st.st_size != sizeof(head) + (uint64_t) from.packed_len)
                return "its reply is cut short";
        if (from.packed_len > s->max_bytes)
                return "its reply is over MCP_EXEC_TASKS_MAX_BYTES";
        _cleanup_free_ void *packed = from.packed_len ? malloc(from.packed_len) : NULL;
        if (from.packed_len && !packed)
                return "no memory";
        if (from.packed_len && pread(fd, packed, from.packed_len, sizeof(head)) != (ssize_t) from.packed_len)
                return "its reply cannot be read";
        Task *t;
        int r = task_store_restore(s, &from, TAKE_PTR(packed), now_usec(), &t);
        if (r < 0)
                return r == -ESTALE ? "it has expired" : r == -EEXIST ? "its id is another task's"
                       : r == -ENOSPC ? "the store's bounds are reached" : "no memory";
        t->kept_fd = fd;
        return NULL;
}

void task_keeper_adopt(TaskStore *s, FdStore *st) {
        unsigned back = 0;
        for (size_t i = 0; st && i < st->n; i++) {
                if (st->v[i].fd < 0 || strncmp(st->v[i].name, TASK_KEEPER_PREFIX, strlen(TASK_KEEPER_PREFIX)) != 0)
                        continue;
                int fd = TAKE_FD(st->v[i].fd);
                const char *why = adopt_one(s, st->v[i].name, fd);
                if (why) {
                        log_warning("%s: not taken back from systemd's fd store: %s", st->v[i].name, why);
                        (void) fdstore_remove(st->v[i].name);
                        safe_close(fd);
                        continue;
                }
                back++;
        }
        if (back > 0)
                log_info("%u ended task(s) taken back from systemd's fd store after a restart", back);
}
