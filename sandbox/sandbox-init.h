/* sandbox-init.h: what the run's setup (a copy of the daemon, sandbox.c) hands the run's PID 1
 * program (sandbox-init.c) when it execs it. Not an API. */
#pragma once

#include <stdint.h>

#include "sandbox.h"

/* What the mount helper or the Python child writes to exec_fd, one whole record per write (smaller
 * than PIPE_BUF: atomic, so every read returns whole records):
 * - err != 0: a step failed (step names it); the writer exits 127;
 * - err == 0: the Python child's own CPU time so far, which built the run's root (it did the mount
 *   helper's work itself: SpawnPlan.mount_in_child), not the run's: subtracted from what is reported
 *   as the helper's is.
 * EOF on exec_fd (every write end gone: the helper exited, or Python's execve closed its O_CLOEXEC
 * end) means success. */
typedef struct SandboxChildError {
        int32_t err;
        char step[SANDBOX_REPORT_DETAIL_MAX];
        uint64_t utime_usec, stime_usec;
} SandboxChildError;

/* argv of the init program, all decimal: no pointer and no string of the daemon crosses the exec. */
enum {
        SANDBOX_INIT_ARG_CONTROL_FD = 1, /* SOCK_SEQPACKET to the daemon: SandboxReport messages out */
        SANDBOX_INIT_ARG_EXEC_FD,        /* the Python child's SandboxChildError pipe (read end) */
        SANDBOX_INIT_ARG_PYTHON_PID,     /* Python's pid in the run's PID namespace */
        SANDBOX_INIT_ARG_BASE_UTIME,     /* RUSAGE_CHILDREN before Python (the mount helper's): */
        SANDBOX_INIT_ARG_BASE_STIME,     /* not the run's, subtracted from what is reported */
        SANDBOX_INIT_ARG_GO_FD,          /* the go pipe's write end: closing it lets Python exec */
        SANDBOX_INIT_ARGC,
};
