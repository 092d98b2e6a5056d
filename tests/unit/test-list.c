/* test-list.c: the intrusive list of base/list.h: order, removal anywhere, safe iteration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "list.h"

typedef struct Item {
        int v;
        LIST_FIELDS(struct Item, items);
} Item;

static void expect_order(Item *head, const int *want, size_t n) {
        size_t i = 0;
        Item *prev = NULL;
        LIST_FOREACH(items, it, head) {
                assert_true(i < n);
                assert_int_equal(it->v, want[i]);
                assert_ptr_equal(it->items_prev, prev);
                prev = it;
                i++;
        }
        assert_int_equal(i, n);
}

static void test_prepend_append_remove(void **state) {
        Item a = { .v = 1 }, b = { .v = 2 }, c = { .v = 3 }, d = { .v = 4 };
        Item *head;
        LIST_HEAD_INIT(head);
        LIST_APPEND(items, head, &b);
        LIST_PREPEND(items, head, &a);
        LIST_APPEND(items, head, &d);
        LIST_INSERT_AFTER(items, head, &b, &c);
        expect_order(head, (int[]) { 1, 2, 3, 4 }, 4);
        assert_true(LIST_IS_LINKED(items, head, &c));

        LIST_REMOVE(items, head, &c); /* middle */
        assert_false(LIST_IS_LINKED(items, head, &c));
        expect_order(head, (int[]) { 1, 2, 4 }, 3);
        LIST_REMOVE(items, head, &a); /* head */
        expect_order(head, (int[]) { 2, 4 }, 2);
        LIST_REMOVE(items, head, &d); /* tail */
        expect_order(head, (int[]) { 2 }, 1);
        assert_ptr_equal(LIST_POP(items, head), &b);
        assert_null(head);
        assert_null(LIST_POP(items, head));
}

static void test_foreach_safe_removes(void **state) {
        Item it[5];
        Item *head = NULL;
        for (int i = 4; i >= 0; i--) {
                it[i] = (Item) { .v = i };
                LIST_PREPEND(items, head, &it[i]);
        }
        LIST_FOREACH_SAFE(items, i, n, head)
                if (i->v % 2 == 0)
                        LIST_REMOVE(items, head, i);
        expect_order(head, (int[]) { 1, 3 }, 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_prepend_append_remove),
                cmocka_unit_test(test_foreach_safe_removes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
