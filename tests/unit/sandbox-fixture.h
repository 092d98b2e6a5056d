/* sandbox-fixture.h: the unit tests' real sandbox (test-run, test-proc): rlimit mode (no cgroup), one
 * ring and a private state directory; on a machine that refuses namespaces, a note to skip. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "ring.h"
#include "sandbox.h"

typedef struct SandboxFixture {
        Sandbox *sandbox;
        Cgroup *cgroup; /* backend none: the processes get rlimits (0: left unset) and the init's rusage */
        Ring *ring;
        char state_dir[32];
        bool none; /* no sandbox here: the tests that need one skip */
} SandboxFixture;

/* Sets f up, or sets f->none (a container without user namespaces: skipped, not failed). */
static inline void sandbox_fixture_setup(SandboxFixture *f) {
        _cleanup_free_ char *reason = NULL;
        *f = (SandboxFixture) { .state_dir = "/tmp/test-sandbox-XXXXXX" };
        int r = sandbox_new(&(SandboxConfig) { .tmp_size_bytes = 8u << 20, .cpu_threads = 1, .rlimit_nproc = 64 },
                            &f->sandbox, &reason);
        if (r < 0) {
                fprintf(stderr, "no sandbox here, skipping what needs one: %s\n", reason ?: strerror(-r));
                f->none = true;
                return;
        }
        _cleanup_free_ char *why = NULL;
        if (cgroup_new(&(CgroupConfig) { .want = CGROUP_WANT_NONE }, &f->cgroup, &why) < 0 ||
            ring_new(64, &f->ring) < 0 || !mkdtemp(f->state_dir))
                abort();
        (void) signal(SIGPIPE, SIG_IGN); /* as the daemon: a process that stops reading stdin */
}

/* Frees f. Returns -1 when the state directory is not empty (a staging directory left behind). */
static inline int sandbox_fixture_teardown(SandboxFixture *f) {
        if (f->none)
                return 0;
        f->ring = ring_free(f->ring);
        int r = NEG_ERRNO(rmdir(f->state_dir));
        f->cgroup = cgroup_free(f->cgroup);
        f->sandbox = sandbox_free(f->sandbox);
        return r < 0 ? -1 : 0;
}
