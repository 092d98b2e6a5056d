/* test-cgroup.c: what cgroup/ does without systemd or a delegated cgroup: backend none, the
 * dispatcher's choice along auto's order (with stand-in backends), and the shared cgroupfs file
 * helpers against a temporary directory laid out like a run's cgroups. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup-internal.h"
#include "fd-util.h"

/* ---- backend none -------------------------------------------------------------------------- */

static void placed_never(CgroupRun *cr, int error, const char *message, void *userdata) {
        fail_msg("placed() called for backend none (error %d: %s)", error, message ? message : "");
}

static void test_none(void **state) {
        CgroupConfig config = {
                .want = CGROUP_WANT_NONE, .memory_max_bytes = UINT64_MAX, .pids_max = UINT64_MAX,
        };
        Cgroup *c = NULL;
        char *why = (char *) "unset";

        assert_int_equal(cgroup_new(&config, &c, &why), 0);
        assert_non_null(c);
        assert_null(why); /* an explicit none is no fallback: nothing to warn about */
        assert_int_equal(cgroup_backend(c), CGROUP_BACKEND_NONE);
        assert_string_equal(cgroup_backend_name(c), "none");
        /* no Cgroup at all, as proc/ takes it, names the same backend (a run's error message) */
        assert_int_equal(cgroup_backend(NULL), CGROUP_BACKEND_NONE);
        assert_string_equal(cgroup_backend_name(NULL), "none");
        assert_string_equal(cgroup_describe(c), "none: limits by rlimits only");
        assert_int_equal(cgroup_stop_stale(c), 0);
        assert_int_equal(cgroup_event_fd(c), -EBADF);
        assert_int_equal(cgroup_event_mask(c), 0);
        assert_true(cgroup_event_timeout(c) == UINT64_MAX);
        assert_int_equal(cgroup_event_process(c), 0);

        CgroupRun *cr = NULL;
        /* No slices without cgroups: the tenants' bounds cannot hold, and the caller is told. */
        char *err = NULL;
        CgroupTenant t = { .name = "alpha", .memory_max_bytes = 1 << 30, .pids_max = 64, .cpu_weight = 100 };
        assert_int_equal(cgroup_tenants_set(c, &t, 1, &err), -EOPNOTSUPP);
        assert_non_null(strstr(err, "the none backend has no slices: the memory, process and CPU bounds of tenant alpha"));
        free(err);
        assert_null(cgroup_tenant_slice(c, "alpha"));
        assert_int_equal(cgroup_run_new(c, "abc123", 5, "alpha", &cr), 0);
        assert_non_null(cr);
        assert_int_equal(cgroup_run_supervisor_fd(cr), -EBADF);
        char *message = (char *) "unset";
        assert_int_equal(cgroup_run_place(cr, getpid(), -EBADF, placed_never, NULL, &message), 1);
        assert_null(message);
        assert_int_equal(cgroup_run_payload_fd(cr), -EBADF);
        assert_null(cgroup_run_unit(cr));
        CgroupStats s = { .memory_peak_bytes = 42 };
        assert_int_equal(cgroup_run_read(cr, &s), -EBADF);
        assert_int_equal(s.memory_peak_bytes, 42); /* untouched on failure */
        assert_int_equal(cgroup_run_kill(cr), -EBADF);
        cgroup_run_cancel_place(cr);
        cgroup_run_cancel_place(NULL);
        assert_null(cgroup_run_free(cr));
        assert_null(cgroup_run_free(NULL));
        assert_null(cgroup_free(c));
        assert_null(cgroup_free(NULL));
}

/* A tenant's slice is a child of the daemon's; '-' separates a slice's levels, so a tenant's own
 * is escaped (systemd-escape's \x2d). */
static void test_tenant_unit_name(void **state) {
        char u[64];
        assert_int_equal(cg_tenant_unit_name("mcp-execd.slice", "research", u, sizeof(u)), 0);
        assert_string_equal(u, "mcp-execd-tenant-research.slice");
        assert_int_equal(cg_tenant_unit_name("mcp-execd.slice", "team-a_2", u, sizeof(u)), 0);
        assert_string_equal(u, "mcp-execd-tenant-team\\x2da_2.slice");
        assert_int_equal(cg_tenant_unit_name("-.slice", "x", u, sizeof(u)), 0);
        assert_string_equal(u, "tenant-x.slice");
        assert_int_equal(cg_tenant_unit_name("mcp-execd.service", "x", u, sizeof(u)), -EINVAL);
        assert_int_equal(cg_tenant_unit_name("mcp-execd.slice", "a-b-c-d-e-f-g-h-i-j-k", u, sizeof(u)), -ENAMETOOLONG);
}

/* ---- the dispatcher's choice, with stand-ins for systemd and cgroupfs ----------------------- */

static char tried[64]; /* the backends' open() calls, in order: "s" systemd, "f" cgroupfs */
static bool fs_available;
static int fs_closed;

static int fake_systemd_open(Cgroup *c, char **reterr) {
        strcat(tried, "s");
        return reason_set(reterr, -ENOMEDIUM, "no systemd here");
}

static int fake_fs_open(Cgroup *c, char **reterr) {
        strcat(tried, "f");
        if (!fs_available)
                return reason_set(reterr, -EACCES, "no delegated cgroup");
        snprintf(c->describe, sizeof(c->describe), "fake cgroupfs");
        return 0;
}

static void fake_fs_close(Cgroup *c) {
        fs_closed++;
}

static const CgroupOps fake_systemd_ops = {
        .backend = CGROUP_BACKEND_SYSTEMD, .name = "systemd", .open = fake_systemd_open,
};
static const CgroupOps fake_fs_ops = {
        .backend = CGROUP_BACKEND_CGROUPFS, .name = "cgroupfs", .open = fake_fs_open, .close = fake_fs_close,
};
static const CgroupOps *const fake_backends[] = {
        [CGROUP_BACKEND_SYSTEMD] = &fake_systemd_ops,
        [CGROUP_BACKEND_CGROUPFS] = &fake_fs_ops,
        [CGROUP_BACKEND_NONE] = &cgroup_none_ops,
};

/* Runs the dispatcher with the stand-ins; returns its result, the backend in *ret. */
static int choose(CgroupWant want, bool fs, Cgroup **ret, char **reterr) {
        CgroupConfig config = { .want = want, .slice = "test.slice", .memory_max_bytes = UINT64_MAX,
                                .pids_max = UINT64_MAX };
        tried[0] = '\0';
        fs_available = fs;
        fs_closed = 0;
        *ret = NULL;
        return cgroup_new_with(&config, fake_backends, ret, reterr);
}

static void test_fallback(void **state) {
        Cgroup *c;
        char *why;

        /* auto, neither available: systemd, then cgroupfs, then none, with both reasons. */
        assert_int_equal(choose(CGROUP_WANT_AUTO, false, &c, &why), 0);
        assert_string_equal(tried, "sf");
        assert_int_equal(cgroup_backend(c), CGROUP_BACKEND_NONE);
        assert_string_equal(cgroup_describe(c), "none: limits by rlimits only");
        assert_non_null(why);
        assert_string_equal(why, "no cgroup backend available (systemd: no systemd here; cgroupfs: no delegated "
                                 "cgroup)");
        free(why);
        cgroup_free(c);
        assert_int_equal(fs_closed, 0); /* a backend that failed to open is not closed */

        /* auto, cgroupfs available: chosen after systemd, no warning. */
        assert_int_equal(choose(CGROUP_WANT_AUTO, true, &c, &why), 0);
        assert_string_equal(tried, "sf");
        assert_int_equal(cgroup_backend(c), CGROUP_BACKEND_CGROUPFS);
        assert_string_equal(cgroup_backend_name(c), "cgroupfs");
        assert_string_equal(cgroup_describe(c), "fake cgroupfs");
        assert_string_equal(c->slice, "test.slice");
        assert_null(why);
        cgroup_free(c);
        assert_int_equal(fs_closed, 1);

        /* An explicit backend that is unavailable is an error with its own reason, no fallback. */
        assert_int_equal(choose(CGROUP_WANT_SYSTEMD, true, &c, &why), -ENOMEDIUM);
        assert_string_equal(tried, "s");
        assert_null(c);
        assert_string_equal(why, "no systemd here");
        free(why);
        assert_int_equal(choose(CGROUP_WANT_CGROUPFS, false, &c, &why), -EACCES);
        assert_string_equal(tried, "f");
        assert_null(c);
        assert_string_equal(why, "no delegated cgroup");
        free(why);

        /* An explicit none tries nothing else. */
        assert_int_equal(choose(CGROUP_WANT_NONE, true, &c, &why), 0);
        assert_string_equal(tried, "");
        assert_int_equal(cgroup_backend(c), CGROUP_BACKEND_NONE);
        assert_null(why);
        cgroup_free(c);
}

/* ---- the shared cgroupfs file helpers ------------------------------------------------------- */

static void put(int dirfd, const char *name, const char *text) {
        assert_int_equal(fd_write_file_at(dirfd, name, text, strlen(text), 0644), 0);
}

static void check_file(int dirfd, const char *name, const char *want) {
        char buf[256];
        assert_int_equal(cg_read_at(dirfd, name, buf, sizeof(buf)), 0);
        assert_string_equal(buf, want);
}

static void test_keyed_value(void **state) {
        static const char events[] = "low 0\nhigh 0\nmax 17\noom 2\noom_kill 1\noom_group_kill 0";
        uint64_t v = 99;

        assert_int_equal(cg_keyed_value(events, "oom_kill", &v), 0);
        assert_int_equal(v, 1);
        assert_int_equal(cg_keyed_value(events, "oom", &v), 0); /* not oom_kill's prefix */
        assert_int_equal(v, 2);
        assert_int_equal(cg_keyed_value(events, "max", &v), 0);
        assert_int_equal(v, 17);
        assert_int_equal(cg_keyed_value(events, "oom_group_kill", &v), 0); /* last line, no newline */
        assert_int_equal(v, 0);
        v = 99;
        assert_int_equal(cg_keyed_value(events, "kill", &v), -ENOENT); /* only whole keys at a line's start */
        assert_int_equal(cg_keyed_value(events, "oom_", &v), -ENOENT);
        assert_int_equal(cg_keyed_value("", "max", &v), -ENOENT);
        assert_int_equal(v, 99);
}

static void test_pressure_io_parse(void **state) {
        static const char psi[] = "some avg10=0.00 avg60=1.50 avg300=0.20 total=123456\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=789\n";
        uint64_t v = 99, w = 99;

        assert_int_equal(cg_pressure_total(psi, "some", &v), 0);
        assert_true(v == 123456);
        assert_int_equal(cg_pressure_total(psi, "full", &v), 0);
        assert_true(v == 789);
        /* cpu.pressure before Linux 5.13 has no "full" line; a line without total= is malformed. */
        assert_int_equal(cg_pressure_total("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", "full", &v), -ENOENT);
        assert_int_equal(cg_pressure_total("some avg10=0.00 avg60=0.00\n", "some", &v), -ENOENT);
        assert_int_equal(cg_pressure_total("some avg10=0.00 total=12x\n", "some", &v), -EBADMSG);
        assert_int_equal(cg_pressure_total("some avg10=0.00 total=\n", "some", &v), -EBADMSG);
        assert_int_equal(cg_pressure_total("someone total=3\n", "some", &v), -ENOENT); /* whole words only */
        assert_int_equal(cg_pressure_total("some total=18446744073709551616\n", "some", &v), -EBADMSG); /* > 2^64-1 */

        /* io.stat: a line per device, summed; no line (no I/O yet) is 0. */
        assert_int_equal(cg_io_bytes("8:0 rbytes=4096 wbytes=512 rios=1 wios=1 dbytes=0 dios=0\n"
                                     "253:1 rbytes=100 wbytes=28 rios=2 wios=1 dbytes=0 dios=0\n", &v, &w), 0);
        assert_true(v == 4196 && w == 540);
        assert_int_equal(cg_io_bytes("", &v, &w), 0);
        assert_true(v == 0 && w == 0);
        assert_int_equal(cg_io_bytes("8:0 rios=1 wios=1\n", &v, &w), -EBADMSG);
        /* rbytes must be a whole word: xrbytes= is not it */
        assert_int_equal(cg_io_bytes("8:0 xrbytes=1 wbytes=2\n", &v, &w), -EBADMSG);
}

typedef struct Tree {
        char root[64];
        int run_fd;
        int payload_fd;
} Tree;

/* A run's cgroup as files: run/ with the limits' events, run/payload/ with the counters. */
static void tree_make(Tree *t) {
        snprintf(t->root, sizeof(t->root), "/tmp/test-cgroup-XXXXXX");
        assert_non_null(mkdtemp(t->root));
        t->run_fd = open(t->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(t->run_fd >= 0);
        assert_int_equal(mkdirat(t->run_fd, "payload", 0755), 0);
        t->payload_fd = openat(t->run_fd, "payload", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(t->payload_fd >= 0);
}

static void tree_free(Tree *t) {
        close(t->payload_fd);
        close(t->run_fd);
        assert_int_equal(rm_rf(t->root), 0);
}

static void test_read_write(void **state) {
        Tree t;
        char buf[8];

        tree_make(&t);
        put(t.run_fd, "pids.max", "");
        assert_int_equal(cg_write_at(t.run_fd, "pids.max", "64"), 0);
        check_file(t.run_fd, "pids.max", "64");
        /* cgroup files exist; a write never creates one. */
        assert_int_equal(cg_write_at(t.run_fd, "memory.max", "max"), -ENOENT);
        assert_int_equal(faccessat(t.run_fd, "memory.max", F_OK, 0), -1);
        /* Reads are bounded and NUL-terminated. */
        put(t.run_fd, "long", "0123456789");
        assert_int_equal(cg_read_at(t.run_fd, "long", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "0123456");
        /* Links are not followed (O_NOFOLLOW), neither way. */
        assert_int_equal(symlinkat("pids.max", t.run_fd, "link"), 0);
        assert_int_equal(cg_read_at(t.run_fd, "link", buf, sizeof(buf)), -ELOOP);
        assert_int_equal(cg_write_at(t.run_fd, "link", "1"), -ELOOP);
        tree_free(&t);
}

static void test_stats(void **state) {
        Tree t;
        CgroupStats s;

        tree_make(&t);
        assert_int_equal(cg_stats_read(-EBADF, t.run_fd, &s), -EBADF);
        assert_int_equal(cg_stats_read(t.payload_fd, t.run_fd, &s), -ENOENT); /* no memory.peak */
        put(t.payload_fd, "memory.peak", "123456789\n");
        put(t.payload_fd, "cpu.stat", "usage_usec 1500\nuser_usec 1000\n");
        assert_int_equal(cg_stats_read(t.payload_fd, t.run_fd, &s), -EBADMSG); /* no system_usec */
        assert_int_equal(unlinkat(t.payload_fd, "cpu.stat", 0), 0);
        put(t.payload_fd, "cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\n");

        /* No events files at all (a kernel without them, the none of a counter): nothing hit. */
        s = (CgroupStats) { .oom_killed = true, .pids_limit_hit = true };
        assert_int_equal(cg_stats_read(t.payload_fd, t.run_fd, &s), 0);
        assert_true(s.memory_peak_bytes == 123456789);
        assert_true(s.cpu_user_usec == 1000);
        assert_true(s.cpu_system_usec == 500);
        assert_false(s.oom_killed);
        assert_false(s.pids_limit_hit);

        /* Zero counters: nothing hit. */
        put(t.payload_fd, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\noom_group_kill 0\n");
        put(t.payload_fd, "pids.events", "max 0\n");
        put(t.run_fd, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\noom_group_kill 0\n");
        put(t.run_fd, "pids.events", "max 0\n");
        assert_int_equal(cg_stats_read(t.payload_fd, t.run_fd, &s), 0);
        assert_false(s.oom_killed); /* "oom" alone (allocation failed, nobody killed) is no OOM kill */
        assert_false(s.pids_limit_hit);

        /* The pids limit counted in the limiting cgroup (Linux ≥ 6.13), an OOM group kill in the
         * victim's: both seen. */
        assert_int_equal(unlinkat(t.run_fd, "pids.events", 0), 0);
        put(t.run_fd, "pids.events", "max 4\n");
        assert_int_equal(unlinkat(t.payload_fd, "memory.events", 0), 0);
        put(t.payload_fd, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\noom_group_kill 1\n");
        assert_int_equal(cg_stats_read(t.payload_fd, t.run_fd, &s), 0);
        assert_true(s.oom_killed);
        assert_true(s.pids_limit_hit);

        /* The kernel's account: none of its files here, nothing known. */
        assert_int_equal(s.account.known, 0);
        put(t.payload_fd, "cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=11\n"
                                          "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        put(t.payload_fd, "memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=22\n"
                                             "full avg10=0.00 avg60=0.00 avg300=0.00 total=33\n");
        put(t.payload_fd, "io.stat", "8:0 rbytes=44 wbytes=55 rios=1 wios=1 dbytes=0 dios=0\n");
        put(t.payload_fd, "pids.peak", "7\n");
        assert_int_equal(cg_stats_read(t.payload_fd, t.run_fd, &s), 0);
        static const struct {
                ExecAccountField f;
                uint64_t v;
        } want[] = {
                { EXEC_ACCOUNT_CPU_PRESSURE_SOME_US, 11 }, { EXEC_ACCOUNT_MEMORY_PRESSURE_SOME_US, 22 },
                { EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US, 33 }, { EXEC_ACCOUNT_IO_READ_BYTES, 44 },
                { EXEC_ACCOUNT_IO_WRITE_BYTES, 55 }, { EXEC_ACCOUNT_PIDS_PEAK, 7 },
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_true(exec_account_known(&s.account, want[i].f));
                assert_true(s.account.v[want[i].f] == want[i].v);
        }
        /* No io.pressure (a kernel without PSI for I/O here): those two unknown, not 0. */
        assert_false(exec_account_known(&s.account, EXEC_ACCOUNT_IO_PRESSURE_SOME_US));
        assert_false(exec_account_known(&s.account, EXEC_ACCOUNT_IO_PRESSURE_FULL_US));

        /* Without the run's cgroup only payload/ counts. */
        assert_int_equal(cg_stats_read(t.payload_fd, -EBADF, &s), 0);
        assert_true(s.oom_killed);
        assert_false(s.pids_limit_hit);
        tree_free(&t);
}

static void test_leaves_kill_move(void **state) {
        Tree t;
        int supervisor_fd = -EBADF, payload_fd = -EBADF;

        tree_make(&t);
        /* Without cgroup.subtree_control (not a cgroup) it fails, and hands over nothing. */
        int before = fd_count_open();
        assert_int_equal(cg_make_leaves(t.run_fd, false, 0, &supervisor_fd, &payload_fd), -ENOENT);
        assert_int_equal(supervisor_fd, -EBADF);
        assert_int_equal(payload_fd, -EBADF);
        assert_int_equal(fd_count_open(), before);

        put(t.run_fd, "cgroup.subtree_control", "");
        assert_int_equal(cg_make_leaves(t.run_fd, false, 0, &supervisor_fd, &payload_fd), 0);
        assert_true(supervisor_fd >= 0);
        assert_true(payload_fd >= 0);
        /* The writes reached the file: "+memory +pids", then "+cpu" and "+io" each alone over its
         * start (a plain file): an optional controller the parent lacks fails alone. */
        check_file(t.run_fd, "cgroup.subtree_control", "+iouory +pids");
        struct stat st;
        assert_int_equal(fstatat(t.run_fd, "supervisor", &st, 0), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(fstatat(t.run_fd, "payload", &st, 0), 0);
        assert_true(S_ISDIR(st.st_mode));

        /* cgroup.kill is written "1" in payload/. */
        assert_int_equal(cg_kill(-EBADF), -EBADF);
        assert_int_equal(cg_kill(payload_fd), -ENOENT);
        put(payload_fd, "cgroup.kill", "");
        assert_int_equal(cg_kill(payload_fd), 0);
        check_file(payload_fd, "cgroup.kill", "1");

        /* Moving from an empty cgroup is done at once; from one that does not empty, it gives up. */
        put(t.run_fd, "cgroup.procs", "");
        put(supervisor_fd, "cgroup.procs", "");
        assert_int_equal(cg_move_all(t.run_fd, supervisor_fd), 0);
        assert_int_equal(unlinkat(t.run_fd, "cgroup.procs", 0), 0);
        put(t.run_fd, "cgroup.procs", "4242\n");
        assert_int_equal(cg_move_all(t.run_fd, supervisor_fd), -EBUSY);
        check_file(supervisor_fd, "cgroup.procs", "4242");

        close(supervisor_fd);
        close(payload_fd);
        tree_free(&t);
}

static void test_own_path(void **state) {
        char *path = NULL;
        int r = cg_own_path(getpid(), &path);
        if (r == -ENOENT) /* a host with cgroup v1 only has no "0::" line */
                skip();
        assert_int_equal(r, 0);
        assert_non_null(path);
        assert_true(path[0] == '/');
        assert_null(strchr(path, '\n'));
        free(path);
        assert_int_equal(cg_own_path(0, &path), -ENOENT); /* /proc/0 does not exist */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_none),
                cmocka_unit_test(test_tenant_unit_name),
                cmocka_unit_test(test_fallback),
                cmocka_unit_test(test_keyed_value),
                cmocka_unit_test(test_pressure_io_parse),
                cmocka_unit_test(test_read_write),
                cmocka_unit_test(test_stats),
                cmocka_unit_test(test_leaves_kill_move),
                cmocka_unit_test(test_own_path),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
