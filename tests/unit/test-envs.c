/* test-envs.c: the environment cache (daemon/python/envs.c) through its API and its one seam,
 * EnvsConfig.spawn_installer: a fake installer that writes the environment's marker as install.py
 * would and then runs a trivial child (no pip, no namespaces). The real ring, directories, output
 * pipe, pidfd and eviction are exercised: LRU order, entries in use never evicted, one install for
 * concurrent requests of one key, a failed install reported to every waiter and cached nowhere. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cleanup.h"
#include "envs.h"
#include "fd-util.h"
#include "ring.h"
#include "unit-fixture.h"

#define MARKER ".mcp-execd-env.json"
#define ENV_SIZE 100       /* size_bytes of every fake environment */
#define CACHE_MAX 250      /* so two environments fit, a third is over */

/* What the fake installer does for a key. */
typedef struct Behaviour {
        int status;         /* its exit status; non-zero: no marker written */
        const char *output; /* what it prints (pip's error, say) */
} Behaviour;

static struct {
        Ring *ring;
        Envs *envs;
        char dir[256];
        Behaviour behaviour;
        unsigned spawns;
        char last_key[80];
} T;

/* ---------------------------------------------------------------------------------------------
 * The fake installer. */

static int write_marker(const char *tmp, const char *key) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/" MARKER, tmp);
        json_t *m = json_pack("{s:s, s:s, s:[s], s:I}", "key", key, "python", "python3", "requirements",
                              "pkg==1.0", "size_bytes", (json_int_t) ENV_SIZE);
        int r = m ? json_dump_file(m, path, JSON_COMPACT) : -1;
        json_decref(m);
        return r < 0 ? -EIO : 0;
}

/* Like sandbox_spawn_installer: a held child (released by a byte on go_fd), its process group, its
 * output on spec->output_fd. argv[4] is the request install.py would get. */
static int fake_spawn(const SandboxInstallSpec *spec, SandboxInstaller *ret) {
        json_t *a = json_loads(spec->argv[4], 0, NULL);
        assert_non_null(a);
        const char *key = json_string_value(json_object_get(a, "key"));
        const char *tmp = json_string_value(json_object_get(a, "tmp"));
        const char *mode = json_string_value(json_object_get(a, "mode"));
        assert_non_null(key);
        assert_string_equal(tmp, spec->work_dir);
        assert_string_equal(mode, "install");
        T.spawns++;
        snprintf(T.last_key, sizeof(T.last_key), "%s", key);
        if (T.behaviour.status == 0)
                assert_int_equal(write_marker(tmp, key), 0);
        json_decref(a);

        int go[2];
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char c;
                if (read(go[0], &c, 1) != 1)
                        _exit(125);
                (void) setpgid(0, 0);
                const char *out = T.behaviour.output ? T.behaviour.output : "";
                (void) !write(spec->output_fd, out, strlen(out));
                _exit(T.behaviour.status);
        }
        close(go[0]);
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        assert_true(pidfd >= 0);
        *ret = (SandboxInstaller) { .pid = pid, .pidfd = pidfd, .go_fd = go[1] };
        return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Driving the cache. */

typedef struct Got {
        unsigned calls;
        bool has_dir;
        bool reused;
        char dir[PATH_MAX];
        char error[4096];
} Got;

static void on_ready(void *userdata, const char *dir, const char *error, bool reused, uint64_t install_ms) {
        Got *g = userdata;
        g->calls++;
        g->has_dir = dir != NULL;
        g->reused = reused;
        snprintf(g->dir, sizeof(g->dir), "%s", dir ? dir : "");
        snprintf(g->error, sizeof(g->error), "%s", error ? error : "");
}

static void acquire(const char *key, Got *g) {
        const char *reqs[] = { "pkg==1.0", NULL };
        EnvRequest req = {
                .key = key,
                .python_name = "python3",
                .interpreter = "/usr/bin/python3",
                .python_version = "3.11.2",
                .requirements = reqs,
        };
        EnvWaiter *w = NULL;
        assert_int_equal(envs_acquire(T.envs, &req, on_ready, g, &w), 0);
        assert_non_null(w);
}

/* Runs the loop until every Got in gots has its callback (5 s at most), then lets the cancelled
 * timers' completions arrive so finished installs are freed. */
static void wait_for(Got *const *gots, size_t n) {
        for (int i = 0; i < 500; i++) {
                size_t done = 0;
                for (size_t k = 0; k < n; k++)
                        done += gots[k]->calls > 0;
                if (done == n)
                        break;
                assert_int_equal(ring_run_once(T.ring, 10000), 0);
        }
        for (size_t k = 0; k < n; k++)
                assert_int_equal(gots[k]->calls, 1);
        for (int i = 0; i < 5; i++)
                assert_int_equal(ring_run_once(T.ring, 5000), 0);
}

/* Acquires key and waits for it; it stays in use until envs_release. */
static void use(const char *key) {
        Got g = {};
        acquire(key, &g);
        wait_for((Got *const[]) { &g }, 1);
        assert_true(g.has_dir);
}

/* Installs key (or hits it) and lets it go at once: evictable. */
static void install(const char *key) {
        use(key);
        envs_release(T.envs, key);
}

static bool cached(const char *key) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/envs/%s/" MARKER, T.dir, key);
        return access(path, F_OK) == 0;
}

/* The environments' last use (their markers' mtime, what LRU orders by): keys[i] at
 * 1000000000 + i * 100000000 s since the epoch, so the first is the least recently used. */
static void set_lru_order(const char *const *keys) {
        for (size_t i = 0; keys[i]; i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/envs/%s/" MARKER, T.dir, keys[i]);
                time_t sec = 1000000000 + (time_t) i * 100000000;
                struct timespec ts[2] = { { .tv_sec = sec }, { .tv_sec = sec } };
                assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
        }
}

static unsigned dir_entries(const char *sub) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", T.dir, sub);
        DIR *d = opendir(path);
        assert_non_null(d);
        unsigned n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static int setup(void **state) {
        snprintf(T.dir, sizeof(T.dir), "%s/test-envs-XXXXXX", getenv("TMPDIR") ?: "/tmp");
        assert_non_null(mkdtemp(T.dir));
        assert_int_equal(ring_new(64, &T.ring), 0);
        T.behaviour = (Behaviour) {};
        T.spawns = 0;
        EnvsConfig c = {
                .ring = T.ring,
                .dir = T.dir,
                .max_bytes = CACHE_MAX,
                .timeout_s = 30,
                .installer_python = "/usr/bin/python3",
                .spawn_installer = fake_spawn,
        };
        _cleanup_free_ char *why = NULL;
        assert_int_equal(envs_new(&c, &T.envs, &why), 0);
        return 0;
}

static int teardown(void **state) {
        T.envs = envs_free(T.envs);
        T.ring = ring_free(T.ring);
        (void) rm_rf(T.dir);
        return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The tests. */

/* Over max_bytes, the environment used least recently goes first, by last use, not by install
 * order; a cache hit counts as a use. */
static void test_lru_order(void **state) {
        install("aaaa");
        install("bbbb");
        assert_int_equal(T.spawns, 2);
        set_lru_order((const char *[]) { "bbbb", "aaaa", NULL }); /* aaaa installed first, used last */

        install("cccc"); /* 300 > 250 bytes: one goes, the least recently used */
        assert_true(cached("aaaa"));
        assert_false(cached("bbbb"));
        assert_true(cached("cccc"));

        /* aaaa older than cccc; a hit makes it the most recent. */
        set_lru_order((const char *[]) { "aaaa", "cccc", NULL });
        Got hit = {};
        acquire("aaaa", &hit);
        wait_for((Got *const[]) { &hit }, 1);
        assert_true(hit.reused);
        envs_release(T.envs, "aaaa");
        assert_int_equal(T.spawns, 3); /* the hit installed nothing */

        install("dddd");
        assert_true(cached("aaaa"));
        assert_false(cached("cccc"));
        assert_true(cached("dddd"));
        assert_int_equal(dir_entries("envs"), 2);
}

/* An environment acquired and not released is bound into a running sandbox: never evicted, even
 * when it is the least recently used, nor when the cache stays over its limit without it. */
static void test_in_use_not_evicted(void **state) {
        use("aaaa"); /* held */
        install("bbbb");
        set_lru_order((const char *[]) { "aaaa", "bbbb", NULL });

        use("cccc");
        assert_true(cached("aaaa"));  /* the oldest, but in use */
        assert_false(cached("bbbb")); /* the oldest not in use */
        assert_true(cached("cccc"));

        /* Both held now: a fourth install leaves the cache over its limit rather than evict them. */
        use("dddd");
        assert_true(cached("aaaa"));
        assert_true(cached("cccc"));
        assert_true(cached("dddd"));

        /* Released, the least recently used of them goes at the next install. */
        envs_release(T.envs, "aaaa");
        envs_release(T.envs, "cccc");
        envs_release(T.envs, "dddd");
        set_lru_order((const char *[]) { "aaaa", "cccc", "dddd", NULL });
        install("eeee");
        assert_false(cached("aaaa"));
        assert_false(cached("cccc"));
        assert_true(cached("dddd"));
        assert_true(cached("eeee"));
}

/* Two requests for one key before it exists: one install, both callbacks, both hold it. */
static void test_concurrent_requests_one_install(void **state) {
        Got a = {}, b = {};
        acquire("aaaa", &a);
        acquire("aaaa", &b);
        wait_for((Got *const[]) { &a, &b }, 2);
        assert_int_equal(T.spawns, 1);
        assert_true(a.has_dir);
        assert_true(b.has_dir);
        assert_string_equal(a.dir, b.dir);
        assert_false(a.reused);
        assert_false(b.reused);
        assert_string_equal(a.error, "");

        /* Two holds: after one release it is still in use. */
        envs_release(T.envs, "aaaa");
        install("bbbb");
        set_lru_order((const char *[]) { "aaaa", "bbbb", NULL });
        install("cccc");
        assert_true(cached("aaaa"));
        assert_false(cached("bbbb"));
        envs_release(T.envs, "aaaa");

        /* A third request is a cache hit. */
        Got c = {};
        acquire("aaaa", &c);
        wait_for((Got *const[]) { &c }, 1);
        assert_true(c.reused);
        assert_int_equal(T.spawns, 3);
        envs_release(T.envs, "aaaa");
}

/* A failed install: every waiter gets the error with the installer's output, nothing is cached
 * or left in tmp/, and the next request tries again. */
static void test_failed_install_reported_to_all(void **state) {
        T.behaviour = (Behaviour) {
                .status = 1,
                .output = "ERROR: No matching distribution found for pkg==1.0\n",
        };
        Got a = {}, b = {};
        acquire("aaaa", &a);
        acquire("aaaa", &b);
        wait_for((Got *const[]) { &a, &b }, 2);
        assert_int_equal(T.spawns, 1);
        for (Got *g = &a; g; g = g == &a ? &b : NULL) {
                assert_false(g->has_dir);
                assert_non_null(strstr(g->error, "exit status 1"));
                assert_non_null(strstr(g->error, "No matching distribution found for pkg==1.0"));
        }
        assert_false(cached("aaaa"));
        assert_int_equal(dir_entries("envs"), 0);
        assert_int_equal(dir_entries("tmp"), 0);

        T.behaviour = (Behaviour) {};
        use("aaaa");
        assert_int_equal(T.spawns, 2);
        assert_true(cached("aaaa"));
        envs_release(T.envs, "aaaa");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_lru_order),
                fixture_test(test_in_use_not_evicted),
                fixture_test(test_concurrent_requests_one_install),
                fixture_test(test_failed_install_reported_to_all),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
