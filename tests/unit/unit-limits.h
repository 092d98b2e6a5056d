/* unit-limits.h: the McpLimits that the unit tests and the fuzz target of mcp/ serve under. Small,
 * so every limit is reachable with short arguments. No cmocka here: the fuzz target includes it. */
#pragma once

#include "mcp.h"

static const McpLimits unit_limits = {
        .default_timeout_s = 30,
        .max_timeout_s = 60,
        .max_code_bytes = 200,
        .max_stdin_bytes = 10,
        .max_output_bytes = 4096,
        .memory_max_bytes = 256u << 20,
        .pids_max = 128,
        .cpu_quota_percent = 50,
        .tmp_size_bytes = 64u << 20,
        .python_version = "3.11.2",
        .packages = "numpy, pandas",
        .limits_by = "rlimit",
        .pythons = "python3,pypy3",
        .sources = "the wheelhouse /w",
        .max_input_bytes = 48,
        .max_return_bytes = 4096,
};
