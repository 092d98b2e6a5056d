/* run.h: one execution, from its working directory to its result: spawn in the sandbox, feed
 * stdin, collect capped output, enforce the deadline, decide how it ended. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup.h"
#include "exec-result.h"
#include "output.h"
#include "outputs.h"
#include "pool.h"
#include "proc.h"
#include "proxy.h"
#include "ring.h"
#include "sandbox.h"

typedef struct Run Run;

/* Called once when the run has ended (or failed to start), on the loop. The callee decides what to
 * answer from run_result() / run_error() and then calls run_release(). */
typedef void (*RunDoneFn)(Run *run, void *userdata);

/* The launcher compiled by the default interpreter (issue 16.5): a cold run of that interpreter
 * stages its bytecode instead of its source and saves the compile. Empty until the interpreter probe
 * has answered (then the source is staged, as for every other interpreter). */
typedef struct RunLauncherCode {
        char *pyc;
        size_t pyc_len;
} RunLauncherCode;

typedef struct RunEnv {
        Ring *ring;
        Sandbox *sandbox;
        Cgroup *cgroup;          /* where runs are placed and accounted (backend none: rlimits) */
        const char *state_dir;   /* private directory for the runs' staging directories */
        const char *python;      /* resolved absolute path, or NULL if the interpreter was not found */
        const char *python_name; /* as configured, for error messages */
        uint64_t max_output_bytes;
        uint64_t max_return_bytes; /* outputs/ files returned, in total (MCP_EXEC_MAX_RETURN_BYTES) */
        uint64_t memory_max_bytes; /* a run's memory limit (MCP_EXEC_MEMORY_MAX); UINT64_MAX or 0 (unset): none */
        RunPool *pool;             /* ready sandboxes (issue 16), or NULL: every run is cold */
        const RunLauncherCode *launcher_code; /* the daemon's, or NULL */
        EgressProxy *egress;       /* serves the runs that may reach hosts (issue 32), or NULL: none may */
} RunEnv;

typedef struct RunParams {
        const char *code;
        size_t code_len;
        const char *stdin_data;
        size_t stdin_len;
        uint32_t timeout_s;
        uint64_t queue_ms;
        const char *python;  /* interpreter path inside the sandbox instead of env->python, or NULL */
        const char *env_dir; /* host directory bound read-only at SANDBOX_ENV_DIR (dependencies), or NULL */
        /* The caller's code (exec, execute_python), not one of our helpers: run through the
         * launcher (figures saved to outputs/), with its input files, and outputs/ read back. */
        bool user_code;
        const ExecInputFile *files; /* validated names; written to the working directory */
        size_t n_files;
        /* Whose call it is (mcp_call_principal(), "" or NULL for none): a tenant with a slice of its
         * own (cgroup_tenant_slice()) has its run's scope placed there, and so never takes a ready
         * sandbox (those wait in the daemon's slice). */
        const char *tenant;
        /* What the run may reach (issue 32), copied at the start: its sandbox then gets a listener
         * at 127.0.0.1:EGRESS_PROXY_PORT that env->egress serves (so it never takes a ready
         * sandbox, which has none). NULL: no network, as every run before. */
        const EgressPolicy *egress;
} RunParams;

/* How a sandboxed call ended, as its result says it: decided for a run by its facts (run-internal.h),
 * for a Python session's call by the session (whose interpreter may live on). */
typedef struct RunEnd {
        int exit_code;   /* Python's exit status; -N when signal N ended it; -1 when timed out or unknown */
        char signal[16]; /* "SIGKILL", "SIGSEGV", …; "" when it exited */
        bool oom_killed;     /* memory.events oom_kill: only the counters can tell (an OOM kill is a SIGKILL) */
        bool pids_limit_hit; /* pids.events max */
        uint64_t memory_peak_bytes, cpu_user_usec, cpu_system_usec;
        ExecAccount account; /* the kernel's account beyond CPU and memory (issue 33.1), cgroup only */
} RunEnd;

/* exit_code and signal from Python's wait status (waitpid(2)'s encoding), the rest of *e unchanged. */
void run_end_wait_status(int wait_status, RunEnd *e);

/* What a run's figures can be (issue 29.1): its CPU time at most its wall time on every CPU
 * (and a clock tick of slack for each of its processes' rounding), its memory peak at most its
 * limit. Figures the kernel gave are within these; one that is not is clamped and logged, before it
 * reaches a result, the journal or /metrics. Returns whether anything was clamped. */
bool run_end_bound(RunEnd *e, uint64_t wall_usec, uint64_t memory_max_bytes, const char *run_id);

/* The result of a call that ran in a sandbox, from what every such call has: its run id (its scope's
 * name and its files' URIs), its limits ("cgroup" or "rlimit", proc_limits()), its finished output
 * (output_finish()), the files of its outputs/ and how it ended. Points into them. The caller adds
 * what is its own: timed_out, the timing, warm, memory_at_start_bytes, extra. */
void run_result_build(const char *run_id, const char *limits, const Output *output, const Outputs *outputs,
                      const RunEnd *end, ExecResult *ret);

/* Reads back the files the code left in outputs/ of p's working directory, through p's root (its
 * init alive, not reaped), bounded by env->max_return_bytes, with the runs' host ids. Returns 0 or
 * -errno (ret is then empty). */
int run_outputs_read(const RunEnv *env, const Proc *p, Outputs *ret);

/* Starts a run. The params' bytes are copied. done is always called later (never from inside
 * run_start), also when the start failed. Returns 0 or -ENOMEM. */
int run_start(const RunEnv *env, const RunParams *params, RunDoneFn done, void *userdata, Run **ret);

/* Kills the run now (a cancellation or shutdown); done still follows. */
void run_kill(Run *run);

/* After done: NULL if the run produced a result (then fills *ret, pointing into the run), else an
 * explanation of the infrastructure failure for a tool error. */
const char *run_error(const Run *run);
void run_result(const Run *run, ExecResult *ret);
const char *run_id(const Run *run);

/* The output collected so far, for streaming it while the run goes on (output_stream_next()). */
const Output *run_output(const Run *run);

/* The run's systemd scope, or NULL (other backends, or not placed). */
const char *run_unit(const Run *run);

/* How long placing the run in its cgroup took (StartTransientUnit to the job's "done"), µs; 0 if
 * nothing was placed asynchronously. */
uint64_t run_place_usec(const Run *run);

/* Gives the run back: it frees itself once its last kernel operation has completed. */
void run_release(Run *run);

/* The functions above as a table, for a caller that takes them as a seam (the scheduler: its unit
 * tests start fake runs). Same contracts. */
typedef struct RunOps {
        int (*start)(const RunEnv *env, const RunParams *params, RunDoneFn done, void *userdata, Run **ret);
        void (*kill)(Run *run);
        const char *(*error)(const Run *run);
        void (*result)(const Run *run, ExecResult *ret);
        const char *(*id)(const Run *run);
        const char *(*unit)(const Run *run);
        uint64_t (*place_usec)(const Run *run);
        void (*release)(Run *run);
        const Output *(*output)(const Run *run); /* NULL: a fake without output to stream */
} RunOps;

/* Runs in the sandbox: run_start(), run_kill(), … */
extern const RunOps run_ops_sandbox;
