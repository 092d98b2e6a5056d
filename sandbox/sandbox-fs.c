/* sandbox-fs.c: the run's view of the filesystem (phase 1: the staging directory as cwd). */
#include <errno.h>

#include "sandbox-internal.h"

int sandbox_fs_plan(const Sandbox *s, const SandboxRunSpec *spec, SpawnPlan *plan) {
        plan->workdir = spec->staging_dir;
        return 0;
}

int sandbox_fs_prepare(SpawnPlan *plan) {
        return 0;
}

int sandbox_fs_setup(SpawnPlan *plan) {
        return 0;
}
