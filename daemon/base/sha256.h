/* sha256.h: SHA-256 (FIPS 180-4) of a short buffer, for ids in records that must not carry the
 * secret they are derived from (a Python session's handle, issue 18.7). No crypto library is linked
 * for this: one digest per session open is all that is asked of it. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_BYTES 32

void sha256(const void *data, size_t len, uint8_t ret[SHA256_DIGEST_BYTES]);

/* The first nbytes of the digest in lowercase hex: out holds 2 * nbytes + 1 (nbytes ≤ 32). */
void sha256_hex_prefix(const void *data, size_t len, size_t nbytes, char *out);
