/* fuzz-config.c: config_load() over a fake environment, and each value parser on its own. The
 * input is lines "NAME=VALUE"; NAME is a variable's full name or a one-byte shorthand (its row in
 * config_table[], modulo the number of rows), so short inputs reach every variable. Only
 * MCP_EXEC_* names exist in the fake environment (no CREDENTIALS_DIRECTORY: the target touches no
 * files). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "config-internal.h"
#include "fuzz.h"

#define FUZZ_MAX_VARS 32

static struct {
        const char *name;
        char *value;
} vars[FUZZ_MAX_VARS];
static size_t n_vars;

static char *fake_env(const char *name) {
        /* The last assignment wins, as in a shell. */
        for (size_t i = n_vars; i > 0; i--)
                if (strcmp(vars[i - 1].name, name) == 0)
                        return vars[i - 1].value;
        return NULL;
}

static const char *lookup_name(const char *key, size_t len) {
        if (len == 1)
                return config_table[(unsigned char) key[0] % config_table_size].name;
        const ConfigVariable *row = config_table_find(key, len);
        return row ? row->name : NULL;
}

static void parse_value(const char *v) {
        uint64_t u;
        uint32_t p;
        bool b;
        if (config_parse_size(v, true, &u) == 0)
                FUZZ_CHECK(u > 0 || v[0] == '0');
        (void) config_parse_size(v, false, &u);
        if (config_parse_uint(v, 1, 65535, &u) == 0)
                FUZZ_CHECK(u >= 1 && u <= 65535);
        (void) config_parse_bool(v, &b);
        if (config_parse_percent(v, &p) == 0)
                FUZZ_CHECK(p <= 100000);
        (void) config_parse_addr(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = strndup((const char *) data, size); /* an environment cannot hold NULs */
        FUZZ_CHECK(text);
        n_vars = 0;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line && n_vars < FUZZ_MAX_VARS;
             line = strtok_r(NULL, "\n", &save)) {
                char *eq = strchr(line, '=');
                if (!eq)
                        continue;
                const char *name = lookup_name(line, (size_t) (eq - line));
                if (!name)
                        continue;
                vars[n_vars].name = name;
                vars[n_vars].value = eq + 1;
                n_vars++;
                parse_value(eq + 1);
        }

        Config c;
        char *problem = NULL;
        int r = config_load(fake_env, &c, &problem);
        if (r == 0) {
                FUZZ_CHECK(!problem);
                FUZZ_CHECK(c.addr && c.python && c.slice);
                FUZZ_CHECK(c.default_timeout_s >= 1 && c.default_timeout_s <= c.max_timeout_s);
                FUZZ_CHECK(c.max_output_bytes >= 1 && c.max_code_bytes >= 1);
                FUZZ_CHECK(c.max_message_bytes >= 4096);
                FUZZ_CHECK(c.max_concurrent >= 1);
                FUZZ_CHECK(!(c.require_cgroup && c.cgroup == CGROUP_MODE_NONE));
                config_done(&c);
        } else {
                FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
                /* A refusal names the variable: never a silent default, never an empty message. */
                FUZZ_CHECK(r != -EINVAL || (problem && strncmp(problem, "MCP_EXEC_", 9) == 0));
                free(problem);
        }
        free(text);
        return 0;
}
