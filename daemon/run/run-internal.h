/* run-internal.h: the run's decisions that need no sandbox, shared by run.c and its unit test only
 * (no other folder includes it). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup.h"
#include "run.h"

/* What is known of a run once it is over: our own flags, the init's report, the cgroup's counters. */
typedef struct RunEndFacts {
        bool timed_out;     /* our deadline fired before Python's exit was reported (then we killed it) */
        bool exit_reported; /* the init reported Python's wait status */
        int wait_status;    /* that status, in waitpid(2)'s encoding */
        const CgroupStats *stats; /* the run cgroup's counters, or NULL: none read (rlimits, a failed read) */
        /* The init's getrusage(RUSAGE_CHILDREN) from the same report (used without counters). */
        uint64_t utime_usec, stime_usec, maxrss_bytes;
        /* CPU a ready sandbox had spent before the call (the preload): not the call's, subtracted
         * from the init's figures (rlimits: its launcher's own, when it became ready) or from the
         * counters (payload/'s cpu.stat when the call took it). 0 for a cold run. */
        uint64_t preload_utime_usec, preload_stime_usec;
        /* ... and payload/'s kernel account then (pool.c); NULL for a cold run, whose cgroup is its own. */
        const ExecAccount *preload_account;
        /* What a ready sandbox had when the call was released (rlimits: the launcher's resident
         * memory when ready; cgroup: payload/'s memory.current when taken); 0 for a cold run. */
        uint64_t memory_at_start_bytes;
} RunEndFacts;

/* Decides how a run ended from its facts, never from the exit signal alone: a deadline kill and an
 * OOM kill are both SIGKILL, told apart by timed_out and the counters. */
void run_end_decide(const RunEndFacts *f, RunEnd *ret);
