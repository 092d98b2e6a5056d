/* spawn.h: a sandbox whose Python runs our launcher (launch.py) with a prefix line of ours, the one
 * way both the pool's ready sandboxes and the Python sessions are made (issues 16 and 18). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cgroup.h"
#include "exec-result.h"
#include "proc.h"

typedef struct RunLauncherSpec {
        const char *python;   /* resolved interpreter path */
        const char *env_dir;  /* host directory bound read-only at SANDBOX_ENV_DIR (a session's
                               * dependencies; python is then SANDBOX_ENV_DIR "/bin/python"), or NULL */
        const char *staging;  /* host directory to create (0700) holding only the launcher */
        const char *launcher; /* the launcher's text: a first line of ours, then launch.py */
        size_t launcher_len;
        bool background;      /* made at nice 19 (rlimit mode only, see SandboxRunSpec) */
        uint16_t egress_port; /* a listener for the egress proxy in its namespace (ProcSpawn), or 0 */
} RunLauncherSpec;

/* Makes spec->staging the proc's staging directory with the launcher in it, and spawns the proc's
 * sandbox, held (proc_spawn()). Returns 0 or -errno; the proc removes the staging directory once
 * the init has copied it, or when it is freed. */
int run_launcher_spawn(Proc *p, const RunLauncherSpec *spec);

/* The message launch.py reads for one call (_warm_read()): an 8-byte little-endian length of the
 * records, then one record per file (4-byte name length, 8-byte data length, both little-endian,
 * the name, the data): first `first` with the code (main.py for a run, the call's nonce for a
 * Python session), then the input files; then tail (the caller's stdin), not counted in the
 * length. Returns a malloc'd buffer and its length in *ret_len, or NULL on ENOMEM. */
char *run_launcher_message(const char *first, const char *code, size_t code_len, const ExecInputFile *files,
                           size_t n_files, const char *tail, size_t tail_len, size_t *ret_len);

/* The prefix for launch.py's warm mode: `_WARM = ("mod", …)\n` from a comma-separated module list
 * (names checked by the configuration: [A-Za-z0-9_.]). malloc'd, or NULL. */
char *run_launcher_warm_head(const char *modules);
