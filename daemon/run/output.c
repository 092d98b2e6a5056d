/* output.c: combined output cap, as mcp-exec applies it (first bytes kept, across both streams),
 * held in UTF-8 bytes of what the client receives. */
#include <errno.h>
#include <stdlib.h>

#include "mcp.h"
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
                len -= mcp_utf8_incomplete_tail(b->data, len);
        size_t n;
        char *fixed = mcp_utf8_repair(b->data ? b->data : "", len, &n);
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
