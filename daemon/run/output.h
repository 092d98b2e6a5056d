/* output.h: a run's captured stdout and stderr under one combined byte cap (first bytes kept). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "str-util.h"

typedef struct Output {
        uint64_t cap;      /* combined budget of both streams */
        uint64_t kept;     /* bytes kept so far, both streams */
        uint64_t seen[2];  /* bytes read per stream, kept or not */
        bool truncated;
        Buf stream[2];     /* 0 = stdout, 1 = stderr */
} Output;

void output_init(Output *o, uint64_t cap);
void output_done(Output *o);

/* Accounts n bytes read from stream (0 or 1): keeps what fits in the budget, drops the rest (the
 * pipes are still drained, so a flooding run never blocks and never grows our memory past cap).
 * Returns 0 or -ENOMEM. */
int output_add(Output *o, int stream, const char *p, size_t n);
