/* store.c: Python sessions in systemd's fd store (issue 33.3; docs/sessions.md, "Restarts"): a
 * ready session's fds and record go to PID 1, which keeps them while a restart of ours is queued
 * (`systemctl restart`, Restart= after a crash, a package upgrade's restart), and the next daemon
 * takes the session back from them at its start.
 *
 * What reaches a session is all fds: its init's pidfd and control socket, the three pipes of its
 * interpreter, its scope's cgroup and payload/. Its processes live in their own scope, so our end
 * takes nothing with it once the init no longer dies with us (SANDBOX_COMMAND_KEEP): the control
 * socket's other end, in the store, keeps the init waiting. A stop that is no restart drops the
 * store (systemd releases it once the unit is inactive with no job queued): the init reads EOF
 * and exits, and its PID namespace, the interpreter with it, ends.
 *
 * The record (store-meta.h) is a memfd of its own, written at the ready line and after each call
 * with one pwrite of a whole page; PID 1 holds the same file, so no message is needed to update
 * it. Only the daemon and PID 1 hold it: no code of a session can reach it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "pysession-internal.h"
#include "store-meta.h"

_Static_assert(PYS_STORE_HANDLE_MAX == PYSESSION_HANDLE_MAX, "a handle fits the record");
_Static_assert(PYS_STORE_PRINCIPAL_MAX == MCP_PRINCIPAL_MAX, "a principal fits the record");
_Static_assert(PYS_STORE_ID_HEX == METRICS_PY_SESSION_ID_HEX, "a record id fits");

/* A session's pieces in the store, each under PYSESSION_STORE_PREFIX "<run id>.<role>". */
typedef enum StoreRole {
        ROLE_META,
        ROLE_PIDFD,
        ROLE_CONTROL,
        ROLE_STDIN,
        ROLE_STDOUT,
        ROLE_STDERR,
        ROLE_CGROUP,
        ROLE_PAYLOAD,
        _ROLE_MAX,
} StoreRole;

static const char *const role_names[_ROLE_MAX] = {
        [ROLE_META] = "meta",     [ROLE_PIDFD] = "pidfd",   [ROLE_CONTROL] = "control", [ROLE_STDIN] = "stdin",
        [ROLE_STDOUT] = "stdout", [ROLE_STDERR] = "stderr", [ROLE_CGROUP] = "cgroup",   [ROLE_PAYLOAD] = "payload",
};

static void store_name(const char *id, StoreRole role, char out[FDSTORE_NAME_MAX + 1]) {
        snprintf(out, FDSTORE_NAME_MAX + 1, PYSESSION_STORE_PREFIX "%s.%s", id, role_names[role]);
}

static void store_remove_all(const char *id) {
        for (StoreRole r = 0; r < _ROLE_MAX; r++) {
                char name[FDSTORE_NAME_MAX + 1];
                store_name(id, r, name);
                (void) fdstore_remove(name);
        }
}

static void store_fds(const ProcFds *f, int memfd, int out[_ROLE_MAX]) {
        out[ROLE_META] = memfd;
        out[ROLE_PIDFD] = f->pidfd;
        out[ROLE_CONTROL] = f->control_fd;
        out[ROLE_STDIN] = f->stdin_fd;
        out[ROLE_STDOUT] = f->stdout_fd;
        out[ROLE_STDERR] = f->stderr_fd;
        out[ROLE_CGROUP] = f->cgroup_fd;
        out[ROLE_PAYLOAD] = f->payload_fd;
}

static int store_write(PySession *s) {
        PyStoreMeta meta = {
                .gen = ++s->store_gen,
                .pid = proc_pid(s->proc),
                .idle_usec = s->idle_usec,
                .t_open_usec = s->t_open,
                .t_last_usec = s->t_last,
                .calls = s->calls,
                .cpu_user_usec = s->total_cpu_user_usec,
                .cpu_system_usec = s->total_cpu_system_usec,
                .duration_ms = s->total_duration_ms,
                .warm = s->warm,
        };
        snprintf(meta.id, sizeof(meta.id), "%s", s->id);
        snprintf(meta.id_hash, sizeof(meta.id_hash), "%s", s->id_hash);
        snprintf(meta.handle, sizeof(meta.handle), "%s", s->handle);
        snprintf(meta.principal, sizeof(meta.principal), "%s", s->principal);
        snprintf(meta.unit, sizeof(meta.unit), "%s", proc_unit(s->proc) ?: "");
        char buf[PYS_STORE_META_BYTES];
        int r = pys_store_meta_format(&meta, buf);
        explicit_bzero(meta.handle, sizeof(meta.handle));
        if (r < 0)
                return r;
        /* One write of one page: a kill in the middle of it is a cut record, which the next start
         * refuses (its end line), never a record that reads as another. */
        ssize_t n = pwrite(s->store_fd, buf, sizeof(buf), 0);
        explicit_bzero(buf, sizeof(buf));
        return n < 0 ? -errno : n == (ssize_t) sizeof(buf) ? 0 : -EIO;
}

void pys_store_save(PySession *s) {
        PySessions *m = s->m;
        if (!m->config.keep || s->stored || s->state != PYSESSION_IDLE || !proc_unit(s->proc))
                return;
        /* Their environment and their connections out are the daemon's to serve (the cache's
         * hold, the egress proxy's listener): a new daemon knows neither. */
        if (s->egress || s->env_hold.release || s->python_name) {
                log_debug("python session %s: not kept across a restart (its own interpreter, environment or "
                          "egress)", s->id_hash);
                return;
        }
        ProcFds f;
        proc_fds(s->proc, &f);
        _cleanup_close_ int memfd = memfd_create("mcp-execd-session", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        int fds[_ROLE_MAX];
        store_fds(&f, memfd, fds);
        for (StoreRole i = 0; i < _ROLE_MAX; i++)
                if (fds[i] < 0) {
                        log_warning("python session %s: cannot be kept across a restart: no %s fd", s->id_hash,
                                    role_names[i]);
                        return;
                }
        int r = ftruncate(memfd, PYS_STORE_META_BYTES) < 0 ? -errno : 0;
        if (r >= 0 && fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
                r = -errno;
        s->store_fd = memfd;
        if (r >= 0)
                r = store_write(s);
        s->store_fd = -EBADF;
        /* Before the fds are handed over: from here a kill -9 of ours leaves the init to the store. */
        if (r >= 0)
                r = proc_keep(s->proc);
        for (StoreRole i = 0; r >= 0 && i < _ROLE_MAX; i++) {
                char name[FDSTORE_NAME_MAX + 1];
                store_name(s->id, i, name);
                r = fdstore_push(name, fds[i]);
        }
        if (r < 0) {
                store_remove_all(s->id);
                log_warning_errno(r, "python session %s: cannot hand it to systemd's fd store: %m; it ends with "
                                  "this daemon", s->id_hash);
                return;
        }
        s->store_fd = TAKE_FD(memfd);
        s->stored = true;
}

void pys_store_update(PySession *s) {
        if (!s->stored)
                return;
        int r = store_write(s);
        if (r < 0)
                log_warning_errno(r, "python session %s: cannot write its record in the fd store: %m", s->id_hash);
}

void pys_store_forget(PySession *s) {
        if (!s->stored)
                return;
        store_remove_all(s->id);
        s->store_fd = safe_close(s->store_fd);
        s->stored = false;
}

bool pys_store_leave(PySession *s) {
        if (!s->stored || s->state != PYSESSION_IDLE)
                return false;
        log_debug("python session %s: left in systemd's fd store", s->id_hash);
        s->store_fd = safe_close(s->store_fd);
        s->stored = false;
        s->proc = proc_leave(s->proc);
        s->state = PYSESSION_DEAD;
        pys_session_free(s);
        return true;
}

/* ---------------------------------------------------------------------------------------------
 * At the start: taking them back. */

static bool id_valid(const char *id, size_t n) {
        if (n != PYS_STORE_ID_HEX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
                        return false;
        return true;
}

/* The run id in an entry's name, if it is a session's piece: "<prefix><16 hex>.<role>". */
static bool entry_id(const char *name, char id[PYS_STORE_ID_HEX + 1]) {
        if (strncmp(name, PYSESSION_STORE_PREFIX, strlen(PYSESSION_STORE_PREFIX)) != 0)
                return false;
        const char *p = name + strlen(PYSESSION_STORE_PREFIX);
        const char *dot = strchr(p, '.');
        if (!dot || !id_valid(p, (size_t) (dot - p)))
                return false;
        memcpy(id, p, PYS_STORE_ID_HEX);
        id[PYS_STORE_ID_HEX] = 0;
        return true;
}

void pysessions_store_keep_scopes(const FdStore *st, Cgroup *cgroup) {
        for (size_t i = 0; st && i < st->n; i++) {
                char id[PYS_STORE_ID_HEX + 1], unit[PYS_STORE_UNIT_MAX + 1], meta[FDSTORE_NAME_MAX + 1];
                if (!entry_id(st->v[i].name, id))
                        continue;
                store_name(id, ROLE_META, meta);
                if (strcmp(st->v[i].name, meta) != 0)
                        continue; /* once per session */
                snprintf(unit, sizeof(unit), "mcp-execd-run-%s.scope", id);
                if (cgroup_keep_scope(cgroup, unit) < 0)
                        log_warning("python session scope %s: no memory to spare it from the stale scopes' stop", unit);
        }
}

/* The pid a pidfd names, from its fdinfo (pidfd_open(2)); 0 when it has exited or cannot be read. */
static pid_t pidfd_pid(int pidfd) {
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        const char *p = strstr(buf, "\nPid:");
        long pid = p ? strtol(p + 5, NULL, 10) : 0;
        return pid > 0 ? (pid_t) pid : 0;
}

typedef struct Taken {
        int fd[_ROLE_MAX];
} Taken;

static void taken_close(Taken *t) {
        for (StoreRole i = 0; i < _ROLE_MAX; i++)
                t->fd[i] = safe_close(t->fd[i]);
}

/* A session that cannot be taken back: its init is killed (its pidfd names exactly it), its
 * pieces leave the store and are closed (the init's control socket at EOF ends it too), and its
 * scope, empty, is collected. */
static void adopt_drop(const char *id, Taken *t, const char *why) {
        log_warning("python session of run %s: not taken back from systemd's fd store: %s; it is ended", id, why);
        if (t->fd[ROLE_PIDFD] >= 0)
                (void) syscall(SYS_pidfd_send_signal, t->fd[ROLE_PIDFD], SIGKILL, NULL, 0);
        store_remove_all(id);
        taken_close(t);
}

static void adopt_one(PySessions *m, FdStore *st, const char *id) {
        Taken t;
        const char *missing = NULL;
        for (StoreRole i = 0; i < _ROLE_MAX; i++) {
                char name[FDSTORE_NAME_MAX + 1];
                store_name(id, i, name);
                t.fd[i] = fdstore_take_fd(st, name);
                if (t.fd[i] < 0 && !missing)
                        missing = role_names[i];
        }
        if (missing) {
                /* PID 1 drops a piece whose peer hung up (a pipe or socket of a session that died
                 * meanwhile), or a kill came while the pieces were handed over. */
                char why[64];
                snprintf(why, sizeof(why), "its %s fd is missing", missing);
                adopt_drop(id, &t, why);
                return;
        }
        char buf[PYS_STORE_META_BYTES];
        ssize_t n = pread(t.fd[ROLE_META], buf, sizeof(buf), 0);
        PyStoreMeta meta;
        const char *why = NULL;
        if (n < 0 || pys_store_meta_parse(buf, (size_t) n, &meta, &why) < 0) {
                explicit_bzero(buf, sizeof(buf));
                adopt_drop(id, &t, why ?: "its record cannot be read");
                return;
        }
        explicit_bzero(buf, sizeof(buf));
        unsigned live = 0;
        bool clash = false;
        LIST_FOREACH(sessions, o, m->sessions) {
                live += o->state != PYSESSION_DEAD;
                clash = clash || strcmp(o->handle, meta.handle) == 0 || strcmp(o->id, meta.id) == 0;
        }
        if (strcmp(meta.id, id) != 0)
                why = "its record names another session";
        else if (clash)
                why = "its handle or id is another session's";
        else if (pidfd_pid(t.fd[ROLE_PIDFD]) != meta.pid)
                why = "its init is gone";
        else if (!m->config.keep || cgroup_backend(m->env.cgroup) != CGROUP_BACKEND_SYSTEMD)
                why = "sessions are not kept here any more (no fd store, or not the systemd backend)";
        else if (live >= m->config.max)
                why = "MCP_EXEC_PY_SESSIONS_MAX sessions are open already";
        if (why) {
                explicit_bzero(meta.handle, sizeof(meta.handle));
                adopt_drop(id, &t, why);
                return;
        }
        CgroupRun *cr;
        int r = cgroup_run_adopt(m->env.cgroup, meta.id, meta.unit, TAKE_FD(t.fd[ROLE_CGROUP]),
                                 TAKE_FD(t.fd[ROLE_PAYLOAD]), &cr);
        if (r < 0) {
                adopt_drop(id, &t, "no memory");
                return;
        }
        /* Between calls a session is frozen; not frozen, a kill caught it in a call, whose code may
         * still run, whose output is half read and whose answer is lost: what it left in the
         * session cannot be told from what the caller meant, so the session ends (its caller
         * opens another). */
        r = cgroup_run_frozen(cr);
        if (r <= 0) {
                cgroup_run_free(cr);
                adopt_drop(id, &t, r < 0 ? "its payload cgroup cannot be read" : "a call was running in it");
                return;
        }
        PySession *s = calloc(1, sizeof(*s));
        if (!s) {
                cgroup_run_free(cr);
                adopt_drop(id, &t, "no memory");
                return;
        }
        ProcFds f = { .pidfd = TAKE_FD(t.fd[ROLE_PIDFD]), .control_fd = TAKE_FD(t.fd[ROLE_CONTROL]),
                      .stdin_fd = TAKE_FD(t.fd[ROLE_STDIN]), .stdout_fd = TAKE_FD(t.fd[ROLE_STDOUT]),
                      .stderr_fd = TAKE_FD(t.fd[ROLE_STDERR]), .cgroup_fd = -EBADF, .payload_fd = -EBADF };
        *s = (PySession) {
                .m = m,
                .state = PYSESSION_IDLE,
                .warm = meta.warm,
                .announced = true, /* its open was recorded by the daemon that made it */
                .idle_usec = meta.idle_usec,
                .t_open = meta.t_open_usec,
                .t_last = meta.t_last_usec,
                .calls = meta.calls,
                .total_cpu_user_usec = meta.cpu_user_usec,
                .total_cpu_system_usec = meta.cpu_system_usec,
                .total_duration_ms = meta.duration_ms,
                .stored = true,
                .store_fd = TAKE_FD(t.fd[ROLE_META]),
                .store_gen = meta.gen,
        };
        memcpy(s->handle, meta.handle, sizeof(s->handle));
        memcpy(s->id, meta.id, sizeof(s->id));
        memcpy(s->id_hash, meta.id_hash, sizeof(s->id_hash));
        memcpy(s->principal, meta.principal, sizeof(s->principal));
        explicit_bzero(meta.handle, sizeof(meta.handle));
        /* Its pipes are not read between calls (session.c): the next call resumes them. */
        for (int i = 0; i < 2; i++)
                s->streams[i] = (PyStream) { .index = i, .paused = true };
        LIST_PREPEND(sessions, m->sessions, s);
        m->n_sessions++;
        r = proc_adopt(&(ProcSpec) { .ring = m->env.ring, .sandbox = m->env.sandbox, .id = s->id }, meta.pid, &f, cr,
                       &pys_session_proc_handler, s, &s->proc);
        if (r < 0) {
                s->state = PYSESSION_DEAD;
                s->stored = false;
                s->store_fd = safe_close(s->store_fd);
                store_remove_all(id);
                pys_session_free(s);
                log_warning_errno(r, "python session of run %s: cannot take it back: %m; it is ended", id);
                return;
        }
        /* The base of its next call: nothing of it ran since its last (frozen). */
        s->base = pys_usage_of_cgroup(s);
        proc_watch_exit(s->proc);
        proc_watch_reports(s->proc);
        log_info("python session %s: taken back from systemd's fd store after a restart (%" PRIu64 " call(s) so far, "
                 "idle for %" PRIu64 " s)", s->id_hash, s->calls, delta(now_usec(), s->t_last) / 1000000u);
}

void pysessions_adopt(PySessions *m, FdStore *st) {
        for (size_t i = 0; st && i < st->n; i++) {
                char id[PYS_STORE_ID_HEX + 1];
                /* Taken with its session's other pieces, or not a session's (fdstore_drop_untaken()). */
                if (st->v[i].fd >= 0 && entry_id(st->v[i].name, id))
                        adopt_one(m, st, id);
        }
        pys_sweep_arm(m);
}
