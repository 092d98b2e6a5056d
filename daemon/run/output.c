/* output.c: combined output cap, as mcp-exec applies it (first bytes kept, across both streams),
 * held in UTF-8 bytes of what the client receives. */
#include <errno.h>
#include <stdlib.h>

#include "cleanup.h"
#include "exec-result.h"
#include "utf8.h"
#include "output.h"

void output_init(Output *o, uint64_t cap) {
        *o = (Output) { .cap = cap };
}

void output_done(Output *o) {
        buf_done(&o->stream[0]);
        buf_done(&o->stream[1]);
}

int output_add(Output *o, int stream, const char *p, size_t n) {
        o->seen[stream] += n;
        uint64_t room = o->cap - o->kept;
        size_t take = n <= room ? n : (size_t) room;
        if (take < n)
                o->truncated = true;
        if (take == 0)
                return 0;
        int r = buf_append(&o->stream[stream], p, take);
        if (r < 0)
                return r;
        o->kept += take;
        o->last = stream;
        return 0;
}

static int stream_repair(Buf *b, bool drop_cut) {
        size_t len = b->len;
        if (drop_cut)
                len -= utf8_incomplete_tail(b->data, len);
        size_t n;
        char *fixed = utf8_repair(b->data ? b->data : "", len, &n);
        if (!fixed)
                return -ENOMEM;
        free(b->data);
        *b = (Buf) { .data = fixed, .len = n, .cap = n + 1 };
        return 0;
}

/* Drops whole characters from the end of b until it is at most n bytes long. */
static void stream_trim(Buf *b, size_t n) {
        if (b->len <= n)
                return;
        while (n > 0 && ((unsigned char) b->data[n] & 0xC0) == 0x80)
                n--; /* b->data[n] continues the character before it: cut before that one */
        b->len = n;
        b->data[n] = '\0';
}

int output_finish(Output *o) {
        o->finished = true; /* first: a failure below leaves the streams part repaired */
        for (int s = 0; s < 2; s++) {
                size_t before = o->stream[s].len;
                /* The cap dropped bytes of this stream: an unfinished character at its end is the cut. */
                int r = stream_repair(&o->stream[s], o->seen[s] > before);
                if (r < 0)
                        return r;
                if (o->stream[s].len < before)
                        o->truncated = true; /* only the cut character can make a stream shorter */
        }
        uint64_t total = (uint64_t) o->stream[0].len + o->stream[1].len;
        if (total > o->cap) {
                o->truncated = true;
                Buf *first = &o->stream[o->last], *other = &o->stream[!o->last];
                uint64_t excess = total - o->cap;
                stream_trim(first, first->len > excess ? (size_t) (first->len - excess) : 0);
                total = (uint64_t) first->len + other->len;
                if (total > o->cap)
                        stream_trim(other, (size_t) (o->cap - first->len));
        }
        o->kept = (uint64_t) o->stream[0].len + o->stream[1].len;
        return 0;
}

int output_stream_next(const Output *o, OutputCursor *cur, char *ret[static 2], size_t ret_len[static 2],
                       bool *ret_truncated) {
        _cleanup_(output_pieces_freep) char *piece[2] = {};
        size_t len[2] = {}, end[2] = {};
        uint64_t sent = cur->sent;
        bool cut = false;

        ret[0] = ret[1] = NULL;
        ret_len[0] = ret_len[1] = 0;
        *ret_truncated = false;
        if (cur->done || o->finished)
                return 0;
        for (int s = 0; s < 2; s++) {
                const Buf *b = &o->stream[s];
                end[s] = cur->off[s];
                if (b->len <= cur->off[s] || cut)
                        continue;
                size_t n = b->len - cur->off[s];
                n -= utf8_incomplete_tail(b->data + cur->off[s], n);
                if (n == 0)
                        continue;
                piece[s] = utf8_repair(b->data + cur->off[s], n, &len[s]);
                if (!piece[s])
                        return -ENOMEM;
                end[s] = cur->off[s] + n;
                /* Repairs can make text longer than the bytes read: the budget is counted in
                 * what the client receives, as output_finish() counts the result. */
                uint64_t room = o->cap > sent ? o->cap - sent : 0;
                if (len[s] > room) {
                        Buf t = { .data = piece[s], .len = len[s], .cap = len[s] + 1 };
                        stream_trim(&t, (size_t) room);
                        len[s] = t.len;
                        cut = true;
                }
                sent += len[s];
        }
        /* Everything kept is streamed and the cap dropped the rest: say so once, then stop. */
        bool all = true;
        for (int s = 0; s < 2; s++) {
                size_t left = o->stream[s].len - end[s]; /* at most an unfinished character, if all */
                all = all &&
                      (left == 0 || utf8_incomplete_tail(o->stream[s].data + end[s], left) == left);
        }
        if (cut || (o->truncated && all)) {
                cur->done = true;
                *ret_truncated = true;
        }
        for (int s = 0; s < 2; s++) {
                cur->off[s] = end[s];
                ret_len[s] = len[s];
                ret[s] = len[s] > 0 ? TAKE_PTR(piece[s]) : NULL;
        }
        cur->sent = sent;
        return 0;
}
