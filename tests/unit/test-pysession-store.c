/* test-pysession-store.c: a Python session's record in systemd's fd store (daemon/pysession/
 * store-meta.c): what is written reads back the same; a record cut short, of another version, with
 * a field missing, given twice or out of range is refused with a reason; a newer daemon's key is
 * skipped; what cannot be written as one line is not written. And the fd store's names
 * (daemon/loop/fdstore.c): what sd_notify(3) takes as an FDNAME. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fdstore.h"
#include "store-meta.h"

#define ID "0123456789abcdef"
#define HANDLE "i8081-0123456789abcdef0123456789abcdef"

static PyStoreMeta sample(void) {
        PyStoreMeta m = {
                .gen = 7,
                .pid = 4242,
                .idle_usec = 600000000,
                .t_open_usec = 1000,
                .t_last_usec = 5000,
                .calls = 3,
                .cpu_user_usec = 11,
                .cpu_system_usec = 12,
                .duration_ms = 13,
                .warm = true,
        };
        strcpy(m.id, ID);
        strcpy(m.id_hash, "fedcba9876543210");
        strcpy(m.handle, HANDLE);
        strcpy(m.principal, "alpha");
        strcpy(m.unit, "mcp-execd-run-" ID ".scope");
        return m;
}

static void round_trip(void **state) {
        PyStoreMeta m = sample(), back;
        char buf[PYS_STORE_META_BYTES];
        assert_int_equal(pys_store_meta_format(&m, buf), 0);
        const char *why = NULL;
        assert_int_equal(pys_store_meta_parse(buf, sizeof(buf), &back, &why), 0);
        assert_int_equal(back.gen, m.gen);
        assert_string_equal(back.id, m.id);
        assert_string_equal(back.id_hash, m.id_hash);
        assert_string_equal(back.handle, m.handle);
        assert_string_equal(back.principal, m.principal);
        assert_string_equal(back.unit, m.unit);
        assert_int_equal(back.pid, m.pid);
        assert_int_equal(back.idle_usec, m.idle_usec);
        assert_int_equal(back.t_open_usec, m.t_open_usec);
        assert_int_equal(back.t_last_usec, m.t_last_usec);
        assert_int_equal(back.calls, m.calls);
        assert_int_equal(back.cpu_user_usec, m.cpu_user_usec);
        assert_int_equal(back.cpu_system_usec, m.cpu_system_usec);
        assert_int_equal(back.duration_ms, m.duration_ms);
        assert_true(back.warm);

        /* No principal (a daemon serving without tenants): an empty value. */
        m.principal[0] = 0;
        m.warm = false;
        assert_int_equal(pys_store_meta_format(&m, buf), 0);
        assert_int_equal(pys_store_meta_parse(buf, sizeof(buf), &back, &why), 0);
        assert_string_equal(back.principal, "");
        assert_false(back.warm);
}

/* Replaces the first occurrence of from in buf by to (buf NUL-terminated, room enough). */
static void edit(char *buf, const char *from, const char *to) {
        char *p = strstr(buf, from);
        assert_non_null(p);
        size_t tail = strlen(p + strlen(from));
        memmove(p + strlen(to), p + strlen(from), tail + 1);
        memcpy(p, to, strlen(to));
}

static void refused(const char *from, const char *to, const char *reason) {
        PyStoreMeta m = sample(), back;
        char buf[PYS_STORE_META_BYTES + 64] = "";
        assert_int_equal(pys_store_meta_format(&m, buf), 0);
        edit(buf, from, to);
        const char *why = NULL;
        assert_int_equal(pys_store_meta_parse(buf, strlen(buf), &back, &why), -EBADMSG);
        assert_non_null(why);
        if (!strstr(why, reason))
                fail_msg("%s -> %s: refused with \"%s\", expected \"%s\"", from, to, why, reason);
}

static void refusals(void **state) {
        refused("end 7\n", "", "cut short");                        /* a kill in its write */
        refused("end 7\n", "end 6\n", "cut short");                 /* an older write's tail */
        refused("mcp-execd-session 1", "mcp-execd-session 2", "version");
        refused("calls 3\n", "", "missing");
        refused("calls 3\n", "calls 3\ncalls 4\n", "twice");
        refused("calls 3\n", "calls -3\n", "does not read");
        refused("calls 3\n", "calls 3x\n", "does not read");
        refused("calls 3\n", "calls 99999999999999999999999\n", "does not read");
        refused("warm 1\n", "warm yes\n", "neither 0 nor 1");
        refused("pid 4242\n", "pid 1\n", "pid");
        refused("id " ID "\n", "id 0123456789ABCDEF\n", "16 hex");
        refused("unit mcp-execd-run-" ID ".scope", "unit mcp-execd.service", "the session's own");
        refused("handle " HANDLE, "handle short", "handle");
        refused("handle " HANDLE, "handle " HANDLE "/../x", "handle");
        refused("principal alpha", "principal alpha\tbeta", "not printable");
        refused("principal alpha", "principal 0123456789012345678901234567890123456789", "too long");
        refused("t_open_usec 1000", "t_open_usec 9000", "order");
        refused("idle_usec 600000000", "idle_usec 0", "order");
        refused("gen 7\n", "gen7\n", "without a value");
}

static void unknown_key_skipped(void **state) {
        PyStoreMeta m = sample(), back;
        char buf[PYS_STORE_META_BYTES + 64] = "";
        assert_int_equal(pys_store_meta_format(&m, buf), 0);
        edit(buf, "calls 3\n", "calls 3\nnewer_daemons_field some text\n");
        assert_int_equal(pys_store_meta_parse(buf, strlen(buf), &back, NULL), 0);
        assert_int_equal(back.calls, 3);
}

static void garbage(void **state) {
        PyStoreMeta back;
        const char *why = NULL;
        assert_int_equal(pys_store_meta_parse("", 0, &back, &why), -EBADMSG);
        char zeros[PYS_STORE_META_BYTES] = {};
        assert_int_equal(pys_store_meta_parse(zeros, sizeof(zeros), &back, &why), -EBADMSG);
        char junk[PYS_STORE_META_BYTES];
        memset(junk, 'x', sizeof(junk)); /* not NUL-terminated: read up to n */
        assert_int_equal(pys_store_meta_parse(junk, sizeof(junk), &back, &why), -EBADMSG);
}

static void not_written(void **state) {
        char buf[PYS_STORE_META_BYTES];
        PyStoreMeta m = sample();
        strcpy(m.principal, "a\nb"); /* would read back as two lines */
        assert_int_equal(pys_store_meta_format(&m, buf), -EINVAL);
        m = sample();
        m.pid = 0;
        assert_int_equal(pys_store_meta_format(&m, buf), -EINVAL);
        m = sample();
        strcpy(m.handle, "not a handle");
        assert_int_equal(pys_store_meta_format(&m, buf), -EINVAL);
}

static void fdnames(void **state) {
        assert_true(fdstore_name_valid("pysession." ID ".control"));
        assert_false(fdstore_name_valid(""));
        assert_false(fdstore_name_valid("a:b")); /* the separator of $LISTEN_FDNAMES */
        assert_false(fdstore_name_valid("a\nFDSTOREREMOVE=1"));
        char longest[FDSTORE_NAME_MAX + 2];
        memset(longest, 'a', sizeof(longest));
        longest[FDSTORE_NAME_MAX] = 0;
        assert_true(fdstore_name_valid(longest));
        longest[FDSTORE_NAME_MAX] = 'a';
        longest[FDSTORE_NAME_MAX + 1] = 0;
        assert_false(fdstore_name_valid(longest));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(round_trip),        cmocka_unit_test(refusals), cmocka_unit_test(unknown_key_skipped),
                cmocka_unit_test(garbage),           cmocka_unit_test(not_written), cmocka_unit_test(fdnames),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
