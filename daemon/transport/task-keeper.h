/* task-keeper.h: ended tasks kept on disk across a restart, a stop, a package upgrade and a reboot
 * of the daemon (issue 33.3; docs/tasks.md, "Restarts"). Each is a file of the state directory's
 * tasks/ (systemd's StateDirectory=, $STATE_DIRECTORY: /var/lib/mcp-execd), named by the task's
 * id, mode 0600 in a directory of mode 0700: task.h's record (a text head, then the packed reply),
 * written when the task ends, its head again when its owner is told how, removed when the task
 * expires or is evicted. The next daemon puts them back in its store before it serves. */
#pragma once

#include "cleanup.h"
#include "task.h"

/* The directory below the state directory; its files are named by task ids. A name starting with
 * '.' is a record being written (renamed to its id once whole): one left is a daemon's that died
 * meanwhile, removed at the next start. */
#define TASK_KEEPER_DIR "tasks"

typedef struct TaskKeeperDir TaskKeeperDir;

/* Opens (makes, mode 0700) state_dir/tasks. 0, or -errno with *reterr_what naming the step. */
int task_keeper_open(const char *state_dir, TaskKeeperDir **ret, const char **reterr_what);
/* Closes the directory; the files stay (what is kept outlives the daemon). After the store's
 * task_store_done(): a store it keeps must not drop tasks into a freed keeper. */
TaskKeeperDir *task_keeper_free(TaskKeeperDir *k);
DEFINE_POINTER_CLEANUP(TaskKeeperDir, task_keeper_free)

/* Makes s keep its ended tasks of a 2026 tenant (owner "tenant:<name>": those of a 2025 session or
 * of stdio's client have no owner after a restart) in k's directory. */
void task_keeper_install(TaskKeeperDir *k, TaskStore *s);

/* Puts the tasks kept in k's directory back in s, before anything is served; now_mono and now_real
 * are CLOCK_MONOTONIC and CLOCK_REALTIME. A file that cannot be read, is not a record of its name,
 * is not the daemon's own with mode 0600, has expired or does not fit is removed (logged, but for
 * expiry). Returns how many came back. */
unsigned task_keeper_adopt(TaskKeeperDir *k, TaskStore *s, uint64_t now_mono, uint64_t now_real);
