/* endline.h: the end of a session call in its interpreter's output (the launcher's protocol, one
 * half of it; launch.py writes it). After the code of a call has run, the launcher writes
 *
 *     "\0MCPEXECD-END " <the call's nonce: 32 hex digits> " " <status> "\n"
 *
 * on stdout and on stderr. What comes before it on a stream is the call's output; the status is
 * the only thing taken from the line (the code's own claim about itself, as a run's exit status
 * is: the code can write the line, its nonce being one frame up, so nothing else of it is trusted,
 * issue 29.1). A line with another nonce, or cut, or longer than PY_END_TAIL_MAX after the nonce,
 * is output like any other. Pure: bytes in, bytes out (tests/unit/test-endline.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define PY_END_PREFIX "\0MCPEXECD-END " /* 14 bytes, the NUL included */
#define PY_END_PREFIX_LEN 14
#define PY_END_NONCE_HEX 32
/* The line after its prefix and nonce: the status (anything after it is ignored: a line of an older
 * launcher, or the code's); longer is not an end line. */
#define PY_END_TAIL_MAX 64
/* The most a scan holds back between two reads: a possible end line's start. */
#define PY_END_HOLD_MAX (PY_END_PREFIX_LEN + PY_END_NONCE_HEX + 1 + PY_END_TAIL_MAX + 1)
/* The most one read may give py_end_scan_take(). */
#define PY_END_READ_MAX (64u * 1024u)

/* Receives the bytes of the stream that are the call's output, in order. */
typedef void (*PyEndOutputFn)(void *userdata, const char *p, size_t n);

/* One output stream of a call. Zeroed: ready for a call. */
typedef struct PyEndScan {
        bool ended; /* the end line was read: what follows is no call's */
        char tail[PY_END_TAIL_MAX + 1]; /* the line after the nonce, once ended (stdout's has the status) */
        size_t held;
        char hold[PY_END_HOLD_MAX + PY_END_READ_MAX]; /* a possible end line's start, then the read */
} PyEndScan;

/* A call begins: nothing held, not ended. */
void py_end_scan_reset(PyEndScan *scan);
/* n bytes (at most PY_END_READ_MAX) read from the stream while the call whose nonce is given
 * (PY_END_NONCE_HEX characters) runs: its output goes to out(), up to the end line. Nothing is
 * taken once ended. */
void py_end_scan_take(PyEndScan *scan, const char *nonce, const char *p, size_t n, PyEndOutputFn out,
                      void *userdata);
/* The call ended without its end line (the session was killed): what was held back as a possible
 * end line is the call's output too. */
void py_end_scan_flush(PyEndScan *scan, PyEndOutputFn out, void *userdata);
