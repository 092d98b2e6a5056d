/* tools-exec.c: the exec tool's definition (mcp-exec's interface): its description from the
 * configuration in force, its arguments and its output schema. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "tools-internal.h"

/* "1 MiB" style for descriptions, exact when it is not a round number. */
static void format_bytes(char *out, size_t n, uint64_t v) {
        static const char *const units[] = { "GiB", "MiB", "KiB" };
        static const unsigned shifts[] = { 30, 20, 10 };
        if (v == UINT64_MAX) {
                snprintf(out, n, "unlimited");
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (v >= ((uint64_t) 1 << shifts[i]) && v % ((uint64_t) 1 << shifts[i]) == 0) {
                        snprintf(out, n, "%" PRIu64 " %s", v >> shifts[i], units[i]);
                        return;
                }
        snprintf(out, n, "%" PRIu64 " bytes", v);
}

static char *exec_description(const McpLimits *l) {
        char out[32], code[32], in[32], mem[32], tmp[32], pids[32], cpu[32], fin[32], fret[32];
        format_bytes(out, sizeof(out), l->max_output_bytes);
        format_bytes(code, sizeof(code), l->max_code_bytes);
        format_bytes(in, sizeof(in), l->max_stdin_bytes);
        format_bytes(mem, sizeof(mem), l->memory_max_bytes);
        format_bytes(tmp, sizeof(tmp), l->tmp_size_bytes);
        format_bytes(fin, sizeof(fin), l->max_input_bytes);
        format_bytes(fret, sizeof(fret), l->max_return_bytes);
        if (l->pids_max == UINT64_MAX)
                snprintf(pids, sizeof(pids), "unlimited");
        else
                snprintf(pids, sizeof(pids), "%" PRIu64, l->pids_max);
        if (l->cpu_quota_percent == 0)
                snprintf(cpu, sizeof(cpu), "unlimited");
        else
                snprintf(cpu, sizeof(cpu), "%" PRIu32 "%% of one CPU", l->cpu_quota_percent);

        char *d = NULL;
        if (asprintf(&d,
                     "Run Python %s code in a fresh, locked-down sandbox with no network access, and return its "
                     "stdout, stderr, exit code and resource use. The code is saved as a script and run with "
                     "`python -I`; `stdin` is fed to it. Nothing persists between calls: each run starts from an "
                     "empty working directory. Importable: the standard library%s%s.\n"
                     "Limits in force: wall-clock timeout %" PRIu32 " s by default, at most %" PRIu32 " s "
                     "(timeout_s; 0 or absent means the default, larger values are clamped, negative means 1 s; "
                     "longer work belongs in a task, where the client supports MCP tasks, or in several calls "
                     "of one session_open session); "
                     "stdout and stderr together are capped at %s (the first bytes are kept and truncated is "
                     "true); code up to %s; stdin up to %s; memory %s; processes %s; CPU %s; /tmp %s; "
                     "limits enforced by %s (with rlimit, total memory across processes, memfds, kernel "
                     "memory and the CPU quota are not bounded: the result's unbounded lists them).\n"
                     "Files: `files` creates input files in the working directory before the code starts "
                     "(relative paths, text or base64, %s in total). Files the code writes to outputs/ (the "
                     "directory exists) come back: PNG, JPEG, GIF and WebP images as image content, other files "
                     "as embedded resources, up to %s in total; all are listed in `files`, with returned=false "
                     "for what did not fit. Figures need no ceremony: matplotlib uses the Agg backend, "
                     "plt.show() saves every open figure to outputs/figure-N.png (and closes it), and figures "
                     "still open when the code ends are saved the same way.\n"
                     "A non-zero exit_code, timed_out=true or truncated=true is a normal result, not a tool error.",
                     l->python_version ? l->python_version : "3",
                     l->packages && *l->packages ? ", " : "", l->packages ? l->packages : "",
                     l->default_timeout_s, l->max_timeout_s, out, code, in, mem, pids, cpu, tmp,
                     l->limits_by ? l->limits_by : "rlimit", fin, fret) < 0)
                return NULL;
        return d;
}

/* The kernel's account (issue 33.1): integers, null where the kernel gives none. */
static const char *const account_descriptions[_EXEC_ACCOUNT_MAX] = {
        [EXEC_ACCOUNT_CPU_PRESSURE_SOME_US] = "µs some task of the run waited for a CPU (its cgroup's cpu.pressure)",
        [EXEC_ACCOUNT_MEMORY_PRESSURE_SOME_US] = "µs some task of the run stalled on memory (reclaim, swap-in, "
                                                 "refaults: memory.pressure)",
        [EXEC_ACCOUNT_MEMORY_PRESSURE_FULL_US] = "µs all its tasks stalled on memory at once (memory.pressure full)",
        [EXEC_ACCOUNT_IO_PRESSURE_SOME_US] = "µs some task of the run waited for block I/O (io.pressure)",
        [EXEC_ACCOUNT_IO_PRESSURE_FULL_US] = "µs all its tasks waited for block I/O at once (io.pressure full)",
        [EXEC_ACCOUNT_IO_READ_BYTES] = "bytes the run read from block devices (io.stat)",
        [EXEC_ACCOUNT_IO_WRITE_BYTES] = "bytes the run wrote to block devices (io.stat)",
        [EXEC_ACCOUNT_PIDS_PEAK] = "the most tasks (processes and threads) the run had at once (pids.peak)",
};

json_t *mcp_exec_output_schema_new(void) {
        static const struct {
                const char *name, *type, *description;
        } fields[] = {
                { "stdout", "string", "captured stdout (invalid UTF-8 replaced by U+FFFD)" },
                { "stderr", "string", "captured stderr (invalid UTF-8 replaced by U+FFFD)" },
                { "exit_code", "integer", "exit status; -1 when timed out; -N when killed by signal N" },
                { "duration_ms", "integer", "wall time of the run itself, without queue wait" },
                { "truncated", "boolean", "true when output was dropped by the combined cap" },
                { "timed_out", "boolean", "true when the deadline killed the run" },
                { "signal", NULL, "name of the signal that ended the run, or null" },
                { "oom_killed", "boolean", "true when the memory limit killed a process of the run" },
                { "pids_limit_hit", "boolean", "true when the run hit its process limit" },
                { "memory_peak_bytes", "integer", "peak memory of the run" },
                { "cpu_user_us", "integer", "user CPU time of the run" },
                { "cpu_system_us", "integer", "system CPU time of the run" },
                { "limits", "string", "what enforced the limits: cgroup or rlimit" },
                { "queue_ms", "integer", "time spent waiting for a free slot" },
                { "warm", "boolean",
                  "true when a ready sandbox served the call (its interpreter already started)" },
                { "memory_at_start_bytes", "integer",
                  "memory already resident when the code started (a ready sandbox's interpreter and "
                  "preloaded modules; 0 for a cold run); included in memory_peak_bytes" },
                { "unbounded", "array",
                  "what the limits could not bound in this mode: empty with cgroup; with rlimit "
                  "memory_total, memfd, kernel_memory, cpu_quota" },
        };
        _cleanup_(json_decrefp) json_t *props = json_object();
        _cleanup_(json_decrefp) json_t *required = json_array();
        if (!props || !required)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                json_t *p = fields[i].type && strcmp(fields[i].type, "array") == 0
                        ? json_pack("{s:s, s:{s:s}, s:s}", "type", "array", "items", "type", "string",
                                    "description", fields[i].description)
                        : fields[i].type
                        ? json_pack("{s:s, s:s}", "type", fields[i].type, "description", fields[i].description)
                        : json_pack("{s:[s,s], s:s}", "type", "string", "null", "description",
                                    fields[i].description);
                if (!p || json_object_set_new(props, fields[i].name, p) < 0 ||
                    json_array_append_new(required, json_string(fields[i].name)) < 0)
                        return NULL;
        }
        for (ExecAccountField f = 0; f < _EXEC_ACCOUNT_MAX; f++) {
                _cleanup_free_ char *d = NULL;
                if (asprintf(&d, "%s; null in rlimit mode or where the kernel does not have it",
                             account_descriptions[f]) < 0)
                        return NULL;
                if (json_object_set_new(props, exec_account_name(f),
                                        json_pack("{s:[s,s], s:s}", "type", "integer", "null", "description", d)) < 0 ||
                    json_array_append_new(required, json_string(exec_account_name(f))) < 0)
                        return NULL;
        }
        json_t *schema = json_pack("{s:s, s:O, s:O}", "type", "object", "properties", props, "required", required);
        if (schema && mcp_files_output_schema_add(schema) < 0) {
                json_decref(schema);
                return NULL;
        }
        return schema;
}

static const McpToolArg exec_args[] = {
        { "code", MCP_ARG_CODE, true, "Python source to execute (required, " },
        { "timeout_s", MCP_ARG_TIMEOUT, false, "Wall-clock timeout in seconds (" },
        { "stdin", MCP_ARG_STDIN, false, "Data piped to the program's stdin (" },
        { "python", MCP_ARG_PYTHON, false, "Interpreter to run the code with, one of: " },
        { "files", MCP_ARG_FILES, false, NULL },
        { "session", MCP_ARG_SESSION, false, "Run the code in this Python session (from session_open) instead "
                                             "of a fresh sandbox: its variables, imports and /tmp are kept" },
};

const McpToolDef mcp_tool_exec = {
        .name = "exec",
        .tool = MCP_TOOL_EXEC,
        .title = "Run Python in a sandbox",
        .description_new = exec_description,
        .output_schema_new = mcp_exec_output_schema_new,
        .args = exec_args,
        .n_args = ELEMENTSOF(exec_args),
};
