/* output.c: combined output cap, as mcp-exec applies it (first bytes kept, across both streams). */
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
        return 0;
}
