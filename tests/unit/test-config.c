/* test-config.c: every MCP_EXEC_* variable, good and bad values, through config_load(); --help and the
 * unknown-name warning generated from the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include <errno.h>

#include <cmocka.h>

#include "cleanup.h"
#include "config-internal.h"

/* A fake environment: pairs of name, value. */
static const char *const *fake_env;

static char *lookup(const char *name) {
        for (const char *const *p = fake_env; p && p[0]; p += 2)
                if (strcmp(p[0], name) == 0)
                        return (char *) p[1];
        return NULL;
}

static int load(const char *const *env, Config *c, char **err) {
        fake_env = env;
        return config_load(lookup, c, err);
}

static void test_defaults(void **state) {
        Config c;
        char *err = NULL;
        const char *const env[] = { NULL };
        assert_int_equal(load(env, &c, &err), 0);
        assert_null(err);
        assert_int_equal(c.transport, TRANSPORT_STDIO);
        assert_string_equal(c.addr, "127.0.0.1:8080");
        assert_int_equal(c.default_timeout_s, 30);
        assert_int_equal(c.max_timeout_s, 300);
        assert_int_equal(c.max_output_bytes, 1048576);
        assert_int_equal(c.max_stdin_bytes, 1048576);
        assert_int_equal(c.max_code_bytes, 1048576);
        assert_int_equal(c.max_input_bytes, 4u << 20);
        assert_int_equal(c.max_return_bytes, 4u << 20);
        assert_string_equal(c.python, "python3");
        assert_null(c.auth_token);
        assert_int_equal(c.memory_max_bytes, 256u << 20);
        assert_int_equal(c.pids_max, 128);
        assert_int_equal(c.cpu_quota_percent, 100);
        assert_int_equal(c.tmp_size_bytes, 64u << 20);
        assert_true(c.max_concurrent >= 1);
        assert_int_equal(c.queue_max, 64);
        assert_int_equal(c.cgroup, CGROUP_MODE_AUTO);
        assert_string_equal(c.slice, "mcp-execd.slice");
        assert_false(c.require_cgroup);
        /* the HTTP variables (issue 6) */
        assert_null(c.allowed_hosts);
        assert_null(c.allowed_origins);
        assert_int_equal(c.session_idle_s, 3600);
        assert_int_equal(c.sse_keepalive_s, 15);
        /* the limits on sessions (issue 9) */
        assert_int_equal(c.max_sessions, 1024);
        assert_int_equal(c.session_queue_max, 16);
        /* interpreters, dependency sources, the environment cache (issue 8) */
        assert_null(c.pythons);
        assert_null(c.index_url);
        assert_null(c.wheelhouse);
        assert_null(c.env_cache_dir);
        assert_int_equal(c.env_cache_max_bytes, (uint64_t) 2 << 30);
        assert_int_equal(c.install_timeout_s, 300);
        config_done(&c);
}

static void test_good_values(void **state) {
        Config c;
        char *err = NULL;
        const char *const env[] = {
                "MCP_EXEC_TRANSPORT", "http",
                "MCP_EXEC_ADDR", "[::1]:9000",
                "MCP_EXEC_DEFAULT_TIMEOUT_S", "5",
                "MCP_EXEC_MAX_TIMEOUT_S", "60",
                "MCP_EXEC_MAX_OUTPUT_BYTES", "4096",
                "MCP_EXEC_MAX_STDIN_BYTES", "0",
                "MCP_EXEC_MAX_CODE_BYTES", "1000",
                "MCP_EXEC_MAX_INPUT_BYTES", "0",
                "MCP_EXEC_MAX_RETURN_BYTES", "67108864",
                "MCP_EXEC_PYTHON", "/usr/bin/python3",
                "MCP_EXEC_AUTH_TOKEN", "s3cret",
                "MCP_EXEC_MEMORY_MAX", "1G",
                "MCP_EXEC_PIDS_MAX", "infinity",
                "MCP_EXEC_CPU_QUOTA", "250%",
                "MCP_EXEC_TMP_SIZE", "16M",
                "MCP_EXEC_MAX_CONCURRENT", "8",
                "MCP_EXEC_QUEUE_MAX", "0",
                "MCP_EXEC_CGROUP", "systemd",
                "MCP_EXEC_SLICE", "foo-bar.slice",
                "MCP_EXEC_REQUIRE_CGROUP", "yes",
                "MCP_EXEC_ALLOWED_HOSTS", "mcp.example.com,10.0.0.5:8080",
                "MCP_EXEC_ALLOWED_ORIGINS", "https://app.example.com,http://10.0.0.5:3000",
                "MCP_EXEC_SESSION_IDLE_S", "60",
                "MCP_EXEC_SSE_KEEPALIVE_S", "1",
                "MCP_EXEC_PYTHONS", "python3=/usr/bin/python3,pypy3=pypy3",
                "MCP_EXEC_INDEX_URL", "http://127.0.0.1:3141/simple/",
                "MCP_EXEC_WHEELHOUSE", "/",
                "MCP_EXEC_ENV_CACHE_DIR", "/var/cache/mcp-execd",
                "MCP_EXEC_ENV_CACHE_MAX", "5M",
                "MCP_EXEC_INSTALL_TIMEOUT_S", "60",
                NULL,
        };
        assert_int_equal(load(env, &c, &err), 0);
        assert_int_equal(c.transport, TRANSPORT_HTTP);
        assert_string_equal(c.addr, "[::1]:9000");
        assert_int_equal(c.default_timeout_s, 5);
        assert_int_equal(c.max_timeout_s, 60);
        assert_int_equal(c.max_output_bytes, 4096);
        assert_int_equal(c.max_stdin_bytes, 0);
        assert_int_equal(c.max_code_bytes, 1000);
        assert_int_equal(c.max_input_bytes, 0);
        assert_int_equal(c.max_return_bytes, 64u << 20);
        assert_string_equal(c.python, "/usr/bin/python3");
        assert_string_equal(c.auth_token, "s3cret");
        assert_int_equal(c.memory_max_bytes, 1u << 30);
        assert_int_equal(c.pids_max, UINT64_MAX);
        assert_int_equal(c.cpu_quota_percent, 250);
        assert_int_equal(c.tmp_size_bytes, 16u << 20);
        assert_int_equal(c.max_concurrent, 8);
        assert_int_equal(c.queue_max, 0);
        assert_int_equal(c.cgroup, CGROUP_MODE_SYSTEMD);
        assert_string_equal(c.slice, "foo-bar.slice");
        assert_true(c.require_cgroup);
        assert_string_equal(c.allowed_hosts, "mcp.example.com,10.0.0.5:8080");
        assert_string_equal(c.allowed_origins, "https://app.example.com,http://10.0.0.5:3000");
        assert_int_equal(c.session_idle_s, 60);
        assert_int_equal(c.sse_keepalive_s, 1);
        assert_string_equal(c.pythons, "python3=/usr/bin/python3,pypy3=pypy3");
        assert_string_equal(c.index_url, "http://127.0.0.1:3141/simple/");
        assert_string_equal(c.wheelhouse, "/");
        assert_string_equal(c.env_cache_dir, "/var/cache/mcp-execd");
        assert_int_equal(c.env_cache_max_bytes, 5u << 20);
        assert_int_equal(c.install_timeout_s, 60);
        config_done(&c);
}

/* Each bad value is refused with a message naming the variable and the value. */
static void test_bad_values(void **state) {
        static const char *const bad[][2] = {
                { "MCP_EXEC_TRANSPORT", "ftp" },
                { "MCP_EXEC_TRANSPORT", "" },
                { "MCP_EXEC_ADDR", "8080" },
                { "MCP_EXEC_ADDR", "127.0.0.1:0" },
                { "MCP_EXEC_ADDR", "127.0.0.1:70000" },
                { "MCP_EXEC_ADDR", "::1:8080" },
                { "MCP_EXEC_ADDR", "example.com:80" },
                { "MCP_EXEC_AGENT_ADDR", "18081" },
                { "MCP_EXEC_AGENT_ADDR", "127.0.0.1:0" },
                { "MCP_EXEC_AGENT_ADDR", "127.0.0.1:8080" }, /* MCP_EXEC_ADDR's default */
                { "MCP_EXEC_DEFAULT_TIMEOUT_S", "abc" },
                { "MCP_EXEC_DEFAULT_TIMEOUT_S", "-5" },
                { "MCP_EXEC_DEFAULT_TIMEOUT_S", "0" },
                { "MCP_EXEC_DEFAULT_TIMEOUT_S", "301" }, /* explicitly above the (default) maximum */
                { "MCP_EXEC_MAX_TIMEOUT_S", "0" },
                { "MCP_EXEC_MAX_TIMEOUT_S", "1.5" },
                { "MCP_EXEC_MAX_TIMEOUT_S", "99999999999999999999999" },
                { "MCP_EXEC_MAX_OUTPUT_BYTES", "0" },
                { "MCP_EXEC_MAX_OUTPUT_BYTES", "1M" },
                { "MCP_EXEC_MAX_STDIN_BYTES", "-1" },
                { "MCP_EXEC_MAX_STDIN_BYTES", "67108865" },
                { "MCP_EXEC_MAX_CODE_BYTES", "0" },
                { "MCP_EXEC_MAX_INPUT_BYTES", "-1" },
                { "MCP_EXEC_MAX_INPUT_BYTES", "4M" },
                { "MCP_EXEC_MAX_INPUT_BYTES", "67108865" },
                { "MCP_EXEC_MAX_RETURN_BYTES", "abc" },
                { "MCP_EXEC_MAX_RETURN_BYTES", "67108865" },
                { "MCP_EXEC_MAX_MESSAGE_BYTES", "10" },
                { "MCP_EXEC_PYTHON", "" },
                { "MCP_EXEC_PYTHON", "python3 -X dev" },
                { "MCP_EXEC_MEMORY_MAX", "12Q" },
                { "MCP_EXEC_MEMORY_MAX", "100" },
                { "MCP_EXEC_MEMORY_MAX", "0%" },
                { "MCP_EXEC_MEMORY_MAX", "-1G" },
                { "MCP_EXEC_MEMORY_MAX", "1GB" },
                { "MCP_EXEC_PIDS_MAX", "1" },
                { "MCP_EXEC_PIDS_MAX", "lots" },
                { "MCP_EXEC_CPU_QUOTA", "abc" },
                { "MCP_EXEC_CPU_QUOTA", "50" },
                { "MCP_EXEC_CPU_QUOTA", "0%" },
                { "MCP_EXEC_CPU_QUOTA", "%" },
                { "MCP_EXEC_TMP_SIZE", "infinity" },
                { "MCP_EXEC_TMP_SIZE", "12k" },
                { "MCP_EXEC_MAX_CONCURRENT", "0" },
                { "MCP_EXEC_MAX_CONCURRENT", "1025" },
                { "MCP_EXEC_QUEUE_MAX", "-1" },
                { "MCP_EXEC_CGROUP", "foo" },
                { "MCP_EXEC_SLICE", "foo" },
                { "MCP_EXEC_SLICE", "a/b.slice" },
                { "MCP_EXEC_REQUIRE_CGROUP", "maybe" },
                /* the HTTP variables (issue 6) */
                { "MCP_EXEC_ALLOWED_HOSTS", "" },
                { "MCP_EXEC_ALLOWED_HOSTS", "a.example.com, b.example.com" },
                { "MCP_EXEC_ALLOWED_HOSTS", "a,,b" },
                { "MCP_EXEC_ALLOWED_HOSTS", "a," },
                { "MCP_EXEC_ALLOWED_HOSTS", "http://a.example.com" },
                { "MCP_EXEC_ALLOWED_ORIGINS", "app.example.com" },
                { "MCP_EXEC_ALLOWED_ORIGINS", "https://app.example.com/path" },
                { "MCP_EXEC_ALLOWED_ORIGINS", "https://" },
                { "MCP_EXEC_SESSION_IDLE_S", "0" },
                { "MCP_EXEC_SESSION_IDLE_S", "604801" },
                { "MCP_EXEC_SESSION_IDLE_S", "1h" },
                { "MCP_EXEC_SSE_KEEPALIVE_S", "0" },
                { "MCP_EXEC_SSE_KEEPALIVE_S", "3601" },
                /* the limits on sessions (issue 9) */
                { "MCP_EXEC_MAX_SESSIONS", "0" },
                { "MCP_EXEC_MAX_SESSIONS", "100001" },
                { "MCP_EXEC_MAX_SESSIONS", "-1" },
                { "MCP_EXEC_MAX_SESSIONS", "1k" },
                { "MCP_EXEC_MAX_SESSIONS", "" },
                { "MCP_EXEC_SESSION_QUEUE_MAX", "-1" },
                { "MCP_EXEC_SESSION_QUEUE_MAX", "abc" },
                { "MCP_EXEC_SESSION_QUEUE_MAX", " 1" },
                { "MCP_EXEC_SESSION_QUEUE_MAX", "100001" },
                /* interpreters, dependency sources, the environment cache (issue 8) */
                { "MCP_EXEC_PYTHONS", "" },
                { "MCP_EXEC_PYTHONS", "a=/usr/bin/python3,a=/usr/bin/pypy3" },
                { "MCP_EXEC_PYTHONS", "bad name=/usr/bin/python3" },
                { "MCP_EXEC_PYTHONS", "x=relative/python" },
                { "MCP_EXEC_PYTHONS", "x=" },
                { "MCP_EXEC_PYTHONS", "x=/usr/bin/python3," },
                { "MCP_EXEC_INDEX_URL", "ftp://example.com/simple" },
                { "MCP_EXEC_INDEX_URL", "http://" },
                { "MCP_EXEC_INDEX_URL", "http://a b/" },
                { "MCP_EXEC_WHEELHOUSE", "relative/dir" },
                { "MCP_EXEC_WHEELHOUSE", "/nonexistent/wheels" },
                { "MCP_EXEC_ENV_CACHE_DIR", "cache" },
                { "MCP_EXEC_ENV_CACHE_MAX", "12Q" },
                { "MCP_EXEC_ENV_CACHE_MAX", "1000" },
                { "MCP_EXEC_INSTALL_TIMEOUT_S", "0" },
                { "MCP_EXEC_INSTALL_TIMEOUT_S", "x" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                const char *const env[] = { bad[i][0], bad[i][1], NULL };
                Config c;
                char *err = NULL;
                print_message("%s=%s\n", bad[i][0], bad[i][1]);
                assert_int_equal(load(env, &c, &err), -EINVAL);
                assert_non_null(err);
                assert_non_null(strstr(err, bad[i][0]));
                char quoted[128];
                snprintf(quoted, sizeof(quoted), "\"%s\"", bad[i][1]);
                assert_non_null(strstr(err, quoted));
                assert_non_null(strstr(err, "expected"));
                free(err);
        }
}

static void test_contradictions(void **state) {
        Config c;
        char *err = NULL;
        const char *const env1[] = { "MCP_EXEC_DEFAULT_TIMEOUT_S", "20", "MCP_EXEC_MAX_TIMEOUT_S", "10", NULL };
        assert_int_equal(load(env1, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "MCP_EXEC_DEFAULT_TIMEOUT_S"));
        assert_non_null(strstr(err, "MCP_EXEC_MAX_TIMEOUT_S (10)"));
        free(err);

        /* The built-in default (30) follows a smaller maximum: not a contradiction. */
        const char *const env3[] = { "MCP_EXEC_MAX_TIMEOUT_S", "10", NULL };
        assert_int_equal(load(env3, &c, &err), 0);
        assert_int_equal(c.default_timeout_s, 10);
        assert_int_equal(c.max_timeout_s, 10);
        config_done(&c);

        const char *const env2[] = { "MCP_EXEC_CGROUP", "none", "MCP_EXEC_REQUIRE_CGROUP", "1", NULL };
        assert_int_equal(load(env2, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "MCP_EXEC_REQUIRE_CGROUP"));
        free(err);
}

static void test_parsers(void **state) {
        uint64_t u;
        bool b;
        uint32_t p;

        assert_int_equal(config_parse_size("512", false, &u), 0);
        assert_int_equal(u, 512);
        assert_int_equal(config_parse_size("4K", false, &u), 0);
        assert_int_equal(u, 4096);
        assert_int_equal(config_parse_size("2T", false, &u), 0);
        assert_int_equal(u, (uint64_t) 2 << 40);
        assert_int_equal(config_parse_size("infinity", false, &u), 0);
        assert_int_equal(u, UINT64_MAX);
        assert_int_equal(config_parse_size("50%", true, &u), 0);
        assert_true(u > 0);
        assert_int_equal(config_parse_size("50%", false, &u), -EINVAL);
        assert_int_equal(config_parse_size("99999999999T", false, &u), -EINVAL);

        assert_int_equal(config_parse_bool("On", &b), 0);
        assert_true(b);
        assert_int_equal(config_parse_bool("0", &b), 0);
        assert_false(b);
        assert_int_equal(config_parse_bool("", &b), -EINVAL);

        assert_int_equal(config_parse_percent("100%", &p), 0);
        assert_int_equal(p, 100);
        assert_int_equal(config_parse_percent("infinity", &p), 0);
        assert_int_equal(p, 0);

        assert_int_equal(config_parse_addr(":8080"), 0);
        assert_int_equal(config_parse_addr("localhost:1"), 0);
        assert_int_equal(config_parse_addr("0.0.0.0:65535"), 0);
        assert_int_equal(config_parse_addr("[fe80::1]:80"), 0);
        assert_int_equal(config_parse_addr("[fe80::1:80"), -EINVAL);
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void test_credential_token(void **state) {
        char dir[] = "/tmp/test-config-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[256];
        snprintf(path, sizeof(path), "%s/auth-token", dir);
        write_file(path, "from-credential\n");

        Config c;
        char *err = NULL;
        const char *const env[] = { "CREDENTIALS_DIRECTORY", dir, NULL };
        assert_int_equal(load(env, &c, &err), 0);
        assert_string_equal(c.auth_token, "from-credential");
        config_done(&c);

        /* The environment wins over the credential. */
        const char *const env2[] = { "CREDENTIALS_DIRECTORY", dir, "MCP_EXEC_AUTH_TOKEN", "env", NULL };
        assert_int_equal(load(env2, &c, &err), 0);
        assert_string_equal(c.auth_token, "env");
        config_done(&c);

        /* White space around the token is not part of it (a client cannot send it). */
        write_file(path, "  \tfrom-credential \r\n\n");
        assert_int_equal(load(env, &c, &err), 0);
        assert_string_equal(c.auth_token, "from-credential");
        config_done(&c);

        /* An empty or blank credential is an error naming the file, never "no token" (issue 29 #4). */
        const char *const blank[] = { "", "\n", " \t \r\n", "\n\n\n" };
        for (size_t i = 0; i < ELEMENTSOF(blank); i++) {
                write_file(path, blank[i]);
                assert_int_equal(load(env, &c, &err), -EBADMSG);
                assert_non_null(err);
                assert_non_null(strstr(err, path));
                assert_non_null(strstr(err, "empty or only white space"));
                free(err);
                err = NULL;
        }
        /* A NUL inside cannot be sent by a client: refused like a blank one. */
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fwrite("ab\0cd\n", 1, 6, f);
        fclose(f);
        assert_int_equal(load(env, &c, &err), -EBADMSG);
        free(err);
        err = NULL;
        /* Longer than the reader takes: refused, never cut short. */
        char big[5000];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        write_file(path, big);
        assert_int_equal(load(env, &c, &err), -EFBIG);
        assert_non_null(strstr(err, path));
        free(err);
        err = NULL;
        big[4095] = '\0'; /* the longest accepted */
        write_file(path, big);
        assert_int_equal(load(env, &c, &err), 0);
        assert_int_equal(strlen(c.auth_token), 4095);
        config_done(&c);

        /* MCP_EXEC_AUTH_TOKEN set but blank: an error that names the variable and quotes nothing. */
        const char *const blank_env[] = { "", " ", "\t\n" };
        for (size_t i = 0; i < ELEMENTSOF(blank_env); i++) {
                const char *const env3[] = { "CREDENTIALS_DIRECTORY", dir, "MCP_EXEC_AUTH_TOKEN", blank_env[i], NULL };
                assert_int_equal(load(env3, &c, &err), -EINVAL);
                assert_non_null(strstr(err, "MCP_EXEC_AUTH_TOKEN is set but empty"));
                assert_null(strchr(err, '"'));
                free(err);
                err = NULL;
        }
        unlink(path);
        rmdir(dir);
}

/* The HTTP variables (issue 6): "*" for any host or origin (defaults, other good values and bad ones:
 * test_defaults, test_good_values, test_bad_values). */
static void test_http_variables(void **state) {
        Config c;
        char *err = NULL;
        const char *const star[] = { "MCP_EXEC_ALLOWED_HOSTS", "*", "MCP_EXEC_ALLOWED_ORIGINS", "*", NULL };
        assert_int_equal(load(star, &c, &err), 0);
        assert_null(c.agent_addr); /* no agent check unless asked */
        config_done(&c);

        /* Issue 33.4: the agent check's address, any but the HTTP one's. */
        const char *const agent[] = { "MCP_EXEC_ADDR", "127.0.0.1:8081", "MCP_EXEC_AGENT_ADDR", "127.0.0.1:18081", NULL };
        assert_int_equal(load(agent, &c, &err), 0);
        assert_string_equal(c.agent_addr, "127.0.0.1:18081");
        config_done(&c);
        const char *const same[] = { "MCP_EXEC_ADDR", "[::1]:8081", "MCP_EXEC_AGENT_ADDR", "[::1]:8081", NULL };
        assert_int_equal(load(same, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "MCP_EXEC_AGENT_ADDR=\"[::1]:8081\" is invalid: expected host:port as for MCP_EXEC_ADDR, another"));
        free(err);
}

/* Issue 9: the daemon's own limits on sessions and on each session's share of the queue (defaults and
 * bad values: test_defaults, test_bad_values). */
static void test_session_limits(void **state) {
        Config c;
        char *err = NULL;
        const char *const good[] = { "MCP_EXEC_MAX_SESSIONS", "1", "MCP_EXEC_SESSION_QUEUE_MAX", "64", NULL };
        assert_int_equal(load(good, &c, &err), 0);
        assert_int_equal(c.max_sessions, 1);
        assert_int_equal(c.session_queue_max, 64); /* equal to the total queue is fine */
        config_done(&c);

        const char *const top[] = { "MCP_EXEC_MAX_SESSIONS", "100000", "MCP_EXEC_QUEUE_MAX", "100000",
                                    "MCP_EXEC_SESSION_QUEUE_MAX", "0", NULL };
        assert_int_equal(load(top, &c, &err), 0);
        assert_int_equal(c.max_sessions, 100000);
        assert_int_equal(c.session_queue_max, 0);
        config_done(&c);

        /* The built-in default follows a smaller total queue; an explicit larger value is refused,
         * naming both variables. */
        const char *const small[] = { "MCP_EXEC_QUEUE_MAX", "4", NULL };
        assert_int_equal(load(small, &c, &err), 0);
        assert_int_equal(c.session_queue_max, 4);
        config_done(&c);
        const char *const contra[] = { "MCP_EXEC_QUEUE_MAX", "4", "MCP_EXEC_SESSION_QUEUE_MAX", "5", NULL };
        assert_int_equal(load(contra, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "MCP_EXEC_SESSION_QUEUE_MAX=\"5\""));
        assert_non_null(strstr(err, "MCP_EXEC_QUEUE_MAX (4)"));
        free(err);
        const char *const contra2[] = { "MCP_EXEC_SESSION_QUEUE_MAX", "65", NULL };
        assert_int_equal(load(contra2, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "MCP_EXEC_QUEUE_MAX (64)"));
        free(err);
}

/* Issue 8: MCP_EXEC_PYTHONS read into names and paths (the variables of interpreters, dependency
 * sources and the environment cache: test_defaults, test_good_values, test_bad_values). */
static void test_python_variables(void **state) {
        char buf[256];
        const char *names[CONFIG_PYTHONS_MAX], *paths[CONFIG_PYTHONS_MAX];
        assert_int_equal(config_parse_pythons("python3=/usr/bin/python3,pypy3", buf, sizeof(buf), names, paths), 2);
        assert_string_equal(names[0], "python3");
        assert_string_equal(paths[0], "/usr/bin/python3");
        assert_string_equal(names[1], "pypy3");
        assert_string_equal(paths[1], "pypy3");
        assert_int_equal(config_parse_pythons("/usr/bin/pypy3", buf, sizeof(buf), names, paths), 1);
        assert_string_equal(names[0], "pypy3");
        assert_string_equal(paths[0], "/usr/bin/pypy3");
}

/* --help: one line per row, its name first, then its help (and default); in table order. */
static void test_help(void **state) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        assert_non_null(f);
        config_print_help(f);
        assert_int_equal(fclose(f), 0);
        const char *line = text;
        for (size_t i = 0; i < config_table_size; i++) {
                char want[64];
                snprintf(want, sizeof(want), "  %s ", config_table[i].name);
                assert_memory_equal(line, want, strlen(want));
                const char *nl = strchr(line, '\n');
                assert_non_null(nl);
                const char *help = config_table[i].help;
                assert_non_null(memmem(line, (size_t) (nl - line), help, strlen(help)));
                line = nl + 1;
        }
        assert_string_equal(line, "");
        free(text);
}

/* The unknown-name warning: one line per MCP_EXEC_* name that is no row, nothing for the others. */
static void test_warn_unknown(void **state) {
        char *const envp[] = {
                "MCP_EXEC_TRANSPORT=http", "MCP_EXEC_TRANSPORTS=http", "PATH=/bin", "MCP_EXEC_MAX_TIMEOUT=5",
                "MCP_EXEC_SLICE", "MCP_EXEC_PYTHON=", "mcp_exec_python=x", NULL,
        };
        FILE *tmp = tmpfile();
        assert_non_null(tmp);
        fflush(stderr);
        int saved = dup(STDERR_FILENO);
        assert_true(saved >= 0);
        assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
        config_warn_unknown(envp);
        fflush(stderr);
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        char out[1024];
        rewind(tmp);
        size_t n = fread(out, 1, sizeof(out) - 1, tmp);
        out[n] = '\0';
        fclose(tmp);
        assert_string_equal(out, "<4>mcp-execd: unknown variable MCP_EXEC_TRANSPORTS in the environment (a "
                                 "typo?), ignoring\n"
                                 "<4>mcp-execd: unknown variable MCP_EXEC_MAX_TIMEOUT in the environment (a "
                                 "typo?), ignoring\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_python_variables),
                cmocka_unit_test(test_http_variables),
                cmocka_unit_test(test_session_limits),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_good_values),
                cmocka_unit_test(test_bad_values),
                cmocka_unit_test(test_contradictions),
                cmocka_unit_test(test_parsers),
                cmocka_unit_test(test_credential_token),
                cmocka_unit_test(test_help),
                cmocka_unit_test(test_warn_unknown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
