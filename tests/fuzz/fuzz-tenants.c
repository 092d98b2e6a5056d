/* fuzz-tenants.c: tenants_parse() over any bytes. Accepted: every tenant has a valid name, names
 * and hashes are unique, limits in range, and each is found again by its name. Refused: -EINVAL
 * with a message that says where ("line N: ...", or one of the whole-file sentences), bounded. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "tenants.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Tenants *t = NULL;
        char *err = NULL;
        int r = tenants_parse((const char *) data, size, &t, &err);
        if (r == 0) {
                FUZZ_CHECK(!err && tenants_count(t) > 0);
                for (size_t i = 0; i < tenants_count(t); i++) {
                        const Tenant *a = tenants_get(t, i);
                        size_t n = strlen(a->name);
                        FUZZ_CHECK(n >= 1 && n <= TENANT_NAME_MAX);
                        FUZZ_CHECK(strspn(a->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n);
                        FUZZ_CHECK(tenants_find_name(t, a->name) == a);
                        FUZZ_CHECK(a->limits.weight >= 1 && a->limits.weight <= 10000);
                        for (size_t j = 0; j < i; j++) /* '-' (no token) may be on many lines */
                                FUZZ_CHECK(!a->has_token || !tenants_get(t, j)->has_token ||
                                           memcmp(tenants_get(t, j)->token_sha256, a->token_sha256, TENANT_HASH_LEN) != 0);
                }
                tenants_free(t);
        } else {
                FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
                FUZZ_CHECK(!t);
                FUZZ_CHECK(r != -EINVAL || (err && strlen(err) < 512 &&
                                            (strncmp(err, "line ", 5) == 0 || strcmp(err, "no tenant in it") == 0 ||
                                             strcmp(err, "the file holds a NUL byte") == 0)));
                free(err);
        }
        return 0;
}
