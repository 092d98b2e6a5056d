/* config.c: the MCP_EXEC_* variables, one table row each (parser, field, range, default, what is
 * accepted, help), read and checked once at start; --help and the unknown-name warning come from the
 * same table. A bad value is never replaced by a default: the daemon refuses to start. */
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
#include "config-internal.h"
#include "log.h"
#include "policy.h"
#include "project-config.h" /* SANDBOX_PATH, which messages name */
#include "str-util.h"

#define MAX_BYTES_LIMIT ((uint64_t) 64 << 20) /* output, stdin, code: the SDK's stdio buffer is 10 MiB */

int config_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v;
        if (str_parse_u64(s, &v) < 0 || v < min || v > max)
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

int config_parse_preload(const char *s) {
        size_t len = strlen(s);
        if (len == 0 || len > CONFIG_PRELOAD_MAX_BYTES)
                return -EINVAL;
        bool start = true; /* at the start of a name part */
        for (const char *p = s; *p; p++) {
                char ch = *p;
                bool letter = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
                bool digit = ch >= '0' && ch <= '9';
                if (start) {
                        if (!letter)
                                return -EINVAL;
                        start = false;
                } else if (ch == '.' || ch == ',')
                        start = true;
                else if (!letter && !digit)
                        return -EINVAL;
        }
        return start ? -EINVAL : 0; /* not ending with '.' or ',' */
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

/* The validators of the string rows: 0 or -EINVAL. */
static int slice_name_valid(const char *s) {
        size_t n = strlen(s);
        if (n <= 6 || n > 255 || strcmp(s + n - 6, ".slice") != 0)
                return -EINVAL;
        for (size_t i = 0; i < n - 6; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\", s[i]))
                        return -EINVAL;
        return 0;
}

/* MCP_EXEC_INSTANCE: what a load balancer reads in an id, so no separator of ours ('-') and
 * nothing a header or a HAProxy sample fetch would need quoted. */
static int instance_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > CONFIG_INSTANCE_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[i]))
                        return -EINVAL;
        return 0;
}

static int python_valid(const char *s) {
        return *s && !strchr(s, ' ') ? 0 : -EINVAL;
}

/* MCP_EXEC_EGRESS_ALLOW: egress/'s allowlist, parsed as the proxy will read it. */
static int egress_allow_valid(const char *s) {
        EgressPolicy *p = NULL;
        int r = egress_policy_parse(s, &p, NULL);
        egress_policy_free(p);
        return r == -ENOMEM ? r : r < 0 ? -EINVAL : 0;
}

static int hosts_valid(const char *s) {
        return config_parse_http_list(s, false);
}

static int origins_valid(const char *s) {
        return config_parse_http_list(s, true);
}

static int pythons_valid(const char *s) {
        char buf[1024];
        const char *names[CONFIG_PYTHONS_MAX]; /* names, so that a name given twice is refused */
        return config_parse_pythons(s, buf, sizeof(buf), names, NULL) < 0 ? -EINVAL : 0;
}

static int wheelhouse_valid(const char *s) {
        return s[0] == '/' && access(s, R_OK | X_OK) >= 0 ? 0 : -EINVAL;
}

static int absolute_path_valid(const char *s) {
        return s[0] == '/' ? 0 : -EINVAL;
}

/* 1 to max visible ASCII characters, none that a header's quoted-string or JSON would escape. */
static bool quotable_word(const char *s, size_t max) {
        if (!*s || strlen(s) > max)
                return false;
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p <= 0x20 || (unsigned char) *p >= 0x7f || *p == '"' || *p == '\\')
                        return false;
        return true;
}

/* An http(s) URL with a host (it goes into WWW-Authenticate and the resource's metadata). */
static int url_valid(const char *s) {
        size_t skip = strncmp(s, "https://", 8) == 0 ? 8 : strncmp(s, "http://", 7) == 0 ? 7 : 0;
        return skip && s[skip] && s[skip] != '/' && quotable_word(s, 512) ? 0 : -EINVAL;
}

/* A scope token (RFC 6749 §3.3: %x21 / %x23-5B / %x5D-7E) or a claim's name: one word. */
static int word_valid(const char *s) {
        return quotable_word(s, 128) ? 0 : -EINVAL;
}

static int cache_dir_valid(const char *s) {
        return s[0] == '/' && !strchr(s, ' ') ? 0 : -EINVAL;
}

/* The parsers of the table, one per kind of field (ConfigParser). */
static int parse_number(const ConfigVariable *row, const char *value, uint64_t *ret) {
        if ((row->flags & CONFIG_INFINITY) && strcmp(value, "infinity") == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        return config_parse_uint(value, row->min, row->max, ret);
}

static int parse_uint32(const ConfigVariable *row, const char *value, void *field) {
        uint64_t u;
        int r = parse_number(row, value, &u);
        if (r < 0)
                return r;
        if (u > UINT32_MAX)
                return -ERANGE; /* a row whose max does not fit its field */
        *(uint32_t *) field = (uint32_t) u;
        return 0;
}

static int parse_uint64(const ConfigVariable *row, const char *value, void *field) {
        return parse_number(row, value, field);
}

static int parse_size(const ConfigVariable *row, const char *value, void *field) {
        uint64_t u;
        int r = config_parse_size(value, row->flags & CONFIG_PERCENT_OF_RAM, &u);
        if (r < 0)
                return r;
        if (u < row->min || u > row->max)
                return -ERANGE;
        *(uint64_t *) field = u;
        return 0;
}

static int parse_percent(const ConfigVariable *row, const char *value, void *field) {
        return config_parse_percent(value, field);
}

static int parse_bool(const ConfigVariable *row, const char *value, void *field) {
        return config_parse_bool(value, field);
}

/* An enum field whose values are the indexes of row->choices. */
static int parse_choice(const ConfigVariable *row, const char *value, void *field) {
        for (int i = 0; row->choices[i]; i++)
                if (strcmp(value, row->choices[i]) == 0) {
                        *(int *) field = i;
                        return 0;
                }
        return -EINVAL;
}

/* A char * field owned by the Config from the moment it is duplicated (config_done frees it). */
static int parse_string(const ConfigVariable *row, const char *value, void *field) {
        int r = row->valid ? row->valid(value) : 0;
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL; /* a validator that allocates may run out */
        char *copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        free(*(char **) field);
        *(char **) field = copy;
        return 0;
}

static int refuse(char **reterr, const char *name, const char *value, const char *accepted) {
        /* Without its message a refusal would read as EINVAL's "Invalid argument": say what failed. */
        if (reterr && asprintf(reterr, "%s=\"%s\" is invalid: expected %s", name, value, accepted) < 0) {
                *reterr = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

/* A token that is empty or only white space is a mistake (an empty file, `$(cat missing)`), never
 * "no token": serving HTTP unauthenticated because a secret went missing is the one outcome the
 * operator did not ask for (issue 29 #4). White space at either end is not part of a token either:
 * clients cannot send it (a header value is trimmed), so it is cut, and what is left must be there. */
static bool token_blank(const char *s) {
        return str_is_blank(s, strlen(s));
}

/* Longest token read from the credential; a longer file is refused, never cut short. */
#define TOKEN_MAX_BYTES 4095

/* The auth token may come from a systemd credential (LoadCredential=auth-token:…), so the secret
 * need not sit in the environment (systemd.exec(5), "Credentials"). 0: no credential; 1: *ret set;
 * -EBADMSG: the file is empty or blank; -EFBIG: longer than TOKEN_MAX_BYTES. *ret_path names the
 * file in both refusals. */
static int read_credential(char *(*env)(const char *), char **ret, char **ret_path) {
        const char *dir = env("CREDENTIALS_DIRECTORY");
        if (!dir)
                return 0;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/auth-token", dir) < 0)
                return -ENOMEM;
        FILE *f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        char buf[TOKEN_MAX_BYTES + 2];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        (void) fclose(f);
        buf[n] = '\0';
        int r;
        if (n > TOKEN_MAX_BYTES)
                r = -EFBIG;
        else if (n != strlen(buf) || token_blank(buf))
                r = -EBADMSG; /* a NUL inside cannot be sent either */
        else {
                size_t start = strspn(buf, " \t\r\n\v\f");
                while (n > start && strchr(" \t\r\n\v\f", buf[n - 1]))
                        n--;
                *ret = strndup(buf + start, n - start);
                r = *ret ? 1 : -ENOMEM;
        }
        explicit_bzero(buf, sizeof(buf)); /* the secret stays only in *ret */
        if (r == -EFBIG || r == -EBADMSG)
                *ret_path = TAKE_PTR(path);
        return r;
}

static int then_credential(const ConfigVariable *row, const char *value, Config *c,
                           char *(*env)(const char *), char **reterr) {
        /* Never quote the value: it is a secret, even when it is a wrong one. */
        if (value && token_blank(value)) {
                if (reterr && asprintf(reterr, "%s is set but empty or only white space: a token is "
                                               "required there (unset it to serve without one, on "
                                               "loopback only)", row->name) < 0) {
                        *reterr = NULL;
                        return -ENOMEM;
                }
                return -EINVAL;
        }
        if (value)
                return 0;
        _cleanup_free_ char *path = NULL;
        int r = read_credential(env, &c->auth_token, &path);
        if (r >= 0 || !reterr)
                return r;
        int k;
        if (r == -EBADMSG)
                k = asprintf(reterr, "the credential auth-token (%s) is empty or only white space: a "
                                     "token is required there (write one, or remove the file's "
                                     "LoadCredential= to serve without one, on loopback only)", path);
        else if (r == -EFBIG)
                k = asprintf(reterr, "the credential auth-token (%s) is longer than %d bytes", path,
                             TOKEN_MAX_BYTES);
        else
                k = asprintf(reterr, "cannot read the credential auth-token: %s", strerror(-r));
        if (k < 0) {
                *reterr = NULL;
                return -ENOMEM; /* as refuse(): an error without its message is the allocation's */
        }
        return r;
}

/* OAuth needs its issuer, its keys and this server's URL together, and the tenants file: a token's
 * claim names a tenant of it (whose limits and privacy it then has). */
static int then_oauth(const ConfigVariable *row, const char *value, Config *c,
                      char *(*env)(const char *), char **reterr) {
        const struct { const char *name; const char *v; } need[] = {
                { "MCP_EXEC_OAUTH_ISSUER", c->oauth_issuer },
                { "MCP_EXEC_OAUTH_JWKS", c->oauth_jwks },
                { "MCP_EXEC_OAUTH_RESOURCE", c->oauth_resource },
                { "MCP_EXEC_TENANTS", c->tenants },
        };
        bool any = c->oauth_issuer || c->oauth_jwks || c->oauth_resource;
        for (size_t i = 0; any && i < ELEMENTSOF(need); i++)
                if (!need[i].v) {
                        if (reterr && asprintf(reterr, "OAuth needs %s too: MCP_EXEC_OAUTH_ISSUER, MCP_EXEC_OAUTH_JWKS, "
                                                       "MCP_EXEC_OAUTH_RESOURCE and MCP_EXEC_TENANTS go together",
                                               need[i].name) < 0) {
                                *reterr = NULL;
                                return -ENOMEM;
                        }
                        return -EINVAL;
                }
        return 0;
}

static int then_require_cgroup(const ConfigVariable *row, const char *value, Config *c,
                               char *(*env)(const char *), char **reterr) {
        if (c->require_cgroup && c->cgroup == CGROUP_MODE_NONE)
                return refuse(reterr, row->name, "1",
                              "0 when MCP_EXEC_CGROUP=none (the two contradict each other)");
        return 0;
}

static int then_agent_addr(const ConfigVariable *row, const char *value, Config *c,
                           char *(*env)(const char *), char **reterr) {
        if (c->agent_addr && c->addr && strcmp(c->agent_addr, c->addr) == 0)
                return refuse(reterr, row->name, value, row->accepted);
        return 0;
}

/* A row's parser and field: the field's type is checked at build time against what the parser
 * writes (a negative array size when it differs). */
#define FIELD(f, type)                  \
        .offset = offsetof(Config, f) + \
                  0 * sizeof(char[_Generic(((Config *) NULL)->f, type: 1, default: -1)])
#define STRING(f) .parse = parse_string, FIELD(f, char *)
#define CHOICE(f, type) .parse = parse_choice, FIELD(f, type)
#define UINT32(f) .parse = parse_uint32, FIELD(f, uint32_t)
#define UINT64(f) .parse = parse_uint64, FIELD(f, uint64_t)
#define SIZE(f) .parse = parse_size, FIELD(f, uint64_t)
#define PERCENT(f) .parse = parse_percent, FIELD(f, uint32_t)
#define BOOL(f) .parse = parse_bool, FIELD(f, bool)
#define SECONDS(f, lo, hi) UINT32(f), .min = lo, .max = hi, .accepted = "whole seconds from " #lo " to " #hi
#define BYTES(f, lo)                                  \
        UINT64(f), .min = lo, .max = MAX_BYTES_LIMIT, \
                .accepted = "a number of bytes from " #lo " to 67108864"
#define SIZE_ACCEPTED "a size of at least 1M: bytes or a number with K, M, G or T (base 1024)"

/* parse_choice stores the index as an int. */
_Static_assert(sizeof(Transport) == sizeof(int) && sizeof(CgroupMode) == sizeof(int),
               "enum fields are ints");

/* Every variable, in the order they are read: the first bad one is the one reported, and a row
 * with at_most or then comes after the rows it reads. */
const ConfigVariable config_table[] = {
        { "MCP_EXEC_TRANSPORT", CHOICE(transport, Transport), .fallback = "stdio",
          .choices = (const char *const[]) { "stdio", "http", "sse", NULL }, /* Transport's order */
          .accepted = "one of stdio, http, sse",
          .help = "stdio, http (Streamable HTTP and HTTP+SSE) or sse" },
        { "MCP_EXEC_ADDR", STRING(addr), .valid = config_parse_addr, .fallback = "127.0.0.1:8080",
          .accepted = "host:port with an IPv4 address, [IPv6] address, localhost or nothing (all "
                      "interfaces) before the colon and a port from 1 to 65535",
          .help = "HTTP listen address, host:port" },
        /* Issue 33.4; docs/fleet.md. A socket systemd passed that is bound to it is used, else it is bound. */
        { "MCP_EXEC_AGENT_ADDR", STRING(agent_addr), .valid = config_parse_addr, .flags = CONFIG_EMPTY_IS_UNSET,
          .then = then_agent_addr,
          .accepted = "host:port as for MCP_EXEC_ADDR, another address than MCP_EXEC_ADDR's",
          .help = "HTTP: answer HAProxy's agent check (free capacity: ready NN%, drain) on host:port" },
        { "MCP_EXEC_MAX_TIMEOUT_S", SECONDS(max_timeout_s, 1, 86400), .fallback = "300",
          .help = "largest timeout a call may ask for, seconds" },
        { "MCP_EXEC_DEFAULT_TIMEOUT_S", SECONDS(default_timeout_s, 1, 86400), .fallback = "30",
          /* as mcp-exec, which clamps: MCP_EXEC_MAX_TIMEOUT_S=10 alone works */
          .at_most = "MCP_EXEC_MAX_TIMEOUT_S",
          .help = "timeout of a call that gives none, seconds" },
        { "MCP_EXEC_MAX_OUTPUT_BYTES", BYTES(max_output_bytes, 1), .fallback = "1048576",
          .help = "cap on stdout and stderr together" },
        { "MCP_EXEC_MAX_STDIN_BYTES", BYTES(max_stdin_bytes, 0), .fallback = "1048576",
          .help = "largest stdin" },
        { "MCP_EXEC_MAX_CODE_BYTES", BYTES(max_code_bytes, 1), .fallback = "1048576",
          .help = "largest code" },
        /* 0: no input files / nothing returned (outputs/ is still listed). */
        { "MCP_EXEC_MAX_INPUT_BYTES", BYTES(max_input_bytes, 0), .fallback = "4194304",
          .help = "input files of one call in total, decoded" },
        { "MCP_EXEC_MAX_RETURN_BYTES", BYTES(max_return_bytes, 0), .fallback = "4194304",
          .help = "outputs/ files returned by one call in total" },
        { "MCP_EXEC_MAX_MESSAGE_BYTES", UINT64(max_message_bytes), .min = 4096, .max = 1073741824,
          .fallback = "16777216", .accepted = "a number of bytes from 4096 to 1073741824",
          .help = "largest JSON-RPC message" },
        { "MCP_EXEC_PYTHON", STRING(python), .valid = python_valid, .fallback = "python3",
          .accepted = "an interpreter name (looked up in " SANDBOX_PATH ") or an absolute path, "
                      "without spaces",
          .help = "interpreter: a name looked up in the sandbox, or a path" },
        { "MCP_EXEC_AUTH_TOKEN", STRING(auth_token),
          .then = then_credential, /* any value but a blank one; never quoted in a refusal */
          .help = "HTTP token (else the systemd credential auth-token)" },
        { "MCP_EXEC_ALLOW_UNAUTHENTICATED_NETWORK", BOOL(allow_unauthenticated_network), .fallback = "0",
          .accepted = "a boolean: 1, yes, true, on, 0, no, false or off",
          .help = "HTTP: 1 serves a non-loopback address without a token" },
        /* Read by the daemon at start and on SIGHUP (daemon/tenant/), not here: a reload re-reads it. */
        { "MCP_EXEC_TENANTS", STRING(tenants), .valid = absolute_path_valid, .flags = CONFIG_EMPTY_IS_UNSET,
          .accepted = "the absolute path of the tenants file",
          .help = "HTTP: the tenants file (a name and its token's SHA-256 a line)" },
        /* OAuth 2.1 access tokens (JWTs), checked against the issuer's keys; then_oauth on the last. */
        { "MCP_EXEC_OAUTH_ISSUER", STRING(oauth_issuer), .valid = url_valid, .flags = CONFIG_EMPTY_IS_UNSET,
          .accepted = "the authorization server's issuer URL (http:// or https://)",
          .help = "OAuth: the issuer (iss) of the access tokens" },
        { "MCP_EXEC_OAUTH_JWKS", STRING(oauth_jwks), .valid = absolute_path_valid, .flags = CONFIG_EMPTY_IS_UNSET,
          .accepted = "the absolute path of the authorization server's JWKS file",
          .help = "OAuth: the issuer's signing keys, a JWKS file (read again when it changes)" },
        { "MCP_EXEC_OAUTH_RESOURCE", STRING(oauth_resource), .valid = url_valid, .flags = CONFIG_EMPTY_IS_UNSET,
          .accepted = "this server's URL as clients reach it, e.g. https://mcp.example.com/mcp",
          .help = "OAuth: this server's URL, the audience (aud) a token must name" },
        { "MCP_EXEC_OAUTH_SCOPE", STRING(oauth_scope), .valid = word_valid, .fallback = "mcp-execd",
          .accepted = "one scope token (no spaces)",
          .help = "OAuth: the scope a token must carry" },
        { "MCP_EXEC_OAUTH_TENANT_CLAIM", STRING(oauth_tenant_claim), .valid = word_valid, .fallback = "client_id",
          .then = then_oauth, .accepted = "the name of a claim",
          .help = "OAuth: the claim whose value is the tenant's name" },
        { "MCP_EXEC_MEMORY_MAX", SIZE(memory_max_bytes), .min = 1 << 20, .max = UINT64_MAX,
          .flags = CONFIG_PERCENT_OF_RAM, .fallback = "256M",
          .accepted = SIZE_ACCEPTED ", a percentage of physical memory, or infinity",
          .help = "memory per run: a size, a % of RAM, or infinity" },
        { "MCP_EXEC_PIDS_MAX", UINT64(pids_max), .min = 2, .max = 4194304, .flags = CONFIG_INFINITY,
          .fallback = "128", .accepted = "a number of processes from 2 to 4194304, or infinity",
          .help = "processes per run, or infinity" },
        { "MCP_EXEC_CPU_QUOTA", PERCENT(cpu_quota_percent), .fallback = "100%",
          .accepted = "a percentage of one CPU from 1% to 100000% (200% = two CPUs), or infinity",
          .help = "CPU per run (200% = two CPUs), or infinity" },
        { "MCP_EXEC_TMP_SIZE", SIZE(tmp_size_bytes), .min = 1 << 20, .max = UINT64_MAX - 1,
          .fallback = "64M", .accepted = SIZE_ACCEPTED, /* max: not infinity, a tmpfs needs a size */
          .help = "size of each run's private /tmp" },
        /* Its default, the number of CPUs, is config_load's. */
        { "MCP_EXEC_MAX_CONCURRENT", UINT32(max_concurrent), .min = 1, .max = 1024,
          .accepted = "a number of runs from 1 to 1024",
          .help = "runs at once (default: the number of CPUs)" },
        /* Issue 16. At most MCP_EXEC_MAX_CONCURRENT: more could never be used at once. */
        { "MCP_EXEC_WARM_POOL", UINT32(warm_pool), .min = 0, .max = 1024, .fallback = "2",
          .at_most = "MCP_EXEC_MAX_CONCURRENT",
          .accepted = "a number of ready sandboxes from 0 (none) to 1024",
          .help = "sandboxes kept ready for the default interpreter, 0: none" },
        { "MCP_EXEC_PRELOAD", STRING(preload), .valid = config_parse_preload, .flags = CONFIG_EMPTY_IS_UNSET,
          .accepted = "a comma-separated list of module names such as numpy,pandas,matplotlib.pyplot",
          .help = "modules imported in ready sandboxes, comma-separated" },
        /* Issue 18. */
        { "MCP_EXEC_PY_SESSIONS_MAX", UINT32(py_sessions_max), .min = 0, .max = 1024, .fallback = "8",
          .accepted = "a number of Python sessions from 0 (none) to 1024",
          .help = "Python sessions open at once, all callers; 0: none" },
        { "MCP_EXEC_PY_SESSION_IDLE_S", SECONDS(py_session_idle_s, 1, 604800), .fallback = "900",
          .help = "a Python session without a call ends after this" },
        { "MCP_EXEC_PY_SESSION_LIFETIME_S", SECONDS(py_session_lifetime_s, 1, 604800), .fallback = "28800",
          .help = "a Python session ends this long after its open" },
        { "MCP_EXEC_QUEUE_MAX", UINT32(queue_max), .min = 0, .max = 100000, .fallback = "64",
          .accepted = "a number of waiting runs from 0 to 100000",
          .help = "calls waiting for a slot, all sessions together" },
        /* A quarter of the default queue, so that no client fills it alone. */
        { "MCP_EXEC_SESSION_QUEUE_MAX", UINT32(session_queue_max), .min = 0, .max = 100000,
          .fallback = "16", .at_most = "MCP_EXEC_QUEUE_MAX",
          .accepted = "a number of waiting runs from 0 to 100000",
          .help = "HTTP: calls one session may have waiting" },
        { "MCP_EXEC_MAX_SESSIONS", UINT32(max_sessions), .min = 1, .max = 100000,
          .fallback = "1024", .accepted = "a number of HTTP sessions from 1 to 100000",
          .help = "HTTP: open sessions, both transports" },
        { "MCP_EXEC_CGROUP", CHOICE(cgroup, CgroupMode), .fallback = "auto",
          /* CgroupMode's order */
          .choices = (const char *const[]) { "auto", "systemd", "cgroupfs", "none", NULL },
          .accepted = "one of auto, systemd, cgroupfs, none",
          .help = "auto, systemd, cgroupfs or none" },
        { "MCP_EXEC_INSTANCE", STRING(instance), .valid = instance_valid,
          .accepted = "1 to 16 lowercase letters and digits, such as i8081",
          .help = "this instance's tag, the prefix of its task ids and Python session handles (a load "
                  "balancer routes them by it)" },
        { "MCP_EXEC_SLICE", STRING(slice), .valid = slice_name_valid, .fallback = "mcp-execd.slice",
          .accepted = "a slice unit name such as mcp-execd.slice",
          .help = "slice of the per-run scopes" },
        { "MCP_EXEC_REQUIRE_CGROUP", BOOL(require_cgroup), .fallback = "0", .then = then_require_cgroup,
          .accepted = "a boolean: 1, yes, true, on, 0, no, false or off",
          .help = "1: refuse to start rather than fall back to rlimits" },
        { "MCP_EXEC_EGRESS_ALLOW", STRING(egress_allow), .valid = egress_allow_valid, .flags = CONFIG_EMPTY_IS_UNSET,
          .accepted = "a comma-separated list of host, host:port, *.domain or *.domain:port (ports 443 and 80 "
                      "when none is given), or an address written as 127.0.0.1:8000 or [::1]:8000",
          .help = "hosts the runs may reach through the daemon's egress proxy (unset: no network at all)" },
        { "MCP_EXEC_ALLOWED_HOSTS", STRING(allowed_hosts), .valid = hosts_valid,
          .accepted = "a comma-separated list of host names or host:port (no spaces, no scheme), or * "
                      "to accept any Host",
          .help = "HTTP: Host values accepted besides loopback, or *" },
        { "MCP_EXEC_ALLOWED_ORIGINS", STRING(allowed_origins), .valid = origins_valid,
          .accepted = "a comma-separated list of origins such as https://app.example.com:8443 (no path), "
                      "or * to accept any Origin",
          .help = "HTTP: Origins accepted besides loopback pages, or *" },
        { "MCP_EXEC_SESSION_IDLE_S", SECONDS(session_idle_s, 1, 604800), .fallback = "3600",
          .help = "HTTP: seconds before an idle session is ended" },
        { "MCP_EXEC_SSE_KEEPALIVE_S", SECONDS(sse_keepalive_s, 1, 3600), .fallback = "15",
          .help = "HTTP: seconds between keep-alives on a quiet stream" },
        /* Issue 17.3. A task's result is kept for the client to fetch: an hour is enough for an
         * agent that polls, short enough that forgotten results do not pile up (within the bounds
         * below either way). */
        { "MCP_EXEC_TASK_TTL_S", SECONDS(task_ttl_s, 1, 604800), .fallback = "3600",
          .help = "seconds a task's result is kept after it ends" },
        /* Issue 30.2: with the 2026 tasks extension declared the server decides what becomes a task
         * (SEP-2663); a call that ends within this window is answered inline, so a client that
         * declares the extension but handles only plain results (the 2.x client) still runs
         * ordinary calls. A second is most runs of print(1) to a plot, and a short wait to poll. */
        { "MCP_EXEC_TASK_INLINE_MS", UINT32(task_inline_ms), .min = 0, .max = 60000, .fallback = "1000",
          .accepted = "milliseconds from 0 to 60000",
          .help = "2026 tasks: a call that ends within this many ms is answered inline, not as a task (0: "
                  "every call of a client that declared the extension is a task)" },
        { "MCP_EXEC_TASKS_MAX", UINT32(tasks_max), .min = 1, .max = 100000, .fallback = "256",
          .accepted = "a number of tasks from 1 to 100000",
          .help = "tasks kept at once (working or with a result), all clients" },
        /* At most 256: tasks/list answers one page. */
        { "MCP_EXEC_TASKS_PER_CLIENT", UINT32(tasks_per_client), .min = 1, .max = 256, .fallback = "32",
          .at_most = "MCP_EXEC_TASKS_MAX", .accepted = "a number of tasks from 1 to 256",
          .help = "tasks kept at once for one client" },
        /* One kept result can be 13-19 MiB (1 MiB of output, escaped, with its files): without a
         * bound in bytes, 96 of them grew the daemon past 1.2 GiB (issue 29 #3). */
        { "MCP_EXEC_TASKS_MAX_BYTES", SIZE(tasks_max_bytes), .min = 1 << 20, .max = UINT64_MAX,
          .fallback = "256M", .accepted = SIZE_ACCEPTED ", or infinity",
          .help = "bytes of the tasks' kept results, all clients together" },
        { "MCP_EXEC_DRAIN_S", SECONDS(drain_s, 0, 86400), .fallback = "0",
          .help = "HTTP: on SIGTERM, seconds the calls in flight may take to finish while new ones are "
                  "refused (503) and /health says draining; 0: they are stopped at once" },
        { "MCP_EXEC_PYTHONS", STRING(pythons), .valid = pythons_valid,
          .accepted = "a comma-separated list of name=path (name of letters, digits, . _ -; path "
                      "absolute or looked up in " SANDBOX_PATH "; names unique; at most 8), e.g. "
                      "python3=/usr/bin/python3,pypy3=/usr/bin/pypy3",
          .help = "interpreters a call may choose: name=path,..." },
        { "MCP_EXEC_INDEX_URL", STRING(index_url), .valid = config_parse_index_url,
          .flags = CONFIG_EMPTY_IS_UNSET,
          .accepted = "the URL of a PEP 503 simple index (http://, https:// or file:///), e.g. "
                      "http://127.0.0.1:3141/simple/",
          .help = "dependencies: the URL of a PEP 503 simple index" },
        { "MCP_EXEC_WHEELHOUSE", STRING(wheelhouse), .valid = wheelhouse_valid,
          .flags = CONFIG_EMPTY_IS_UNSET, .accepted = "an absolute path of a readable directory of wheels",
          .help = "dependencies: an absolute directory of wheels" },
        { "MCP_EXEC_ENV_CACHE_DIR", STRING(env_cache_dir), .valid = cache_dir_valid,
          .flags = CONFIG_EMPTY_IS_UNSET, .accepted = "an absolute path without spaces (created if missing)",
          .help = "where dependency environments are kept" },
        { "MCP_EXEC_ENV_CACHE_MAX", SIZE(env_cache_max_bytes), .min = 1 << 20, .max = UINT64_MAX,
          .fallback = "2G", .accepted = SIZE_ACCEPTED ", or infinity",
          .help = "total size of the kept environments, or infinity" },
        { "MCP_EXEC_INSTALL_TIMEOUT_S", SECONDS(install_timeout_s, 1, 86400), .fallback = "300",
          .help = "seconds one installation of an environment may take" },
};
const size_t config_table_size = ELEMENTSOF(config_table);

#undef FIELD
#undef STRING
#undef CHOICE
#undef UINT32
#undef UINT64
#undef SIZE
#undef PERCENT
#undef BOOL
#undef SECONDS
#undef BYTES
#undef SIZE_ACCEPTED

const ConfigVariable *config_table_find(const char *name, size_t n) {
        for (size_t i = 0; i < config_table_size; i++)
                if (strlen(config_table[i].name) == n && strncmp(config_table[i].name, name, n) == 0)
                        return &config_table[i];
        return NULL;
}

static int config_load_one(const ConfigVariable *row, char *(*env)(const char *), Config *c, char **reterr) {
        char *field = (char *) c + row->offset;
        const char *value = env(row->name);
        if (value && !*value && (row->flags & CONFIG_EMPTY_IS_UNSET))
                value = NULL;

        const char *v = value ?: row->fallback;
        if (v) {
                int r = row->parse(row, v, field);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return refuse(reterr, row->name, v, row->accepted);
        }

        if (row->at_most) {
                const ConfigVariable *bound = config_table_find(row->at_most, strlen(row->at_most));
                uint32_t *u = (uint32_t *) field, max = *(uint32_t *) ((char *) c + bound->offset);
                if (*u > max && value) {
                        char accepted[96];
                        snprintf(accepted, sizeof(accepted), "at most %s (%" PRIu32 ")", bound->name, max);
                        return refuse(reterr, row->name, value, accepted);
                }
                *u = MIN(*u, max);
        }

        return row->then ? row->then(row, value, c, env, reterr) : 0;
}

int config_load(char *(*env)(const char *name), Config *ret, char **reterr) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        _cleanup_(config_done) Config c = {
                .max_concurrent = ncpu > 0 ? (uint32_t) ncpu : 1,
        };

        if (reterr)
                *reterr = NULL;
        for (size_t i = 0; i < config_table_size; i++) {
                int r = config_load_one(&config_table[i], env, &c, reterr);
                if (r < 0)
                        return r;
        }

        *ret = c;
        c = (Config) {}; /* handed over: what it owns is now *ret's */
        return 0;
}

void config_done(Config *c) {
        for (size_t i = 0; i < config_table_size; i++) {
                if (config_table[i].parse != parse_string)
                        continue;
                char **s = (char **) ((char *) c + config_table[i].offset);
                if (*s)
                        /* Do not leave a secret (the auth token) in freed memory. */
                        explicit_bzero(*s, strlen(*s));
                free(*s);
        }
        *c = (Config) {};
}

void config_print_help(FILE *f) {
        for (size_t i = 0; i < config_table_size; i++) {
                const ConfigVariable *row = &config_table[i];
                fprintf(f, "  %-26s  %s", row->name, row->help);
                if (row->fallback)
                        fprintf(f, " (default: %s)", row->fallback);
                fputc('\n', f);
        }
}

void config_warn_unknown(char *const *envp) {
        for (char *const *e = envp; *e; e++) {
                if (strncmp(*e, "MCP_EXEC_", 9) != 0)
                        continue;
                size_t n = strcspn(*e, "=");
                if (!config_table_find(*e, n))
                        log_warning("unknown variable %.*s in the environment (a typo?), ignoring",
                                    (int) n, *e);
        }
}
