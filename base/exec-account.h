/* exec-account.h: the kernel's account of a run beyond its CPU time and memory peak (issue 33.1):
 * how long its tasks stalled waiting for CPU, memory and I/O (pressure stall information), the bytes
 * it read from and wrote to block devices, and the most tasks it had at once. cgroup/ reads it from
 * the run's cgroup, run/ and pysession/ make a call's figures of it, mcp/ and metrics/ report it.
 * Plain data: nothing of the caller's code can write it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef enum ExecAccountField {
        EXEC_ACCOUNT_CPU_PRESSURE_SOME_US,    /* cpu.pressure "some" total */
        EXEC_ACCOUNT_MEMORY_PRESSURE_SOME_US, /* memory.pressure "some" total */
        EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US, /* memory.pressure "full" total */
        EXEC_ACCOUNT_IO_PRESSURE_SOME_US,     /* io.pressure "some" total */
        EXEC_ACCOUNT_IO_PRESSURE_FULL_US,     /* io.pressure "full" total */
        EXEC_ACCOUNT_IO_READ_BYTES,           /* io.stat rbytes, every device */
        EXEC_ACCOUNT_IO_WRITE_BYTES,          /* io.stat wbytes, every device */
        EXEC_ACCOUNT_PIDS_PEAK,               /* pids.peak */
        _EXEC_ACCOUNT_MAX,
} ExecAccountField;

/* A field is known when its bit is set: where the kernel has no such file (rlimit mode; PSI
 * disabled; the io controller not enabled; pids.peak before Linux 6.1) it is not, and is reported
 * as null (result) or left out (journal). Zero-initialised: nothing known. */
typedef struct ExecAccount {
        uint64_t v[_EXEC_ACCOUNT_MAX];
        uint32_t known; /* 1u << field */
} ExecAccount;

/* The result's key ("cpu_pressure_some_us"); the journal field is the same in capitals. */
const char *exec_account_name(ExecAccountField f);
/* The journal field ("CPU_PRESSURE_SOME_US"). */
const char *exec_account_field(ExecAccountField f);
/* A peak (pids.peak) is a high-water mark, not a sum: a part of a cgroup's life has no peak of
 * its own, the whole's stands for it. */
bool exec_account_is_peak(ExecAccountField f);

static inline bool exec_account_known(const ExecAccount *a, ExecAccountField f) {
        return a->known & (UINT32_C(1) << f);
}
static inline void exec_account_set(ExecAccount *a, ExecAccountField f, uint64_t v) {
        a->v[f] = v;
        a->known |= UINT32_C(1) << f;
}

/* What accrued between base and now (the counters only grow): a sum's difference (0 if now is
 * below base), a peak as now has it; known where both are (base NULL: now itself). */
void exec_account_since(const ExecAccount *now, const ExecAccount *base, ExecAccount *ret);
