/* str-util.h: growable byte buffers and small string helpers. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Buf {
        char *data;
        size_t len;
        size_t cap;
} Buf;

/* A failure's sentence for the caller (the **reterr of a function that explains itself): sets
 * *reterr (when reterr is not NULL) to the formatted text, malloc'd, and returns r; when the text
 * cannot be made, *reterr is NULL and it returns -ENOMEM. */
int reason_set(char **reterr, int r, const char *format, ...) __attribute__((format(printf, 3, 4)));

/* Appends n bytes, growing the buffer. Keeps data NUL-terminated. Returns 0 or -ENOMEM. */
int buf_append(Buf *b, const void *p, size_t n);
void buf_done(Buf *b);
/* Drops the first n bytes. */
void buf_consume(Buf *b, size_t n);

/* Whether a (a caller's) equals b (the secret: a token, a session id, a task id), in time that
 * depends on the lengths only, never on where they differ. */
bool str_secret_equal(const char *a, size_t alen, const char *b, size_t blen);

/* True if s is empty or only ASCII whitespace (the characters Python ignores around code). */
bool str_is_blank(const char *s, size_t n);

/* Whether s has the shape of an id str_random_id() makes (an instance tag of [a-z0-9], '-', hex; or
 * hex alone: only [0-9a-z-]) and a length within [min, max]. */
bool str_id_shape_valid(const char *s, size_t min, size_t max);

/* Random lowercase hex string of 2*nbytes characters into out (size ≥ 2*nbytes+1), from getrandom().
 * Returns 0 or -errno. */
int str_random_hex(char *out, size_t nbytes);

/* An id: tag, '-', then str_random_hex(nbytes); or the hex alone when tag is NULL. out holds at
 * least strlen(tag) + 1 + 2*nbytes + 1. The tag says which instance made the id, so that a load
 * balancer sends what names it to that instance (README "Fleet"); it is not a secret and adds
 * nothing to the id's strength. */
int str_random_id(char *out, const char *tag, size_t nbytes);

/* Whether id (from a caller) bears another instance's tag than own_tag (NULL: this instance has
 * none): a tag as MCP_EXEC_INSTANCE allows (1-16 of [a-z0-9]), '-', then 32 lowercase hex digits
 * (str_random_id() of 16 bytes: task ids and Python session handles). The tag is copied into
 * ret_tag (at least 17 bytes). Used to answer "that instance is gone" to what a load balancer sent
 * here because the instance that made the id is down: only the caller's own id is repeated. */
bool str_id_other_instance(const char *id, const char *own_tag, char *ret_tag);

/* Whether s is printable ASCII only (' ' to '~'): one line of a record, no control character. */
bool str_is_printable(const char *s);

/* s as a decimal: digits only (no sign, space or base prefix), within uint64_t. 0 or -EINVAL. */
int str_parse_u64(const char *s, uint64_t *ret);

/* Monotonic clock in microseconds. */
uint64_t now_usec(void);
