/* envs.h: the cache of dependency environments: content-addressed venvs installed once by a
 * confined child process (pip, or uv when on PATH) driven from the io_uring loop, mounted read-only
 * into the runs that need them, size-bounded with least-recently-used eviction, kept across
 * restarts. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup.h"
#include "ring.h"
#include "sandbox.h"

struct json_t;

typedef struct Envs Envs;

typedef struct EnvsConfig {
        Ring *ring;
        const char *dir;              /* the cache root (created 0755): envs/, tmp/, trash/ */
        uint64_t max_bytes;           /* MCP_EXEC_ENV_CACHE_MAX */
        uint32_t timeout_s;           /* MCP_EXEC_INSTALL_TIMEOUT_S */
        uint32_t max_installs;        /* installers at once (MCP_EXEC_MAX_CONCURRENT); the others wait; 0: no bound */
        const char *index_url;        /* MCP_EXEC_INDEX_URL or NULL */
        const char *wheelhouse;       /* MCP_EXEC_WHEELHOUSE or NULL */
        const char *installer_python; /* absolute path of a python3 with pip (Debian's python3-pip) */
        const char *uv;               /* absolute path of uv, or NULL to use pip */
        Cgroup *cgroup;               /* each install gets its own run cgroup (a scope under systemd), or
                                       * NULL / backend none: only its process group */
        /* Starts the confined installer; NULL (every caller but a test) is sandbox_spawn_installer().
         * The seam the unit test drives the cache through, without pip and without namespaces. */
        int (*spawn_installer)(const SandboxInstallSpec *spec, SandboxInstaller *ret);
} EnvsConfig;

/* Creates the cache's directories and removes what an earlier instance left half-done (tmp/,
 * trash/). Returns 0 or -errno with *reterr (malloc'd) saying what failed. */
int envs_new(const EnvsConfig *config, Envs **ret, char **reterr);

/* The local directory of a file:// index URL (percent-decoded), malloc'd; NULL with errno EINVAL
 * for any other URL, ENOMEM. */
char *envs_index_path(const char *index_url);

/* Whether the installer's user can read the local sources (the wheelhouse, a file:// index) it
 * will be given: at start, so that a directory it cannot read is refused with a message naming the
 * variable, the path and the uid instead of failing every install with pip's "Permission denied"
 * (issue 15, 7c). Returns 0, or -errno with a malloc'd message in *reterr. */
int envs_sources_check(const char *index_url, const char *wheelhouse, char **reterr);
Envs *envs_free(Envs *e);
DEFINE_POINTER_CLEANUP(Envs, envs_free)

/* One environment: key (hex, from the interpreter's identity and the normalized sorted
 * requirements), and what it is made of. */
typedef struct EnvRequest {
        const char *key;
        const char *python_name;
        const char *interpreter;        /* absolute path */
        const char *python_version;
        const char *const *requirements; /* NULL-terminated */
} EnvRequest;

typedef struct EnvWaiter EnvWaiter;

/* Called once from the loop: dir is the environment's host directory (held: the caller must
 * envs_release(key) when its run is over), or NULL and error says why (pip's own message).
 * reused: it was already installed; install_ms: how long the install this caller waited for
 * took (0 when reused). */
typedef void (*EnvReadyFn)(void *userdata, const char *dir, const char *error, bool reused, uint64_t install_ms);

/* Finds or installs the environment. Concurrent requests for the same key wait for one install.
 * The callback always comes later, from the loop. Returns 0 or -ENOMEM. */
int envs_acquire(Envs *e, const EnvRequest *req, EnvReadyFn ready, void *userdata, EnvWaiter **ret);

/* Called once from the loop: output holds one JSON line per requirement ({requirement, ok,
 * message}), or error says why the check could not run. */
typedef void (*EnvCheckFn)(void *userdata, const char *output, const char *error);

/* Asks the source whether each requirement can be satisfied (pip install --dry-run --no-deps),
 * without installing anything. Returns 0 or -ENOMEM. */
int envs_check(Envs *e, const EnvRequest *req, EnvCheckFn done, void *userdata, EnvWaiter **ret);

/* The caller lost interest (a cancellation): its callback will not be called. An install others
 * wait for goes on; one nobody waits for still completes (it is cached). */
void envs_waiter_cancel(EnvWaiter *w);

/* The daemon stops: every install in flight is killed now, so that its operations on the ring
 * complete (and it is freed) during the teardown's drain, not left to envs_free() with operations
 * still in flight; nothing more is started (a pending or new install fails). Idempotent. */
void envs_stop(Envs *e);

/* A run that used the environment is over: it may be evicted again. */
void envs_release(Envs *e, const char *key);

/* The cache as a JSON object (for check_environment): dir, max_bytes, size_bytes, installs
 * (completed by this instance), entries [{key, python, requirements, size_bytes, last_used}].
 * A new reference, or NULL on ENOMEM. */
struct json_t *envs_describe(Envs *e);
