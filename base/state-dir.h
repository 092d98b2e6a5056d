/* state-dir.h: the daemon's private directory below a base (RUNTIME_DIRECTORY, TMPDIR or /tmp),
 * with a lock its daemon holds for its whole life, so that the next daemon to start removes what
 * one that was killed (SIGKILL, a crash) left behind: its callers' staged code, input files and
 * outputs (issue 29 #8). */
#pragma once

#define STATE_DIR_PREFIX "mcp-execd."

/* Makes base/mcp-execd.XXXXXX (0700) and its lock, locked. *ret_path is malloc'd; *ret_lock_fd is
 * to be held open until the directory is removed (closing it, or dying, releases the lock).
 * Returns 0 or -errno. */
int state_dir_new(const char *base, char **ret_path, int *ret_lock_fd);

/* Removes every base/mcp-execd.XXXXXX of this euid whose lock no process holds: a daemon that died
 * without removing it. Directories without a lock (an older version's, or one being made) and
 * other users' are left alone. Returns how many were removed. */
unsigned state_dirs_clean_stale(const char *base);
