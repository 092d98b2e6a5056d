/* fuzz-utf8.c: utf8_repair() on arbitrary bytes: the result is valid UTF-8 (jansson accepts
 * it), valid input comes back unchanged, and repair is idempotent. */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t n;
        char *out = utf8_repair((const char *) data, size, &n);
        FUZZ_CHECK(out);
        FUZZ_CHECK(out[n] == '\0');
        FUZZ_CHECK(n <= size * 3);

        json_t *j = json_stringn(out, n);
        FUZZ_CHECK(j); /* jansson validates UTF-8: NULL means we let invalid bytes through */
        json_decref(j);

        json_t *orig = json_stringn((const char *) data, size);
        if (orig) /* the input was valid UTF-8: nothing may change */
                FUZZ_CHECK(n == size && memcmp(out, data, size) == 0);
        json_decref(orig);

        size_t n2;
        char *again = utf8_repair(out, n, &n2);
        FUZZ_CHECK(again && n2 == n && memcmp(again, out, n) == 0);
        free(again);
        free(out);
        return 0;
}
