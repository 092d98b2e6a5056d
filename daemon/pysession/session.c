/* session.c: a Python session's life and bounds (pysession-internal.h): its open, cold or from a
 * ready sandbox; its ready line; its process's events (output, the init's reports, its exit, the
 * deadline's timer); the freeze between calls; the kill and its close record; the idle and
 * lifetime sweep. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-id128.h>

#include "cleanup.h"
#include "log.h"
#include "pysession-internal.h"
#include "spawn.h"
#include "str-util.h"

static const char *const pysession_end_names[_PYSESSION_END_MAX] = {
        [PYSESSION_END_CLOSED] = "closed",       [PYSESSION_END_IDLE] = "idle-expiry",
        [PYSESSION_END_LIFETIME] = "lifetime",   [PYSESSION_END_TIMEOUT] = "timeout",
        [PYSESSION_END_OOM] = "oom",             [PYSESSION_END_CRASH] = "crash",
        [PYSESSION_END_EXITED] = "exited",       [PYSESSION_END_CANCELLED] = "cancelled",
        [PYSESSION_END_DAEMON_STOP] = "daemon-stop", [PYSESSION_END_ERROR] = "error",
};

/* ---------------------------------------------------------------------------------------------
 * Lifetime of a session. */

void pys_session_free(PySession *s) {
        PySessions *m = s->m;
        if (LIST_IS_LINKED(sessions, m->sessions, s)) {
                LIST_REMOVE(sessions, m->sessions, s);
                m->n_sessions--;
        }
        /* The init is killed and reaped (proc_free()): nothing of the session is left in its cgroup
         * or scope, and nothing mounts its environment any more (the cache may evict it). */
        pys_store_forget(s);
        egress_run_free(s->egress); /* its connections end with it */
        s->proc = proc_free(s->proc);
        hold_release(&s->env_hold);
        pys_call_free(s->call);
        free(s->msg_writing); /* its proc is idle: no write on the ring */
        if (s->open_call)
                pys_answer_error(s->open_call, s->open_owner, s->open_reply, "the session ended before it was ready");
        explicit_bzero(s->handle, sizeof(s->handle));
        free(s->traceparent);
        free(s->python_name);
        json_decref(s->prepared);
        free(s);
}

void pys_session_maybe_free(PySession *s) {
        if (s->state == PYSESSION_DEAD &&
            (!s->proc || (!proc_placing(s->proc) && !proc_busy(s->proc) &&
                          (proc_init_exited(s->proc) || !proc_spawned(s->proc)))))
                pys_session_free(s);
}

/* payload/'s CPU now (a session with a cgroup). */
PyUsage pys_usage_of_cgroup(PySession *s) {
        CgroupUsage u;
        if (proc_read_usage(s->proc, &u) < 0)
                return (PyUsage) {};
        return (PyUsage) { .user_usec = u.cpu_user_usec, .system_usec = u.cpu_system_usec, .account = u.account,
                           .have = true };
}

static PyUsage usage_of_report(const SandboxReport *r) {
        return (PyUsage) { .user_usec = r->utime_usec, .system_usec = r->stime_usec, .peak_bytes = r->maxrss_bytes,
                           .have = true };
}
void pys_stream_read(PySession *s, int stream) {
        /* While opening, stdout carries exactly the ready line first. */
        size_t max = stream == 0 && s->state == PYSESSION_OPENING ? PYSESSION_READY_BYTES - s->ready_got
                                                                   : PYSESSION_READ_BYTES;
        s->streams[stream].paused = false;
        proc_read(s->proc, stream, max);
}

/* The reads the session stopped between calls, again (a call starts, or the session is killed
 * during one and its output is read to EOF). */
void pys_streams_resume(PySession *s) {
        for (int i = 0; i < 2; i++)
                if (s->streams[i].paused)
                        pys_stream_read(s, i);
}

static void session_record_fill(const PySession *s, MetricsPySession *ps) {
        *ps = (MetricsPySession) {
                .id = s->id_hash,
                .run_id = s->id,
                .unit = proc_unit(s->proc),
                .limits = proc_limits(s->proc),
                .traceparent = s->traceparent,
                .tenant = *s->principal ? s->principal : NULL,
                .idle_timeout_s = (uint32_t) (s->idle_usec / 1000000u),
                .lifetime_s = s->m->config.lifetime_s,
        };
}

/* The close record of a session whose open was recorded (one that never became ready was
 * answered with a tool error, and is not a session operators saw open). */
static void session_record_closed(PySession *s, PySessionEnd end, const char *why, const CgroupStats *stats) {
        Metrics *metrics = sessions_metrics(s->m);
        if (!metrics || !s->announced)
                return;
        MetricsPySession ps;
        session_record_fill(s, &ps);
        ps.reason = pysession_end_names[end];
        ps.detail = why;
        ps.age_ms = (now_usec() - s->t_open) / 1000u;
        ps.calls = s->calls;
        ps.memory_peak_bytes = stats ? stats->memory_peak_bytes : 0;
        ps.oom_killed = stats && stats->oom_killed;
        metrics_py_session_closed(metrics, &ps);
}

/* The session is over: every process goes (payload/'s cgroup.kill, then the init's SIGKILL, which
 * ends its PID namespace); a call in flight is answered as it stands; the handle is dead at once. */
void pys_session_kill(PySession *s, PySessionEnd end, const char *why) {
        if (s->state == PYSESSION_DEAD)
                return;
        log_debug("python session %s: ended: %s", s->id_hash, why);
        pys_store_forget(s); /* at once: a restart from here does not bring it back */
        bool had_call = s->state == PYSESSION_BUSY && s->call;
        s->state = PYSESSION_DEAD;
        /* The counters before they go with the init: this call's OOM kill, the session's peak. */
        CgroupStats stats = {};
        bool have_stats = proc_read_stats(s->proc, &stats) >= 0;
        if (had_call) {
                if (!s->call->t_end)
                        s->call->t_end = now_usec();
                if (have_stats) {
                        s->call->stats = stats;
                        s->call->have_stats = true;
                        s->call->usage = pys_usage_of_cgroup(s);
                }
        }
        /* How the interpreter ended, from the counters first (go-judge's rule, style.md): an OOM kill
         * is a SIGKILL, which alone would read as a crash. */
        if (end == PYSESSION_END_EXITED || end == PYSESSION_END_CRASH) {
                if (stats.oom_killed)
                        end = PYSESSION_END_OOM;
                else if (s->python_exited && WIFSIGNALED(s->wait_status))
                        end = PYSESSION_END_CRASH;
        }
        session_record_closed(s, end, why, have_stats ? &stats : NULL);
        (void) proc_kill_payload(s->proc);
        /* What the call printed up to its end is its answer: the pipes are read to their EOF,
         * which the kill brings (no process outside the sandbox holds their write ends). */
        s->finish_pending = had_call;
        if (had_call)
                pys_streams_resume(s);
        if (s->open_call) {
                McpCall *c = TAKE_PTR(s->open_call);
                pys_answer_errorf(c, s->open_owner, s->open_reply, "cannot open a Python session: %s", why);
                pys_session_open_answered(s);
        }
        /* While systemd makes the scope the init must live: the proc kills it once the placement
         * is over (proc_kill_init()). */
        (void) proc_kill_init(s->proc);
        proc_cancel(s->proc, PROC_OP_TIMER | PROC_OP_STDIN | PROC_OP_REPORTS |
                                     (s->finish_pending ? 0 : PROC_OP_STREAMS));
        pys_session_finish_maybe(s);
        /* op_pidfd stays: its completion reaps the init, then the session is freed. */
        pys_session_maybe_free(s);
}

static void session_became_ready(PySession *s) {
        s->ready[PYSESSION_READY_BYTES - 1] = 0;
        if (strncmp(s->ready, PYSESSION_READY_PREFIX, strlen(PYSESSION_READY_PREFIX)) != 0) {
                pys_session_kill(s, PYSESSION_END_ERROR, "the session's interpreter did not start");
                return;
        }
        /* The line's CPU figures are not used: the base of the first call is read from the kernel
         * below. Its RSS is what the interpreter holds before the first call (the preload's too,
         * when warm), as a run's memory_at_start_bytes, in rlimit mode: no code of the caller's
         * has run in this interpreter yet, so it is still ours. With a cgroup, memory.current. */
        unsigned long long u = 0, sy = 0, rss = 0;
        (void) sscanf(s->ready + strlen(PYSESSION_READY_PREFIX), "%llu %llu %llu", &u, &sy, &rss);
        uint64_t memory = rss;
        CgroupUsage usage;
        if (proc_read_usage(s->proc, &usage) >= 0)
                memory = usage.memory_current_bytes;
        /* Frozen until its first call, and the base of that call's account (call_finish()). */
        if (proc_freeze(s->proc, true) < 0) {
                pys_session_kill(s, PYSESSION_END_ERROR, "cannot freeze the session between its calls");
                return;
        }
        if (proc_has_cgroup(s->proc))
                s->base = pys_usage_of_cgroup(s);
        else if (proc_ask_usage(s->proc) >= 0)
                s->base_asked = true;
        s->state = PYSESSION_IDLE;
        s->t_last = now_usec();
        proc_timer_clear(s->proc);
        /* Python has copied the launcher out of it. */
        proc_staging_remove(s->proc);

        McpCall *call = TAKE_PTR(s->open_call);
        Metrics *metrics = sessions_metrics(s->m);
        if (metrics) {
                const char *tp = mcp_call_traceparent(call);
                s->traceparent = tp ? strdup(tp) : NULL; /* without it (no memory) the close has none */
                MetricsPySession ps;
                session_record_fill(s, &ps);
                ps.open_ms = (s->t_last - s->t_open) / 1000u;
                ps.warm = s->warm;
                metrics_py_session_opened(metrics, &ps);
                s->announced = true;
        }
        uint64_t left = delta(s->t_open + (uint64_t) s->m->config.lifetime_s * 1000000u, now_usec());
        json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:b, s:I}", "session", s->handle, "idle_timeout_s",
                              (json_int_t) (s->idle_usec / 1000000u), "expires_in_s", (json_int_t) (left / 1000000u),
                              "limits", proc_limits(s->proc), "warm", s->warm,
                              "memory_at_start_bytes", (json_int_t) memory);
        /* What was prepared, in execute_python's shape: the interpreter, what was installed. */
        if (o && s->prepared && json_object_update_missing(o, s->prepared) < 0)
                json_decref(TAKE_PTR(o));
        pys_answer_json(call, s->open_owner, s->open_reply, o);
        pys_session_open_answered(s);
        /* Once it is a session its caller knows: it outlives a restart from here (store.c). */
        pys_store_save(s);
}

static void session_on_output(Proc *p, int stream, const char *buf, ssize_t res, void *userdata) {
        PySession *s = userdata;
        PyStream *st = &s->streams[stream];

        if (res <= 0) {
                /* EOF: Python's exit (or its kill) follows, from the init's report or its pidfd. */
                if (res < 0 && s->state != PYSESSION_DEAD)
                        pys_session_kill(s, PYSESSION_END_ERROR, "cannot read the session's output");
                pys_session_finish_maybe(s);
                pys_session_maybe_free(s);
                return;
        }
        if (s->state == PYSESSION_DEAD) {
                if (s->finish_pending && s->call) {
                        pys_stream_take(s, st, buf, (size_t) res);
                        pys_stream_read(s, stream);
                        return;
                }
                pys_session_maybe_free(s);
                return;
        }
        if (stream == 0 && s->state == PYSESSION_OPENING) {
                memcpy(s->ready + s->ready_got, buf, (size_t) res); /* at most what is missing */
                s->ready_got += (size_t) res;
                if (s->ready_got == PYSESSION_READY_BYTES)
                        session_became_ready(s);
        } else
                pys_stream_take(s, st, buf, (size_t) res);
        if (s->state == PYSESSION_DEAD) {
                pys_session_maybe_free(s);
                return;
        }
        if (s->state == PYSESSION_BUSY && !s->call->ending && s->streams[0].scan.ended && s->streams[1].scan.ended) {
                /* Not read again before the next call: nothing of the session's runs until then. */
                st->paused = true;
                pys_call_ended(s);
                if (s->state == PYSESSION_DEAD)
                        pys_session_maybe_free(s);
                return;
        }
        /* Between calls (just ready, or the call ending) the pipes are not read (issue 29.1): the
         * session is frozen, and a read would be the daemon's CPU spent on no call. */
        if (s->state == PYSESSION_IDLE || (s->state == PYSESSION_BUSY && s->call->ending)) {
                st->paused = true;
                return;
        }
        pys_stream_read(s, stream);
}

/* ---------------------------------------------------------------------------------------------
 * The sandbox's init, Python's exit, the deadline. */

static void session_on_report(Proc *p, const SandboxReport *report, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD) {
                pys_session_maybe_free(s);
                return;
        }
        if (report) {
                switch (report->kind) {
                case SANDBOX_REPORT_STARTED:
                        proc_watch_reports(p);
                        return;
                case SANDBOX_REPORT_USAGE:
                        /* In the order asked: the base at the ready line first, then each call's
                         * end (a call cannot end before the base was asked). */
                        proc_watch_reports(p);
                        if (s->base_asked) {
                                s->base_asked = false;
                                s->base = usage_of_report(report);
                        } else if (s->state == PYSESSION_BUSY && s->call && s->call->ending) {
                                s->call->usage = usage_of_report(report);
                                pys_call_done(s);
                        }
                        return;
                case SANDBOX_REPORT_EXITED:
                        s->python_exited = true;
                        s->wait_status = report->value;
                        s->exit_usage = usage_of_report(report);
                        if (s->state == PYSESSION_OPENING) {
                                /* How it ended is the one clue a failed start leaves. */
                                char why[96];
                                if (WIFSIGNALED(s->wait_status))
                                        snprintf(why, sizeof(why), "the interpreter was killed by SIG%s at its start",
                                                 sigabbrev_np(WTERMSIG(s->wait_status)) ?: "?");
                                else
                                        snprintf(why, sizeof(why), "the interpreter exited at its start (status %d)",
                                                 WEXITSTATUS(s->wait_status));
                                pys_session_kill(s, PYSESSION_END_ERROR, why);
                        } else
                                pys_session_kill(s, PYSESSION_END_EXITED, "the interpreter exited");
                        return;
                case SANDBOX_REPORT_FAILED:
                        pys_session_kill(s, PYSESSION_END_ERROR, "the sandbox could not start the interpreter");
                        return;
                default:
                        break;
                }
        }
        pys_session_kill(s, PYSESSION_END_ERROR, "the session's init stopped reporting");
}

/* The init exited and is reaped (or the watch came back cancelled): the session is over. */
static void session_on_exited(Proc *p, const siginfo_t *si, void *userdata) {
        PySession *s = userdata;
        pys_session_kill(s, PYSESSION_END_CRASH, "its init exited");
        pys_session_maybe_free(s);
}

static void session_on_settled(Proc *p, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD)
                pys_session_maybe_free(s);
}

static void session_on_timer(Proc *p, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD) {
                pys_session_maybe_free(s);
                return;
        }
        if (s->state == PYSESSION_OPENING) {
                /* systemd never finished the scope: given up, as run.c's placement deadline. */
                proc_place_cancel(p);
                pys_session_kill(s, PYSESSION_END_ERROR, "the interpreter did not become ready in time");
                return;
        }
        if (s->state != PYSESSION_BUSY || !s->call)
                return;
        if (!s->in_grace) {
                /* The deadline: KeyboardInterrupt, and a grace to unwind. */
                s->call->timed_out = true;
                s->call->interrupted = true;
                s->call->t_end = now_usec();
                s->in_grace = true;
                proc_interrupt(p);
                proc_timer_arm(p, PYSESSION_GRACE_USEC);
                return;
        }
        pys_session_kill(s, PYSESSION_END_TIMEOUT, "the call did not stop within the grace after its interrupt");
}

/* ---------------------------------------------------------------------------------------------
 * Opening. */

static int session_release(PySession *s) {
        int r = proc_release(s->proc);
        if (r < 0)
                return r;
        pys_stream_read(s, 0);
        pys_stream_read(s, 1);
        proc_watch_reports(s->proc);
        return 0;
}

static void session_on_placed(Proc *p, int error, const char *message, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD) {
                /* The kill pys_session_kill() asked for is done (proc_kill_init()). */
                pys_session_maybe_free(s);
                return;
        }
        if (error < 0) {
                pys_session_kill(s, PYSESSION_END_ERROR, message ? message : "cannot place the session in its scope");
                return;
        }
        if (session_release(s) < 0)
                pys_session_kill(s, PYSESSION_END_ERROR, "cannot release the session's sandbox");
}

static void session_on_written(Proc *p, int error, void *userdata) {
        PySession *s = userdata;
        if (s->state == PYSESSION_DEAD) {
                pys_session_maybe_free(s);
                return;
        }
        if (error < 0) {
                pys_session_kill(s, PYSESSION_END_ERROR, "cannot write the call to the interpreter");
                return;
        }
        free(TAKE_PTR(s->msg_writing));
}


const ProcHandler pys_session_proc_handler = {
        .placed = session_on_placed,
        .report = session_on_report,
        .exited = session_on_exited,
        .output = session_on_output,
        .written = session_on_written,
        .timer = session_on_timer,
        .settled = session_on_settled,
};

uint32_t pysession_backstop_s(uint32_t lifetime_s, uint32_t max_timeout_s) {
        uint64_t s = (uint64_t) lifetime_s + max_timeout_s + 60u;
        return (uint32_t) MIN(s, (uint64_t) UINT32_MAX / 2);
}

/* A ready sandbox taken by session_open was the pool's: one is made behind the open's answer, whose
 * write is on the ring already (as after a run's, scheduler.c). */
void pys_session_open_answered(PySession *s) {
        if (s->warm)
                run_pool_refill_later(s->m->env.pool);
}

/* PY_SESSION_ID (metrics.h): the first 16 hex digits of this machine's app-specific id for the
 * handle's 128 random bits, an HMAC-SHA256 keyed by /etc/machine-id
 * (sd_id128_get_machine_app_specific(3)). The handle, the session's only credential, is never
 * written, nor can it be had back from this; an operator given one finds its records with
 * `systemd-id128 machine-id --app-specific=<the handle's hex>`. Without a machine id (a bare
 * container) the session's run id, random as well, stands in. */
static void session_record_id(const char *handle, const char *run_id, char out[METRICS_PY_SESSION_ID_HEX + 1]) {
        const char *hex = strrchr(handle, '-');
        sd_id128_t app, id;
        char text[SD_ID128_STRING_MAX];
        if (sd_id128_from_string(hex ? hex + 1 : handle, &app) >= 0 && sd_id128_get_machine_app_specific(app, &id) >= 0)
                run_id = sd_id128_to_string(id, text);
        snprintf(out, METRICS_PY_SESSION_ID_HEX + 1, "%s", run_id);
}

/* Whether session_open needs config.prepare first: an interpreter named, or dependencies. */
static bool session_open_prepares(const McpExecArgs *a) {
        return a->python || json_array_size(a->dependencies) > 0;
}

/* prep: NULL when the call comes from the route table; else what config.prepare did (the interpreter,
 * the environment, held by prep->release from here on, and what the result adds). */
void pys_session_open(PySessions *m, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep) {
        const McpExecArgs *a = mcp_call_args(call);
        /* Whatever becomes of the call, the environment is the session's once it exists, else it
         * is given back on the way out. */
        _cleanup_(hold_release) PyHold hold = prep ? (PyHold) { prep->release, prep->userdata } : (PyHold) {};
        const char *python = prep && prep->python ? prep->python : m->env.python;
        if (m->config.max == 0 || !python) {
                pys_answer_error(call, owner, reply, m->config.max == 0
                        ? "Python sessions are disabled on this server (MCP_EXEC_PY_SESSIONS_MAX=0)"
                        : "Python sessions need the default interpreter, which was not found (MCP_EXEC_PYTHON)");
                return;
        }
        const char *tenant = mcp_call_principal(call);
        unsigned live = 0, mine = 0; /* a killed one is no longer counted, while its init is reaped */
        LIST_FOREACH(sessions, o, m->sessions) {
                live += o->state != PYSESSION_DEAD;
                mine += o->state != PYSESSION_DEAD && strcmp(o->principal, tenant) == 0;
        }
        /* Counted before the preparation too: nothing is installed for a session that has no place. */
        if (live >= m->config.max) {
                pys_answer_errorf(call, owner, reply, "too many Python sessions open: %u of %u "
                                                  "(MCP_EXEC_PY_SESSIONS_MAX); close one with session_close",
                              live, m->config.max);
                return;
        }
        unsigned tenant_max = *tenant && m->config.tenant_max ? m->config.tenant_max(m->config.tenant_userdata, tenant) : 0;
        if (tenant_max > 0 && mine >= tenant_max) {
                pys_answer_errorf(call, owner, reply, "too many Python sessions open for tenant %s: %u of %u "
                                                  "(sessions=%u on its line of the tenants file); close one with "
                                                  "session_close", tenant, mine, tenant_max, tenant_max);
                return;
        }
        if (!prep && session_open_prepares(a)) {
                /* The interpreter registry and the environments are pyexec's: it answers an
                 * interpreter that cannot be used or a dependency that cannot be installed, and
                 * hands the rest back to pysessions_open_prepared(). */
                int r = m->config.prepare ? m->config.prepare(m->config.prepare_userdata, call, owner, reply)
                                          : -EOPNOTSUPP;
                if (r < 0)
                        pys_answer_errorf(call, owner, reply,
                                      "cannot prepare the session's interpreter and dependencies: %s", strerror(-r));
                return;
        }

        PySession *s = calloc(1, sizeof(*s));
        if (!s) {
                pys_answer_error(call, owner, reply, "mcp-execd is out of memory");
                return;
        }
        *s = (PySession) {
                .m = m,
                .t_open = now_usec(),
                .store_fd = -EBADF,
        };
        memcpy(s->principal, mcp_call_principal(call), sizeof(s->principal));
        for (int i = 0; i < 2; i++)
                s->streams[i] = (PyStream) { .index = i };
        s->env_hold = hold_take(&hold);
        uint32_t idle = a->idle_timeout_s && a->idle_timeout_s < m->config.idle_s ? a->idle_timeout_s : m->config.idle_s;
        s->idle_usec = (uint64_t) idle * 1000000u;
        LIST_PREPEND(sessions, m->sessions, s);
        m->n_sessions++;
        s->state = PYSESSION_DEAD; /* until spawned: pys_session_free() on the way out */

        int r = str_random_id(s->handle, m->config.tag, PYSESSION_NONCE_HEX / 2);
        if (r >= 0 && prep && prep->extra) {
                const char *name = json_string_value(json_object_get(prep->extra, "python"));
                s->prepared = json_incref(prep->extra);
                if (name && !(s->python_name = strdup(name)))
                        r = -ENOMEM;
        }
        /* A ready sandbox of the pool when one is there and the session is the pool's kind (the
         * default interpreter, no environment: a prepared session is always made for itself): its
         * id names its scope, as a run that takes one. Nothing fails after the take. Not for a
         * tenant with a slice of its own: its session lives there, and ready sandboxes do not. */
        const EgressPolicy *egress = m->config.egress_of && m->env.egress
                                             ? m->config.egress_of(m->config.egress_userdata, s->principal)
                                             : NULL;
        RunReady ready;
        s->warm = r >= 0 && !prep && !egress && !cgroup_tenant_slice(m->env.cgroup, s->principal) &&
                  run_pool_take(m->env.pool, &ready) >= 0;
        if (s->warm) {
                /* Placed, released, its ready line read by the pool: its launcher waits for a
                 * message on stdin, which makes it a session (launch.py's _SESSION_SWITCH). */
                s->proc = ready.proc;
                proc_set_handler(s->proc, &pys_session_proc_handler, s);
                memcpy(s->id, proc_id(s->proc), sizeof(s->id));
        } else if (r >= 0)
                r = str_random_hex(s->id, 8);
        if (r >= 0)
                session_record_id(s->handle, s->id, s->id_hash);
        if (r < 0) {
                pys_session_free(s);
                pys_answer_errorf(call, owner, reply, "cannot make a session handle: %s", strerror(-r));
                return;
        }
        if (!s->warm) {
                r = proc_new(&(ProcSpec) { .ring = m->env.ring, .sandbox = m->env.sandbox,
                                           .cgroup = m->env.cgroup, .id = s->id,
                                           .backstop_s = pysession_backstop_s(m->config.lifetime_s,
                                                                              m->config.max_timeout_s),
                                           .tenant = s->principal },
                             &pys_session_proc_handler, s, &s->proc);
                if (r < 0) {
                        pys_session_free(s);
                        pys_answer_errorf(call, owner, reply, "cannot create the session's cgroup (%s backend): %s",
                                      cgroup_backend_name(m->env.cgroup), strerror(-r));
                        return;
                }
                _cleanup_free_ char *staging = NULL;
                if (asprintf(&staging, "%s/session-%s", m->env.state_dir, s->id) < 0) {
                        staging = NULL;
                        pys_session_free(s);
                        pys_answer_error(call, owner, reply, "mcp-execd is out of memory");
                        return;
                }
                r = run_launcher_spawn(s->proc, &(RunLauncherSpec) { .python = python,
                                                                     .env_dir = prep ? prep->env_dir : NULL,
                                                                     .staging = staging, .launcher = m->launcher,
                                                                     .launcher_len = m->launcher_len,
                                                                     .egress_port = egress ? EGRESS_PROXY_PORT : 0 });
                if (r >= 0 && egress)
                        r = egress_run_new(m->env.egress, proc_take_egress_fd(s->proc), egress, s->id, s->principal,
                                           &s->egress);
                if (r < 0) {
                        pys_session_free(s);
                        pys_answer_errorf(call, owner, reply, "cannot start the session's sandbox: %s", strerror(-r));
                        return;
                }
        }
        s->state = PYSESSION_OPENING;
        s->open_call = call;
        s->open_owner = owner;
        s->open_reply = reply;

        proc_watch_exit(s->proc);
        proc_timer_arm(s->proc, PYSESSION_OPEN_TIMEOUT_USEC);

        if (s->warm) {
                /* The switch, then its ready line: session_on_output() reads it as a cold session's. */
                proc_write(s->proc, m->switch_msg, m->switch_len, false);
                pys_stream_read(s, 0);
                pys_stream_read(s, 1);
                proc_watch_reports(s->proc);
                pys_sweep_arm(m);
                return;
        }
        _cleanup_free_ char *problem = NULL;
        r = proc_place(s->proc, &problem);
        if (r < 0) {
                pys_session_kill(s, PYSESSION_END_ERROR, problem ? problem : "cannot place the session in its cgroup");
                return;
        }
        if (r == 0) {
                /* session_on_placed() releases it */
        } else if (session_release(s) < 0) {
                pys_session_kill(s, PYSESSION_END_ERROR, "cannot release the session's sandbox");
                return;
        }
        pys_sweep_arm(m);
}

/* ---------------------------------------------------------------------------------------------
 * Idle and lifetime expiry. */

void pys_on_sweep(RingOp *op, int res) {
        PySessions *m = container_of(op, PySessions, op_sweep);
        if (m->stopped || res != -ETIME)
                return;
        uint64_t now = now_usec();
        LIST_FOREACH_SAFE(sessions, s, n, m->sessions) {
                if (s->state == PYSESSION_IDLE && now - s->t_last >= s->idle_usec)
                        pys_session_kill(s, PYSESSION_END_IDLE, "idle timeout");
                else if (s->state != PYSESSION_DEAD &&
                         now - s->t_open >= (uint64_t) m->config.lifetime_s * 1000000u)
                        pys_session_kill(s, PYSESSION_END_LIFETIME, "maximum lifetime (MCP_EXEC_PY_SESSION_LIFETIME_S)");
        }
        pys_sweep_arm(m);
}

void pys_sweep_arm(PySessions *m) {
        if (m->stopped || m->op_sweep.busy || m->n_sessions == 0)
                return;
        m->sweep_ts = (struct __kernel_timespec) { .tv_sec = PYSESSION_SWEEP_USEC / 1000000,
                                                   .tv_nsec = (PYSESSION_SWEEP_USEC % 1000000) * 1000 };
        struct io_uring_sqe *sqe = ring_get_sqe(m->env.ring, &m->op_sweep);
        io_uring_prep_timeout(sqe, &m->sweep_ts, 0, 0);
}
