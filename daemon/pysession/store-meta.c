/* store-meta.c: a stored Python session's record, written and read (store-meta.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int fail(const char **reterr_why, const char *why) {
        if (reterr_why)
                *reterr_why = why;
        return -EBADMSG;
}

int pys_store_meta_parse(const char *buf, size_t n, PyStoreMeta *ret, const char **reterr_why) {
        char text[PYS_STORE_META_BYTES + 1];
        size_t len = strnlen(buf, n);
        if (len > PYS_STORE_META_BYTES)
                return fail(reterr_why, "the record is too long");
        memcpy(text, buf, len);
        text[len] = 0;

        PyStoreMeta m = {};
        bool seen[N_FIELDS] = {};
        uint64_t pid = 0, end = 0;
        char *save = NULL;
        char *line = strtok_r(text, "\n", &save);
        if (!line || strcmp(line, PYS_STORE_META_MAGIC) != 0)
                return fail(reterr_why, "not a record of this format or version");
        while ((line = strtok_r(NULL, "\n", &save))) {
                char *value = strchr(line, ' ');
                if (!value)
                        return fail(reterr_why, "a line without a value");
                *value++ = 0;
                size_t i = 0;
                while (i < N_FIELDS && strcmp(meta_fields[i].key, line) != 0)
                        i++;
                if (i == N_FIELDS)
                        continue; /* a newer daemon's */
                if (seen[i])
                        return fail(reterr_why, "a key given twice");
                seen[i] = true;
                const MetaField *f = &meta_fields[i];
                uint64_t v;
                switch (f->kind) {
                case META_U64:
                        if (str_parse_u64(value, &v) < 0)
                                return fail(reterr_why, "a number that does not read");
                        if (strcmp(f->key, "pid") == 0)
                                pid = v;
                        else if (strcmp(f->key, "end") == 0)
                                end = v;
                        else
                                memcpy((char *) &m + f->offset, &v, sizeof(v));
                        break;
                case META_TEXT:
                        if (strlen(value) >= f->size || !str_is_printable(value))
                                return fail(reterr_why, "a text field too long or not printable");
                        memcpy((char *) &m + f->offset, value, strlen(value) + 1);
                        break;
                case META_BOOL:
                        if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0)
                                return fail(reterr_why, "a flag that is neither 0 nor 1");
                        *(bool *) ((char *) &m + f->offset) = value[0] == '1';
                        break;
                }
        }
        for (size_t i = 0; i < N_FIELDS; i++)
                if (!seen[i])
                        return strcmp(meta_fields[i].key, "end") == 0 ? fail(reterr_why, "the record is cut short")
                                                                       : fail(reterr_why, "a field is missing");
        if (end != m.gen)
                return fail(reterr_why, "the record is cut short (its end does not match its start)");
        if (!is_hex(m.id, PYS_STORE_ID_HEX) || !is_hex(m.id_hash, PYS_STORE_ID_HEX))
                return fail(reterr_why, "a session id that is not 16 hex digits");
        if (!handle_valid(m.handle))
                return fail(reterr_why, "a handle of the wrong shape");
        char unit[PYS_STORE_UNIT_MAX + 1];
        snprintf(unit, sizeof(unit), "mcp-execd-run-%s.scope", m.id);
        if (strcmp(unit, m.unit) != 0)
                return fail(reterr_why, "a scope that is not the session's own");
        if (pid <= 1 || pid > 4194304)
                return fail(reterr_why, "a pid out of range");
        m.pid = (pid_t) pid;
        if (m.idle_usec == 0 || m.t_last_usec < m.t_open_usec)
                return fail(reterr_why, "times out of order");
        *ret = m;
        return 0;
}
