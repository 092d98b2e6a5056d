/* line.c: newline-delimited framing of the stdio transport, with a per-line size cap. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

void mcp_line_reader_init(McpLineReader *r, size_t max_line) {
        *r = (McpLineReader) { .max_line = max_line };
}

void mcp_line_reader_done(McpLineReader *r) {
        buf_done(&r->buf);
        *r = (McpLineReader) {};
}

int mcp_line_reader_feed(McpLineReader *r, const char *p, size_t n) {
        if (r->discarding) {
                /* Drop everything up to the end of the oversize line; keep what follows. */
                const char *nl = memchr(p, '\n', n);
                if (!nl)
                        return 0;
                r->discarding = false;
                n -= (size_t) (nl + 1 - p);
                p = nl + 1;
        }
        if (n == 0)
                return 0;
        /* The lines already returned go first: the buffer holds at most the one being read. */
        if (r->start > 0) {
                buf_consume(&r->buf, r->start);
                r->start = 0;
        }
        return buf_append(&r->buf, p, n);
}

static void strip_cr(const char *line, size_t *len) {
        /* Clients on other platforms may send CRLF; the SDK strips "\r" too. */
        if (*len > 0 && line[*len - 1] == '\r')
                (*len)--;
}

McpLineStatus mcp_line_reader_next(McpLineReader *r, const char **ret_line, size_t *ret_len) {
        /* Nothing buffered (buf may still be NULL: EOF before any input; found by fuzz-mcp-server). */
        if (r->discarding || r->start == r->buf.len)
                return MCP_LINE_NONE;

        char *s = r->buf.data + r->start;
        size_t avail = r->buf.len - r->start;
        char *nl = avail > 0 ? memchr(s, '\n', avail) : NULL;
        if (!nl) {
                if (avail > r->max_line) {
                        /* Bound our memory: forget the line, skip until its newline. */
                        buf_consume(&r->buf, r->buf.len);
                        r->start = 0;
                        r->discarding = true;
                        return MCP_LINE_OVERSIZE;
                }
                return MCP_LINE_NONE;
        }

        size_t n = (size_t) (nl - s);
        r->start += n + 1;
        if (n > r->max_line)
                return MCP_LINE_OVERSIZE;
        *nl = '\0';
        strip_cr(s, &n);
        *ret_line = s;
        *ret_len = n;
        return MCP_LINE_OK;
}

McpLineStatus mcp_line_reader_finish(McpLineReader *r, const char **ret_line, size_t *ret_len) {
        McpLineStatus st = mcp_line_reader_next(r, ret_line, ret_len);
        if (st != MCP_LINE_NONE || r->discarding)
                return st;
        size_t avail = r->buf.len - r->start;
        if (avail == 0)
                return MCP_LINE_NONE;
        /* The last line was cut off at EOF: still a message to answer (or reject). buf keeps a NUL
         * after its bytes, so it is a C string as it is. */
        char *s = r->buf.data + r->start;
        r->start = r->buf.len;
        strip_cr(s, &avail);
        *ret_line = s;
        *ret_len = avail;
        return MCP_LINE_OK;
}
