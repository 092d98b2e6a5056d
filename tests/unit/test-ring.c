/* test-ring.c: daemon/loop/ring.h: what the teardown relies on (ring_inflight() counts every SQE
 * until its CQE, the cancel requests included) and the one after-batch hook (ring_set_after()). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ring.h"

typedef struct Timer {
        RingOp op;
        struct __kernel_timespec ts;
        int res;
        int calls;
} Timer;

static void on_timer(RingOp *op, int res) {
        Timer *t = container_of(op, Timer, op);
        t->res = res;
        t->calls++;
}

static void timer_arm(Ring *r, Timer *t, long long sec) {
        *t = (Timer) { .op.callback = on_timer, .ts.tv_sec = sec };
        io_uring_prep_timeout(ring_get_sqe(r, &t->op), &t->ts, 0, 0);
}

static Ring *ring_or_skip(void) {
        Ring *r = NULL;
        int k = ring_new(8, &r);
        if (k == -ENOSYS || k == -EPERM)
                skip(); /* io_uring disabled here (seccomp, sysctl kernel.io_uring_disabled) */
        assert_int_equal(k, 0);
        return r;
}

static void test_inflight_counts_until_the_last_cqe(void **state) {
        _cleanup_(ring_freep) Ring *r = ring_or_skip();
        Timer t;
        assert_int_equal(ring_inflight(r), 0);
        timer_arm(r, &t, 3600);
        assert_int_equal(ring_inflight(r), 1);
        assert_true(t.op.busy);
        ring_cancel(r, &t.op);
        assert_int_equal(ring_inflight(r), 2); /* the cancel request has a CQE of its own */
        while (ring_inflight(r) > 0)
                assert_int_equal(ring_run_once(r, 1000000), 0);
        assert_false(t.op.busy);
        assert_int_equal(t.calls, 1);
        assert_int_equal(t.res, -ECANCELED);
        ring_cancel(r, &t.op); /* not in flight: nothing */
        assert_int_equal(ring_inflight(r), 0);
}

static void test_expired_timer_completes(void **state) {
        _cleanup_(ring_freep) Ring *r = ring_or_skip();
        Timer t;
        timer_arm(r, &t, 0);
        while (ring_inflight(r) > 0)
                assert_int_equal(ring_run_once(r, 1000000), 0);
        assert_int_equal(t.calls, 1);
        assert_int_equal(t.res, -ETIME);
}

static void after(void *userdata) {
        (*(int *) userdata)++;
}

static void test_one_after_hook(void **state) {
        _cleanup_(ring_freep) Ring *r = ring_or_skip();
        int a = 0, b = 0;
        assert_int_equal(ring_set_after(r, after, &a), 0);
        assert_int_equal(ring_set_after(r, after, &b), -EBUSY); /* another module's hook stays */
        assert_int_equal(ring_run_once(r, 1000), 0);            /* a batch, even an empty one */
        assert_int_equal(a, 1);
        assert_int_equal(b, 0);
        assert_int_equal(ring_set_after(r, NULL, NULL), 0);
        assert_int_equal(ring_run_once(r, 1000), 0);
        assert_int_equal(a, 1);
        assert_int_equal(ring_set_after(r, after, &b), 0);
        assert_int_equal(ring_run_once(r, 1000), 0);
        assert_int_equal(b, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_inflight_counts_until_the_last_cqe),
                cmocka_unit_test(test_expired_timer_completes),
                cmocka_unit_test(test_one_after_hook),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
