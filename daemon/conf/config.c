/* config.c: reading and validating the MCP_EXEC_* environment (mcp-exec's names and defaults, and
 * ours). A bad value is never replaced by a default: the daemon refuses to start. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "fd-util.h"
#include "sandbox.h"

const char *const config_variables[] = {
        "MCP_EXEC_TRANSPORT", "MCP_EXEC_ADDR", "MCP_EXEC_DEFAULT_TIMEOUT_S", "MCP_EXEC_MAX_TIMEOUT_S",
        "MCP_EXEC_MAX_OUTPUT_BYTES", "MCP_EXEC_MAX_STDIN_BYTES", "MCP_EXEC_MAX_CODE_BYTES",
        "MCP_EXEC_MAX_MESSAGE_BYTES", "MCP_EXEC_PYTHON", "MCP_EXEC_AUTH_TOKEN", "MCP_EXEC_MEMORY_MAX",
        "MCP_EXEC_PIDS_MAX", "MCP_EXEC_CPU_QUOTA", "MCP_EXEC_TMP_SIZE", "MCP_EXEC_MAX_CONCURRENT",
        "MCP_EXEC_QUEUE_MAX", "MCP_EXEC_CGROUP", "MCP_EXEC_SLICE", "MCP_EXEC_REQUIRE_CGROUP",
        "MCP_EXEC_ALLOWED_HOSTS", "MCP_EXEC_ALLOWED_ORIGINS", "MCP_EXEC_SESSION_IDLE_S", "MCP_EXEC_SSE_KEEPALIVE_S",
        "MCP_EXEC_PYTHONS", "MCP_EXEC_INDEX_URL", "MCP_EXEC_WHEELHOUSE", "MCP_EXEC_ENV_CACHE_DIR",
        "MCP_EXEC_ENV_CACHE_MAX", "MCP_EXEC_INSTALL_TIMEOUT_S", "MCP_EXEC_MAX_INPUT_BYTES",
        "MCP_EXEC_MAX_RETURN_BYTES", "MCP_EXEC_MAX_SESSIONS", "MCP_EXEC_SESSION_QUEUE_MAX",
        NULL,
};

#define MAX_BYTES_LIMIT ((uint64_t) 64 << 20) /* output, stdin, code: the SDK's stdio buffer is 10 MiB */

int config_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        if (!s || *s < '0' || *s > '9')
                return -EINVAL; /* also refuses "-1", "+1", " 1" and "" */
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0' || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* Sizes as systemd users write them (systemd.resource-control(5)): bytes, or K, M, G, T with
 * base 1024, or "infinity", or (if allowed) a percentage of physical memory. */
int config_parse_size(const char *s, bool allow_percent, uint64_t *ret) {
        if (!s || !*s)
                return -EINVAL;
        if (strcmp(s, "infinity") == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0)
                return -EINVAL;
        if (allow_percent && strcmp(end, "%") == 0) {
                if (v == 0 || v > 100)
                        return -EINVAL;
                struct sysinfo si;
                if (sysinfo(&si) < 0)
                        return -errno;
                *ret = (uint64_t) si.totalram * si.mem_unit / 100 * v;
                return 0;
        }
        unsigned shift;
        switch (*end) {
        case '\0': shift = 0; break;
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        case 'T': shift = 40; break;
        default: return -EINVAL;
        }
        if (*end && end[1] != '\0')
                return -EINVAL;
        if (v > (UINT64_MAX >> shift))
                return -EINVAL;
        *ret = (uint64_t) v << shift;
        return 0;
}

int config_parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

/* CPUQuota= style: "50%", "200%" (more than one CPU), or "infinity" (0). */
int config_parse_percent(const char *s, uint32_t *ret) {
        if (strcmp(s, "infinity") == 0) {
                *ret = 0;
                return 0;
        }
        size_t n = strlen(s);
        if (n < 2 || s[n - 1] != '%')
                return -EINVAL;
        char num[16];
        if (n - 1 >= sizeof(num))
                return -EINVAL;
        memcpy(num, s, n - 1);
        num[n - 1] = '\0';
        uint64_t v;
        if (config_parse_uint(num, 1, 100000, &v) < 0)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

/* host:port with host an IPv4 literal, a bracketed IPv6 literal, "localhost", or empty (all
 * interfaces, as mcp-exec's ":8080"); port 1–65535. */
int config_parse_addr(const char *s) {
        const char *colon = strrchr(s, ':');
        if (!colon)
                return -EINVAL;
        uint64_t port;
        if (config_parse_uint(colon + 1, 1, 65535, &port) < 0)
                return -EINVAL;
        size_t hl = (size_t) (colon - s);
        char host[INET6_ADDRSTRLEN + 2];
        if (hl >= sizeof(host))
                return -EINVAL;
        memcpy(host, s, hl);
        host[hl] = '\0';
        if (hl == 0 || strcmp(host, "localhost") == 0)
                return 0;
        unsigned char buf[sizeof(struct in6_addr)];
        if (host[0] == '[') {
                if (hl < 3 || host[hl - 1] != ']')
                        return -EINVAL;
                host[hl - 1] = '\0';
                return inet_pton(AF_INET6, host + 1, buf) == 1 ? 0 : -EINVAL;
        }
        return inet_pton(AF_INET, host, buf) == 1 ? 0 : -EINVAL;
}

/* Entries are what the HTTP allow-list compares with (mcp/http-check.c): Host values "name" or
 * "name:port", Origins "scheme://name[:port]"; "*" alone turns the check off. */
int config_parse_http_list(const char *s, bool origins) {
        if (!s || !*s)
                return -EINVAL;
        if (strcmp(s, "*") == 0)
                return 0;
        const char *p = s;
        while (*p) {
                size_t n = strcspn(p, ",");
                if (n == 0)
                        return -EINVAL;
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char) p[i] <= 0x20 || (unsigned char) p[i] >= 0x7f)
                                return -EINVAL;
                const char *sep = memmem(p, n, "://", 3);
                if (origins ? !sep || sep == p || (size_t) (sep - p) + 3 >= n || memchr(sep + 3, '/', n - (size_t) (sep - p) - 3)
                            : sep || memchr(p, '/', n) != NULL)
                        return -EINVAL;
                p += n;
                if (*p == ',' && *++p == '\0')
                        return -EINVAL;
        }
        return 0;
}

static bool python_name_valid(const char *s, size_t n) {
        if (n == 0 || n > 32)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", s[i]))
                        return false;
        return true;
}

int config_parse_pythons(const char *s, char *buf, size_t size, const char **names, const char **paths) {
        size_t len = s ? strlen(s) : 0;
        if (len == 0 || len >= size)
                return -EINVAL;
        memcpy(buf, s, len + 1);
        int n = 0;
        for (char *p = buf; p;) {
                char *comma = strchr(p, ',');
                if (comma)
                        *comma = '\0';
                char *eq = strchr(p, '=');
                const char *name, *path;
                if (eq) {
                        *eq = '\0';
                        name = p;
                        path = eq + 1;
                } else {
                        /* "pypy3" or "/usr/bin/pypy3": named after its last component */
                        const char *slash = strrchr(p, '/');
                        name = slash ? slash + 1 : p;
                        path = p;
                }
                if (!python_name_valid(name, strlen(name)) || !*path || strchr(path, ' ') || strchr(path, '=') ||
                    (strchr(path, '/') && path[0] != '/') || n >= CONFIG_PYTHONS_MAX)
                        return -EINVAL;
                for (int i = 0; names && i < n; i++)
                        if (strcmp(names[i], name) == 0)
                                return -EINVAL;
                if (names)
                        names[n] = name;
                if (paths)
                        paths[n] = path;
                n++;
                p = comma ? comma + 1 : NULL;
        }
        return n;
}

int config_parse_index_url(const char *s) {
        size_t skip;
        if (strncmp(s, "http://", 7) == 0)
                skip = 7;
        else if (strncmp(s, "https://", 8) == 0)
                skip = 8;
        else if (strncmp(s, "file:///", 8) == 0)
                skip = 7;
        else
                return -EINVAL;
        if (!s[skip] || (s[skip] == '/' && skip != 7))
                return -EINVAL;
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p <= 0x20 || (unsigned char) *p >= 0x7f)
                        return -EINVAL;
        return 0;
}

static int bad(char **reterr, const char *name, const char *value, const char *accepted) {
        if (reterr && asprintf(reterr, "%s=\"%s\" is invalid: expected %s", name, value, accepted) < 0)
                *reterr = NULL;
        return -EINVAL;
}

static bool slice_name_valid(const char *s) {
        size_t n = strlen(s);
        if (n <= 6 || n > 255 || strcmp(s + n - 6, ".slice") != 0)
                return false;
        for (size_t i = 0; i < n - 6; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\", s[i]))
                        return false;
        return true;
}

/* The auth token may come from a systemd credential (LoadCredential=auth-token:…), so the secret
 * need not sit in the environment (systemd.exec(5), "Credentials"). */
static int read_credential(char *(*env)(const char *), char **ret) {
        const char *dir = env("CREDENTIALS_DIRECTORY");
        if (!dir)
                return 0;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/auth-token", dir) < 0)
                return -ENOMEM;
        FILE *f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        char buf[4096];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        (void) fclose(f);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                n--;
        buf[n] = '\0';
        if (n == 0)
                return 0;
        *ret = strdup(buf);
        return *ret ? 1 : -ENOMEM;
}

int config_load(char *(*env)(const char *name), Config *ret, char **reterr) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        Config c = {
                .transport = TRANSPORT_STDIO,
                .default_timeout_s = 30,
                .max_timeout_s = 300,
                .max_output_bytes = 1048576,
                .max_stdin_bytes = 1048576,
                .max_code_bytes = 1048576,
                .max_input_bytes = 4 << 20,
                .max_return_bytes = 4 << 20,
                .max_message_bytes = 16 << 20,
                .memory_max_bytes = 256 << 20,
                .pids_max = 128,
                .cpu_quota_percent = 100,
                .tmp_size_bytes = 64 << 20,
                .max_concurrent = ncpu > 0 ? (uint32_t) ncpu : 1,
                .queue_max = 64,
                .session_queue_max = 16, /* a quarter of the default queue: no client fills it alone */
                .max_sessions = 1024,
                .cgroup = CGROUP_MODE_AUTO,
                .session_idle_s = 3600,
                .sse_keepalive_s = 15,
                .env_cache_max_bytes = (uint64_t) 2 << 30,
                .install_timeout_s = 300,
        };
        const char *v;
        uint64_t u;
        int r;

        if (reterr)
                *reterr = NULL;

#define FAIL(name, accepted) do { config_done(&c); return bad(reterr, name, v, accepted); } while (0)

        if ((v = env("MCP_EXEC_TRANSPORT"))) {
                if (strcmp(v, "stdio") == 0)
                        c.transport = TRANSPORT_STDIO;
                else if (strcmp(v, "http") == 0)
                        c.transport = TRANSPORT_HTTP;
                else if (strcmp(v, "sse") == 0)
                        c.transport = TRANSPORT_SSE;
                else
                        FAIL("MCP_EXEC_TRANSPORT", "one of stdio, http, sse");
        }

        v = env("MCP_EXEC_ADDR");
        if (v && config_parse_addr(v) < 0)
                FAIL("MCP_EXEC_ADDR", "host:port with an IPv4 address, [IPv6] address, localhost or nothing "
                                      "(all interfaces) before the colon and a port from 1 to 65535");
        c.addr = strdup(v ? v : "127.0.0.1:8080");
        if (!c.addr)
                return -ENOMEM;

        if ((v = env("MCP_EXEC_MAX_TIMEOUT_S"))) {
                if (config_parse_uint(v, 1, 86400, &u) < 0)
                        FAIL("MCP_EXEC_MAX_TIMEOUT_S", "whole seconds from 1 to 86400");
                c.max_timeout_s = (uint32_t) u;
        }
        if ((v = env("MCP_EXEC_DEFAULT_TIMEOUT_S"))) {
                if (config_parse_uint(v, 1, 86400, &u) < 0)
                        FAIL("MCP_EXEC_DEFAULT_TIMEOUT_S", "whole seconds from 1 to 86400");
                c.default_timeout_s = (uint32_t) u;
        }
        if (c.default_timeout_s > c.max_timeout_s) {
                /* Only a default set explicitly above the maximum is a contradiction; the built-in
                 * default follows a smaller maximum (MCP_EXEC_MAX_TIMEOUT_S=10 alone works, as with
                 * mcp-exec, which clamps). */
                if (!(v = env("MCP_EXEC_DEFAULT_TIMEOUT_S")))
                        c.default_timeout_s = c.max_timeout_s;
                else {
                        char accepted[96];
                        snprintf(accepted, sizeof(accepted), "at most MCP_EXEC_MAX_TIMEOUT_S (%" PRIu32 ")",
                                 c.max_timeout_s);
                        FAIL("MCP_EXEC_DEFAULT_TIMEOUT_S", accepted);
                }
        }

        static const struct {
                const char *name;
                uint64_t min;
                size_t offset;
        } byte_limits[] = {
                { "MCP_EXEC_MAX_OUTPUT_BYTES", 1, offsetof(Config, max_output_bytes) },
                { "MCP_EXEC_MAX_STDIN_BYTES", 0, offsetof(Config, max_stdin_bytes) },
                { "MCP_EXEC_MAX_CODE_BYTES", 1, offsetof(Config, max_code_bytes) },
                /* 0: no input files / nothing returned (outputs/ is still listed). */
                { "MCP_EXEC_MAX_INPUT_BYTES", 0, offsetof(Config, max_input_bytes) },
                { "MCP_EXEC_MAX_RETURN_BYTES", 0, offsetof(Config, max_return_bytes) },
        };
        for (size_t i = 0; i < ELEMENTSOF(byte_limits); i++)
                if ((v = env(byte_limits[i].name))) {
                        if (config_parse_uint(v, byte_limits[i].min, MAX_BYTES_LIMIT, &u) < 0)
                                FAIL(byte_limits[i].name, byte_limits[i].min == 0
                                                                  ? "a number of bytes from 0 to 67108864"
                                                                  : "a number of bytes from 1 to 67108864");
                        *(uint64_t *) ((char *) &c + byte_limits[i].offset) = u;
                }
        if ((v = env("MCP_EXEC_MAX_MESSAGE_BYTES"))) {
                if (config_parse_uint(v, 4096, (uint64_t) 1 << 30, &u) < 0)
                        FAIL("MCP_EXEC_MAX_MESSAGE_BYTES", "a number of bytes from 4096 to 1073741824");
                c.max_message_bytes = u;
        }

        v = env("MCP_EXEC_PYTHON");
        if (v && (!*v || strchr(v, ' ')))
                FAIL("MCP_EXEC_PYTHON", "an interpreter name (looked up in " SANDBOX_PATH ") or an "
                                        "absolute path, without spaces");
        c.python = strdup(v ? v : "python3");
        if (!c.python)
                return -ENOMEM;

        v = env("MCP_EXEC_AUTH_TOKEN");
        if (v && *v) {
                c.auth_token = strdup(v);
                if (!c.auth_token)
                        return -ENOMEM;
        } else if ((r = read_credential(env, &c.auth_token)) < 0) {
                config_done(&c);
                if (reterr && asprintf(reterr, "cannot read the credential auth-token: %s", strerror(-r)) < 0)
                        *reterr = NULL;
                return r;
        }

        if ((v = env("MCP_EXEC_MEMORY_MAX"))) {
                if (config_parse_size(v, true, &u) < 0 || u < (1 << 20))
                        FAIL("MCP_EXEC_MEMORY_MAX", "a size of at least 1M: bytes or a number with K, M, G or T "
                                                    "(base 1024), a percentage of physical memory, or infinity");
                c.memory_max_bytes = u;
        }
        if ((v = env("MCP_EXEC_PIDS_MAX"))) {
                if (strcmp(v, "infinity") == 0)
                        c.pids_max = UINT64_MAX;
                else if (config_parse_uint(v, 2, 4194304, &u) < 0)
                        FAIL("MCP_EXEC_PIDS_MAX", "a number of processes from 2 to 4194304, or infinity");
                else
                        c.pids_max = u;
        }
        if ((v = env("MCP_EXEC_CPU_QUOTA")) && config_parse_percent(v, &c.cpu_quota_percent) < 0)
                FAIL("MCP_EXEC_CPU_QUOTA", "a percentage of one CPU from 1% to 100000% (200% = two CPUs), or "
                                           "infinity");
        if ((v = env("MCP_EXEC_TMP_SIZE"))) {
                if (config_parse_size(v, false, &u) < 0 || u < (1 << 20) || u == UINT64_MAX)
                        FAIL("MCP_EXEC_TMP_SIZE", "a size of at least 1M: bytes or a number with K, M, G or T "
                                                  "(base 1024)");
                c.tmp_size_bytes = u;
        }
        if ((v = env("MCP_EXEC_MAX_CONCURRENT"))) {
                if (config_parse_uint(v, 1, 1024, &u) < 0)
                        FAIL("MCP_EXEC_MAX_CONCURRENT", "a number of runs from 1 to 1024");
                c.max_concurrent = (uint32_t) u;
        }
        if ((v = env("MCP_EXEC_QUEUE_MAX"))) {
                if (config_parse_uint(v, 0, 100000, &u) < 0)
                        FAIL("MCP_EXEC_QUEUE_MAX", "a number of waiting runs from 0 to 100000");
                c.queue_max = (uint32_t) u;
        }
        if ((v = env("MCP_EXEC_SESSION_QUEUE_MAX"))) {
                if (config_parse_uint(v, 0, 100000, &u) < 0)
                        FAIL("MCP_EXEC_SESSION_QUEUE_MAX", "a number of waiting runs from 0 to 100000");
                if (u > c.queue_max) {
                        char accepted[96];
                        snprintf(accepted, sizeof(accepted), "at most MCP_EXEC_QUEUE_MAX (%" PRIu32 ")", c.queue_max);
                        FAIL("MCP_EXEC_SESSION_QUEUE_MAX", accepted);
                }
                c.session_queue_max = (uint32_t) u;
        } else if (c.session_queue_max > c.queue_max)
                /* The built-in default follows a smaller total queue (as the default timeout follows
                 * a smaller maximum); only an explicit value above it is a contradiction. */
                c.session_queue_max = c.queue_max;
        if ((v = env("MCP_EXEC_MAX_SESSIONS"))) {
                if (config_parse_uint(v, 1, 100000, &u) < 0)
                        FAIL("MCP_EXEC_MAX_SESSIONS", "a number of HTTP sessions from 1 to 100000");
                c.max_sessions = (uint32_t) u;
        }
        if ((v = env("MCP_EXEC_CGROUP"))) {
                if (strcmp(v, "auto") == 0)
                        c.cgroup = CGROUP_MODE_AUTO;
                else if (strcmp(v, "systemd") == 0)
                        c.cgroup = CGROUP_MODE_SYSTEMD;
                else if (strcmp(v, "cgroupfs") == 0)
                        c.cgroup = CGROUP_MODE_CGROUPFS;
                else if (strcmp(v, "none") == 0)
                        c.cgroup = CGROUP_MODE_NONE;
                else
                        FAIL("MCP_EXEC_CGROUP", "one of auto, systemd, cgroupfs, none");
        }
        v = env("MCP_EXEC_SLICE");
        if (v && !slice_name_valid(v))
                FAIL("MCP_EXEC_SLICE", "a slice unit name such as mcp-execd.slice");
        c.slice = strdup(v ? v : "mcp-execd.slice");
        if (!c.slice)
                return -ENOMEM;
        if ((v = env("MCP_EXEC_REQUIRE_CGROUP")) && config_parse_bool(v, &c.require_cgroup) < 0)
                FAIL("MCP_EXEC_REQUIRE_CGROUP", "a boolean: 1, yes, true, on, 0, no, false or off");
        if (c.require_cgroup && c.cgroup == CGROUP_MODE_NONE) {
                v = "1";
                FAIL("MCP_EXEC_REQUIRE_CGROUP", "0 when MCP_EXEC_CGROUP=none (the two contradict each other)");
        }

        if ((v = env("MCP_EXEC_ALLOWED_HOSTS"))) {
                if (config_parse_http_list(v, false) < 0)
                        FAIL("MCP_EXEC_ALLOWED_HOSTS", "a comma-separated list of host names or host:port (no spaces, "
                                                       "no scheme), or * to accept any Host");
                if (!(c.allowed_hosts = strdup(v)))
                        return -ENOMEM;
        }
        if ((v = env("MCP_EXEC_ALLOWED_ORIGINS"))) {
                if (config_parse_http_list(v, true) < 0)
                        FAIL("MCP_EXEC_ALLOWED_ORIGINS", "a comma-separated list of origins such as "
                                                         "https://app.example.com:8443 (no path), or * to accept any Origin");
                if (!(c.allowed_origins = strdup(v)))
                        return -ENOMEM;
        }
        if ((v = env("MCP_EXEC_SESSION_IDLE_S"))) {
                if (config_parse_uint(v, 1, 604800, &u) < 0)
                        FAIL("MCP_EXEC_SESSION_IDLE_S", "whole seconds from 1 to 604800");
                c.session_idle_s = (uint32_t) u;
        }
        if ((v = env("MCP_EXEC_SSE_KEEPALIVE_S"))) {
                if (config_parse_uint(v, 1, 3600, &u) < 0)
                        FAIL("MCP_EXEC_SSE_KEEPALIVE_S", "whole seconds from 1 to 3600");
                c.sse_keepalive_s = (uint32_t) u;
        }
        if ((v = env("MCP_EXEC_PYTHONS"))) {
                char buf[1024];
                const char *names[CONFIG_PYTHONS_MAX];
                if (config_parse_pythons(v, buf, sizeof(buf), names, NULL) < 0)
                        FAIL("MCP_EXEC_PYTHONS", "a comma-separated list of name=path (name of letters, digits, . _ -; "
                                                 "path absolute or looked up in " SANDBOX_PATH "; names "
                                                 "unique; at most 8), e.g. python3=/usr/bin/python3,pypy3=/usr/bin/pypy3");
                if (!(c.pythons = strdup(v)))
                        return -ENOMEM;
        }
        if ((v = env("MCP_EXEC_INDEX_URL")) && *v) {
                if (config_parse_index_url(v) < 0)
                        FAIL("MCP_EXEC_INDEX_URL", "the URL of a PEP 503 simple index (http://, https:// or file:///), "
                                                   "e.g. http://127.0.0.1:3141/simple/");
                if (!(c.index_url = strdup(v)))
                        return -ENOMEM;
        }
        if ((v = env("MCP_EXEC_WHEELHOUSE")) && *v) {
                if (v[0] != '/' || access(v, R_OK | X_OK) < 0)
                        FAIL("MCP_EXEC_WHEELHOUSE", "an absolute path of a readable directory of wheels");
                if (!(c.wheelhouse = strdup(v)))
                        return -ENOMEM;
        }
        if ((v = env("MCP_EXEC_ENV_CACHE_DIR")) && *v) {
                if (v[0] != '/' || strchr(v, ' '))
                        FAIL("MCP_EXEC_ENV_CACHE_DIR", "an absolute path without spaces (created if missing)");
                if (!(c.env_cache_dir = strdup(v)))
                        return -ENOMEM;
        }
        if ((v = env("MCP_EXEC_ENV_CACHE_MAX"))) {
                if (config_parse_size(v, false, &u) < 0 || u < (1 << 20))
                        FAIL("MCP_EXEC_ENV_CACHE_MAX", "a size of at least 1M: bytes or a number with K, M, G or T "
                                                       "(base 1024), or infinity");
                c.env_cache_max_bytes = u;
        }
        if ((v = env("MCP_EXEC_INSTALL_TIMEOUT_S"))) {
                if (config_parse_uint(v, 1, 86400, &u) < 0)
                        FAIL("MCP_EXEC_INSTALL_TIMEOUT_S", "whole seconds from 1 to 86400");
                c.install_timeout_s = (uint32_t) u;
        }
#undef FAIL

        *ret = c;
        return 0;
}

void config_done(Config *c) {
        free(c->addr);
        free(c->python);
        if (c->auth_token) {
                /* Do not leave the secret in freed memory. */
                explicit_bzero(c->auth_token, strlen(c->auth_token));
                free(c->auth_token);
        }
        free(c->slice);
        free(c->allowed_hosts);
        free(c->allowed_origins);
        free(c->pythons);
        free(c->index_url);
        free(c->wheelhouse);
        free(c->env_cache_dir);
        *c = (Config) {};
}
