/* utf8.h: UTF-8 helpers for byte streams (a run's output) that must become JSON strings. */
#pragma once

#include <stddef.h>

/* Replaces invalid UTF-8 sequences with U+FFFD (one per maximal invalid subpart, as Python's
 * errors="replace" does). Returns a malloc'd NUL-terminated string and its length, or NULL. */
char *utf8_repair(const char *s, size_t len, size_t *ret_len);
/* Length (1–4) of the valid UTF-8 sequence at s, 0 if there is none (overlong forms, surrogates,
 * code points above U+10FFFF and a sequence cut by n are not valid: jansson refuses them). */
size_t utf8_seq_len(const char *s, size_t n);
/* The length (0–3) of the valid but unfinished UTF-8 sequence that ends s: what a cut inside a
 * character leaves behind. 0 if s ends with a whole character or with invalid bytes. */
size_t utf8_incomplete_tail(const char *s, size_t len);
