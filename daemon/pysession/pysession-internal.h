/* pysession-internal.h: the Python sessions' objects, shared by the rooms of the library:
 *   endline.c  the launcher's end-of-call line in a stream of output (pure, the protocol's parser);
 *   session.c  a session's life and bounds: its open (cold, or from a ready sandbox), its ready
 *              line, its process's events, its freezing between calls, its kill, the idle and
 *              lifetime sweep, its records;
 *   call.c     the call in flight: its message, slot and deadline, its output up to the end line,
 *              its account from the kernel and its answer;
 *   tools.c    the tool handlers and the route table's operations (route.h), and the module.
 *
 * Persistent Python sessions (issue 18), from session_open to the last call's answer.
 *
 * A session is a sandbox made exactly as a ready sandbox of the pool (run_launcher_spawn(): the
 * same namespaces, mounts, uid, seccomp, limits and scope or cgroup as a run), whose launcher
 * (launch.py, `_SESSION = True`) does not run one main.py and exit but loops: it reads one message
 * per call (the call's nonce and code, then its input files), runs the code in one __main__ that
 * lives as long as the session, flushes, and ends the call with one line on stderr and then on
 * stdout: "\0MCPEXECD-END <nonce> <status>". The daemon reads both pipes while a call runs and cuts
 * its output at those lines. The nonce is fresh per call (128 bits) and lives only in the
 * launcher's frame, which the caller's code shares: code that digs it out, or a thread or a
 * setsid() child it leaves running, must gain nothing (issue 29.1). So everything the interpreter
 * writes is untrusted: at the end line the session is frozen (payload/'s cgroup.freeze, or in
 * rlimit mode the init's SIGSTOP of every process of the run) until its next call, its pipes are
 * not read meanwhile, and what a call used is the session's usage read from the kernel (payload/'s
 * counters, or the init's report from the run's /proc) at its end less that at its start, bounded
 * by what is possible (run_end_bound()). A forged end line ends its own call early; whatever goes
 * on runs only within the next call, its deadline and its slot, and is that call's.
 *
 * Deadlines. At the call's timeout the daemon sends SIGINT to the launcher (and whatever else is a
 * child of the sandbox's init): KeyboardInterrupt in the code. If the end line comes within
 * PYSESSION_GRACE_USEC the session lives (timed_out: true); else the session is killed (payload/'s
 * cgroup.kill, and the init's SIGKILL, which ends its PID namespace) and the result says
 * session_alive: false. Python's exit or death (a crash, an OOM kill, os._exit) ends the session
 * the same way. One call at a time per session: a second gets a tool error at once.
 *
 * Interpreter and dependencies. Without them a session runs exec's interpreter (MCP_EXEC_PYTHON).
 * A session_open that names `python` or has `dependencies` is handed on to config.prepare (pyexec's):
 * it resolves the interpreter and installs the environment exactly as for an execute_python run,
 * and hands the call back (pysessions_open_prepared()) with the interpreter's path and the
 * environment's directory, which is mounted read-only at SANDBOX_ENV_DIR as a run's and held (never
 * evicted) until the session is freed. While it is there, the call is pyexec's: a cancellation or a
 * shutdown reaches it through the route table, which asks every room.
 * A session's calls run its interpreter: one naming another gets a tool error, and dependencies
 * are session_open's alone (a call cannot add any to the running interpreter's environment).
 *
 * Handles: 128 random bits (getrandom), hex; compared in constant time. Every wrong handle (garbage,
 * closed, expired, killed) gets the same tool error. The daemon serves one credential (stdio: its
 * client; HTTP: the one MCP_EXEC_AUTH_TOKEN, or none), so a handle works from any connection of it.
 *
 * Bounds: at most config.max sessions (opening ones included), each ends after its idle timeout
 * without a call or config.lifetime_s after its open (a sweep every PYSESSION_SWEEP_USEC).
 *
 * The warm pool (issue 18.7, pool.c) serves session_open as it serves a run: a ready sandbox is the
 * same sandbox, scope or cgroup and limits (its scope's backstop already covers a session's,
 * pool_backstop_s()), its interpreter started and its preload imported. session_open takes one
 * when one is ready (run_pool_take(): the runs' CPU weight and nice given back exactly as for a
 * run) and writes it one message whose first record is named "/session" (launch.py's
 * _SESSION_SWITCH; a call's file names are relative, so no call can send it). The launcher then does
 * what a session's does before its ready line and writes a second ready line, after its SIGINT
 * handler is set: its figures are the base of the first call's CPU (rlimits), so nothing of the
 * preload or of the switch is charged to a call; the session is IDLE once that line is read, as a
 * cold one is after its first. A ready sandbox taken by a session is that session's alone and dies
 * with it; the pool refills behind session_open's answer. None ready, or no pool: the cold path,
 * a sandbox of the session's own (run_launcher_spawn(), `_SESSION = True`). */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "endline.h"
#include "list.h"
#include "output.h"
#include "outputs.h"
#include "proc.h"
#include "pysession.h"

#define PYSESSION_READ_BYTES PY_END_READ_MAX
#define PYSESSION_READY_BYTES 256 /* launch.py's _READY_BYTES */
#define PYSESSION_READY_PREFIX "MCPEXECD-READY "
/* launch.py's _SESSION_SWITCH: absolute, so no call's input file (validated relative) is named so. */
#define PYSESSION_SWITCH "/session"
#define PYSESSION_NONCE_HEX PY_END_NONCE_HEX
#define PYSESSION_STDIN_RECORD "/dev/stdin" /* launch.py's _SESSION_STDIN */
/* A handle: the instance tag (at most 16 characters), '-', 32 hex digits. */
#define PYSESSION_HANDLE_MAX (16 + 1 + PYSESSION_NONCE_HEX)
/* From SIGINT at the deadline to the kill: a KeyboardInterrupt unwinds in milliseconds, but its
 * traceback is printed by Python code, which a loaded machine (2 s was seen missed) slows down. */
#define PYSESSION_GRACE_USEC (3u * 1000u * 1000u)
/* Opening: the sandbox and Python's start (a scope from systemd, an interpreter on a loaded host). */
#define PYSESSION_OPEN_TIMEOUT_USEC (60u * 1000u * 1000u)
#define PYSESSION_SWEEP_USEC (1000u * 1000u)
/* The one answer to every handle that names no live session of the caller: nothing in it tells a
 * closed handle from one that never existed. */
#define PYSESSION_UNKNOWN "unknown session: the handle is not an open Python session (it may have been closed, " \
                          "expired or killed, or mcp-execd restarted); open a new one with session_open"

typedef enum PySessionState {
        PYSESSION_OPENING, /* spawned; placing, or waiting for the launcher's ready line */
        PYSESSION_IDLE,
        PYSESSION_BUSY,    /* a call's message is written and its end line not yet read */
        PYSESSION_DEAD,    /* killed or exited: the handle is gone, the ring ops finish */
} PySessionState;

/* Why a session ended, for its close record (REASON): a fixed word, never the caller's text. */
typedef enum PySessionEnd {
        PYSESSION_END_CLOSED,      /* session_close */
        PYSESSION_END_IDLE,        /* its idle timeout */
        PYSESSION_END_LIFETIME,    /* MCP_EXEC_PY_SESSION_LIFETIME_S */
        PYSESSION_END_TIMEOUT,     /* a call did not stop within the grace after its interrupt */
        PYSESSION_END_OOM,         /* the memory limit killed the interpreter */
        PYSESSION_END_CRASH,       /* the interpreter (or the sandbox's init) died of a signal */
        PYSESSION_END_EXITED,      /* the interpreter exited (os._exit); pys_session_kill() tells OOM and crash */
        PYSESSION_END_CANCELLED,   /* its open was cancelled */
        PYSESSION_END_DAEMON_STOP,
        PYSESSION_END_ERROR,       /* ours: it could not start, or its pipes failed */
        _PYSESSION_END_MAX,
} PySessionEnd;

typedef struct PySession PySession;

/* A prepared session_open's environment (JobPrep's release): held while its sandbox may use it. */
typedef struct PyHold {
        void (*release)(void *userdata);
        void *userdata;
} PyHold;

static inline void hold_release(PyHold *h) {
        if (h->release)
                h->release(h->userdata);
        *h = (PyHold) {};
}

static inline PyHold hold_take(PyHold *h) {
        PyHold v = *h;
        *h = (PyHold) {};
        return v;
}

/* What the session makes of one of its process's output streams. */
typedef struct PyStream {
        int index;  /* 0 stdout, 1 stderr */
        bool paused; /* no read on the ring: the session is between calls (read again at the next) */
        PyEndScan scan; /* the current call's output up to its end line (endline.h) */
} PyStream;

/* The session's CPU (and in rlimit mode memory) so far, read from the kernel: payload/'s counters,
 * or without a cgroup the init's report (SANDBOX_REPORT_USAGE), never the interpreter's own
 * figures, which are the caller's code's to write (issue 29.1). */
typedef struct PyUsage {
        uint64_t user_usec, system_usec;
        uint64_t peak_bytes; /* rlimit mode's peak (the largest process's); a cgroup's is in its stats */
        ExecAccount account; /* cgroup mode: payload/'s pressure totals, I/O bytes, pids.peak */
        bool have;
} PyUsage;

/* The call in flight (exec or execute_python with this session). */
typedef struct PyCall {
        PySession *session;
        SchedulerSlot slot; /* one of MCP_EXEC_MAX_CONCURRENT's while it runs: a busy session is a running call */
        bool started;       /* its message is being written: it holds its slot and its deadline runs */
        uint64_t t_queued;
        McpCall *call;
        void *owner; /* NULL once cancelled: the answer is dropped */
        JobReplyFn reply;
        char nonce[PYSESSION_NONCE_HEX + 1];
        char *msg;
        size_t msg_len, msg_off;
        Output output;
        Outputs outputs;
        uint64_t t_release, t_end;
        bool timed_out;   /* the deadline passed before the end line */
        bool interrupted; /* SIGINT sent */
        int status;       /* the launcher's, from the end line: the code's own claim, as a run's exit */
        bool ending;      /* both end lines read, the session frozen; rlimit mode: its usage asked */
        PyUsage usage;    /* the session's at the call's end */
        CgroupStats stats; /* read before a kill (call_finish() reads them otherwise) */
        bool have_stats;
        EgressAccount egress_base; /* its session's egress account when it was made: the call's is the difference */
} PyCall;

struct PySession {
        PySessions *m;
        LIST_FIELDS(PySession, sessions);
        PySessionState state;
        char handle[PYSESSION_HANDLE_MAX + 1];
        char id[17]; /* its run id: mcp-execd-run-<id>.scope */
        char id_hash[METRICS_PY_SESSION_ID_HEX + 1]; /* what records and logs name it by (metrics.h) */
        /* Whose it is: session_open's principal (mcp_call_principal()); a call of another tenant
         * finds no session by its handle, as if it did not exist (issue 31.5). */
        char principal[MCP_PRINCIPAL_MAX + 1];
        bool warm;      /* a ready sandbox of the pool: its interpreter and preload were there */
        bool announced; /* its open record was written: its close gets one */
        char *traceparent; /* session_open's, for the open and close records */
        char *python_name; /* the interpreter session_open named or was given (prepared), or NULL:
                            * exec's (m->env.python_name) */
        json_t *prepared;  /* what the preparation adds to session_open's result (python,
                            * python_version, dependencies, environment), or NULL */
        PyHold env_hold;   /* the environment mounted in the sandbox, released when it is gone */
        /* The sandboxed interpreter: its pidfd, pipes, scope or cgroup, staging directory and one
         * timer (opening, a call's deadline, the grace after its interrupt). */
        Proc *proc;
        PyStream streams[2];
        bool python_exited; /* the init reported Python's exit */
        int wait_status;
        uint64_t idle_usec;
        uint64_t t_open, t_last;
        uint64_t calls;
        /* The session's usage when it was last frozen (its ready line, or its last call's end):
         * nothing of it runs between calls, so a call's CPU is its usage at the end less this. */
        PyUsage base;
        bool base_asked;     /* rlimit mode: the init's next usage report is the base */
        PyUsage exit_usage;  /* rlimit mode: the init's report of Python's exit (what it reaped) */
        /* The session's totals so far (each result says them): its CPU since the open (the
         * interpreter's start included), from the kernel as above; the sum of its calls' durations. */
        uint64_t total_cpu_user_usec, total_cpu_system_usec, total_duration_ms;
        /* session_open's caller until the ready line */
        McpCall *open_call;
        void *open_owner;
        JobReplyFn open_reply;
        PyCall *call;
        /* The call message on the ring: proc_write()'s buffer lives until its write completes
         * (session_on_written()), which may come after its call was answered and freed (a kill
         * ends the call once the pipes are at EOF); a session is freed only once its proc is idle. */
        char *msg_writing;
        char ready[PYSESSION_READY_BYTES];
        size_t ready_got;
        bool in_grace; /* the timer is the grace after SIGINT */
        bool finish_pending; /* killed during a call: answered once both pipes are at EOF */
        EgressRun *egress; /* its way out (issue 32), served while it lives; NULL: no network */
        /* Its fds and record are in systemd's fd store (store.c): it outlives a restart of ours. */
        bool stored;
        int store_fd;       /* its record's memfd (PID 1 holds a copy), when stored */
        uint64_t store_gen; /* the record's generation, one more at each write */
};

/* A call taken by hook_submit(), answered on the next turn of the loop (never from inside submit). */
typedef struct PyPending PyPending;
struct PyPending {
        McpCall *call;
        void *owner;
        JobReplyFn reply;
        LIST_FIELDS(PyPending, pending);
};

struct PySessions {
        PySessionsConfig config;
        PyPending *pending; /* newest first */
        RingOp op_pending;
        RunEnv env;
        Scheduler *scheduler;
        char *launcher;
        size_t launcher_len;
        char *switch_msg; /* what makes a ready sandbox a session (launch.py's _SESSION_SWITCH) */
        size_t switch_len;
        PySession *sessions;
        unsigned n_sessions;
        bool stopped;
        RingOp op_sweep;
        struct __kernel_timespec sweep_ts;
};

static inline uint64_t delta(uint64_t now, uint64_t before) {
        return now > before ? now - before : 0;
}

static inline Metrics *sessions_metrics(const PySessions *m) {
        return m->scheduler ? m->scheduler->metrics : NULL;
}

static inline bool pys_session_ops_busy(const PySession *s) {
        return s->proc && proc_busy(s->proc);
}

/* tools.c: a tool error or a structured result to call's caller (none when owner is NULL: the
 * call was cancelled), and the call freed. */
void pys_answer_error(McpCall *call, void *owner, JobReplyFn reply, const char *message);
void pys_answer_errorf(McpCall *call, void *owner, JobReplyFn reply, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
void pys_answer_json(McpCall *call, void *owner, JobReplyFn reply, json_t *o);

/* session.c */
/* session_open once its arguments are valid (tools.c): prep as pysessions_open_prepared()'s, or NULL. */
void pys_session_open(PySessions *m, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep);
void pys_session_open_answered(PySession *s);
void pys_session_kill(PySession *s, PySessionEnd end, const char *why);
void pys_session_free(PySession *s);
void pys_session_maybe_free(PySession *s);
PyUsage pys_usage_of_cgroup(PySession *s);
void pys_stream_read(PySession *s, int stream);
void pys_streams_resume(PySession *s);
/* The idle and lifetime sweep: armed while any session is open, its completion is pys_on_sweep(). */
void pys_sweep_arm(PySessions *m);
void pys_on_sweep(RingOp *op, int res);

/* session.c's handler of a session's proc (store.c gives it to a proc taken back). */
extern const ProcHandler pys_session_proc_handler;

/* store.c: a session in systemd's fd store (docs/sessions.md, "Restarts"). */
/* Once it is ready: its fds and its record to the store, and its init no longer dies with us. A
 * session that cannot be kept (no store, not the systemd backend, egress, a prepared environment)
 * stays as it is: it ends with the daemon. */
void pys_store_save(PySession *s);
/* After each call: its record written again (its counters, its last call's time). */
void pys_store_update(PySession *s);
/* It ended: its fds and record leave the store. */
void pys_store_forget(PySession *s);
/* The daemon stops: an idle stored session is let go, not killed (freed here; true), for the next
 * daemon to take back, or for PID 1 to end by closing the store at a stop that is no restart. */
bool pys_store_leave(PySession *s);

/* call.c */
/* A call of exec or execute_python naming the idle session s, its arguments checked (tools.c): its
 * message made and a slot asked; s is BUSY from here, or call is answered with why not. */
void pys_call_submit(PySession *s, McpCall *call, void *owner, JobReplyFn reply);
/* The call in flight is cancelled: never answered, its code interrupted as at a deadline. */
void pys_call_cancel(PySession *s);
void pys_call_free(PyCall *c);
void pys_call_record(PySession *s, const PyCall *c, const ExecResult *r, bool cancelled);
void pys_call_ended(PySession *s);
void pys_call_done(PySession *s);
void pys_stream_take(PySession *s, PyStream *st, const char *p, size_t n);
void pys_session_finish_maybe(PySession *s);
