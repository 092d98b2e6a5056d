/* pyexec.h: the tools of mcp-python-exec-sandbox's interface (execute_python, validate_script,
 * check_environment) and the choice of interpreter: the configured interpreters and their probes,
 * the PEP 723 metadata (parsed in the sandbox by a helper with a real TOML parser), dependency
 * environments (envs.h), then the run through the scheduler. */
#pragma once

#include "cgroup.h"
#include "cleanup.h"
#include "config.h"
#include "envs.h"
#include "run.h"
#include "sandbox.h"
#include "scheduler.h"

typedef struct PyExec PyExec;

/* Resolves the configured interpreters (MCP_EXEC_PYTHONS, else MCP_EXEC_PYTHON), the tools
 * interpreter and exec's (env->python), and probes each path once inside the sandbox (version,
 * implementation, importable packages), running the loop until every probe has answered: call at
 * start only. Makes the dependency cache from the configuration (none when no source is
 * configured; else MCP_EXEC_ENV_CACHE_DIR, $CACHE_DIRECTORY, /var/cache/mcp-execd as root, or
 * ~/.cache/mcp-execd). Logs what it found and what failed. Returns 0 or -errno. */
int pyexec_new(const RunEnv *env, const Config *config, Cgroup *cgroup, const char *version, PyExec **ret);
PyExec *pyexec_free(PyExec *px);

/* Refuses local dependency sources (MCP_EXEC_WHEELHOUSE, a file:// MCP_EXEC_INDEX_URL) that the
 * installer's user cannot read (envs_sources_check()): logs the message naming the variable, the
 * path and the uid. Call at start, before anything is served. Returns 0 or -errno. */
int pyexec_sources_check(const Config *config);
DEFINE_POINTER_CLEANUP(PyExec, pyexec_free)

/* Routes the scheduler's non-exec calls (and exec calls that choose an interpreter) through px. */
void pyexec_attach(PyExec *px, Scheduler *scheduler);

/* Whether a job is still in flight (its helper run killed, its no-op not yet completed): px must
 * stay until it is not. */
bool pyexec_busy(const PyExec *px);

/* For the tool descriptions (McpLimits): "python3,pypy3" (the default first), and where dependencies
 * come from (NULL when no source is configured). Owned by px. */
const char *pyexec_names(const PyExec *px);
const char *pyexec_sources(const PyExec *px);

/* What the probe found of exec's interpreter (MCP_EXEC_PYTHON), for the descriptions: its version
 * and its importable packages as "PyYAML, Jinja2, numpy" ("" for none); NULL when it was not found
 * or its probe failed. check_environment reports the same probe. Owned by px. */
const char *pyexec_version(const PyExec *px);
const char *pyexec_packages(const PyExec *px);

/* A bare name is looked up in SANDBOX_PATH, where the sandbox can see it, not in our own PATH (which
 * may point into home directories the sandbox hides). Returns a malloc'd absolute path or NULL. */
char *python_resolve(const char *name);
