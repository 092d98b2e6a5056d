/* record.h: the daemon's kept records: what a restarted daemon reads back of a stored Python session
 * (daemon/pysession/store-meta.c) and of a kept task (daemon/task/task-keep.c). A record is text: a
 * magic line naming its format and version, then one "key value" line a field, the last key
 * "end" repeating the first field's value, so that a record cut short by a kill in its write, or
 * the tail of an older write, is refused. Read strictly: each known key exactly once, a key this
 * daemon does not know (a newer daemon's) passed over. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The largest record: the callers' buffers are at most this (static_assert beside them). */
#define RECORD_BYTES_MAX 4096

typedef struct RecordFormat {
        const char *magic;
        size_t max_bytes; /* the record's buffer; text past the first NUL is not read */
        size_t n_keys;    /* the last one is "end": a record without it is "cut short" */
        const char *(*key)(size_t i);
        /* One field, in the record's order, its key i's value (a NUL-terminated copy the callee may
         * keep pointers into only for the call). 0, or record_fail()'s -EBADMSG. */
        int (*field)(size_t i, const char *value, void *userdata, const char **reterr_why);
} RecordFormat;

/* Reads buf[0..n) as a record of format f, handing each field to f->field(). 0; -EBADMSG and
 * *reterr_why (static text, where given) naming what is wrong. */
int record_parse(const RecordFormat *f, const char *buf, size_t n, void *userdata, const char **reterr_why);

/* -EBADMSG, with why in *reterr_why where given: a refusal of a record. */
int record_fail(const char **reterr_why, const char *why);

/* value copied into dst[size] if it fits and is printable; else record_fail(). */
int record_text(const char *value, char *dst, size_t size, const char **reterr_why);

/* value as a decimal uint64_t; else record_fail(). */
int record_u64(const char *value, uint64_t *ret, const char **reterr_why);
