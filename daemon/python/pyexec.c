/* pyexec.c: execute_python, validate_script and check_environment, the interpreter registry, and
 * the preparation of a session_open that names an interpreter or has dependencies (pyexec.h).
 * A call is prepared in steps, each an asynchronous operation on the loop: the PEP 723 metadata
 * helper (a sandboxed run of the tools interpreter with tomllib and packaging), the syntax check
 * (a sandboxed run of the chosen interpreter), the source check or the environment (envs.c), and
 * finally the run itself, handed to the scheduler. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cleanup.h"
#include "list.h"
#include "log.h"
#include "pyexec.h"
#include "py-helpers.h"
#include "py-launch.h"
#include "sandbox.h"
#include "str-util.h"

/* The helpers are small, but the machine may be loaded: bounded, never unbounded. */
#define HELPER_TIMEOUT_S 30
#define HELPER_OUTPUT_MAX_BYTES (4u << 20)
#define STDERR_TAIL_BYTES 2000

typedef struct PyInterp {
        char *name;
        char *path;    /* absolute; the sandbox binds /usr, so the same path inside */
        char *version; /* language version, e.g. 3.9.16 for PyPy 7.3 */
        char *implementation;
        char *id;      /* path, implementation and version: part of every environment key */
        bool metadata_tools; /* has tomllib and packaging */
        json_t *packages;    /* importable packages (array), probed at start; NULL when not probed */
        char *error;   /* why it cannot be used, or NULL */
        RunLauncherCode launcher; /* launch.py compiled by it (the probe), or empty */
} PyInterp;

typedef enum PyStep {
        STEP_NONE,
        STEP_META,
        STEP_COMPILE,
        STEP_CHECK,
        STEP_ENV,
        STEP_NOP,
} PyStep;

typedef struct PyJob PyJob;

/* One interpreter probe in flight. */
typedef struct ProbeWait {
        PyExec *px;
        PyInterp *interp;
        Run *run;
} ProbeWait;

struct PyExec {
        RunEnv env;        /* the scheduler's, for helper runs (a larger output cap) */
        const RunOps *run_ops; /* how helper runs are started: run.c's, or a unit test's fakes */
        const Config *config;
        Cgroup *cgroup;
        Envs *envs;
        Scheduler *scheduler;
        PyInterp interps[CONFIG_PYTHONS_MAX];
        size_t n_interps;
        PyInterp tools;    /* the interpreter that runs the metadata helper (python3 ≥ 3.11) */
        PyInterp exec;     /* MCP_EXEC_PYTHON: what exec runs without `python` (its description) */
        char *names;
        char *sources;
        char *packages;    /* exec's packages as its description names them: "PyYAML, numpy" */
        char *version;
        PyJob *jobs;
        ProbeWait probes[CONFIG_PYTHONS_MAX + 2];
        size_t probes_pending;
        bool probes_stopped;     /* pyexec_probe_stop(): what they report is not logged */
        PyExecProbedFn probed;   /* called once, when every probe has answered */
        unsigned (*py_sessions_count)(const void *userdata); /* or NULL */
        PyExecSessionOpenFn session_open; /* daemon/pysession/'s, or NULL */
        void *session_open_userdata;
        const void *py_sessions;
        PyExecTenantLimitsFn tenant_limits; /* the daemon's, or NULL */
        void *tenant_limits_userdata;
        void *probed_userdata;
};

struct PyJob {
        PyExec *px;
        McpCall *call;
        void *owner;
        JobReplyFn reply;
        const PyInterp *interp;
        PyStep step;
        Run *run;
        EnvWaiter *waiter;
        RingOp op_nop;
        bool cancelled;   /* never answered */
        json_t *meta;     /* the metadata helper's output */
        json_t *problems; /* validate_script: what is wrong */
        LIST_FIELDS(PyJob, jobs);
};

/* ---------------------------------------------------------------------------------------------
 * Interpreters. */

char *python_resolve(const char *name) {
        if (strchr(name, '/'))
                return access(name, X_OK) == 0 ? strdup(name) : NULL;
        char path[] = SANDBOX_PATH;
        char *save = NULL;
        for (char *dir = strtok_r(path, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                char *p = NULL;
                if (asprintf(&p, "%s/%s", dir, name) < 0)
                        return NULL;
                if (access(p, X_OK) == 0)
                        return p;
                free(p);
        }
        return NULL;
}

static void interp_done(PyInterp *i) {
        free(i->name);
        free(i->path);
        free(i->version);
        free(i->implementation);
        free(i->id);
        free(i->error);
        json_decref(i->packages);
        free(i->launcher.pyc);
        *i = (PyInterp) {};
}

static char *stderr_tail(const ExecResult *r) {
        size_t n = r->stderr_len, off = n > STDERR_TAIL_BYTES ? n - STDERR_TAIL_BYTES : 0;
        return strndup(r->stderr_data ? r->stderr_data + off : "", n - off);
}

/* Reads a helper's stdout as one JSON object; NULL and *reterr set otherwise. */
static json_t *helper_output(const RunOps *ops, Run *run, const char *what, char **reterr) {
        if (ops->error(run)) {
                if (asprintf(reterr, "%s could not run: %s", what, ops->error(run)) < 0)
                        *reterr = NULL;
                return NULL;
        }
        ExecResult r;
        ops->result(run, &r);
        json_t *o = r.exit_code == 0 && !r.timed_out ? json_loadb(r.stdout_data ? r.stdout_data : "", r.stdout_len, 0, NULL)
                                                     : NULL;
        if (json_is_object(o))
                return o;
        json_decref(o);
        _cleanup_free_ char *tail = stderr_tail(&r);
        if (asprintf(reterr, "%s failed (exit code %d%s): %s", what, r.exit_code, r.timed_out ? ", timed out" : "",
                     tail ? tail : "") < 0)
                *reterr = NULL;
        return NULL;
}

static void probe_apply(PyInterp *i, json_t *o) {
        const char *v = json_string_value(json_object_get(o, "version"));
        const char *impl = json_string_value(json_object_get(o, "implementation"));
        json_t *p = json_object_get(o, "packages");
        i->version = strdup(v ? v : "?");
        i->implementation = strdup(impl ? impl : "?");
        i->metadata_tools = json_is_true(json_object_get(o, "metadata_tools"));
        i->packages = json_is_array(p) ? json_incref(p) : json_array();
        /* Without it (no memory, or a probe that could not compile it) runs stage the source. */
        const char *pyc = json_string_value(json_object_get(o, "launcher_pyc"));
        size_t n = pyc ? strlen(pyc) : 0;
        if (n > 0 && (i->launcher.pyc = malloc(mcp_base64_decoded_max(n))) &&
            mcp_base64_decode(pyc, n, i->launcher.pyc, &i->launcher.pyc_len, NULL) < 0) {
                free(i->launcher.pyc);
                i->launcher = (RunLauncherCode) {};
        }
        if (asprintf(&i->id, "%s %s %s", i->path, i->implementation, i->version) < 0)
                i->id = NULL;
}

/* What a second entry for an interpreter already probed learns from the first. */
static int probe_copy(PyInterp *to, const PyInterp *from) {
        to->metadata_tools = from->metadata_tools;
        if (from->launcher.pyc) {
                if (!(to->launcher.pyc = malloc(from->launcher.pyc_len)))
                        return -ENOMEM;
                memcpy(to->launcher.pyc, from->launcher.pyc, from->launcher.pyc_len);
                to->launcher.pyc_len = from->launcher.pyc_len;
        }
        to->packages = json_incref(from->packages);
        if ((from->version && !(to->version = strdup(from->version))) ||
            (from->implementation && !(to->implementation = strdup(from->implementation))) ||
            (from->id && !(to->id = strdup(from->id))) || (from->error && !(to->error = strdup(from->error))))
                return -ENOMEM;
        return 0;
}

static int packages_init(PyExec *px);
static void interps_log(const PyExec *px);

/* Every interpreter path has answered: the entries that share a path learn from the first, and
 * what was found is logged and handed to the caller of pyexec_probe_start(). */
/* Every interpreter entry the probe covers: the configured ones, the tools interpreter, exec's. */
static size_t probe_entries(PyExec *px, PyInterp *all[static CONFIG_PYTHONS_MAX + 2]) {
        size_t n = 0;
        for (size_t i = 0; i < px->n_interps; i++)
                all[n++] = &px->interps[i];
        all[n++] = &px->tools;
        all[n++] = &px->exec;
        return n;
}

static void probe_finish(PyExec *px) {
        PyInterp *all[CONFIG_PYTHONS_MAX + 2];
        size_t n = probe_entries(px, all);
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++)
                for (size_t k = 0; k < i && all[i]->path && !all[i]->packages; k++)
                        if (all[k]->path && strcmp(all[k]->path, all[i]->path) == 0)
                                r = probe_copy(all[i], all[k]);
        if (r >= 0)
                r = packages_init(px);
        if (r >= 0 && !px->probes_stopped) {
                if (px->exec.error)
                        log_warning("the interpreter probe failed: %s", px->exec.error);
                else if (px->exec.path)
                        log_info("python %s in the sandbox; packages: %s", px->exec.version,
                                 *px->packages ? px->packages : "none");
                interps_log(px);
        }
        PyExecProbedFn fn = TAKE_PTR(px->probed);
        if (fn)
                fn(px->probed_userdata, r);
}

static void on_probe_done(Run *run, void *userdata) {
        ProbeWait *w = userdata;
        PyExec *px = w->px;
        _cleanup_free_ char *err = NULL;
        _cleanup_(json_decrefp) json_t *o = helper_output(px->run_ops, run, "the interpreter probe", &err);
        if (o)
                probe_apply(w->interp, o);
        else {
                w->interp->packages = json_array();
                if (!w->interp->error)
                        w->interp->error = err ? TAKE_PTR(err) : strdup("the interpreter probe failed");
        }
        w->run = NULL;
        px->run_ops->release(run);
        if (--px->probes_pending == 0)
                probe_finish(px);
}

/* The one probe at start: each interpreter path once (the configured ones, the tools interpreter,
 * exec's), all at the same time, on the loop. What it finds feeds the tool descriptions and
 * check_environment alike. */
int pyexec_probe_start(PyExec *px, PyExecProbedFn done, void *userdata) {
        /* exec's interpreter compiles the runs' launcher too (probe.py). */
        const ExecInputFile launcher = { .name = "launch.py", .data = py_launch, .len = strlen(py_launch) };
        PyInterp *all[CONFIG_PYTHONS_MAX + 2];
        size_t n = probe_entries(px, all);
        int r = 0;

        px->probed = done;
        px->probed_userdata = userdata;
        /* One pending count more while they are started: none of them finishes the probe early. */
        px->probes_pending = 1;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                bool first = true;
                for (size_t k = 0; k < i && first; k++)
                        first = !all[k]->path || !all[i]->path || strcmp(all[k]->path, all[i]->path) != 0;
                if (!all[i]->path || !first)
                        continue;
                ProbeWait *w = &px->probes[i];
                *w = (ProbeWait) { .px = px, .interp = all[i] };
                RunParams p = {
                        .code = py_probe,
                        .code_len = strlen(py_probe),
                        .timeout_s = HELPER_TIMEOUT_S,
                        .python = all[i]->path,
                        /* Only exec's interpreter: runs stage no other's bytecode. */
                        .files = &launcher,
                        .n_files = px->exec.path && strcmp(all[i]->path, px->exec.path) == 0,
                };
                r = px->run_ops->start(&px->env, &p, on_probe_done, w, &w->run);
                if (r >= 0)
                        px->probes_pending++;
        }
        if (r < 0) {
                /* The probes started still answer (pyexec_busy()) but nobody waits for them. */
                px->probed = NULL;
                px->probes_pending--;
                return r;
        }
        if (--px->probes_pending == 0)
                probe_finish(px);
        return 0;
}

void pyexec_probe_stop(PyExec *px) {
        px->probes_stopped = true;
        for (size_t i = 0; i < ELEMENTSOF(px->probes); i++)
                if (px->probes[i].run)
                        px->run_ops->kill(px->probes[i].run);
}

static int interp_init(PyInterp *i, const char *name, const char *path) {
        i->name = strdup(name);
        if (!i->name)
                return -ENOMEM;
        i->path = python_resolve(path);
        if (!i->path && asprintf(&i->error, "'%s' was not found in " SANDBOX_PATH " (MCP_EXEC_PYTHONS)", path) < 0)
                return -ENOMEM;
        return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Jobs. */

static void job_unlink(PyJob *j) {
        if (LIST_IS_LINKED(jobs, j->px->jobs, j))
                LIST_REMOVE(jobs, j->px->jobs, j);
}

static void job_free(PyJob *j) {
        job_unlink(j);
        mcp_call_free(j->call);
        json_decref(j->meta);
        json_decref(j->problems);
        free(j);
}

/* Answers and frees the job. */
static void job_reply(PyJob *j, char *reply) {
        if (!reply) { /* even the encoder's fallback found no memory (mcp.h; issue 15) */
                log_error("out of memory building a reply; answered with the preformatted tool error");
                reply = mcp_call_reply_oom(j->call);
        }
        j->reply(j->owner, reply);
        job_free(j);
}

static void job_tool_error(PyJob *j, const char *message) {
        job_reply(j, mcp_call_reply_tool_error(j->call, message));
}

static void job_tool_errorf(PyJob *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_tool_errorf(PyJob *j, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        job_tool_error(j, m ? m : "out of memory");
}

static void on_helper_done(Run *run, void *userdata);

static int job_helper(PyJob *j, PyStep step, const char *code, const char *python, const char *in, size_t in_len,
                      uint32_t timeout_s) {
        RunParams p = {
                .code = code,
                .code_len = strlen(code),
                .stdin_data = in,
                .stdin_len = in_len,
                .timeout_s = timeout_s,
                .python = python,
        };
        j->step = step;
        return j->px->run_ops->start(&j->px->env, &p, on_helper_done, j, &j->run);
}

/* The environment the metadata asks for, its requirements as a vector in v (at most max - 1). */
static EnvRequest job_env_request(const PyJob *j, const char **v, size_t max) {
        size_t n = 0, i;
        json_t *e;
        json_array_foreach(json_object_get(j->meta, "requirements"), i, e) {
                if (n + 1 >= max)
                        break;
                v[n++] = json_string_value(e);
        }
        v[n] = NULL;
        return (EnvRequest) {
                .key = json_string_value(json_object_get(j->meta, "key")),
                .python_name = j->interp->name,
                .interpreter = j->interp->path,
                .python_version = j->interp->version,
                .requirements = v,
        };
}

/* "line 3: message\n    offending text" for each problem. */
static char *problems_text(json_t *problems) {
        Buf b = {};
        size_t i;
        json_t *p;
        json_array_foreach(problems, i, p) {
                json_t *line = json_object_get(p, "line");
                const char *text = json_string_value(json_object_get(p, "text"));
                char where[64];
                if (json_is_integer(line))
                        snprintf(where, sizeof(where), "line %" JSON_INTEGER_FORMAT, json_integer_value(line));
                else
                        snprintf(where, sizeof(where), "%s", json_string_value(json_object_get(p, "check")) ?: "?");
                char *s = NULL;
                if (asprintf(&s, "%s%s: %s%s%s", i ? "\n" : "", where, json_string_value(json_object_get(p, "message")) ?: "",
                             text ? "\n    " : "", text ? text : "") < 0 ||
                    buf_append(&b, s, strlen(s)) < 0) {
                        free(s);
                        buf_done(&b);
                        return NULL;
                }
                free(s);
        }
        return b.data ? b.data : strdup("");
}

typedef struct EnvHold {
        Envs *envs;
        char key[];
} EnvHold;

static void env_hold_release(void *userdata) {
        EnvHold *h = userdata;
        envs_release(h->envs, h->key);
        free(h);
}

static json_t *execute_extra(PyJob *j, json_t *environment) {
        json_t *reqs = j->meta ? json_object_get(j->meta, "requirements") : NULL;
        return json_pack("{s:s, s:s, s:o, s:o}", "python", j->interp->name, "python_version",
                         j->interp->version ? j->interp->version : "?", "dependencies",
                         reqs ? json_incref(reqs) : json_array(), "environment", environment ? environment : json_null());
}

/* The prepared call goes to the scheduler, or a session_open back to daemon/pysession/, which
 * spawns the session's sandbox with python and env_dir and holds the environment for its life. */
static void job_submit_run(PyJob *j, const char *python, const char *env_dir, json_t *environment,
                           const char *env_key) {
        PyExec *px = j->px;
        McpTool tool = mcp_call_args(j->call)->tool;
        /* environment is consumed here (exec calls never have one). */
        _cleanup_(json_decrefp) json_t *extra = tool == MCP_TOOL_EXECUTE_PYTHON || tool == MCP_TOOL_SESSION_OPEN
                                                        ? execute_extra(j, environment)
                                                        : NULL;
        EnvHold *hold = NULL;
        if (env_key) {
                hold = malloc(sizeof(EnvHold) + strlen(env_key) + 1);
                if (!hold) {
                        envs_release(px->envs, env_key);
                        job_tool_error(j, "mcp-execd is out of memory");
                        return;
                }
                hold->envs = px->envs;
                strcpy(hold->key, env_key);
        }
        JobPrep prep = {
                .python = python,
                .env_dir = env_dir,
                .extra = extra,
                .release = hold ? env_hold_release : NULL,
                .userdata = hold,
        };
        if (tool == MCP_TOOL_SESSION_OPEN) {
                if (!px->session_open) {
                        if (hold)
                                env_hold_release(hold);
                        job_tool_error(j, "Python sessions are not served by this server");
                        return;
                }
                px->session_open(px->session_open_userdata, TAKE_PTR(j->call), j->owner, j->reply, &prep);
                job_free(j);
                return;
        }
        Scheduler *s = px->scheduler;
        int r = scheduler_submit_prepared(s, j->call, j->owner, j->reply, &prep);
        if (r >= 0) {
                j->call = NULL; /* the scheduler answers it now */
                job_free(j);
                return;
        }
        char msg[320];
        scheduler_refusal_message(s, mcp_call_principal(j->call), r, msg, sizeof(msg));
        job_tool_error(j, msg);
}

static void on_env_ready(void *userdata, const char *dir, const char *error, bool reused, uint64_t install_ms) {
        PyJob *j = userdata;
        j->waiter = NULL;
        json_t *reqs = json_object_get(j->meta, "requirements");
        _cleanup_free_ char *list = json_dumps(reqs, JSON_COMPACT);
        if (!dir) {
                job_tool_errorf(j, "the dependencies %s could not be installed from %s: %s", list ? list : "",
                                j->px->sources, error ? error : "unknown error");
                return;
        }
        const char *key = json_string_value(json_object_get(j->meta, "key"));
        json_t *env = json_pack("{s:s, s:b, s:I, s:s}", "key", key, "reused", reused, "install_ms",
                                (json_int_t) install_ms, "mount", SANDBOX_ENV_DIR);
        j->step = STEP_NONE;
        job_submit_run(j, SANDBOX_ENV_DIR "/bin/python", dir, env, key);
}

static void validate_finish(PyJob *j);
static void job_after_meta(PyJob *j);

/* A problem not tied to a line of the script. */
static json_t *problem_new(const char *check, const char *message) {
        return json_pack("{s:n, s:s, s:s, s:n}", "line", "check", check, "message", message, "text");
}

static void on_check_done(void *userdata, const char *output, const char *error) {
        PyJob *j = userdata;
        j->waiter = NULL;
        if (!output) {
                json_array_append_new(j->problems,
                                      problem_new("source", error ? error : "the source could not be asked"));
                validate_finish(j);
                return;
        }
        json_t *origins = json_object_get(j->meta, "origins");
        for (const char *p = output; *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t) (nl - p) : strlen(p);
                _cleanup_(json_decrefp) json_t *o = json_loadb(p, n, 0, NULL);
                if (json_is_object(o) && json_is_false(json_object_get(o, "ok"))) {
                        const char *req = json_string_value(json_object_get(o, "requirement"));
                        json_t *origin = json_object_get(origins, req ? req : "");
                        char *m = NULL;
                        if (asprintf(&m, "%s cannot be satisfied by %s: %s", req ? req : "?", j->px->sources,
                                     json_string_value(json_object_get(o, "message")) ?: "") >= 0) {
                                json_array_append_new(j->problems,
                                                      json_pack("{s:O?, s:s, s:s, s:O?}", "line",
                                                                json_object_get(origin, "line"), "check", "source",
                                                                "message", m, "text", json_object_get(origin, "text")));
                                free(m);
                        }
                }
                p += n;
                if (*p == '\n')
                        p++;
        }
        validate_finish(j);
}

static void validate_finish(PyJob *j) {
        json_t *reqs = json_object_get(j->meta, "requirements");
        json_t *rp = json_object_get(j->meta, "requires_python");
        _cleanup_(json_decrefp) json_t *o = json_pack(
                "{s:b, s:s, s:s, s:o, s:o, s:O}", "valid", json_array_size(j->problems) == 0, "python", j->interp->name,
                "python_version", j->interp->version ? j->interp->version : "?", "requires_python",
                rp ? json_incref(rp) : json_null(), "dependencies", reqs ? json_incref(reqs) : json_array(), "problems",
                j->problems);
        job_reply(j, o ? mcp_call_reply_structured(j->call, o)
                       : mcp_call_reply_tool_error(j->call, "mcp-execd could not encode the result: out of memory"));
}

static void validate_after_compile(PyJob *j) {
        json_t *reqs = json_object_get(j->meta, "requirements");
        bool meta_ok = true;
        size_t i;
        json_t *p;
        json_array_foreach(j->problems, i, p) {
                const char *check = json_string_value(json_object_get(p, "check"));
                meta_ok = meta_ok && check && strcmp(check, "syntax") == 0;
        }
        if (json_array_size(reqs) == 0 || !meta_ok) {
                validate_finish(j);
                return;
        }
        if (!j->px->envs) {
                json_array_append_new(j->problems,
                                      problem_new("source", "the script needs dependencies but no dependency source is configured: "
                                                "the operator must set MCP_EXEC_INDEX_URL (a PEP 503 simple index, "
                                                "may be a local mirror) or MCP_EXEC_WHEELHOUSE (a directory of wheels)"));
                validate_finish(j);
                return;
        }
        const char *v[72];
        EnvRequest req = job_env_request(j, v, ELEMENTSOF(v));
        j->step = STEP_CHECK;
        if (envs_check(j->px->envs, &req, on_check_done, j, &j->waiter) < 0) {
                j->waiter = NULL;
                json_array_append_new(j->problems, problem_new("source", "cannot start the source check"));
                validate_finish(j);
        }
}

/* validate_script, once the metadata is parsed: the syntax check next, then the source check. */
static void validate_after_meta(PyJob *j) {
        json_t *problems = json_object_get(j->meta, "problems");
        j->problems = json_is_array(problems) ? json_deep_copy(problems) : json_array();
        const McpExecArgs *a = mcp_call_args(j->call);
        if (!j->problems ||
            job_helper(j, STEP_COMPILE, py_compile, j->interp->path, a->code, a->code_len, HELPER_TIMEOUT_S) < 0)
                job_tool_error(j, "mcp-execd is out of memory");
}

/* execute_python, once the metadata is parsed: refused if it is invalid, else run, with its
 * environment made first when it has dependencies. A session_open's dependencies alike, the
 * session's sandbox taking the place of the run. */
static void execute_after_meta(PyJob *j) {
        PyExec *px = j->px;
        json_t *problems = json_object_get(j->meta, "problems");
        json_t *reqs = json_object_get(j->meta, "requirements");
        bool session = mcp_call_args(j->call)->tool == MCP_TOOL_SESSION_OPEN;

        if (json_array_size(problems) > 0) {
                _cleanup_free_ char *text = problems_text(problems);
                const char *what = session ? "the session's dependencies"
                                           : "the script's PEP 723 metadata or dependencies";
                job_tool_errorf(j, "%s are invalid:\n%s", what, text ? text : "");
                return;
        }
        if (json_array_size(reqs) == 0) {
                job_submit_run(j, j->interp->path, NULL, NULL, NULL);
                return;
        }
        if (!px->envs) {
                _cleanup_free_ char *list = json_dumps(reqs, JSON_COMPACT);
                job_tool_errorf(j, "the %s needs dependencies %s, but no dependency source is configured: the "
                                   "operator must set MCP_EXEC_INDEX_URL (the URL of a PEP 503 simple index, which may "
                                   "be a local mirror) or MCP_EXEC_WHEELHOUSE (a directory of wheels) for mcp-execd",
                                session ? "session" : "script", list ? list : "");
                return;
        }
        const char *v[72];
        EnvRequest req = job_env_request(j, v, ELEMENTSOF(v));
        j->step = STEP_ENV;
        if (envs_acquire(px->envs, &req, on_env_ready, j, &j->waiter) < 0) {
                j->waiter = NULL;
                job_tool_error(j, "mcp-execd is out of memory");
        }
}

static void on_helper_done(Run *run, void *userdata) {
        PyJob *j = userdata;
        PyStep step = j->step;
        j->run = NULL;
        j->step = STEP_NONE;
        const RunOps *ops = j->px->run_ops;
        if (j->cancelled) {
                ops->release(run);
                job_free(j);
                return;
        }
        _cleanup_free_ char *err = NULL;
        _cleanup_(json_decrefp) json_t *o = helper_output(
                ops, run, step == STEP_META ? "the PEP 723 metadata parser" : "the syntax check", &err);
        ops->release(run);

        switch (step) {
        case STEP_META:
                if (!o) {
                        job_tool_errorf(j, "%s", err ? err : "the metadata parser failed");
                        return;
                }
                j->meta = TAKE_PTR(o);
                job_after_meta(j);
                return;
        case STEP_COMPILE:
                if (!o) {
                        json_array_append_new(j->problems, problem_new("syntax", err ? err : "the syntax check failed"));
                } else if (json_is_false(json_object_get(o, "ok"))) {
                        json_t *p = json_pack("{s:O?, s:s, s:O?, s:O?}", "line", json_object_get(o, "line"), "check",
                                              "syntax", "message", json_object_get(o, "message"), "text",
                                              json_object_get(o, "text"));
                        if (p && json_array_insert_new(j->problems, 0, p) < 0)
                                json_decref(p);
                }
                validate_after_compile(j);
                return;
        default:
                job_tool_error(j, "internal error: unexpected step");
        }
}

static json_t *redacted_url(const char *url) {
        if (!url)
                return json_null();
        const char *scheme = strstr(url, "://");
        const char *host = scheme ? scheme + 3 : url;
        const char *at = strchr(host, '@'), *slash = strchr(host, '/');
        if (!at || (slash && slash < at))
                return json_string(url);
        /* Credentials in the URL are a secret: only say that there are some. */
        char *s = NULL;
        if (asprintf(&s, "%.*s***@%s", (int) (host - url), url, at + 1) < 0)
                return NULL;
        json_t *v = json_string(s);
        free(s);
        return v;
}

static json_t *limit_or_null(uint64_t v) {
        return v == UINT64_MAX ? json_null() : json_integer((json_int_t) v);
}

/* check_environment: what the probe at start found, the configuration, the cache. */
static void check_environment_reply(PyJob *j) {
        PyExec *px = j->px;
        const Config *c = px->config;
        _cleanup_(json_decrefp) json_t *interps = json_array();
        for (size_t i = 0; interps && i < px->n_interps; i++) {
                const PyInterp *p = &px->interps[i];
                json_t *x = json_pack("{s:s, s:s?, s:b, s:s?, s:s?, s:O?, s:s?}", "name", p->name, "path", p->path,
                                      "default", i == 0, "version", p->version, "implementation", p->implementation,
                                      "packages", p->packages, "error", p->error);
                if (!x || json_array_append_new(interps, x) < 0) {
                        job_tool_error(j, "mcp-execd is out of memory");
                        return;
                }
        }
        json_t *cache = px->envs ? envs_describe(px->envs) : NULL;
        if (!cache && px->envs) {
                job_tool_error(j, "mcp-execd is out of memory");
                return;
        }
        if (!cache)
                cache = json_pack("{s:n, s:s}", "dir", "note",
                                  "no dependency source is configured (MCP_EXEC_INDEX_URL, MCP_EXEC_WHEELHOUSE)");
        bool cg = cgroup_backend(px->cgroup) != CGROUP_BACKEND_NONE;
        const char *tenant = *mcp_call_principal(j->call) ? mcp_call_principal(j->call) : NULL;
        json_t *tenant_limits = tenant && px->tenant_limits ? px->tenant_limits(px->tenant_limits_userdata, tenant) : NULL;
        _cleanup_(json_decrefp) json_t *o = json_pack(
                "{s:{s:s, s:s, s:s},"
                " s:O,"
                " s:{s:b, s:[s,s,s,s,s,s,s], s:b, s:b, s:b, s:I, s:b, s:I, s:s, s:s, s:I, s:I, s:s?},"
                " s:{s:s, s:s, s:s},"
                " s:{s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I, s:I},"
                " s:{s:b, s:o, s:s?, s:s, s:s},"
                " s:o,"
                " s:{s:b, s:b, s:s?, s:o?}}",
                "daemon", "name", "mcp-execd", "version", px->version, "transport",
                c->transport == TRANSPORT_STDIO ? "stdio" : c->transport == TRANSPORT_HTTP ? "http" : "sse",
                "interpreters", interps,
                "sandbox", "network", 0, "namespaces", "user", "pid", "net", "mount", "ipc", "uts", "cgroup", "seccomp",
                1, "no_new_privs", 1, "read_only_root", 1, "uid", (json_int_t) SANDBOX_UID, "capabilities", 0,
                "tmp_size_bytes", (json_int_t) c->tmp_size_bytes, "workdir", SANDBOX_WORK_DIR, "dependency_mount",
                SANDBOX_ENV_DIR,
                /* issue 16: 0 when there is no pool (MCP_EXEC_WARM_POOL=0, or not rlimit mode) */
                "warm_pool", (json_int_t) (px->env.pool ? c->warm_pool : 0), "warm_ready",
                (json_int_t) run_pool_ready(px->env.pool), "preload", px->env.pool ? c->preload : NULL,
                "cgroup", "backend", cgroup_backend_name(px->cgroup), "description",
                cg ? cgroup_describe(px->cgroup) : "none: rlimits only", "limits_by", cg ? "cgroup" : "rlimit",
                "limits", "default_timeout_s", (json_int_t) c->default_timeout_s, "max_timeout_s",
                (json_int_t) c->max_timeout_s, "max_output_bytes", (json_int_t) c->max_output_bytes, "max_code_bytes",
                (json_int_t) c->max_code_bytes, "max_stdin_bytes", (json_int_t) c->max_stdin_bytes, "memory_max_bytes",
                limit_or_null(c->memory_max_bytes), "pids_max", limit_or_null(c->pids_max), "cpu_quota_percent",
                c->cpu_quota_percent ? json_integer(c->cpu_quota_percent) : json_null(), "max_concurrent",
                (json_int_t) c->max_concurrent, "queue_max", (json_int_t) c->queue_max, "install_timeout_s",
                (json_int_t) c->install_timeout_s,
                "sources", "configured", px->envs != NULL, "index_url", redacted_url(c->index_url), "wheelhouse",
                c->wheelhouse, "installer", px->envs ? "outside the runs' sandbox, wheels only (--only-binary=:all:)"
                                                     : "none",
                "network_for_runs", "never",
                "cache", cache,
                /* The caller's own tenant only: never who else may call (issue 31.5). */
                "auth", "token_configured", c->auth_token != NULL, "tenants_configured", c->tenants != NULL,
                "tenant", tenant, "limits", tenant_limits);
        /* Issue 18: the Python sessions' bounds (the sessions themselves are daemon/pysession's). */
        if (o && json_object_set_new(o, "python_sessions",
                                     json_pack("{s:I, s:I, s:I}", "max", (json_int_t) c->py_sessions_max, "idle_s",
                                               (json_int_t) c->py_session_idle_s, "lifetime_s",
                                               (json_int_t) c->py_session_lifetime_s)) < 0)
                json_decref(TAKE_PTR(o));
        /* The count is the moment's, so it sits in sandbox beside warm_ready (sandboxes ready now),
         * not in python_sessions, which is the configuration and is pinned whole (pysession.test.mjs). */
        json_t *sandbox = o ? json_object_get(o, "sandbox") : NULL;
        if (sandbox && px->py_sessions_count &&
            json_object_set_new(sandbox, "python_sessions_open",
                                json_integer((json_int_t) px->py_sessions_count(px->py_sessions))) < 0)
                json_decref(TAKE_PTR(o));
        job_reply(j, o ? mcp_call_reply_structured(j->call, o)
                       : mcp_call_reply_tool_error(j->call, "mcp-execd could not encode the result: out of memory"));
}

static const PyInterp *interp_find(PyExec *px, const char *name) {
        if (!name)
                return &px->interps[0];
        for (size_t i = 0; i < px->n_interps; i++)
                if (strcmp(px->interps[i].name, name) == 0)
                        return &px->interps[i];
        return NULL;
}

/* exec naming an interpreter: straight to the scheduler with it. */
static void exec_begin(PyJob *j) {
        job_submit_run(j, j->interp->path, NULL, NULL, NULL);
}

/* execute_python and validate_script start alike: the metadata helper reads the script's PEP 723
 * block, given the dependencies argument and the interpreter's identity. */
static void script_begin(PyJob *j) {
        PyExec *px = j->px;
        const McpExecArgs *a = mcp_call_args(j->call);
        _cleanup_(json_decrefp) json_t *in = json_pack(
                /* session_open has no script: its dependencies alone */
                "{s:s%, s:O?, s:{s:s, s:s, s:s, s:s}}", "script", a->code ?: "", a->code_len, "dependencies",
                a->dependencies,
                "python", "name", j->interp->name, "version", j->interp->version, "implementation",
                j->interp->implementation, "id", j->interp->id);
        _cleanup_free_ char *text = in ? json_dumps(in, JSON_COMPACT) : NULL;
        if (!text) {
                job_tool_error(j, "mcp-execd is out of memory");
                return;
        }
        if (!px->tools.path || !px->tools.metadata_tools) {
                job_tool_error(j, "the server cannot parse PEP 723 metadata: it needs python3 >= 3.11 with Debian's "
                                  "python3-packaging in " SANDBOX_PATH);
                return;
        }
        if (job_helper(j, STEP_META, py_meta, px->tools.path, text, strlen(text), HELPER_TIMEOUT_S) < 0)
                job_tool_error(j, "mcp-execd is out of memory");
}

/* session_open naming an interpreter or with dependencies (daemon/pysession/ handed it on): the
 * dependencies go through the metadata helper as execute_python's argument does, with no script,
 * so that they are normalized, keyed and installed alike; without any, straight back with the
 * interpreter. */
static void session_begin(PyJob *j) {
        if (json_array_size(mcp_call_args(j->call)->dependencies) == 0) {
                job_submit_run(j, j->interp->path, NULL, NULL, NULL);
                return;
        }
        script_begin(j);
}

/* What each tool this module serves does: its handler (the first step), and for the script tools
 * the step after the metadata. The tool's name, schema and argument checks are mcp/'s registry;
 * which calls come here is pyexec_route_vtable's serves[] below. */
typedef struct PyTool {
        bool interpreter;              /* resolves the chosen interpreter first (refused if unusable) */
        void (*begin)(PyJob *j);
        void (*after_meta)(PyJob *j);  /* once py/meta.py has answered, or NULL */
} PyTool;

static const PyTool py_tools[_MCP_TOOL_MAX] = {
        [MCP_TOOL_EXEC] = { .interpreter = true, .begin = exec_begin },
        [MCP_TOOL_EXECUTE_PYTHON] = { .interpreter = true, .begin = script_begin, .after_meta = execute_after_meta },
        [MCP_TOOL_VALIDATE_SCRIPT] = { .interpreter = true, .begin = script_begin, .after_meta = validate_after_meta },
        [MCP_TOOL_CHECK_ENVIRONMENT] = { .begin = check_environment_reply },
        [MCP_TOOL_SESSION_OPEN] = { .interpreter = true, .begin = session_begin, .after_meta = execute_after_meta },
};

/* The first step of every call, from the loop (never an answer from inside submit). */
static void job_begin(PyJob *j) {
        PyExec *px = j->px;
        const McpExecArgs *a = mcp_call_args(j->call);
        const PyTool *t = &py_tools[a->tool];

        j->interp = t->interpreter ? interp_find(px, a->python) : &px->interps[0];
        if (t->interpreter && (!j->interp || !j->interp->path || !j->interp->id)) {
                job_tool_errorf(j, "the interpreter '%s' cannot be used: %s", a->python ? a->python : px->interps[0].name,
                                j->interp && j->interp->error ? j->interp->error : "its probe failed at start");
                return;
        }
        t->begin(j);
}

static void job_after_meta(PyJob *j) {
        py_tools[mcp_call_args(j->call)->tool].after_meta(j);
}

static void on_job_nop(RingOp *op, int res) {
        PyJob *j = container_of(op, PyJob, op_nop);
        (void) res;
        j->step = STEP_NONE;
        if (j->cancelled) {
                job_free(j);
                return;
        }
        job_begin(j);
}

/* ---------------------------------------------------------------------------------------------
 * The route table's operations (route.h). */

static int route_submit(void *userdata, McpCall *call, void *owner, JobReplyFn reply) {
        PyExec *px = userdata;
        PyJob *j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        *j = (PyJob) { .px = px, .call = call, .owner = owner, .reply = reply, .step = STEP_NOP };
        j->op_nop.callback = on_job_nop;
        LIST_PREPEND(jobs, px->jobs, j);
        io_uring_prep_nop(ring_get_sqe(px->env.ring, &j->op_nop));
        return 0;
}

static PyJob *job_find(PyExec *px, const void *owner, const char *id_key) {
        LIST_FOREACH(jobs, j, px->jobs)
                if (j->owner == owner && !j->cancelled && j->call &&
                    (!id_key || strcmp(mcp_call_id_key(j->call), id_key) == 0))
                        return j;
        return NULL;
}

static bool route_has(void *userdata, const void *owner, const char *id_key) {
        return job_find(userdata, owner, id_key) != NULL;
}

/* Drops the job without an answer: a helper run is killed (the job goes when it is over), an
 * environment wait is abandoned (an install goes on and is cached). */
static void job_cancel(PyJob *j) {
        j->cancelled = true;
        if (j->run) {
                j->px->run_ops->kill(j->run);
                return;
        }
        if (j->waiter) {
                envs_waiter_cancel(j->waiter);
                j->waiter = NULL;
                job_free(j);
                return;
        }
        /* STEP_NOP: freed by its completion. */
}

static bool route_cancel(void *userdata, const void *owner, const char *id_key) {
        PyExec *px = userdata;
        bool any = false;
        PyJob *j;
        while ((j = job_find(px, owner, id_key))) {
                any = true;
                job_cancel(j);
                if (id_key)
                        break;
        }
        return any;
}

static void route_shutdown(void *userdata, const char *reason) {
        PyExec *px = userdata;
        LIST_FOREACH_SAFE(jobs, j, next, px->jobs) {
                if (j->cancelled || !j->call)
                        continue;
                char *reply = mcp_call_reply_tool_error(j->call, reason);
                j->reply(j->owner, reply ?: mcp_call_reply_oom(j->call)); /* answered in every case (issue 15) */
                job_cancel(j);
        }
        /* An install nobody waits for any more would otherwise run on past the drain (a slow index)
         * and be left in flight at the teardown. */
        envs_stop(px->envs);
}

/* exec with the default interpreter is the run queue's (nothing to prepare); a session_open comes
 * through daemon/pysession/ (pyexec_session_prepare()), never from the table. */
const RouteVTable pyexec_route_vtable = {
        .name = "python",
        .serves = {
                [MCP_TOOL_EXEC] = ROUTE_PYTHON,
                [MCP_TOOL_EXECUTE_PYTHON] = ROUTE_PLAIN | ROUTE_PYTHON,
                [MCP_TOOL_VALIDATE_SCRIPT] = ROUTE_PLAIN | ROUTE_PYTHON,
                [MCP_TOOL_CHECK_ENVIRONMENT] = ROUTE_PLAIN,
        },
        .submit = route_submit,
        .has = route_has,
        .cancel = route_cancel,
        .shutdown = route_shutdown,
};

int pyexec_session_prepare(PyExec *px, McpCall *call, void *owner, JobReplyFn reply) {
        assert(mcp_call_args(call)->tool == MCP_TOOL_SESSION_OPEN);
        return route_submit(px, call, owner, reply);
}

/* ---------------------------------------------------------------------------------------------
 * Set-up. */

/* MCP_EXEC_PYTHONS, or MCP_EXEC_PYTHON alone (named after its file name); the tools interpreter;
 * exec's interpreter, which the daemon has resolved (env->python, NULL when it was not found). */
static int interps_init(PyExec *px, const Config *config) {
        char buf[1024];
        const char *names[CONFIG_PYTHONS_MAX], *paths[CONFIG_PYTHONS_MAX];
        int n = config_parse_pythons(config->pythons ? config->pythons : config->python, buf, sizeof(buf), names,
                                     paths);
        int r = 0;
        for (int i = 0; r >= 0 && i < n; i++) {
                r = interp_init(&px->interps[i], names[i], paths[i]);
                px->n_interps = (size_t) i + 1;
        }
        if (r >= 0 && n <= 0) {
                r = interp_init(&px->interps[0], "python3", config->python);
                px->n_interps = 1;
        }
        if (r >= 0)
                r = interp_init(&px->tools, "tools", "python3");
        if (r < 0)
                return r;
        px->exec.name = strdup(config->python);
        if (!px->exec.name || (px->env.python && !(px->exec.path = strdup(px->env.python))))
                return -ENOMEM;
        return 0;
}

static void interps_log(const PyExec *px) {
        for (size_t i = 0; i < px->n_interps; i++) {
                const PyInterp *p = &px->interps[i];
                if (p->error)
                        log_warning("interpreter %s: %s", p->name, p->error);
                else
                        log_info("interpreter %s: %s %s (%s)", p->name, p->implementation, p->version, p->path);
        }
        if (!px->tools.metadata_tools)
                log_warning("python3 in " SANDBOX_PATH " lacks tomllib or packaging (python3 >= 3.11 and Debian's "
                            "python3-packaging): execute_python and validate_script will refuse scripts");
}

/* exec's packages as its description names them: "PyYAML, numpy" ("" for none). */
static int packages_init(PyExec *px) {
        Buf b = {};
        size_t i;
        json_t *e;
        json_array_foreach(px->exec.packages, i, e) {
                const char *name = json_string_value(e) ?: "";
                if (buf_append(&b, ", ", i ? 2 : 0) < 0 || buf_append(&b, name, strlen(name)) < 0) {
                        buf_done(&b);
                        return -ENOMEM;
                }
        }
        px->packages = b.data ? b.data : strdup("");
        return px->packages ? 0 : -ENOMEM;
}

/* "python3,pypy3" (the default first), and where dependencies come from. */
static int texts_init(PyExec *px) {
        Buf b = {};
        for (size_t i = 0; i < px->n_interps; i++)
                if (buf_append(&b, ",", i ? 1 : 0) < 0 ||
                    buf_append(&b, px->interps[i].name, strlen(px->interps[i].name)) < 0) {
                        buf_done(&b);
                        return -ENOMEM;
                }
        px->names = b.data;
        if (!px->envs)
                return 0;
        const char *ix = px->config->index_url, *wh = px->config->wheelhouse;
        _cleanup_(json_decrefp) json_t *u = redacted_url(ix);
        if (asprintf(&px->sources, "%s%s%s%s%s", ix ? "the package index " : "", ix ? json_string_value(u) : "",
                     ix && wh ? " and " : "", wh ? "the wheelhouse " : "", wh ? wh : "") < 0) {
                px->sources = NULL;
                return -ENOMEM;
        }
        return 0;
}

static char *path_lookup(const char *name) {
        const char *path = getenv("PATH");
        if (!path)
                return NULL;
        _cleanup_free_ char *copy = strdup(path);
        char *save = NULL;
        for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save)) {
                char *p = NULL;
                if (asprintf(&p, "%s/%s", dir, name) < 0)
                        return NULL;
                if (dir[0] == '/' && access(p, X_OK) == 0)
                        return p;
                free(p);
        }
        return NULL;
}

static char *envs_cache_dir(const Config *config) {
        const char *cache = getenv("CACHE_DIRECTORY"), *xdg = getenv("XDG_CACHE_HOME");
        char *dir = NULL;
        if (config->env_cache_dir)
                return strdup(config->env_cache_dir);
        if (cache && *cache)
                return strndup(cache, strcspn(cache, ":"));
        if (geteuid() == 0)
                return strdup("/var/cache/mcp-execd");
        if (xdg && xdg[0] == '/')
                return asprintf(&dir, "%s/mcp-execd", xdg) < 0 ? NULL : dir;
        return asprintf(&dir, "%s/.cache/mcp-execd", getenv("HOME") ?: "/tmp") < 0 ? NULL : dir;
}

/* The dependency cache made from the configuration: none when no source is configured; else in
 * MCP_EXEC_ENV_CACHE_DIR, $CACHE_DIRECTORY, /var/cache/mcp-execd as root, or ~/.cache/mcp-execd.
 * Logs what failed. */
static int envs_setup(PyExec *px) {
        const Config *config = px->config;
        if (!config->index_url && !config->wheelhouse)
                return 0;
        _cleanup_free_ char *dir = envs_cache_dir(config), *installer = python_resolve("python3"),
                            *uv = path_lookup("uv");
        if (!dir)
                return log_error_errno(-ENOMEM, "cannot set up the environment cache: %m");
        if (!installer)
                log_warning("python3 not found in " SANDBOX_PATH ": dependencies cannot be installed");
        EnvsConfig ec = {
                .ring = px->env.ring,
                .dir = dir,
                .max_bytes = config->env_cache_max_bytes,
                .timeout_s = config->install_timeout_s,
                .max_installs = config->max_concurrent,
                .index_url = config->index_url,
                .wheelhouse = config->wheelhouse,
                .installer_python = installer ? installer : "/usr/bin/python3",
                .uv = uv,
                .cgroup = px->cgroup,
        };
        _cleanup_free_ char *why = NULL;
        int r = envs_new(&ec, &px->envs, &why);
        if (r < 0) {
                log_error("refusing to start: %s", why ? why : strerror(-r));
                return r;
        }
        log_info("dependency environments in %s (at most %" PRIu64 " bytes), installed with %s", dir,
                 config->env_cache_max_bytes, uv ? uv : "pip");
        return 0;
}

int pyexec_sources_check(const Config *config) {
        _cleanup_free_ char *why = NULL;
        int r = envs_sources_check(config->index_url, config->wheelhouse, &why);
        if (r < 0)
                log_error("refusing to start: %s", why ? why : strerror(-r));
        return r;
}

int pyexec_new(const RunEnv *env, const Config *config, Cgroup *cgroup, const char *version, PyExec **ret) {
        _cleanup_(pyexec_freep) PyExec *px = calloc(1, sizeof(*px));
        if (!px || !(px->version = strdup(version)))
                return log_error_errno(-ENOMEM, "cannot set up the interpreters: %m");
        px->env = *env;
        px->env.max_output_bytes = HELPER_OUTPUT_MAX_BYTES;
        px->run_ops = &run_ops_sandbox;
        px->config = config;
        px->cgroup = cgroup;

        int r = interps_init(px, config);
        if (r < 0)
                return log_error_errno(r, "cannot set up the interpreters: %m");
        r = envs_setup(px);
        if (r < 0)
                return r;
        r = texts_init(px);
        if (r < 0)
                return log_error_errno(r, "cannot set up the interpreters: %m");
        *ret = TAKE_PTR(px);
        return 0;
}

void pyexec_attach(PyExec *px, Scheduler *scheduler) {
        px->scheduler = scheduler;
}

void pyexec_set_run_ops(PyExec *px, const RunOps *ops) {
        px->run_ops = ops;
}

void pyexec_set_session_open(PyExec *px, PyExecSessionOpenFn open, void *userdata) {
        px->session_open = open;
        px->session_open_userdata = userdata;
}

void pyexec_set_tenant_limits(PyExec *px, PyExecTenantLimitsFn fn, void *userdata) {
        px->tenant_limits = fn;
        px->tenant_limits_userdata = userdata;
}

void pyexec_set_py_sessions(PyExec *px, unsigned (*count)(const void *userdata), const void *userdata) {
        px->py_sessions_count = count;
        px->py_sessions = userdata;
}

bool pyexec_busy(const PyExec *px) {
        return px->jobs != NULL || px->probes_pending > 0;
}

PyExec *pyexec_free(PyExec *px) {
        if (!px)
                return NULL;
        /* Jobs still here are in flight on the loop, which is ending: abandon them. */
        for (size_t i = 0; i < px->n_interps; i++)
                interp_done(&px->interps[i]);
        interp_done(&px->tools);
        interp_done(&px->exec);
        envs_free(px->envs);
        free(px->names);
        free(px->sources);
        free(px->packages);
        free(px->version);
        free(px);
        return NULL;
}

const char *pyexec_names(const PyExec *px) {
        return px->names;
}

const char *pyexec_sources(const PyExec *px) {
        return px->sources;
}

const RunLauncherCode *pyexec_launcher_code(const PyExec *px) {
        return px->exec.error || !px->exec.launcher.pyc ? NULL : &px->exec.launcher;
}

const char *pyexec_version(const PyExec *px) {
        return px->exec.error || !px->packages ? NULL : px->exec.version;
}

const char *pyexec_packages(const PyExec *px) {
        return px->exec.error ? NULL : px->packages;
}
