/* config.h: the daemon's configuration, read from MCP_EXEC_* environment variables. */
#pragma once

/* MCP_EXEC_INSTANCE: at most this many characters (issue 19.1). */
#define CONFIG_INSTANCE_MAX 16

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum Transport {
        TRANSPORT_STDIO,
        TRANSPORT_HTTP,
        TRANSPORT_SSE,
} Transport;

typedef enum CgroupMode {
        CGROUP_MODE_AUTO,
        CGROUP_MODE_SYSTEMD,
        CGROUP_MODE_CGROUPFS,
        CGROUP_MODE_NONE,
} CgroupMode;

typedef struct Config {
        Transport transport;
        char *addr;                 /* as given: "127.0.0.1:8080", "[::1]:8080", ":8080" */
        char *agent_addr;           /* HTTP: HAProxy's agent check answered here (issue 33.4), or NULL */
        uint32_t default_timeout_s;
        uint32_t max_timeout_s;
        uint64_t max_output_bytes;
        uint64_t max_stdin_bytes;
        uint64_t max_code_bytes;
        uint64_t max_input_bytes;   /* the `files` argument in total, decoded */
        uint64_t max_return_bytes;  /* files returned from outputs/ in total */
        uint64_t max_message_bytes;
        char *python;
        char *auth_token;           /* NULL: no auth */
        bool allow_unauthenticated_network; /* HTTP: serve a non-loopback address without a token */
        char *tenants;              /* MCP_EXEC_TENANTS: the tenants file's path (HTTP), or NULL */
        /* OAuth 2.1 access tokens (HTTP; MCP_EXEC_OAUTH_*): NULL issuer: none. */
        char *oauth_issuer;         /* the tokens' iss */
        char *oauth_jwks;           /* the path of the issuer's JWKS file */
        char *oauth_resource;       /* this server's URL: the tokens' aud, the metadata's resource */
        char *oauth_scope;          /* the scope a token must carry */
        char *oauth_tenant_claim;   /* the claim that names the tenant */
        uint64_t memory_max_bytes;  /* UINT64_MAX: infinity */
        uint64_t pids_max;          /* UINT64_MAX: infinity */
        uint32_t cpu_quota_percent; /* 0: infinity */
        uint64_t tmp_size_bytes;
        uint32_t max_concurrent;
        uint32_t queue_max;
        uint32_t session_queue_max; /* HTTP: waiting calls of one session (at most queue_max) */
        uint32_t max_sessions;      /* HTTP: open sessions, both transports */
        CgroupMode cgroup;
        char *slice;
        bool require_cgroup;
        char *allowed_hosts;        /* HTTP: extra Host values beyond loopback, comma-separated; NULL: none */
        char *egress_allow;         /* what runs of no tenant (and of the tenant default) may reach
                                     * through the egress proxy (egress/policy.h); NULL: nothing */
        char *allowed_origins;      /* HTTP: extra Origins beyond loopback pages, comma-separated; NULL: none */
        uint32_t session_idle_s;    /* HTTP: an idle Streamable HTTP session is ended after this long */
        uint32_t sse_keepalive_s;   /* HTTP: a comment on a quiet event stream this often */
        uint32_t task_ttl_s;        /* a task's result is kept this long after it ends */
        uint32_t task_inline_ms;    /* 2026 tasks: a call ending within this is answered inline */
        uint32_t tasks_max;         /* tasks kept at once (working or with a result), all clients */
        uint32_t tasks_per_client;  /* the same, one client's (at most tasks_max) */
        uint64_t tasks_max_bytes;   /* bytes of the kept results, all clients */
        char *instance;             /* MCP_EXEC_INSTANCE: prefix of task ids and session handles, or NULL */
        uint32_t drain_s;           /* HTTP: SIGTERM lets the calls in flight finish this long (issue 19.2) */
        char *pythons;              /* MCP_EXEC_PYTHONS "name=path,…" as given; NULL: just MCP_EXEC_PYTHON */
        char *index_url;            /* PEP 503 simple index for dependencies, or NULL */
        char *wheelhouse;           /* absolute directory of wheels, or NULL */
        char *env_cache_dir;        /* where dependency environments are kept, or NULL: the default */
        uint64_t env_cache_max_bytes; /* total size of the environments kept (LRU eviction beyond) */
        uint32_t install_timeout_s; /* one installation of an environment */
        uint32_t warm_pool;         /* ready sandboxes kept (issue 16); 0: none */
        char *preload;              /* modules imported in ready sandboxes, comma-separated; NULL: none */
        uint32_t py_sessions_max;   /* Python sessions open at once (issue 18); 0: none */
        uint32_t py_session_idle_s; /* a session without a call ends after this */
        uint32_t py_session_lifetime_s; /* and this long after its open, whatever it does */
} Config;

/* Reads the configuration from getenv-like lookup (env(name) returns the value or NULL).
 * On a bad value returns -EINVAL and a malloc'd message naming the variable, the value and what
 * is accepted in *reterr_message; when the credential auth-token cannot be read, its -errno and a
 * message. Returns 0 on success (*ret is written only then), -ENOMEM (with no message when the
 * message itself could not be allocated). */
int config_load(char *(*env)(const char *name), Config *ret, char **reterr_message);
void config_done(Config *c);

/* --help's list: one line per variable with what it takes and its default. */
void config_print_help(FILE *f);
/* Logs a warning for each MCP_EXEC_* name in envp that is no variable of ours (a typo is not
 * silently ignored). */
void config_warn_unknown(char *const *envp);

/* Parsers, exposed for tests. Each returns 0 or -EINVAL. */
int config_parse_size(const char *s, bool allow_percent, uint64_t *ret);
int config_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
int config_parse_bool(const char *s, bool *ret);
int config_parse_percent(const char *s, uint32_t *ret);
int config_parse_addr(const char *s);
/* A comma-separated list of Host or Origin values (visible ASCII, no spaces), or "*". */
int config_parse_http_list(const char *s, bool origins);
/* MCP_EXEC_PYTHONS: "name=path,…" (name [A-Za-z0-9._-]{1,32}, path absolute or a bare name without
 * spaces, names unique, at most CONFIG_PYTHONS_MAX entries), or a single name/path as shorthand.
 * Returns the number of entries, or -EINVAL. Fills names/paths (pointers into buf, which is a
 * modified copy of s) when they are non-NULL. */
#define CONFIG_PYTHONS_MAX 8
int config_parse_pythons(const char *s, char *buf, size_t size, const char **names, const char **paths);
/* MCP_EXEC_PRELOAD: comma-separated dotted module names ([A-Za-z_][A-Za-z0-9_]* parts), at most
 * CONFIG_PRELOAD_MAX_BYTES. */
#define CONFIG_PRELOAD_MAX_BYTES 1024
int config_parse_preload(const char *s);
/* An index URL: http:// or https:// (or file://) with a host or path, no spaces or credentials shown. */
int config_parse_index_url(const char *s);
