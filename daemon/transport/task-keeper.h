/* task-keeper.h: ended tasks kept across a restart of the daemon in systemd's fd store (issue
 * 33.3; README "Tasks"): each a memfd (task.h's record: a text head, then the packed reply) under
 * TASK_KEEPER_PREFIX "<task id>", written when the task ends and its head again when its owner is
 * told how, removed when it expires or is evicted; the next daemon puts them back in its store. */
#pragma once

#include "fdstore.h"
#include "task.h"

#define TASK_KEEPER_PREFIX "task."

/* Makes s keep its ended tasks of a 2026 tenant (owner "tenant:<name>": those of a 2025 session or
 * of stdio's client have no owner after a restart). */
void task_keeper_install(TaskStore *s);

/* Puts the tasks kept in st back in s, before anything is served; one that cannot be read, has
 * expired or does not fit is dropped, logged. Takes the fds it uses. */
void task_keeper_adopt(TaskStore *s, FdStore *st);
