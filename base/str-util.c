/* str-util.c: growable byte buffers and small string helpers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "str-util.h"

bool str_id_shape_valid(const char *s, size_t min, size_t max) {
        size_t n = strlen(s);
        if (n < min || n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') || s[i] == '-'))
                        return false;
        return true;
}

int reason_set(char **reterr, int r, const char *format, ...) {
        if (!reterr)
                return r;
        va_list ap;
        va_start(ap, format);
        int k = vasprintf(reterr, format, ap);
        va_end(ap);
        if (k < 0) {
                *reterr = NULL;
                return -ENOMEM;
        }
        return r;
}

int buf_append(Buf *b, const void *p, size_t n) {
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                while (cap < b->len + n + 1)
                        cap *= 2;
                char *d = realloc(b->data, cap);
                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->cap = cap;
        }
        if (n > 0)
                memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
}

void buf_done(Buf *b) {
        free(b->data);
        *b = (Buf) {};
}

void buf_consume(Buf *b, size_t n) {
        if (n >= b->len) {
                b->len = 0;
                if (b->data)
                        b->data[0] = '\0';
                return;
        }
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
        b->data[b->len] = '\0';
}

bool str_is_blank(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!strchr(" \t\n\r\f\v", s[i]) || s[i] == '\0')
                        return false;
        return true;
}

int str_random_hex(char *out, size_t nbytes) {
        unsigned char raw[64];
        if (nbytes > sizeof(raw))
                return -EINVAL;
        size_t got = 0;
        while (got < nbytes) {
                ssize_t k = getrandom(raw + got, nbytes - got, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t) k;
        }
        for (size_t i = 0; i < nbytes; i++) {
                out[2 * i] = "0123456789abcdef"[raw[i] >> 4];
                out[2 * i + 1] = "0123456789abcdef"[raw[i] & 15];
        }
        out[2 * nbytes] = '\0';
        return 0;
}

int str_random_id(char *out, const char *tag, size_t nbytes) {
        size_t n = 0;
        if (tag) {
                n = strlen(tag);
                memcpy(out, tag, n);
                out[n++] = '-';
        }
        return str_random_hex(out + n, nbytes);
}

bool str_id_other_instance(const char *id, const char *own_tag, char *ret_tag) {
        if (!id)
                return false;
        size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789");
        if (n == 0 || n > 16 || id[n] != '-')
                return false;
        /* Then what str_random_id() makes of 16 bytes, and nothing else: garbage is not an id. */
        const char *hex = id + n + 1;
        if (strlen(hex) != 32 || strspn(hex, "0123456789abcdef") != 32)
                return false;
        if (own_tag && strlen(own_tag) == n && strncmp(id, own_tag, n) == 0)
                return false;
        memcpy(ret_tag, id, n);
        ret_tag[n] = '\0';
        return true;
}

uint64_t now_usec(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

bool str_secret_equal(const char *a, size_t alen, const char *b, size_t blen) {
        /* Loop over the secret's length whatever a is; no early exit on content. */
        volatile unsigned char d = alen != blen;
        for (size_t i = 0; i < blen; i++)
                d |= (unsigned char) ((i < alen ? (unsigned char) a[i] : 0) ^ (unsigned char) b[i]);
        return d == 0;
}

bool str_is_printable(const char *s) {
        for (; *s; s++)
                if (*s < ' ' || *s > '~')
                        return false;
        return true;
}

int str_parse_u64(const char *s, uint64_t *ret) {
        if (!s || *s < '0' || *s > '9')
                return -EINVAL; /* also "-1", "+1", " 1" and "" */
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}
