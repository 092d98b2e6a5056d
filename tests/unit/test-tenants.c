/* test-tenants.c: the tenants file (daemon/tenant/tenants.h): its lines, its limits, each kind of
 * bad file refused with the line and the reason, a token found by its hash and no other, and the
 * file's owner and mode checked as sshd checks a key; the daemon's set, with the tenant that
 * MCP_EXEC_AUTH_TOKEN makes. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
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
#include "tenants.h"

/* sha256("alpha-token"), sha256("beta-token"): what `printf %s TOKEN | sha256sum` prints. */
static char alpha_hash[65], beta_hash[65];

static int setup(void **state) {
        (void) state;
        assert_int_equal(tenants_hash_hex("alpha-token", 11, alpha_hash), 0);
        assert_int_equal(tenants_hash_hex("beta-token", 10, beta_hash), 0);
        return 0;
}

static void test_hash_is_sha256(void **state) {
        char h[65];
        assert_int_equal(tenants_hash_hex("test", 4, h), 0);
        assert_string_equal(h, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
}

static Tenants *parse_ok(const char *text) {
        Tenants *t = NULL;
        char *err = NULL;
        int r = tenants_parse(text, strlen(text), &t, &err);
        if (r < 0)
                fail_msg("refused: %s", err ? err : strerror(-r));
        return t;
}

static void test_lines_and_limits(void **state) {
        char text[1024];
        snprintf(text, sizeof(text),
                 "# the teams\n"
                 "\n"
                 "alpha\t%s   runs=2 memory=2G weight=300   # a comment after\n"
                 "  beta %s\r\n",
                 alpha_hash, beta_hash);
        _cleanup_(tenants_freep) Tenants *t = parse_ok(text);
        assert_int_equal(tenants_count(t), 2);
        const Tenant *a = tenants_get(t, 0), *b = tenants_get(t, 1);
        assert_string_equal(a->name, "alpha");
        assert_int_equal(a->line, 3);
        assert_int_equal(a->limits.runs, 2);
        assert_int_equal(a->limits.memory_max, 2ull << 30);
        assert_int_equal(a->limits.weight, 300);
        assert_int_equal(a->limits.pids_max, UINT64_MAX);
        /* nothing set: the daemon's own */
        assert_string_equal(b->name, "beta");
        assert_int_equal(b->limits.runs, 0);
        assert_int_equal(b->limits.queue, UINT_MAX); /* 0 is a bound there: none wait */
        assert_int_equal(b->limits.tasks, UINT_MAX);
        assert_int_equal(b->limits.memory_max, UINT64_MAX);
        assert_int_equal(b->limits.weight, 100);
        assert_ptr_equal(tenants_find_name(t, "beta"), b);
        assert_null(tenants_find_name(t, "gamma"));
        assert_null(tenants_get(t, 2));
}

static void test_find_token(void **state) {
        char text[256];
        snprintf(text, sizeof(text), "alpha %s\nbeta %s\n", alpha_hash, beta_hash);
        _cleanup_(tenants_freep) Tenants *t = parse_ok(text);
        assert_string_equal(tenants_find_token(t, "alpha-token", 11)->name, "alpha");
        assert_string_equal(tenants_find_token(t, "beta-token", 10)->name, "beta");
        assert_null(tenants_find_token(t, "alpha-toke", 10));
        assert_null(tenants_find_token(t, "alpha-tokenx", 12));
        assert_null(tenants_find_token(t, "", 0));
        /* the hash itself is no token */
        assert_null(tenants_find_token(t, alpha_hash, 64));
        assert_null(tenants_find_token(NULL, "alpha-token", 11));
}

/* Each bad file: refused with a message holding want (and never the token a line pasted). */
static void refused(const char *text, const char *want) {
        Tenants *t = NULL;
        char *err = NULL;
        assert_int_equal(tenants_parse(text, strlen(text), &t, &err), -EINVAL);
        assert_null(t);
        assert_non_null(err);
        if (!strstr(err, want))
                fail_msg("message \"%s\" lacks \"%s\"", err, want);
        assert_null(strstr(err, "s3cret-pasted-token"));
        free(err);
}

/* A file's text with @ and ^ standing for alpha's and beta's hashes, ~ for alpha's but its last
 * digit (so that a table can hold every case). */
static void expand(const char *tmpl, char *out, size_t size) {
        size_t n = 0;
        for (const char *p = tmpl; *p && n + 65 < size; p++) {
                const char *h = *p == '@' || *p == '~' ? alpha_hash : *p == '^' ? beta_hash : NULL;
                if (!h) {
                        out[n++] = *p;
                        continue;
                }
                size_t k = *p == '~' ? 63 : 64;
                memcpy(out + n, h, k);
                n += k;
        }
        out[n] = 0;
}

static const struct {
        const char *text; /* expand()'s template: @, ^ and ~ are hashes */
        const char *want;
} bad_files[] = {
        { "",                               "no tenant in it" },
        { "# only comments\n\n",            "no tenant in it" },
        { "x @\ny ^\nx ^\n",                "line 3: tenant x is named twice (first on line 1)" },
        { "x @\ny @\n",                     "line 2: tenants x and y have the same token" },
        { "x\n",                            "line 1: tenant x has no token hash" },
        { "x ~\n",                          "line 1: tenant x: the token hash is not 64 lower-case hex digits (SHA-256) but 63 characters" },
        { "x s3cret-pasted-token\n",        "but 19 characters; write sha256sum's output for the token, never the token" },
        { "x 9F86D081884C7D659F2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08\n", "not 64 lower-case hex digits" },
        { "x @ colour=blue\n",              "line 1: unknown key 'colour' (known: runs, queue, sessions, tasks, memory, pids, weight, egress)" },
        { "x @ runs=0\n",                   "line 1: runs=0: not a number of runs, 1 to 100000" },
        { "x @ memory=lots\n",              "memory=lots: not a size of at least 1M" },
        { "x @ runs=1 runs=2\n",            "line 1: runs is given twice" },
        { "x @ runs\n",                     "line 1: 'runs' is no key=value field" },
        { "x/y @\n",                        "line 1: the name 'x/y' is not 1 to 32 letters" },
        { "x23456789012345678901234567890123 @\n", "is not 1 to 32 letters" },
};

static void test_bad_files(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(bad_files); i++) {
                char text[1024];
                expand(bad_files[i].text, text, sizeof(text));
                refused(text, bad_files[i].want);
        }
        Tenants *t = NULL;
        char *err = NULL;
        assert_int_equal(tenants_parse("alpha\0x", 7, &t, &err), -EINVAL);
        assert_string_equal(err, "the file holds a NUL byte");
        free(err);
}

/* A file of ours with this mode, its path in path (to unlink). */
static void write_file(char *path, const char *text, mode_t mode) {
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static void test_load_checks_owner_and_mode(void **state) {
        char text[256], path[] = "/tmp/test-tenants-XXXXXX";
        snprintf(text, sizeof(text), "alpha %s runs=2\n", alpha_hash);
        write_file(path, text, 0600);
        Tenants *t = NULL;
        char *err = NULL;
        assert_int_equal(tenants_load(path, geteuid(), &t, &err), 0);
        assert_string_equal(tenants_get(t, 0)->name, "alpha");
        t = tenants_free(t);

        assert_int_equal(chmod(path, 0640), 0);
        assert_int_equal(tenants_load(path, geteuid(), &t, &err), -EINVAL);
        assert_non_null(strstr(err, "may be read or written by other users (mode 0640): make it 0600"));
        free(err);
        assert_int_equal(chmod(path, 0604), 0);
        assert_int_equal(tenants_load(path, geteuid(), &t, &err), -EINVAL);
        free(err);

        char link[] = "/tmp/test-tenants-link-XXXXXX";
        int fd = mkstemp(link);
        close(fd);
        unlink(link);
        /* A link is followed (a Kubernetes Secret's files are links): the file reached is checked. */
        assert_int_equal(chmod(path, 0600), 0);
        assert_int_equal(symlink(path, link), 0);
        assert_int_equal(tenants_load(link, geteuid(), &t, &err), 0);
        t = tenants_free(t);
        assert_int_equal(chmod(path, 0644), 0);
        assert_int_equal(tenants_load(link, geteuid(), &t, &err), -EINVAL);
        assert_non_null(strstr(err, "may be read or written by other users (mode 0644)"));
        free(err);
        unlink(link);
        assert_int_equal(chmod(path, 0600), 0);
        /* Not a regular file: a FIFO would block a plain open; O_NONBLOCK makes it a refusal. */
        assert_int_equal(mkfifo(link, 0600), 0);
        assert_int_equal(tenants_load(link, geteuid(), &t, &err), -EINVAL);
        assert_non_null(strstr(err, "is not a regular file"));
        free(err);
        unlink(link);

        assert_int_equal(tenants_load("/nonexistent/tenants", geteuid(), &t, &err), -ENOENT);
        assert_non_null(strstr(err, "cannot open /nonexistent/tenants: No such file or directory"));
        free(err);

        if (geteuid() == 0) {
                /* another user's file: neither the daemon's (here uid 4242's daemon) nor root's */
                assert_int_equal(chown(path, 4243, 4243), 0);
                assert_int_equal(tenants_load(path, 4242, &t, &err), -EINVAL);
                assert_non_null(strstr(err, "belongs to uid 4243: it must be the daemon's (uid 4242) or root's"));
                free(err);
                assert_int_equal(chown(path, 4242, 4242), 0);
                assert_int_equal(tenants_load(path, 4242, &t, &err), 0);
                t = tenants_free(t);
        }
        unlink(path);
}

/* The daemon's set (tenants_load_config()): the file's tenants and the one MCP_EXEC_AUTH_TOKEN
 * makes, called default; a file naming default, or holding that token, is refused; neither set:
 * no tenants (no authentication). */
static void test_load_config(void **state) {
        char text[256], path[] = "/tmp/test-tenants-XXXXXX";
        snprintf(text, sizeof(text), "alpha %s\n", alpha_hash);
        write_file(path, text, 0600);
        Config cfg = { .tenants = path, .auth_token = (char *) "gamma-token" };
        Tenants *t = NULL;
        char *err = NULL;
        assert_int_equal(tenants_load_config(&cfg, geteuid(), &t, &err), 0);
        assert_int_equal(tenants_count(t), 2);
        assert_string_equal(tenants_find_token(t, "alpha-token", 11)->name, "alpha");
        assert_string_equal(tenants_find_token(t, "gamma-token", 11)->name, TENANT_NAME_AUTH_TOKEN);
        assert_null(tenants_find_token(t, "gamma-toke", 10));
        t = tenants_free(t);

        cfg.tenants = NULL; /* the token alone: one tenant */
        assert_int_equal(tenants_load_config(&cfg, geteuid(), &t, &err), 0);
        assert_int_equal(tenants_count(t), 1);
        assert_string_equal(tenants_get(t, 0)->name, "default");
        t = tenants_free(t);

        cfg.auth_token = NULL; /* neither */
        assert_int_equal(tenants_load_config(&cfg, geteuid(), &t, &err), 0);
        assert_null(t);

        cfg = (Config) { .tenants = path, .auth_token = (char *) "alpha-token" };
        assert_int_equal(tenants_load_config(&cfg, geteuid(), &t, &err), -EINVAL);
        assert_string_equal(err, "tenants alpha and default have the same token");
        assert_null(t);
        free(err);

        unlink(path);
        strcpy(path, "/tmp/test-tenants-XXXXXX");
        snprintf(text, sizeof(text), "default %s\n", alpha_hash);
        write_file(path, text, 0600);
        cfg = (Config) { .tenants = path, .auth_token = (char *) "gamma-token" };
        assert_int_equal(tenants_load_config(&cfg, geteuid(), &t, &err), -EINVAL);
        assert_non_null(strstr(err, "has a tenant called default, the name of the one MCP_EXEC_AUTH_TOKEN makes"));
        free(err);
        cfg.auth_token = NULL; /* without the token, default is a name like another */
        assert_int_equal(tenants_load_config(&cfg, geteuid(), &t, &err), 0);
        t = tenants_free(t);
        unlink(path);

        /* Every limit is taken: sessions= (daemon/pysession/), runs=, queue=, weight= (the run queue),
         * tasks= (the task store), memory= and pids= (the tenant's slice, daemon.c). */
        strcpy(path, "/tmp/test-tenants-XXXXXX");
        snprintf(text, sizeof(text), "alpha %s sessions=2 runs=3 queue=0 tasks=4 weight=50 memory=1G pids=64\n", alpha_hash);
        write_file(path, text, 0600);
        cfg = (Config) { .tenants = path };
        assert_int_equal(tenants_load_config(&cfg, geteuid(), &t, &err), 0);
        const TenantLimits *l = &tenants_get(t, 0)->limits;
        assert_int_equal(l->sessions, 2);
        assert_int_equal(l->runs, 3);
        assert_int_equal(l->queue, 0);
        assert_int_equal(l->tasks, 4);
        assert_int_equal(l->weight, 50);
        assert_int_equal(l->memory_max, 1ull << 30);
        assert_int_equal(l->pids_max, 64);
        t = tenants_free(t);
        unlink(path);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hash_is_sha256),
                cmocka_unit_test(test_lines_and_limits),
                cmocka_unit_test(test_find_token),
                cmocka_unit_test(test_bad_files),
                cmocka_unit_test(test_load_checks_owner_and_mode),
                cmocka_unit_test(test_load_config),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
