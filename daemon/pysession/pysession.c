/* pysession.c: persistent Python sessions (issue 18), from session_open to the last call's answer.
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
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-id128.h>

#include "cleanup.h"
#include "endline.h"
#include "fd-util.h"
#include "list.h"
#include "log.h"
#include "output.h"
#include "outputs.h"
#include "proc.h"
#include "py-launch.h"
#include "pysession.h"
#include "spawn.h"
#include "str-util.h"

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
        PYSESSION_END_EXITED,      /* the interpreter exited (os._exit); session_kill() tells OOM and crash */
        PYSESSION_END_CANCELLED,   /* its open was cancelled */
        PYSESSION_END_DAEMON_STOP,
        PYSESSION_END_ERROR,       /* ours: it could not start, or its pipes failed */
        _PYSESSION_END_MAX,
} PySessionEnd;

static const char *const pysession_end_names[_PYSESSION_END_MAX] = {
        [PYSESSION_END_CLOSED] = "closed",       [PYSESSION_END_IDLE] = "idle-expiry",
        [PYSESSION_END_LIFETIME] = "lifetime",   [PYSESSION_END_TIMEOUT] = "timeout",
        [PYSESSION_END_OOM] = "oom",             [PYSESSION_END_CRASH] = "crash",
        [PYSESSION_END_EXITED] = "exited",       [PYSESSION_END_CANCELLED] = "cancelled",
        [PYSESSION_END_DAEMON_STOP] = "daemon-stop", [PYSESSION_END_ERROR] = "error",
};

typedef struct PySession PySession;

/* A prepared session_open's environment (JobPrep's release): held while its sandbox may use it. */
typedef struct PyHold {
        void (*release)(void *userdata);
        void *userdata;
} PyHold;

static void hold_release(PyHold *h) {
        if (h->release)
                h->release(h->userdata);
        *h = (PyHold) {};
}

static PyHold hold_take(PyHold *h) {
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
} PyCall;

struct PySession {
        PySessions *m;
        LIST_FIELDS(PySession, sessions);
        PySessionState state;
        char handle[PYSESSION_HANDLE_MAX + 1];
        char id[17]; /* its run id: mcp-execd-run-<id>.scope */
        char id_hash[METRICS_PY_SESSION_ID_HEX + 1]; /* what records and logs name it by (metrics.h) */
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
        char ready[PYSESSION_READY_BYTES];
        size_t ready_got;
        bool in_grace; /* the timer is the grace after SIGINT */
        bool finish_pending; /* killed during a call: answered once both pipes are at EOF */
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

static void session_kill(PySession *s, PySessionEnd end, const char *why);
static void session_open_answered(PySession *s);
static void session_finish_maybe(PySession *s);
static void session_maybe_free(PySession *s);
static void call_finish(PySession *s);

/* ---------------------------------------------------------------------------------------------
 * Answers. */

static void answer_error(McpCall *call, void *owner, JobReplyFn reply, const char *message) {
        if (owner) {
                char *r = mcp_call_reply_tool_error(call, message);
                reply(owner, r ?: mcp_call_reply_oom(call));
        }
        mcp_call_free(call);
}

static void answer_errorf(McpCall *call, void *owner, JobReplyFn reply, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void answer_errorf(McpCall *call, void *owner, JobReplyFn reply, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        answer_error(call, owner, reply, msg);
}

static void answer_json(McpCall *call, void *owner, JobReplyFn reply, json_t *o) {
        if (owner) {
                char *r = o ? mcp_call_reply_structured(call, o) : NULL;
                reply(owner, r ?: mcp_call_reply_oom(call));
        }
        json_decref(o);
        mcp_call_free(call);
}

/* ---------------------------------------------------------------------------------------------
 * Lifetime of a session. */

static bool session_ops_busy(const PySession *s) {
        return s->proc && proc_busy(s->proc);
}

static void call_free(PyCall *c) {
        if (!c)
                return;
        /* Held or waiting, the slot goes back with the call (the next queued call or run starts). */
        if (c->session && c->session->m->scheduler)
                scheduler_slot_release(c->session->m->scheduler, &c->slot);
        mcp_call_free(c->call);
        free(c->msg);
        output_done(&c->output);
        outputs_done(&c->outputs);
        free(c);
}

static void call_freep(PyCall **c) {
        call_free(*c);
}

static void session_free(PySession *s) {
        PySessions *m = s->m;
        if (LIST_IS_LINKED(sessions, m->sessions, s)) {
                LIST_REMOVE(sessions, m->sessions, s);
                m->n_sessions--;
        }
        /* The init is killed and reaped (proc_free()): nothing of the session is left in its cgroup
         * or scope, and nothing mounts its environment any more (the cache may evict it). */
        s->proc = proc_free(s->proc);
        hold_release(&s->env_hold);
        call_free(s->call);
        if (s->open_call)
                answer_error(s->open_call, s->open_owner, s->open_reply, "the session ended before it was ready");
        explicit_bzero(s->handle, sizeof(s->handle));
        free(s->traceparent);
        free(s->python_name);
        json_decref(s->prepared);
        free(s);
}

static void session_maybe_free(PySession *s) {
        if (s->state == PYSESSION_DEAD &&
            (!s->proc || (!proc_placing(s->proc) && !proc_busy(s->proc) &&
                          (proc_init_exited(s->proc) || !proc_spawned(s->proc)))))
                session_free(s);
}

/* payload/'s CPU now (a session with a cgroup). */
static PyUsage usage_of_cgroup(PySession *s) {
        CgroupUsage u;
        if (proc_read_usage(s->proc, &u) < 0)
                return (PyUsage) {};
        return (PyUsage) { .user_usec = u.cpu_user_usec, .system_usec = u.cpu_system_usec, .have = true };
}

static PyUsage usage_of_report(const SandboxReport *r) {
        return (PyUsage) { .user_usec = r->utime_usec, .system_usec = r->stime_usec, .peak_bytes = r->maxrss_bytes,
                           .have = true };
}

/* Where a stream's bytes that are a call's output go (PyEndOutputFn's userdata). */
typedef struct PyOutputSink {
        Output *output;
        int index; /* 0 stdout, 1 stderr */
} PyOutputSink;

static void stream_output(void *userdata, const char *p, size_t n) {
        const PyOutputSink *sink = userdata;
        (void) output_add(sink->output, sink->index, p, n);
}

static void stream_read(PySession *s, int stream) {
        /* While opening, stdout carries exactly the ready line first. */
        size_t max = stream == 0 && s->state == PYSESSION_OPENING ? PYSESSION_READY_BYTES - s->ready_got
                                                                   : PYSESSION_READ_BYTES;
        s->streams[stream].paused = false;
        proc_read(s->proc, stream, max);
}

/* The reads the session stopped between calls, again (a call starts, or the session is killed
 * during one and its output is read to EOF). */
static void streams_resume(PySession *s) {
        for (int i = 0; i < 2; i++)
                if (s->streams[i].paused)
                        stream_read(s, i);
}

static Metrics *sessions_metrics(const PySessions *m) {
        return m->scheduler ? m->scheduler->metrics : NULL;
}

static void session_record_fill(const PySession *s, MetricsPySession *ps) {
        *ps = (MetricsPySession) {
                .id = s->id_hash,
                .run_id = s->id,
                .unit = proc_unit(s->proc),
                .limits = proc_limits(s->proc),
                .traceparent = s->traceparent,
                .idle_timeout_s = (uint32_t) (s->idle_usec / 1000000u),
                .lifetime_s = s->m->config.lifetime_s,
        };
}

/* The close record of a session whose open was recorded (one that never became ready was
 * answered with a tool error, and is not a session operators saw open). */
static void session_record_closed(PySession *s, PySessionEnd end, const char *why, const CgroupStats *stats) {
        Metrics *metrics = sessions_metrics(s->m);
        if (!metrics || !s->announced)
                return;
        MetricsPySession ps;
        session_record_fill(s, &ps);
        ps.reason = pysession_end_names[end];
        ps.detail = why;
        ps.age_ms = (now_usec() - s->t_open) / 1000u;
        ps.calls = s->calls;
        ps.memory_peak_bytes = stats ? stats->memory_peak_bytes : 0;
        ps.oom_killed = stats && stats->oom_killed;
        metrics_py_session_closed(metrics, &ps);
}

/* The session is over: every process goes (payload/'s cgroup.kill, then the init's SIGKILL, which
 * ends its PID namespace); a call in flight is answered as it stands; the handle is dead at once. */
static void session_kill(PySession *s, PySessionEnd end, const char *why) {
        if (s->state == PYSESSION_DEAD)
                return;
        log_debug("python session %s: ended: %s", s->id_hash, why);
        bool had_call = s->state == PYSESSION_BUSY && s->call;
        s->state = PYSESSION_DEAD;
        /* The counters before they go with the init: this call's OOM kill, the session's peak. */
        CgroupStats stats = {};
        bool have_stats = proc_read_stats(s->proc, &stats) >= 0;
        if (had_call) {
                if (!s->call->t_end)
                        s->call->t_end = now_usec();
                if (have_stats) {
                        s->call->stats = stats;
                        s->call->have_stats = true;
                        s->call->usage = usage_of_cgroup(s);
                }
        }
        /* How the interpreter ended, from the counters first (go-judge's rule, style.md): an OOM kill
         * is a SIGKILL, which alone would read as a crash. */
        if (end == PYSESSION_END_EXITED || end == PYSESSION_END_CRASH) {
                if (stats.oom_killed)
                        end = PYSESSION_END_OOM;
                else if (s->python_exited && WIFSIGNALED(s->wait_status))
                        end = PYSESSION_END_CRASH;
        }
        session_record_closed(s, end, why, have_stats ? &stats : NULL);
        (void) proc_kill_payload(s->proc);
        /* What the call printed up to its end is its answer: the pipes are read to their EOF,
         * which the kill brings (no process outside the sandbox holds their write ends). */
        s->finish_pending = had_call;
        if (had_call)
                streams_resume(s);
        if (s->open_call) {
                McpCall *c = TAKE_PTR(s->open_call);
                answer_errorf(c, s->open_owner, s->open_reply, "cannot open a Python session: %s", why);
                session_open_answered(s);
        }
        /* While systemd makes the scope the init must live: the proc kills it once the placement
         * is over (proc_kill_init()). */
        (void) proc_kill_init(s->proc);
        proc_cancel(s->proc, PROC_OP_TIMER | PROC_OP_STDIN | PROC_OP_REPORTS |
                                     (s->finish_pending ? 0 : PROC_OP_STREAMS));
        session_finish_maybe(s);
        /* op_pidfd stays: its completion reaps the init, then the session is freed. */
        session_maybe_free(s);
}

/* ---------------------------------------------------------------------------------------------
 * The end of a call. */

static uint64_t delta(uint64_t now, uint64_t before) {
        return now > before ? now - before : 0;
}

/* The call's run record, as a run's (scheduler.c's job_record()), with its session's id: sizes and
 * counters, never the code or its output. r: the call's result, zeroed when it was not finished. */
static void call_record(PySession *s, const PyCall *c, const ExecResult *r, bool cancelled) {
        Metrics *metrics = sessions_metrics(s->m);
        if (!metrics || !c->call)
                return;
        MetricsRun m = scheduler_record_of(c->call, r);
        m.run_id = s->id;
        m.unit = proc_unit(s->proc);
        m.limits = proc_limits(s->proc);
        m.cancelled = cancelled;
        m.py_session_id = s->id_hash;
        m.py_session_call = s->calls;
        metrics_run_finished(metrics, &m);
}

/* Answers the call in flight from what is known now; the session lives on if it is IDLE again. */
static void call_finish(PySession *s) {
        _cleanup_(call_freep) PyCall *c = TAKE_PTR(s->call);
        bool alive = s->state != PYSESSION_DEAD;

        if (alive && proc_has_cgroup(s->proc))
                c->have_stats = proc_read_stats(s->proc, &c->stats) >= 0;
        const CgroupStats stats = c->stats;
        bool have_stats = c->have_stats;
        /* Dead without a cgroup: what the init reaped when Python exited, if it said. */
        PyUsage usage = c->usage.have || alive ? c->usage : s->exit_usage;
        /* Bytes held back as a possible end line that never came are the call's. */
        for (int i = 0; i < 2; i++)
                py_end_scan_flush(&s->streams[i].scan, stream_output, &(PyOutputSink) { &c->output, i });
        if (alive && proc_pid(s->proc) > 0) {
                int r = run_outputs_read(&s->m->env, s->proc, &c->outputs);
                if (r < 0)
                        log_debug("python session: cannot read back outputs/: %s", strerror(-r));
        }
        (void) output_finish(&c->output);

        /* How the call ended. Alive, the session's launcher said it (its status; a call that timed
         * out was interrupted, not killed: -1 without a signal); dead, the init's report of Python's
         * exit, or else the kill (-SIGKILL: a session's contract, where a run says -1). */
        RunEnd e = {};
        if (alive)
                e.exit_code = c->status;
        else if (s->python_exited)
                run_end_wait_status(s->wait_status, &e);
        else {
                e.exit_code = -SIGKILL;
                snprintf(e.signal, sizeof(e.signal), "SIGKILL");
        }
        if (c->timed_out)
                e.exit_code = -1; /* mcp-exec's contract: -1 when timed out */
        if (have_stats) {
                e.oom_killed = stats.oom_killed;
                e.pids_limit_hit = stats.pids_limit_hit;
                e.memory_peak_bytes = stats.memory_peak_bytes;
        } else
                e.memory_peak_bytes = usage.peak_bytes;
        /* Nothing of the session ran since its base (it was frozen): the difference is the call's. */
        if (usage.have && s->base.have) {
                e.cpu_user_usec = delta(usage.user_usec, s->base.user_usec);
                e.cpu_system_usec = delta(usage.system_usec, s->base.system_usec);
        }
        uint64_t end = c->t_end ? c->t_end : now_usec();
        /* A call that never started (it waited for a slot when its session ended) ran for no time. */
        uint64_t wall = c->started ? delta(end, c->t_release) : 0;
        (void) run_end_bound(&e, wall, s->m->env.memory_max_bytes, s->id);

        ExecResult r;
        run_result_build(s->id, proc_limits(s->proc), &c->output, &c->outputs, &e, &r);
        r.timed_out = c->timed_out;
        r.duration_ms = wall / 1000;
        r.queue_ms = delta(c->started ? c->t_release : end, c->t_queued) / 1000;
        if (usage.have) {
                /* The totals, bounded as a call's figures are, by the session's age. */
                RunEnd total = { .cpu_user_usec = usage.user_usec, .cpu_system_usec = usage.system_usec };
                (void) run_end_bound(&total, delta(now_usec(), s->t_open), UINT64_MAX, s->id);
                s->total_cpu_user_usec = total.cpu_user_usec;
                s->total_cpu_system_usec = total.cpu_system_usec;
                s->base = usage;
        }
        s->total_duration_ms += r.duration_ms;
        _cleanup_(json_decrefp) json_t *extra = json_pack(
                "{s:s, s:b, s:s, s:I, s:I, s:I, s:I}", "session", s->handle, "session_alive", alive,
                "memory_peak_scope", "session", "session_calls", (json_int_t) s->calls,
                "session_cpu_user_us", (json_int_t) s->total_cpu_user_usec,
                "session_cpu_system_us", (json_int_t) s->total_cpu_system_usec,
                "session_duration_ms", (json_int_t) s->total_duration_ms);
        r.extra = extra;
        call_record(s, c, &r, !c->owner);
        if (c->owner) {
                char *reply = mcp_call_reply_result(c->call, &r);
                c->reply(c->owner, reply ?: mcp_call_reply_oom(c->call));
        }
        s->t_last = now_usec();
}

/* A session killed during a call: answered once both pipes are at EOF (all it printed is read). */
static void session_finish_maybe(PySession *s) {
        if (s->finish_pending && proc_eof(s->proc, 0) && proc_eof(s->proc, 1)) {
                s->finish_pending = false;
                if (s->call)
                        call_finish(s);
        }
}

/* The call is over: its answer, and the session waits for the next. */
static void call_done(PySession *s) {
        s->state = PYSESSION_IDLE;
        call_finish(s);
}

/* Both end lines were read. The session is frozen at once: the end line is the interpreter's, so
 * the caller's code may have written it (its nonce is one frame up) and go on running; frozen,
 * whatever goes on gains no time outside a call, and its CPU is the next call's. Only the status is
 * taken from the line, the code's own claim about itself as a run's exit status is; what the call
 * used is read from the kernel once the session is frozen. */
static void call_ended(PySession *s) {
        PyCall *c = s->call;
        c->t_end = now_usec();
        proc_timer_clear(s->proc);
        unsigned long long st = 0;
        c->status = sscanf(s->streams[0].scan.tail, "%llu", &st) == 1 ? (int) (st & 0xff) : 1;
        c->ending = true;
        if (proc_freeze(s->proc, true) < 0) {
                session_kill(s, PYSESSION_END_ERROR, "cannot freeze the session between its calls");
                return;
        }
        if (proc_has_cgroup(s->proc)) {
                c->usage = usage_of_cgroup(s);
                call_done(s);
                return;
        }
        /* rlimit mode: the init's report finishes the call (session_on_report()). */
        if (proc_ask_usage(s->proc) < 0)
                session_kill(s, PYSESSION_END_ERROR, "cannot ask the session's init for its usage");
}

/* ---------------------------------------------------------------------------------------------
 * Output: each stream's bytes go to the call's output up to its end line. */

static void stream_take(PySession *s, PyStream *st, const char *p, size_t n) {
        PyCall *c = s->call;
        if (!c || !c->started)
                return; /* between calls (a thread the code left running): not any call's */
        py_end_scan_take(&st->scan, c->nonce, p, n, stream_output, &(PyOutputSink) { &c->output, st->index });
}

static void session_became_ready(PySession *s) {
        s->ready[PYSESSION_READY_BYTES - 1] = 0;
        if (strncmp(s->ready, PYSESSION_READY_PREFIX, strlen(PYSESSION_READY_PREFIX)) != 0) {
                session_kill(s, PYSESSION_END_ERROR, "the session's interpreter did not start");
                return;
        }
        /* The line's CPU figures are not used: the base of the first call is read from the kernel
         * below. Its RSS is what the interpreter holds before the first call (the preload's too,
         * when warm), as a run's memory_at_start_bytes, in rlimit mode: no code of the caller's
         * has run in this interpreter yet, so it is still ours. With a cgroup, memory.current. */
        unsigned long long u = 0, sy = 0, rss = 0;
        (void) sscanf(s->ready + strlen(PYSESSION_READY_PREFIX), "%llu %llu %llu", &u, &sy, &rss);
        uint64_t memory = rss;
        CgroupUsage usage;
        if (proc_read_usage(s->proc, &usage) >= 0)
                memory = usage.memory_current_bytes;
        /* Frozen until its first call, and the base of that call's account (call_finish()). */
        if (proc_freeze(s->proc, true) < 0) {
                session_kill(s, PYSESSION_END_ERROR, "cannot freeze the session between its calls");
                return;
        }
        if (proc_has_cgroup(s->proc))
                s->base = usage_of_cgroup(s);
        else if (proc_ask_usage(s->proc) >= 0)
                s->base_asked = true;
        s->state = PYSESSION_IDLE;
        s->t_last = now_usec();
        proc_timer_clear(s->proc);
        /* Python has copied the launcher out of it. */
        proc_staging_remove(s->proc);

        McpCall *call = TAKE_PTR(s->open_call);
        Metrics *metrics = sessions_metrics(s->m);
        if (metrics) {
                const char *tp = mcp_call_traceparent(call);
                s->traceparent = tp ? strdup(tp) : NULL; /* without it (no memory) the close has none */
                MetricsPySession ps;
                session_record_fill(s, &ps);
                ps.open_ms = (s->t_last - s->t_open) / 1000u;
                ps.warm = s->warm;
                metrics_py_session_opened(metrics, &ps);
                s->announced = true;
        }
        uint64_t left = delta(s->t_open + (uint64_t) s->m->config.lifetime_s * 1000000u, now_usec());
        json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:b, s:I}", "session", s->handle, "idle_timeout_s",
                              (json_int_t) (s->idle_usec / 1000000u), "expires_in_s", (json_int_t) (left / 1000000u),
                              "limits", proc_limits(s->proc), "warm", s->warm,
                              "memory_at_start_bytes", (json_int_t) memory);
        /* What was prepared, in execute_python's shape: the interpreter, what was installed. */
        if (o && s->prepared && json_object_update_missing(o, s->prepared) < 0)
                json_decref(TAKE_PTR(o));
        answer_json(call, s->open_owner, s->open_reply, o);
        session_open_answered(s);
}

static void session_on_output(Proc *p, int stream, const char *buf, ssize_t res, void *userdata) {
        PySession *s = userdata;
        PyStream *st = &s->streams[stream];

        if (res <= 0) {
                /* EOF: Python's exit (or its kill) follows, from the init's report or its pidfd. */
                if (res < 0 && s->state != PYSESSION_DEAD)
                        session_kill(s, PYSESSION_END_ERROR, "cannot read the session's output");
                session_finish_maybe(s);
                session_maybe_free(s);
                return;
        }
        if (s->state == PYSESSION_DEAD) {
                if (s->finish_pending && s->call) {
                        stream_take(s, st, buf, (size_t) res);
                        stream_read(s, stream);
                        return;
                }
                session_maybe_free(s);
                return;
        }
        if (stream == 0 && s->state == PYSESSION_OPENING) {
                memcpy(s->ready + s->ready_got, buf, (size_t) res); /* at most what is missing */
                s->ready_got += (size_t) res;
                if (s->ready_got == PYSESSION_READY_BYTES)
                        session_became_ready(s);
        } else
                stream_take(s, st, buf, (size_t) res);
        if (s->state == PYSESSION_DEAD) {
                session_maybe_free(s);
                return;
        }
        if (s->state == PYSESSION_BUSY && !s->call->ending && s->streams[0].scan.ended && s->streams[1].scan.ended) {
                /* Not read again before the next call: nothing of the session's runs until then. */
                st->paused = true;
                call_ended(s);
                if (s->state == PYSESSION_DEAD)
                        session_maybe_free(s);
                return;
        }
        /* Between calls (just ready, or the call ending) the pipes are not read (issue 29.1): the
         * session is frozen, and a read would be the daemon's CPU spent on no call. */
        if (s->state == PYSESSION_IDLE || (s->state == PYSESSION_BUSY && s->call->ending)) {
                st->paused = true;
                return;
        }
        stream_read(s, stream);
}

/* ---------------------------------------------------------------------------------------------
 * The sandbox's init, Python's exit, the deadline. */

static void session_on_report(Proc *p, const SandboxReport *report, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD) {
                session_maybe_free(s);
                return;
        }
        if (report) {
                switch (report->kind) {
                case SANDBOX_REPORT_STARTED:
                        proc_watch_reports(p);
                        return;
                case SANDBOX_REPORT_USAGE:
                        /* In the order asked: the base at the ready line first, then each call's
                         * end (a call cannot end before the base was asked). */
                        proc_watch_reports(p);
                        if (s->base_asked) {
                                s->base_asked = false;
                                s->base = usage_of_report(report);
                        } else if (s->state == PYSESSION_BUSY && s->call && s->call->ending) {
                                s->call->usage = usage_of_report(report);
                                call_done(s);
                        }
                        return;
                case SANDBOX_REPORT_EXITED:
                        s->python_exited = true;
                        s->wait_status = report->value;
                        s->exit_usage = usage_of_report(report);
                        if (s->state == PYSESSION_OPENING) {
                                /* How it ended is the one clue a failed start leaves. */
                                char why[96];
                                if (WIFSIGNALED(s->wait_status))
                                        snprintf(why, sizeof(why), "the interpreter was killed by SIG%s at its start",
                                                 sigabbrev_np(WTERMSIG(s->wait_status)) ?: "?");
                                else
                                        snprintf(why, sizeof(why), "the interpreter exited at its start (status %d)",
                                                 WEXITSTATUS(s->wait_status));
                                session_kill(s, PYSESSION_END_ERROR, why);
                        } else
                                session_kill(s, PYSESSION_END_EXITED, "the interpreter exited");
                        return;
                case SANDBOX_REPORT_FAILED:
                        session_kill(s, PYSESSION_END_ERROR, "the sandbox could not start the interpreter");
                        return;
                default:
                        break;
                }
        }
        session_kill(s, PYSESSION_END_ERROR, "the session's init stopped reporting");
}

/* The init exited and is reaped (or the watch came back cancelled): the session is over. */
static void session_on_exited(Proc *p, const siginfo_t *si, void *userdata) {
        PySession *s = userdata;
        session_kill(s, PYSESSION_END_CRASH, "its init exited");
        session_maybe_free(s);
}

static void session_on_settled(Proc *p, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD)
                session_maybe_free(s);
}

static void session_on_timer(Proc *p, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD) {
                session_maybe_free(s);
                return;
        }
        if (s->state == PYSESSION_OPENING) {
                /* systemd never finished the scope: given up, as run.c's placement deadline. */
                proc_place_cancel(p);
                session_kill(s, PYSESSION_END_ERROR, "the interpreter did not become ready in time");
                return;
        }
        if (s->state != PYSESSION_BUSY || !s->call)
                return;
        if (!s->in_grace) {
                /* The deadline: KeyboardInterrupt, and a grace to unwind. */
                s->call->timed_out = true;
                s->call->interrupted = true;
                s->call->t_end = now_usec();
                s->in_grace = true;
                proc_interrupt(p);
                proc_timer_arm(p, PYSESSION_GRACE_USEC);
                return;
        }
        session_kill(s, PYSESSION_END_TIMEOUT, "the call did not stop within the grace after its interrupt");
}

/* ---------------------------------------------------------------------------------------------
 * Opening. */

static int session_release(PySession *s) {
        int r = proc_release(s->proc);
        if (r < 0)
                return r;
        stream_read(s, 0);
        stream_read(s, 1);
        proc_watch_reports(s->proc);
        return 0;
}

static void session_on_placed(Proc *p, int error, const char *message, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD) {
                /* The kill session_kill() asked for is done (proc_kill_init()). */
                session_maybe_free(s);
                return;
        }
        if (error < 0) {
                session_kill(s, PYSESSION_END_ERROR, message ? message : "cannot place the session in its scope");
                return;
        }
        if (session_release(s) < 0)
                session_kill(s, PYSESSION_END_ERROR, "cannot release the session's sandbox");
}

static void sweep_arm(PySessions *m);
static void session_on_written(Proc *p, int error, void *userdata);

static const ProcHandler session_proc_handler = {
        .placed = session_on_placed,
        .report = session_on_report,
        .exited = session_on_exited,
        .output = session_on_output,
        .written = session_on_written,
        .timer = session_on_timer,
        .settled = session_on_settled,
};

uint32_t pysession_backstop_s(uint32_t lifetime_s, uint32_t max_timeout_s) {
        uint64_t s = (uint64_t) lifetime_s + max_timeout_s + 60u;
        return (uint32_t) MIN(s, (uint64_t) UINT32_MAX / 2);
}

/* A ready sandbox taken by session_open was the pool's: one is made behind the open's answer, whose
 * write is on the ring already (as after a run's, scheduler.c). */
static void session_open_answered(PySession *s) {
        if (s->warm)
                run_pool_refill_later(s->m->env.pool);
}

/* PY_SESSION_ID (metrics.h): the first 16 hex digits of this machine's app-specific id for the
 * handle's 128 random bits, an HMAC-SHA256 keyed by /etc/machine-id
 * (sd_id128_get_machine_app_specific(3)). The handle, the session's only credential, is never
 * written, nor can it be had back from this; an operator given one finds its records with
 * `systemd-id128 machine-id --app-specific=<the handle's hex>`. Without a machine id (a bare
 * container) the session's run id, random as well, stands in. */
static void session_record_id(const char *handle, const char *run_id, char out[METRICS_PY_SESSION_ID_HEX + 1]) {
        const char *hex = strrchr(handle, '-');
        sd_id128_t app, id;
        char text[SD_ID128_STRING_MAX];
        if (sd_id128_from_string(hex ? hex + 1 : handle, &app) >= 0 && sd_id128_get_machine_app_specific(app, &id) >= 0)
                run_id = sd_id128_to_string(id, text);
        snprintf(out, METRICS_PY_SESSION_ID_HEX + 1, "%s", run_id);
}

/* Whether session_open needs config.prepare first: an interpreter named, or dependencies. */
static bool session_open_prepares(const McpExecArgs *a) {
        return a->python || json_array_size(a->dependencies) > 0;
}

/* prep: NULL when the call comes from the route table; else what config.prepare did (the interpreter,
 * the environment, held by prep->release from here on, and what the result adds). */
static void session_open(PySessions *m, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep) {
        const McpExecArgs *a = mcp_call_args(call);
        /* Whatever becomes of the call, the environment is the session's once it exists, else it
         * is given back on the way out. */
        _cleanup_(hold_release) PyHold hold = prep ? (PyHold) { prep->release, prep->userdata } : (PyHold) {};
        const char *python = prep && prep->python ? prep->python : m->env.python;
        if (m->config.max == 0 || !python) {
                answer_error(call, owner, reply, m->config.max == 0
                        ? "Python sessions are disabled on this server (MCP_EXEC_PY_SESSIONS_MAX=0)"
                        : "Python sessions need the default interpreter, which was not found (MCP_EXEC_PYTHON)");
                return;
        }
        unsigned live = 0; /* a killed one is no longer counted, while its init is reaped */
        LIST_FOREACH(sessions, o, m->sessions)
                live += o->state != PYSESSION_DEAD;
        /* Counted before the preparation too: nothing is installed for a session that has no place. */
        if (live >= m->config.max) {
                answer_errorf(call, owner, reply, "too many Python sessions open: %u of %u "
                                                  "(MCP_EXEC_PY_SESSIONS_MAX); close one with session_close",
                              live, m->config.max);
                return;
        }
        if (!prep && session_open_prepares(a)) {
                /* The interpreter registry and the environments are pyexec's: it answers an
                 * interpreter that cannot be used or a dependency that cannot be installed, and
                 * hands the rest back to pysessions_open_prepared(). */
                int r = m->config.prepare ? m->config.prepare(m->config.prepare_userdata, call, owner, reply)
                                          : -EOPNOTSUPP;
                if (r < 0)
                        answer_errorf(call, owner, reply,
                                      "cannot prepare the session's interpreter and dependencies: %s", strerror(-r));
                return;
        }

        PySession *s = calloc(1, sizeof(*s));
        if (!s) {
                answer_error(call, owner, reply, "mcp-execd is out of memory");
                return;
        }
        *s = (PySession) {
                .m = m,
                .t_open = now_usec(),
        };
        for (int i = 0; i < 2; i++)
                s->streams[i] = (PyStream) { .index = i };
        s->env_hold = hold_take(&hold);
        uint32_t idle = a->idle_timeout_s && a->idle_timeout_s < m->config.idle_s ? a->idle_timeout_s : m->config.idle_s;
        s->idle_usec = (uint64_t) idle * 1000000u;
        LIST_PREPEND(sessions, m->sessions, s);
        m->n_sessions++;
        s->state = PYSESSION_DEAD; /* until spawned: session_free() on the way out */

        int r = str_random_id(s->handle, m->config.tag, PYSESSION_NONCE_HEX / 2);
        if (r >= 0 && prep && prep->extra) {
                const char *name = json_string_value(json_object_get(prep->extra, "python"));
                s->prepared = json_incref(prep->extra);
                if (name && !(s->python_name = strdup(name)))
                        r = -ENOMEM;
        }
        /* A ready sandbox of the pool when one is there and the session is the pool's kind (the
         * default interpreter, no environment: a prepared session is always made for itself): its
         * id names its scope, as a run that takes one. Nothing fails after the take. */
        RunReady ready;
        s->warm = r >= 0 && !prep && run_pool_take(m->env.pool, &ready) >= 0;
        if (s->warm) {
                /* Placed, released, its ready line read by the pool: its launcher waits for a
                 * message on stdin, which makes it a session (launch.py's _SESSION_SWITCH). */
                s->proc = ready.proc;
                proc_set_handler(s->proc, &session_proc_handler, s);
                memcpy(s->id, proc_id(s->proc), sizeof(s->id));
        } else if (r >= 0)
                r = str_random_hex(s->id, 8);
        if (r >= 0)
                session_record_id(s->handle, s->id, s->id_hash);
        if (r < 0) {
                session_free(s);
                answer_errorf(call, owner, reply, "cannot make a session handle: %s", strerror(-r));
                return;
        }
        if (!s->warm) {
                r = proc_new(&(ProcSpec) { .ring = m->env.ring, .sandbox = m->env.sandbox,
                                           .cgroup = m->env.cgroup, .id = s->id,
                                           .backstop_s = pysession_backstop_s(m->config.lifetime_s,
                                                                              m->config.max_timeout_s) },
                             &session_proc_handler, s, &s->proc);
                if (r < 0) {
                        session_free(s);
                        answer_errorf(call, owner, reply, "cannot create the session's cgroup (%s backend): %s",
                                      cgroup_backend_name(m->env.cgroup), strerror(-r));
                        return;
                }
                _cleanup_free_ char *staging = NULL;
                if (asprintf(&staging, "%s/session-%s", m->env.state_dir, s->id) < 0) {
                        staging = NULL;
                        session_free(s);
                        answer_error(call, owner, reply, "mcp-execd is out of memory");
                        return;
                }
                r = run_launcher_spawn(s->proc, &(RunLauncherSpec) { .python = python,
                                                                     .env_dir = prep ? prep->env_dir : NULL,
                                                                     .staging = staging, .launcher = m->launcher,
                                                                     .launcher_len = m->launcher_len });
                if (r < 0) {
                        session_free(s);
                        answer_errorf(call, owner, reply, "cannot start the session's sandbox: %s", strerror(-r));
                        return;
                }
        }
        s->state = PYSESSION_OPENING;
        s->open_call = call;
        s->open_owner = owner;
        s->open_reply = reply;

        proc_watch_exit(s->proc);
        proc_timer_arm(s->proc, PYSESSION_OPEN_TIMEOUT_USEC);

        if (s->warm) {
                /* The switch, then its ready line: session_on_output() reads it as a cold session's. */
                proc_write(s->proc, m->switch_msg, m->switch_len, false);
                stream_read(s, 0);
                stream_read(s, 1);
                proc_watch_reports(s->proc);
                sweep_arm(m);
                return;
        }
        _cleanup_free_ char *problem = NULL;
        r = proc_place(s->proc, &problem);
        if (r < 0) {
                session_kill(s, PYSESSION_END_ERROR, problem ? problem : "cannot place the session in its cgroup");
                return;
        }
        if (r == 0) {
                /* session_on_placed() releases it */
        } else if (session_release(s) < 0) {
                session_kill(s, PYSESSION_END_ERROR, "cannot release the session's sandbox");
                return;
        }
        sweep_arm(m);
}

/* ---------------------------------------------------------------------------------------------
 * Calls. */

/* Constant time per session: a handle's bytes do not decide how long the search takes. */
static PySession *session_find(PySessions *m, const char *handle) {
        size_t n = strlen(handle);
        PySession *found = NULL;
        LIST_FOREACH(sessions, s, m->sessions) {
                size_t len = strlen(s->handle);
                unsigned char diff = n != len;
                for (size_t i = 0; i < len; i++)
                        diff |= (unsigned char) (s->handle[i] ^ (i < n ? handle[i] : 0));
                if (!diff && s->state != PYSESSION_DEAD && s->state != PYSESSION_OPENING)
                        found = s;
        }
        return found;
}

static void session_on_written(Proc *p, int error, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD) {
                session_maybe_free(s);
                return;
        }
        if (error < 0) {
                session_kill(s, PYSESSION_END_ERROR, "cannot write the call to the interpreter");
                return;
        }
        if (s->call)
                free(TAKE_PTR(s->call->msg));
}

/* A handle that names no session here. One bearing another instance's tag came through a load
 * balancer: either it read too little of the body to see the handle (it says so, mcp.h), or the
 * instance of that tag is down. Say which (the tag is the caller's own text), since "closed or
 * expired" would send the agent looking for the wrong cause. */
static void answer_unknown(PySessions *m, McpCall *call, void *owner, JobReplyFn reply, const char *handle) {
        char tag[17];
        uint64_t read, size;
        if (str_id_other_instance(handle, m->config.tag, tag) && mcp_call_lb_body_partial(call, &read, &size))
                answer_errorf(call, owner, reply, "unknown session here: the handle was made by instance %s, but the load "
                              "balancer read only the first %" PRIu64 " of this request's %" PRIu64 " bytes, did not "
                              "see the handle, and sent the call to another instance: raise its buffer (HAProxy's "
                              "tune.bufsize) above the largest request, or send less in one call", tag, read, size);
        else if (str_id_other_instance(handle, m->config.tag, tag))
                answer_errorf(call, owner, reply, "unknown session: the handle was made by instance %s, which is gone or "
                              "unreachable, and its Python sessions with it; open a new one with session_open", tag);
        else
                answer_error(call, owner, reply, PYSESSION_UNKNOWN);
}

/* The call holds its slot: its code goes to the interpreter and its deadline runs from now. */
static void call_start(PySession *s) {
        PyCall *c = s->call;
        if (proc_freeze(s->proc, false) < 0) {
                session_kill(s, PYSESSION_END_ERROR, "cannot thaw the session for its call");
                return;
        }
        streams_resume(s);
        c->started = true;
        s->calls++;
        s->in_grace = false;
        py_end_scan_reset(&s->streams[0].scan);
        py_end_scan_reset(&s->streams[1].scan);
        c->t_release = now_usec();
        proc_write(s->proc, c->msg, c->msg_len, false);
        proc_timer_arm(s->proc, (uint64_t) mcp_call_args(c->call)->timeout_s * 1000000u);
}

static void on_slot_granted(SchedulerSlot *slot) {
        PyCall *c = container_of(slot, PyCall, slot);
        call_start(c->session);
}

static void session_call(PySessions *m, McpCall *call, void *owner, JobReplyFn reply) {
        const McpExecArgs *a = mcp_call_args(call);
        PySession *s = session_find(m, a->session);
        if (!s) {
                answer_unknown(m, call, owner, reply, a->session);
                return;
        }
        if (s->state == PYSESSION_BUSY) {
                answer_error(call, owner, reply, "the session is running another call; a session runs one call at a "
                                                 "time: wait for its answer, or open another session");
                return;
        }
        if (json_array_size(a->dependencies) > 0) {
                answer_error(call, owner, reply, "invalid argument 'dependencies': a session's dependencies are given "
                                                 "to session_open (installed once, for the session's whole life); "
                                                 "open a session with them, or call without the session");
                return;
        }
        const char *python = s->python_name ? s->python_name : m->env.python_name;
        if (a->python && python && strcmp(a->python, python) != 0) {
                answer_errorf(call, owner, reply, "invalid argument 'python': the session runs %s", python);
                return;
        }
        _cleanup_(call_freep) PyCall *c = calloc(1, sizeof(*c));
        if (!c) {
                answer_error(call, owner, reply, "mcp-execd is out of memory");
                return;
        }
        output_init(&c->output, m->env.max_output_bytes);
        c->owner = owner;
        c->reply = reply;
        if (str_random_hex(c->nonce, PYSESSION_NONCE_HEX / 2) < 0) {
                answer_error(call, owner, reply, "cannot make the call's nonce");
                return;
        }
        /* stdin goes first among the records, under a name no input file can have (they are relative):
         * the launcher gives it to this call's code as fd 0 and sys.stdin, and the next call none. */
        _cleanup_free_ ExecInputFile *records = NULL;
        const ExecInputFile *files = a->files;
        size_t n_files = a->n_files;
        if (a->stdin_len > 0) {
                records = calloc(a->n_files + 1, sizeof(*records));
                if (!records) {
                        answer_error(call, owner, reply, "mcp-execd is out of memory");
                        return;
                }
                records[0] = (ExecInputFile) { .name = PYSESSION_STDIN_RECORD, .data = a->stdin_data, .len = a->stdin_len };
                if (a->n_files)
                        memcpy(records + 1, a->files, a->n_files * sizeof(*records));
                files = records;
                n_files++;
        }
        c->msg = run_launcher_message(c->nonce, a->code, a->code_len, files, n_files, NULL, 0, &c->msg_len);
        if (!c->msg) {
                answer_error(call, owner, reply, "mcp-execd is out of memory");
                return;
        }
        c->call = call;
        c->session = s;
        c->slot.granted = on_slot_granted;
        c->t_queued = now_usec();
        int r = m->scheduler ? scheduler_slot_request(m->scheduler, &c->slot) : 1;
        if (r < 0) {
                char msg[512];
                scheduler_refusal_message(m->scheduler, r, msg, sizeof(msg));
                c->call = NULL;
                call_free(TAKE_PTR(c));
                answer_error(call, owner, reply, msg);
                return;
        }
        /* From here the session is busy: a second call is refused, the idle expiry waits. */
        s->call = TAKE_PTR(c);
        s->state = PYSESSION_BUSY;
        if (r > 0)
                call_start(s);
}

static void session_close(PySessions *m, McpCall *call, void *owner, JobReplyFn reply) {
        PySession *s = session_find(m, mcp_call_args(call)->session);
        if (!s) {
                answer_unknown(m, call, owner, reply, mcp_call_args(call)->session);
                return;
        }
        if (s->call) {
                /* Its caller is answered first, with what the call printed so far. */
                s->call->t_end = now_usec();
        }
        session_kill(s, PYSESSION_END_CLOSED, "closed");
        answer_json(call, owner, reply, json_pack("{s:b}", "closed", 1));
}

/* ---------------------------------------------------------------------------------------------
 * Idle and lifetime expiry. */

static void on_sweep(RingOp *op, int res) {
        PySessions *m = container_of(op, PySessions, op_sweep);
        if (m->stopped || res != -ETIME)
                return;
        uint64_t now = now_usec();
        LIST_FOREACH_SAFE(sessions, s, n, m->sessions) {
                if (s->state == PYSESSION_IDLE && now - s->t_last >= s->idle_usec)
                        session_kill(s, PYSESSION_END_IDLE, "idle timeout");
                else if (s->state != PYSESSION_DEAD &&
                         now - s->t_open >= (uint64_t) m->config.lifetime_s * 1000000u)
                        session_kill(s, PYSESSION_END_LIFETIME, "maximum lifetime (MCP_EXEC_PY_SESSION_LIFETIME_S)");
        }
        sweep_arm(m);
}

static void sweep_arm(PySessions *m) {
        if (m->stopped || m->op_sweep.busy || m->n_sessions == 0)
                return;
        m->sweep_ts = (struct __kernel_timespec) { .tv_sec = PYSESSION_SWEEP_USEC / 1000000,
                                                   .tv_nsec = (PYSESSION_SWEEP_USEC % 1000000) * 1000 };
        struct io_uring_sqe *sqe = ring_get_sqe(m->env.ring, &m->op_sweep);
        io_uring_prep_timeout(sqe, &m->sweep_ts, 0, 0);
}

/* ---------------------------------------------------------------------------------------------
 * The route table's operations (route.h): pysessions_route_vtable's serves[] says which calls come. */

static void pending_run(PySessions *m, McpCall *call, void *owner, JobReplyFn reply) {
        switch (mcp_call_args(call)->tool) {
        case MCP_TOOL_SESSION_OPEN:
                session_open(m, call, owner, reply, NULL);
                break;
        case MCP_TOOL_SESSION_CLOSE:
                session_close(m, call, owner, reply);
                break;
        default:
                session_call(m, call, owner, reply);
                break;
        }
}

/* Oldest first, as they came. */
static void on_pending(RingOp *op, int res) {
        PySessions *m = container_of(op, PySessions, op_pending);
        for (;;) {
                /* One at a time from the tail: an answer may change the list. */
                PyPending *q = NULL;
                LIST_FOREACH(pending, x, m->pending)
                        q = x;
                if (!q)
                        break;
                LIST_REMOVE(pending, m->pending, q);
                if (m->stopped)
                        answer_error(q->call, q->owner, q->reply, "mcp-execd is stopping");
                else
                        pending_run(m, q->call, q->owner, q->reply);
                free(q);
        }
}

static int hook_submit(void *userdata, McpCall *call, void *owner, JobReplyFn reply) {
        PySessions *m = userdata;
        if (m->stopped)
                return -EBUSY;
        PyPending *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        *q = (PyPending) { .call = call, .owner = owner, .reply = reply };
        LIST_PREPEND(pending, m->pending, q);
        if (!m->op_pending.busy)
                io_uring_prep_nop(ring_get_sqe(m->env.ring, &m->op_pending));
        return 0;
}

static PySession *session_of_call(PySessions *m, const void *owner, const char *id_key) {
        LIST_FOREACH(sessions, s, m->sessions) {
                if (s->call && s->call->owner == owner &&
                    (!id_key || strcmp(mcp_call_id_key(s->call->call), id_key) == 0))
                        return s;
                if (s->open_call && s->open_owner == owner &&
                    (!id_key || strcmp(mcp_call_id_key(s->open_call), id_key) == 0))
                        return s;
        }
        return NULL;
}

static PyPending *pending_find(PySessions *m, const void *owner, const char *id_key) {
        LIST_FOREACH(pending, q, m->pending)
                if (q->owner == owner && (!id_key || strcmp(mcp_call_id_key(q->call), id_key) == 0))
                        return q;
        return NULL;
}

static bool hook_has(void *userdata, const void *owner, const char *id_key) {
        PySessions *m = userdata;
        return pending_find(m, owner, id_key) || session_of_call(m, owner, id_key);
}

/* A cancelled call is never answered; its code is interrupted as at a deadline (the session lives if
 * it stops within the grace). A cancelled open ends the session being made. */
static bool hook_cancel(void *userdata, const void *owner, const char *id_key) {
        PySessions *m = userdata;
        bool any = false;
        PyPending *q;
        while ((q = pending_find(m, owner, id_key))) {
                LIST_REMOVE(pending, m->pending, q);
                q->reply(q->owner, NULL);
                mcp_call_free(q->call);
                free(q);
                any = true;
        }
        PySession *s;
        while ((s = session_of_call(m, owner, id_key))) {
                any = true;
                if (s->open_call && s->open_owner == owner) {
                        s->open_reply(s->open_owner, NULL);
                        s->open_call = mcp_call_free(s->open_call);
                        session_open_answered(s); /* before the kill, which may free s */
                        session_kill(s, PYSESSION_END_CANCELLED, "its open was cancelled");
                        continue;
                }
                s->call->reply(s->call->owner, NULL);
                s->call->owner = NULL;
                if (!s->call->started) {
                        /* Still waiting for a slot: it leaves the queue, the session never saw it. */
                        call_free(TAKE_PTR(s->call)); /* no record: as a queued run's cancel */
                        s->state = PYSESSION_IDLE;
                        s->t_last = now_usec();
                } else if (!s->in_grace && !s->call->ending) {
                        /* (ending: its code is over and frozen, the answer dropped when it comes) */
                        s->in_grace = true;
                        s->call->interrupted = true;
                        proc_interrupt(s->proc);
                        proc_timer_arm(s->proc, PYSESSION_GRACE_USEC);
                }
                if (id_key)
                        break;
        }
        return any;
}

/* Read at the scrape, not at a call's end: the kernel may reclaim a frozen session's memory between
 * calls. A killed session being reaped is no longer open, as at session_open's bound. */
static void hook_gauges(void *userdata, Metrics *metrics) {
        PySessions *m = userdata;
        uint64_t memory = 0;
        unsigned open = 0; /* as pysessions_count(), in the same walk */
        LIST_FOREACH(sessions, s, m->sessions) {
                CgroupUsage u;
                if (s->state == PYSESSION_DEAD)
                        continue;
                open++;
                if (proc_read_usage(s->proc, &u) >= 0)
                        memory += u.memory_current_bytes;
        }
        metrics_set_py_sessions(metrics, open, memory);
}

static void hook_shutdown(void *userdata, const char *reason) {
        pysessions_stop(userdata, reason);
}

const RouteVTable pysessions_route_vtable = {
        .name = "sessions",
        .serves = {
                [MCP_TOOL_EXEC] = ROUTE_SESSION,
                [MCP_TOOL_EXECUTE_PYTHON] = ROUTE_SESSION,
                [MCP_TOOL_SESSION_OPEN] = ROUTE_PLAIN | ROUTE_PYTHON,
                [MCP_TOOL_SESSION_CLOSE] = ROUTE_SESSION,
        },
        .submit = hook_submit,
        .has = hook_has,
        .cancel = hook_cancel,
        .shutdown = hook_shutdown,
        .gauges = hook_gauges,
};

/* ---------------------------------------------------------------------------------------------
 * The module. */

int pysessions_new(const PySessionsConfig *config, PySessions **ret) {
        _cleanup_free_ PySessions *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->config = *config;
        m->env = *config->env;
        m->config.env = NULL;
        m->op_sweep.callback = on_sweep;
        m->op_pending.callback = on_pending;
        static const char head[] = "_WARM = ()\n_SESSION = True\n";
        size_t ll = strlen(py_launch);
        m->launcher = malloc(sizeof(head) - 1 + ll + 1);
        if (!m->launcher)
                return -ENOMEM;
        memcpy(m->launcher, head, sizeof(head) - 1);
        memcpy(m->launcher + sizeof(head) - 1, py_launch, ll + 1);
        m->launcher_len = sizeof(head) - 1 + ll;
        /* One record with no data: the pipe is empty when it is written, the write is whole. */
        m->switch_msg = run_launcher_message(PYSESSION_SWITCH, "", 0, NULL, 0, NULL, 0, &m->switch_len);
        if (!m->switch_msg) {
                free(m->launcher);
                return -ENOMEM;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

void pysessions_attach(PySessions *m, Scheduler *s) {
        m->scheduler = s;
}

void pysessions_open_prepared(PySessions *m, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep) {
        if (m->stopped) {
                if (prep->release)
                        prep->release(prep->userdata);
                answer_error(call, owner, reply, "mcp-execd is stopping");
                return;
        }
        session_open(m, call, owner, reply, prep);
}

void pysessions_stop(PySessions *m, const char *reason) {
        if (!m || m->stopped)
                return;
        m->stopped = true;
        LIST_FOREACH_SAFE(sessions, s, n, m->sessions) {
                if (s->call && s->call->owner) {
                        /* Answered with the reason, not with a half result. */
                        PyCall *c = s->call;
                        uint64_t ms = c->started ? (now_usec() - c->t_release) / 1000u : 0;
                        call_record(s, c, &(ExecResult) { .exit_code = -SIGKILL, .duration_ms = ms }, true);
                        answer_error(TAKE_PTR(c->call), c->owner, c->reply, reason ? reason : "mcp-execd is stopping");
                        c->owner = NULL;
                        c->call = NULL;
                        call_free(TAKE_PTR(s->call));
                        s->state = PYSESSION_IDLE;
                }
                session_kill(s, PYSESSION_END_DAEMON_STOP, "mcp-execd is stopping");
        }
        if (m->op_sweep.busy)
                ring_cancel(m->env.ring, &m->op_sweep);
}

bool pysessions_busy(const PySessions *m) {
        if (!m)
                return false;
        /* An idle session may keep a read on the ring (one not yet back when its call ended): it is
         * not a call, and the teardown's drain of the ring waits for it after pysessions_stop(). */
        if (m->pending || m->op_pending.busy)
                return true;
        LIST_FOREACH(sessions, s, m->sessions)
                if (s->state == PYSESSION_OPENING || s->state == PYSESSION_BUSY || s->finish_pending)
                        return true;
        return false;
}

unsigned pysessions_count(const PySessions *m) {
        if (!m)
                return 0;
        unsigned open = 0; /* a killed one is no longer open, while its init is reaped */
        LIST_FOREACH(sessions, s, m->sessions)
                open += s->state != PYSESSION_DEAD;
        return open;
}

PySessions *pysessions_free(PySessions *m) {
        if (!m)
                return NULL;
        /* What is left (a teardown that gave up on the ring): killed and reaped, nothing leaks. */
        LIST_FOREACH_SAFE(sessions, s, n, m->sessions)
                if (!session_ops_busy(s)) {
                        s->state = PYSESSION_DEAD;
                        session_free(s);
                }
        PyPending *q;
        while ((q = LIST_POP(pending, m->pending))) {
                mcp_call_free(q->call);
                free(q);
        }
        free(m->launcher);
        free(m->switch_msg);
        free(m);
        return NULL;
}
