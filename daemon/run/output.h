/* output.h: a run's captured stdout and stderr under one combined byte cap (first bytes kept). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "str-util.h"

typedef struct Output {
        uint64_t cap;      /* combined budget of both streams */
        uint64_t kept;     /* bytes kept so far, both streams */
        uint64_t seen[2];  /* bytes read per stream, kept or not */
        bool truncated;
        bool finished;     /* output_finish() has run: the streams are repaired, no longer as read */
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

/* How far a running call's progress notifications have streamed its output (issue 17.4). */
typedef struct OutputCursor {
        size_t off[2];  /* bytes of each stream (as read) already streamed */
        uint64_t sent;  /* UTF-8 bytes streamed, both streams: never more than the cap */
        bool done;      /* nothing more will be streamed (the cap, or it said truncated) */
} OutputCursor;

/* The output of a run still going that cur has not streamed yet, per stream (ret[0] stdout,
 * ret[1] stderr; malloc'd valid UTF-8, or NULL with length 0 when nothing is new), and whether the
 * cap ends the streaming here (*ret_truncated; then cur is done). Each piece ends at a whole
 * character (an unfinished one waits for its next bytes) and is repaired exactly as
 * output_finish() repairs the whole stream, so the pieces of a stream put together are a prefix
 * of the final result's text (unless repairs grew it past the cap and output_finish() cut it);
 * at most cap bytes are streamed in total. Nothing once output_finish() has run (the result has it
 * all). Advances cur only on success. Returns 0 or -ENOMEM. */
int output_stream_next(const Output *o, OutputCursor *cur, char *ret[static 2], size_t ret_len[static 2],
                       bool *ret_truncated);

/* Frees both pieces: _cleanup_(output_pieces_freep) char *piece[2] = {}; (_cleanup_free_ on an
 * array would free only its first element). */
static inline void output_pieces_freep(char *(*p)[2]) {
        free((*p)[0]);
        free((*p)[1]);
}
