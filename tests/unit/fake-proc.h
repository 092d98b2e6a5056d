/* fake-proc.h: a Proc (daemon/proc/proc.h) that runs nothing, for the unit tests of what owns one
 * (a Python session). fake-proc.c defines every function of proc.h, so the linker never takes
 * proc.o from libproc.a: no sandbox, pipe, cgroup or ring operation is made.
 *
 * Each proc made is one FakeProc record in fake_procs[], which says what its owner asked (spawned,
 * placed, released, each write's bytes, the timer, freeze and thaw, interrupts, kills, usage asked,
 * the reads on each stream and their max) and which of its operations would be on the ring now.
 * The record outlives the proc: proc_free() frees the Proc (at once, or with its last operation, as
 * proc.c does) and sets ->proc to NULL, and the test can still read what was asked.
 *
 * Events are delivered by the test (fake_proc_*() below), never from inside a proc_*() call, as
 * proc.h promises: each one checks the operation it completes is on the ring (a read is asked before
 * its bytes come, at most max of them), completes it, and calls the handler its owner set. A
 * callback may free the proc: read f->proc afterwards, never a Proc * kept from before. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc.h"

#define FAKE_PROC_MAX 16
#define FAKE_PROC_WRITES_MAX 16
#define FAKE_PROC_LOG_MAX 8192

/* How the procs behave, set by the test: cgroup is taken by proc_new(), the rest is read by the
 * call it names when it is made. fake_procs_reset() sets the default back. */
typedef struct FakeProcConfig {
        bool cgroup;       /* proc_has_cgroup(): the accounting is FakeProc.usage and .stats; else
                            * rlimit mode (the reads say -ENODATA, usage comes as reports) */
        int place;         /* what proc_place() returns: 1 placed at once, 0 later (fake_proc_placed()),
                            * or -errno (with a message) */
        int new_error;     /* proc_new() fails with it (< 0) */
        int spawn_error;   /* proc_spawn() fails with it (< 0) */
        int freeze_error;  /* proc_freeze() fails with it (< 0) */
} FakeProcConfig;

extern FakeProcConfig fake_proc_config;

typedef struct FakeWrite {
        char *data; /* a copy of what proc_write() was given */
        size_t len;
        bool close_after;
} FakeWrite;

typedef struct FakeProc {
        Proc *proc;  /* NULL once freed */
        bool freed;  /* proc_free() was called (the memory goes with the last operation) */
        ProcHandler handler;
        void *userdata;
        /* proc_new()'s spec */
        char id[17];
        uint32_t backstop_s;
        bool cgroup;
        char unit[64];
        /* proc_staging_make(), proc_spawn() */
        char staging[512]; /* "" when there is none (never made, or removed) */
        char python[256], env_dir[256], script[64];
        bool spawned, placing, released;
        /* ends */
        bool init_killed, kill_pending, init_exited;
        unsigned kills_payload, kills_init, interrupts, usage_asked;
        bool frozen;
        unsigned freezes, thaws;
        /* operations on the ring */
        bool reading[2], read_cancelled[2], eof[2];
        size_t read_max[2];
        unsigned reads[2];
        bool writing, write_cancelled;
        const void *write_buf; /* the caller's buffer, which must live until written */
        FakeWrite writes[FAKE_PROC_WRITES_MAX];
        size_t n_writes;
        bool stdin_closed;
        bool watching_exit, exit_cancelled;
        bool watching_reports, reports_cancelled;
        bool timer_busy;    /* a timeout on the ring (armed, or cleared and its cancel not back) */
        uint64_t timer_usec; /* what the last proc_timer_arm() asked; 0: cleared (or fired) */
        unsigned timer_arms;
        bool letting_go;
        /* what the accounting reads return in cgroup mode (the test sets them) */
        CgroupUsage usage;
        CgroupStats stats;
        /* the proc_*() calls on it that do something, in order, as words (" new spawn place …"):
         * for checking an order (frozen before its usage is read); fake_proc_log_clear() */
        char log[FAKE_PROC_LOG_MAX];
} FakeProc;

extern FakeProc fake_procs[FAKE_PROC_MAX];
extern size_t n_fake_procs;

/* Checks every proc made was freed, then forgets them; the configuration is back to its default
 * (rlimit mode, placed at once, nothing fails). */
void fake_procs_reset(void);

/* Whether an operation of f is still on the ring (proc_busy()). */
bool fake_proc_busy(const FakeProc *f);
/* Forgets the calls logged so far; whether the calls named by words (space-separated: "freeze
 * read_usage") were made since, in that order (others may come between). */
void fake_proc_log_clear(FakeProc *f);
bool fake_proc_log_has(const FakeProc *f, const char *words);

/* The events, as the loop would deliver them. */
void fake_proc_placed(FakeProc *f, int error, const char *message);
void fake_proc_report(FakeProc *f, const SandboxReport *report); /* NULL: the socket closed */
void fake_proc_output(FakeProc *f, int stream, const void *buf, ssize_t n); /* n <= 0: EOF or error */
void fake_proc_written(FakeProc *f, int error);
void fake_proc_timer(FakeProc *f);   /* the armed timer's moment has come */
void fake_proc_settled(FakeProc *f); /* a cleared timer's (or let_go_later's) completion */
/* The init exited (code: CLD_EXITED, CLD_KILLED, …; status: its exit status or signal) and is
 * reaped. */
void fake_proc_exit(FakeProc *f, int code, int status);

/* Everything still on the ring comes back as it does once the init is killed: cancelled operations
 * as cancelled, reads at EOF, the exit watch with the init reaped (SIGKILL) last. The init must be
 * killed (or each operation cancelled): a live sandbox's operations never end by themselves. */
void fake_proc_drain(FakeProc *f);
