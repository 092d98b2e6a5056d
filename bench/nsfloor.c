/* nsfloor.c: the kernel's price of a run's namespaces, nothing else (issue 16.5; bench/README.md).
 *   cc -O2 -o /tmp/nsfloor bench/nsfloor.c && /tmp/nsfloor 60 [/usr/bin/python3]
 * Interleaves n times: fork+execve python -I -c pass (plain), and clone3 into new user, PID,
 * network, IPC, UTS and mount namespaces (the flags of a run's init), then execve of the
 * same (namespaced). Prints the medians in ms. */
#define _GNU_SOURCE
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static char *const argv_py[] = { "python3", "-I", "-c", "pass", NULL };
static const char *py = "/usr/bin/python3";

static double one(uint64_t flags) {
        double t = now();
        struct clone_args ca = { .flags = flags, .exit_signal = SIGCHLD };
        pid_t pid = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
        if (pid < 0) {
                perror("clone3");
                exit(1);
        }
        if (pid == 0) {
                execv(py, argv_py);
                _exit(127);
        }
        int st;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "child failed\n");
                exit(1);
        }
        return now() - t;
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv) {
        int n = argc > 1 ? atoi(argv[1]) : 60;
        if (argc > 2)
                py = argv[2];
        const struct { const char *name; uint64_t flags; } modes[] = {
                { "plain fork+exec", 0 },
                { "user namespace", CLONE_NEWUSER },
                { "user+pid", CLONE_NEWUSER | CLONE_NEWPID },
                { "user+net", CLONE_NEWUSER | CLONE_NEWNET },
                { "user+mount", CLONE_NEWUSER | CLONE_NEWNS },
                { "a run's six", CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS },
        };
        enum { M = sizeof(modes) / sizeof(modes[0]) };
        double *r[M];
        for (int m = 0; m < M; m++)
                r[m] = calloc((size_t) n, sizeof(double));
        for (int i = 0; i < n + 3; i++)
                for (int m = 0; m < M; m++) {
                        double d = one(modes[m].flags);
                        if (i >= 3)
                                r[m][i - 3] = d;
                        usleep(20000);
                }
        for (int m = 0; m < M; m++) {
                qsort(r[m], (size_t) n, sizeof(double), cmp);
                printf("%s\t%.3f\n", modes[m].name, r[m][n / 2]);
        }
        return 0;
}
