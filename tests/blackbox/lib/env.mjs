// Where the binary is and which environment a daemon under test gets.
//
// The binary comes from $MCP_EXECD (run.sh sets it from its argument). The environment is
// built explicitly, never inherited wholesale: a test says exactly which MCP_EXEC_* it wants.

import fs from 'node:fs';

/** Absolute path of the mcp-execd binary under test ($MCP_EXECD). Throws if unusable. */
export function binaryPath() {
    const p = process.env.MCP_EXECD;
    if (!p) throw new Error('MCP_EXECD is not set: run tests through run.sh <path to mcp-execd>');
    fs.accessSync(p, fs.constants.X_OK);
    return p;
}

/** PATH given to the daemon: the system's, so `python3` is /usr/bin/python3, not a pyenv shim. */
export const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The environment for a daemon: PATH, HOME, MCP_EXEC_CGROUP (from $BLACKBOX_CGROUP, default
 * "none": the dev machines have no systemd and no cgroup v2), then `extra`.
 * A key in `extra` whose value is undefined is removed (to test a variable being unset).
 */
export function daemonEnv(extra = {}) {
    const env = {
        PATH: SYSTEM_PATH,
        HOME: process.env.HOME ?? '/root',
        MCP_EXEC_CGROUP: process.env.BLACKBOX_CGROUP ?? 'none',
    };
    // $BLACKBOX_PASS_ENV: names of variables copied from the runner's own environment (the asan
    // tier passes ASAN_OPTIONS and UBSAN_OPTIONS so that a sanitizer report is fatal in the daemon).
    for (const k of (process.env.BLACKBOX_PASS_ENV ?? '').split(/\s+/).filter(Boolean)) {
        if (process.env[k] !== undefined) env[k] = process.env[k];
    }
    // BLACKBOX_POOL=off: no ready sandboxes unless a test asks for them (a test file that proves
    // something of the cold path sets it).
    if (process.env.BLACKBOX_POOL === 'off') env.MCP_EXEC_WARM_POOL = '0';
    for (const [k, v] of Object.entries(extra)) {
        if (v === undefined) delete env[k];
        else env[k] = String(v);
    }
    return env;
}

/** Promise that resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
