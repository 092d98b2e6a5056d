/* exec-result.h: a run as the rooms that make it and the protocol that reports it both see it: the
 * files it is given, the files it leaves, what it produced and used. Plain data; mcp/ encodes it,
 * run/ and pysession/ fill it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec-account.h"

struct json_t;

/* The run's own files in its working directory: the code, and the launcher that runs it (saves
 * figures, then deletes itself). Input files may not take these names. */
#define EXEC_SCRIPT_NAME "main.py"
#define EXEC_LAUNCHER_NAME ".mcp-execd-launch.py"

/* The longest name an input file may have (a relative path), in bytes. */
#define EXEC_FILE_NAME_MAX_BYTES 240

/* One file of the `files` argument (files.c), created in the working directory before the run. */
typedef struct ExecInputFile {
        const char *name; /* validated relative path: no absolute path, . or .., empty segment or control */
        const char *data; /* decoded bytes (into McpExecArgs.files_data) */
        size_t len;
} ExecInputFile;

/* A file the run left in outputs/ (files.c encodes it). */
typedef struct ExecOutputFile {
        const char *name; /* relative to the working directory: "outputs/figure-1.png" */
        uint64_t bytes;   /* its size */
        const char *mime; /* from file_mime() */
        bool returned;    /* data holds all of it; else it did not fit the return limits */
        const char *data;
        size_t len;
} ExecOutputFile;

/* A run's traffic through its egress proxy (issue 32.3): by host and port asked for, allowed or
 * not; bytes, never content. */
typedef struct ExecEgressHost {
        const char *host;
        uint16_t port;
        bool allowed;
        unsigned connections;
        uint64_t sent, received;
} ExecEgressHost;

typedef struct ExecEgress {
        uint64_t sent, received;
        unsigned connections, denied;
        const ExecEgressHost *hosts;
        size_t n_hosts;
        bool hosts_truncated;
} ExecEgress;

/* What a finished run produced, in the daemon's terms. Output bytes are raw (the encoder
 * repairs UTF-8). */
typedef struct ExecResult {
        const char *stdout_data;
        size_t stdout_len;
        const char *stderr_data;
        size_t stderr_len;
        int exit_code;
        uint64_t duration_ms;
        bool truncated;
        bool timed_out;
        const char *signal; /* "SIGKILL", or NULL */
        bool oom_killed;
        bool pids_limit_hit;
        uint64_t memory_peak_bytes;
        uint64_t cpu_user_us;
        uint64_t cpu_system_us;
        const char *limits; /* "cgroup" or "rlimit"; with "rlimit" the result's `unbounded` lists
                             * MCP_RLIMIT_UNBOUNDED (README, "Limits of rlimit mode") */
        uint64_t queue_ms;
        struct json_t *extra; /* a JSON object whose members are added to the result (borrowed), or NULL */
        const ExecOutputFile *files; /* outputs/, sorted by name; returned ones become content items */
        size_t n_files;
        uint64_t files_unlisted;    /* entries beyond the listing limit */
        const char *run_id;         /* names embedded resources (mcp-execd://run/<id>/outputs/…) */
        bool warm;                  /* served by a ready sandbox (issue 16) */
        uint64_t memory_at_start_bytes; /* resident when the code was released (a ready sandbox's
                                         * interpreter and preload); 0 for a cold run */
        const ExecEgress *egress;   /* the run could reach hosts (issue 32): what it did; NULL: it had no
                                     * network, and the result has no `egress` */
        ExecAccount account;        /* the kernel's account beyond CPU and memory (cgroup modes) */
} ExecResult;
