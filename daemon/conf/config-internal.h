/* config-internal.h: the table of MCP_EXEC_* variables, for config.c and for the tests that walk it
 * (the documentation check, the refusal and allocation-failure test, the fuzz target). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct ConfigVariable ConfigVariable;

/* One signature for every parser (systemd's ConfigParserCallback, src/shared/conf-parser.h, cut
 * down to what an environment variable has): value is never NULL; field points into the Config at
 * the row's offset. Returns 0, -ENOMEM, or any other negative errno to refuse the value (the
 * caller then names the variable, the value and the row's accepted text). */
typedef int (*ConfigParser)(const ConfigVariable *row, const char *value, void *field);

/* A rule that involves other variables, run after the row whether it was set or not (value NULL:
 * unset). Returns 0 or a negative errno with *reterr set (when reterr is not NULL). */
typedef int (*ConfigThen)(const ConfigVariable *row, const char *value, Config *c,
                          char *(*env)(const char *name), char **reterr);

typedef enum ConfigFlags {
        CONFIG_EMPTY_IS_UNSET = 1 << 0, /* "" means the default, as if the variable were not set */
        CONFIG_INFINITY = 1 << 1,       /* numbers: "infinity" stores UINT64_MAX */
        CONFIG_PERCENT_OF_RAM = 1 << 2, /* sizes: "50%" of physical memory */
} ConfigFlags;

struct ConfigVariable {
        const char *name;
        ConfigParser parse;
        size_t offset;             /* of the field in Config */
        uint64_t min, max;         /* numbers and sizes: the accepted range */
        const char *const *choices; /* parse_choice: the names, in the enum's order */
        int (*valid)(const char *s); /* parse_string: 0, -EINVAL or -ENOMEM; NULL: anything */
        ConfigFlags flags;
        const char *fallback;      /* parsed when the variable is unset; NULL: Config's built-in value */
        /* The name of an earlier uint32_t row this one may not exceed: set explicitly above it is
         * refused, left unset it follows a smaller bound. */
        const char *at_most;
        ConfigThen then;
        const char *accepted;      /* the refusal's "expected …" */
        const char *help;          /* the line of --help */
};

extern const ConfigVariable config_table[];
extern const size_t config_table_size;

/* The row named by the first n bytes of name, or NULL. */
const ConfigVariable *config_table_find(const char *name, size_t n);
