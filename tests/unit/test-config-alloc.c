/* test-config-alloc.c: config_load() leaks nothing on any error path: one bad value per table row,
 * the rules between rows, and every allocation failing in turn (the Nth for N = 1, 2, … until the
 * load no longer allocates that many). Allocations are counted through link-time wrappers
 * (-Wl,--wrap=…, tests/unit/meson.build; under _FORTIFY_SOURCE and _FILE_OFFSET_BITS=64 the calls
 * are __asprintf_chk and fopen64, wrapped too), which also keep the set of live blocks, so a leak
 * fails here even without LeakSanitizer. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "config-internal.h"

/* ---- the allocation seam ---- */

static bool armed;
static unsigned calls, fail_at;
static void *live[256];
static size_t n_live;

static bool inject(void) {
        if (!armed)
                return false;
        return ++calls == fail_at;
}

static void track(void *p) {
        if (!armed || !p)
                return;
        assert_true(n_live < sizeof(live) / sizeof(live[0]));
        live[n_live++] = p;
}

static void untrack(void *p) {
        for (size_t i = 0; p && i < n_live; i++)
                if (live[i] == p) {
                        live[i] = live[--n_live];
                        return;
                }
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
FILE *__real_fopen(const char *path, const char *mode);
FILE *__real_fopen64(const char *path, const char *mode);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_asprintf(char **ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int __wrap___asprintf_chk(char **ret, int flag, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
FILE *__wrap_fopen(const char *path, const char *mode);
FILE *__wrap_fopen64(const char *path, const char *mode);

void *__wrap_malloc(size_t n) {
        if (inject())
                return errno = ENOMEM, NULL;
        void *p = __real_malloc(n);
        track(p);
        return p;
}

void *__wrap_calloc(size_t n, size_t size) {
        if (inject())
                return errno = ENOMEM, NULL;
        void *p = __real_calloc(n, size);
        track(p);
        return p;
}

void *__wrap_realloc(void *p, size_t n) {
        if (inject())
                return errno = ENOMEM, NULL;
        void *q = __real_realloc(p, n);
        if (q) {
                untrack(p);
                track(q);
        }
        return q;
}

void __wrap_free(void *p) {
        untrack(p);
        __real_free(p);
}

char *__wrap_strdup(const char *s) {
        if (inject())
                return errno = ENOMEM, NULL;
        char *p = __real_strdup(s);
        track(p);
        return p;
}

char *__wrap_strndup(const char *s, size_t n) {
        if (inject())
                return errno = ENOMEM, NULL;
        char *p = __real_strndup(s, n);
        track(p);
        return p;
}

static int wrap_vasprintf(char **ret, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static int wrap_vasprintf(char **ret, const char *fmt, va_list ap) {
        if (inject())
                return errno = ENOMEM, -1; /* glibc leaves *ret undefined: so do we */
        int r = vasprintf(ret, fmt, ap);
        if (r >= 0)
                track(*ret);
        return r;
}

int __wrap_asprintf(char **ret, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = wrap_vasprintf(ret, fmt, ap);
        va_end(ap);
        return r;
}

/* What asprintf() becomes under _FORTIFY_SOURCE. */
int __wrap___asprintf_chk(char **ret, int flag, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = wrap_vasprintf(ret, fmt, ap);
        va_end(ap);
        return r;
}

/* fopen() allocates its FILE: a failure site, freed by fclose() inside libc, so not tracked. */
FILE *__wrap_fopen(const char *path, const char *mode) {
        if (inject())
                return errno = ENOMEM, NULL;
        return __real_fopen(path, mode);
}

/* What fopen() becomes with _FILE_OFFSET_BITS=64 (meson's default). */
FILE *__wrap_fopen64(const char *path, const char *mode) {
        if (inject())
                return errno = ENOMEM, NULL;
        return __real_fopen64(path, mode);
}

/* ---- the environments ---- */

/* A good and a bad value for every row; a row missing here fails test_every_row_has_values, so a
 * new variable cannot skip this test. bad NULL: the variable accepts any value. */
static const struct {
        const char *name, *good, *bad;
} values[] = {
        { "MCP_EXEC_TRANSPORT", "http", "ftp" },
        { "MCP_EXEC_ADDR", "[::1]:9000", "8080" },
        { "MCP_EXEC_AGENT_ADDR", "127.0.0.1:18081", "18081" },
        { "MCP_EXEC_MAX_TIMEOUT_S", "600", "0" },
        { "MCP_EXEC_DEFAULT_TIMEOUT_S", "10", "abc" },
        { "MCP_EXEC_MAX_OUTPUT_BYTES", "4096", "0" },
        { "MCP_EXEC_MAX_STDIN_BYTES", "0", "-1" },
        { "MCP_EXEC_MAX_CODE_BYTES", "1000", "0" },
        { "MCP_EXEC_MAX_INPUT_BYTES", "0", "4M" },
        { "MCP_EXEC_MAX_RETURN_BYTES", "67108864", "67108865" },
        { "MCP_EXEC_MAX_MESSAGE_BYTES", "4096", "10" },
        { "MCP_EXEC_PYTHON", "/usr/bin/python3", "python3 -X dev" },
        { "MCP_EXEC_AUTH_TOKEN", NULL, NULL }, /* unset: read from the credential (see below) */
        { "MCP_EXEC_MEMORY_MAX", "50%", "12Q" },
        { "MCP_EXEC_PIDS_MAX", "infinity", "1" },
        { "MCP_EXEC_CPU_QUOTA", "250%", "50" },
        { "MCP_EXEC_TMP_SIZE", "16M", "infinity" },
        { "MCP_EXEC_MAX_CONCURRENT", "8", "0" },
        { "MCP_EXEC_WARM_POOL", "1", "-1" },
        { "MCP_EXEC_PY_SESSIONS_MAX", "4", "1025" },
        { "MCP_EXEC_PY_SESSION_IDLE_S", "60", "0" },
        { "MCP_EXEC_PY_SESSION_LIFETIME_S", "3600", "abc" },
        { "MCP_EXEC_PRELOAD", "numpy,matplotlib.pyplot", "numpy,,pandas" },
        { "MCP_EXEC_QUEUE_MAX", "100", "-1" },
        { "MCP_EXEC_SESSION_QUEUE_MAX", "100", "abc" },
        { "MCP_EXEC_MAX_SESSIONS", "5", "0" },
        { "MCP_EXEC_CGROUP", "systemd", "foo" },
        { "MCP_EXEC_SLICE", "foo-bar.slice", "foo" },
        { "MCP_EXEC_REQUIRE_CGROUP", "yes", "maybe" },
        { "MCP_EXEC_ALLOW_UNAUTHENTICATED_NETWORK", "1", "sometimes" },
        { "MCP_EXEC_TENANTS", "/etc/mcp-execd/tenants", "tenants" },
        { "MCP_EXEC_OAUTH_ISSUER", "https://auth.example.com", "ftp://auth.example.com" },
        { "MCP_EXEC_OAUTH_JWKS", "/etc/mcp-execd/jwks.json", "jwks.json" },
        { "MCP_EXEC_OAUTH_RESOURCE", "https://mcp.example.com/mcp", "mcp.example.com/mcp" },
        { "MCP_EXEC_OAUTH_SCOPE", "mcp-execd", "mcp execd" },
        { "MCP_EXEC_OAUTH_TENANT_CLAIM", "client_id", "" },
        { "MCP_EXEC_ALLOWED_HOSTS", "a.example.com,10.0.0.5:8080", "a,,b" },
        { "MCP_EXEC_EGRESS_ALLOW", "pypi.org,*.example.com:8443,127.0.0.1:8000", "http://pypi.org" },
        { "MCP_EXEC_ALLOWED_ORIGINS", "https://app.example.com", "app.example.com" },
        { "MCP_EXEC_SESSION_IDLE_S", "60", "0" },
        { "MCP_EXEC_SSE_KEEPALIVE_S", "1", "3601" },
        { "MCP_EXEC_TASK_TTL_S", "60", "0" },
        { "MCP_EXEC_TASK_INLINE_MS", "250", "60001" },
        { "MCP_EXEC_TASKS_MAX", "8", "0" },
        { "MCP_EXEC_TASKS_PER_CLIENT", "4", "257" },
        { "MCP_EXEC_TASKS_MAX_BYTES", "64M", "512K" },
        { "MCP_EXEC_DRAIN_S", "30", "86401" },
        { "MCP_EXEC_INSTANCE", "i8081", "I-8081" },
        { "MCP_EXEC_PYTHONS", "python3=/usr/bin/python3,pypy3=pypy3", "x=" },
        { "MCP_EXEC_INDEX_URL", "http://127.0.0.1:3141/simple/", "ftp://example.com/simple" },
        { "MCP_EXEC_WHEELHOUSE", "/", "relative/dir" },
        { "MCP_EXEC_ENV_CACHE_DIR", "/var/cache/mcp-execd", "cache" },
        { "MCP_EXEC_ENV_CACHE_MAX", "5M", "1000" },
        { "MCP_EXEC_INSTALL_TIMEOUT_S", "60", "0" },
};

#define ENV_MAX 64
static const char *env[2 * ENV_MAX + 1];
static char credentials[64]; /* a directory holding auth-token */

static char *lookup(const char *name) {
        for (const char *const *p = env; p[0]; p += 2)
                if (strcmp(p[0], name) == 0)
                        return (char *) p[1];
        return NULL;
}

static void env_set(const char *name, const char *value) {
        size_t i = 0;
        for (; env[i]; i += 2)
                if (strcmp(env[i], name) == 0) {
                        env[i + 1] = value;
                        return;
                }
        assert_true(i + 2 < ELEMENTSOF(env));
        env[i] = name;
        env[i + 1] = value;
        env[i + 2] = NULL;
}

/* Every variable set to a good value, so a refusal in a late row has every earlier string to free;
 * the token comes from the credential, whose reading allocates too. */
static void env_good(void) {
        env[0] = NULL;
        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                if (values[i].good)
                        env_set(values[i].name, values[i].good);
        env_set("CREDENTIALS_DIRECTORY", credentials);
}

/* Loads the current environment with the Nth allocation failing, for N = 1, 2, … until the load
 * makes fewer than N allocations: each of those must be -ENOMEM with nothing left allocated. The
 * last load's result and message are returned (the message NULL when expect is 0). */
static int load_failing_each_allocation(int expect, char **ret_message) {
        Config c;
        char *err;
        int r;
        unsigned sites = 0;
        for (unsigned n = 1;; n++) {
                assert_true(n < 1000);
                armed = true;
                calls = 0;
                fail_at = n;
                n_live = 0;
                err = NULL;
                r = config_load(lookup, &c, &err);
                armed = false;
                if (calls < n)
                        break; /* nothing failed: the real result */
                sites++;
                assert_int_equal(r, -ENOMEM);
                free(err); /* a credential error may still carry its message */
                assert_int_equal(n_live, 0);
        }
        assert_int_equal(r, expect);
        assert_true(sites > 0); /* the seam works: at least the message or a string was allocated */
        print_message("  %u allocations, each failed once: -ENOMEM, nothing left\n", sites);
        if (r == 0) {
                assert_null(err);
                config_done(&c);
        }
        *ret_message = err;
        /* What is still live is only the message, handed to the caller. */
        assert_int_equal(n_live, err ? 1 : 0);
        untrack(err);
        return r;
}

static void test_every_row_has_values(void **state) {
        for (size_t i = 0; i < config_table_size; i++) {
                bool found = false;
                for (size_t j = 0; j < ELEMENTSOF(values) && !found; j++)
                        found = strcmp(values[j].name, config_table[i].name) == 0;
                if (!found)
                        fail_msg("%s has no good and bad value here", config_table[i].name);
        }
        assert_int_equal(ELEMENTSOF(values), config_table_size);
}

static void test_good_environment(void **state) {
        char *err;
        env_good();
        assert_int_equal(load_failing_each_allocation(0, &err), 0);
}

/* Each row's bad value, all other variables good: refused with the row's own message. */
static void test_each_bad_value(void **state) {
        for (size_t i = 0; i < config_table_size; i++) {
                const ConfigVariable *row = &config_table[i];
                const char *bad = NULL;
                for (size_t j = 0; j < ELEMENTSOF(values); j++)
                        if (strcmp(values[j].name, row->name) == 0)
                                bad = values[j].bad;
                if (!bad)
                        continue;
                env_good();
                env_set(row->name, bad);
                print_message("%s=%s\n", row->name, bad);
                char *err, *want;
                assert_int_equal(load_failing_each_allocation(-EINVAL, &err), -EINVAL);
                assert_true(asprintf(&want, "%s=\"%s\" is invalid: expected %s", row->name, bad,
                                     row->accepted) > 0);
                assert_string_equal(err, want);
                free(err);
                free(want);
        }
}

/* The rules between rows, and the credential that cannot be read. */
static void test_each_rule(void **state) {
        static const struct {
                const char *name, *value, *name2, *value2;
                int error;
                const char *message;
        } rules[] = {
                { "MCP_EXEC_DEFAULT_TIMEOUT_S", "20", "MCP_EXEC_MAX_TIMEOUT_S", "10", -EINVAL,
                  "MCP_EXEC_DEFAULT_TIMEOUT_S=\"20\" is invalid: expected at most "
                  "MCP_EXEC_MAX_TIMEOUT_S (10)" },
                { "MCP_EXEC_SESSION_QUEUE_MAX", "5", "MCP_EXEC_QUEUE_MAX", "4", -EINVAL,
                  "MCP_EXEC_SESSION_QUEUE_MAX=\"5\" is invalid: expected at most MCP_EXEC_QUEUE_MAX (4)" },
                { "MCP_EXEC_REQUIRE_CGROUP", "yes", "MCP_EXEC_CGROUP", "none", -EINVAL,
                  "MCP_EXEC_REQUIRE_CGROUP=\"1\" is invalid: expected 0 when MCP_EXEC_CGROUP=none (the two "
                  "contradict each other)" },
                /* OAuth's settings go together, with the tenants file ("": unset) */
                { "MCP_EXEC_OAUTH_JWKS", "", NULL, NULL, -EINVAL,
                  "OAuth needs MCP_EXEC_OAUTH_JWKS too: MCP_EXEC_OAUTH_ISSUER, MCP_EXEC_OAUTH_JWKS, "
                  "MCP_EXEC_OAUTH_RESOURCE and MCP_EXEC_TENANTS go together" },
                { "MCP_EXEC_TENANTS", "", NULL, NULL, -EINVAL,
                  "OAuth needs MCP_EXEC_TENANTS too: MCP_EXEC_OAUTH_ISSUER, MCP_EXEC_OAUTH_JWKS, "
                  "MCP_EXEC_OAUTH_RESOURCE and MCP_EXEC_TENANTS go together" },
                /* value NULL: a path too long to open */
                { "CREDENTIALS_DIRECTORY", NULL, NULL, NULL, -ENAMETOOLONG,
                  "cannot read the credential auth-token: File name too long" },
                /* a blank token is refused, not taken for "no token" (and never quoted) */
                { "MCP_EXEC_AUTH_TOKEN", " ", NULL, NULL, -EINVAL,
                  "MCP_EXEC_AUTH_TOKEN is set but empty or only white space: a token is required there "
                  "(unset it to serve without one, on loopback only)" },
        };
        static char long_dir[PATH_MAX + 16];
        memset(long_dir, 'a', sizeof(long_dir) - 1);
        for (size_t i = 0; i < ELEMENTSOF(rules); i++) {
                env_good();
                env_set(rules[i].name, rules[i].value ?: long_dir);
                if (rules[i].name2)
                        env_set(rules[i].name2, rules[i].value2);
                print_message("%s, %s\n", rules[i].name, rules[i].name2 ?: "-");
                char *err;
                assert_int_equal(load_failing_each_allocation(rules[i].error, &err), rules[i].error);
                assert_string_equal(err, rules[i].message);
                free(err);
        }
}

/* The token from the environment (a strdup of its own) and the built-in defaults. */
static void test_token_and_defaults(void **state) {
        char *err;
        env_good();
        env_set("MCP_EXEC_AUTH_TOKEN", "s3cret");
        assert_int_equal(load_failing_each_allocation(0, &err), 0);
        env[0] = NULL;
        assert_int_equal(load_failing_each_allocation(0, &err), 0);
}

static int setup(void **state) {
        strcpy(credentials, "/tmp/test-config-alloc-XXXXXX");
        if (!mkdtemp(credentials))
                return -1;
        char path[128];
        snprintf(path, sizeof(path), "%s/auth-token", credentials);
        FILE *f = fopen(path, "we");
        if (!f)
                return -1;
        fputs("from-credential\n", f);
        return fclose(f);
}

static int teardown(void **state) {
        char path[128];
        snprintf(path, sizeof(path), "%s/auth-token", credentials);
        (void) unlink(path);
        return rmdir(credentials);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_row_has_values),
                cmocka_unit_test(test_good_environment),
                cmocka_unit_test(test_each_bad_value),
                cmocka_unit_test(test_each_rule),
                cmocka_unit_test(test_token_and_defaults),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
