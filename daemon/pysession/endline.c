/* endline.c: finding a session call's end line in its output (endline.h). */
#include <string.h>

#include "cleanup.h"
#include "endline.h"

void py_end_scan_reset(PyEndScan *scan) {
        scan->ended = false;
        scan->held = 0;
        scan->tail[0] = '\0';
}

void py_end_scan_take(PyEndScan *scan, const char *nonce, const char *p, size_t n, PyEndOutputFn out,
                      void *userdata) {
        if (scan->ended || n == 0)
                return;
        if (n > PY_END_READ_MAX) {
                /* Not by this protocol's reader; taken in pieces, as reads of that size. */
                for (size_t off = 0; off < n && !scan->ended; off += PY_END_READ_MAX)
                        py_end_scan_take(scan, nonce, p + off, MIN(n - off, (size_t) PY_END_READ_MAX), out, userdata);
                return;
        }
        memcpy(scan->hold + scan->held, p, n);
        scan->held += n;

        char prefix[PY_END_PREFIX_LEN + PY_END_NONCE_HEX + 1];
        memcpy(prefix, PY_END_PREFIX, PY_END_PREFIX_LEN);
        memcpy(prefix + PY_END_PREFIX_LEN, nonce, PY_END_NONCE_HEX);
        prefix[sizeof(prefix) - 1] = ' ';
        const size_t plen = sizeof(prefix);

        /* The first occurrence that is a whole line, or may still become one, ends the search; one
         * that cannot (too long: forged, or cut) is output like any other and the search goes on
         * after it, so that the launcher's own line, read in the same piece, is still found. */
        for (size_t search = 0;;) {
                char *at = memmem(scan->hold + search, scan->held - search, prefix, plen);
                if (!at)
                        break;
                size_t before = (size_t) (at - scan->hold);
                char *line = at + plen;
                size_t rest = scan->held - before - plen;
                char *nl = memchr(line, '\n', MIN(rest, (size_t) PY_END_TAIL_MAX + 1));
                if (nl) {
                        out(userdata, scan->hold, before);
                        memcpy(scan->tail, line, (size_t) (nl - line));
                        scan->tail[nl - line] = 0;
                        scan->ended = true;
                        scan->held = 0; /* what follows is no call's */
                        return;
                }
                if (rest <= PY_END_TAIL_MAX) {
                        out(userdata, scan->hold, before);
                        memmove(scan->hold, at, scan->held - before); /* the rest of the line comes next */
                        scan->held -= before;
                        return;
                }
                search = before + 1;
        }
        /* Keep what could be the start of the end line; the rest is the call's. */
        size_t keep = MIN(scan->held, plen - 1);
        out(userdata, scan->hold, scan->held - keep);
        memmove(scan->hold, scan->hold + scan->held - keep, keep);
        scan->held = keep;
}

void py_end_scan_flush(PyEndScan *scan, PyEndOutputFn out, void *userdata) {
        if (scan->held > 0)
                out(userdata, scan->hold, scan->held);
        scan->held = 0;
}
