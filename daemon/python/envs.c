/* envs.c: the dependency environment cache and the installs it waits for. The installer's process
 * and its confinement are sandbox/'s (sandbox_spawn_installer); here the daemon never waits for an
 * install: the child's output pipe, its pidfd and its deadline are operations on the ring like a
 * run's. Layout of the cache root: envs/<key>/ (complete environments only: an install
 * happens in tmp/ and is renamed into place after its marker is written), tmp/ (installs in
 * progress; emptied at start, so what a killed daemon left is never used), trash/ (evicted, being
 * removed). The marker's mtime is the environment's last use (LRU). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cleanup.h"
#include "envs.h"
#include "fd-util.h"
#include "list.h"
#include "log.h"
#include "py-helpers.h"
#include "sandbox.h"
#include "str-util.h"

#define ENV_MARKER ".mcp-execd-env.json"
#define INSTALL_OUTPUT_MAX_BYTES (256u * 1024u)
#define INSTALL_ERROR_TAIL_BYTES 3000u

typedef struct Install Install;

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

struct EnvWaiter {
        Envs *envs;
        Install *install;  /* NULL: answered from the cache through op_nop */
        EnvReadyFn ready;
        EnvCheckFn check;
        void *userdata;
        bool cancelled;
        char *key;
        char *dir;         /* the cache hit's directory */
        RingOp op_nop;
        LIST_FIELDS(EnvWaiter, waiters); /* in install->waiters */
};

struct Install {
        Envs *envs;
        bool check;
        char *key;
        char *tmp;
        char *final;
        SandboxInstaller child; /* pid, pidfd, go_fd (writing one byte lets the held child go) */
        int out_fd;
        bool eof, exited, timed_out, finished;
        int status;
        uint64_t t_start;
        Buf out;
        bool out_dropped;
        char buf[4096];
        RingOp op_read, op_pidfd, op_timer;
        struct __kernel_timespec deadline;
        EnvWaiter *waiters;
        CgroupRun *cgroup;  /* its own cgroup (scope), or NULL */
        char *place_error;  /* the cgroup placement failed: why */
        bool pending;       /* waiting for a slot (EnvsConfig.max_installs): not started yet */
        char *args_json;    /* the request, kept while pending */
        LIST_FIELDS(Install, installs);
};

typedef struct EnvUse {
        char *key;
        unsigned refs;
        LIST_FIELDS(struct EnvUse, uses);
} EnvUse;

struct Envs {
        EnvsConfig config;
        char *dir, *envs_dir, *tmp_dir, *trash_dir;
        char *index_url, *wheelhouse, *installer_python, *uv;
        Install *installs;
        EnvUse *uses;
        uint64_t n_installed;
        bool stopped; /* envs_stop(): nothing more is started */
};

static char *path_join(const char *a, const char *b) {
        char *p = NULL;
        return asprintf(&p, "%s/%s", a, b) < 0 ? NULL : p;
}

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        if (mkdir(copy, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        if (mkdir(copy, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static uid_t chown_uid;
static gid_t chown_gid;

static int chown_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        if ((st->st_uid != chown_uid || st->st_gid != chown_gid) && lchown(path, chown_uid, chown_gid) < 0)
                log_debug("cannot chown %s: %m", path);
        return 0;
}

/* Gives a tree the installer user wrote back to root (a root daemon without CAP_DAC_OVERRIDE, as
 * the hardened unit runs, could otherwise neither move nor remove it), and out of that user's
 * reach. No-op unless we are root. */
static void tree_own(const char *path) {
        if (geteuid() != 0)
                return;
        chown_uid = 0;
        chown_gid = 0;
        (void) nftw(path, chown_one, 16, FTW_PHYS | FTW_MOUNT);
}

/* Empties dir (keeping it). */
static void dir_clean(const char *dir) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
                        continue;
                _cleanup_free_ char *p = path_join(dir, de->d_name);
                if (p)
                        tree_own(p);
                if (p && rm_rf(p) < 0)
                        log_warning("cannot remove %s, ignoring", p);
        }
}

int envs_new(const EnvsConfig *config, Envs **ret, char **reterr) {
        _cleanup_(envs_freep) Envs *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->config = *config;
        e->dir = strdup(config->dir);
        e->envs_dir = path_join(config->dir, "envs");
        e->tmp_dir = path_join(config->dir, "tmp");
        e->trash_dir = path_join(config->dir, "trash");
        e->index_url = config->index_url ? strdup(config->index_url) : NULL;
        e->wheelhouse = config->wheelhouse ? strdup(config->wheelhouse) : NULL;
        e->installer_python = config->installer_python ? strdup(config->installer_python) : NULL;
        e->uv = config->uv ? strdup(config->uv) : NULL;
        if (!e->dir || !e->envs_dir || !e->tmp_dir || !e->trash_dir || (config->index_url && !e->index_url) ||
            (config->wheelhouse && !e->wheelhouse) || (config->installer_python && !e->installer_python) ||
            (config->uv && !e->uv))
                return -ENOMEM;
        e->config.dir = e->dir;
        e->config.index_url = e->index_url;
        e->config.wheelhouse = e->wheelhouse;
        e->config.installer_python = e->installer_python;
        e->config.uv = e->uv;

        /* Not world-readable (issue 29 #8): environments may hold a private index's packages, and
         * their names say what other callers asked for. A run never walks these paths: its
         * environment is bound from an O_PATH fd the daemon opens (sandbox_fs_prepare()), so envs/
         * and trash/ are the daemon's alone. The installer (its own uid) chdirs into its tmp/<id> by
         * path: the root and tmp/ let it through (x) without letting anyone list them (no r). Made
         * so on every start, whatever an older version or CacheDirectoryMode= left. */
        static const mode_t modes[] = { 0711, 0700, 0711, 0700 };
        mode_t old = umask(022);
        int r = 0;
        const char *dirs[] = { e->dir, e->envs_dir, e->tmp_dir, e->trash_dir };
        for (size_t i = 0; i < ELEMENTSOF(dirs) && r >= 0; i++) {
                r = mkdir_p(dirs[i], modes[i]);
                if (r >= 0 && chmod(dirs[i], modes[i]) < 0)
                        r = -errno;
                if (r < 0 && reterr && asprintf(reterr, "cannot create the environment cache directory %s: %s",
                                                dirs[i], strerror(-r)) < 0)
                        *reterr = NULL;
        }
        umask(old);
        if (r < 0)
                return r;
        /* What an earlier instance was installing or evicting when it died is never used. */
        dir_clean(e->tmp_dir);
        dir_clean(e->trash_dir);
        *ret = TAKE_PTR(e);
        return 0;
}

char *envs_index_path(const char *index_url) {
        if (!index_url || strncmp(index_url, "file://", 7) != 0) {
                errno = EINVAL;
                return NULL;
        }
        const char *s = index_url + 7; /* config_parse_index_url: "file:///…", an absolute path */
        char *path = malloc(strlen(s) + 1), *d = path;
        if (!path)
                return NULL;
        for (; *s; s++) {
                unsigned v;
                if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1 && isxdigit((unsigned char) s[1]) &&
                    isxdigit((unsigned char) s[2]) && v != 0) {
                        *d++ = (char) v;
                        s += 2;
                } else
                        *d++ = *s;
        }
        *d = '\0';
        return path;
}

static int source_check(const char *variable, const char *path, char **reterr) {
        struct stat st;
        /* A directory must be listable and searchable; a file only readable. */
        int mode = stat(path, &st) == 0 && !S_ISDIR(st.st_mode) ? R_OK : R_OK | X_OK;
        uid_t uid;
        int r = sandbox_installer_access(path, mode, &uid);
        if (r < 0 && asprintf(reterr, "%s: the dependency installer runs as uid %u, which cannot %s %s (%s); make "
                                      "it and every directory above it readable and searchable by uid %u",
                              variable, (unsigned) uid, mode & X_OK ? "read the directory" : "read the file", path,
                              strerror(-r), (unsigned) uid) < 0)
                *reterr = NULL;
        return r;
}

int envs_sources_check(const char *index_url, const char *wheelhouse, char **reterr) {
        if (wheelhouse) {
                int r = source_check("MCP_EXEC_WHEELHOUSE", wheelhouse, reterr);
                if (r < 0)
                        return r;
        }
        if (index_url && strncmp(index_url, "file:", 5) == 0) {
                _cleanup_free_ char *path = envs_index_path(index_url);
                if (!path)
                        return -errno;
                return source_check("MCP_EXEC_INDEX_URL", path, reterr);
        }
        return 0;
}

Envs *envs_free(Envs *e) {
        if (!e)
                return NULL;
        /* Installs not finished (killed by envs_stop() but not yet seen to end by the ring when the
         * transport finished first, as on a loaded machine): kill them, wait for the installer's
         * end (its pidfd; SIGKILL is prompt, 1 s bounds it), and remove what it half-made, so a
         * stopped daemon leaves no tmp/ entry (the next start would clean it, but until then the
         * cache holds a dead install's files). */
        LIST_FOREACH(installs, i, e->installs) {
                if (i->finished || i->pending || !i->tmp)
                        continue;
                if (!i->exited && i->child.pid > 0) {
                        (void) kill(-i->child.pid, SIGKILL);
                        if (i->child.pidfd >= 0) {
                                struct pollfd p = { .fd = i->child.pidfd, .events = POLLIN };
                                (void) poll(&p, 1, 1000);
                        }
                }
                (void) rm_rf(i->tmp);
        }
        for (EnvUse *u; (u = LIST_POP(uses, e->uses));) {
                free(u->key);
                free(u);
        }
        free(e->dir);
        free(e->envs_dir);
        free(e->tmp_dir);
        free(e->trash_dir);
        free(e->index_url);
        free(e->wheelhouse);
        free(e->installer_python);
        free(e->uv);
        free(e);
        return NULL;
}

static EnvUse *use_find(Envs *e, const char *key) {
        LIST_FOREACH(uses, u, e->uses)
                if (strcmp(u->key, key) == 0)
                        return u;
        return NULL;
}

static int use_hold(Envs *e, const char *key) {
        EnvUse *u = use_find(e, key);
        if (!u) {
                u = calloc(1, sizeof(*u));
                if (!u || !(u->key = strdup(key))) {
                        free(u);
                        return -ENOMEM;
                }
                LIST_PREPEND(uses, e->uses, u);
        }
        u->refs++;
        return 0;
}

void envs_release(Envs *e, const char *key) {
        EnvUse *u = use_find(e, key);
        if (u && u->refs > 0)
                u->refs--;
}

/* ---------------------------------------------------------------------------------------------
 * Entries, sizes, eviction. */

typedef struct Entry {
        char key[80];
        uint64_t size;
        struct timespec used;
} Entry;

static int entries_list(Envs *e, Entry **ret, size_t *ret_n) {
        _cleanup_(closedirp) DIR *d = opendir(e->envs_dir);
        if (!d)
                return -errno;
        Entry *v = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(v->key))
                        continue;
                char marker[4096];
                snprintf(marker, sizeof(marker), "%s/%s/" ENV_MARKER, e->envs_dir, de->d_name);
                struct stat st;
                if (stat(marker, &st) < 0)
                        continue;
                json_t *m = json_load_file(marker, 0, NULL);
                uint64_t size = m ? (uint64_t) json_integer_value(json_object_get(m, "size_bytes")) : 0;
                json_decref(m);
                if (n == cap) {
                        cap = cap ? cap * 2 : 16;
                        Entry *nv = realloc(v, cap * sizeof(*v));
                        if (!nv) {
                                free(v);
                                return -ENOMEM;
                        }
                        v = nv;
                }
                /* Its length was checked above; said again for -O0, where the compiler cannot see it. */
                if (snprintf(v[n].key, sizeof(v[n].key), "%s", de->d_name) >= (int) sizeof(v[n].key))
                        continue;
                v[n].size = size;
                v[n].used = st.st_mtim;
                n++;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static bool ts_before(struct timespec a, struct timespec b) {
        return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* The bytes of the environments in use (bound into a sandbox: a Python session pins its own for its
 * whole life), key's own left out: they cannot be evicted, so a new environment has the rest of
 * MCP_EXEC_ENV_CACHE_MAX (issue 29.8: before, sessions pinning environments grew the cache past it). */
static uint64_t envs_held_bytes(Envs *e, const char *key) {
        _cleanup_free_ Entry *v = NULL;
        size_t n = 0;
        uint64_t held = 0;
        if (entries_list(e, &v, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                EnvUse *u = use_find(e, v[i].key);
                if (u && u->refs > 0 && strcmp(v[i].key, key) != 0)
                        held += v[i].size;
        }
        return held;
}

/* Evicts least recently used environments not in use until the total fits. The one just installed,
 * keep, is never evicted: install.py stops an install past max_bytes, so keep alone fits, and its
 * run is waiting for it. */
static void envs_evict(Envs *e, const char *keep) {
        if (e->config.max_bytes == UINT64_MAX)
                return;
        _cleanup_free_ Entry *v = NULL;
        size_t n = 0;
        if (entries_list(e, &v, &n) < 0)
                return;
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++)
                total += v[i].size;
        while (total > e->config.max_bytes) {
                ssize_t victim = -1;
                for (size_t i = 0; i < n; i++) {
                        if (!v[i].key[0] || (keep && strcmp(v[i].key, keep) == 0))
                                continue;
                        EnvUse *u = use_find(e, v[i].key);
                        if (u && u->refs > 0)
                                continue; /* bound into a running sandbox */
                        if (victim < 0 || ts_before(v[i].used, v[victim].used))
                                victim = (ssize_t) i;
                }
                if (victim < 0)
                        break;
                char from[4096], to[4096], rnd[17];
                snprintf(from, sizeof(from), "%s/%s", e->envs_dir, v[victim].key);
                if (str_random_hex(rnd, 8) < 0)
                        break;
                snprintf(to, sizeof(to), "%s/%s.%s", e->trash_dir, v[victim].key, rnd);
                /* Out of envs/ in one step (a run starting now never sees a half-removed one). */
                if (rename(from, to) < 0) {
                        log_warning("cannot evict environment %s: %m", v[victim].key);
                        break;
                }
                log_info("evicted environment %s (%" PRIu64 " bytes, least recently used; cache over %" PRIu64
                         " bytes, MCP_EXEC_ENV_CACHE_MAX)", v[victim].key, v[victim].size, e->config.max_bytes);
                (void) rm_rf(to);
                total -= v[victim].size;
                v[victim].key[0] = '\0';
        }
}

/* ---------------------------------------------------------------------------------------------
 * Installer child processes. */

static void install_maybe_finish(Install *in);
static void installs_next(Envs *e);
static unsigned installs_running(Envs *e);
static int install_launch(Install *in, const char *args_json);

static void install_read(Install *in) {
        struct io_uring_sqe *sqe = ring_get_sqe(in->envs->config.ring, &in->op_read);
        io_uring_prep_read(sqe, in->out_fd, in->buf, sizeof(in->buf), (uint64_t) -1);
}

static void on_install_read(RingOp *op, int res) {
        Install *in = container_of(op, Install, op_read);
        if (res > 0 && !in->finished) {
                size_t n = (size_t) res;
                if (in->out.len + n > INSTALL_OUTPUT_MAX_BYTES) {
                        /* Keep the tail: pip's error is at the end. */
                        size_t drop = MIN(in->out.len, in->out.len + n - INSTALL_OUTPUT_MAX_BYTES);
                        buf_consume(&in->out, drop);
                        in->out_dropped = true;
                }
                (void) buf_append(&in->out, in->buf, n);
                install_read(in);
                return;
        }
        in->eof = true;
        in->out_fd = safe_close(in->out_fd);
        install_maybe_finish(in);
}

static void on_install_pidfd(RingOp *op, int res) {
        Install *in = container_of(op, Install, op_pidfd);
        siginfo_t si = {};
        if (res >= 0 && waitid((idtype_t) P_PIDFD, (id_t) in->child.pidfd, &si, WEXITED | WNOHANG) == 0 &&
            si.si_pid == 0) {
                struct io_uring_sqe *sqe = ring_get_sqe(in->envs->config.ring, &in->op_pidfd);
                io_uring_prep_poll_add(sqe, in->child.pidfd, POLLIN);
                return;
        }
        in->exited = true;
        in->status = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
        /* Whatever pip left in its process group goes with it. */
        (void) kill(-in->child.pid, SIGKILL);
        install_maybe_finish(in);
}

static void on_install_timer(RingOp *op, int res) {
        Install *in = container_of(op, Install, op_timer);
        if (res == -ETIME && !in->exited) {
                in->timed_out = true;
                if (in->cgroup)
                        (void) cgroup_run_kill(in->cgroup); /* pip's re-exec'd children too */
                (void) kill(-in->child.pid, SIGKILL);
        }
        install_maybe_finish(in);
}

static void install_free(Install *in) {
        Envs *e = in->envs;
        if (LIST_IS_LINKED(installs, e->installs, in))
                LIST_REMOVE(installs, e->installs, in);
        for (EnvWaiter *w; (w = LIST_POP(waiters, in->waiters));) {
                free(w->key);
                free(w->dir);
                free(w);
        }
        safe_close(in->out_fd);
        sandbox_installer_done(&in->child);
        /* After the child was reaped: its cgroup is empty. */
        cgroup_run_free(in->cgroup);
        free(in->place_error);
        free(in->args_json);
        buf_done(&in->out);
        free(in->key);
        free(in->tmp);
        free(in->final);
        free(in);
}

static void install_maybe_finish(Install *in) {
        if (!in->finished && in->exited && in->eof) {
                in->finished = true;
                ring_cancel(in->envs->config.ring, &in->op_timer);
                uint64_t ms = (now_usec() - in->t_start) / 1000;
                Envs *e = in->envs;

                _cleanup_free_ char *error = NULL;
                _cleanup_free_ char *marker = path_join(in->final, ENV_MARKER);
                _cleanup_free_ char *tmp_marker = path_join(in->tmp, ENV_MARKER);
                if (in->tmp)
                        tree_own(in->tmp);
                if (!in->check && !in->timed_out && in->status == 0 && !in->place_error && tmp_marker &&
                    access(tmp_marker, F_OK) == 0) {
                        /* Complete (the marker is written last): into envs/ in one step, so a run
                         * never finds half an environment. Another instance may have won. */
                        if (rename(in->tmp, in->final) < 0 && !(marker && access(marker, F_OK) == 0))
                                log_warning("cannot move environment %s into place: %m", in->key);
                }
                bool ok = !in->timed_out && !in->place_error && in->status == 0 &&
                          (in->check || (marker && access(marker, F_OK) == 0));
                if (!ok) {
                        const char *out = in->out.data ? in->out.data : "";
                        size_t len = in->out.len;
                        if (len > INSTALL_ERROR_TAIL_BYTES) {
                                out += len - INSTALL_ERROR_TAIL_BYTES;
                                len = INSTALL_ERROR_TAIL_BYTES;
                        }
                        if (in->place_error) {
                                if (asprintf(&error, "the installer could not be confined: %s", in->place_error) < 0)
                                        error = NULL;
                        } else if (in->timed_out) {
                                if (asprintf(&error, "installing the dependencies took longer than %" PRIu32
                                             " s (MCP_EXEC_INSTALL_TIMEOUT_S) and was stopped; output so far:\n%.*s",
                                             e->config.timeout_s, (int) len, out) < 0)
                                        error = NULL;
                        } else if (asprintf(&error, "%s failed (exit status %d):\n%s%.*s",
                                            in->check ? "checking the dependencies against the source"
                                                      : "installing the dependencies",
                                            in->status, len < in->out.len ? "…" : "", (int) len, out) < 0)
                                error = NULL;
                        if (!error)
                                error = strdup("installing the dependencies failed");
                        if (!in->check)
                                log_warning("installing environment %s failed (exit status %d%s)", in->key,
                                            in->status, in->timed_out ? ", timed out" : "");
                } else if (!in->check) {
                        e->n_installed++;
                        log_info("installed environment %s in %" PRIu64 " ms", in->key, ms);
                }
                if (in->tmp)
                        (void) rm_rf(in->tmp); /* a failed or killed install's leftovers */

                LIST_FOREACH(waiters, w, in->waiters) {
                        if (w->cancelled)
                                continue;
                        if (in->check) {
                                w->check(w->userdata, ok ? (in->out.data ? in->out.data : "") : NULL, error);
                                continue;
                        }
                        if (ok && use_hold(e, in->key) < 0) {
                                w->ready(w->userdata, NULL, "out of memory", false, ms);
                                continue;
                        }
                        w->ready(w->userdata, ok ? in->final : NULL, error, false, ms);
                }
                if (ok && !in->check)
                        envs_evict(e, in->key);
                installs_next(e);
        }
        if (in->finished && !in->op_read.busy && !in->op_pidfd.busy && !in->op_timer.busy)
                install_free(in);
}

/* The confined installer (sandbox_spawn_installer: its own uid, user and mount namespaces, the
 * host read-only but its directory, no network unless the index is remote), running install.py
 * with the request; its stdout and stderr into our pipe. */
static int install_spawn(Install *in, const char *args_json) {
        Envs *e = in->envs;
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        _cleanup_close_ int out_read = p[0], out_write = p[1];
        const char *argv[] = { e->installer_python, "-I", "-c", py_install, args_json, NULL };
        _cleanup_free_ char *index_path = envs_index_path(e->index_url);
        const char *keep[5] = { e->dir };
        size_t n = 1;
        if (e->wheelhouse)
                keep[n++] = e->wheelhouse;
        /* A file:// index under /home is not hidden from the installer, as the wheelhouse. */
        if (index_path)
                keep[n++] = index_path;
        if (e->uv)
                keep[n++] = e->uv;
        SandboxInstallSpec spec = {
                .argv = argv,
                .work_dir = in->tmp,
                .index_url = e->index_url,
                .keep = keep,
                .output_fd = out_write,
        };
        int r = e->config.spawn_installer ? e->config.spawn_installer(&spec, &in->child)
                                          : sandbox_spawn_installer(&spec, &in->child);
        if (r < 0)
                return r;
        in->out_fd = TAKE_FD(out_read);
        return 0;
}

/* Lets the held child go, from payload/ of its cgroup when it has one (the limits apply to the
 * whole run cgroup; cgroup.kill of payload/ takes pip and whatever it started). */
static void install_go(Install *in) {
        int payload = in->cgroup ? cgroup_run_payload_fd(in->cgroup) : -EBADF;
        if (payload >= 0) {
                char pid[32];
                int n = snprintf(pid, sizeof(pid), "%d", (int) in->child.pid);
                _cleanup_close_ int fd = openat(payload, "cgroup.procs", O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, pid, (size_t) n) != n) {
                        if (asprintf(&in->place_error, "cannot move it into its cgroup: %m") < 0)
                                in->place_error = NULL;
                        (void) kill(-in->child.pid, SIGKILL);
                        (void) kill(in->child.pid, SIGKILL);
                        in->child.go_fd = safe_close(in->child.go_fd);
                        return;
                }
        }
        (void) sandbox_installer_release(&in->child); /* on failure it killed the child */
}

static void on_install_placed(CgroupRun *cr, int error, const char *message, void *userdata) {
        Install *in = userdata;
        if (in->exited)
                return;
        if (error < 0) {
                if (asprintf(&in->place_error, "%s", message ? message : strerror(-error)) < 0)
                        in->place_error = NULL;
                (void) kill(in->child.pid, SIGKILL); /* closing go_fd would do too: the child exits 125 */
                in->child.go_fd = safe_close(in->child.go_fd);
                return;
        }
        install_go(in);
}

static void install_place(Install *in) {
        if (!in->cgroup) {
                install_go(in);
                return;
        }
        _cleanup_free_ char *msg = NULL;
        int r = cgroup_run_place(in->cgroup, in->child.pid, in->child.pidfd, on_install_placed, in, &msg);
        if (r > 0)
                install_go(in);
        else if (r < 0)
                on_install_placed(in->cgroup, r, msg, in);
        /* 0: on_install_placed() when systemd's job is done */
}

static json_t *request_json(Envs *e, const EnvRequest *req, const char *mode, const char *tmp, const char *final) {
        json_t *reqs = json_array();
        for (size_t i = 0; reqs && req->requirements[i]; i++)
                if (json_array_append_new(reqs, json_string(req->requirements[i])) < 0) {
                        json_decref(reqs);
                        return NULL;
                }
        if (!reqs)
                return NULL;
        /* max_bytes: one environment may take at most what MCP_EXEC_ENV_CACHE_MAX leaves beside the
         * environments in use (held_bytes, which no eviction frees); install.py stops pip when the
         * tree grows past it (issue 15, 7d) and says both figures. */
        uint64_t held = e->config.max_bytes == UINT64_MAX ? 0 : envs_held_bytes(e, req->key);
        json_t *max = e->config.max_bytes == UINT64_MAX
                              ? json_null()
                              : json_integer((json_int_t) (held >= e->config.max_bytes ? 0 : e->config.max_bytes - held));
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s?, s:s?, s:o, s:s?, s:s?, s:o, s:I, s:I}", "mode", mode, "key",
                         req->key, "python_name", req->python_name, "interpreter", req->interpreter,
                         "python_version", req->python_version, "tmp", tmp, "final", final, "index_url", e->index_url,
                         "requirements", reqs, "wheelhouse", e->wheelhouse, "uv", e->uv, "max_bytes", max,
                         "held_bytes", (json_int_t) held,
                         "cache_max_bytes", (json_int_t) (e->config.max_bytes == UINT64_MAX ? 0 : e->config.max_bytes));
}

static int install_start(Envs *e, const EnvRequest *req, bool check, Install **ret) {
        char rnd[17];
        if (e->stopped)
                return -ECANCELED;
        int r = str_random_hex(rnd, 8);
        if (r < 0)
                return r;
        Install *in = calloc(1, sizeof(*in));
        if (!in)
                return -ENOMEM;
        *in = (Install) { .envs = e, .check = check, .out_fd = -EBADF, .t_start = now_usec(),
                          .child = { .pidfd = -EBADF, .go_fd = -EBADF } };
        in->op_read.callback = on_install_read;
        in->op_pidfd.callback = on_install_pidfd;
        in->op_timer.callback = on_install_timer;
        in->key = strdup(req->key);
        if (asprintf(&in->tmp, "%s/%s.%s", e->tmp_dir, req->key, rnd) < 0)
                in->tmp = NULL;
        in->final = path_join(e->envs_dir, req->key);
        _cleanup_(json_decrefp) json_t *args = in->key && in->tmp && in->final
                                                       ? request_json(e, req, check ? "check" : "install", in->tmp,
                                                                      in->final)
                                                       : NULL;
        _cleanup_free_ char *args_json = args ? json_dumps(args, JSON_COMPACT) : NULL;
        if (!args_json) {
                in->finished = true;
                install_free(in);
                return -ENOMEM;
        }
        LIST_PREPEND(installs, e->installs, in);
        /* At most max_installs at once (issue 15, 7d): the others wait, in order, for one to end. */
        if (e->config.max_installs > 0 && installs_running(e) > e->config.max_installs) {
                in->pending = true;
                in->args_json = TAKE_PTR(args_json);
                log_info("installing environment %s waits: %u installs at once (MCP_EXEC_MAX_CONCURRENT)", in->key,
                         e->config.max_installs);
                *ret = in;
                return 0;
        }
        r = install_launch(in, args_json);
        if (r < 0) {
                in->finished = true;
                install_free(in);
                return r;
        }
        *ret = in;
        return 0;
}

/* Starts a created install: its cgroup, its directory, the confined child, the reads and timers.
 * Returns 0 or -errno (the caller answers the waiters and frees it). */
static int install_launch(Install *in, const char *args_json) {
        Envs *e = in->envs;
        int r;
        const char *rnd = strrchr(in->tmp, '.') + 1;
        if (e->config.cgroup && cgroup_backend(e->config.cgroup) != CGROUP_BACKEND_NONE) {
                char id[32];
                snprintf(id, sizeof(id), "install-%s", rnd);
                r = cgroup_run_new(e->config.cgroup, id, e->config.timeout_s, NULL, &in->cgroup);
                if (r < 0)
                        return log_warning_errno(r, "cannot create the installer's cgroup: %m");
        }
        /* The child's one writable directory (bound into its mount namespace), made before it starts. */
        mode_t old = umask(022);
        r = mkdir(in->tmp, 0755) < 0 ? -errno : 0;
        umask(old);
        if (r >= 0)
                r = install_spawn(in, args_json);
        if (r < 0) {
                (void) rm_rf(in->tmp);
                return r;
        }
        install_place(in);
        install_read(in);
        struct io_uring_sqe *sqe = ring_get_sqe(e->config.ring, &in->op_pidfd);
        io_uring_prep_poll_add(sqe, in->child.pidfd, POLLIN);
        in->deadline.tv_sec = e->config.timeout_s;
        sqe = ring_get_sqe(e->config.ring, &in->op_timer);
        io_uring_prep_timeout(sqe, &in->deadline, 0, 0);
        return 0;
}

/* Installs started and not finished (the pending ones wait for them). */
static unsigned installs_running(Envs *e) {
        unsigned n = 0;
        LIST_FOREACH(installs, i, e->installs)
                n += !i->finished && !i->pending;
        return n;
}

/* A slot is free: start the oldest pending installs (the list is newest first). */
static void installs_next(Envs *e) {
        while (e->config.max_installs == 0 || installs_running(e) < e->config.max_installs) {
                Install *oldest = NULL;
                LIST_FOREACH(installs, i, e->installs)
                        if (i->pending)
                                oldest = i;
                if (!oldest)
                        return;
                oldest->pending = false;
                _cleanup_free_ char *args_json = TAKE_PTR(oldest->args_json);
                oldest->t_start = now_usec();
                int r = e->stopped ? -ECANCELED : install_launch(oldest, args_json);
                if (r < 0) {
                        /* Answered like an installer that could not be confined. */
                        if (asprintf(&oldest->place_error, "cannot start the installer: %s", strerror(-r)) < 0)
                                oldest->place_error = NULL;
                        oldest->exited = oldest->eof = true;
                        oldest->status = -1;
                        install_maybe_finish(oldest);
                }
        }
}

/* ---------------------------------------------------------------------------------------------
 * The API. */

void envs_stop(Envs *e) {
        if (!e)
                return;
        e->stopped = true;
        /* Killed as at their deadline (on_install_timer()): pip's process group and its cgroup.
         * Their pidfd, pipe and timer operations then complete during the daemon's drain of the
         * ring, and each install is freed as usual; a pending one fails when the next ends. */
        LIST_FOREACH(installs, i, e->installs) {
                if (i->pending || i->exited || i->child.pid <= 0)
                        continue;
                if (i->cgroup)
                        (void) cgroup_run_kill(i->cgroup);
                (void) kill(-i->child.pid, SIGKILL);
        }
}

static void on_waiter_nop(RingOp *op, int res) {
        EnvWaiter *w = container_of(op, EnvWaiter, op_nop);
        (void) res;
        if (!w->cancelled) {
                if (w->dir)
                        w->ready(w->userdata, w->dir, NULL, true, 0);
                else
                        w->ready(w->userdata, NULL, "cannot start the installer", false, 0);
        }
        /* The holder keeps its reference (taken in envs_acquire) until envs_release. If it was
         * cancelled meanwhile, give the reference back. */
        if (w->cancelled && w->dir)
                envs_release(w->envs, w->key);
        free(w->key);
        free(w->dir);
        free(w);
}

static EnvWaiter *waiter_new(Envs *e, const EnvRequest *req, void *userdata) {
        EnvWaiter *w = calloc(1, sizeof(*w));
        if (!w)
                return NULL;
        w->envs = e;
        w->userdata = userdata;
        w->op_nop.callback = on_waiter_nop;
        w->key = strdup(req->key);
        if (!w->key) {
                free(w);
                return NULL;
        }
        return w;
}

int envs_acquire(Envs *e, const EnvRequest *req, EnvReadyFn ready, void *userdata, EnvWaiter **ret) {
        EnvWaiter *w = waiter_new(e, req, userdata);
        if (!w)
                return -ENOMEM;
        w->ready = ready;

        _cleanup_free_ char *final = path_join(e->envs_dir, req->key);
        _cleanup_free_ char *marker = final ? path_join(final, ENV_MARKER) : NULL;
        if (!marker) {
                free(w->key);
                free(w);
                return -ENOMEM;
        }
        if (access(marker, F_OK) == 0) {
                /* Installed: the marker's mtime is the last use, for LRU eviction. */
                (void) utimensat(AT_FDCWD, marker, NULL, 0);
                if (use_hold(e, req->key) < 0) {
                        free(w->key);
                        free(w);
                        return -ENOMEM;
                }
                w->dir = TAKE_PTR(final);
                io_uring_prep_nop(ring_get_sqe(e->config.ring, &w->op_nop));
                *ret = w;
                return 0;
        }

        Install *in = NULL;
        LIST_FOREACH(installs, i, e->installs)
                if (!i->check && !i->finished && strcmp(i->key, req->key) == 0) {
                        in = i;
                        break;
                }
        if (!in) {
                int r = install_start(e, req, false, &in);
                if (r < 0) {
                        log_warning_errno(r, "cannot start the installer: %m");
                        io_uring_prep_nop(ring_get_sqe(e->config.ring, &w->op_nop));
                        *ret = w;
                        return 0;
                }
        }
        w->install = in;
        LIST_PREPEND(waiters, in->waiters, w);
        *ret = w;
        return 0;
}

int envs_check(Envs *e, const EnvRequest *req, EnvCheckFn done, void *userdata, EnvWaiter **ret) {
        EnvWaiter *w = waiter_new(e, req, userdata);
        if (!w)
                return -ENOMEM;
        w->check = done;
        Install *in;
        int r = install_start(e, req, true, &in);
        if (r < 0) {
                free(w->key);
                free(w);
                return r;
        }
        w->install = in;
        LIST_PREPEND(waiters, in->waiters, w);
        *ret = w;
        return 0;
}

void envs_waiter_cancel(EnvWaiter *w) {
        if (w)
                w->cancelled = true;
}

json_t *envs_describe(Envs *e) {
        _cleanup_free_ Entry *v = NULL;
        size_t n = 0;
        _cleanup_(json_decrefp) json_t *entries = json_array();
        uint64_t total = 0;
        if (!entries)
                return NULL;
        if (entries_list(e, &v, &n) >= 0)
                for (size_t i = 0; i < n; i++) {
                        char marker[4096];
                        snprintf(marker, sizeof(marker), "%s/%s/" ENV_MARKER, e->envs_dir, v[i].key);
                        _cleanup_(json_decrefp) json_t *m = json_load_file(marker, 0, NULL);
                        total += v[i].size;
                        json_t *reqs = m ? json_object_get(m, "requirements") : NULL;
                        json_t *py = m ? json_object_get(m, "python") : NULL;
                        EnvUse *u = use_find(e, v[i].key);
                        json_t *x = json_pack("{s:s, s:O?, s:O?, s:I, s:I, s:b}", "key", v[i].key, "python", py,
                                              "requirements", reqs, "size_bytes", (json_int_t) v[i].size,
                                              "last_used", (json_int_t) v[i].used.tv_sec, "in_use", u && u->refs > 0);
                        if (!x || json_array_append_new(entries, x) < 0)
                                return NULL;
                }
        unsigned installing = 0;
        LIST_FOREACH(installs, i, e->installs)
                installing += !i->check && !i->finished;
        _cleanup_(json_decrefp) json_t *o = json_pack(
                "{s:s, s:o, s:I, s:I, s:O, s:I, s:I, s:s}", "dir", e->dir, "max_bytes",
                e->config.max_bytes == UINT64_MAX ? json_null() : json_integer((json_int_t) e->config.max_bytes),
                "size_bytes", (json_int_t) total, "count", (json_int_t) n, "entries", entries, "installs_completed",
                (json_int_t) e->n_installed, "installs_running", (json_int_t) installing, "installer",
                e->uv ? "uv pip install" : "pip install (Debian python3-pip)");
        return TAKE_PTR(o);
}
