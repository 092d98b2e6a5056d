/* test-dispatch.c: the transports' shared dispatch (daemon/transport/dispatch.c) fed with actions a
 * real McpServer parsed, against a fake scheduler: this file defines the scheduler functions
 * dispatch.c calls (scheduler.h), and the build links dispatch.c without the run library, so no
 * run, ring or sandbox is involved. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dispatch.h"
#include "unit-fixture.h"
#include "unit-limits.h"

/* ---- the fake scheduler ------------------------------------------------------------------- */

#define FAKE_MAX 8

static struct {
        int submit_result;          /* what scheduler_submit() returns */
        bool cancel_answers_now;    /* scheduler_cancel() answers NULL at once (a queued call) */
        unsigned n_submitted;
        McpCall *calls[FAKE_MAX];   /* taken by submit */
        void *owners[FAKE_MAX];
        JobReplyFn replies[FAKE_MAX];
        unsigned n_cancelled;
        char cancelled_key[64];
        unsigned rejected_invalid, rejected_duplicate, rejected_tasks;
        Output *output;             /* what scheduler_output() gives for any running call, or NULL */
        bool queued;                /* what scheduler_queued() says of any call */
        uint32_t queued_ahead;
} fake;

const Output *scheduler_output(const Scheduler *s, const void *owner, const char *id_key) {
        return fake.output;
}

bool scheduler_queued(const Scheduler *s, const void *owner, const char *id_key, uint32_t *ret_ahead) {
        *ret_ahead = fake.queued_ahead;
        return fake.queued;
}

int scheduler_submit(Scheduler *s, McpCall *call, void *owner, JobReplyFn reply) {
        if (fake.submit_result < 0)
                return fake.submit_result;
        assert_true(fake.n_submitted < FAKE_MAX);
        fake.calls[fake.n_submitted] = call;
        fake.owners[fake.n_submitted] = owner;
        fake.replies[fake.n_submitted] = reply;
        fake.n_submitted++;
        return 0;
}

bool scheduler_cancel(Scheduler *s, const void *owner, const char *id_key) {
        for (unsigned i = 0; i < fake.n_submitted; i++)
                if (fake.owners[i] == owner) {
                        fake.n_cancelled++;
                        snprintf(fake.cancelled_key, sizeof(fake.cancelled_key), "%s", id_key);
                        if (fake.cancel_answers_now) {
                                fake.owners[i] = NULL;
                                mcp_call_free(TAKE_PTR(fake.calls[i]));
                                fake.replies[i]((void *) owner, NULL);
                        }
                        return true;
                }
        return false;
}

void scheduler_cancel_owner(Scheduler *s, const void *owner) {
        for (unsigned i = 0; i < fake.n_submitted; i++)
                if (fake.owners[i] == owner)
                        (void) scheduler_cancel(s, owner, "");
}

void scheduler_refusal_message(const Scheduler *s, const char *tenant, int r, char *buf, size_t size) {
        snprintf(buf, size, r == -EDQUOT ? "session queue full" : "queue full");
}

void scheduler_answered(Scheduler *s) {
}

void scheduler_note_rejected(Scheduler *s, const McpCall *call, const char *reason, const char *traceparent) {
        if (strcmp(reason, "invalid-arguments") == 0)
                fake.rejected_invalid++;
        else if (strcmp(reason, "duplicate-id") == 0)
                fake.rejected_duplicate++;
        else if (strcmp(reason, "client-tasks-full") == 0)
                fake.rejected_tasks++;
        else
                fail_msg("unexpected reason %s", reason);
}

/* The scheduler answers call i (reply NULL: cancelled). */
static void fake_answer(unsigned i, const char *reply) {
        assert_non_null(fake.owners[i]);
        void *owner = TAKE_PTR(fake.owners[i]);
        mcp_call_free(TAKE_PTR(fake.calls[i]));
        fake.replies[i](owner, reply ? strdup(reply) : NULL);
}

static void fake_reset(void) {
        for (unsigned i = 0; i < fake.n_submitted; i++)
                mcp_call_free(fake.calls[i]);
        memset(&fake, 0, sizeof(fake));
}

/* ---- the fake transport -------------------------------------------------------------------- */

typedef struct TestCall {
        DispatchCall call;
        void *ctx;
} TestCall;

typedef struct Session {
        Dispatch dispatch;
        unsigned n_answers, n_call_new, n_call_replies, n_null_replies;
        char last[512];
        void *last_ctx;
        DispatchCall *last_call;
        unsigned n_notes;
        bool no_stream;             /* call_notify() refuses (the call has no stream now) */
        char notes[8][1024];
} Session;

static void on_answer(Dispatch *d, void *ctx, char *reply) {
        Session *s = d->userdata;
        s->n_answers++;
        s->last_ctx = ctx;
        snprintf(s->last, sizeof(s->last), "%s", reply);
        free(reply);
}

static void on_call_new(Dispatch *d, DispatchCall *c, void *ctx) {
        Session *s = d->userdata;
        s->n_call_new++;
        ((TestCall *) c)->ctx = ctx;
        assert_true(dispatch_find(d, c->id_key) == c); /* already on the list */
}

static void on_call_reply(Dispatch *d, DispatchCall *c, char *reply) {
        Session *s = d->userdata;
        assert_null(c->dispatch);                      /* off the list */
        assert_null(dispatch_find(d, c->id_key));
        s->n_call_replies++;
        s->last_call = c;
        s->last_ctx = ((TestCall *) c)->ctx;
        if (!reply)
                s->n_null_replies++;
        snprintf(s->last, sizeof(s->last), "%s", reply ? reply : "");
        free(reply);
}

static bool on_call_notify(Dispatch *d, DispatchCall *c, const char *msg) {
        Session *s = d->userdata;
        if (s->no_stream)
                return false;
        assert_true(s->n_notes < 8);
        snprintf(s->notes[s->n_notes++], sizeof(s->notes[0]), "%s", msg);
        return true;
}

static const DispatchOps ops = {
        .call_size = sizeof(TestCall),
        .answer = on_answer,
        .call_new = on_call_new,
        .call_reply = on_call_reply,
        .call_notify = on_call_notify,
};

static Scheduler scheduler; /* never looked into by dispatch.c: only passed to the fakes */

typedef struct Fixture {
        McpServer *mcp;
        Session session;
} Fixture;

static int setup(void **state) {
        fake_reset();
        fake.cancel_answers_now = true;
        Fixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        f->mcp = mcp_server_new(&unit_limits, "0");
        assert_non_null(f->mcp);
        dispatch_init(&f->session.dispatch, &scheduler, &ops, &f->session);
        const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                           "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                           "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
        McpAction a;
        assert_int_equal(mcp_server_handle(f->mcp, init, strlen(init), &a), 0);
        dispatch_action(&f->session.dispatch, &a, NULL);
        mcp_action_done(&a);
        assert_int_equal(f->session.n_answers, 1);
        f->session.n_answers = 0;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        dispatch_detach(&f->session.dispatch);
        /* The scheduler answers what it still held: dropped, and the record freed (ASan checks). */
        for (unsigned i = 0; i < fake.n_submitted; i++)
                if (fake.owners[i])
                        fake_answer(i, "late");
        fake_reset();
        mcp_server_free(f->mcp);
        free(f);
        return 0;
}

/* Feeds one message through mcp_server_handle() and dispatch_action(), as a transport does. */
static McpActionKind feed(Fixture *f, const char *msg, void *ctx) {
        McpAction a;
        assert_int_equal(mcp_server_handle(f->mcp, msg, strlen(msg), &a), 0);
        McpActionKind kind = a.kind;
        dispatch_action(&f->session.dispatch, &a, ctx);
        mcp_action_done(&a);
        return kind;
}

static McpActionKind feed_call(Fixture *f, const char *id, const char *meta, void *ctx) {
        char msg[512];
        snprintf(msg, sizeof(msg),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                 "\"arguments\":{\"code\":\"print(1)\",\"timeout_s\":7}%s}}",
                 id, meta ? meta : "");
        return feed(f, msg, ctx);
}

static void test_reply_goes_to_answer(void **state) {
        Fixture *f = *state;
        int ctx;
        assert_int_equal(feed(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &ctx), MCP_ACTION_REPLY);
        assert_int_equal(f->session.n_answers, 1);
        assert_ptr_equal(f->session.last_ctx, &ctx);
        assert_non_null(strstr(f->session.last, "\"result\""));
        assert_int_equal(fake.rejected_invalid, 0);
        assert_int_equal(fake.n_submitted, 0);

        /* Arguments refused by mcp/: an answer, and one rejected run counted. */
        assert_int_equal(feed(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
                                 "{\"name\":\"exec\",\"arguments\":{}}}", NULL),
                         MCP_ACTION_REPLY);
        assert_int_equal(f->session.n_answers, 2);
        assert_non_null(strstr(f->session.last, "\"isError\":true"));
        assert_int_equal(fake.rejected_invalid, 1);

        /* A notification: nothing at all. */
        assert_int_equal(feed(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL),
                         MCP_ACTION_NONE);
        assert_int_equal(f->session.n_answers, 2);
}

static void test_call_submitted_and_answered(void **state) {
        Fixture *f = *state;
        int ctx;
        assert_int_equal(feed_call(f, "\"a\"", ",\"_meta\":{\"progressToken\":5}", &ctx), MCP_ACTION_CALL);
        assert_int_equal(fake.n_submitted, 1);
        assert_int_equal(f->session.n_call_new, 1);
        assert_int_equal(f->session.dispatch.n_calls, 1);
        DispatchCall *c = f->session.dispatch.calls;
        assert_ptr_equal(fake.owners[0], c); /* the scheduler's owner is the call record */
        assert_ptr_equal(dispatch_session_of(c), &f->session.dispatch);
        assert_string_equal(c->id_key, "\"a\"");
        assert_string_equal(c->progress_token, "5");
        assert_int_equal(c->timeout_s, 7);
        assert_ptr_equal(((TestCall *) c)->ctx, &ctx);
        assert_int_equal(f->session.n_answers, 0);

        fake_answer(0, "{\"result\":1}");
        assert_int_equal(f->session.n_call_replies, 1);
        assert_ptr_equal(f->session.last_ctx, &ctx);
        assert_string_equal(f->session.last, "{\"result\":1}");
        assert_int_equal(f->session.dispatch.n_calls, 0);
        assert_null(f->session.dispatch.calls);

        /* The id is free again once answered. */
        assert_int_equal(feed_call(f, "\"a\"", NULL, NULL), MCP_ACTION_CALL);
        assert_int_equal(fake.n_submitted, 2);
        assert_null(f->session.dispatch.calls->progress_token);
}

/* Issue 17.4: progress "accepted", then once per whole second, each with the output new since the
 * last one, whole characters only, within the cap; never for a call without a token. */
/* Waiting for a slot, a call's progress says so, how many are ahead, and that its deadline has not
 * started (issue 30.1: a client counting its own timeout sees why); then, running, the elapsed time. */
static void test_progress_while_queued(void **state) {
        Fixture *f = *state;
        Session *s = &f->session;
        fake.queued = true;
        fake.queued_ahead = 3;
        assert_int_equal(feed_call(f, "1", ",\"_meta\":{\"progressToken\":\"p\"}", NULL), MCP_ACTION_CALL);
        uint64_t t0 = s->dispatch.calls->t0_usec;
        dispatch_progress_tick(&s->dispatch, t0 + 1000000);
        assert_int_equal(s->n_notes, 2);
        assert_non_null(strstr(s->notes[1], "\"progress\":1,"));
        assert_non_null(strstr(s->notes[1], "\"message\":\"queued for 1 s, 3 calls ahead (at most "));
        assert_non_null(strstr(s->notes[1], " run at once); its "));
        assert_non_null(strstr(s->notes[1], " s deadline starts when it runs\""));
        fake.queued_ahead = 1;
        dispatch_progress_tick(&s->dispatch, t0 + 2000000);
        assert_non_null(strstr(s->notes[2], "\"message\":\"queued for 2 s, 1 call ahead (at most "));
        fake.queued = false;
        dispatch_progress_tick(&s->dispatch, t0 + 3000000);
        assert_int_equal(s->n_notes, 4);
        assert_non_null(strstr(s->notes[3], "\"progress\":3,"));
        assert_non_null(strstr(s->notes[3], " s elapsed of the "));
}

static void test_progress_streams_output(void **state) {
        Fixture *f = *state;
        Session *s = &f->session;
        Output o;
        output_init(&o, 10);
        fake.output = &o;

        assert_int_equal(feed_call(f, "1", NULL, NULL), MCP_ACTION_CALL); /* no token: no progress */
        assert_int_equal(feed_call(f, "2", ",\"_meta\":{\"progressToken\":\"p\"}", NULL), MCP_ACTION_CALL);
        assert_int_equal(s->n_notes, 1);
        assert_non_null(strstr(s->notes[0], "\"progressToken\":\"p\",\"progress\":0,"));
        assert_non_null(strstr(s->notes[0], "\"message\":\"accepted\""));
        DispatchCall *c = s->dispatch.calls;
        uint64_t t0 = c->t0_usec;

        dispatch_progress_tick(&s->dispatch, t0 + 900000); /* not a second yet */
        assert_int_equal(s->n_notes, 1);
        /* "ab" and the first two bytes of a euro sign: the unfinished character waits. */
        assert_int_equal(output_add(&o, 0, "ab\xe2\x82", 4), 0);
        assert_int_equal(output_add(&o, 1, "E", 1), 0);
        dispatch_progress_tick(&s->dispatch, t0 + 1000000);
        assert_int_equal(s->n_notes, 2);
        assert_non_null(strstr(s->notes[1], "\"progress\":1,\"total\":7,"));
        assert_non_null(strstr(s->notes[1], "{\"io.github.mcp-execd/output\":"
                                            "{\"stdout\":\"ab\",\"stderr\":\"E\"}}"));
        dispatch_progress_tick(&s->dispatch, t0 + 1900000); /* the same second: nothing */
        assert_int_equal(s->n_notes, 2);

        /* No stream for it now: nothing sent, nothing of the output lost. */
        assert_int_equal(output_add(&o, 0, "\xac", 1), 0);
        s->no_stream = true;
        dispatch_progress_tick(&s->dispatch, t0 + 2000000);
        assert_int_equal(s->n_notes, 2);
        s->no_stream = false;
        dispatch_progress_tick(&s->dispatch, t0 + 2100000);
        assert_int_equal(s->n_notes, 3);
        assert_non_null(strstr(s->notes[2], "\"progress\":2,"));
        assert_non_null(strstr(s->notes[2], "{\"stdout\":\"\xe2\x82\xac\"}"));

        /* Past the cap (10 bytes: 6 so far): the rest is dropped, "truncated" once, then progress
         * goes on without output. */
        assert_int_equal(output_add(&o, 0, "0123456789", 10), 0);
        dispatch_progress_tick(&s->dispatch, t0 + 3000000);
        assert_int_equal(s->n_notes, 4);
        assert_non_null(strstr(s->notes[3], "{\"stdout\":\"0123\",\"truncated\":true}"));
        assert_int_equal(c->streamed.sent, 10);
        dispatch_progress_tick(&s->dispatch, t0 + 4000000);
        assert_int_equal(s->n_notes, 5);
        assert_null(strstr(s->notes[4], "_meta"));

        /* The result is made from the same output, unchanged by the streaming. */
        assert_int_equal(output_finish(&o), 0);
        assert_int_equal(o.stream[0].len, 9);
        assert_memory_equal(o.stream[0].data, "ab\xe2\x82\xac" "0123", 9);
        dispatch_progress_tick(&s->dispatch, t0 + 5000000); /* finished: progress, no output */
        assert_int_equal(s->n_notes, 6);
        assert_null(strstr(s->notes[5], "_meta"));
        fake.output = NULL;
        output_done(&o);
}

static void test_duplicate_id_refused(void **state) {
        Fixture *f = *state;
        int ctx;
        feed_call(f, "1", NULL, NULL);
        feed_call(f, "1", NULL, &ctx);
        assert_int_equal(fake.n_submitted, 1);
        assert_int_equal(fake.rejected_duplicate, 1);
        assert_int_equal(f->session.n_answers, 1);
        assert_ptr_equal(f->session.last_ctx, &ctx);
        assert_non_null(strstr(f->session.last, "request ids must be unique"));
        assert_non_null(strstr(f->session.last, "\"id\":1"));
        assert_int_equal(f->session.dispatch.n_calls, 1);
        /* Another id is a new call; the same id as a string is another id. */
        feed_call(f, "2", NULL, NULL);
        feed_call(f, "\"1\"", NULL, NULL);
        assert_int_equal(fake.n_submitted, 3);
        assert_int_equal(f->session.dispatch.n_calls, 3);
}

static void test_cancel_by_id(void **state) {
        Fixture *f = *state;
        feed_call(f, "\"x\"", NULL, NULL);
        feed_call(f, "\"y\"", NULL, NULL);
        /* Unknown id: the scheduler is not asked. */
        assert_int_equal(feed(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
                                 "{\"requestId\":\"z\"}}", NULL),
                         MCP_ACTION_CANCEL);
        assert_int_equal(fake.n_cancelled, 0);
        feed(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"x\"}}", NULL);
        assert_int_equal(fake.n_cancelled, 1);
        assert_string_equal(fake.cancelled_key, "\"x\"");
        /* A cancelled call is never answered with a message: call_reply(NULL). */
        assert_int_equal(f->session.n_null_replies, 1);
        assert_int_equal(f->session.n_answers, 0);
        assert_int_equal(f->session.dispatch.n_calls, 1);
        assert_string_equal(f->session.dispatch.calls->id_key, "\"y\"");
}

static void test_refusals_answer_the_call(void **state) {
        Fixture *f = *state;
        static const struct {
                int r;
                const char *message;
        } refusals[] = {
                { -EBUSY, "queue full" },
                { -EDQUOT, "session queue full" },
                { -ENOMEM, DISPATCH_OOM_MESSAGE },
        };
        for (size_t i = 0; i < ELEMENTSOF(refusals); i++) {
                int ctx;
                fake.submit_result = refusals[i].r;
                feed_call(f, "3", ",\"_meta\":{\"progressToken\":\"p\"}", &ctx);
                assert_int_equal(f->session.n_call_new, i + 1); /* accepted, then refused */
                assert_int_equal(f->session.n_call_replies, i + 1);
                assert_ptr_equal(f->session.last_ctx, &ctx);
                assert_non_null(strstr(f->session.last, refusals[i].message));
                assert_non_null(strstr(f->session.last, "\"isError\":true"));
                assert_int_equal(f->session.dispatch.n_calls, 0);
        }
        assert_int_equal(fake.n_submitted, 0);
}

static void test_cancel_all_and_detach(void **state) {
        Fixture *f = *state;
        feed_call(f, "1", NULL, NULL);
        feed_call(f, "2", NULL, NULL);
        feed_call(f, "3", NULL, NULL);
        /* A running call is answered later: cancel_all leaves it on the list until then. */
        fake.cancel_answers_now = false;
        dispatch_cancel_all(&f->session.dispatch);
        assert_int_equal(fake.n_cancelled, 3);
        assert_int_equal(f->session.dispatch.n_calls, 3);
        fake_answer(1, NULL);
        assert_int_equal(f->session.n_null_replies, 1);
        assert_int_equal(f->session.dispatch.n_calls, 2);

        /* The session goes: every remaining call gets call_reply(NULL) now... */
        dispatch_detach(&f->session.dispatch);
        assert_int_equal(f->session.n_null_replies, 3);
        assert_int_equal(f->session.dispatch.n_calls, 0);
        /* ...and the scheduler's late answer is dropped, never reaching the transport. */
        fake_answer(0, "{\"late\":true}");
        assert_int_equal(f->session.n_call_replies, 3);
        assert_null(dispatch_session_of(fake.owners[2]));
}

/* The task id out of the last answer ("taskId":"<32 hex>"). */
static void last_task_id(const Session *s, char ret[static TASK_ID_LEN + 1]) {
        const char *p = strstr(s->last, "\"taskId\":\"");
        assert_non_null(p);
        p += strlen("\"taskId\":\"");
        memcpy(ret, p, TASK_ID_LEN);
        ret[TASK_ID_LEN] = '\0';
        assert_int_equal(strspn(ret, "0123456789abcdef"), TASK_ID_LEN);
}

static void feed_task(Fixture *f, Session *on, const char *method, const char *task_id) {
        char msg[256];
        snprintf(msg, sizeof(msg), "{\"jsonrpc\":\"2.0\",\"id\":50,\"method\":\"%s\",\"params\":{\"taskId\":\"%s\"}}",
                 method, task_id);
        McpAction a;
        assert_int_equal(mcp_server_handle(f->mcp, msg, strlen(msg), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_TASK);
        dispatch_action(&on->dispatch, &a, NULL);
        mcp_action_done(&a);
}

/* A call asking for a task: answered at once with the task, its run submitted as the task
 * dispatch's (not the session's), its answer kept; owners; cancel by the run's record (the
 * scheduler's request ids of two tasks may be the same); the per-owner bound. */
static void test_tasks(void **state) {
        Fixture *f = *state;
        DispatchTasks *dt = NULL;
        DispatchTasksConfig cfg = { .max_total = 8, .max_per_owner = 2, .max_bytes = UINT64_MAX, .ttl_usec = 10u * 1000000u };
        assert_int_equal(dispatch_tasks_new(&scheduler, &cfg, &dt), 0);
        dispatch_set_tasks(&f->session.dispatch, dt, "A");
        Session other = {};
        dispatch_init(&other.dispatch, &scheduler, &ops, &other);
        dispatch_set_tasks(&other.dispatch, dt, "B");

        char t1[TASK_ID_LEN + 1], t2[TASK_ID_LEN + 1];
        assert_int_equal(feed_call(f, "1", ",\"task\":{}", &f->session), MCP_ACTION_CALL);
        assert_int_equal(f->session.n_answers, 1);
        assert_non_null(strstr(f->session.last, "\"status\":\"working\""));
        last_task_id(&f->session, t1);
        assert_int_equal(fake.n_submitted, 1);
        assert_int_equal(f->session.n_call_new, 0);   /* the run is not the session's call */
        assert_int_equal(f->session.dispatch.n_calls, 0);
        /* The same request id again is another task, not a duplicate. */
        assert_int_equal(feed_call(f, "1", ",\"task\":{}", &f->session), MCP_ACTION_CALL);
        last_task_id(&f->session, t2);
        assert_string_not_equal(t1, t2);
        assert_int_equal(fake.n_submitted, 2);
        assert_int_equal(fake.rejected_duplicate, 0);
        /* A third is past MCP_EXEC_TASKS_PER_CLIENT (2 here). */
        feed_call(f, "3", ",\"task\":{}", &f->session);
        assert_non_null(strstr(f->session.last, "MCP_EXEC_TASKS_PER_CLIENT"));
        assert_int_equal(fake.n_submitted, 2);
        assert_int_equal(fake.rejected_tasks, 1);

        feed_task(f, &f->session, "tasks/get", t1);
        assert_non_null(strstr(f->session.last, "\"working\""));
        /* tasks/result of a working task waits, as a call would, on the session's list. */
        unsigned answers = f->session.n_answers;
        feed_task(f, &f->session, "tasks/result", t1);
        assert_int_equal(f->session.n_answers, answers);
        assert_int_equal(f->session.n_call_new, 1);
        assert_int_equal(f->session.dispatch.n_calls, 1);
        fake_answer(0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[],\"isError\":false}}");
        assert_int_equal(f->session.n_call_replies, 1);
        assert_int_equal(f->session.dispatch.n_calls, 0);
        assert_non_null(strstr(f->session.last, "related-task"));
        /* A waiting tasks/result is cancelled by its request id: it stops waiting, unanswered. */
        feed_task(f, &f->session, "tasks/result", t2);
        assert_int_equal(f->session.dispatch.n_calls, 1);
        assert_int_equal(feed(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":50}}", NULL),
                         MCP_ACTION_CANCEL);
        assert_int_equal(f->session.n_null_replies, 1);
        assert_int_equal(f->session.dispatch.n_calls, 0);
        assert_int_equal(fake.n_cancelled, 0); /* the task's run goes on */
        feed_task(f, &f->session, "tasks/get", t1);
        assert_non_null(strstr(f->session.last, "\"completed\""));
        feed_task(f, &f->session, "tasks/result", t1);
        assert_non_null(strstr(f->session.last, "related-task"));
        assert_non_null(strstr(f->session.last, "\"id\":50"));

        /* Another owner sees neither, and cannot cancel. */
        feed_task(f, &other, "tasks/get", t1);
        assert_non_null(strstr(other.last, "-32602"));
        feed_task(f, &other, "tasks/cancel", t2);
        assert_non_null(strstr(other.last, "-32602"));
        assert_int_equal(fake.n_cancelled, 0);

        feed_task(f, &f->session, "tasks/result", t2); /* waits; answered by the cancel below */
        unsigned replies = f->session.n_call_replies;
        feed_task(f, &f->session, "tasks/cancel", t2);
        assert_int_equal(f->session.n_call_replies, replies + 1);
        assert_int_equal(f->session.dispatch.n_calls, 0);
        assert_non_null(strstr(f->session.last, "\"cancelled\""));
        assert_int_equal(fake.n_cancelled, 1);
        assert_null(fake.owners[1]); /* the run was answered (NULL) and its record freed */
        feed_task(f, &f->session, "tasks/get", t2);
        assert_non_null(strstr(f->session.last, "\"cancelled\""));

        dispatch_set_tasks(&f->session.dispatch, NULL, "A");
        dispatch_tasks_free(dt);
}

/* How many tasks owner A's tasks/list shows (each entry has one "taskId"). */
static unsigned tasks_listed(Fixture *f) {
        feed_task(f, &f->session, "tasks/list", "");
        unsigned n = 0;
        for (const char *p = f->session.last; (p = strstr(p, "\"taskId\"")); p++)
                n++;
        return n;
}

/* A 2026 tools/call of a client that declared the tasks extension (every such call may be a task). */
static McpActionKind feed_modern_task_call(Fixture *f, const char *id, void *ctx) {
        char msg[640];
        snprintf(msg, sizeof(msg),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
                 "\"arguments\":{\"code\":\"print(1)\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                 "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":"
                 "{\"io.modelcontextprotocol/tasks\":{}}}}}}",
                 id);
        return feed(f, msg, ctx);
}

/* Issue 30.2: such a call is held for MCP_EXEC_TASK_INLINE_MS. A run that ends within it is answered
 * inline, its own reply, and its task (whose id nobody was told) is gone; one that does not gets its
 * CreateTaskResult when the window ends and is a task from then on; a held call cancelled takes its
 * task and run with it. A 2025 call that asked for a task gets one at once. */
static void test_task_inline(void **state) {
        Fixture *f = *state;
        Session *s = &f->session;
        DispatchTasks *dt = NULL;
        DispatchTasksConfig cfg = { .max_total = 8, .max_per_owner = 8, .max_bytes = UINT64_MAX, .ttl_usec = 10u * 1000000u,
                                    .inline_usec = 1000000u };
        assert_int_equal(dispatch_tasks_new(&scheduler, &cfg, &dt), 0);
        dispatch_set_tasks(&s->dispatch, dt, "A");
        int ctx;

        /* Ends within the window: its reply, inline, on the held request. */
        assert_int_equal(feed_modern_task_call(f, "1", &ctx), MCP_ACTION_CALL);
        assert_int_equal(s->n_answers, 0);
        assert_int_equal(s->dispatch.n_calls, 1);
        assert_int_equal(s->n_call_new, 1);
        assert_true(dispatch_wants_progress(&s->dispatch)); /* the transport ticks for the window */
        assert_int_equal(fake.n_submitted, 1);
        fake_answer(0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\"}}");
        assert_int_equal(s->n_call_replies, 1);
        assert_ptr_equal(s->last_ctx, &ctx);
        assert_string_equal(s->last, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\"}}");
        assert_int_equal(s->dispatch.n_calls, 0);
        assert_int_equal(tasks_listed(f), 0);

        /* Runs past the window: at its end, the CreateTaskResult; the task then ends as any. */
        assert_int_equal(feed_modern_task_call(f, "2", &ctx), MCP_ACTION_CALL);
        uint64_t t0 = s->dispatch.calls->t0_usec;
        dispatch_progress_tick(&s->dispatch, t0 + 999999);
        assert_int_equal(s->n_call_replies, 1);
        dispatch_progress_tick(&s->dispatch, t0 + 1000000);
        assert_int_equal(s->n_call_replies, 2);
        assert_non_null(strstr(s->last, "\"resultType\":\"task\""));
        assert_non_null(strstr(s->last, "\"status\":\"working\""));
        assert_int_equal(s->dispatch.n_calls, 0);
        assert_false(dispatch_wants_progress(&s->dispatch));
        char id2[TASK_ID_LEN + 1];
        last_task_id(s, id2);
        fake_answer(1, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
        assert_int_equal(s->n_call_replies, 2); /* the task's now: nothing more on the session */
        feed_task(f, s, "tasks/get", id2);
        assert_non_null(strstr(s->last, "\"completed\""));
        assert_int_equal(tasks_listed(f), 1);

        /* Cancelled while held: no answer, its run cancelled, its task gone. */
        assert_int_equal(feed_modern_task_call(f, "3", &ctx), MCP_ACTION_CALL);
        assert_int_equal(tasks_listed(f), 2);
        assert_int_equal(feed(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}",
                              NULL),
                         MCP_ACTION_CANCEL);
        assert_int_equal(s->n_null_replies, 1);
        assert_int_equal(fake.n_cancelled, 1);
        assert_int_equal(s->dispatch.n_calls, 0);
        assert_int_equal(tasks_listed(f), 1);

        /* A 2025 call that asked for a task: answered with it at once. */
        unsigned answers = s->n_answers;
        assert_int_equal(feed_call(f, "4", ",\"task\":{}", &ctx), MCP_ACTION_CALL);
        assert_int_equal(s->n_answers, answers + 1);
        assert_non_null(strstr(s->last, "\"status\":\"working\""));

        dispatch_set_tasks(&s->dispatch, NULL, "A");
        dispatch_tasks_free(dt);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_reply_goes_to_answer),
                fixture_test(test_call_submitted_and_answered),
                fixture_test(test_progress_streams_output),
                fixture_test(test_progress_while_queued),
                fixture_test(test_duplicate_id_refused),
                fixture_test(test_cancel_by_id),
                fixture_test(test_refusals_answer_the_call),
                fixture_test(test_cancel_all_and_detach),
                fixture_test(test_tasks),
                fixture_test(test_task_inline),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
