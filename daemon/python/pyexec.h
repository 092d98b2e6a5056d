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
 * interpreter and exec's (env->python). Makes the dependency cache from the configuration (none
 * when no source is configured; else MCP_EXEC_ENV_CACHE_DIR, $CACHE_DIRECTORY, /var/cache/mcp-execd
 * as root, or ~/.cache/mcp-execd). Logs what failed. Returns 0 or -errno. Nothing may be served
 * before pyexec_probe_start()'s callback. */
int pyexec_new(const RunEnv *env, const Config *config, Cgroup *cgroup, const char *version, PyExec **ret);
PyExec *pyexec_free(PyExec *px);

/* r: 0, or -ENOMEM when what the probes found could not be kept. */
typedef void (*PyExecProbedFn)(void *userdata, int r);

/* Probes each interpreter path once inside the sandbox (version, implementation, importable
 * packages), all at the same time, on the loop: call once, at start, after sandbox_check(). done is
 * called once every probe has answered (a failed probe is no error: the interpreter is then
 * refused with why), from the loop, or from here when there is nothing to probe; what was found
 * is logged then. Returns 0, or -errno when a probe could not be started (done is then never
 * called; those started still complete: pyexec_busy()). */
int pyexec_probe_start(PyExec *px, PyExecProbedFn done, void *userdata);

/* Kills the probes still running (a stop during the start); done still comes, with what they
 * report, which is not logged (the probes did not fail, they were stopped). */
void pyexec_probe_stop(PyExec *px);

/* Refuses local dependency sources (MCP_EXEC_WHEELHOUSE, a file:// MCP_EXEC_INDEX_URL) that the
 * installer's user cannot read (envs_sources_check()): logs the message naming the variable, the
 * path and the uid. Call at start, before anything is served. Returns 0 or -errno. */
int pyexec_sources_check(const Config *config);
DEFINE_POINTER_CLEANUP(PyExec, pyexec_free)

/* The scheduler that runs what px prepared. Once, before px joins the route table. */
void pyexec_attach(PyExec *px, Scheduler *scheduler);

/* The unit tests' seam: helper runs (the probes, the metadata parser, the syntax check) started
 * through ops (fakes) instead of run.c's run_ops_sandbox. Before anything is started. */
void pyexec_set_run_ops(PyExec *px, const RunOps *ops);

/* The calls px serves (route.h; userdata: the PyExec): execute_python, validate_script,
 * check_environment, and exec naming an interpreter. */
extern const RouteVTable pyexec_route_vtable;

/* session_open with `python` or `dependencies` (issue 18). daemon/pysession/ serves session_open and
 * hands such a call to pyexec_session_prepare() (the daemon joins the two: they do not know each
 * other); we resolve the interpreter and install the environment exactly as for execute_python (the
 * same helper, key and cache), then hand the call back to open instead of the scheduler, with prep:
 * python (its path inside the sandbox), env_dir (held until prep->release), extra ({python,
 * python_version, dependencies, environment}, execute_python's). open takes the call and prep's
 * release in every case; it is called from the loop. Until it is set, such a call gets a tool
 * error. Cancellation and shutdown reach the call while it is ours through the route table, as
 * every call being prepared. pyexec_session_prepare() has RouteVTable.submit's contract. */
int pyexec_session_prepare(PyExec *px, McpCall *call, void *owner, JobReplyFn reply);
typedef void (*PyExecSessionOpenFn)(void *userdata, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep);
void pyexec_set_session_open(PyExec *px, PyExecSessionOpenFn open, void *userdata);

/* check_environment's count of the Python sessions open now (daemon/pysession/ is not ours: the
 * daemon passes its count here once both exist). Without it the count is not shown. */
void pyexec_set_py_sessions(PyExec *px, unsigned (*count)(const void *userdata), const void *userdata);

/* check_environment's auth.limits: the bounds of the caller's own tenant (never another's), as a new
 * JSON object, or NULL (no tenant, no memory). The tenants are the daemon's: it passes this. */
typedef struct json_t *(*PyExecTenantLimitsFn)(void *userdata, const char *tenant);
void pyexec_set_tenant_limits(PyExec *px, PyExecTenantLimitsFn fn, void *userdata);

/* Whether a job or a probe is still in flight (its helper run killed, its no-op not yet
 * completed): px must stay until it is not. */
bool pyexec_busy(const PyExec *px);

/* For the tool descriptions (McpLimits): "python3,pypy3" (the default first), and where dependencies
 * come from (NULL when no source is configured). Owned by px. */
const char *pyexec_names(const PyExec *px);
const char *pyexec_sources(const PyExec *px);

/* What the probe found of exec's interpreter (MCP_EXEC_PYTHON), for the descriptions: its version
 * and its importable packages as "PyYAML, Jinja2, numpy" ("" for none); NULL when it was not found
 * or its probe failed, or before the probe has answered. check_environment reports the same probe.
 * Owned by px. */
const char *pyexec_version(const PyExec *px);
const char *pyexec_packages(const PyExec *px);
/* The runs' launcher compiled by exec's interpreter (RunEnv.launcher_code), or NULL: not found, its
 * probe failed or has not answered, or it could not compile it. Owned by px. */
const RunLauncherCode *pyexec_launcher_code(const PyExec *px);

/* A bare name is looked up in SANDBOX_PATH, where the sandbox can see it, not in our own PATH (which
 * may point into home directories the sandbox hides). Returns a malloc'd absolute path or NULL. */
char *python_resolve(const char *name);
