/* test-config-docs.c: the documentation keeps step with the code.
 *
 *   - mcp-execd(8)'s ENVIRONMENT section names every row of config_table[] on a tag line, with the
 *     row's default: the man page is the reference of every variable.
 *   - Every MCP_EXEC_* name any document mentions (the man pages in units/, README.md, SECURITY.md,
 *     every .md in docs/, bench/README.md, the tiers' READMEs) is a row: no document names a variable
 *     that does not exist.
 *   - A Markdown table row "| `MCP_EXEC_NAME` | default | …" (README.md's ten variables) gives the
 *     row's default.
 *   - README.md lists at most ten variables in its table (the rest is the man page's).
 *   - Every relative link of those Markdown documents names a file of the repository (not outside
 *     it, not an absolute path), and a "#fragment" names a heading of the file it points to.
 *
 *   test-config-docs SOURCE_ROOT   (tests/unit/meson.build passes it) */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "config-internal.h"

static const char *src_root;
static char root_real[PATH_MAX];

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

static char *src_path(const char *rel) {
        char *p;
        assert_true(asprintf(&p, "%s/%s", src_root, rel) >= 0);
        return p;
}

/* The documents, relative to the source root: fixed names, and the files of some folders that end
 * in suffix. The list is NULL-terminated and malloc'd, as its strings. */
static char **documents(bool markdown, bool man) {
        static const char *const fixed_md[] = { "README.md", "SECURITY.md", "bench/README.md", NULL };
        static const char *const md_dirs[] = { "docs", "tests/blackbox", "tests/fuzz", "tests/vm", NULL };
        char **list = calloc(256, sizeof(char *));
        size_t n = 0;
        assert_non_null(list);
        if (markdown)
                for (size_t i = 0; fixed_md[i]; i++) {
                        _cleanup_free_ char *p = src_path(fixed_md[i]);
                        if (access(p, F_OK) == 0)
                                list[n++] = strdup(fixed_md[i]);
                }
        const char *const man_dirs[] = { "units", NULL };
        for (int pass = 0; pass < 2; pass++) {
                if ((pass == 0 && !markdown) || (pass == 1 && !man))
                        continue;
                const char *const *dirs = pass == 0 ? md_dirs : man_dirs;
                for (size_t i = 0; dirs[i]; i++) {
                        _cleanup_free_ char *d = src_path(dirs[i]);
                        DIR *dir = opendir(d);
                        if (!dir)
                                continue;
                        struct dirent *de;
                        while ((de = readdir(dir))) {
                                size_t len = strlen(de->d_name);
                                bool take = pass == 0 ? len > 3 && strcmp(de->d_name + len - 3, ".md") == 0
                                                      : len > 2 && de->d_name[len - 2] == '.' &&
                                                                de->d_name[len - 1] >= '1' && de->d_name[len - 1] <= '8';
                                if (!take)
                                        continue;
                                assert_true(n < 255);
                                assert_true(asprintf(&list[n++], "%s/%s", dirs[i], de->d_name) >= 0);
                        }
                        closedir(dir);
                }
        }
        list[n] = NULL;
        return list;
}

static void documents_free(char **list) {
        for (size_t i = 0; list[i]; i++)
                free(list[i]);
        free(list);
}

/* Each MCP_EXEC_* name in text must be a row ("MCP_EXEC_*" itself, the family, is not a name). */
static void check_names_are_rows(const char *what, const char *text) {
        for (const char *p = strstr(text, "MCP_EXEC_"); p; p = strstr(p + 1, "MCP_EXEC_")) {
                if (p > text && (isalnum((unsigned char) p[-1]) || p[-1] == '_'))
                        continue; /* part of a longer name, such as MCPX_MCP_EXEC_ */
                size_t n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
                if (n == strlen("MCP_EXEC_"))
                        continue;
                if (!config_table_find(p, n))
                        fail_msg("%s names %.*s, which is no variable (no row of config_table[])", what,
                                 (int) n, p);
        }
}

static void test_names(void **state) {
        char **docs = documents(true, true);
        size_t n = 0;
        for (; docs[n]; n++) {
                _cleanup_free_ char *p = src_path(docs[n]);
                _cleanup_free_ char *text = read_all(p);
                check_names_are_rows(docs[n], text);
        }
        assert_true(n >= 3); /* README.md, a docs/ page, the man page at least */
        documents_free(docs);
}

/* Markdown tables: "| `NAME` | default | meaning |" rows give the row's default. README.md has at
 * most ten of them. */
static void test_markdown_tables(void **state) {
        char **docs = documents(true, false);
        for (size_t d = 0; docs[d]; d++) {
                _cleanup_free_ char *path = src_path(docs[d]);
                _cleanup_free_ char *text = read_all(path);
                unsigned rows = 0;
                char *p = text, *line;
                while ((line = next_line(&p))) {
                        if (strncmp(line, "| `MCP_EXEC_", 12) != 0)
                                continue;
                        const char *name = line + 3;
                        size_t n = strcspn(name, "`");
                        const ConfigVariable *row = config_table_find(name, n);
                        if (!row)
                                fail_msg("%s's table has %.*s, which is no row", docs[d], (int) n, name);
                        rows++;
                        const char *cell = name + n;
                        if (strncmp(cell, "` | ", 4) != 0 || !row->fallback)
                                continue;
                        cell += 4;
                        size_t len = strcspn(cell, "|");
                        while (len > 0 && cell[len - 1] == ' ')
                                len--;
                        char want[128];
                        snprintf(want, sizeof(want), "`%s`", row->fallback);
                        if (cell[0] == '`' && (len != strlen(want) || strncmp(cell, want, len) != 0))
                                fail_msg("%s gives %s the default %.*s, the table %s", docs[d], row->name,
                                         (int) len, cell, want);
                }
                if (strcmp(docs[d], "README.md") == 0 && rows > 10)
                        fail_msg("README.md's table lists %u variables: at most ten (the rest is mcp-execd(8)'s)",
                                 rows);
        }
        documents_free(docs);
}

/* mcp-execd(8): the tag lines (after .TP) of .SH ENVIRONMENT name the variables, as
 * '.BR NAME " (default)"' or several joined with '", "'. */
static void test_man(void **state) {
        _cleanup_free_ char *man_path = src_path("units/mcp-execd.8");
        _cleanup_free_ char *text = read_all(man_path);

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
                                continue; /* test_names() says so */
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

/* GitHub's anchor of a heading: lowercased, letters, digits, '-' and '_' kept (and bytes of
 * UTF-8 sequences), spaces made '-', everything else dropped. */
static void heading_slug(const char *h, char *out, size_t size) {
        size_t n = 0;
        for (; *h && n + 1 < size; h++) {
                unsigned char c = *h;
                if (isalnum(c) || c == '-' || c == '_' || c >= 0x80)
                        out[n++] = tolower(c);
                else if (c == ' ')
                        out[n++] = '-';
        }
        out[n] = '\0';
}

static bool has_anchor(const char *path, const char *anchor) {
        _cleanup_free_ char *text = read_all(path);
        bool fence = false;
        char *p = text, *line;
        while ((line = next_line(&p))) {
                if (strncmp(line, "```", 3) == 0)
                        fence = !fence;
                if (fence || line[0] != '#')
                        continue;
                const char *h = line + strspn(line, "#");
                h += strspn(h, " ");
                char slug[512];
                heading_slug(h, slug, sizeof(slug));
                if (strcmp(slug, anchor) == 0)
                        return true;
        }
        return false;
}

/* Every "](target)" of a document outside code: an http(s) or mailto link, or a file of the
 * repository (with a heading when it names one). */
static void check_links(const char *doc) {
        _cleanup_free_ char *path = src_path(doc);
        _cleanup_free_ char *text = read_all(path);
        _cleanup_free_ char *dir = strdup(path);
        assert_non_null(dir);
        *strrchr(dir, '/') = '\0';
        bool fence = false;
        char *p = text, *line;
        while ((line = next_line(&p))) {
                if (strncmp(line, "```", 3) == 0)
                        fence = !fence;
                if (fence)
                        continue;
                for (char *q = strstr(line, "]("); q; q = strstr(q + 1, "](")) {
                        char *t = q + 2;
                        size_t len = strcspn(t, ") ");
                        _cleanup_free_ char *target = strndup(t, len);
                        assert_non_null(target);
                        if (strncmp(target, "https://", 8) == 0 || strncmp(target, "http://", 7) == 0 ||
                            strncmp(target, "mailto:", 7) == 0)
                                continue;
                        if (target[0] == '/')
                                fail_msg("%s links %s: an absolute path, outside the repository", doc, target);
                        char *hash = strchr(target, '#');
                        const char *anchor = NULL;
                        if (hash) {
                                *hash = '\0';
                                anchor = hash + 1;
                        }
                        _cleanup_free_ char *file = NULL;
                        if (target[0] == '\0')
                                file = strdup(path);
                        else
                                assert_true(asprintf(&file, "%s/%s", dir, target) >= 0);
                        assert_non_null(file);
                        char real[PATH_MAX];
                        if (!realpath(file, real))
                                fail_msg("%s links %s, which does not exist", doc, target);
                        size_t rl = strlen(root_real);
                        if (strncmp(real, root_real, rl) != 0 || (real[rl] != '/' && real[rl] != '\0'))
                                fail_msg("%s links %s, which is outside the repository", doc, target);
                        struct stat st;
                        if (anchor && *anchor && stat(real, &st) == 0 && S_ISREG(st.st_mode) &&
                            strlen(real) > 3 && strcmp(real + strlen(real) - 3, ".md") == 0 &&
                            !has_anchor(real, anchor))
                                fail_msg("%s links %s#%s: no such heading there", doc, target, anchor);
                }
        }
}

static void test_links(void **state) {
        char **docs = documents(true, false);
        for (size_t d = 0; docs[d]; d++)
                check_links(docs[d]);
        documents_free(docs);
}

int main(int argc, char *argv[]) {
        if (argc != 2) {
                fprintf(stderr, "usage: %s SOURCE_ROOT\n", argv[0]);
                return 2;
        }
        src_root = argv[1];
        if (!realpath(src_root, root_real)) {
                fprintf(stderr, "%s: %m\n", src_root);
                return 2;
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_man),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_markdown_tables),
                cmocka_unit_test(test_links),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
