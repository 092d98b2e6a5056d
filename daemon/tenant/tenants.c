/* tenants.c: the tenants file (tenants.h). A small array, made once per (re)load and never changed:
 * a reload makes a new one, so a reader never sees half a file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "config.h"
#include "fd-util.h"
#include "str-util.h"
#include "tenants.h"

#define TENANTS_MAX 1024             /* names are metrics labels: their number stays bounded */
#define TENANTS_FILE_MAX (1u << 20)  /* 1 MiB: a thousand lines with room to spare */
/* What a line without fields gets: the daemon's own bounds (tenants.h). */
#define TENANT_LIMITS_DEFAULT                                                                                \
        ((TenantLimits) { .queue = UINT_MAX, .tasks = UINT_MAX, .memory_max = UINT64_MAX, .pids_max = UINT64_MAX, \
                          .weight = 100 })

struct Tenants {
        size_t n;
        Tenant *v;
};

/* -EINVAL, with the sentence in *reterr (prefixed by its line when there is one). */
__attribute__((format(printf, 3, 4))) static int failf(char **reterr, unsigned line, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = NULL;
        int k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0) {
                msg = NULL;
                return reason_set(reterr, -ENOMEM, "out of memory");
        }
        return line > 0 ? reason_set(reterr, -EINVAL, "line %u: %s", line, msg) : reason_set(reterr, -EINVAL, "%s", msg);
}

/* ---- the fields of a line ------------------------------------------------------------------- */

static int parse_count(const char *v, uint64_t min, uint64_t max, void *field) {
        uint64_t u;
        int r = config_parse_uint(v, min, max, &u);
        if (r < 0)
                return r;
        *(unsigned *) field = (unsigned) u;
        return 0;
}

static int parse_bytes(const char *v, uint64_t min, uint64_t max, void *field) {
        uint64_t u;
        if (strcmp(v, "infinity") == 0)
                u = UINT64_MAX;
        else {
                int r = config_parse_size(v, false, &u);
                if (r < 0)
                        return r;
                if (u < min || u > max)
                        return -ERANGE;
        }
        *(uint64_t *) field = u;
        return 0;
}

static int parse_u64(const char *v, uint64_t min, uint64_t max, void *field) {
        if (strcmp(v, "infinity") == 0) {
                *(uint64_t *) field = UINT64_MAX;
                return 0;
        }
        return config_parse_uint(v, min, max, field);
}

#define LIMIT(f) offsetof(TenantLimits, f), sizeof(((TenantLimits *) NULL)->f)
static const struct TenantKey {
        const char *key;
        int (*parse)(const char *v, uint64_t min, uint64_t max, void *field);
        size_t offset, size;
        uint64_t min, max;
        const char *accepts; /* for the message */
} tenant_keys[] = {
        { "runs",     parse_count, LIMIT(runs),       1, 100000,     "a number of runs, 1 to 100000" },
        { "queue",    parse_count, LIMIT(queue),      0, 100000,     "a number of calls, 0 to 100000" },
        { "sessions", parse_count, LIMIT(sessions),   1, 10000,      "a number of sessions, 1 to 10000" },
        { "tasks",    parse_count, LIMIT(tasks),      0, 100000,     "a number of tasks, 0 to 100000" },
        { "memory",   parse_bytes, LIMIT(memory_max), 1 << 20, UINT64_MAX - 1,
          "a size of at least 1M (K, M, G, T) or infinity" },
        { "pids",     parse_u64,   LIMIT(pids_max),   1, 4194304,    "a number of processes, 1 to 4194304, or infinity" },
        { "weight",   parse_count, LIMIT(weight),     1, 10000,      "a weight, 1 to 10000" },
};

static int parse_field(Tenant *t, const char *field, unsigned *seen, char **reterr) {
        const char *eq = strchr(field, '=');
        if (!eq || eq == field)
                return failf(reterr, t->line, "'%.64s' is no key=value field", field);
        size_t klen = (size_t) (eq - field);
        /* egress= is no limit but a list (egress/policy.h): the hosts the tenant's runs may reach. */
        if (klen == 6 && strncmp(field, "egress", 6) == 0) {
                if (t->egress)
                        return failf(reterr, t->line, "egress is given twice");
                _cleanup_free_ char *err = NULL;
                int r = egress_policy_parse(eq + 1, &t->egress, &err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return failf(reterr, t->line, "egress=: %s", err ?: "not an allowlist");
                if (!t->egress)
                        return failf(reterr, t->line, "egress= is empty: leave it out for no egress");
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(tenant_keys); i++) {
                const struct TenantKey *k = &tenant_keys[i];
                if (strlen(k->key) != klen || strncmp(k->key, field, klen) != 0)
                        continue;
                if (*seen & (1u << i))
                        return failf(reterr, t->line, "%s is given twice", k->key);
                *seen |= 1u << i;
                if (k->parse(eq + 1, k->min, k->max, (char *) &t->limits + k->offset) < 0)
                        return failf(reterr, t->line, "%s=%.64s: not %s", k->key, eq + 1, k->accepts);
                return 0;
        }
        char known[128] = "";
        for (size_t i = 0; i < ELEMENTSOF(tenant_keys); i++)
                snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "", tenant_keys[i].key);
        return failf(reterr, t->line, "unknown key '%.*s' (known: %s, egress)", (int) (klen > 32 ? 32 : klen), field, known);
}

bool tenant_name_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > TENANT_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '_' || s[i] == '-'))
                        return false;
        return true;
}

static int hex_value(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int parse_hash(const char *s, uint8_t out[TENANT_HASH_LEN]) {
        if (strlen(s) != 2 * TENANT_HASH_LEN)
                return -EINVAL;
        for (size_t i = 0; i < TENANT_HASH_LEN; i++) {
                int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                out[i] = (uint8_t) (hi << 4 | lo);
        }
        return 0;
}

/* One line, cut at white space (it is ours to modify). 0: a tenant; 1: nothing on it. */
static int parse_line(char *s, unsigned line, Tenant *t, char **reterr) {
        char *hash = strchr(s, '#');
        if (hash)
                *hash = 0;
        char *save = NULL;
        char *name = strtok_r(s, " \t\r", &save);
        if (!name)
                return 1;
        *t = (Tenant) { .line = line, .limits = TENANT_LIMITS_DEFAULT };
        if (!tenant_name_valid(name))
                return failf(reterr, line, "the name '%.40s' is not 1 to %d letters, digits, '_' or '-'", name, TENANT_NAME_MAX);
        memcpy(t->name, name, strlen(name) + 1);
        const char *hex = strtok_r(NULL, " \t\r", &save);
        if (!hex)
                return failf(reterr, line, "tenant %s has no token hash (the SHA-256 of its token, 64 hex digits, or - for none)", t->name);
        t->has_token = strcmp(hex, "-") != 0;
        if (t->has_token && parse_hash(hex, t->token_sha256) < 0)
                /* the length only: a line with a token pasted instead of its hash must not echo it */
                return failf(reterr, line, "tenant %s: the token hash is not 64 lower-case hex digits (SHA-256) but %zu "
                             "characters; write sha256sum's output for the token, never the token", t->name, strlen(hex));
        unsigned seen = 0;
        for (char *f; (f = strtok_r(NULL, " \t\r", &save));) {
                int r = parse_field(t, f, &seen, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Appends one, unless its name or its token is another's. */
static int tenants_append(Tenants *t, const Tenant *one, char **reterr) {
        for (size_t i = 0; i < t->n; i++) {
                if (strcmp(t->v[i].name, one->name) == 0)
                        return one->line > 0 ? failf(reterr, one->line, "tenant %s is named twice (first on line %u)",
                                                     one->name, t->v[i].line)
                                             : failf(reterr, 0, "the tenants file has a tenant called %s, the name "
                                                     "of the one MCP_EXEC_AUTH_TOKEN makes: rename it, or make that "
                                                     "token its line and unset MCP_EXEC_AUTH_TOKEN", one->name);
                if (t->v[i].has_token && one->has_token &&
                    CRYPTO_memcmp(t->v[i].token_sha256, one->token_sha256, TENANT_HASH_LEN) == 0)
                        return failf(reterr, one->line, "tenants %s and %s have the same token", t->v[i].name, one->name);
        }
        if (t->n == TENANTS_MAX)
                return failf(reterr, one->line, "more than %d tenants", TENANTS_MAX);
        Tenant *v = reallocarray(t->v, t->n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        t->v = v;
        t->v[t->n++] = *one;
        return 0;
}

int tenants_parse(const char *text, size_t len, Tenants **ret, char **reterr) {
        if (reterr)
                *reterr = NULL;
        if (memchr(text, 0, len))
                return failf(reterr, 0, "the file holds a NUL byte");
        _cleanup_free_ char *copy = strndup(text, len);
        _cleanup_(tenants_freep) Tenants *t = calloc(1, sizeof(*t));
        if (!copy || !t)
                return -ENOMEM;
        unsigned line = 0;
        for (char *s = copy, *next; s; s = next) {
                next = strchr(s, '\n');
                if (next)
                        *next++ = 0;
                line++;
                Tenant one = {};
                int r = parse_line(s, line, &one, reterr);
                if (r == 0)
                        r = tenants_append(t, &one, reterr);
                if (r < 0) {
                        egress_policy_free(one.egress); /* the set has no copy of it */
                        return r;
                }
        }
        if (t->n == 0)
                return failf(reterr, 0, "no tenant in it");
        *ret = TAKE_PTR(t);
        return 0;
}

int tenants_load(const char *path, uid_t uid, Tenants **ret, char **reterr) {
        if (reterr)
                *reterr = NULL;
        /* A symbolic link is followed (a Kubernetes Secret's files are links into its ..data): what
         * guards the hashes is the owner and mode of the file reached, checked below on its fd. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                int e = errno;
                failf(reterr, 0, "cannot open %s: %s", path, strerror(e));
                return -e;
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return failf(reterr, 0, "%s is not a regular file", path);
        if (st.st_uid != uid && st.st_uid != 0)
                return failf(reterr, 0, "%s belongs to uid %u: it must be the daemon's (uid %u) or root's", path,
                             (unsigned) st.st_uid, (unsigned) uid);
        if (st.st_mode & 0077)
                return failf(reterr, 0, "%s may be read or written by other users (mode %04o): make it 0600 (only the "
                             "daemon's user reads the tenants' token hashes)", path, (unsigned) (st.st_mode & 07777));
        if ((uint64_t) st.st_size > TENANTS_FILE_MAX)
                return failf(reterr, 0, "%s is larger than %u bytes", path, TENANTS_FILE_MAX);
        _cleanup_free_ char *text = malloc((size_t) st.st_size + 1);
        if (!text)
                return -ENOMEM;
        size_t got = 0;
        while (got < (size_t) st.st_size) {
                ssize_t k = read(fd, text + got, (size_t) st.st_size - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int e = errno;
                        failf(reterr, 0, "cannot read %s: %s", path, strerror(e));
                        return -e;
                }
                if (k == 0)
                        break;
                got += (size_t) k;
        }
        return tenants_parse(text, got, ret, reterr);
}

Tenants *tenants_free(Tenants *t) {
        if (t) {
                /* the hashes are not secrets, but nothing of them need linger either */
                for (size_t i = 0; i < t->n; i++)
                        egress_policy_free(t->v[i].egress);
                OPENSSL_cleanse(t->v, t->n * sizeof(*t->v));
                free(t->v);
                free(t);
        }
        return NULL;
}

size_t tenants_count(const Tenants *t) {
        return t ? t->n : 0;
}

const Tenant *tenants_get(const Tenants *t, size_t i) {
        return t && i < t->n ? &t->v[i] : NULL;
}

const Tenant *tenants_find_name(const Tenants *t, const char *name) {
        for (size_t i = 0; i < tenants_count(t); i++)
                if (strcmp(t->v[i].name, name) == 0)
                        return &t->v[i];
        return NULL;
}

static int sha256(const char *data, size_t len, uint8_t out[TENANT_HASH_LEN]) {
        unsigned n = 0;
        if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != TENANT_HASH_LEN)
                return -EIO;
        return 0;
}

const Tenant *tenants_find_token(const Tenants *t, const char *token, size_t len) {
        uint8_t h[TENANT_HASH_LEN];
        if (!t || sha256(token, len, h) < 0)
                return NULL;
        const Tenant *found = NULL;
        for (size_t i = 0; i < t->n; i++) {
                bool match = (CRYPTO_memcmp(t->v[i].token_sha256, h, TENANT_HASH_LEN) == 0) & t->v[i].has_token;
                found = match ? &t->v[i] : found; /* no early exit: every hash is compared */
        }
        OPENSSL_cleanse(h, sizeof(h));
        return found;
}

/* Adds the tenant TENANT_NAME_AUTH_TOKEN, whose token is token (hashed here; default limits), to *t,
 * making *t when it is NULL. Refused: the file names a tenant so, or has the same token. */
static int add_auth_token(Tenants **t, const char *token, char **reterr) {
        Tenant one = { .name = TENANT_NAME_AUTH_TOKEN, .has_token = true, .limits = TENANT_LIMITS_DEFAULT };
        int r = sha256(token, strlen(token), one.token_sha256);
        if (r < 0)
                return r;
        _cleanup_(tenants_freep) Tenants *made = NULL;
        if (!*t) {
                made = calloc(1, sizeof(*made));
                if (!made)
                        return -ENOMEM;
        }
        r = tenants_append(*t ?: made, &one, reterr);
        OPENSSL_cleanse(&one, sizeof(one));
        if (r < 0)
                return r;
        if (made)
                *t = TAKE_PTR(made);
        return 0;
}

int tenants_load_config(const Config *cfg, uid_t uid, Tenants **ret, char **reterr) {
        if (reterr)
                *reterr = NULL;
        _cleanup_(tenants_freep) Tenants *t = NULL;
        int r;
        if (cfg->tenants) {
                r = tenants_load(cfg->tenants, uid, &t, reterr);
                if (r < 0)
                        return r;
                for (size_t i = 0; !cfg->oauth_issuer && i < t->n; i++)
                        if (!t->v[i].has_token)
                                return failf(reterr, t->v[i].line, "tenant %s has no token ('-'), which only OAuth "
                                             "access tokens can stand for, and MCP_EXEC_OAUTH_ISSUER is not set: "
                                             "nobody could be it", t->v[i].name);
        }
        if (cfg->auth_token) {
                r = add_auth_token(&t, cfg->auth_token, reterr);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

int tenants_hash_hex(const char *data, size_t len, char ret[2 * TENANT_HASH_LEN + 1]) {
        uint8_t h[TENANT_HASH_LEN];
        int r = sha256(data, len, h);
        if (r < 0)
                return r;
        for (size_t i = 0; i < TENANT_HASH_LEN; i++)
                snprintf(ret + 2 * i, 3, "%02x", h[i]);
        return 0;
}
