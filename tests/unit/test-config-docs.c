/* test-config-docs.c: README.md's configuration table and mcp-execd(8)'s ENVIRONMENT section list
 * exactly the rows of config_table[], with the same defaults; and every MCP_EXEC_* name either
 * document mentions anywhere is a row.
 *   test-config-docs README.md units/mcp-execd.8   (tests/unit/meson.build passes both) */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "config-internal.h"

static const char *readme_path, *man_path;

static char *read_all(const char *path) {
        FILE *f = fopen(path, "re");
        if (!f)
                fail_msg("cannot open %s", path);
        char *buf = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&buf, &size);
        assert_non_null(m);
        char chunk[4096];
        size_t n;
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
                fwrite(chunk, 1, n, m);
        fclose(f);
        fclose(m);
        return buf;
}

/* The next line of *p (NUL-terminated in place), or NULL at the end. */
static char *next_line(char **p) {
        if (!**p)
                return NULL;
        char *line = *p, *nl = strchr(line, '\n');
        if (nl) {
                *nl = '\0';
                *p = nl + 1;
        } else
                *p = line + strlen(line);
        return line;
}

/* Each MCP_EXEC_* name in text must be a row ("MCP_EXEC_*" itself, the family, is not a name). */
static void check_names_are_rows(const char *what, const char *text) {
        for (const char *p = strstr(text, "MCP_EXEC_"); p; p = strstr(p + 1, "MCP_EXEC_")) {
                size_t n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
                if (n == strlen("MCP_EXEC_"))
                        continue;
                if (!config_table_find(p, n))
                        fail_msg("%s names %.*s, which is no variable (no row of config_table[])", what,
                                 (int) n, p);
        }
}

/* README.md: "| `NAME` | default | meaning |" rows under "## Configuration", up to the next heading. */
static void test_readme(void **state) {
        _cleanup_free_ char *text = read_all(readme_path);
        check_names_are_rows(readme_path, text);

        bool seen[config_table_size];
        memset(seen, 0, sizeof(seen));
        bool in_section = false;
        char *p = text, *line;
        while ((line = next_line(&p))) {
                if (line[0] == '#') {
                        in_section = strcmp(line, "## Configuration") == 0;
                        continue;
                }
                if (!in_section || strncmp(line, "| `MCP_EXEC_", 12) != 0)
                        continue;
                const char *name = line + 3;
                size_t n = strcspn(name, "`");
                const ConfigVariable *row = config_table_find(name, n);
                if (!row)
                        fail_msg("README.md's table has %.*s, which is no row", (int) n, name);
                if (seen[row - config_table])
                        fail_msg("README.md's table has %s twice", row->name);
                seen[row - config_table] = true;

                /* The default cell, "`value`" when the row has one to parse. */
                const char *cell = name + n;
                if (strncmp(cell, "` | ", 4) != 0)
                        fail_msg("README.md: %s's row is not \"| `NAME` | default | meaning |\"", row->name);
                cell += 4;
                size_t len = strcspn(cell, "|");
                while (len > 0 && cell[len - 1] == ' ')
                        len--;
                if (row->fallback) {
                        char want[128];
                        snprintf(want, sizeof(want), "`%s`", row->fallback);
                        if (len != strlen(want) || strncmp(cell, want, len) != 0)
                                fail_msg("README.md gives %s the default %.*s, the table %s", row->name,
                                         (int) len, cell, want);
                }
        }
        for (size_t i = 0; i < config_table_size; i++)
                if (!seen[i])
                        fail_msg("%s is missing from README.md's configuration table", config_table[i].name);
}

/* mcp-execd(8): the tag lines (after .TP) of .SH ENVIRONMENT name the variables, as
 * '.BR NAME " (default)"' or several joined with '", "'. */
static void test_man(void **state) {
        _cleanup_free_ char *text = read_all(man_path);
        check_names_are_rows(man_path, text);

        bool seen[config_table_size];
        memset(seen, 0, sizeof(seen));
        bool in_section = false, tag = false;
        char *p = text, *line;
        while ((line = next_line(&p))) {
                if (strncmp(line, ".SH ", 4) == 0) {
                        in_section = strcmp(line, ".SH ENVIRONMENT") == 0;
                        continue;
                }
                if (!in_section)
                        continue;
                if (strcmp(line, ".TP") == 0) {
                        tag = true;
                        continue;
                }
                if (!tag)
                        continue;
                tag = false;
                for (char *q = strstr(line, "MCP_EXEC_"); q; q = strstr(q + 1, "MCP_EXEC_")) {
                        size_t n = strspn(q, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
                        const ConfigVariable *row = config_table_find(q, n);
                        if (!row)
                                continue; /* check_names_are_rows() has said so */
                        seen[row - config_table] = true;
                        if (!row->fallback)
                                continue;
                        /* ' " (default)"' right after the name; roff writes a minus as \- */
                        char want[128], *w = want;
                        w += snprintf(w, sizeof(want), " \" (");
                        for (const char *f = row->fallback; *f && w < want + sizeof(want) - 4; f++) {
                                if (*f == '-')
                                        *w++ = '\\';
                                *w++ = *f;
                        }
                        strcpy(w, ")\"");
                        if (strncmp(q + n, want, strlen(want)) != 0)
                                fail_msg("mcp-execd.8 does not give %s the default of the table:%s",
                                         row->name, want);
                }
        }
        for (size_t i = 0; i < config_table_size; i++)
                if (!seen[i])
                        fail_msg("%s is missing from mcp-execd.8's ENVIRONMENT section",
                                 config_table[i].name);
}

int main(int argc, char *argv[]) {
        if (argc != 3) {
                fprintf(stderr, "usage: %s README.md mcp-execd.8\n", argv[0]);
                return 2;
        }
        readme_path = argv[1];
        man_path = argv[2];
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_readme),
                cmocka_unit_test(test_man),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
