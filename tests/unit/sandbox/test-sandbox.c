/* test-sandbox.c: sandbox/ through its API: spawn real runs of Python snippets and check what they saw. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fd-util.h"
#include "sandbox.h"

#define PYTHON "/usr/bin/python3"

static Sandbox *sbx;

typedef struct Run {
        char out[1 << 16];
        size_t out_len;
        char err[1 << 16];
        size_t err_len;
        SandboxReport reports[4];
        int n_reports;
        int init_code;   /* siginfo si_code of the init (CLD_EXITED, CLD_KILLED) */
        int status;      /* EXITED value, or -1 */
        int failed_errno; /* FAILED value, or 0 */
        bool stdout_eof_before_kill;
        uint64_t wall_usec;
} Run;

typedef struct RunOptions {
        const char *python;
        const char *stdin_data;
        bool kill_after_exit; /* after EXITED: check stdout is still open, then sandbox_child_kill */
        const char *extra_file; /* name=content placed next to the script */
        const char *extra_content;
        bool rlimits;
        char *staging_out; /* if set, the staging dir path is copied here (PATH_MAX) and kept */
} RunOptions;

static uint64_t mono_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void drain(int *fd, char *buf, size_t *len, size_t cap) {
        for (;;) {
                ssize_t n = read(*fd, buf + *len, cap - 1 - *len);
                if (n > 0) {
                        *len += (size_t) n;
                        buf[*len] = 0;
                        if (*len + 1 >= cap)
                                *len = 0; /* keep reading; tests never print that much */
                        continue;
                }
                if (n == 0)
                        *fd = safe_close(*fd);
                return;
        }
}

static int run_code_opts(const char *code, const RunOptions *o, Run *run) {
        char staging[] = "/tmp/test-sandbox-XXXXXX";
        assert_non_null(mkdtemp(staging));
        _cleanup_close_ int dfd = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        assert_int_equal(fd_write_file_at(dfd, "main.py", code, strlen(code), 0600), 0);
        if (o->extra_file)
                assert_int_equal(fd_write_file_at(dfd, o->extra_file, o->extra_content,
                                                  strlen(o->extra_content), 0600), 0);

        int in[2], out[2], err[2];
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        assert_int_equal(pipe2(err, O_CLOEXEC), 0);

        memset(run, 0, sizeof(*run));
        run->status = -1;
        SandboxRunSpec spec = {
                .python = o->python ?: PYTHON,
                .staging_dir = staging,
                .script = "main.py",
                .stdin_fd = in[0],
                .stdout_fd = out[1],
                .stderr_fd = err[1],
                .supervisor_cgroup_fd = -EBADF,
                .payload_cgroup_fd = -EBADF,
                .rlimits = o->rlimits,
        };
        SandboxChild c;
        uint64_t t0 = mono_usec();
        int r = sandbox_spawn(sbx, &spec, &c);
        close(in[0]);
        close(out[1]);
        close(err[1]);
        if (r < 0) {
                close(in[1]);
                close(out[0]);
                close(err[0]);
                return r;
        }
        assert_int_equal(sandbox_child_release(&c), 0);

        if (o->stdin_data)
                assert_int_equal(fd_write_all(in[1], o->stdin_data, strlen(o->stdin_data)), 0);
        close(in[1]);

        int ofd = out[0], efd = err[0];
        fd_set_nonblock(ofd, true);
        fd_set_nonblock(efd, true);
        bool done = false, killed = false;
        uint64_t deadline = mono_usec() + 120 * 1000000ULL;
        uint64_t exited_at = 0;

        while (ofd >= 0 || efd >= 0 || !done) {
                assert_true(mono_usec() < deadline);
                struct pollfd p[3] = {
                        { .fd = ofd, .events = POLLIN },
                        { .fd = efd, .events = POLLIN },
                        { .fd = done ? -1 : c.control_fd, .events = POLLIN },
                };
                int n = poll(p, 3, 100);
                assert_true(n >= 0 || errno == EINTR);
                if (p[0].revents)
                        drain(&ofd, run->out, &run->out_len, sizeof(run->out));
                if (p[1].revents)
                        drain(&efd, run->err, &run->err_len, sizeof(run->err));
                if (p[2].revents) {
                        SandboxReport rep;
                        ssize_t k = recv(c.control_fd, &rep, sizeof(rep), 0);
                        assert_int_equal(k, (ssize_t) sizeof(rep));
                        assert_true(run->n_reports < 4);
                        run->reports[run->n_reports++] = rep;
                        if (rep.kind == SANDBOX_REPORT_EXITED) {
                                run->status = rep.value;
                                done = true;
                                exited_at = mono_usec();
                        } else if (rep.kind == SANDBOX_REPORT_FAILED) {
                                run->failed_errno = rep.value;
                                done = true;
                        }
                }
                /* Something of the run still holds stdout after Python exited. */
                if (o->kill_after_exit && done && !killed && mono_usec() - exited_at > 300000) {
                        run->stdout_eof_before_kill = ofd < 0;
                        assert_int_equal(sandbox_child_kill(&c), 0);
                        killed = true;
                }
        }
        run->wall_usec = mono_usec() - t0;

        /* Closing control_fd lets the init go; then reap it. */
        c.control_fd = safe_close(c.control_fd);
        siginfo_t si = {};
        assert_int_equal(waitid(P_PIDFD, (id_t) c.pidfd, &si, WEXITED), 0);
        run->init_code = si.si_code;
        sandbox_child_done(&c);
        sandbox_child_done(&c); /* idempotent */

        if (o->staging_out)
                strcpy(o->staging_out, staging);
        else
                assert_int_equal(rm_rf(staging), 0);
        return 0;
}

static int run_code(const char *code, Run *run) {
        RunOptions o = {};
        return run_code_opts(code, &o, run);
}

static void print_run(const Run *run) {
        fprintf(stderr, "--- status %d failed_errno %d reports %d\n--- stdout:\n%s\n--- stderr:\n%s\n",
                run->status, run->failed_errno, run->n_reports, run->out, run->err);
        for (int i = 0; i < run->n_reports; i++)
                if (run->reports[i].kind == SANDBOX_REPORT_FAILED)
                        fprintf(stderr, "--- FAILED detail: %s\n", run->reports[i].detail);
}

/* Runs code that prints "OK" lines and nothing else on success. */
static void expect_ok(const char *code) {
        static Run run;
        assert_int_equal(run_code(code, &run), 0);
        if (run.status != 0 || strcmp(run.out, "OK\n") != 0)
                print_run(&run);
        assert_int_equal(run.status, 0);
        assert_string_equal(run.out, "OK\n");
}

/* ---- phase 1: the API contract ---- */

static void test_print_42(void **state) {
        static Run run;
        assert_int_equal(run_code("print(42)\n", &run), 0);
        if (run.status != 0)
                print_run(&run);
        assert_string_equal(run.out, "42\n");
        assert_int_equal(run.err_len, 0);
        assert_int_equal(run.n_reports, 2);
        assert_int_equal(run.reports[0].kind, SANDBOX_REPORT_STARTED);
        assert_true(run.reports[0].value > 1); /* Python is never PID 1 */
        assert_int_equal(run.reports[1].kind, SANDBOX_REPORT_EXITED);
        assert_true(WIFEXITED(run.status));
        assert_int_equal(WEXITSTATUS(run.status), 0);
        assert_true(run.reports[1].utime_usec + run.reports[1].stime_usec > 0);
        assert_true(run.reports[1].maxrss_bytes > 1024 * 1024);
        assert_int_equal(run.init_code, CLD_EXITED);
}

static void test_stdin_and_exit_code(void **state) {
        static Run run;
        RunOptions o = { .stdin_data = "hello sandbox\n" };
        assert_int_equal(run_code_opts("import sys\nprint(sys.stdin.read().upper(), end='')\n"
                                       "sys.stderr.write('err\\n')\nsys.exit(3)\n", &o, &run), 0);
        assert_string_equal(run.out, "HELLO SANDBOX\n");
        assert_string_equal(run.err, "err\n");
        assert_true(WIFEXITED(run.status));
        assert_int_equal(WEXITSTATUS(run.status), 3);
}

static void test_signal_status(void **state) {
        static Run run;
        assert_int_equal(run_code("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n", &run), 0);
        assert_true(WIFSIGNALED(run.status));
        assert_int_equal(WTERMSIG(run.status), SIGTERM);
}

static void test_exec_failure(void **state) {
        static Run run;
        RunOptions o = { .python = "/nonexistent/python3" };
        assert_int_equal(run_code_opts("print(1)\n", &o, &run), 0);
        if (run.n_reports != 1)
                print_run(&run);
        assert_int_equal(run.n_reports, 1);
        assert_int_equal(run.reports[0].kind, SANDBOX_REPORT_FAILED);
        assert_int_equal(run.failed_errno, ENOENT);
        assert_string_equal(run.reports[0].detail, "execve /nonexistent/python3");
        assert_int_equal(run.out_len, 0);
}

static void test_kill_ends_setsid_grandchild(void **state) {
        static Run run;
        RunOptions o = { .kill_after_exit = true };
        uint64_t t0 = mono_usec();
        assert_int_equal(run_code_opts(
                "import os, time\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                "    os.setsid()\n"
                "    if os.fork() == 0:\n"
                "        time.sleep(1000)\n"
                "    os._exit(0)\n"
                "os.waitpid(pid, 0)\n"
                "print('parent done', flush=True)\n", &o, &run), 0);
        assert_string_equal(run.out, "parent done\n");
        assert_true(WIFEXITED(run.status));
        assert_false(run.stdout_eof_before_kill); /* the sleeper held stdout… */
        assert_int_equal(run.init_code, CLD_KILLED); /* …until the kill ended the namespace */
        assert_true(mono_usec() - t0 < 30 * 1000000ULL);
}

static void test_release_eof_before_release(void **state) {
        /* Dropping a held run: the init exits at once without starting Python. */
        char staging[] = "/tmp/test-sandbox-XXXXXX";
        assert_non_null(mkdtemp(staging));
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        SandboxRunSpec spec = {
                .python = PYTHON, .staging_dir = staging, .script = "main.py",
                .stdin_fd = p[0], .stdout_fd = p[1], .stderr_fd = p[1],
                .supervisor_cgroup_fd = -EBADF, .payload_cgroup_fd = -EBADF,
        };
        SandboxChild c;
        assert_int_equal(sandbox_spawn(sbx, &spec, &c), 0);
        close(p[0]);
        close(p[1]);
        c.control_fd = safe_close(c.control_fd);
        siginfo_t si = {};
        assert_int_equal(waitid(P_PIDFD, (id_t) c.pidfd, &si, WEXITED), 0);
        assert_int_equal(si.si_code, CLD_EXITED);
        assert_int_equal(si.si_status, 0);
        sandbox_child_done(&c);
        assert_int_equal(sandbox_child_kill(&c), -ESRCH);
        rmdir(staging);
}

static void test_init_ignores_sigterm(void **state) {
        char staging[] = "/tmp/test-sandbox-XXXXXX";
        assert_non_null(mkdtemp(staging));
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        SandboxRunSpec spec = {
                .python = PYTHON, .staging_dir = staging, .script = "main.py",
                .stdin_fd = p[0], .stdout_fd = p[1], .stderr_fd = p[1],
                .supervisor_cgroup_fd = -EBADF, .payload_cgroup_fd = -EBADF,
        };
        SandboxChild c;
        assert_int_equal(sandbox_spawn(sbx, &spec, &c), 0);
        close(p[0]);
        close(p[1]);
        assert_int_equal(kill(c.pid, SIGTERM), 0);
        assert_int_equal(kill(c.pid, SIGINT), 0);
        assert_int_equal(kill(c.pid, SIGHUP), 0);
        usleep(100000);
        siginfo_t si = {};
        assert_int_equal(waitid(P_PIDFD, (id_t) c.pidfd, &si, WEXITED | WNOHANG), 0);
        assert_int_equal(si.si_pid, 0); /* still alive */
        assert_int_equal(sandbox_child_kill(&c), 0);
        assert_int_equal(waitid(P_PIDFD, (id_t) c.pidfd, &si, WEXITED), 0);
        assert_int_equal(si.si_code, CLD_KILLED);
        sandbox_child_done(&c);
        rmdir(staging);
}

static int setup(void **state) {
        SandboxConfig cfg = {
                .tmp_size_bytes = 8 * 1024 * 1024,
                .cpu_threads = 2,
                .rlimit_as_bytes = 1ULL << 30,
                .rlimit_nproc = 64,
                .rlimit_cpu_sec = 5,
        };
        char *reason = NULL;
        int r = sandbox_new(&cfg, &sbx, &reason);
        if (r < 0)
                fprintf(stderr, "sandbox_new: %s\n", reason ?: strerror(-r));
        free(reason);
        return r < 0 ? -1 : 0;
}

static int teardown(void **state) {
        sbx = sandbox_free(sbx);
        return 0;
}

/* TEST_SANDBOX_RUN=file.py runs one file through the sandbox and prints what happened (debugging). */
static int run_one(const char *path) {
        static char code[1 << 20];
        FILE *f = fopen(path, "re");
        if (!f)
                return 1;
        code[fread(code, 1, sizeof(code) - 1, f)] = 0;
        fclose(f);
        static Run run;
        if (setup(NULL) < 0)
                return 1;
        int r = run_code(code, &run);
        if (r < 0) {
                fprintf(stderr, "sandbox_spawn: %s\n", strerror(-r));
                return 1;
        }
        fputs(run.out, stdout);
        fputs(run.err, stderr);
        for (int i = 0; i < run.n_reports; i++)
                fprintf(stderr, "report kind=%d value=%d utime=%llu stime=%llu maxrss=%llu detail=%s\n",
                        run.reports[i].kind, run.reports[i].value,
                        (unsigned long long) run.reports[i].utime_usec,
                        (unsigned long long) run.reports[i].stime_usec,
                        (unsigned long long) run.reports[i].maxrss_bytes, run.reports[i].detail);
        fprintf(stderr, "wall %.1f ms\n", run.wall_usec / 1000.0);
        teardown(NULL);
        return 0;
}

int main(void) {
        const char *one = getenv("TEST_SANDBOX_RUN");
        if (one)
                return run_one(one);

        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_print_42),
                cmocka_unit_test(test_stdin_and_exit_code),
                cmocka_unit_test(test_signal_status),
                cmocka_unit_test(test_exec_failure),
                cmocka_unit_test(test_kill_ends_setsid_grandchild),
                cmocka_unit_test(test_release_eof_before_release),
                cmocka_unit_test(test_init_ignores_sigterm),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
