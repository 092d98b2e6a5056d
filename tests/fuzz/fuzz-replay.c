/* fuzz-replay.c: runs every file of a corpus through a fuzz target, without libFuzzer, so the
 * corpus is an ordinary test (built with gcc, and under ASan/UBSan in the asan tier).
 *   fuzz-replay-<target> <file or directory>...   */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static int replay_file(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                close(fd);
                return -1;
        }
        /* Exactly size bytes (never NUL-terminated), so an overread is caught by ASan. */
        size_t size = (size_t) st.st_size;
        uint8_t *data = malloc(size ? size : 1);
        if (!data) {
                close(fd);
                return -1;
        }
        size_t got = 0;
        while (got < size) {
                ssize_t n = read(fd, data + got, size - got);
                if (n <= 0)
                        break;
                got += (size_t) n;
        }
        close(fd);
        (void) LLVMFuzzerTestOneInput(data, got);
        free(data);
        return 0;
}


int main(int argc, char **argv) {
        size_t n = 0;
        int failed = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        failed |= replay_file(argv[i]) < 0;
                        n++;
                        continue;
                }
                struct dirent **names;
                int k = scandir(argv[i], &names, NULL, alphasort);
                if (k < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                for (int j = 0; j < k; j++) {
                        if (names[j]->d_name[0] != '.') {
                                char *p;
                                if (asprintf(&p, "%s/%s", argv[i], names[j]->d_name) < 0)
                                        return 1;
                                failed |= replay_file(p) < 0;
                                n++;
                                free(p);
                        }
                        free(names[j]);
                }
                free(names);
        }
        printf("replayed %zu inputs\n", n);
        if (n == 0) {
                fprintf(stderr, "no inputs: an empty corpus proves nothing\n");
                return 1;
        }
        return failed;
}
