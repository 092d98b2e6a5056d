/* utf8.c: UTF-8 as a run's output needs it: repair of invalid sequences (jansson, and any JSON
 * encoder, refuses them) and where a cut inside a character leaves a tail. */
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* Length of the valid UTF-8 sequence at s (1–4), or 0 if invalid; *bad_len receives the length of
 * the maximal invalid subpart to replace by one U+FFFD (Unicode §3.9, "U+FFFD substitution of
 * maximal subparts", which is what Python's errors="replace" does). */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad_len) {
        unsigned char c = s[0];
        size_t need;
        unsigned char lo = 0x80, hi = 0xBF;

        if (c < 0x80)
                return 1;
        if (c >= 0xC2 && c <= 0xDF)
                need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
                need = 2;
                if (c == 0xE0)
                        lo = 0xA0;
                else if (c == 0xED)
                        hi = 0x9F; /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
                need = 3;
                if (c == 0xF0)
                        lo = 0x90;
                else if (c == 0xF4)
                        hi = 0x8F;
        } else {
                *bad_len = 1;
                return 0;
        }

        for (size_t i = 1; i <= need; i++) {
                unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
                if (i >= n || s[i] < lo_i || s[i] > hi_i) {
                        *bad_len = i;
                        return 0;
                }
        }
        return need + 1;
}

char *utf8_repair(const char *s, size_t len, size_t *ret_len) {
        /* Worst case: every byte becomes the three bytes of U+FFFD. */
        char *out = malloc(len * 3 + 1);
        if (!out)
                return NULL;

        const unsigned char *p = (const unsigned char *) s;
        size_t i = 0, o = 0;
        while (i < len) {
                size_t bad = 0, k = utf8_seq(p + i, len - i, &bad);
                if (k > 0) {
                        memcpy(out + o, p + i, k);
                        o += k;
                        i += k;
                } else {
                        memcpy(out + o, "\xEF\xBF\xBD", 3);
                        o += 3;
                        i += bad;
                }
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

size_t utf8_seq_len(const char *s, size_t n) {
        size_t bad = 0;
        return n == 0 ? 0 : utf8_seq((const unsigned char *) s, n, &bad);
}

size_t utf8_incomplete_tail(const char *s, size_t len) {
        const unsigned char *p = (const unsigned char *) s;
        for (size_t k = 1; k <= 3 && k <= len; k++) {
                unsigned char c = p[len - k];
                if (c >= 0x80 && c <= 0xBF)
                        continue; /* a continuation byte: the lead is further back */
                size_t bad = 0;
                /* A lead byte whose sequence is valid so far and runs out exactly at the end. */
                if (c >= 0xC2 && c <= 0xF4 && utf8_seq(p + len - k, k, &bad) == 0 && bad == k)
                        return k;
                return 0;
        }
        return 0;
}
