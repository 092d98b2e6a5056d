/* oauth.h: OAuth 2.1 access tokens (issue 31.2), as the MCP authorization specification has a
 * resource server take them: a JWT signed by the authorization server (checked with cjose against
 * the keys of its JWKS file, read again when the file changes), whose iss is the issuer, whose aud
 * names this server (RFC 8707), within exp and nbf, carrying the required scope; the claim
 * MCP_EXEC_OAUTH_TENANT_CLAIM names its tenant, which must be one of the tenants file.
 *
 * Only asymmetric signatures are taken (RS256/384/512, PS256/384/512, ES256/384/512), each with a
 * key of its kind: never "none", never an HMAC (whose key would be the public one), never a key
 * the token names by URL (jku, x5u, jwk). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "config.h"
#include "tenants.h"

typedef struct OAuth OAuth;

#define OAUTH_TOKEN_MAX 8192 /* bytes of a JWT: far above what an authorization server issues */

/* From cfg's MCP_EXEC_OAUTH_* (NULL in *ret when MCP_EXEC_OAUTH_ISSUER is unset). The JWKS file is
 * read now: one that cannot be read or holds no usable key refuses the start (-EINVAL, *reterr). */
int oauth_new(const Config *cfg, OAuth **ret, char **reterr);
OAuth *oauth_free(OAuth *o);
DEFINE_POINTER_CLEANUP(OAuth, oauth_free)

/* Whether credential (len bytes) looks like a JWT (three base64url parts), so is ours to check
 * rather than a static token's. */
bool oauth_is_jwt(const char *credential, size_t len);

typedef enum OAuthVerdict {
        OAUTH_OK,
        OAUTH_INVALID,        /* 401 invalid_token: *ret_why says what (never the token's content) */
        OAUTH_SCOPE,          /* 403 insufficient_scope: valid, without the required scope */
} OAuthVerdict;

/* Checks the token at now_sec (the epoch): the tenant it names (of tenants, which must be set) in
 * *ret_tenant, or why not in *ret_why (a static sentence). Re-reads the JWKS file first when it
 * changed (at most once a second; a file that cannot be used then keeps the keys of before, and
 * says so in the log). */
OAuthVerdict oauth_check(OAuth *o, const Tenants *tenants, const char *token, size_t len, uint64_t now_sec,
                         const Tenant **ret_tenant, const char **ret_why);

/* The Protected Resource Metadata (RFC 9728) of this server, a JSON object (malloc'd), and where it
 * is: MCP_EXEC_OAUTH_RESOURCE's origin + "/.well-known/oauth-protected-resource" + its path. */
char *oauth_metadata_json(const OAuth *o);
const char *oauth_metadata_url(const OAuth *o);
const char *oauth_scope(const OAuth *o);
