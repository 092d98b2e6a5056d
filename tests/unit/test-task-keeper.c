/* test-task-keeper.c: ended tasks kept on disk (daemon/transport/task-keeper.c) in a temporary
 * state directory: a tenant's ended task is a file of mode 0600 in tasks/ (mode 0700), whole,
 * its head written again when fetched, gone when the task expires; another store takes it back
 * with its reply; what is not a whole record of the daemon's own, named by its id and in its TTL
 * (a half-written file, garbage, another mode, a link, a record under another name, one cut short,
 * one expired) is removed and not taken back. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fd-util.h"
#include "task-keeper.h"

#define SEC 1000000u
#define REPLY "{\"jsonrpc\": \"2.0\", \"id\": 3, \"result\": {\"content\": []}}"

#define asker(o) (&(TaskAsker) { .owner = (o), .tenant = "", .tenant_max = UINT_MAX })

typedef struct Fixture {
        char state[64];
        char tasks[80];
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        strcpy(f->state, "/tmp/test-task-keeper.XXXXXX");
        assert_non_null(mkdtemp(f->state));
        snprintf(f->tasks, sizeof(f->tasks), "%s/" TASK_KEEPER_DIR, f->state);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        assert_int_equal(rm_rf(f->state), 0);
        free(f);
        return 0;
}

static char *path_of(const Fixture *f, const char *name) {
        char *p;
        assert_true(asprintf(&p, "%s/%s", f->tasks, name) > 0);
        return p;
}

static bool exists(const Fixture *f, const char *name) {
        _cleanup_free_ char *p = path_of(f, name);
        return access(p, F_OK) == 0;
}

static unsigned n_files(const Fixture *f) {
        _cleanup_free_ char *cmd = NULL;
        assert_true(asprintf(&cmd, "ls -A %s | wc -l", f->tasks) > 0);
        FILE *p = popen(cmd, "r");
        unsigned n = 0;
        assert_int_equal(fscanf(p, "%u", &n), 1);
        pclose(p);
        return n;
}

static void write_file(const Fixture *f, const char *name, const void *data, size_t n, mode_t mode) {
        _cleanup_free_ char *p = path_of(f, name);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        assert_int_equal(fd_write_all(fd, data, n), 0);
        assert_int_equal(fchmod(fd, mode), 0);
}

static char *read_file(const Fixture *f, const char *name, size_t *ret_n) {
        _cleanup_free_ char *p = path_of(f, name);
        FILE *in = fopen(p, "r");
        assert_non_null(in);
        char *buf = malloc(1 << 20);
        *ret_n = fread(buf, 1, 1 << 20, in);
        fclose(in);
        return buf;
}

static TaskKeeperDir *keeper(const Fixture *f) {
        TaskKeeperDir *k = NULL;
        const char *what = NULL;
        assert_int_equal(task_keeper_open(f->state, &k, &what), 0);
        return k;
}

/* A new store (a daemon's, TTL 100 s) kept by k. */
static void store_kept(TaskStore *s, TaskKeeperDir *k) {
        task_store_init(s, 100, 100, UINT64_MAX, 100 * SEC);
        task_keeper_install(k, s);
}

/* A store keeping in f's directory, with a tenant's task ended (completed) and a stdio one. */
static Task *one_kept(const Fixture *f, TaskStore *s, TaskKeeperDir **k) {
        *k = keeper(f);
        store_kept(s, *k);
        Task *a, *b;
        assert_int_equal(task_store_create(s, asker("tenant:alpha"), 0, 10 * SEC, 1000 * SEC, &a), 0);
        assert_int_equal(task_store_create(s, asker("stdio"), 0, 10 * SEC, 1000 * SEC, &b), 0);
        task_end(a, TASK_COMPLETED, strdup(REPLY), 20 * SEC, 1010 * SEC);
        task_end(b, TASK_COMPLETED, strdup(REPLY), 20 * SEC, 1010 * SEC);
        return a;
}

static void test_kept_and_back(void **state) {
        Fixture *f = *state;
        /* A state directory readable by others does not make tasks/ so. */
        assert_int_equal(chmod(f->state, 0755), 0);
        TaskStore s;
        TaskKeeperDir *k;
        Task *a = one_kept(f, &s, &k);
        struct stat st;
        assert_int_equal(stat(f->tasks, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700);

        /* Only the tenant's task (stdio's has no owner after a restart), whole, mode 0600. */
        assert_int_equal(n_files(f), 1);
        _cleanup_free_ char *p = path_of(f, a->id);
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal((size_t) st.st_size, TASK_RECORD_HEAD_BYTES + a->packed_len);
        size_t n;
        _cleanup_free_ char *text = read_file(f, a->id, &n);
        assert_non_null(strstr(text, "fetched 0\n"));
        task_fetched(a);
        free(text);
        text = read_file(f, a->id, &n);
        assert_non_null(strstr(text, "fetched 1\n"));
        assert_int_equal(n, TASK_RECORD_HEAD_BYTES + a->packed_len);
        char id[TASK_ID_MAX + 1];
        strcpy(id, a->id);

        /* The daemon ends: the file stays. The next one (30 s later on the wall clock, in a boot
         * 5 s old: a reboot) takes it back, with its reply, its fetched mark, its TTL's rest. */
        task_store_done(&s);
        task_keeper_free(k);
        assert_true(exists(f, id));
        k = keeper(f);
        TaskStore s2;
        store_kept(&s2, k);
        assert_int_equal(task_keeper_adopt(k, &s2, 5 * SEC, 1040 * SEC), 1);
        Task *back = task_store_find(&s2, "tenant:alpha", id, 5 * SEC);
        assert_non_null(back);
        assert_null(task_store_find(&s2, "tenant:beta", id, 5 * SEC));
        assert_true(back->fetched);
        _cleanup_free_ char *reply = task_reply(back);
        assert_string_equal(reply, REPLY);
        /* 70 s were left: at 74 s of this boot it is still there, at 75 s it expires and its file goes. */
        assert_non_null(task_store_find(&s2, "tenant:alpha", id, 74 * SEC));
        assert_true(exists(f, id));
        assert_null(task_store_find(&s2, "tenant:alpha", id, 75 * SEC));
        assert_false(exists(f, id));
        assert_int_equal(n_files(f), 0);
        task_store_done(&s2);
        task_keeper_free(k);
}

static void test_refused_files(void **state) {
        Fixture *f = *state;
        TaskStore s;
        TaskKeeperDir *k;
        Task *a = one_kept(f, &s, &k);
        size_t n;
        _cleanup_free_ char *record = read_file(f, a->id, &n);
        char id[TASK_ID_MAX + 1];
        strcpy(id, a->id);
        task_store_done(&s);
        task_keeper_free(k);

        /* Beside the good record: a half-written one, garbage under an id's name, the record under
         * another id, a copy readable by others, a link to the record. */
        const char *other = "00112233445566778899aabbccddeeff", *open_mode = "0123456789abcdef0123456789abcdef", *link = "abcdefabcdefabcdefabcdefabcdefab";
        write_file(f, ".half", record, n / 2, 0600);
        write_file(f, "fedcba9876543210fedcba9876543210", "garbage\n", 8, 0600);
        write_file(f, other, record, n, 0600);
        write_file(f, open_mode, record, n, 0644);
        _cleanup_free_ char *target = path_of(f, id), *lp = path_of(f, link);
        assert_int_equal(symlink(target, lp), 0);
        assert_int_equal(n_files(f), 6);

        k = keeper(f);
        TaskStore s2;
        store_kept(&s2, k);
        assert_int_equal(task_keeper_adopt(k, &s2, 30 * SEC, 1020 * SEC), 1);
        assert_int_equal(s2.n_tasks, 1);
        assert_non_null(task_store_find(&s2, "tenant:alpha", id, 30 * SEC));
        assert_int_equal(n_files(f), 1);
        assert_true(exists(f, id));
        task_store_done(&s2);

        /* The record cut short (a power cut before the disk had it all): not taken back, removed. */
        write_file(f, id, record, n - 1, 0600);
        store_kept(&s2, k);
        assert_int_equal(task_keeper_adopt(k, &s2, 30 * SEC, 1020 * SEC), 0);
        assert_int_equal(n_files(f), 0);
        task_store_done(&s2);

        /* Its TTL over on the wall clock: not taken back, removed. */
        write_file(f, id, record, n, 0600);
        store_kept(&s2, k);
        assert_int_equal(task_keeper_adopt(k, &s2, 30 * SEC, 1110 * SEC), 0);
        assert_int_equal(s2.n_tasks, 0);
        assert_int_equal(n_files(f), 0);
        task_store_done(&s2);
        task_keeper_free(k);
}

static void test_open_errors(void **state) {
        Fixture *f = *state;
        TaskKeeperDir *k = NULL;
        const char *what = NULL;
        _cleanup_free_ char *missing = NULL;
        assert_true(asprintf(&missing, "%s/none", f->state) > 0);
        assert_int_equal(task_keeper_open(missing, &k, &what), -ENOENT);
        assert_string_equal(what, "cannot open the state directory");
        /* tasks/ made by someone else with a group's access: made private again. */
        assert_int_equal(mkdir(f->tasks, 0770), 0);
        assert_int_equal(chmod(f->tasks, 0770), 0);
        assert_int_equal(task_keeper_open(f->state, &k, &what), 0);
        struct stat st;
        assert_int_equal(stat(f->tasks, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700);
        task_keeper_free(k);
        /* tasks/ a link: refused. */
        assert_int_equal(rmdir(f->tasks), 0);
        assert_int_equal(symlink("/tmp", f->tasks), 0);
        assert_true(task_keeper_open(f->state, &k, &what) < 0);
        assert_string_equal(what, "cannot open its " TASK_KEEPER_DIR "/");
        assert_int_equal(unlink(f->tasks), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_kept_and_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
