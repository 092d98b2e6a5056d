/* store-meta.h: what a Python session kept in systemd's fd store is, besides its fds: one record,
 * text, in a memfd of its own (pysession/store.c), read back by the next daemon, which may be a
 * newer package's. Pure: tests/unit/test-pysession-store.c.
 *
 *   mcp-execd-session 1        the format and its version; another version is not taken back
 *   gen <n>                    written anew after each call; "end <n>" closes the record, so a
 *   ...                        record cut short (a kill in its write) is refused
 *   end <n>
 *
 * Every other line is "<key> <value>"; a key this version does not know is skipped (a newer
 * daemon's addition), a known key given twice, a missing one or a bad value refuses the record
 * (the reading is base/record.c's, shared with kept tasks). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PYS_STORE_META_BYTES 4096
#define PYS_STORE_META_MAGIC "mcp-execd-session 1"
#define PYS_STORE_ID_HEX 16
#define PYS_STORE_HANDLE_MAX 49    /* pysession-internal.h's PYSESSION_HANDLE_MAX */
#define PYS_STORE_PRINCIPAL_MAX 32 /* mcp.h's MCP_PRINCIPAL_MAX */
#define PYS_STORE_UNIT_MAX 127

typedef struct PyStoreMeta {
        uint64_t gen;
        char id[PYS_STORE_ID_HEX + 1];      /* its run id: mcp-execd-run-<id>.scope */
        char id_hash[PYS_STORE_ID_HEX + 1]; /* what records name it by */
        char handle[PYS_STORE_HANDLE_MAX + 1];
        char principal[PYS_STORE_PRINCIPAL_MAX + 1]; /* whose: "" for none */
        char unit[PYS_STORE_UNIT_MAX + 1];
        pid_t pid;                 /* the sandbox's init, as its pidfd must say */
        uint64_t idle_usec;
        uint64_t t_open_usec, t_last_usec; /* CLOCK_MONOTONIC, which the fd store never outlives (a boot) */
        uint64_t calls;
        uint64_t cpu_user_usec, cpu_system_usec, duration_ms; /* the session's totals so far */
        bool warm;
} PyStoreMeta;

/* Writes m into buf (NUL-padded to PYS_STORE_META_BYTES). -EINVAL when a field cannot be written as
 * one line (the record would not read back), -ENOBUFS when it does not fit. */
int pys_store_meta_format(const PyStoreMeta *m, char buf[PYS_STORE_META_BYTES]);

/* Reads a record of n bytes (NUL-padded or not). 0, or -EBADMSG with *reterr_why (static text)
 * naming what is wrong. */
int pys_store_meta_parse(const char *buf, size_t n, PyStoreMeta *ret, const char **reterr_why);
