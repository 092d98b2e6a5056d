/* fake-proc.c: proc.h without a process (fake-proc.h). Every function of proc.h is defined here:
 * one left out would make the linker take proc.o from libproc.a, and with it the real ones. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fake-proc.h"
#include "fd-util.h"

/* What the code under test holds: the record is the test's, and outlives it. */
struct Proc {
        FakeProc *f;
};

FakeProcConfig fake_proc_config = { .place = 1 };
FakeProc fake_procs[FAKE_PROC_MAX];
size_t n_fake_procs;

static void log_add(FakeProc *f, const char *word) {
        size_t n = strlen(f->log);
        if (n + strlen(word) + 2 > sizeof(f->log))
                fail_msg("proc %s: its log is full (fake_proc_log_clear() between the steps)", f->id);
        if (n == 0)
                f->log[n++] = ' ';
        strcpy(f->log + n, word);
        strcat(f->log, " ");
}

void fake_proc_log_clear(FakeProc *f) {
        f->log[0] = '\0';
}

bool fake_proc_log_has(const FakeProc *f, const char *words) {
        const char *at = f->log;
        for (const char *w = words; *w;) {
                size_t k = strcspn(w, " ");
                char word[64];
                assert_true(k > 0 && k + 3 <= sizeof(word));
                snprintf(word, sizeof(word), " %.*s ", (int) k, w);
                const char *hit = strstr(at, word);
                if (!hit)
                        return false;
                at = hit + k + 1; /* the separator after it may start the next word */
                w += k;
                w += strspn(w, " ");
        }
        return true;
}

bool fake_proc_busy(const FakeProc *f) {
        return f->reading[0] || f->reading[1] || f->writing || f->watching_exit || f->watching_reports ||
               f->timer_busy || f->letting_go;
}

static void staging_remove(FakeProc *f) {
        if (!f->staging[0])
                return;
        assert_int_equal(rm_rf(f->staging), 0);
        f->staging[0] = '\0';
}

static void destroy(FakeProc *f) {
        staging_remove(f);
        free(f->proc);
        f->proc = NULL;
}

void fake_procs_reset(void) {
        for (size_t i = 0; i < n_fake_procs; i++) {
                FakeProc *f = &fake_procs[i];
                if (f->proc)
                        fail_msg("proc %zu (%s) was not freed: busy %d, freed %d", i, f->id, fake_proc_busy(f), f->freed);
                for (size_t w = 0; w < f->n_writes; w++)
                        free(f->writes[w].data);
        }
        memset(fake_procs, 0, sizeof(fake_procs));
        n_fake_procs = 0;
        fake_proc_config = (FakeProcConfig) { .place = 1 };
}

/* ---- proc.h --------------------------------------------------------------------------------- */

int proc_new(const ProcSpec *spec, const ProcHandler *handler, void *userdata, Proc **ret) {
        if (fake_proc_config.new_error < 0)
                return fake_proc_config.new_error;
        assert_true(n_fake_procs < FAKE_PROC_MAX);
        FakeProc *f = &fake_procs[n_fake_procs++];
        *f = (FakeProc) { .cgroup = fake_proc_config.cgroup, .backstop_s = spec->backstop_s };
        f->proc = calloc(1, sizeof(Proc));
        assert_non_null(f->proc);
        f->proc->f = f;
        assert_non_null(spec->ring); /* every operation is the ring's */
        assert_int_equal(strlen(spec->id), 16);
        snprintf(f->id, sizeof(f->id), "%s", spec->id);
        if (f->cgroup)
                snprintf(f->unit, sizeof(f->unit), "mcp-execd-run-%s.scope", spec->id);
        proc_set_handler(f->proc, handler, userdata);
        log_add(f, "new");
        *ret = f->proc;
        return 0;
}

void proc_set_handler(Proc *p, const ProcHandler *handler, void *userdata) {
        p->f->handler = handler ? *handler : (ProcHandler) {};
        p->f->userdata = userdata;
}

int proc_staging_make(Proc *p, const char *path) {
        FakeProc *f = p->f;
        staging_remove(f);
        assert_true(strlen(path) < sizeof(f->staging));
        if (mkdir(path, 0700) < 0)
                return -errno;
        snprintf(f->staging, sizeof(f->staging), "%s", path);
        log_add(f, "staging");
        int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dfd < 0 ? -errno : dfd;
}

void proc_staging_remove(Proc *p) {
        log_add(p->f, "staging_remove");
        staging_remove(p->f);
}

/* A fake proc has no network namespace, so no listener: sessions spawn without egress. */
int proc_take_egress_fd(Proc *p) {
        return -EBADF;
}

int proc_spawn(Proc *p, const ProcSpawn *spawn) {
        FakeProc *f = p->f;
        if (f->spawned)
                return -EBUSY;
        if (fake_proc_config.spawn_error < 0)
                return fake_proc_config.spawn_error;
        /* The script is in the staging directory, as the init will copy it. */
        assert_true(f->staging[0]);
        char path[sizeof(f->staging) + 64];
        snprintf(path, sizeof(path), "%s/%s", f->staging, spawn->script);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        snprintf(f->python, sizeof(f->python), "%s", spawn->python ?: "");
        snprintf(f->env_dir, sizeof(f->env_dir), "%s", spawn->env_dir ?: "");
        snprintf(f->script, sizeof(f->script), "%s", spawn->script);
        f->spawned = true;
        log_add(f, "spawn");
        return 0;
}

int proc_place(Proc *p, char **reterr_message) {
        FakeProc *f = p->f;
        assert_true(f->spawned);
        log_add(f, "place");
        if (fake_proc_config.place < 0) {
                *reterr_message = strdup("fake: the scope could not be made");
                return fake_proc_config.place;
        }
        if (fake_proc_config.place == 0)
                f->placing = true;
        return fake_proc_config.place;
}

void proc_place_cancel(Proc *p) {
        FakeProc *f = p->f;
        log_add(f, "place_cancel");
        if (!f->placing)
                return;
        f->placing = false;
        if (f->kill_pending)
                (void) proc_kill_init(p);
}

int proc_release(Proc *p) {
        FakeProc *f = p->f;
        assert_true(f->spawned);
        assert_false(f->placing); /* never before the scope is there */
        f->released = true;
        log_add(f, "release");
        return 0;
}

void proc_watch_exit(Proc *p) {
        FakeProc *f = p->f;
        assert_false(f->watching_exit); /* an op on the ring is never submitted again */
        f->watching_exit = true;
        f->exit_cancelled = false;
        log_add(f, "watch_exit");
}

void proc_watch_reports(Proc *p) {
        FakeProc *f = p->f;
        assert_false(f->watching_reports);
        f->watching_reports = true;
        f->reports_cancelled = false;
        log_add(f, "watch_reports");
}

void proc_read(Proc *p, int stream, size_t max) {
        FakeProc *f = p->f;
        assert_true(stream == 0 || stream == 1);
        assert_false(f->reading[stream]);
        assert_false(f->eof[stream]); /* its fd is closed at EOF */
        assert_true(max > 0);
        f->reading[stream] = true;
        f->read_cancelled[stream] = false;
        f->read_max[stream] = MIN(max, (size_t) 64 * 1024); /* proc.c's buffer */
        f->reads[stream]++;
        log_add(f, stream == 0 ? "read0" : "read1");
}

void proc_write(Proc *p, const void *buf, size_t len, bool close_after) {
        FakeProc *f = p->f;
        assert_false(f->writing);
        assert_false(f->stdin_closed);
        assert_true(f->n_writes < FAKE_PROC_WRITES_MAX);
        FakeWrite *w = &f->writes[f->n_writes++];
        w->data = malloc(len ?: 1);
        assert_non_null(w->data);
        memcpy(w->data, buf, len);
        w->len = len;
        w->close_after = close_after;
        f->writing = true;
        f->write_cancelled = false;
        f->write_buf = buf;
        log_add(f, "write");
}

void proc_stdin_close(Proc *p) {
        p->f->stdin_closed = true;
        log_add(p->f, "stdin_close");
}

void proc_timer_arm(Proc *p, uint64_t usec) {
        FakeProc *f = p->f;
        assert_true(usec > 0);
        f->timer_busy = true; /* already: proc.c cancels it and submits the new moment */
        f->timer_usec = usec;
        f->timer_arms++;
        log_add(f, "timer_arm");
}

void proc_timer_clear(Proc *p) {
        FakeProc *f = p->f;
        f->timer_usec = 0; /* a timeout on the ring comes back cancelled: settled */
        log_add(f, "timer_clear");
}

void proc_cancel(Proc *p, unsigned ops) {
        FakeProc *f = p->f;
        log_add(f, "cancel");
        if (ops & PROC_OP_STREAMS)
                for (int i = 0; i < 2; i++)
                        f->read_cancelled[i] = f->reading[i];
        if (ops & PROC_OP_STDIN)
                f->write_cancelled = f->writing;
        if (ops & PROC_OP_REPORTS)
                f->reports_cancelled = f->watching_reports;
        if (ops & PROC_OP_EXIT)
                f->exit_cancelled = f->watching_exit;
        if (ops & PROC_OP_TIMER)
                proc_timer_clear(p);
}

bool proc_busy(const Proc *p) {
        return fake_proc_busy(p->f);
}

int proc_kill_payload(Proc *p) {
        FakeProc *f = p->f;
        f->kills_payload++;
        log_add(f, "kill_payload");
        return f->cgroup ? 0 : -EBADF;
}

int proc_kill_init(Proc *p) {
        FakeProc *f = p->f;
        log_add(f, "kill_init");
        if (!f->spawned || f->init_exited || f->init_killed)
                return 0;
        if (f->placing) {
                /* systemd is making the scope: the init must live until it is done (proc.h) */
                f->kill_pending = true;
                return 0;
        }
        f->kill_pending = false;
        f->init_killed = true;
        f->kills_init++;
        return 0;
}

void proc_interrupt(Proc *p) {
        p->f->interrupts++;
        log_add(p->f, "interrupt");
}

void proc_let_go(Proc *p) {
        log_add(p->f, "let_go");
}

void proc_let_go_later(Proc *p) {
        FakeProc *f = p->f;
        assert_false(f->letting_go);
        f->letting_go = true;
        log_add(f, "let_go_later");
}

int proc_read_stats(Proc *p, CgroupStats *ret) {
        FakeProc *f = p->f;
        log_add(f, "read_stats");
        if (!f->cgroup)
                return -ENODATA;
        *ret = f->stats;
        return 0;
}

int proc_read_usage(Proc *p, CgroupUsage *ret) {
        FakeProc *f = p->f;
        log_add(f, "read_usage");
        if (!f->cgroup)
                return -ENODATA;
        *ret = f->usage;
        return 0;
}

int proc_ask_usage(Proc *p) {
        FakeProc *f = p->f;
        f->usage_asked++;
        log_add(f, "ask_usage");
        return 0;
}

int proc_freeze(Proc *p, bool frozen) {
        FakeProc *f = p->f;
        log_add(f, frozen ? "freeze" : "thaw");
        if (fake_proc_config.freeze_error < 0)
                return fake_proc_config.freeze_error;
        f->frozen = frozen;
        if (frozen)
                f->freezes++;
        else
                f->thaws++;
        return 0;
}

int proc_set_cpu_weight(Proc *p, uint64_t weight) {
        log_add(p->f, "cpu_weight");
        return p->f->cgroup ? 0 : -ENODATA;
}

int proc_foreground(Proc *p) {
        log_add(p->f, "foreground");
        return 0;
}

const char *proc_id(const Proc *p) {
        return p->f->id;
}

/* 0: nothing reads through the init's root (run_outputs_read() is not called). */
pid_t proc_pid(const Proc *p) {
        return 0;
}

int proc_pidfd(const Proc *p) {
        return -EBADF;
}

int proc_stream_fd(const Proc *p, int stream) {
        return -EBADF;
}

bool proc_has_cgroup(const Proc *p) {
        return p->f->cgroup;
}

const char *proc_limits(const Proc *p) {
        return p->f->cgroup ? "cgroup" : "rlimit";
}

const char *proc_unit(const Proc *p) {
        return p->f->cgroup ? p->f->unit : NULL;
}

bool proc_spawned(const Proc *p) {
        return p->f->spawned;
}

bool proc_placing(const Proc *p) {
        return p->f->placing;
}

bool proc_init_exited(const Proc *p) {
        return p->f->init_exited;
}

bool proc_eof(const Proc *p, int stream) {
        return p->f->eof[stream];
}

Proc *proc_free(Proc *p) {
        if (!p)
                return NULL;
        FakeProc *f = p->f;
        assert_false(f->freed);
        f->freed = true;
        log_add(f, "free");
        if (!fake_proc_busy(f)) {
                destroy(f);
                return NULL;
        }
        /* As proc.c: no callback any more; the init killed, every operation cancelled; the memory
         * goes with the last completion. */
        f->handler = (ProcHandler) {};
        if (f->spawned && !f->init_exited)
                f->init_killed = true;
        f->placing = false;
        proc_cancel(p, PROC_OP_STREAMS | PROC_OP_STDIN | PROC_OP_REPORTS | PROC_OP_EXIT | PROC_OP_TIMER);
        return NULL;
}

/* ---- the events ----------------------------------------------------------------------------- */

static Proc *alive(FakeProc *f) {
        if (!f->proc)
                fail_msg("proc %s: an event after it was freed", f->id);
        return f->proc;
}

/* After a completion: an abandoned proc goes with its last operation. Returns true when the proc
 * was abandoned (no callback is called). */
static bool gone(FakeProc *f) {
        if (!f->freed)
                return false;
        if (!fake_proc_busy(f))
                destroy(f);
        return true;
}

void fake_proc_placed(FakeProc *f, int error, const char *message) {
        Proc *p = alive(f);
        assert_true(f->placing);
        f->placing = false;
        if (f->kill_pending)
                (void) proc_kill_init(p); /* the kill that waited for the scope */
        if (f->handler.placed)
                f->handler.placed(p, error, message, f->userdata);
}

void fake_proc_report(FakeProc *f, const SandboxReport *report) {
        Proc *p = alive(f);
        assert_true(f->watching_reports);
        f->watching_reports = false;
        if (gone(f))
                return;
        /* As proc.c: the init has copied the staging directory once Python runs. */
        if (report && report->kind == SANDBOX_REPORT_STARTED)
                staging_remove(f);
        if (f->handler.report)
                f->handler.report(p, report, f->userdata);
}

void fake_proc_output(FakeProc *f, int stream, const void *buf, ssize_t n) {
        Proc *p = alive(f);
        assert_true(stream == 0 || stream == 1);
        assert_true(f->reading[stream]);
        if (n > 0)
                assert_true((size_t) n <= f->read_max[stream]); /* a read gives at most what it asked */
        f->reading[stream] = false;
        if (n <= 0)
                f->eof[stream] = true; /* proc.c closes the fd */
        if (gone(f))
                return;
        if (f->handler.output)
                f->handler.output(p, stream, buf, n, f->userdata);
}

void fake_proc_written(FakeProc *f, int error) {
        Proc *p = alive(f);
        assert_true(f->writing);
        /* The buffer is the kernel's until the completion: still there, as it was given (under
         * ASan, a buffer freed before is a use after free here). */
        const FakeWrite *w = &f->writes[f->n_writes - 1];
        if (memcmp(f->write_buf, w->data, w->len) != 0) /* libc's: ASan sees the read */
                fail_msg("proc %s: the buffer of its write changed before the write came back", f->id);
        f->writing = false;
        f->write_buf = NULL;
        if (w->close_after)
                f->stdin_closed = true;
        if (gone(f))
                return;
        if (f->handler.written)
                f->handler.written(p, error, f->userdata);
}

void fake_proc_timer(FakeProc *f) {
        Proc *p = alive(f);
        assert_true(f->timer_busy);
        assert_true(f->timer_usec > 0); /* armed, not cleared */
        f->timer_busy = false;
        f->timer_usec = 0;
        if (gone(f))
                return;
        if (f->handler.timer)
                f->handler.timer(p, f->userdata);
}

void fake_proc_settled(FakeProc *f) {
        Proc *p = alive(f);
        if (f->timer_busy && f->timer_usec == 0)
                f->timer_busy = false;
        else {
                assert_true(f->letting_go);
                f->letting_go = false;
        }
        if (gone(f))
                return;
        if (f->handler.settled)
                f->handler.settled(p, f->userdata);
}

void fake_proc_exit(FakeProc *f, int code, int status) {
        Proc *p = alive(f);
        assert_true(f->watching_exit);
        assert_true(f->spawned);
        f->watching_exit = false;
        f->init_exited = true;
        if (gone(f))
                return;
        siginfo_t si = { .si_signo = SIGCHLD, .si_code = code, .si_status = status };
        if (f->handler.exited)
                f->handler.exited(p, &si, f->userdata);
}

/* The cancelled exit watch: the init lives (its owner let it go, or frees it). */
static void exit_cancelled(FakeProc *f) {
        Proc *p = alive(f);
        f->watching_exit = false;
        if (gone(f))
                return;
        if (f->handler.exited)
                f->handler.exited(p, NULL, f->userdata);
}

void fake_proc_drain(FakeProc *f) {
        for (unsigned turns = 0; f->proc && fake_proc_busy(f); turns++) {
                if (turns > 64)
                        fail_msg("proc %s: its operations never end (it re-arms them)", f->id);
                bool dead = f->init_killed || f->init_exited;
                int i = f->reading[0] ? 0 : 1;
                if (f->reading[0] || f->reading[1]) {
                        /* a sandbox that is gone closes its pipes: EOF */
                        if (!f->read_cancelled[i] && !dead)
                                fail_msg("proc %s: drained with a read of a live init", f->id);
                        fake_proc_output(f, i, NULL, f->read_cancelled[i] ? -ECANCELED : 0);
                } else if (f->writing) {
                        if (!f->write_cancelled && !dead)
                                fail_msg("proc %s: drained with a write to a live init", f->id);
                        fake_proc_written(f, f->write_cancelled ? -ECANCELED : -EPIPE);
                } else if (f->watching_reports) {
                        if (!f->reports_cancelled && !dead)
                                fail_msg("proc %s: drained with the reports of a live init watched", f->id);
                        fake_proc_report(f, NULL);
                } else if (f->timer_busy) {
                        if (f->timer_usec && !dead)
                                fail_msg("proc %s: drained with the timer of a live init armed", f->id);
                        if (f->timer_usec)
                                fake_proc_timer(f);
                        else
                                fake_proc_settled(f);
                } else if (f->letting_go)
                        fake_proc_settled(f);
                else if (f->watching_exit) {
                        if (f->init_killed)
                                fake_proc_exit(f, CLD_KILLED, SIGKILL);
                        else if (f->exit_cancelled)
                                exit_cancelled(f);
                        else
                                fail_msg("proc %s: drained with the exit of a live init watched", f->id);
                }
        }
}

/* The fd store's (pysession/store.c): the sessions under test are not kept (config.keep false). */
int proc_keep(Proc *p) {
        log_add(p->f, "keep");
        return 0;
}

void proc_fds(const Proc *p, ProcFds *ret) {
        *ret = (ProcFds) { .pidfd = -EBADF, .control_fd = -EBADF, .stdin_fd = -EBADF, .stdout_fd = -EBADF,
                           .stderr_fd = -EBADF, .cgroup_fd = -EBADF, .payload_fd = -EBADF };
}

int proc_adopt(const ProcSpec *spec, pid_t pid, const ProcFds *fds, CgroupRun *cr, const ProcHandler *handler,
               void *userdata, Proc **ret) {
        return -EOPNOTSUPP;
}

Proc *proc_leave(Proc *p) {
        if (p)
                log_add(p->f, "leave");
        return proc_free(p);
}
