/* test-oauth.c: OAuth access tokens (daemon/tenant/oauth.h) against a fixed JWKS (one P-256 key,
 * kid "fuzz"; the tokens below were signed by its private half, which is kept nowhere): a valid
 * token names its tenant; an expired one, one without the scope, one naming no tenant are refused
 * with their reasons; aud may be an array; the metadata and where it is; settings that refuse. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "oauth.h"

static const char *const jwk = "{\"kty\":\"EC\",\"x\":\"v7USGkc_ZoIOwUHeR-xwhyvaZU6yZBdRHFKeUVe4Z8E\",\"y\":\"CBUOW4FoMz-84yDIz2ZiWbWSkZvVksZfrJmLVz8QH2s\",\"crv\":\"P-256\",\"kid\":\"fuzz\",\"alg\":\"ES256\",\"use\":\"sig\"}";

#define NOW 1800000000 /* the tokens expire at NOW + 300 */
static const char *const valid = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImZ1enoifQ.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUiLCJhdWQiOiJodHRwczovL21jcC5leGFtcGxlL21jcCIsImV4cCI6MTgwMDAwMDMwMCwiY2xpZW50X2lkIjoiYWxwaGEiLCJzY29wZSI6Im1jcC1leGVjZCJ9.hWP9svbbyIRdIwRbDlDI4iBQMsCVGcZM8MUGgHwcjnA3tqWNZn9ICLJZJEnn9JSluigOe2rOrCsl2XBPhLC45A";
static const char *const expired = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImZ1enoifQ.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUiLCJhdWQiOiJodHRwczovL21jcC5leGFtcGxlL21jcCIsImV4cCI6MTcwMDAwMDAwMCwiY2xpZW50X2lkIjoiYWxwaGEiLCJzY29wZSI6Im1jcC1leGVjZCJ9.f8skShGOfbf42FsF5GjLhJiCcyooLnXiBmBJz4OAWiPrx3ywWR_3sNqq2aKPTutTZ5eubgKWM8hp6tJsNzYCxQ";
static const char *const no_scope = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImZ1enoifQ.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUiLCJhdWQiOiJodHRwczovL21jcC5leGFtcGxlL21jcCIsImV4cCI6MTgwMDAwMDMwMCwiY2xpZW50X2lkIjoiYWxwaGEiLCJzY29wZSI6IngifQ.djrC-Zfcg_hw6afKjHFlxu97ts3t-gdoG_vGXM3oUHkDRzl5GkitWA9WcUTynMj-d-PhcIGfP0evOOFQsOaMwQ";
static const char *const no_tenant = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImZ1enoifQ.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUiLCJhdWQiOiJodHRwczovL21jcC5leGFtcGxlL21jcCIsImV4cCI6MTgwMDAwMDMwMCwiY2xpZW50X2lkIjoibm9ib2R5Iiwic2NvcGUiOiJtY3AtZXhlY2QifQ.36xL5yaoRSDxkeU9bt2odv0aqi1H27zAmjiJU0AY45Z8SUKgFNc7iUopl5tNle5qR0XerFMOLA8pBenbWoCWHQ";
static const char *const aud_array = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImZ1enoifQ.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUiLCJhdWQiOlsiYSIsImh0dHBzOi8vbWNwLmV4YW1wbGUvbWNwIl0sImV4cCI6MTgwMDAwMDMwMCwiY2xpZW50X2lkIjoiYWxwaGEiLCJzY29wZSI6Im1jcC1leGVjZCJ9.ueOCnnzP4qvkY3XCUUTnHh_IsKPjiumVWM8rg-cEh062WQT59Tx-2_s-_Fs8zcejW_3UCDwEndbdTGdHL9kj4Q";

static char jwks_path[64];

static Config config(const char *resource) {
        return (Config) { .oauth_issuer = (char *) "https://as.example", .oauth_jwks = jwks_path,
                          .oauth_resource = (char *) resource, .oauth_scope = (char *) "mcp-execd",
                          .oauth_tenant_claim = (char *) "client_id" };
}

static void write_jwks(const char *text) {
        FILE *f = fopen(jwks_path, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

static int setup(void **state) {
        snprintf(jwks_path, sizeof(jwks_path), "/tmp/test-oauth-%d.json", (int) getpid());
        return 0;
}

static int teardown(void **state) {
        unlink(jwks_path);
        return 0;
}

static void test_verdicts(void **state) {
        char text[512];
        snprintf(text, sizeof(text), "{\"keys\": [%s]}", jwk);
        write_jwks(text);
        Config cfg = config("https://mcp.example/mcp");
        OAuth *o = NULL;
        char *err = NULL;
        assert_int_equal(oauth_new(&cfg, &o, &err), 0);
        Tenants *t = NULL;
        const char tenants_text[] = "alpha -\nbeta -\n";
        assert_int_equal(tenants_parse(tenants_text, sizeof(tenants_text) - 1, &t, &err), 0);

        const Tenant *who = NULL;
        const char *why = NULL;
        assert_int_equal(oauth_check(o, t, valid, strlen(valid), NOW, &who, &why), OAUTH_OK);
        assert_string_equal(who->name, "alpha");
        assert_int_equal(oauth_check(o, t, aud_array, strlen(aud_array), NOW, &who, &why), OAUTH_OK);
        /* 30 s of leeway past exp, not more */
        assert_int_equal(oauth_check(o, t, valid, strlen(valid), NOW + 329, &who, &why), OAUTH_OK);
        assert_int_equal(oauth_check(o, t, valid, strlen(valid), NOW + 330, &who, &why), OAUTH_INVALID);
        assert_string_equal(why, "the access token has expired");
        assert_null(who);
        assert_int_equal(oauth_check(o, t, expired, strlen(expired), NOW, &who, &why), OAUTH_INVALID);
        assert_string_equal(why, "the access token has expired");
        assert_int_equal(oauth_check(o, t, no_scope, strlen(no_scope), NOW, &who, &why), OAUTH_SCOPE);
        assert_string_equal(why, "the access token lacks the scope this server requires");
        assert_int_equal(oauth_check(o, t, no_tenant, strlen(no_tenant), NOW, &who, &why), OAUTH_INVALID);
        assert_non_null(strstr(why, "names no tenant"));
        /* One byte of the signature changed; the token cut; not a JWT at all. */
        char *bad = strdup(valid);
        bad[strlen(bad) - 2] = bad[strlen(bad) - 2] == 'A' ? 'B' : 'A';
        assert_int_equal(oauth_check(o, t, bad, strlen(bad), NOW, &who, &why), OAUTH_INVALID);
        assert_non_null(strstr(why, "signature does not verify"));
        free(bad);
        assert_int_equal(oauth_check(o, t, valid, strlen(valid) - 10, NOW, &who, &why), OAUTH_INVALID);
        assert_int_equal(oauth_check(o, t, "abc", 3, NOW, &who, &why), OAUTH_INVALID);
        assert_string_equal(why, "the access token is not a JWT");
        assert_false(oauth_is_jwt("s3cret-token", 12));
        assert_true(oauth_is_jwt(valid, strlen(valid)));

        /* Another resource: the same token is not for it. */
        oauth_free(o);
        cfg = config("https://other.example/mcp");
        assert_int_equal(oauth_new(&cfg, &o, &err), 0);
        assert_int_equal(oauth_check(o, t, valid, strlen(valid), NOW, &who, &why), OAUTH_INVALID);
        assert_non_null(strstr(why, "audience"));
        oauth_free(o);
        tenants_free(t);
}

static void test_metadata(void **state) {
        char text[512];
        snprintf(text, sizeof(text), "{\"keys\": [%s]}", jwk);
        write_jwks(text);
        static const struct { const char *resource, *url; } cases[] = {
                { "https://mcp.example/mcp", "https://mcp.example/.well-known/oauth-protected-resource/mcp" },
                { "https://mcp.example:8443/a/b/", "https://mcp.example:8443/.well-known/oauth-protected-resource/a/b" },
                { "http://127.0.0.1:9000", "http://127.0.0.1:9000/.well-known/oauth-protected-resource" },
                { "http://127.0.0.1:9000/", "http://127.0.0.1:9000/.well-known/oauth-protected-resource" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Config cfg = config(cases[i].resource);
                OAuth *o = NULL;
                char *err = NULL;
                assert_int_equal(oauth_new(&cfg, &o, &err), 0);
                assert_string_equal(oauth_metadata_url(o), cases[i].url);
                char *j = oauth_metadata_json(o);
                char want[512];
                snprintf(want, sizeof(want), "{\"resource\":\"%s\",\"authorization_servers\":[\"https://as.example\"],"
                         "\"scopes_supported\":[\"mcp-execd\"],\"bearer_methods_supported\":[\"header\"],"
                         "\"resource_name\":\"mcp-execd\"}", cases[i].resource);
                assert_string_equal(j, want);
                free(j);
                oauth_free(o);
        }
        Config none = {};
        OAuth *o = (OAuth *) 1;
        assert_int_equal(oauth_new(&none, &o, NULL), 0);
        assert_null(o); /* no issuer: no OAuth */
}

static void test_refused_jwks(void **state) {
        static const struct { const char *text, *want; } cases[] = {
                { "[]", "has no \"keys\" array" },
                { "{\"keys\": []}", "has no signing key" },
                { "{\"keys\": [{\"kty\": \"oct\", \"k\": \"c2VjcmV0\"}]}", "has no signing key" },
                { "{\"keys\": [{\"kty\": \"EC\", \"crv\": \"P-256\", \"x\": \"AA\", \"y\": \"AA\", \"d\": \"AA\"}]}",
                  "holds a private key (d)" },
                { "{\"keys\": [{\"kty\": \"EC\", \"crv\": \"P-256\", \"x\": \"AA\"}]}", "key 0 cannot be read" },
                { "{\"keys\": [{\"use\": \"sig\"}]}", "key 0 has no kty" },
                { "{\"keys\": [", "is not JSON" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                write_jwks(cases[i].text);
                Config cfg = config("https://mcp.example/mcp");
                OAuth *o = NULL;
                char *err = NULL;
                assert_int_equal(oauth_new(&cfg, &o, &err), -EINVAL);
                if (!strstr(err, cases[i].want))
                        fail_msg("%s: '%s' does not say '%s'", cases[i].text, err, cases[i].want);
                assert_null(o);
                free(err);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_verdicts),
                cmocka_unit_test(test_metadata),
                cmocka_unit_test(test_refused_jwks),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
