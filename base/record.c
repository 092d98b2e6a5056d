/* record.c: reading the daemon's kept records (record.h). Pure: tested through its formats'
 * tests (tests/unit/test-pysession-store.c, test-task.c), which try each refusal. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "record.h"
#include "str-util.h"

int record_fail(const char **reterr_why, const char *why) {
        if (reterr_why)
                *reterr_why = why;
        return -EBADMSG;
}

int record_text(const char *value, char *dst, size_t size, const char **reterr_why) {
        size_t len = strlen(value);
        if (len >= size || !str_is_printable(value))
                return record_fail(reterr_why, "a text field too long or not printable");
        memcpy(dst, value, len + 1);
        return 0;
}

int record_u64(const char *value, uint64_t *ret, const char **reterr_why) {
        if (str_parse_u64(value, ret) < 0)
                return record_fail(reterr_why, "a number that does not read");
        return 0;
}

int record_parse(const RecordFormat *f, const char *buf, size_t n, void *userdata, const char **reterr_why) {
        char text[RECORD_BYTES_MAX + 1];
        bool seen[RECORD_BYTES_MAX / 4] = {}; /* a key line is at least "k v\n" */
        if (f->max_bytes > RECORD_BYTES_MAX || f->n_keys == 0 || f->n_keys > sizeof(seen))
                return -EINVAL;
        size_t len = strnlen(buf, n);
        if (len > f->max_bytes)
                return record_fail(reterr_why, "the record is too long");
        memcpy(text, buf, len);
        text[len] = 0;

        char *save = NULL, *line = strtok_r(text, "\n", &save);
        if (!line || strcmp(line, f->magic) != 0)
                return record_fail(reterr_why, "not a record of this format or version");
        while ((line = strtok_r(NULL, "\n", &save))) {
                char *value = strchr(line, ' ');
                if (!value)
                        return record_fail(reterr_why, "a line without a value");
                *value++ = 0;
                size_t i = 0;
                while (i < f->n_keys && strcmp(f->key(i), line) != 0)
                        i++;
                if (i == f->n_keys)
                        continue; /* a newer daemon's */
                if (seen[i])
                        return record_fail(reterr_why, "a key given twice");
                seen[i] = true;
                int r = f->field(i, value, userdata, reterr_why);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < f->n_keys; i++)
                if (!seen[i])
                        return record_fail(reterr_why, i == f->n_keys - 1 ? "the record is cut short" : "a field is missing");
        return 0;
}
