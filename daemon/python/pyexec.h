/* pyexec.h: the tools of mcp-python-exec-sandbox's interface (execute_python, validate_script,
 * check_environment) and the choice of interpreter: the configured interpreters and their probes,
 * the PEP 723 metadata (parsed in the sandbox by a helper with a real TOML parser), dependency
 * environments (envs.h), then the run through the scheduler. */
#pragma once

#include "cgroup.h"
#include "config.h"
#include "envs.h"
#include "run.h"
#include "sandbox.h"
#include "scheduler.h"

typedef struct PyExec PyExec;

/* Resolves the configured interpreters (MCP_EXEC_PYTHONS, else MCP_EXEC_PYTHON) and probes each
 * inside the sandbox (version, implementation), running the loop until done: call at start only.
 * envs may be NULL (no dependency source configured). Returns 0 or -errno (-ENOMEM). */
int pyexec_new(const RunEnv *env, const Config *config, Cgroup *cgroup, Envs *envs, const char *version,
               PyExec **ret);
PyExec *pyexec_free(PyExec *px);

/* pyexec_new() with the dependency cache made from the configuration (none when no source is
 * configured; else MCP_EXEC_ENV_CACHE_DIR, $CACHE_DIRECTORY, /var/cache/mcp-execd as root, or
 * ~/.cache/mcp-execd), owned by the PyExec. Logs what failed. */
int pyexec_setup(const RunEnv *env, const Config *config, Cgroup *cgroup, const char *version, PyExec **ret);

/* Routes the scheduler's non-exec calls (and exec calls that choose an interpreter) through px. */
void pyexec_attach(PyExec *px, Scheduler *scheduler);

/* For the tool descriptions (McpLimits): "python3,pypy3" (the default first), and where dependencies
 * come from (NULL when no source is configured). Owned by px. */
const char *pyexec_names(const PyExec *px);
const char *pyexec_sources(const PyExec *px);

/* A bare name is looked up in SANDBOX_PATH, where the sandbox can see it, not in our own PATH (which
 * may point into home directories the sandbox hides). Returns a malloc'd absolute path or NULL. */
char *python_resolve(const char *name);
