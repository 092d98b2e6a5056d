/* test-sha256.c: daemon/base/sha256.c against the FIPS 180-4 examples and the padding's edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sha256.h"

static void check(const char *in, size_t len, const char *want) {
        char out[2 * SHA256_DIGEST_BYTES + 1];
        sha256_hex_prefix(in, len, SHA256_DIGEST_BYTES, out);
        assert_string_equal(out, want);
}

static void test_vectors(void **state) {
        check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        /* 56 bytes: the length no longer fits the first padding block. */
        const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        check(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        char a64[64];
        memset(a64, 'a', sizeof(a64));
        check(a64, sizeof(a64), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

static void test_prefix(void **state) {
        char out[17];
        sha256_hex_prefix("abc", 3, 8, out);
        assert_string_equal(out, "ba7816bf8f01cfea");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vectors),
                cmocka_unit_test(test_prefix),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
