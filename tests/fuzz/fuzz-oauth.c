/* fuzz-oauth.c: oauth_check() over any token, against a fixed JWKS (one P-256 key, kid "fuzz") and
 * the tenant "alpha". Taken: only a token that verifies and whose claims hold (the corpus has one,
 * signed by the key's private half, which lives nowhere else); then the tenant is alpha. Refused:
 * a static sentence that never holds the token's bytes. The clock is fixed (1800000000). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "oauth.h"

static const char *const jwk = "{\"kty\":\"EC\",\"x\":\"v7USGkc_ZoIOwUHeR-xwhyvaZU6yZBdRHFKeUVe4Z8E\",\"y\":\"CBUOW4FoMz-84yDIz2ZiWbWSkZvVksZfrJmLVz8QH2s\",\"crv\":\"P-256\",\"kid\":\"fuzz\",\"alg\":\"ES256\",\"use\":\"sig\"}";

static OAuth *oauth;
static Tenants *tenants;

static void setup(void) {
        char path[] = "/tmp/fuzz-oauth-jwks-XXXXXX";
        int fd = mkstemp(path);
        FUZZ_CHECK(fd >= 0);
        FILE *f = fdopen(fd, "w");
        FUZZ_CHECK(f && fprintf(f, "{\"keys\": [%s]}", jwk) > 0 && fclose(f) == 0);
        Config cfg = { .oauth_issuer = (char *) "https://as.example", .oauth_jwks = path,
                       .oauth_resource = (char *) "https://mcp.example/mcp", .oauth_scope = (char *) "mcp-execd",
                       .oauth_tenant_claim = (char *) "client_id" };
        char *err = NULL;
        FUZZ_CHECK(oauth_new(&cfg, &oauth, &err) == 0 && oauth);
        unlink(path);
        const char text[] = "alpha -\n";
        FUZZ_CHECK(tenants_parse(text, sizeof(text) - 1, &tenants, &err) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (!oauth)
                setup();
        const Tenant *t = NULL;
        const char *why = NULL;
        OAuthVerdict v = oauth_check(oauth, tenants, (const char *) data, size, 1800000000, &t, &why);
        if (v == OAUTH_OK) {
                FUZZ_CHECK(t && strcmp(t->name, "alpha") == 0 && !why);
        } else {
                FUZZ_CHECK(!t && why && strlen(why) < 256);
                FUZZ_CHECK(v == OAUTH_INVALID || v == OAUTH_SCOPE);
                /* a reason is one of ours, never a piece of the token */
                FUZZ_CHECK(strncmp(why, "the access token", 16) == 0 || strncmp(why, "no key of", 9) == 0);
        }
        return 0;
}
