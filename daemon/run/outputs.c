/* outputs.c: the files a run leaves in outputs/, read back by the daemon through
 * /proc/<init>/root while the run's init is alive. Every path is resolved with openat2() below a
 * directory fd, refusing every symlink (RESOLVE_NO_SYMLINKS, O_NOFOLLOW) and mount crossing: the
 * run owns that tree, and an absolute link resolved by the daemon would name the HOST's file
 * (openat2(2)). Only regular files are read, each at most its size at the time it was listed, all
 * of them at most max_return_bytes; the walk is bounded in entries and depth, so a run that leaves a
 * million files or a 1 GB file costs the loop a few milliseconds, not its memory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "mime.h"
#include "outputs.h"

#define OUTPUTS_DIR "outputs"
#define OUTPUTS_HEAD_BYTES 512 /* what the type is guessed from (signatures, UTF-8) */

typedef struct Walk {
        Outputs *out;
        size_t cap;
        uint64_t scanned;
        unsigned dirs;
        char *rel[OUTPUTS_LIST_MAX]; /* path of each listed file below outputs/, for the second open */
} Walk;

/* openat2()'s resolution by hand, one component at a time, for where openat2() is refused: systemd's
 * RestrictSUIDSGID= (set in mcp-execd.service) answers it ENOSYS, since a filter cannot look into
 * struct open_how for the mode bits, and glibc callers fall back to openat(). Stricter than what it
 * stands for: no absolute path (below RESOLVE_IN_ROOT, a leading "/" is the root itself), no "."
 * or ".." or empty component, every component opened with O_NOFOLLOW (a symlink, magic links of
 * /proc included, is ELOOP or ENOTDIR, as with RESOLVE_NO_SYMLINKS), and with RESOLVE_NO_XDEV every
 * component on dfd's file system (each mount below the run's root is a file system of its own:
 * tmpfs, proc, the read-only binds). */
static int open_beneath_walk(int dfd, const char *path, int flags, uint64_t resolve) {
        if (resolve & RESOLVE_IN_ROOT)
                path += strspn(path, "/");
        if (*path == '\0' || *path == '/')
                return -EXDEV;
        struct stat root;
        if ((resolve & RESOLVE_NO_XDEV) && fstat(dfd, &root) < 0)
                return -errno;
        _cleanup_close_ int cur = -EBADF;
        for (const char *p = path;;) {
                size_t n = strcspn(p, "/");
                bool last = p[n] == '\0';
                char comp[NAME_MAX + 1];
                if (n == 0 || n > NAME_MAX)
                        return n == 0 ? -EXDEV : -ENAMETOOLONG;
                memcpy(comp, p, n);
                comp[n] = '\0';
                if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0)
                        return -EXDEV;
                int f = last ? flags | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY
                             : O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
                int fd = openat(cur >= 0 ? cur : dfd, comp, f);
                if (fd < 0)
                        return -errno;
                safe_close(cur);
                cur = fd;
                struct stat st;
                if (resolve & RESOLVE_NO_XDEV) {
                        if (fstat(cur, &st) < 0)
                                return -errno;
                        if (st.st_dev != root.st_dev)
                                return -EXDEV;
                }
                if (last)
                        return TAKE_FD(cur);
                p += n + 1;
        }
}

static int open_beneath(int dfd, const char *path, int flags, uint64_t resolve) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY),
                .resolve = resolve | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, dfd, path, &how, sizeof(how));
        if (fd < 0 && errno == ENOSYS)
                return open_beneath_walk(dfd, path, flags, resolve);
        return fd < 0 ? -errno : (int) fd;
}

static int walk_add(Walk *w, const char *rel, uint64_t bytes, const char *mime) {
        Outputs *o = w->out;
        if (o->n_files == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 16;
                ExecOutputFile *f = realloc(o->files, cap * sizeof(*f));
                if (!f)
                        return -ENOMEM;
                o->files = f;
                w->cap = cap;
        }
        _cleanup_free_ char *name = NULL;
        if (asprintf(&name, OUTPUTS_DIR "/%s", rel) < 0) {
                name = NULL; /* asprintf(3) leaves it undefined */
                return -ENOMEM;
        }
        w->rel[o->n_files] = strdup(rel);
        if (!w->rel[o->n_files])
                return -ENOMEM;
        o->files[o->n_files++] = (ExecOutputFile) { .name = TAKE_PTR(name), .bytes = bytes, .mime = mime };
        return 0;
}

DEFINE_POINTER_CLEANUP(DIR, closedir)

/* One directory of outputs/ (takes dir_fd), prefix its path below outputs/ ("" or "a/b/"). */
static int walk_dir(Walk *w, int dir_fd, const char *prefix, unsigned depth) {
        _cleanup_close_ int dfd = dir_fd;
        _cleanup_(closedirp) DIR *d = fdopendir(dfd);
        if (!d)
                return -errno;
        (void) TAKE_FD(dfd); /* d's now */
        int r = 0;
        struct dirent *de;
        while (r >= 0 && (de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (++w->scanned > OUTPUTS_SCAN_MAX)
                        break;
                if (w->out->n_files >= OUTPUTS_LIST_MAX) {
                        w->out->unlisted++; /* counted, not opened: stays cheap */
                        continue;
                }
                char rel[4096];
                if (snprintf(rel, sizeof(rel), "%s%s", prefix, de->d_name) >= (int) sizeof(rel))
                        continue;
                if (de->d_type == DT_DIR) {
                        if (depth >= OUTPUTS_DEPTH_MAX || w->dirs >= OUTPUTS_DIRS_MAX) {
                                w->out->unlisted++;
                                continue;
                        }
                        int sub = open_beneath(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY,
                                               RESOLVE_BENEATH | RESOLVE_NO_XDEV);
                        if (sub < 0)
                                continue;
                        w->dirs++;
                        size_t n = strlen(rel);
                        rel[n] = '/';
                        rel[n + 1] = '\0';
                        r = walk_dir(w, sub, rel, depth + 1);
                        continue;
                }
                if (de->d_type == DT_LNK) {
                        /* Listed, never followed nor read. */
                        r = walk_add(w, rel, 0, "inode/symlink");
                        continue;
                }
                _cleanup_close_ int fd = open_beneath(dirfd(d), de->d_name, O_RDONLY | O_NONBLOCK,
                                                      RESOLVE_BENEATH | RESOLVE_NO_XDEV);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                        continue; /* a FIFO, a socket, gone: nothing to return */
                char head[OUTPUTS_HEAD_BYTES];
                ssize_t n = pread(fd, head, sizeof(head), 0);
                if (n < 0)
                        n = 0;
                r = walk_add(w, rel, (uint64_t) st.st_size,
                             file_mime(head, (size_t) n, (uint64_t) n >= (uint64_t) st.st_size, de->d_name));
        }
        return r;
}

/* Sorts files and their relative paths together. */
static int cmp_files(const void *a, const void *b) {
        return strverscmp(((const ExecOutputFile *) a)->name, ((const ExecOutputFile *) b)->name);
}

/* Reads one listed file whole (it fits the budget), through a fresh resolution of its path. */
static int read_file(int outfd, const char *rel, uint64_t bytes, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open_beneath(outfd, rel, O_RDONLY | O_NONBLOCK, RESOLVE_BENEATH | RESOLVE_NO_XDEV);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        /* Never more than was listed (and budgeted), whatever happened to the file since. */
        _cleanup_free_ char *buf = malloc(bytes + 1);
        if (!buf)
                return -ENOMEM;
        size_t got = 0;
        while (got < bytes) {
                ssize_t n = pread(fd, buf + got, bytes - got, (off_t) got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        buf[got] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = got;
        return 0;
}

int outputs_collect_at(int rootfd, const char *workdir, uint64_t max_return_bytes, Outputs *ret) {
        Outputs o = {};
        *ret = o;

        char path[256];
        snprintf(path, sizeof(path), "%s/" OUTPUTS_DIR, workdir);
        /* RESOLVE_IN_ROOT: ".." and absolute names stay inside the run's root; no symlink at all
         * (outputs/ itself may be one the code made). The working directory is its own tmpfs: no
         * RESOLVE_NO_XDEV on this first step. */
        _cleanup_close_ int outfd = open_beneath(rootfd, path, O_RDONLY | O_DIRECTORY, RESOLVE_IN_ROOT);
        if (outfd == -ENOENT || outfd == -ENOTDIR || outfd == -ELOOP)
                return 0;
        if (outfd < 0)
                return outfd;
        _cleanup_close_ int keep = fcntl(outfd, F_DUPFD_CLOEXEC, 3);
        if (keep < 0)
                return -errno;

        _cleanup_free_ Walk *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->out = &o;
        int r = walk_dir(w, TAKE_FD(outfd), "", 0);

        /* Sort the names and carry the relative paths along: sort an index. */
        if (r >= 0 && o.n_files > 1) {
                for (size_t i = 0; i < o.n_files; i++)
                        o.files[i].data = w->rel[i]; /* parked in data while sorting */
                qsort(o.files, o.n_files, sizeof(*o.files), cmp_files);
                for (size_t i = 0; i < o.n_files; i++) {
                        w->rel[i] = (char *) o.files[i].data;
                        o.files[i].data = NULL;
                }
        }

        size_t n_returned = 0;
        for (size_t i = 0; r >= 0 && i < o.n_files; i++) {
                ExecOutputFile *f = &o.files[i];
                if (strcmp(f->mime, "inode/symlink") == 0 || n_returned >= OUTPUTS_RETURN_MAX ||
                    f->bytes > max_return_bytes - o.returned_bytes)
                        continue;
                char *data = NULL;
                size_t len = 0;
                int k = read_file(keep, w->rel[i], f->bytes, &data, &len);
                if (k == -ENOMEM)
                        r = k;
                if (k < 0)
                        continue;
                f->data = data;
                f->len = len;
                f->returned = true;
                /* The type from the whole file now (a head of a text file may end mid-sequence). */
                f->mime = file_mime(data, MIN(len, (size_t) OUTPUTS_HEAD_BYTES), len <= OUTPUTS_HEAD_BYTES,
                                        f->name);
                o.returned_bytes += len;
                n_returned++;
        }
        for (size_t i = 0; i < o.n_files; i++)
                free(w->rel[i]);
        if (r < 0) {
                outputs_done(&o);
                return r;
        }
        *ret = o;
        return 0;
}

int outputs_collect(pid_t pid, const char *workdir, uint64_t max_return_bytes, uid_t as_uid, gid_t as_gid,
                    Outputs *ret) {
        char root[64];
        snprintf(root, sizeof(root), "/proc/%d/root", (int) pid);
        /* The magic link is the daemon's own choice of path (the init is our unreaped child): the
         * one jump it may take. Everything below is resolved from this fd. */
        _cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return -errno;
        if (as_uid == (uid_t) -1)
                return outputs_collect_at(rootfd, workdir, max_return_bytes, ret);
        /* The tree is the run's, and so are the permissions it is read with: as root without
         * CAP_DAC_OVERRIDE (mcp-execd.service keeps only CAP_SETUID, CAP_SETGID and CAP_CHOWN) its
         * 0700 directories are closed to us, and as the run's user we read exactly what it could.
         * Only the file-system ids change (setfsuid(2)): nothing else of the daemon's identity. */
        uid_t old_uid = (uid_t) setfsuid(as_uid);
        gid_t old_gid = (gid_t) setfsgid(as_gid);
        int r = (uid_t) setfsuid((uid_t) -1) == as_uid && (gid_t) setfsgid((gid_t) -1) == as_gid
                        ? outputs_collect_at(rootfd, workdir, max_return_bytes, ret)
                        : -EPERM;
        (void) setfsgid(old_gid);
        (void) setfsuid(old_uid);
        return r;
}

void outputs_done(Outputs *o) {
        for (size_t i = 0; i < o->n_files; i++) {
                free((char *) o->files[i].name);
                free((char *) o->files[i].data);
        }
        free(o->files);
        *o = (Outputs) {};
}
