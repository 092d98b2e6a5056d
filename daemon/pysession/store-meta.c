/* store-meta.c: a stored Python session's record, written and read (store-meta.h). */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "store-meta.h"
#include "str-util.h"

static bool is_hex(const char *s, size_t n) {
        if (strlen(s) != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* A handle: str_random_id()'s, an instance tag of [a-z0-9], '-', hex; or hex alone. */
static bool handle_valid(const char *s) {
        return str_id_shape_valid(s, 32, PYS_STORE_HANDLE_MAX);
}

int pys_store_meta_format(const PyStoreMeta *m, char buf[PYS_STORE_META_BYTES]) {
        if (!is_hex(m->id, PYS_STORE_ID_HEX) || !is_hex(m->id_hash, PYS_STORE_ID_HEX) || !handle_valid(m->handle) ||
            !str_is_printable(m->principal) || !str_is_printable(m->unit) || !*m->unit || strchr(m->unit, ' ') || m->pid <= 1)
                return -EINVAL;
        memset(buf, 0, PYS_STORE_META_BYTES);
        int n = snprintf(buf, PYS_STORE_META_BYTES,
                         PYS_STORE_META_MAGIC "\n"
                         "gen %" PRIu64 "\n"
                         "id %s\n"
                         "id_hash %s\n"
                         "handle %s\n"
                         "principal %s\n"
                         "unit %s\n"
                         "pid %d\n"
                         "idle_usec %" PRIu64 "\n"
                         "t_open_usec %" PRIu64 "\n"
                         "t_last_usec %" PRIu64 "\n"
                         "calls %" PRIu64 "\n"
                         "cpu_user_usec %" PRIu64 "\n"
                         "cpu_system_usec %" PRIu64 "\n"
                         "duration_ms %" PRIu64 "\n"
                         "warm %d\n"
                         "end %" PRIu64 "\n",
                         m->gen, m->id, m->id_hash, m->handle, m->principal, m->unit, (int) m->pid, m->idle_usec,
                         m->t_open_usec, m->t_last_usec, m->calls, m->cpu_user_usec, m->cpu_system_usec,
                         m->duration_ms, m->warm ? 1 : 0, m->gen);
        if (n < 0 || n >= PYS_STORE_META_BYTES) {
                memset(buf, 0, PYS_STORE_META_BYTES);
                return -ENOBUFS;
        }
        return 0;
}

typedef enum MetaKind { META_U64, META_TEXT, META_BOOL } MetaKind;

typedef struct MetaField {
        const char *key;
        MetaKind kind;
        size_t offset, size; /* into PyStoreMeta: a uint64_t, a char[size], or a bool */
} MetaField;

#define U64(k, f) { k, META_U64, offsetof(PyStoreMeta, f), sizeof(uint64_t) }
#define TEXT(k, f) { k, META_TEXT, offsetof(PyStoreMeta, f), sizeof(((PyStoreMeta *) 0)->f) }
static const MetaField meta_fields[] = {
        U64("gen", gen),
        TEXT("id", id),
        TEXT("id_hash", id_hash),
        TEXT("handle", handle),
        TEXT("principal", principal),
        TEXT("unit", unit),
        { "pid", META_U64, 0, 0 }, /* a pid_t: read below */
        U64("idle_usec", idle_usec),
        U64("t_open_usec", t_open_usec),
        U64("t_last_usec", t_last_usec),
        U64("calls", calls),
        U64("cpu_user_usec", cpu_user_usec),
        U64("cpu_system_usec", cpu_system_usec),
        U64("duration_ms", duration_ms),
        { "warm", META_BOOL, offsetof(PyStoreMeta, warm), sizeof(bool) },
        { "end", META_U64, 0, 0 },
};
#undef U64
#undef TEXT
#define N_FIELDS (sizeof(meta_fields) / sizeof(meta_fields[0]))

/* What the fields read into, until the whole record is known to be good. */
typedef struct MetaParse {
        PyStoreMeta m;
        uint64_t pid, end;
} MetaParse;

static const char *meta_key(size_t i) {
        return meta_fields[i].key;
}

static int meta_field(size_t i, const char *value, void *userdata, const char **reterr_why) {
        MetaParse *p = userdata;
        const MetaField *f = &meta_fields[i];
        uint64_t v;
        switch (f->kind) {
        case META_U64:
                if (record_u64(value, &v, reterr_why) < 0)
                        return -EBADMSG;
                if (strcmp(f->key, "pid") == 0)
                        p->pid = v;
                else if (strcmp(f->key, "end") == 0)
                        p->end = v;
                else
                        memcpy((char *) &p->m + f->offset, &v, sizeof(v));
                return 0;
        case META_TEXT:
                return record_text(value, (char *) &p->m + f->offset, f->size, reterr_why);
        case META_BOOL:
                if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
                        return record_fail(reterr_why, "a flag that is neither 0 nor 1");
                *(bool *) ((char *) &p->m + f->offset) = value[0] == '1';
                return 0;
        }
        return -EINVAL;
}

static const RecordFormat meta_format = {
        .magic = PYS_STORE_META_MAGIC,
        .max_bytes = PYS_STORE_META_BYTES,
        .n_keys = N_FIELDS,
        .key = meta_key,
        .field = meta_field,
};
static_assert(PYS_STORE_META_BYTES <= RECORD_BYTES_MAX, "a session's record is a record");

int pys_store_meta_parse(const char *buf, size_t n, PyStoreMeta *ret, const char **reterr_why) {
        MetaParse p = {};
        int r = record_parse(&meta_format, buf, n, &p, reterr_why);
        if (r < 0)
                return r;
        if (p.end != p.m.gen)
                return record_fail(reterr_why, "the record is cut short (its end does not match its start)");
        if (!is_hex(p.m.id, PYS_STORE_ID_HEX) || !is_hex(p.m.id_hash, PYS_STORE_ID_HEX))
                return record_fail(reterr_why, "a session id that is not 16 hex digits");
        if (!handle_valid(p.m.handle))
                return record_fail(reterr_why, "a handle of the wrong shape");
        char unit[PYS_STORE_UNIT_MAX + 1];
        snprintf(unit, sizeof(unit), "mcp-execd-run-%s.scope", p.m.id);
        if (strcmp(unit, p.m.unit) != 0)
                return record_fail(reterr_why, "a scope that is not the session's own");
        if (p.pid <= 1 || p.pid > 4194304)
                return record_fail(reterr_why, "a pid out of range");
        p.m.pid = (pid_t) p.pid;
        if (p.m.idle_usec == 0 || p.m.t_last_usec < p.m.t_open_usec)
                return record_fail(reterr_why, "times out of order");
        *ret = p.m;
        return 0;
}
