/* test-scheduler.c: the scheduler through its run seam (scheduler_set_run_ops): fake runs that end
 * when the test says so. Queue order, the global and per-session limits, cancellation of queued and
 * running calls, shutdown, a room of the route table (the Python tools'), and what reaches the
 * metrics. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cleanup.h"
#include "scheduler.h"
#include "unit-fakes.h"
#include "unit-fixture.h"
#include "unit-mcp.h"

/* ---- calls and their replies ---------------------------------------------------------------- */

static McpServer *server;
static int next_id;

/* A tools/call of tool with args, as the transports get it from mcp_server_handle(). */
static McpCall *call_of(const char *tool, const char *args) {
        return fake_call(server, ++next_id, tool, args);
}

/* An exec call whose fake run prints code. */
static McpCall *exec_call(const char *code) {
        char args[128];
        snprintf(args, sizeof(args), "{\"code\":\"%s\"}", code);
        return call_of("exec", args);
}

/* What reply i says: the run's stdout for a result, the message for a tool error. */
static void expect_reply(size_t i, const void *owner, bool is_error, const char *text) {
        assert_true(i < n_replies);
        assert_ptr_equal(replies[i].owner, owner);
        json_t *result = unit_reply_result(replies[i].text, is_error);
        const char *got = is_error ? unit_result_text(result)
                                   : json_string_value(json_object_get(json_object_get(result, "structuredContent"), "stdout"));
        assert_non_null(got);
        assert_string_equal(got, text);
        json_decref(result);
}

static void expect_no_answer(size_t i, const void *owner) {
        assert_true(i < n_replies);
        assert_ptr_equal(replies[i].owner, owner);
        assert_null(replies[i].text);
}

/* ---- fixture -------------------------------------------------------------------------------- */

static Scheduler sched;
static FakeMetrics fm;
static int owner_a, owner_b; /* owners are only compared: their addresses will do */

static void setup_limits(uint32_t max_running, uint32_t queue_max) {
        scheduler_init(&sched, &(RunEnv) {}, max_running, queue_max);
        scheduler_set_run_ops(&sched, &fake_ops);
        scheduler_set_metrics(&sched, fm.metrics);
}

static int setup(void **state) {
        server = fake_server_new(&fake_limits);
        fake_metrics_new(&fm);
        fakes_reset();
        replies_reset();
        setup_limits(1, 16);
        return 0;
}

static int teardown(void **state) {
        fake_scheduler_done(&sched); /* every job is gone */
        fake_metrics_free(&fm);
        server = mcp_server_free(server);
        return 0;
}

/* ---- queue order and limits ----------------------------------------------------------------- */

static void test_fifo_order(void **state) {
        const char *codes[] = { "one", "two", "three", "four" };
        for (size_t i = 0; i < ELEMENTSOF(codes); i++)
                assert_int_equal(scheduler_submit(&sched, exec_call(codes[i]), &owner_a, on_reply), 0);
        assert_int_equal(n_fakes, 1);
        assert_int_equal(scheduler_active(&sched), 4);
        for (size_t i = 0; i < ELEMENTSOF(codes); i++) {
                assert_int_equal(n_fakes, i + 1); /* the next starts only when a slot frees */
                assert_string_equal(fakes[i].code, codes[i]);
                assert_true(fakes[i].user_code);
                fake_end(i);
                expect_reply(i, &owner_a, false, codes[i]);
        }
        assert_int_equal(sched.n_finished, 4);
        assert_int_equal(metrics_runs_total(fm.metrics, METRICS_OUTCOME_OK), 4);
}

/* What a queued call's progress says (scheduler_queued()): queued or not, and how many came before it
 * and still wait; a running call, or one of another owner's key, is not queued. */
static void test_queued_position(void **state) {
        char keys[3][32];
        for (size_t i = 0; i < 3; i++) {
                McpCall *c = exec_call("x");
                snprintf(keys[i], sizeof(keys[i]), "%s", mcp_call_id_key(c));
                assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), 0);
        }
        uint32_t ahead = 99;
        assert_false(scheduler_queued(&sched, &owner_a, keys[0], &ahead)); /* running */
        assert_true(scheduler_queued(&sched, &owner_a, keys[1], &ahead));
        assert_int_equal(ahead, 0);
        assert_true(scheduler_queued(&sched, &owner_a, keys[2], &ahead));
        assert_int_equal(ahead, 1);
        assert_false(scheduler_queued(&sched, &owner_b, keys[2], &ahead));
        fake_end(0); /* the second runs: the third is next */
        assert_false(scheduler_queued(&sched, &owner_a, keys[1], &ahead));
        assert_true(scheduler_queued(&sched, &owner_a, keys[2], &ahead));
        assert_int_equal(ahead, 0);
        fake_end(1);
        fake_end(2);
        assert_false(scheduler_queued(&sched, &owner_a, keys[2], &ahead));
}

static void test_max_running(void **state) {
        setup_limits(3, 16);
        for (int i = 0; i < 7; i++)
                assert_int_equal(scheduler_submit(&sched, exec_call("x"), &owner_a, on_reply), 0);
        assert_int_equal(n_fakes, 3);
        assert_int_equal(sched.n_running, 3);
        assert_int_equal(sched.n_queued, 4);
        fake_end(1);
        assert_int_equal(n_fakes, 4);
        assert_int_equal(sched.n_running, 3);
        for (size_t i = 0; i < 7; i++)
                if (i != 1) {
                        fake_end(i);
                        assert_true(sched.n_running <= 3);
                }
        assert_int_equal(n_fakes, 7);
        assert_int_equal(n_replies, 7);
}

static void test_queue_full(void **state) {
        setup_limits(2, 3);
        for (int i = 0; i < 5; i++)
                assert_int_equal(scheduler_submit(&sched, exec_call("x"), &owner_a, on_reply), 0);
        McpCall *c = exec_call("refused");
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), -EBUSY);
        char msg[320];
        scheduler_refusal_message(&sched, "", -EBUSY, msg, sizeof(msg));
        assert_non_null(strstr(msg, "MCP_EXEC_QUEUE_MAX=3"));
        assert_non_null(strstr(msg, "MCP_EXEC_MAX_CONCURRENT=2"));
        mcp_call_free(c); /* not taken */
        assert_int_equal(metrics_runs_total(fm.metrics, METRICS_OUTCOME_REJECTED), 1);
        assert_int_equal(n_replies, 0);

        /* A slot frees: one more fits. */
        fake_end(0);
        assert_int_equal(scheduler_submit(&sched, exec_call("x"), &owner_a, on_reply), 0);
        for (size_t i = 1; i < 6; i++)
                fake_end(i);
        assert_int_equal(n_replies, 6);
}

static const void *session_is_owner(const void *owner) {
        return owner;
}

static void test_session_limit(void **state) {
        scheduler_set_sessions(&sched, session_is_owner, 2);
        /* One runs, two wait: the session's share of the queue is full. */
        for (int i = 0; i < 3; i++)
                assert_int_equal(scheduler_submit(&sched, exec_call("a"), &owner_a, on_reply), 0);
        McpCall *c = exec_call("refused");
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), -EDQUOT);
        mcp_call_free(c);
        char msg[320];
        scheduler_refusal_message(&sched, "", -EDQUOT, msg, sizeof(msg));
        assert_non_null(strstr(msg, "MCP_EXEC_SESSION_QUEUE_MAX=2"));
        assert_int_equal(metrics_runs_total(fm.metrics, METRICS_OUTCOME_REJECTED), 1);

        /* Another session still has its share. */
        assert_int_equal(scheduler_submit(&sched, exec_call("b"), &owner_b, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("b"), &owner_b, on_reply), 0);
        assert_int_equal(sched.n_queued, 4);

        /* A run of the session started: its place in the queue is free again. */
        fake_end(0);
        assert_int_equal(scheduler_submit(&sched, exec_call("a"), &owner_a, on_reply), 0);
        for (size_t i = 1; i < 6; i++)
                fake_end(i);
        /* FIFO across sessions: a a b b a */
        assert_string_equal(fakes[3].code, "b");
        assert_string_equal(fakes[5].code, "a");
}

static void test_session_limit_free_slot(void **state) {
        /* A call that starts at once waits for nothing: no share of the queue is needed. */
        setup_limits(2, 16);
        scheduler_set_sessions(&sched, session_is_owner, 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("a"), &owner_a, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("a"), &owner_a, on_reply), 0);
        McpCall *c = exec_call("a");
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), -EDQUOT);
        mcp_call_free(c);
        fake_end(0);
        fake_end(1);
}

/* ---- slots held by other modules (issue 18: a busy Python session) -------------------------- */

static SchedulerSlot *granted[4];
static size_t n_granted;

static void on_granted(SchedulerSlot *slot) {
        assert_true(slot->held);
        assert_true(n_granted < ELEMENTSOF(granted));
        granted[n_granted++] = slot;
}

static void test_slot_fifo_with_runs(void **state) {
        n_granted = 0;
        SchedulerSlot a = { .granted = on_granted }, b = { .granted = on_granted };
        assert_int_equal(scheduler_slot_request(&sched, &a, ""), 1); /* free: held at once, no callback */
        assert_int_equal(n_granted, 0);
        assert_int_equal(sched.n_running, 1);
        /* The slot counts as a running call: a run waits behind it, and so does a second slot. */
        assert_int_equal(scheduler_submit(&sched, exec_call("run"), &owner_a, on_reply), 0);
        assert_int_equal(n_fakes, 0);
        assert_int_equal(scheduler_slot_request(&sched, &b, ""), 0);
        assert_true(b.waiting);
        assert_int_equal(sched.n_queued, 2);
        /* First come, first served: the run, then b. */
        scheduler_slot_release(&sched, &a);
        assert_int_equal(n_fakes, 1);
        assert_int_equal(n_granted, 0);
        fake_end(0);
        expect_reply(0, &owner_a, false, "run");
        assert_int_equal(n_granted, 1);
        assert_ptr_equal(granted[0], &b);
        assert_int_equal(sched.n_running, 1);
        assert_int_equal(sched.n_queued, 0);
        scheduler_slot_release(&sched, &b);
        assert_false(b.held);
        scheduler_slot_release(&sched, &b); /* neither held nor waiting: nothing */
        assert_int_equal(sched.n_running, 0);
}

static void test_slot_queue_bound(void **state) {
        setup_limits(1, 1);
        n_granted = 0;
        SchedulerSlot a = { .granted = on_granted }, b = { .granted = on_granted }, c = { .granted = on_granted };
        assert_int_equal(scheduler_submit(&sched, exec_call("run"), &owner_a, on_reply), 0);
        assert_int_equal(scheduler_slot_request(&sched, &a, ""), 0);
        /* The queue (MCP_EXEC_QUEUE_MAX=1) is full: a slot and a run are refused alike. */
        assert_int_equal(scheduler_slot_request(&sched, &b, ""), -EBUSY);
        McpCall *refused = exec_call("refused");
        assert_int_equal(scheduler_submit(&sched, refused, &owner_a, on_reply), -EBUSY);
        mcp_call_free(refused);
        /* A waiting slot given back leaves the queue without ever being granted. */
        scheduler_slot_release(&sched, &a);
        assert_false(a.waiting);
        assert_int_equal(sched.n_queued, 0);
        assert_int_equal(scheduler_slot_request(&sched, &c, ""), 0);
        fake_end(0);
        assert_int_equal(n_granted, 1);
        assert_ptr_equal(granted[0], &c);
        /* While the slot is held, nothing else runs; shutting down grants nothing more. */
        assert_int_equal(scheduler_slot_request(&sched, &a, ""), 0);
        scheduler_shutdown(&sched, "stopping");
        assert_int_equal(scheduler_slot_request(&sched, &b, ""), -EBUSY);
        scheduler_slot_release(&sched, &c);
        assert_int_equal(n_granted, 1);
        scheduler_slot_release(&sched, &a);
        assert_int_equal(sched.n_running, 0);
        assert_int_equal(sched.n_queued, 0);
}

/* ---- tenants (issue 31.3, 31.4): runs=, queue=, weight= ------------------------------------- */

static struct {
        const char *name;
        SchedulerTenantLimits limits;
} tenant_lines[4];

static bool tenant_limits(void *userdata, const char *tenant, SchedulerTenantLimits *ret) {
        for (size_t i = 0; i < ELEMENTSOF(tenant_lines); i++)
                if (tenant_lines[i].name && strcmp(tenant_lines[i].name, tenant) == 0) {
                        *ret = tenant_lines[i].limits;
                        return true;
                }
        return false;
}

static void tenants_set(const char *a, SchedulerTenantLimits la, const char *b, SchedulerTenantLimits lb) {
        memset(tenant_lines, 0, sizeof(tenant_lines));
        tenant_lines[0].name = a;
        tenant_lines[0].limits = la;
        tenant_lines[1].name = b;
        tenant_lines[1].limits = lb;
        scheduler_set_tenants(&sched, tenant_limits, NULL);
}

/* An exec call of tenant (the principal its server gives the calls it makes). */
static McpCall *tenant_call(const char *tenant, const char *code) {
        mcp_server_set_principal(server, tenant);
        McpCall *c = exec_call(code);
        mcp_server_set_principal(server, "");
        return c;
}

static void end_all(void) {
        for (size_t i = 0; i < n_fakes; i++)
                if (!fakes[i].ended)
                        fake_end(i);
}

/* The order the fake runs started in, as their codes' first letters. */
static void expect_start_order(const char *order) {
        assert_int_equal(n_fakes, strlen(order));
        for (size_t i = 0; i < n_fakes; i++)
                if (fakes[i].code[0] != order[i])
                        fail_msg("run %zu started was %s's; expected the order %s", i, fakes[i].code, order);
}

/* Tenant a keeps six calls waiting; b's three come later and are not served after a's six: the
 * tenants take turns (b first, as it has had none). */
static void test_tenant_turns(void **state) {
        tenants_set("a", SCHEDULER_TENANT_DEFAULT, "b", SCHEDULER_TENANT_DEFAULT);
        for (int i = 0; i < 6; i++)
                assert_int_equal(scheduler_submit(&sched, tenant_call("a", "a"), &owner_a, on_reply), 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(scheduler_submit(&sched, tenant_call("b", "b"), &owner_b, on_reply), 0);
        assert_int_equal(sched.n_tenants, 2);
        /* The status line's view (issue 33.5): two tenants busy, a the busiest with its six. */
        const char *busiest = NULL;
        uint32_t calls = 0;
        assert_int_equal(scheduler_tenants_busy(&sched, &busiest, &calls), 2);
        assert_string_equal(busiest, "a");
        assert_int_equal(calls, 6);
        for (size_t i = 0; i < 9; i++)
                fake_end(i);
        expect_start_order("abababaaa");
        assert_int_equal(sched.n_tenants, 0); /* a tenant with nothing running or waiting is let go */
        assert_int_equal(scheduler_tenants_busy(&sched, &busiest, &calls), 0);
        assert_null(busiest);
        assert_int_equal(calls, 0);
}

/* weight=200 against weight=100: two starts for one while both wait. */
static void test_tenant_weight(void **state) {
        SchedulerTenantLimits heavy = SCHEDULER_TENANT_DEFAULT;
        heavy.weight = 200;
        tenants_set("a", heavy, "b", SCHEDULER_TENANT_DEFAULT);
        /* c holds the one slot while a and b queue up. */
        assert_int_equal(scheduler_submit(&sched, tenant_call("c", "c"), &owner_a, on_reply), 0);
        for (int i = 0; i < 6; i++) {
                assert_int_equal(scheduler_submit(&sched, tenant_call("a", "a"), &owner_a, on_reply), 0);
                assert_int_equal(scheduler_submit(&sched, tenant_call("b", "b"), &owner_b, on_reply), 0);
        }
        for (size_t i = 0; i < 9; i++)
                fake_end(i);
        /* After c: six of a's and three of b's (at a tie the call that came first) */
        expect_start_order("cababaabaa");
        end_all();
        end_all();
        end_all();
}

/* runs=1: the tenant's second call waits though a slot is free, and that slot goes to another. */
static void test_tenant_runs(void **state) {
        setup_limits(3, 16);
        SchedulerTenantLimits one = SCHEDULER_TENANT_DEFAULT;
        one.runs = 1;
        tenants_set("a", one, NULL, SCHEDULER_TENANT_DEFAULT);
        for (int i = 0; i < 3; i++)
                assert_int_equal(scheduler_submit(&sched, tenant_call("a", "a"), &owner_a, on_reply), 0);
        assert_int_equal(n_fakes, 1);
        assert_int_equal(sched.n_queued, 2);
        assert_int_equal(scheduler_submit(&sched, tenant_call("b", "b"), &owner_b, on_reply), 0);
        assert_int_equal(n_fakes, 2); /* b starts at once */
        /* A session's busy call of a counts as one of a's runs: it waits too; b's does not. */
        n_granted = 0;
        SchedulerSlot sa = { .granted = on_granted }, sb = { .granted = on_granted };
        assert_int_equal(scheduler_slot_request(&sched, &sa, "a"), 0);
        assert_int_equal(scheduler_slot_request(&sched, &sb, "b"), 1);
        scheduler_slot_release(&sched, &sb);
        fake_end(0);
        assert_int_equal(n_fakes, 3); /* a's next, in arrival order */
        assert_int_equal(sched.n_running, 2);
        fake_end(2);
        assert_int_equal(n_fakes, 4);
        fake_end(3);
        assert_int_equal(n_granted, 1); /* then a's slot */
        assert_ptr_equal(granted[0], &sa);
        scheduler_slot_release(&sched, &sa);
        end_all();
        expect_start_order("abaa");
        assert_int_equal(sched.n_running, 0);
        assert_int_equal(sched.n_queued, 0);
}

/* queue=1: a's second waiting call is refused, with a message naming the setting; b still queues;
 * queue=0: nothing of the tenant waits. */
static void test_tenant_queue(void **state) {
        SchedulerTenantLimits q1 = SCHEDULER_TENANT_DEFAULT, q0 = SCHEDULER_TENANT_DEFAULT;
        q1.queue = 1;
        q0.queue = 0;
        tenants_set("a", q1, "z", q0);
        assert_int_equal(scheduler_submit(&sched, tenant_call("a", "a"), &owner_a, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, tenant_call("a", "a"), &owner_a, on_reply), 0);
        McpCall *c = tenant_call("a", "refused");
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), -EUSERS);
        mcp_call_free(c);
        char msg[320];
        scheduler_refusal_message(&sched, "a", -EUSERS, msg, sizeof(msg));
        assert_string_equal(msg, "the run queue holds no more calls of tenant a: 1 are waiting for a slot, its queue=1 on "
                                 "its line of the tenants file; running: 1 (MCP_EXEC_MAX_CONCURRENT=1 for all); retry "
                                 "when one has ended");
        assert_int_equal(metrics_runs_total(fm.metrics, METRICS_OUTCOME_REJECTED), 1);
        SchedulerSlot sa = { .granted = on_granted };
        assert_int_equal(scheduler_slot_request(&sched, &sa, "a"), -EUSERS);
        assert_int_equal(scheduler_submit(&sched, tenant_call("b", "b"), &owner_b, on_reply), 0);
        c = tenant_call("z", "refused");
        assert_int_equal(scheduler_submit(&sched, c, &owner_b, on_reply), -EUSERS);
        mcp_call_free(c);
        assert_int_equal(sched.n_tenants, 2); /* z, refused, is not kept */
        end_all();
        end_all();
        end_all();
        expect_start_order("aba");
        /* With a slot free, z's call starts: queue=0 bounds waiting, not running. */
        assert_int_equal(scheduler_submit(&sched, tenant_call("z", "z"), &owner_b, on_reply), 0);
        end_all();
        assert_int_equal(n_replies, 4);
}

/* A tenant that waited for nothing for a while earns no credit: it joins at the virtual time of
 * now, and takes turns with a tenant that kept calls waiting throughout. Cancelling the owner of
 * a tenant's every call lets the tenant go. */
static void test_tenant_no_credit(void **state) {
        tenants_set("a", SCHEDULER_TENANT_DEFAULT, "b", SCHEDULER_TENANT_DEFAULT);
        assert_int_equal(scheduler_submit(&sched, tenant_call("b", "b"), &owner_b, on_reply), 0);
        fake_end(0); /* b ran once, long ago */
        for (int i = 0; i < 8; i++)
                assert_int_equal(scheduler_submit(&sched, tenant_call("a", "a"), &owner_a, on_reply), 0);
        for (size_t i = 1; i < 6; i++)
                fake_end(i);
        /* a has had six turns; b comes back with four calls: they alternate with a's, not all first */
        for (int i = 0; i < 4; i++)
                assert_int_equal(scheduler_submit(&sched, tenant_call("b", "b"), &owner_b, on_reply), 0);
        for (size_t i = 6; i < 10; i++)
                fake_end(i);
        expect_start_order("baaaaaababa");
        scheduler_cancel_owner(&sched, &owner_b);
        assert_int_equal(sched.n_tenants, 1);
        end_all();
        end_all();
        assert_int_equal(sched.n_tenants, 0);
}

static void test_start_failure(void **state) {
        start_fails = 1;
        assert_int_equal(scheduler_submit(&sched, exec_call("a"), &owner_a, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("b"), &owner_a, on_reply), 0);
        /* The first could not start: answered with a tool error, its slot goes to the next. */
        expect_reply(0, &owner_a, true, "mcp-execd is out of memory and cannot start the run");
        assert_int_equal(n_fakes, 1);
        assert_string_equal(fakes[0].code, "b");
        fake_end(0);
        expect_reply(1, &owner_a, false, "b");
}

static void test_run_error(void **state) {
        assert_int_equal(scheduler_submit(&sched, exec_call("a"), &owner_a, on_reply), 0);
        fakes[0].error = "the sandbox could not start the run: boom";
        fake_end(0);
        expect_reply(0, &owner_a, true, "the sandbox could not start the run: boom");
        assert_int_equal(metrics_runs_total(fm.metrics, METRICS_OUTCOME_ERROR), 1);
}

static void test_nonzero_exit_recorded(void **state) {
        assert_int_equal(scheduler_submit(&sched, exec_call("a"), &owner_a, on_reply), 0);
        fakes[0].exit_code = 3;
        fake_end(0);
        expect_reply(0, &owner_a, false, "a");
        assert_int_equal(metrics_runs_total(fm.metrics, METRICS_OUTCOME_NONZERO), 1);
        assert_non_null(strstr(fm.log, "EXIT_CODE=3"));
}

/* ---- cancellation --------------------------------------------------------------------------- */

static void test_cancel_queued(void **state) {
        McpCall *first = exec_call("a"), *second = exec_call("b");
        char key[32];
        snprintf(key, sizeof(key), "%s", mcp_call_id_key(second));
        assert_int_equal(scheduler_submit(&sched, first, &owner_a, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, second, &owner_a, on_reply), 0);
        assert_true(scheduler_has(&sched, &owner_a, key));
        assert_false(scheduler_has(&sched, &owner_b, key)); /* another owner's ids are its own */
        assert_false(scheduler_cancel(&sched, &owner_b, key));

        assert_true(scheduler_cancel(&sched, &owner_a, key));
        expect_no_answer(0, &owner_a);
        assert_false(scheduler_has(&sched, &owner_a, key));
        assert_false(scheduler_cancel(&sched, &owner_a, key));
        assert_int_equal(sched.n_queued, 0);

        fake_end(0);
        assert_int_equal(n_fakes, 1); /* it never ran */
        expect_reply(1, &owner_a, false, "a");
}

static void test_cancel_running(void **state) {
        McpCall *c = exec_call("a");
        char key[32];
        snprintf(key, sizeof(key), "%s", mcp_call_id_key(c));
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("b"), &owner_a, on_reply), 0);
        assert_true(scheduler_cancel(&sched, &owner_a, key));
        assert_true(fakes[0].killed);
        assert_int_equal(n_replies, 0);
        /* Being killed, it no longer counts as the owner's: the id may be used again. */
        assert_false(scheduler_has(&sched, &owner_a, key));
        assert_false(scheduler_cancel(&sched, &owner_a, key));

        fake_end(0); /* the kill's end */
        expect_no_answer(0, &owner_a);
        assert_int_equal(metrics_runs_total(fm.metrics, METRICS_OUTCOME_CANCELLED), 1);
        assert_int_equal(n_fakes, 2);
        fake_end(1);
        expect_reply(1, &owner_a, false, "b");
}

static void test_cancel_owner(void **state) {
        assert_int_equal(scheduler_submit(&sched, exec_call("a1"), &owner_a, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("b1"), &owner_b, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("a2"), &owner_a, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("a3"), &owner_a, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("b2"), &owner_b, on_reply), 0);

        scheduler_cancel_owner(&sched, &owner_a);
        assert_true(fakes[0].killed);
        assert_int_equal(sched.n_queued, 2); /* b1 b2 */
        assert_int_equal(n_replies, 2);
        expect_no_answer(0, &owner_a);
        expect_no_answer(1, &owner_a);

        fake_end(0);
        expect_no_answer(2, &owner_a);
        assert_string_equal(fakes[1].code, "b1");
        fake_end(1);
        assert_string_equal(fakes[2].code, "b2");
        fake_end(2);
        expect_reply(3, &owner_b, false, "b1");
        expect_reply(4, &owner_b, false, "b2");
}

/* ---- shutdown ------------------------------------------------------------------------------- */

#define REASON "the run was stopped because mcp-execd is shutting down (SIGTERM)"

static void test_shutdown(void **state) {
        setup_limits(2, 16);
        for (int i = 0; i < 4; i++)
                assert_int_equal(scheduler_submit(&sched, exec_call("x"), i % 2 ? &owner_b : &owner_a, on_reply), 0);
        McpCall *c = exec_call("c");
        char key[32];
        snprintf(key, sizeof(key), "%s", mcp_call_id_key(c));
        assert_int_equal(scheduler_submit(&sched, c, &owner_b, on_reply), 0);
        assert_true(scheduler_cancel(&sched, &owner_b, key)); /* queued, dropped */
        assert_int_equal(n_replies, 1);

        scheduler_shutdown(&sched, REASON);
        /* Queued calls are answered now, running ones killed. */
        assert_int_equal(n_replies, 3);
        expect_reply(1, &owner_a, true, REASON);
        expect_reply(2, &owner_b, true, REASON);
        assert_true(fakes[0].killed);
        assert_true(fakes[1].killed);

        /* New calls are refused with the reason. */
        c = exec_call("late");
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), -EBUSY);
        mcp_call_free(c);
        char msg[320];
        scheduler_refusal_message(&sched, "", -EBUSY, msg, sizeof(msg));
        assert_string_equal(msg, REASON);

        scheduler_shutdown(&sched, "again"); /* once only */
        fake_end(1);
        fake_end(0);
        expect_reply(3, &owner_b, true, REASON);
        expect_reply(4, &owner_a, true, REASON);
        assert_int_equal(n_fakes, 2); /* nothing started after the shutdown */
        assert_int_equal(metrics_runs_total(fm.metrics, METRICS_OUTCOME_CANCELLED), 2);
}

static void test_shutdown_after_cancel(void **state) {
        /* A run cancelled before the shutdown stays unanswered. */
        McpCall *c = exec_call("a");
        char key[32];
        snprintf(key, sizeof(key), "%s", mcp_call_id_key(c));
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), 0);
        assert_true(scheduler_cancel(&sched, &owner_a, key));
        scheduler_shutdown(&sched, REASON);
        fake_end(0);
        assert_int_equal(n_replies, 1);
        expect_no_answer(0, &owner_a);
}

/* ---- a room of the route table (the Python tools') ------------------------------------------- */

typedef struct FakeHook {
        McpCall *call;
        void *owner;
        JobReplyFn reply;
        char id_key[32];
        int n_submitted, n_cancelled, n_shutdown;
        int n_released; /* JobPrep.release */
} FakeHook;

static int hook_submit(void *userdata, McpCall *call, void *owner, JobReplyFn reply) {
        FakeHook *h = userdata;
        assert_null(h->call);
        *h = (FakeHook) { .call = call, .owner = owner, .reply = reply, .n_submitted = h->n_submitted + 1,
                          .n_cancelled = h->n_cancelled, .n_shutdown = h->n_shutdown, .n_released = h->n_released };
        snprintf(h->id_key, sizeof(h->id_key), "%s", mcp_call_id_key(call));
        return 0;
}

static bool hook_has(void *userdata, const void *owner, const char *id_key) {
        FakeHook *h = userdata;
        return h->call && h->owner == owner && strcmp(h->id_key, id_key) == 0;
}

static bool hook_cancel(void *userdata, const void *owner, const char *id_key) {
        FakeHook *h = userdata;
        if (!h->call || h->owner != owner || (id_key && strcmp(h->id_key, id_key) != 0))
                return false;
        h->call = mcp_call_free(h->call);
        h->n_cancelled++;
        return true;
}

static void hook_shutdown(void *userdata, const char *reason) {
        FakeHook *h = userdata;
        h->n_shutdown++;
}

static void prep_release(void *userdata) {
        FakeHook *h = userdata;
        h->n_released++;
}

static FakeHook fake_hook;
/* What pyexec's room serves of exec and execute_python (pyexec.c). */
static const RouteVTable hook = {
        .name = "fake python",
        .serves = {
                [MCP_TOOL_EXEC] = ROUTE_PYTHON,
                [MCP_TOOL_EXECUTE_PYTHON] = ROUTE_PLAIN | ROUTE_PYTHON,
        },
        .submit = hook_submit,
        .has = hook_has,
        .cancel = hook_cancel,
        .shutdown = hook_shutdown,
};

/* The hook hands its call back, prepared. */
static int hook_hand_back(void) {
        FakeHook *h = &fake_hook;
        _cleanup_(json_decrefp) json_t *extra = json_pack("{s:s, s:n}", "python", "pypy3", "environment");
        assert_non_null(extra);
        JobPrep prep = {
                .python = "/usr/bin/pypy3",
                .env_dir = "/var/cache/envs/abc",
                .extra = extra,
                .release = prep_release,
                .userdata = h,
        };
        McpCall *c = h->call;
        h->call = NULL;
        int r = scheduler_submit_prepared(&sched, c, h->owner, h->reply, &prep);
        if (r < 0)
                mcp_call_free(c);
        return r;
}

static void test_hook(void **state) {
        fake_hook = (FakeHook) {};
        assert_int_equal(scheduler_route(&sched, &hook, &fake_hook), 0);

        /* exec without python goes straight to the queue. */
        assert_int_equal(scheduler_submit(&sched, exec_call("plain"), &owner_a, on_reply), 0);
        assert_int_equal(fake_hook.n_submitted, 0);
        assert_int_equal(n_fakes, 1);
        assert_string_equal(fakes[0].python, "");

        /* execute_python, and exec naming an interpreter, are prepared by the hook first. */
        assert_int_equal(scheduler_submit(&sched, call_of("execute_python", "{\"script\":\"print(1)\"}"), &owner_a,
                                          on_reply), 0);
        assert_int_equal(fake_hook.n_submitted, 1);
        assert_true(scheduler_has(&sched, &owner_a, fake_hook.id_key)); /* asked of the hook */
        assert_int_equal(hook_hand_back(), 0);
        assert_int_equal(sched.n_queued, 1);
        fake_end(0);
        assert_int_equal(n_fakes, 2);
        assert_string_equal(fakes[1].code, "print(1)");
        assert_string_equal(fakes[1].python, "/usr/bin/pypy3");
        assert_string_equal(fakes[1].env_dir, "/var/cache/envs/abc");
        assert_int_equal(fake_hook.n_released, 0); /* held while the job lives */
        fake_end(1);
        assert_int_equal(fake_hook.n_released, 1);
        /* extra's members join the result. */
        json_t *j = json_loads(replies[1].text, 0, NULL);
        json_t *sc = json_object_get(json_object_get(j, "result"), "structuredContent");
        assert_string_equal(json_string_value(json_object_get(sc, "python")), "pypy3");
        assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "print(1)");
        json_decref(j);

        /* Cancelling a call the hook holds is the hook's. */
        assert_int_equal(scheduler_submit(&sched, call_of("exec", "{\"code\":\"x\",\"python\":\"pypy3\"}"), &owner_b,
                                          on_reply), 0);
        assert_int_equal(fake_hook.n_submitted, 2);
        assert_true(scheduler_cancel(&sched, &owner_b, fake_hook.id_key));
        assert_int_equal(fake_hook.n_cancelled, 1);

        /* A prepared call refused (queue full) has its prep released at once. */
        setup_limits(1, 0);
        assert_int_equal(scheduler_route(&sched, &hook, &fake_hook), 0);
        assert_int_equal(scheduler_submit(&sched, exec_call("busy"), &owner_a, on_reply), 0);
        assert_int_equal(scheduler_submit(&sched, call_of("execute_python", "{\"script\":\"x\"}"), &owner_a,
                                          on_reply), 0);
        assert_int_equal(hook_hand_back(), -EBUSY);
        assert_int_equal(fake_hook.n_released, 2);

        /* Shutdown reaches the hook, and afterwards nothing goes to it. */
        scheduler_shutdown(&sched, REASON);
        assert_int_equal(fake_hook.n_shutdown, 1);
        McpCall *c = call_of("execute_python", "{\"script\":\"x\"}");
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), -EBUSY);
        mcp_call_free(c);
        assert_int_equal(fake_hook.n_submitted, 3);
        fake_end(2);
}

/* A call no room serves is refused, not run; a call two rooms claim is refused at start. */
static void test_routes(void **state) {
        fake_hook = (FakeHook) {};
        McpCall *c = call_of("check_environment", "{}");
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), -EOPNOTSUPP);
        char msg[320];
        scheduler_refusal_message(&sched, "", -EOPNOTSUPP, msg, sizeof(msg));
        assert_non_null(strstr(msg, "route table"));
        assert_int_equal(n_fakes, 0);

        assert_int_equal(scheduler_route(&sched, &hook, &fake_hook), 0);
        static const RouteVTable exec_again = { .name = "exec again", .serves = { [MCP_TOOL_EXEC] = ROUTE_PLAIN },
                                                .submit = hook_submit };
        assert_int_equal(scheduler_route(&sched, &exec_again, &fake_hook), -EEXIST);
        assert_int_equal(scheduler_route(&sched, &hook, &fake_hook), -EEXIST);
        /* Refused whole: plain exec is still the queue's. */
        assert_int_equal(scheduler_submit(&sched, exec_call("queued"), &owner_a, on_reply), 0);
        assert_int_equal(n_fakes, 1);
        assert_int_equal(fake_hook.n_submitted, 0);
        fake_end(0);

        /* Still refused with the room there: check_environment is not the fake's. */
        assert_int_equal(scheduler_submit(&sched, c, &owner_a, on_reply), -EOPNOTSUPP);
        mcp_call_free(c);
        assert_int_equal(fake_hook.n_submitted, 0);
}

static void test_cancel_owner_reaches_hook(void **state) {
        fake_hook = (FakeHook) {};
        assert_int_equal(scheduler_route(&sched, &hook, &fake_hook), 0);
        assert_int_equal(scheduler_submit(&sched, call_of("execute_python", "{\"script\":\"x\"}"), &owner_a,
                                          on_reply), 0);
        scheduler_cancel_owner(&sched, &owner_b);
        assert_int_equal(fake_hook.n_cancelled, 0);
        scheduler_cancel_owner(&sched, &owner_a);
        assert_int_equal(fake_hook.n_cancelled, 1);
        assert_int_equal(n_replies, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_fifo_order),
                fixture_test(test_queued_position),
                fixture_test(test_max_running),
                fixture_test(test_queue_full),
                fixture_test(test_session_limit),
                fixture_test(test_session_limit_free_slot),
                fixture_test(test_slot_fifo_with_runs),
                fixture_test(test_slot_queue_bound),
                fixture_test(test_tenant_turns),
                fixture_test(test_tenant_weight),
                fixture_test(test_tenant_runs),
                fixture_test(test_tenant_queue),
                fixture_test(test_tenant_no_credit),
                fixture_test(test_start_failure),
                fixture_test(test_run_error),
                fixture_test(test_nonzero_exit_recorded),
                fixture_test(test_cancel_queued),
                fixture_test(test_cancel_running),
                fixture_test(test_cancel_owner),
                fixture_test(test_shutdown),
                fixture_test(test_shutdown_after_cancel),
                fixture_test(test_hook),
                fixture_test(test_cancel_owner_reaches_hook),
                fixture_test(test_routes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
