/* test-task.c: the task store (daemon/task/): ids, owners, both bounds, TTL from the end, working
 * tasks never expire, an end is final. Times are passed in, so expiry is exact here. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "str-util.h"
#include "task.h"

#define SEC 1000000u

/* owner, of no tenant ("" without a bound of its own). */
#define asker(o) (&(TaskAsker) { .owner = (o), .tenant = "", .tenant_max = UINT_MAX })
#define tenant_asker(o, t, max) (&(TaskAsker) { .owner = (o), .tenant = (t), .tenant_max = (max) })

static void test_ids(void **state) {
        TaskStore s;
        task_store_init(&s, 100, 100, UINT64_MAX, 10 * SEC);
        Task *a, *b;
        assert_int_equal(task_store_create(&s, asker("stdio"), 0, 1, 1, &a), 0);
        assert_int_equal(task_store_create(&s, asker("stdio"), 0, 1, 1, &b), 0);
        assert_int_equal(strlen(a->id), TASK_ID_LEN);
        assert_true(TASK_ID_LEN >= 32); /* 128 bits */
        assert_int_equal(strspn(a->id, "0123456789abcdef"), TASK_ID_LEN);
        assert_string_not_equal(a->id, b->id);
        assert_int_equal(a->status, TASK_WORKING);
        assert_ptr_equal(task_store_find(&s, "stdio", a->id, 2), a);
        assert_null(task_store_find(&s, "stdio", "0123", 2));
        task_store_done(&s);
        assert_int_equal(s.n_tasks, 0);
}

static void test_owners(void **state) {
        TaskStore s;
        task_store_init(&s, 100, 100, UINT64_MAX, 10 * SEC);
        Task *a;
        assert_int_equal(task_store_create(&s, asker("session:aaa"), 0, 1, 1, &a), 0);
        /* Another owner cannot see it, by find or list. */
        assert_null(task_store_find(&s, "session:bbb", a->id, 2));
        Task *l[4];
        assert_int_equal(task_store_list(&s, "session:bbb", 2, l, 4), 0);
        assert_int_equal(task_store_list(&s, "session:aaa", 2, l, 4), 1);
        assert_ptr_equal(l[0], a);
        char big[TASK_OWNER_MAX + 1];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        assert_int_equal(task_store_create(&s, asker(big), 0, 1, 1, &a), -EINVAL);
        task_store_done(&s);
}

static void test_bounds(void **state) {
        TaskStore s;
        task_store_init(&s, 3, 2, UINT64_MAX, 10 * SEC);
        Task *t[4];
        assert_int_equal(task_store_create(&s, asker("a"), 0, 1, 1, &t[0]), 0);
        assert_int_equal(task_store_create(&s, asker("a"), 0, 1, 1, &t[1]), 0);
        assert_int_equal(task_store_create(&s, asker("a"), 0, 1, 1, &t[2]), -EDQUOT);
        assert_int_equal(task_store_create(&s, asker("b"), 0, 1, 1, &t[2]), 0);
        assert_int_equal(task_store_create(&s, asker("c"), 0, 1, 1, &t[3]), -EBUSY);
        /* An ended task counts until its result expires, then frees its place. */
        task_end(t[0], TASK_COMPLETED, strdup("{}"), 5 * SEC, 5);
        assert_int_equal(task_store_create(&s, asker("c"), 0, 6 * SEC, 6, &t[3]), -EBUSY);
        assert_int_equal(task_store_create(&s, asker("c"), 0, 15 * SEC, 15, &t[3]), 0);
        assert_int_equal(s.n_tasks, 3);
        task_store_done(&s);
}

/* A task its owner was told the end of gives its place at a bound: the owner's own first (per
 * owner and in total), the oldest first; a working or unfetched one never does. */
static void test_fetched_make_room(void **state) {
        TaskStore s;
        task_store_init(&s, 4, 2, UINT64_MAX, 10 * SEC);
        Task *a1, *a2, *a3, *b1, *c1, *d1;
        assert_int_equal(task_store_create(&s, asker("a"), 0, 1, 1, &a1), 0);
        assert_int_equal(task_store_create(&s, asker("a"), 0, 1, 1, &a2), 0);
        task_fetched(a1); /* working: no effect */
        assert_int_equal(task_store_create(&s, asker("a"), 0, 1, 1, &a3), -EDQUOT);
        task_end(a1, TASK_COMPLETED, strdup("{}"), 2 * SEC, 2);
        task_end(a2, TASK_COMPLETED, strdup("{}"), 2 * SEC, 2);
        assert_int_equal(task_store_create(&s, asker("a"), 0, 3 * SEC, 3, &a3), -EDQUOT); /* ended, not fetched */
        task_fetched(a2);
        task_fetched(a1);
        char a1_id[TASK_ID_MAX + 1];
        strcpy(a1_id, a1->id);
        assert_int_equal(task_store_create(&s, asker("a"), 0, 3 * SEC, 3, &a3), 0);
        /* a1, the older, went; a2 is still there to fetch again. */
        assert_null(task_store_find(&s, "a", a1_id, 3 * SEC));
        assert_ptr_equal(task_store_find(&s, "a", a2->id, 3 * SEC), a2);
        assert_int_equal(s.n_tasks, 2);

        /* The total bound: b's and c's tasks fill it; a new task of d takes a's fetched place, never
         * b's unfetched one; then nothing fetched is left and d is refused. */
        assert_int_equal(task_store_create(&s, asker("b"), 0, 3 * SEC, 3, &b1), 0);
        assert_int_equal(task_store_create(&s, asker("c"), 0, 3 * SEC, 3, &c1), 0);
        task_end(b1, TASK_COMPLETED, strdup("{}"), 3 * SEC, 3);
        char a2_id[TASK_ID_MAX + 1]; /* a2 is freed by the next create */
        strcpy(a2_id, a2->id);
        assert_int_equal(task_store_create(&s, asker("d"), 0, 4 * SEC, 4, &d1), 0);
        assert_null(task_store_find(&s, "a", a2_id, 4 * SEC));
        assert_ptr_equal(task_store_find(&s, "b", b1->id, 4 * SEC), b1);
        assert_int_equal(task_store_create(&s, asker("d"), 0, 4 * SEC, 4, &d1), -EBUSY);
        assert_int_equal(s.n_tasks, 4);
        task_store_done(&s);
}

/* A tenant's tasks= (issue 31.3) bounds its tasks whoever its owners (two 2025 sessions of one
 * tenant): past it -EUSERS; its own fetched task makes room, never another tenant's; tasks=0 none. */
static void test_tenant_bound(void **state) {
        TaskStore s;
        task_store_init(&s, 10, 10, UINT64_MAX, 10 * SEC);
        Task *a1, *a2, *b1, *x;
        assert_int_equal(task_store_create(&s, tenant_asker("s1", "alpha", 2), 0, 1, 1, &a1), 0);
        assert_int_equal(task_store_create(&s, tenant_asker("s2", "alpha", 2), 0, 1, 1, &a2), 0);
        assert_int_equal(task_store_create(&s, tenant_asker("s3", "alpha", 2), 0, 1, 1, &x), -EUSERS);
        assert_int_equal(task_store_create(&s, tenant_asker("s4", "beta", 2), 0, 1, 1, &b1), 0);
        assert_int_equal(task_store_create(&s, tenant_asker("s5", "zero", 0), 0, 1, 1, &x), -EUSERS);
        /* beta's fetched task is no room for alpha; alpha's own is. */
        task_end(b1, TASK_COMPLETED, strdup("{}"), 2 * SEC, 2);
        task_fetched(b1);
        assert_int_equal(task_store_create(&s, tenant_asker("s3", "alpha", 2), 0, 2 * SEC, 2, &x), -EUSERS);
        task_end(a1, TASK_COMPLETED, strdup("{}"), 2 * SEC, 2);
        task_fetched(a1);
        assert_int_equal(task_store_create(&s, tenant_asker("s3", "alpha", 2), 0, 2 * SEC, 2, &x), 0);
        assert_string_equal(x->tenant, "alpha");
        assert_ptr_equal(task_store_find(&s, "s4", b1->id, 2 * SEC), b1);
        assert_int_equal(s.n_tasks, 3);
        task_store_done(&s);
}

/* An id another instance made is told from one of ours, from none, and from garbage. */
static void test_other_instance(void **state) {
        TaskStore s;
        task_store_init(&s, 10, 10, UINT64_MAX, 10 * SEC);
        s.tag = "i8082";
        Task *t;
        assert_int_equal(task_store_create(&s, asker("a"), 0, 1, 1, &t), 0);
        char tag[17];
        assert_false(str_id_other_instance(t->id, "i8082", tag)); /* ours */
        assert_true(str_id_other_instance(t->id, "i8081", tag));
        assert_string_equal(tag, "i8082");
        assert_true(str_id_other_instance(t->id, NULL, tag)); /* an untagged instance made none */
        assert_false(str_id_other_instance(t->id + strlen("i8082-"), "i8081", tag)); /* no tag */
        assert_false(str_id_other_instance("i8082-0123", "i8081", tag));             /* too short */
        assert_false(str_id_other_instance("I8082-0123456789abcdef0123456789abcdef", NULL, tag));
        assert_false(str_id_other_instance("abcdefghijklmnopq-0123456789abcdef0123456789abcdef", NULL, tag));
        assert_false(str_id_other_instance("i8082-0123456789abcdef0123456789abcdeg", NULL, tag));
        assert_false(str_id_other_instance(NULL, NULL, tag));
        task_store_done(&s);
}

static void test_ttl(void **state) {
        TaskStore s;
        task_store_init(&s, 10, 10, UINT64_MAX, 10 * SEC);
        Task *w, *e, *shorter, *longer;
        assert_int_equal(task_store_create(&s, asker("o"), 0, 0, 0, &w), 0);
        assert_int_equal(task_store_create(&s, asker("o"), 0, 0, 0, &e), 0);
        assert_int_equal(task_store_create(&s, asker("o"), 2 * SEC, 0, 0, &shorter), 0);
        assert_int_equal(task_store_create(&s, asker("o"), 100 * SEC, 0, 0, &longer), 0);
        assert_int_equal(shorter->ttl_usec, 2 * SEC);
        assert_int_equal(longer->ttl_usec, 10 * SEC); /* never more than the store's */
        char id_e[TASK_ID_LEN + 1], id_w[TASK_ID_LEN + 1];
        strcpy(id_e, e->id);
        strcpy(id_w, w->id);

        task_end(e, TASK_COMPLETED, strdup("{\"result\":{}}"), 50 * SEC, 50);
        task_end(shorter, TASK_CANCELLED, NULL, 50 * SEC, 50);
        /* The TTL runs from the end, not the start. */
        assert_non_null(task_store_find(&s, "o", id_e, 59 * SEC));
        assert_null(task_store_find(&s, "o", id_e, 60 * SEC));
        assert_int_equal(s.n_tasks, 3 - 1 + 0); /* shorter expired at 52 s too */
        /* A working task never expires, however old. */
        assert_non_null(task_store_find(&s, "o", id_w, 1000000 * (uint64_t) SEC));
        task_store_done(&s);
}

static void test_end_is_final(void **state) {
        TaskStore s;
        task_store_init(&s, 10, 10, UINT64_MAX, 10 * SEC);
        Task *t;
        assert_int_equal(task_store_create(&s, asker("o"), 0, 0, 7, &t), 0);
        int dummy;
        t->run = &dummy;
        task_end(t, TASK_CANCELLED, NULL, 1 * SEC, 8);
        assert_null(t->run);
        assert_true(task_status_is_terminal(t->status));
        /* The run's late answer does not undo the cancel (and is freed: ASan/valgrind would see). */
        task_end(t, TASK_COMPLETED, strdup("late"), 2 * SEC, 9);
        assert_int_equal(t->status, TASK_CANCELLED);
        assert_null(t->packed);
        assert_null(task_reply(t));
        assert_int_equal(t->created_usec, 7);
        assert_int_equal(t->updated_usec, 8);
        task_store_done(&s);
}

/* n letters from a fixed seed: about as incompressible as letters get (log2(26) bits each), so a
 * reply's compressed size is known to be most of it. */
static char *reply_random(size_t n, unsigned seed) {
        char *r = malloc(n + 1);
        assert_non_null(r);
        for (size_t i = 0; i < n; i++)
                r[i] = (char) ('a' + rand_r(&seed) % 26);
        r[n] = '\0';
        return r;
}

/* What the store holds of reply once kept: its compressed size. */
static size_t packed_size(char *reply) {
        TaskStore s;
        task_store_init(&s, 1, 1, UINT64_MAX, SEC);
        Task *t;
        assert_int_equal(task_store_create(&s, asker("o"), 0, 1, 1, &t), 0);
        task_end(t, TASK_COMPLETED, reply, 2, 2);
        assert_int_equal(t->status, TASK_COMPLETED);
        size_t n = t->packed_len;
        task_store_done(&s);
        return n;
}

/* MCP_EXEC_TASKS_MAX_BYTES (issue 29 #3): kept results are counted in bytes, as kept (compressed);
 * a result that does not fit once fetched results made room fails the task (too_big) and is not
 * kept. */
static void test_bytes(void **state) {
        const size_t pa = packed_size(reply_random(600, 1)), pc = packed_size(reply_random(1000, 3)),
                     pd = packed_size(reply_random(1400, 4));
        /* a and b do not fit together where c fits alone, d never */
        assert_true(pa < pc && 2 * pa > pc && pd > pc);
        TaskStore s;
        task_store_init(&s, 100, 100, pc, 10 * SEC);
        Task *a, *b, *c, *d;
        assert_int_equal(task_store_create(&s, asker("o"), 0, 1, 1, &a), 0);
        assert_int_equal(task_store_create(&s, asker("o"), 0, 1, 1, &b), 0);
        char a_id[TASK_ID_MAX + 1];
        strcpy(a_id, a->id);
        task_end(a, TASK_COMPLETED, reply_random(600, 1), 2, 2);
        assert_int_equal(a->status, TASK_COMPLETED);
        assert_int_equal(s.bytes, pa);
        task_end(b, TASK_COMPLETED, reply_random(600, 2), 2, 2); /* a is not fetched: no room */
        assert_int_equal(b->status, TASK_FAILED);
        assert_true(b->too_big > 0 && b->too_big < 600);
        assert_null(b->packed);
        assert_int_equal(s.bytes, pa);

        assert_int_equal(task_store_create(&s, asker("o"), 0, 3, 3, &c), 0);
        task_fetched(a); /* now a gives its place */
        task_end(c, TASK_COMPLETED, reply_random(1000, 3), 4, 4); /* exactly the bound, once a is gone */
        assert_int_equal(c->status, TASK_COMPLETED);
        assert_int_equal(s.bytes, pc);
        assert_int_equal(s.n_tasks, 2); /* a was freed for c's room; b (failed) and c remain */
        assert_null(task_store_find(&s, "o", a_id, 5));
        _cleanup_free_ char *back = task_reply(c), *want = reply_random(1000, 3);
        assert_string_equal(back, want);

        task_fetched(c);
        assert_int_equal(task_store_create(&s, asker("p"), 0, 6, 6, &d), 0);
        /* a result larger than the bound itself never fits, and c is not freed for it in vain */
        task_end(d, TASK_COMPLETED, reply_random(1400, 4), 7, 7);
        assert_int_equal(d->status, TASK_FAILED);
        assert_int_equal(d->too_big, pd);
        assert_int_equal(s.bytes, pc);
        task_store_done(&s);
        assert_int_equal(s.bytes, 0);
}

/* The case: a reply holding 1 MiB of control characters, escaped (\u0001) in
 * structuredContent and again in the text content (\\u0001), 13 bytes an output byte, costs well
 * under 1 % of that kept; and the output's second copy, 600 KB on, costs nothing: a reply of the
 * same random text twice is kept in hardly more than once. Both come back byte for byte. */
static void test_compact(void **state) {
        const size_t n = 1 << 20;
        char *escaped = malloc(13 * n + 1);
        assert_non_null(escaped);
        char *p = escaped;
        for (size_t i = 0; i < n; i++)
                p = stpcpy(p, "\\u0001");
        for (size_t i = 0; i < n; i++)
                p = stpcpy(p, "\\\\u0001");
        const size_t len = (size_t) (p - escaped);
        _cleanup_free_ char *copy = strdup(escaped);
        assert_non_null(copy);

        TaskStore s;
        task_store_init(&s, 10, 10, UINT64_MAX, SEC);
        Task *t, *u;
        assert_int_equal(task_store_create(&s, asker("o"), 0, 1, 1, &t), 0);
        task_end(t, TASK_COMPLETED, escaped, 2, 2);
        assert_int_equal(t->status, TASK_COMPLETED);
        assert_int_equal(t->reply_len, len);
        assert_true(t->packed_len * 100 < len);
        _cleanup_free_ char *back = task_reply(t);
        assert_non_null(back);
        assert_memory_equal(back, copy, len + 1);

        const size_t half = 600 * 1000;
        _cleanup_free_ char *one = reply_random(half, 7);
        char *twice = malloc(2 * half + 1);
        assert_non_null(twice);
        memcpy(twice, one, half);
        memcpy(twice + half, one, half + 1);
        const size_t alone = packed_size(strdup(one));
        assert_int_equal(task_store_create(&s, asker("o"), 0, 1, 1, &u), 0);
        task_end(u, TASK_COMPLETED, twice, 2, 2);
        assert_true(u->packed_len < alone + alone / 20);
        _cleanup_free_ char *back2 = task_reply(u);
        assert_int_equal(strlen(back2), 2 * half);
        assert_memory_equal(back2, one, half);
        assert_memory_equal(back2 + half, one, half);
        task_store_done(&s);
}

/* What a keeper is told: ended (or fetched) tasks, and those gone for good. */
typedef struct Kept {
        unsigned kept, dropped;
} Kept;

static void on_kept(void *userdata, Task *t) {
        ((Kept *) userdata)->kept++;
}

static void on_dropped(void *userdata, Task *t) {
        ((Kept *) userdata)->dropped++;
}

/* An ended task's record (the keeper's, across a restart): its head reads back as the task; put
 * back in another store it answers as before; a cut, foreign or expired one is refused. */
static void test_record(void **state) {
        TaskStore s, s2;
        Kept k = {};
        task_store_init(&s, 100, 100, UINT64_MAX, 10 * SEC);
        s.keeper = (TaskKeeper) { on_kept, on_dropped, &k };
        Task *a, *b;
        assert_int_equal(task_store_create(&s, asker("tenant:alpha"), 0, 1 * SEC, 77, &a), 0);
        assert_int_equal(task_store_create(&s, asker("tenant:"), 0, 1 * SEC, 77, &b), 0);
        char head[TASK_RECORD_HEAD_BYTES];
        assert_int_equal(task_record_head(a, head), -EINVAL); /* working: nothing to keep */
        task_end(a, TASK_COMPLETED, strdup("{\"result\": \"kept\"}"), 2 * SEC, 88);
        task_end(b, TASK_CANCELLED, NULL, 2 * SEC, 88);
        assert_int_equal(k.kept, 2);
        task_fetched(b);
        task_fetched(b); /* once */
        assert_int_equal(k.kept, 3);

        assert_int_equal(task_record_head(a, head), 0);
        Task from;
        const char *why = NULL;
        assert_int_equal(task_record_parse(head, sizeof(head), &from, &why), 0);
        assert_string_equal(from.id, a->id);
        assert_string_equal(from.owner, "tenant:alpha");
        assert_string_equal(from.tenant, "");
        assert_int_equal(from.status, TASK_COMPLETED);
        assert_int_equal(from.created_usec, 77);
        assert_int_equal(from.updated_usec, 88);
        assert_int_equal(from.ended_usec, 2 * SEC);
        assert_int_equal(from.ttl_usec, 10 * SEC);
        assert_int_equal(from.packed_len, a->packed_len);
        assert_int_equal(from.reply_len, a->reply_len);
        assert_false(from.fetched);

        /* Put back in a new store (the next daemon's): found by its owner only, its reply whole. */
        task_store_init(&s2, 100, 100, UINT64_MAX, 10 * SEC);
        void *packed = malloc(a->packed_len);
        memcpy(packed, a->packed, a->packed_len);
        Task *back;
        assert_int_equal(task_store_restore(&s2, &from, packed, 3 * SEC, &back), 0);
        assert_ptr_equal(task_store_find(&s2, "tenant:alpha", a->id, 3 * SEC), back);
        assert_null(task_store_find(&s2, "tenant:beta", a->id, 3 * SEC));
        _cleanup_free_ char *reply = task_reply(back);
        assert_string_equal(reply, "{\"result\": \"kept\"}");
        assert_int_equal(s2.bytes, a->packed_len);
        /* Twice, or after its TTL: refused. */
        assert_int_equal(task_store_restore(&s2, &from, NULL, 3 * SEC, &back), -EEXIST);
        TaskStore s3;
        task_store_init(&s3, 100, 100, UINT64_MAX, 10 * SEC);
        assert_int_equal(task_store_restore(&s3, &from, NULL, 12 * SEC, &back), -ESTALE);
        task_store_init(&s3, 0, 100, UINT64_MAX, 10 * SEC);
        assert_int_equal(task_store_restore(&s3, &from, NULL, 3 * SEC, &back), -ENOSPC);
        task_store_done(&s2);

        /* A record cut short, of another version, with a status that is no end: refused. */
        char cut[TASK_RECORD_HEAD_BYTES];
        memcpy(cut, head, sizeof(cut));
        *strstr(cut, "end ") = 0;
        assert_int_equal(task_record_parse(cut, sizeof(cut), &from, &why), -EBADMSG);
        assert_string_equal(why, "the record is cut short");
        memcpy(cut, head, sizeof(cut));
        memcpy(strstr(cut, "status completed"), "status working\n ", 16);
        assert_int_equal(task_record_parse(cut, sizeof(cut), &from, &why), -EBADMSG);
        memcpy(cut, head, sizeof(cut));
        cut[strlen(TASK_RECORD_MAGIC) - 1] = '2';
        assert_int_equal(task_record_parse(cut, sizeof(cut), &from, &why), -EBADMSG);
        assert_int_equal(task_record_parse("", 0, &from, &why), -EBADMSG);

        /* Gone for good (expired): the keeper lets it go; the store's end drops nothing. */
        task_store_sweep(&s, 13 * SEC);
        assert_int_equal(k.dropped, 2);
        Task *c;
        assert_int_equal(task_store_create(&s, asker("tenant:alpha"), 0, 14 * SEC, 99, &c), 0);
        task_store_done(&s);
        assert_int_equal(k.dropped, 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_record),
                cmocka_unit_test(test_ids),
                cmocka_unit_test(test_bytes),
                cmocka_unit_test(test_compact),
                cmocka_unit_test(test_owners),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_fetched_make_room),
                cmocka_unit_test(test_tenant_bound),
                cmocka_unit_test(test_other_instance),
                cmocka_unit_test(test_ttl),
                cmocka_unit_test(test_end_is_final),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
