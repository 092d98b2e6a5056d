/* tenants.h: the tenants file (MCP_EXEC_TENANTS, issue 31): who may call the daemon over HTTP,
 * each by the SHA-256 of a static token, and with which limits.
 *
 * One tenant a line: its name, white space, the token's SHA-256 in lower-case hex (or '-': no static
 * token, the tenant is reached by OAuth access tokens only), then optional
 * key=value fields (the table in tenants.c: its share of runs, its queue, sessions, tasks, and its
 * slice's memory, processes and CPU weight). '#' starts a comment; blank lines are skipped.
 *
 *   # name   sha256(token)                                                     limits
 *   alpha    9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  runs=2 memory=2G
 *
 * Tokens are never stored, only their hashes: a presented token is hashed (OpenSSL) and compared
 * with every tenant's hash in constant time. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"
#include "config.h"
#include "policy.h"

#define TENANT_NAME_MAX 32 /* [A-Za-z0-9_-]: a slice's name, a journal field, a metrics label */
#define TENANT_HASH_LEN 32 /* SHA-256 */

/* Whether s is a tenant's name: 1 to TENANT_NAME_MAX of [A-Za-z0-9_-] (the file's rule, and --report --tenant's). */
bool tenant_name_valid(const char *s);

/* What a tenant's line may set. Not set: 0 for runs and sessions, UINT_MAX for queue and tasks (0 is a
 * bound there), UINT64_MAX for the sizes: the daemon's own bounds only. */
typedef struct TenantLimits {
        unsigned runs;        /* runs=N: its calls running at once, of MCP_EXEC_MAX_CONCURRENT */
        unsigned queue;       /* queue=N: its calls waiting for a slot (0: none wait, refused at once) */
        unsigned sessions;    /* sessions=N: Python sessions open */
        unsigned tasks;       /* tasks=N: tasks kept */
        uint64_t memory_max;  /* memory=SIZE: its slice's MemoryMax */
        uint64_t pids_max;    /* pids=N: its slice's TasksMax */
        unsigned weight;      /* weight=N (1..10000, default 100): CPUWeight, and its share of the queue */
} TenantLimits;

typedef struct Tenant {
        char name[TENANT_NAME_MAX + 1];
        bool has_token;       /* false: '-' in the hash's place, reached by OAuth only (oauth.h) */
        uint8_t token_sha256[TENANT_HASH_LEN];
        TenantLimits limits;
        EgressPolicy *egress; /* egress=: what its runs may reach (issue 32), owned; NULL: nothing */
        unsigned line; /* in the file, for messages */
} Tenant;

typedef struct Tenants Tenants;

/* Parses text (len bytes, NUL not needed). On a bad line: -EINVAL and *reterr says which line and
 * what was wrong (a sentence, never the line's hash). */
int tenants_parse(const char *text, size_t len, Tenants **ret, char **reterr);

/* Reads path (following symbolic links) and parses it. Refused, with a sentence in *reterr: a file
 * that is not a regular file, that another user than uid (the daemon's) or root owns, or that its
 * group or others may read or write (as sshd refuses a key others can read). */
int tenants_load(const char *path, uid_t uid, Tenants **ret, char **reterr);

/* The tenant that MCP_EXEC_AUTH_TOKEN (the credential auth-token) makes beside the file's: the daemon
 * had one token before it had tenants, and whoever holds it is this tenant. */
#define TENANT_NAME_AUTH_TOKEN "default"

/* The daemon's tenants: the file cfg->tenants names (MCP_EXEC_TENANTS) read as tenants_load() does
 * (uid: the daemon's), and the tenant TENANT_NAME_AUTH_TOKEN when cfg->auth_token is set. *ret is
 * NULL when neither is: no authentication. Made anew at start and at each reload. */
int tenants_load_config(const Config *cfg, uid_t uid, Tenants **ret, char **reterr);

Tenants *tenants_free(Tenants *t);
DEFINE_POINTER_CLEANUP(Tenants, tenants_free)

size_t tenants_count(const Tenants *t);
const Tenant *tenants_get(const Tenants *t, size_t i);
const Tenant *tenants_find_name(const Tenants *t, const char *name);

/* The tenant whose token this is, or NULL. Hashes it and compares with every tenant's hash, each
 * in constant time and all of them always, so neither the answer's time nor its absence tells
 * which hash came close. */
const Tenant *tenants_find_token(const Tenants *t, const char *token, size_t len);

/* SHA-256 of data, as a tenants file holds it (64 lower-case hex digits and a NUL). */
int tenants_hash_hex(const char *data, size_t len, char ret[2 * TENANT_HASH_LEN + 1]);
