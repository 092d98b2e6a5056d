/* task-keeper.c: the task store's keeper on disk (task-keeper.h). Every file operation is relative
 * to the directory's fd and refuses links (O_NOFOLLOW): nothing in tasks/ can send a write
 * elsewhere. A record is written whole under a '.' name and renamed to its id, so a file with an
 * id for a name is always whole (a crash can leave only a '.' file, which the next start removes).
 * Nothing is fsync'ed: the loop must not wait for the disk, and a record a power cut leaves short
 * is refused at the next start ("its reply is cut short"), not misread. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "str-util.h"
#include "task-keeper.h"

#define OWNER_KEPT "tenant:"

struct TaskKeeperDir {
        int dir_fd; /* state_dir/tasks */
};

int task_keeper_open(const char *state_dir, TaskKeeperDir **ret, const char **reterr_what) {
        _cleanup_close_ int state_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (state_fd < 0) {
                *reterr_what = "cannot open the state directory";
                return -errno;
        }
        /* 0700 whatever the state directory's mode: the results are the tenants' runs' output. */
        if (mkdirat(state_fd, TASK_KEEPER_DIR, 0700) < 0 && errno != EEXIST) {
                *reterr_what = "cannot make its " TASK_KEEPER_DIR "/";
                return -errno;
        }
        _cleanup_close_ int fd = openat(state_fd, TASK_KEEPER_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                *reterr_what = "cannot open its " TASK_KEEPER_DIR "/";
                return -errno;
        }
        if (st.st_uid != geteuid()) {
                *reterr_what = "its " TASK_KEEPER_DIR "/ belongs to another user";
                return -EPERM;
        }
        if ((st.st_mode & 0077) && fchmod(fd, 0700) < 0) {
                *reterr_what = "cannot make its " TASK_KEEPER_DIR "/ private (mode 0700)";
                return -errno;
        }
        TaskKeeperDir *k = malloc(sizeof(*k));
        if (!k) {
                *reterr_what = "no memory";
                return -ENOMEM;
        }
        k->dir_fd = TAKE_FD(fd);
        *ret = k;
        return 0;
}

TaskKeeperDir *task_keeper_free(TaskKeeperDir *k) {
        if (!k)
                return NULL;
        safe_close(k->dir_fd);
        free(k);
        return NULL;
}

static int write_all(int fd, const void *p, size_t n, off_t at) {
        while (n > 0) {
                ssize_t w = pwrite(fd, p, n, at);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return w < 0 ? -errno : -EIO;
                p = (const char *) p + w;
                n -= (size_t) w;
                at += w;
        }
        return 0;
}

/* t's record in a new file, renamed to t's id once whole. 0 or -errno. */
static int record_write(TaskKeeperDir *k, const Task *t, const char head[TASK_RECORD_HEAD_BYTES]) {
        char part[TASK_ID_MAX + 2];
        snprintf(part, sizeof(part), ".%s", t->id);
        (void) unlinkat(k->dir_fd, part, 0);
        _cleanup_close_ int fd = openat(k->dir_fd, part, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r = fd < 0 ? -errno : write_all(fd, head, TASK_RECORD_HEAD_BYTES, 0);
        if (r >= 0 && t->packed_len > 0)
                r = write_all(fd, t->packed, t->packed_len, TASK_RECORD_HEAD_BYTES);
        if (r >= 0 && renameat(k->dir_fd, part, k->dir_fd, t->id) < 0)
                r = -errno;
        if (r < 0) {
                if (fd >= 0)
                        (void) unlinkat(k->dir_fd, part, 0);
                return r;
        }
        return 0;
}

/* A kept task's head written again in its file (fetched is all that changes): the file is opened
 * by name when it is needed, so a thousand kept tasks hold no thousand fds. */
static int head_rewrite(TaskKeeperDir *k, const Task *t, const char head[TASK_RECORD_HEAD_BYTES]) {
        _cleanup_close_ int fd = openat(k->dir_fd, t->id, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        return fd < 0 ? -errno : write_all(fd, head, TASK_RECORD_HEAD_BYTES, 0);
}

static void on_kept(void *userdata, Task *t) {
        TaskKeeperDir *k = userdata;
        if (strncmp(t->owner, OWNER_KEPT, strlen(OWNER_KEPT)) != 0)
                return;
        char head[TASK_RECORD_HEAD_BYTES];
        int r = task_record_head(t, head);
        if (r < 0)
                return;
        if (t->kept) {
                r = head_rewrite(k, t, head);
                if (r < 0)
                        log_warning_errno(r, "task %.8s…: cannot write its record again: %m", t->id);
                return;
        }
        r = record_write(k, t, head);
        if (r < 0) {
                log_warning_errno(r, "task %.8s…: cannot keep its result across a restart (%s/): %m", t->id,
                                  TASK_KEEPER_DIR);
                return;
        }
        t->kept = true;
}

static void on_dropped(void *userdata, Task *t) {
        TaskKeeperDir *k = userdata;
        if (!t->kept)
                return;
        if (unlinkat(k->dir_fd, t->id, 0) < 0 && errno != ENOENT)
                log_warning_errno(-errno, "task %.8s…: cannot remove its record: %m", t->id);
        t->kept = false;
}

void task_keeper_install(TaskKeeperDir *k, TaskStore *s) {
        s->keeper = (TaskKeeper) { .kept = on_kept, .dropped = on_dropped, .userdata = k };
}

/* The task in file name back in s; why it cannot be, or NULL (*ret_expired: quietly not). */
static const char *adopt_one(TaskKeeperDir *k, TaskStore *s, const char *name, uint64_t now_mono,
                             uint64_t now_real, bool *ret_expired) {
        _cleanup_close_ int fd = openat(k->dir_fd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return "it cannot be opened";
        if (!S_ISREG(st.st_mode))
                return "it is not a regular file";
        if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0600)
                return "it is not the daemon's own file of mode 0600";
        char head[TASK_RECORD_HEAD_BYTES];
        if (pread(fd, head, sizeof(head), 0) != (ssize_t) sizeof(head))
                return "its record cannot be read";
        Task from;
        const char *why = NULL;
        if (task_record_parse(head, sizeof(head), &from, &why) < 0)
                return why;
        if (strcmp(from.id, name) != 0)
                return "its record names another task";
        if (strncmp(from.owner, OWNER_KEPT, strlen(OWNER_KEPT)) != 0)
                return "its owner is not a tenant";
        if ((uint64_t) st.st_size != sizeof(head) + (uint64_t) from.packed_len)
                return "its reply is cut short";
        if (from.packed_len > s->max_bytes)
                return "its reply is over MCP_EXEC_TASKS_MAX_BYTES";
        if (task_record_rebase(&from, now_mono, now_real) < 0) {
                *ret_expired = true;
                return "it has expired";
        }
        _cleanup_free_ void *packed = from.packed_len ? malloc(from.packed_len) : NULL;
        if (from.packed_len && !packed)
                return "no memory";
        if (from.packed_len && pread(fd, packed, from.packed_len, sizeof(head)) != (ssize_t) from.packed_len)
                return "its reply cannot be read";
        Task *t;
        int r = task_store_restore(s, &from, TAKE_PTR(packed), now_mono, &t);
        if (r == -ESTALE)
                *ret_expired = true;
        if (r < 0)
                return r == -ESTALE ? "it has expired" : r == -EEXIST ? "its id is another task's"
                       : r == -ENOSPC ? "the store's bounds are reached" : "no memory";
        t->kept = true;
        return NULL;
}

/* A file name as the journal may show it: ids are short and printable, anything else is not shown. */
static const char *shown(const char *name) {
        return strlen(name) <= TASK_ID_MAX && str_is_printable(name) ? name : "(a name that is no task id)";
}

unsigned task_keeper_adopt(TaskKeeperDir *k, TaskStore *s, uint64_t now_mono, uint64_t now_real) {
        int fd = openat(k->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd < 0 ? NULL : fdopendir(fd);
        if (!d) {
                log_warning_errno(-errno, "cannot read %s/ for the tasks kept before: %m", TASK_KEEPER_DIR);
                safe_close(fd);
                return 0;
        }
        unsigned back = 0, expired = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                const char *name = de->d_name;
                if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                        continue;
                if (name[0] == '.') {
                        /* A record a daemon was writing when it died. */
                        (void) unlinkat(k->dir_fd, name, 0);
                        continue;
                }
                bool is_expired = false;
                const char *why = adopt_one(k, s, name, now_mono, now_real, &is_expired);
                if (!why) {
                        back++;
                        continue;
                }
                if (is_expired)
                        expired++;
                else
                        log_warning("%s/%s: not taken back: %s; removed", TASK_KEEPER_DIR, shown(name), why);
                if (unlinkat(k->dir_fd, name, 0) < 0 && unlinkat(k->dir_fd, name, AT_REMOVEDIR) < 0)
                        log_warning_errno(-errno, "cannot remove %s/%s: %m", TASK_KEEPER_DIR, shown(name));
        }
        (void) closedir(d);
        if (back > 0 || expired > 0)
                log_info("%u ended task(s) taken back from %s/ (%u expired meanwhile, removed)", back, TASK_KEEPER_DIR,
                         expired);
        return back;
}
