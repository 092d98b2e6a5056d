/* oauth.c: OAuth 2.1 access tokens (oauth.h). The signature is cjose's (Debian's libcjose, on
 * OpenSSL); what is taken, and every claim, is decided here. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjose/cjose.h>
#include <jansson.h>

#include "fd-util.h"
#include "log.h"
#include "oauth.h"
#include "str-util.h"

#define JWKS_FILE_MAX (1u << 20)
#define OAUTH_LEEWAY_SEC 30       /* clock skew allowed on exp and nbf (RFC 7519 §4.1.4: "some small leeway") */
#define OAUTH_RSA_MIN_BITS 2048
#define WELL_KNOWN_PRM "/.well-known/oauth-protected-resource"

typedef struct OAuthKey {
        char *kid;          /* NULL: none given */
        char *alg;          /* NULL: any alg of its kind */
        char *crv;          /* EC: P-256, P-384, P-521 */
        cjose_jwk_kty_t kty;
        cjose_jwk_t *jwk;
} OAuthKey;

struct OAuth {
        char *issuer, *resource, *scope, *claim, *jwks_path, *metadata_url;
        OAuthKey *keys;
        size_t n_keys;
        struct stat jwks_st;  /* the file the keys came from */
        uint64_t checked_sec; /* when it was last looked at */
};

/* The signatures taken: each with a key of its kind (and, for ECDSA, its curve). */
static const struct OAuthAlg {
        const char *name;
        cjose_jwk_kty_t kty;
        const char *crv;
} oauth_algs[] = {
        { "RS256", CJOSE_JWK_KTY_RSA, NULL }, { "RS384", CJOSE_JWK_KTY_RSA, NULL }, { "RS512", CJOSE_JWK_KTY_RSA, NULL },
        { "PS256", CJOSE_JWK_KTY_RSA, NULL }, { "PS384", CJOSE_JWK_KTY_RSA, NULL }, { "PS512", CJOSE_JWK_KTY_RSA, NULL },
        { "ES256", CJOSE_JWK_KTY_EC, "P-256" }, { "ES384", CJOSE_JWK_KTY_EC, "P-384" }, { "ES512", CJOSE_JWK_KTY_EC, "P-521" },
};

static const struct OAuthAlg *alg_find(const char *name) {
        for (size_t i = 0; name && i < ELEMENTSOF(oauth_algs); i++)
                if (strcmp(oauth_algs[i].name, name) == 0)
                        return &oauth_algs[i];
        return NULL;
}

static void keys_free(OAuthKey *keys, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(keys[i].kid);
                free(keys[i].alg);
                free(keys[i].crv);
                cjose_jwk_release(keys[i].jwk);
        }
        free(keys);
}

static char *strdup_or_null(const char *s, bool *oom) {
        if (!s)
                return NULL;
        char *c = strdup(s);
        *oom |= !c;
        return c;
}

/* One key of the set: taken (0), skipped as not a signing key of ours (1), or refused. */
static int key_take(json_t *k, size_t i, OAuthKey *ret, char **reterr) {
        const char *kty = json_string_value(json_object_get(k, "kty"));
        const char *use = json_string_value(json_object_get(k, "use"));
        if (!json_is_object(k) || !kty)
                return reason_set(reterr, -EINVAL, "key %zu has no kty", i);
        if ((use && strcmp(use, "sig") != 0) || (strcmp(kty, "RSA") != 0 && strcmp(kty, "EC") != 0))
                return 1; /* an encryption key, or a symmetric one (never taken: oauth.h) */
        if (json_object_get(k, "d"))
                return reason_set(reterr, -EINVAL, "key %zu holds a private key (d): a JWKS for checking tokens holds public keys only", i);
        cjose_err err = {};
        cjose_jwk_t *jwk = cjose_jwk_import_json((cjose_header_t *) k, &err);
        if (!jwk)
                return reason_set(reterr, -EINVAL, "key %zu cannot be read: %s", i, err.message ?: "unknown error");
        *ret = (OAuthKey) { .jwk = jwk, .kty = cjose_jwk_get_kty(jwk, &err) };
        size_t bits = cjose_jwk_get_keysize(jwk, &err);
        if (ret->kty == CJOSE_JWK_KTY_RSA && bits < OAUTH_RSA_MIN_BITS) {
                cjose_jwk_release(jwk);
                return reason_set(reterr, -EINVAL, "key %zu is an RSA key of %zu bits, fewer than %d", i, bits, OAUTH_RSA_MIN_BITS);
        }
        bool oom = false;
        ret->kid = strdup_or_null(json_string_value(json_object_get(k, "kid")), &oom);
        ret->alg = strdup_or_null(json_string_value(json_object_get(k, "alg")), &oom);
        ret->crv = strdup_or_null(json_string_value(json_object_get(k, "crv")), &oom);
        if (oom) {
                free(ret->kid), free(ret->alg), free(ret->crv), cjose_jwk_release(jwk);
                return -ENOMEM;
        }
        return 0;
}

/* Reads the JWKS file: its signing keys, and what it was (to see a change). */
static int jwks_load(const char *path, OAuthKey **ret, size_t *ret_n, struct stat *ret_st, char **reterr) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                int e = errno;
                reason_set(reterr, -EINVAL, "cannot open %s: %s", path, strerror(e));
                return -e;
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return reason_set(reterr, -EINVAL, "%s is not a regular file", path);
        if ((uint64_t) st.st_size > JWKS_FILE_MAX)
                return reason_set(reterr, -EINVAL, "%s is larger than %u bytes", path, JWKS_FILE_MAX);
        json_error_t jerr;
        _cleanup_(json_decrefp) json_t *j = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
        if (!j)
                return reason_set(reterr, -EINVAL, "%s is not JSON (line %d: %s)", path, jerr.line, jerr.text);
        json_t *keys = json_object_get(j, "keys");
        if (!json_is_array(keys))
                return reason_set(reterr, -EINVAL, "%s is no JWKS: it has no \"keys\" array", path);
        OAuthKey *v = calloc(json_array_size(keys) + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < json_array_size(keys); i++) {
                int r = key_take(json_array_get(keys, i), i, &v[n], reterr);
                if (r < 0) {
                        keys_free(v, n);
                        if (reterr && *reterr) {
                                char *full = NULL;
                                if (asprintf(&full, "%s: %s", path, *reterr) >= 0) {
                                        free(*reterr);
                                        *reterr = full;
                                }
                        }
                        return r;
                }
                n += r == 0;
        }
        if (n == 0) {
                keys_free(v, 0);
                return reason_set(reterr, -EINVAL, "%s has no signing key (an RSA or EC key whose use, if given, is sig)", path);
        }
        *ret = v;
        *ret_n = n;
        *ret_st = st;
        return 0;
}

/* "https://host:port/mcp" → "https://host:port/.well-known/oauth-protected-resource/mcp" (RFC 9728
 * §3.1: the well-known part between the authority and the path). */
static char *metadata_url_of(const char *resource) {
        const char *auth = strstr(resource, "://") + 3;
        const char *path = strchr(auth, '/');
        size_t plen = path ? strlen(path) : 0;
        while (plen > 0 && path[plen - 1] == '/')
                plen--;
        char *url = NULL;
        if (asprintf(&url, "%.*s" WELL_KNOWN_PRM "%.*s", (int) (path ? path - resource : (ptrdiff_t) strlen(resource)),
                     resource, (int) plen, path ? path : "") < 0)
                return NULL;
        return url;
}

int oauth_new(const Config *cfg, OAuth **ret, char **reterr) {
        if (reterr)
                *reterr = NULL;
        *ret = NULL;
        if (!cfg->oauth_issuer)
                return 0;
        _cleanup_(oauth_freep) OAuth *o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->issuer = strdup(cfg->oauth_issuer);
        o->resource = strdup(cfg->oauth_resource);
        o->scope = strdup(cfg->oauth_scope);
        o->claim = strdup(cfg->oauth_tenant_claim);
        o->jwks_path = strdup(cfg->oauth_jwks);
        o->metadata_url = metadata_url_of(cfg->oauth_resource);
        if (!o->issuer || !o->resource || !o->scope || !o->claim || !o->jwks_path || !o->metadata_url)
                return -ENOMEM;
        int r = jwks_load(o->jwks_path, &o->keys, &o->n_keys, &o->jwks_st, reterr);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

OAuth *oauth_free(OAuth *o) {
        if (!o)
                return NULL;
        keys_free(o->keys, o->n_keys);
        free(o->issuer);
        free(o->resource);
        free(o->scope);
        free(o->claim);
        free(o->jwks_path);
        free(o->metadata_url);
        free(o);
        return NULL;
}

/* The JWKS file again if it changed (another inode, size or modification time), at most once a
 * second. A file that cannot be used keeps the keys of before; the log says so once per change. */
static void oauth_refresh(OAuth *o, uint64_t now_sec) {
        if (now_sec == o->checked_sec)
                return;
        o->checked_sec = now_sec;
        struct stat st;
        if (stat(o->jwks_path, &st) < 0 ||
            (st.st_ino == o->jwks_st.st_ino && st.st_dev == o->jwks_st.st_dev && st.st_size == o->jwks_st.st_size &&
             st.st_mtim.tv_sec == o->jwks_st.st_mtim.tv_sec && st.st_mtim.tv_nsec == o->jwks_st.st_mtim.tv_nsec))
                return;
        OAuthKey *keys = NULL;
        size_t n = 0;
        _cleanup_free_ char *err = NULL;
        if (jwks_load(o->jwks_path, &keys, &n, &o->jwks_st, &err) < 0) {
                o->jwks_st = st; /* said once; the next change is looked at again */
                log_warning("MCP_EXEC_OAUTH_JWKS changed and cannot be used, the %zu keys of before stay: %s", o->n_keys,
                            err ?: "out of memory");
                return;
        }
        keys_free(o->keys, o->n_keys);
        o->keys = keys;
        o->n_keys = n;
        log_info("MCP_EXEC_OAUTH_JWKS changed: %zu signing keys from %s", n, o->jwks_path);
}

bool oauth_is_jwt(const char *s, size_t len) {
        size_t dots = 0;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (c == '.')
                        dots++;
                else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                           c == '_'))
                        return false;
        }
        return dots == 2 && len > 4;
}

/* The key for this token: the one its kid names, else the one key of the alg's kind; each must be
 * of the alg's kind (and curve) and, if it says an alg, this one. */
static const OAuthKey *key_find(const OAuth *o, const char *kid, const struct OAuthAlg *a) {
        const OAuthKey *found = NULL;
        size_t candidates = 0;
        for (size_t i = 0; i < o->n_keys; i++) {
                const OAuthKey *k = &o->keys[i];
                if (k->kty != a->kty || (k->alg && strcmp(k->alg, a->name) != 0) ||
                    (a->crv && (!k->crv || strcmp(k->crv, a->crv) != 0)))
                        continue;
                if (kid ? (k->kid && strcmp(k->kid, kid) == 0) : true) {
                        found = k;
                        candidates++;
                }
        }
        return candidates == 1 ? found : NULL; /* without a kid, two keys of a kind are ambiguous */
}

static void jws_releasep(cjose_jws_t **j) {
        cjose_jws_release(*j);
}

static bool aud_names(json_t *aud, const char *resource) {
        if (json_is_string(aud))
                return strcmp(json_string_value(aud), resource) == 0;
        size_t i;
        json_t *v;
        json_array_foreach(aud, i, v)
                if (json_is_string(v) && strcmp(json_string_value(v), resource) == 0)
                        return true;
        return false;
}

static bool scope_has(const char *scopes, const char *want) {
        size_t n = strlen(want);
        for (const char *p = scopes; p && *p;) {
                while (*p == ' ')
                        p++;
                size_t k = strcspn(p, " ");
                if (k == n && strncmp(p, want, n) == 0)
                        return true;
                p += k;
        }
        return false;
}

#define INVALID(why)                                                                                   \
        do {                                                                                           \
                *ret_why = (why);                                                                      \
                return OAUTH_INVALID;                                                                  \
        } while (0)

OAuthVerdict oauth_check(OAuth *o, const Tenants *tenants, const char *token, size_t len, uint64_t now_sec,
                         const Tenant **ret_tenant, const char **ret_why) {
        *ret_tenant = NULL;
        oauth_refresh(o, now_sec);
        if (len > OAUTH_TOKEN_MAX || !oauth_is_jwt(token, len))
                INVALID("the access token is not a JWT");
        cjose_err err = {};
        _cleanup_(jws_releasep) cjose_jws_t *jws = cjose_jws_import(token, len, &err);
        if (!jws)
                INVALID("the access token is not a JWS that can be read");
        json_t *hdr = (json_t *) cjose_jws_get_protected(jws);
        const struct OAuthAlg *a = alg_find(json_string_value(json_object_get(hdr, "alg")));
        if (!a)
                INVALID("the access token's alg is not one this server takes (RS256/384/512, PS256/384/512, "
                        "ES256/384/512; never none or an HMAC)");
        if (json_object_get(hdr, "crit"))
                INVALID("the access token's header has crit extensions, which this server does not know");
        const OAuthKey *k = key_find(o, json_string_value(json_object_get(hdr, "kid")), a);
        if (!k)
                INVALID("no key of the authorization server's JWKS (MCP_EXEC_OAUTH_JWKS) matches the access token's "
                        "kid and alg");
        if (!cjose_jws_verify(jws, k->jwk, &err))
                INVALID("the access token's signature does not verify with the authorization server's key");
        uint8_t *payload = NULL;
        size_t payload_len = 0;
        if (!cjose_jws_get_plaintext(jws, &payload, &payload_len, &err))
                INVALID("the access token has no payload");
        _cleanup_(json_decrefp) json_t *claims = json_loadb((const char *) payload, payload_len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(claims))
                INVALID("the access token's payload is not a JSON object");
        const char *iss = json_string_value(json_object_get(claims, "iss"));
        if (!iss || strcmp(iss, o->issuer) != 0)
                INVALID("the access token's issuer (iss) is not this server's authorization server");
        if (!aud_names(json_object_get(claims, "aud"), o->resource))
                INVALID("the access token's audience (aud) is not this server (its resource URL)");
        json_t *exp = json_object_get(claims, "exp"), *nbf = json_object_get(claims, "nbf");
        if (!json_is_number(exp))
                INVALID("the access token has no expiry (exp)");
        if (json_number_value(exp) + OAUTH_LEEWAY_SEC <= (double) now_sec)
                INVALID("the access token has expired");
        if (nbf && (!json_is_number(nbf) || json_number_value(nbf) > (double) now_sec + OAUTH_LEEWAY_SEC))
                INVALID("the access token is not valid yet (nbf)");
        const char *who = json_string_value(json_object_get(claims, o->claim));
        const Tenant *t = who ? tenants_find_name(tenants, who) : NULL;
        if (!t)
                INVALID("the access token names no tenant of this server (in the claim MCP_EXEC_OAUTH_TENANT_CLAIM)");
        if (!scope_has(json_string_value(json_object_get(claims, "scope")), o->scope)) {
                *ret_why = "the access token lacks the scope this server requires";
                return OAUTH_SCOPE;
        }
        *ret_tenant = t;
        return OAUTH_OK;
}

char *oauth_metadata_json(const OAuth *o) {
        _cleanup_(json_decrefp) json_t *j = json_pack("{s:s, s:[s], s:[s], s:[s], s:s}", "resource", o->resource,
                                                       "authorization_servers", o->issuer, "scopes_supported", o->scope,
                                                       "bearer_methods_supported", "header", "resource_name", "mcp-execd");
        return j ? json_dumps(j, JSON_COMPACT) : NULL;
}

const char *oauth_metadata_url(const OAuth *o) {
        return o->metadata_url;
}

const char *oauth_scope(const OAuth *o) {
        return o->scope;
}
