/* spawn.h: a sandbox whose Python runs our launcher (launch.py) with a prefix line of ours, the one
 * way both the pool's ready sandboxes and the Python sessions are made (issues 16 and 18). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cgroup.h"
#include "mcp.h"
#include "sandbox.h"

typedef struct RunLauncherSpec {
        Sandbox *sandbox;
        const char *python;   /* resolved interpreter path */
        const char *env_dir;  /* host directory bound read-only at SANDBOX_ENV_DIR (a session's
                               * dependencies; python is then SANDBOX_ENV_DIR "/bin/python"), or NULL */
        const char *staging;  /* host directory to create (0700) holding only the launcher */
        const char *launcher; /* the launcher's text: a first line of ours, then launch.py */
        size_t launcher_len;
        CgroupRun *cgroup;    /* its scope or cgroup (the init in supervisor/), or NULL: rlimits */
        bool background;      /* made at nice 19 (rlimit mode only, see SandboxRunSpec) */
} RunLauncherSpec;

/* The daemon's ends of the sandbox's three pipes and its init, held (not released yet). */
typedef struct RunLauncher {
        SandboxChild child;
        int stdin_fd, stdout_fd, stderr_fd;
} RunLauncher;

/* Creates spec->staging with the launcher in it, the pipes, and spawns the sandbox, held. On failure
 * the staging directory is removed again and nothing is left. Returns 0 or -errno. The caller
 * removes staging once the init has copied it (the launcher started) or the sandbox is gone. */
int run_launcher_spawn(const RunLauncherSpec *spec, RunLauncher *ret);

/* The message launch.py reads for one call (_warm_read()): an 8-byte little-endian length of the
 * records, then one record per file (4-byte name length, 8-byte data length, both little-endian,
 * the name, the data): first `first` with the code (main.py for a run, the call's nonce for a
 * Python session), then the input files; then tail (the caller's stdin), not counted in the
 * length. Returns a malloc'd buffer and its length in *ret_len, or NULL on ENOMEM. */
char *run_launcher_message(const char *first, const char *code, size_t code_len, const McpInputFile *files,
                           size_t n_files, const char *tail, size_t tail_len, size_t *ret_len);

/* The prefix for launch.py's warm mode: `_WARM = ("mod", …)\n` from a comma-separated module list
 * (names checked by the configuration: [A-Za-z0-9_.]). malloc'd, or NULL. */
char *run_launcher_warm_head(const char *modules);
