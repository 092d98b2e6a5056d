/* fuzz.h: what every fuzz target shares: libFuzzer's entry point and a loud invariant check. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant of ours that does not hold is a finding like a crash: abort, so libFuzzer saves
 * the input and the replay test fails. */
#define FUZZ_CHECK(cond)                                                                           \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)
