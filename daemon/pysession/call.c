/* call.c: the call in flight in a Python session (pysession-internal.h): its message to the
 * launcher, its slot and deadline, its output up to the end line (endline.h), the freeze at that
 * line, its account read from the kernel, and its answer. */
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "log.h"
#include "pysession-internal.h"
#include "spawn.h"
#include "str-util.h"

void pys_call_free(PyCall *c) {
        if (!c)
                return;
        /* Held or waiting, the slot goes back with the call (the next queued call or run starts). */
        if (c->session && c->session->m->scheduler)
                scheduler_slot_release(c->session->m->scheduler, &c->slot);
        mcp_call_free(c->call);
        free(c->msg);
        output_done(&c->output);
        outputs_done(&c->outputs);
        egress_account_done(&c->egress_base);
        free(c);
}

static void call_freep(PyCall **c) {
        pys_call_free(*c);
}
/* Where a stream's bytes that are a call's output go (PyEndOutputFn's userdata). */
typedef struct PyOutputSink {
        Output *output;
        int index; /* 0 stdout, 1 stderr */
} PyOutputSink;

static void stream_output(void *userdata, const char *p, size_t n) {
        const PyOutputSink *sink = userdata;
        (void) output_add(sink->output, sink->index, p, n);
}
/* ---------------------------------------------------------------------------------------------
 * The end of a call. */

/* The call's run record, as a run's (scheduler.c's job_record()), with its session's id: sizes and
 * counters, never the code or its output. r: the call's result, zeroed when it was not finished. */
void pys_call_record(PySession *s, const PyCall *c, const ExecResult *r, bool cancelled) {
        Metrics *metrics = sessions_metrics(s->m);
        if (!metrics || !c->call)
                return;
        MetricsRun m = scheduler_record_of(c->call, r);
        m.run_id = s->id;
        m.unit = proc_unit(s->proc);
        m.limits = proc_limits(s->proc);
        m.cancelled = cancelled;
        m.py_session_id = s->id_hash;
        m.py_session_call = s->calls;
        metrics_run_finished(metrics, &m);
}

/* Answers the call in flight from what is known now; the session lives on if it is IDLE again. */
static void call_finish(PySession *s) {
        _cleanup_(call_freep) PyCall *c = TAKE_PTR(s->call);
        bool alive = s->state != PYSESSION_DEAD;

        if (alive && proc_has_cgroup(s->proc))
                c->have_stats = proc_read_stats(s->proc, &c->stats) >= 0;
        const CgroupStats stats = c->stats;
        bool have_stats = c->have_stats;
        /* Dead without a cgroup: what the init reaped when Python exited, if it said. */
        PyUsage usage = c->usage.have || alive ? c->usage : s->exit_usage;
        /* Bytes held back as a possible end line that never came are the call's. */
        for (int i = 0; i < 2; i++)
                py_end_scan_flush(&s->streams[i].scan, stream_output, &(PyOutputSink) { &c->output, i });
        if (alive && proc_pid(s->proc) > 0) {
                int r = run_outputs_read(&s->m->env, s->proc, &c->outputs);
                if (r < 0)
                        log_debug("python session: cannot read back outputs/: %s", strerror(-r));
        }
        (void) output_finish(&c->output);

        /* How the call ended. Alive, the session's launcher said it (its status; a call that timed
         * out was interrupted, not killed: -1 without a signal); dead, the init's report of Python's
         * exit, or else the kill (-SIGKILL: a session's contract, where a run says -1). */
        RunEnd e = {};
        if (alive)
                e.exit_code = c->status;
        else if (s->python_exited)
                run_end_wait_status(s->wait_status, &e);
        else {
                e.exit_code = -SIGKILL;
                snprintf(e.signal, sizeof(e.signal), "SIGKILL");
        }
        if (c->timed_out)
                e.exit_code = -1; /* mcp-exec's contract: -1 when timed out */
        if (have_stats) {
                e.oom_killed = stats.oom_killed;
                e.pids_limit_hit = stats.pids_limit_hit;
                e.memory_peak_bytes = stats.memory_peak_bytes;
        } else
                e.memory_peak_bytes = usage.peak_bytes;
        /* Nothing of the session ran since its base (it was frozen): the difference is the call's. */
        if (usage.have && s->base.have) {
                e.cpu_user_usec = delta(usage.user_usec, s->base.user_usec);
                e.cpu_system_usec = delta(usage.system_usec, s->base.system_usec);
                /* The same for the pressure and I/O totals (cgroup mode); pids.peak, as
                 * memory_peak_bytes, is the session's (memory_peak_scope says so). */
                if (have_stats)
                        exec_account_since(&usage.account, &s->base.account, &e.account);
        }
        uint64_t end = c->t_end ? c->t_end : now_usec();
        /* A call that never started (it waited for a slot when its session ended) ran for no time. */
        uint64_t wall = c->started ? delta(end, c->t_release) : 0;
        (void) run_end_bound(&e, wall, s->m->env.memory_max_bytes, s->id);

        ExecResult r;
        run_result_build(s->id, proc_limits(s->proc), &c->output, &c->outputs, &e, &r);
        r.timed_out = c->timed_out;
        r.duration_ms = wall / 1000;
        r.queue_ms = delta(c->started ? c->t_release : end, c->t_queued) / 1000;
        if (usage.have) {
                /* The totals, bounded as a call's figures are, by the session's age. */
                RunEnd total = { .cpu_user_usec = usage.user_usec, .cpu_system_usec = usage.system_usec };
                (void) run_end_bound(&total, delta(now_usec(), s->t_open), UINT64_MAX, s->id);
                s->total_cpu_user_usec = total.cpu_user_usec;
                s->total_cpu_system_usec = total.cpu_system_usec;
                s->base = usage;
        }
        s->total_duration_ms += r.duration_ms;
        ExecEgress egress;
        _cleanup_free_ ExecEgressHost *egress_hosts = NULL;
        if (s->egress) {
                if (egress_account_since(egress_run_account(s->egress), &c->egress_base, &egress, &egress_hosts) < 0)
                        egress = (ExecEgress) { .hosts_truncated = true }; /* no memory for the list */
                r.egress = &egress;
        }
        _cleanup_(json_decrefp) json_t *extra = json_pack(
                "{s:s, s:b, s:s, s:I, s:I, s:I, s:I}", "session", s->handle, "session_alive", alive,
                "memory_peak_scope", "session", "session_calls", (json_int_t) s->calls,
                "session_cpu_user_us", (json_int_t) s->total_cpu_user_usec,
                "session_cpu_system_us", (json_int_t) s->total_cpu_system_usec,
                "session_duration_ms", (json_int_t) s->total_duration_ms);
        r.extra = extra;
        pys_call_record(s, c, &r, !c->owner);
        if (c->owner) {
                char *reply = mcp_call_reply_result(c->call, &r);
                c->reply(c->owner, reply ?: mcp_call_reply_oom(c->call));
        }
        s->t_last = now_usec();
        pys_store_update(s); /* its counters and last call, for the next daemon (store.c) */
}

/* A session killed during a call: answered once both pipes are at EOF (all it printed is read). */
void pys_session_finish_maybe(PySession *s) {
        if (s->finish_pending && proc_eof(s->proc, 0) && proc_eof(s->proc, 1)) {
                s->finish_pending = false;
                if (s->call)
                        call_finish(s);
        }
}

/* The call is over: its answer, and the session waits for the next. */
void pys_call_done(PySession *s) {
        s->state = PYSESSION_IDLE;
        call_finish(s);
}

/* Both end lines were read. The session is frozen at once: the end line is the interpreter's, so
 * the caller's code may have written it (its nonce is one frame up) and go on running; frozen,
 * whatever goes on gains no time outside a call, and its CPU is the next call's. Only the status is
 * taken from the line, the code's own claim about itself as a run's exit status is; what the call
 * used is read from the kernel once the session is frozen. */
void pys_call_ended(PySession *s) {
        PyCall *c = s->call;
        c->t_end = now_usec();
        proc_timer_clear(s->proc);
        unsigned long long st = 0;
        c->status = sscanf(s->streams[0].scan.tail, "%llu", &st) == 1 ? (int) (st & 0xff) : 1;
        c->ending = true;
        if (proc_freeze(s->proc, true) < 0) {
                pys_session_kill(s, PYSESSION_END_ERROR, "cannot freeze the session between its calls");
                return;
        }
        if (proc_has_cgroup(s->proc)) {
                c->usage = pys_usage_of_cgroup(s);
                pys_call_done(s);
                return;
        }
        /* rlimit mode: the init's report finishes the call (session_on_report()). */
        if (proc_ask_usage(s->proc) < 0)
                pys_session_kill(s, PYSESSION_END_ERROR, "cannot ask the session's init for its usage");
}

/* ---------------------------------------------------------------------------------------------
 * Output: each stream's bytes go to the call's output up to its end line. */

void pys_stream_take(PySession *s, PyStream *st, const char *p, size_t n) {
        PyCall *c = s->call;
        if (!c || !c->started)
                return; /* between calls (a thread the code left running): not any call's */
        py_end_scan_take(&st->scan, c->nonce, p, n, stream_output, &(PyOutputSink) { &c->output, st->index });
}

/* ---------------------------------------------------------------------------------------------
 * The start of a call. */

/* The call holds its slot: its code goes to the interpreter and its deadline runs from now. */
static void call_start(PySession *s) {
        PyCall *c = s->call;
        if (proc_freeze(s->proc, false) < 0) {
                pys_session_kill(s, PYSESSION_END_ERROR, "cannot thaw the session for its call");
                return;
        }
        pys_streams_resume(s);
        c->started = true;
        s->calls++;
        s->in_grace = false;
        py_end_scan_reset(&s->streams[0].scan);
        py_end_scan_reset(&s->streams[1].scan);
        c->t_release = now_usec();
        /* The session's from here: the write may outlive the call (msg_writing). The last call's
         * write is over: its launcher read the whole message before its code ran and wrote the end
         * line, so the write's completion came first. */
        assert(!s->msg_writing);
        s->msg_writing = TAKE_PTR(c->msg);
        proc_write(s->proc, s->msg_writing, c->msg_len, false);
        proc_timer_arm(s->proc, (uint64_t) mcp_call_args(c->call)->timeout_s * 1000000u);
}

static void on_slot_granted(SchedulerSlot *slot) {
        PyCall *c = container_of(slot, PyCall, slot);
        call_start(c->session);
}

void pys_call_submit(PySession *s, McpCall *call, void *owner, JobReplyFn reply) {
        PySessions *m = s->m;
        const McpExecArgs *a = mcp_call_args(call);
        _cleanup_(call_freep) PyCall *c = calloc(1, sizeof(*c));
        if (!c) {
                pys_answer_error(call, owner, reply, "mcp-execd is out of memory");
                return;
        }
        output_init(&c->output, m->env.max_output_bytes);
        c->owner = owner;
        c->reply = reply;
        if (str_random_hex(c->nonce, PYSESSION_NONCE_HEX / 2) < 0) {
                pys_answer_error(call, owner, reply, "cannot make the call's nonce");
                return;
        }
        /* stdin goes first among the records, under a name no input file can have (they are relative):
         * the launcher gives it to this call's code as fd 0 and sys.stdin, and the next call none. */
        _cleanup_free_ ExecInputFile *records = NULL;
        const ExecInputFile *files = a->files;
        size_t n_files = a->n_files;
        if (a->stdin_len > 0) {
                records = calloc(a->n_files + 1, sizeof(*records));
                if (!records) {
                        pys_answer_error(call, owner, reply, "mcp-execd is out of memory");
                        return;
                }
                records[0] = (ExecInputFile) { .name = PYSESSION_STDIN_RECORD, .data = a->stdin_data, .len = a->stdin_len };
                if (a->n_files)
                        memcpy(records + 1, a->files, a->n_files * sizeof(*records));
                files = records;
                n_files++;
        }
        c->msg = run_launcher_message(c->nonce, a->code, a->code_len, files, n_files, NULL, 0, &c->msg_len);
        if (!c->msg) {
                pys_answer_error(call, owner, reply, "mcp-execd is out of memory");
                return;
        }
        c->call = call;
        c->session = s;
        c->slot.granted = on_slot_granted;
        c->t_queued = now_usec();
        /* What the session's connections did so far is not this call's (between calls it is frozen
         * where there are cgroups; without, a thread left running is counted to the next call). */
        if (s->egress && egress_account_copy(egress_run_account(s->egress), &c->egress_base) < 0) {
                c->call = NULL;
                pys_call_free(TAKE_PTR(c));
                pys_answer_error(call, owner, reply, "mcp-execd is out of memory");
                return;
        }
        int r = m->scheduler ? scheduler_slot_request(m->scheduler, &c->slot, mcp_call_principal(call)) : 1;
        if (r < 0) {
                char msg[512];
                scheduler_refusal_message(m->scheduler, mcp_call_principal(call), r, msg, sizeof(msg));
                c->call = NULL;
                pys_call_free(TAKE_PTR(c));
                pys_answer_error(call, owner, reply, msg);
                return;
        }
        /* From here the session is busy: a second call is refused, the idle expiry waits. */
        s->call = TAKE_PTR(c);
        s->state = PYSESSION_BUSY;
        if (r > 0)
                call_start(s);
}

void pys_call_cancel(PySession *s) {
        s->call->reply(s->call->owner, NULL);
        s->call->owner = NULL;
        if (!s->call->started) {
                /* Still waiting for a slot: it leaves the queue, the session never saw it. */
                pys_call_free(TAKE_PTR(s->call)); /* no record: as a queued run's cancel */
                s->state = PYSESSION_IDLE;
                s->t_last = now_usec();
        } else if (!s->in_grace && !s->call->ending) {
                /* (ending: its code is over and frozen, the answer dropped when it comes) */
                s->in_grace = true;
                s->call->interrupted = true;
                proc_interrupt(s->proc);
                proc_timer_arm(s->proc, PYSESSION_GRACE_USEC);
        }
}
