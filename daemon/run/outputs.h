/* outputs.h: reading back the files a run left in outputs/ of its working directory (issue 10),
 * through the run's own root while its init is alive, never following a link, bounded in entries,
 * bytes and files. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "exec-result.h"

/* Entries listed in the result; beyond, only counted (files_unlisted). */
#define OUTPUTS_LIST_MAX 1000
/* Entries looked at in all (the walk stops there: the count of unlisted ones is then a floor). */
#define OUTPUTS_SCAN_MAX 100000
/* Files whose bytes are returned, at most. */
#define OUTPUTS_RETURN_MAX 32
/* Subdirectories of outputs/ descended into: levels, and directories in all (empty directories
 * never fill the listing, so they need their own bound). */
#define OUTPUTS_DEPTH_MAX 4
#define OUTPUTS_DIRS_MAX 256

typedef struct Outputs {
        ExecOutputFile *files; /* sorted by name (version order: figure-2 before figure-10) */
        size_t n_files;
        uint64_t unlisted;
        uint64_t returned_bytes;
} Outputs;

/* Reads outputs/ below workdir (e.g. "tmp") of the filesystem seen by process pid (the run's init,
 * alive and not reaped, so the pid is still its own), returning the bytes of at most
 * OUTPUTS_RETURN_MAX regular files and max_return_bytes in total. A missing outputs/ is no file.
 * Returns 0 or -errno (ret is then empty). */
/* as_uid/as_gid: the file-system ids to read the tree with (the run's host ids, when the daemon is
 * root), or -1 to read it with the daemon's own. */
int outputs_collect(pid_t pid, const char *workdir, uint64_t max_return_bytes, uid_t as_uid, gid_t as_gid,
                    Outputs *ret);

/* The same below an already open root directory (tests). */
int outputs_collect_at(int rootfd, const char *workdir, uint64_t max_return_bytes, Outputs *ret);

void outputs_done(Outputs *o);
