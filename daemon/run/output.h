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
        int last;          /* the stream that got the last bytes kept: where the cap cut */
        Buf stream[2];     /* 0 = stdout, 1 = stderr */
} Output;

void output_init(Output *o, uint64_t cap);
void output_done(Output *o);

/* Accounts n bytes read from stream (0 or 1): keeps what fits in the budget, drops the rest (the
 * pipes are still drained, so a flooding run never blocks and never grows our memory past cap).
 * Returns 0 or -ENOMEM. */
int output_add(Output *o, int stream, const char *p, size_t n);

/* Once the run is over: makes both streams valid UTF-8 (invalid bytes become U+FFFD, as the reply
 * encoder would) and keeps their combined length within cap in UTF-8 bytes, which is what the client
 * receives (issue 15 #10): a character the cap cut in two is dropped, not replaced, and if repairs
 * made the streams longer, whole characters are dropped from the end of the stream cut last, then
 * the other; anything dropped sets truncated. Returns 0 or -ENOMEM (the streams are then as read). */
int output_finish(Output *o);
