/* spawn.c: a held sandbox whose Python will run our launcher (spawn.h), shared by pool.c and the
 * Python sessions so that both are built exactly like a run. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "exec-result.h"
#include "spawn.h"

int run_launcher_spawn(Proc *p, const RunLauncherSpec *spec) {
        _cleanup_close_ int dfd = proc_staging_make(p, spec->staging);
        if (dfd < 0)
                return dfd;
        int r = fd_write_file_at(dfd, EXEC_LAUNCHER_NAME, spec->launcher, spec->launcher_len, 0600);
        if (r < 0)
                return r;
        return proc_spawn(p, &(ProcSpawn) { .python = spec->python, .env_dir = spec->env_dir,
                                            .script = EXEC_LAUNCHER_NAME, .background = spec->background,
                                            .egress_port = spec->egress_port });
}

char *run_launcher_warm_head(const char *modules) {
        const char *list = modules ?: "";
        size_t n = strlen(list);
        char *head = malloc(16 + 4 * n + 8);
        if (!head)
                return NULL;
        char *w = stpcpy(head, "_WARM = (");
        for (const char *s = list; *s;) {
                size_t k = strcspn(s, ",");
                if (k > 0) {
                        *w++ = '"';
                        memcpy(w, s, k);
                        w += k;
                        w = stpcpy(w, "\", ");
                }
                s += k;
                if (*s == ',')
                        s++;
        }
        stpcpy(w, ")\n");
        return head;
}

static char *message_record(char *w, const char *name, const void *data, size_t len) {
        uint32_t nl = (uint32_t) strlen(name);
        uint64_t dl = len;
        for (int i = 0; i < 4; i++)
                *w++ = (char) (nl >> (8 * i));
        for (int i = 0; i < 8; i++)
                *w++ = (char) (dl >> (8 * i));
        memcpy(w, name, nl);
        w += nl;
        if (len)
                memcpy(w, data, len);
        return w + len;
}

char *run_launcher_message(const char *first, const char *code, size_t code_len, const ExecInputFile *files,
                           size_t n_files, const char *tail, size_t tail_len, size_t *ret_len) {
        size_t body = 12 + strlen(first) + code_len;
        for (size_t i = 0; i < n_files; i++)
                body += 12 + strlen(files[i].name) + files[i].len;
        char *buf = malloc(8 + body + tail_len + 1);
        if (!buf)
                return NULL;
        char *w = buf;
        for (int i = 0; i < 8; i++)
                *w++ = (char) ((uint64_t) body >> (8 * i));
        w = message_record(w, first, code, code_len);
        for (size_t i = 0; i < n_files; i++)
                w = message_record(w, files[i].name, files[i].data, files[i].len);
        if (tail_len)
                memcpy(w, tail, tail_len);
        *ret_len = 8 + body + tail_len;
        return buf;
}
