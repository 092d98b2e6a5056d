/* exec-account.c: the names of a run's kernel account, one table. */
#include <stddef.h>

#include "exec-account.h"

static const struct {
        const char *name, *field;
        bool peak;
} fields[_EXEC_ACCOUNT_MAX] = {
        [EXEC_ACCOUNT_CPU_PRESSURE_SOME_US] = { "cpu_pressure_some_us", "CPU_PRESSURE_SOME_US" },
        [EXEC_ACCOUNT_MEMORY_PRESSURE_SOME_US] = { "memory_pressure_some_us", "MEMORY_PRESSURE_SOME_US" },
        [EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US] = { "memory_pressure_full_us", "MEMORY_PRESSURE_FULL_US" },
        [EXEC_ACCOUNT_IO_PRESSURE_SOME_US] = { "io_pressure_some_us", "IO_PRESSURE_SOME_US" },
        [EXEC_ACCOUNT_IO_PRESSURE_FULL_US] = { "io_pressure_full_us", "IO_PRESSURE_FULL_US" },
        [EXEC_ACCOUNT_IO_READ_BYTES] = { "io_read_bytes", "IO_READ_BYTES" },
        [EXEC_ACCOUNT_IO_WRITE_BYTES] = { "io_write_bytes", "IO_WRITE_BYTES" },
        [EXEC_ACCOUNT_PIDS_PEAK] = { "pids_peak", "PIDS_PEAK", .peak = true },
};

const char *exec_account_name(ExecAccountField f) {
        return f >= 0 && f < _EXEC_ACCOUNT_MAX ? fields[f].name : NULL;
}

const char *exec_account_field(ExecAccountField f) {
        return f >= 0 && f < _EXEC_ACCOUNT_MAX ? fields[f].field : NULL;
}

bool exec_account_is_peak(ExecAccountField f) {
        return f >= 0 && f < _EXEC_ACCOUNT_MAX && fields[f].peak;
}

void exec_account_since(const ExecAccount *now, const ExecAccount *base, ExecAccount *ret) {
        ExecAccount a = {};
        for (ExecAccountField f = 0; f < _EXEC_ACCOUNT_MAX; f++) {
                if (!exec_account_known(now, f))
                        continue;
                if (exec_account_is_peak(f) || !base)
                        exec_account_set(&a, f, now->v[f]);
                else if (exec_account_known(base, f))
                        exec_account_set(&a, f, now->v[f] > base->v[f] ? now->v[f] - base->v[f] : 0);
        }
        *ret = a;
}
