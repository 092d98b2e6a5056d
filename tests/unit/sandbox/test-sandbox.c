/* test-sandbox.c: sandbox/ through its API: spawn real runs of Python snippets and check what they saw. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <seccomp.h>

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
        ssize_t readback_size; /* -errno when it could not be read */
        unsigned char readback_head[16];
        uint64_t wall_usec;
        uint64_t spawn_usec;   /* sandbox_spawn() */
        uint64_t started_usec; /* from release to STARTED */
        uint64_t exited_usec;  /* from the start of the spawn to EXITED */
        int children_at_exited; /* the init's children when EXITED came (the init still lives), or -errno */
} Run;

typedef struct RunOptions {
        const char *python;
        const char *stdin_data;
        bool kill_after_exit; /* after EXITED: check stdout is still open, then sandbox_child_kill */
        const char *extra_file; /* name=content placed next to the script */
        const char *extra_content;
        bool rlimits;
        const char *readback; /* after EXITED: read /proc/<init>/root/tmp/<readback> like the daemon */
        const char *env_dir;  /* SandboxRunSpec.env_dir */
        uint16_t egress_port; /* SandboxRunSpec.egress_port: nobody accepts on the listener here, the
                               * kernel's backlog completes the run's connections */
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

/* The init's children, from the host: /proc/<init>/task/<init>/children. */
static int init_children(pid_t init) {
        char path[96], buf[256];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) init, (int) init);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        int count = 0;
        for (ssize_t i = 0; i < n; i++)
                if (buf[i] == ' ')
                        count++; /* "pid pid " */
        return count;
}

/* How the daemon gets a run's outputs: through the init's root while it is alive. */
static void readback(pid_t init, const char *name, Run *run) {
        char path[256];
        snprintf(path, sizeof(path), "/proc/%d/root" SANDBOX_WORK_DIR "/%s", (int) init, name);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                run->readback_size = -errno;
                return;
        }
        run->readback_size = st.st_size;
        (void) !read(fd, run->readback_head, sizeof(run->readback_head));
}

static int run_code_opts(const char *code, const RunOptions *o, Run *run) {
        char staging[] = "/tmp/test-sandbox-XXXXXX";
        assert_non_null(mkdtemp(staging));
        _cleanup_close_ int dfd = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        assert_int_equal(fd_write_file_at(dfd, "main.py", code, strlen(code), 0600), 0);
        if (o->extra_file) {
                /* "a/b/name": make the directories (private, like the daemon's) on the way */
                char dirs[256];
                snprintf(dirs, sizeof(dirs), "%s", o->extra_file);
                for (char *p = strchr(dirs, '/'); p; p = strchr(p + 1, '/')) {
                        *p = 0;
                        assert_true(mkdirat(dfd, dirs, 0700) == 0 || errno == EEXIST);
                        *p = '/';
                }
                assert_int_equal(fd_write_file_at(dfd, o->extra_file, o->extra_content,
                                                  strlen(o->extra_content), 0600), 0);
        }

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
                .env_dir = o->env_dir,
                .egress_port = o->egress_port,
        };
        SandboxChild c;
        uint64_t t0 = mono_usec();
        int r = sandbox_spawn(sbx, &spec, &c);
        run->spawn_usec = mono_usec() - t0;
        close(in[0]);
        close(out[1]);
        close(err[1]);
        if (r < 0) {
                close(in[1]);
                close(out[0]);
                close(err[0]);
                return r;
        }
        /* Every run: a listener exactly when egress was asked for. */
        if (o->egress_port == 0)
                assert_int_equal(c.egress_listen_fd, -EBADF);
        else
                assert_true(c.egress_listen_fd >= 0);
        uint64_t t_release = mono_usec();
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
                        if (rep.kind == SANDBOX_REPORT_STARTED)
                                run->started_usec = mono_usec() - t_release;
                        if (rep.kind == SANDBOX_REPORT_EXITED)
                                run->exited_usec = mono_usec() - t0;
                        if (rep.kind == SANDBOX_REPORT_EXITED) {
                                run->children_at_exited = init_children(c.pid);
                                if (o->readback)
                                        readback(c.pid, o->readback, run);
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
        /* The daemon takes the listener; sandbox_child_done() then leaves it alone. */
        _cleanup_close_ int listener = TAKE_FD(c.egress_listen_fd);
        sandbox_child_done(&c);
        sandbox_child_done(&c); /* idempotent */
        if (o->egress_port != 0)
                assert_true(fcntl(listener, F_GETFD) >= 0);

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

/* The run exited 0 having printed out (its whole stdout); else the test fails, the run shown. */
static void expect_printed(const Run *run, const char *out) {
        if (run->status != 0 || strcmp(run->out, out) != 0)
                print_run(run);
        assert_int_equal(run->status, 0);
        assert_string_equal(run->out, out);
}

/* Runs code that prints "OK" lines and nothing else on success. */
static void expect_ok(const char *code) {
        static Run run;
        assert_int_equal(run_code(code, &run), 0);
        expect_printed(&run, "OK\n");
}

/* ---- phase 1: the API contract ---- */

static void test_print_42(void **state) {
        static Run run;
        assert_int_equal(run_code("print(42)\n", &run), 0);
        expect_printed(&run, "42\n");
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
        /* Nothing else ran: the report says so, and the init (still alive) has no child. */
        assert_true(run.reports[1].flags & SANDBOX_REPORT_ALONE);
        assert_int_equal(run.children_at_exited, 0);
}

/* SANDBOX_REPORT_ALONE (issue 16.5: the daemon answers at once when it is set, before the init's
 * exit) is set exactly when no process of the run is left: checked against the init's children
 * while it still lives, with the kinds of leftovers a run can make. */
static void test_exited_alone_only_when_nothing_is_left(void **state) {
        static const struct {
                const char *code;
                bool alone;
        } cases[] = {
                /* a child Python waits for */
                { "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'], check=True)\n", true },
                /* a child that exited unwaited for: a zombie the init reaps before it reports */
                { "import os, time\nif os.fork() == 0:\n    os._exit(0)\ntime.sleep(0.2)\n", true },
                /* a background child with its stdio closed */
                { "import os, time\nif os.fork() == 0:\n    os.setsid()\n    os.closerange(0, 3)\n"
                  "    time.sleep(1000)\n", false },
                /* a grandchild reparented to the init once its parent exited */
                { "import os, time\npid = os.fork()\nif pid == 0:\n    if os.fork() == 0:\n"
                  "        os.closerange(0, 3)\n        time.sleep(1000)\n    os._exit(0)\n"
                  "os.waitpid(pid, 0)\n", false },
                /* a child forked just before Python exits */
                { "import os, time\nif os.fork() == 0:\n    os.closerange(0, 3)\n    time.sleep(1000)\nos._exit(0)\n",
                  false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                static Run run;
                assert_int_equal(run_code(cases[i].code, &run), 0);
                if (run.status != 0 || run.n_reports != 2)
                        print_run(&run);
                assert_int_equal(run.n_reports, 2);
                assert_int_equal(run.reports[1].kind, SANDBOX_REPORT_EXITED);
                assert_int_equal(WEXITSTATUS(run.status), 0);
                bool alone = run.reports[1].flags & SANDBOX_REPORT_ALONE;
                if (alone != cases[i].alone)
                        fprintf(stderr, "case %zu: alone %d, expected %d; the init's children: %d\n", i, alone,
                                cases[i].alone, run.children_at_exited);
                assert_int_equal(alone, cases[i].alone);
                if (alone)
                        assert_int_equal(run.children_at_exited, 0);
                else
                        assert_true(run.children_at_exited > 0);
        }
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

/* A held run (not yet released) in a new staging directory (staging: a "/tmp/test-sandbox-XXXXXX"
 * to fill in) holding main.py = code, or nothing when code is NULL. Its stdin is the read end of
 * the pipe in, its stdout and stderr the write end of the pipe out: those two ends are the run's
 * alone (closed here), in[1] and out[0] the caller's. The rest of the spec (cgroups, rlimits,
 * egress_port) comes from more. */
static void spawn_held_spec(char *staging, const char *code, int in[2], int out[2], const SandboxRunSpec *more,
                            SandboxChild *ret) {
        assert_non_null(mkdtemp(staging));
        if (code) {
                _cleanup_close_ int dfd = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_int_equal(fd_write_file_at(dfd, "main.py", code, strlen(code), 0600), 0);
        }
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        SandboxRunSpec spec = *more;
        spec.python = PYTHON;
        spec.staging_dir = staging;
        spec.script = "main.py";
        spec.stdin_fd = in[0];
        spec.stdout_fd = out[1];
        spec.stderr_fd = out[1];
        assert_int_equal(sandbox_spawn(sbx, &spec, ret), 0);
        close(in[0]);
        close(out[1]);
}

/* spawn_held_spec() with no more than the two cgroups in the spec. */
static void spawn_held(char *staging, const char *code, int in[2], int out[2], int supervisor_cgroup_fd,
                       int payload_cgroup_fd, SandboxChild *ret) {
        SandboxRunSpec more = { .supervisor_cgroup_fd = supervisor_cgroup_fd, .payload_cgroup_fd = payload_cgroup_fd };
        spawn_held_spec(staging, code, in, out, &more, ret);
}

/* A held run with nothing staged, the only holder of its pipes. */
static void spawn_held_empty(char *staging, SandboxChild *ret) {
        int in[2], out[2];
        spawn_held(staging, NULL, in, out, -EBADF, -EBADF, ret);
        close(in[1]);
        close(out[0]);
}

/* Closes c's control connection (before the release: drops the hold), waits for its init to exit
 * and is done with it. Returns how the init ended. */
static siginfo_t close_and_wait(SandboxChild *c) {
        c->control_fd = safe_close(c->control_fd);
        siginfo_t si = {};
        assert_int_equal(waitid(P_PIDFD, (id_t) c->pidfd, &si, WEXITED), 0);
        sandbox_child_done(c);
        return si;
}

static void test_release_eof_before_release(void **state) {
        /* Dropping a held run: the init exits at once without starting Python. */
        char staging[] = "/tmp/test-sandbox-XXXXXX";
        SandboxChild c;
        spawn_held_empty(staging, &c);
        siginfo_t si = close_and_wait(&c);
        assert_int_equal(si.si_code, CLD_EXITED);
        assert_int_equal(si.si_status, 0);
        assert_int_equal(sandbox_child_kill(&c), -ESRCH);
        rmdir(staging);
}

static void test_init_ignores_sigterm(void **state) {
        char staging[] = "/tmp/test-sandbox-XXXXXX";
        SandboxChild c;
        spawn_held_empty(staging, &c);
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

/* ---- phase 2: what the run sees and may do ---- */

static void test_identity(void **state) {
        expect_ok("import os, pwd, grp, socket\n"
                  "assert os.getresuid() == (65532,) * 3, os.getresuid()\n"
                  "assert os.getresgid() == (65532,) * 3, os.getresgid()\n"
                  "assert os.getgroups() == [], os.getgroups()\n"
                  "assert pwd.getpwuid(65532).pw_name == 'sandbox'\n"
                  "assert grp.getgrgid(65532).gr_name == 'sandbox'\n"
                  "st = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\n"
                  "for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'):\n"
                  "    assert int(st[k], 16) == 0, (k, st[k])\n"
                  "assert st['NoNewPrivs'].strip() == '1'\n"
                  "assert st['Seccomp'].strip() == '2'\n"
                  "assert socket.gethostname() == 'sandbox' and os.uname().nodename == 'sandbox'\n"
                  "assert os.getpid() != 1 and os.getppid() == 1\n"
                  "assert sorted(os.listdir('/proc/self/fd')) == ['0', '1', '2', '3']\n" /* 3: listdir's own */
                  "assert os.environ.get('HOME') == '/tmp' and 'MCP_EXEC_AUTH_TOKEN' not in os.environ\n"
                  "assert sorted(os.environ) == sorted(['PATH', 'HOME', 'TMPDIR', 'LANG', 'MPLBACKEND',\n"
                  "    'PYTHONDONTWRITEBYTECODE', 'PYPY_GC_NURSERY', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS',\n"
                  "    'MKL_NUM_THREADS', 'NUMEXPR_NUM_THREADS']), sorted(os.environ)\n"
                  "assert os.environ['OMP_NUM_THREADS'] == '2'\n"
                  "assert '0::/\\n' in open('/proc/self/cgroup').read()\n"
                  "assert os.getsid(0) == os.getpid()\n"
                  "print('OK')\n");
}

static void test_filesystem_view(void **state) {
        static Run run;
        RunOptions o = { .extra_file = "input.csv", .extra_content = "a,b\n1,2\n" };
        assert_int_equal(run_code_opts(
                "import os, errno, stat\n"
                "assert set(os.listdir('/')) <= {'bin', 'dev', 'etc', 'lib', 'lib32', 'lib64', 'libx32',\n"
                "    'proc', 'sbin', 'tmp', 'usr'}, os.listdir('/')\n"
                "for d in ('/run', '/home', '/root', '/var', '/srv', '/mnt', '/media', '/boot', '/sys', '/opt'):\n"
                "    assert not os.path.exists(d), d\n"
                "devs = sorted(n for n in os.listdir('/dev') if not os.path.islink('/dev/' + n))\n"
                "assert devs == ['full', 'null', 'random', 'urandom', 'zero'], devs\n"
                "assert os.getcwd() == '/tmp' and sorted(os.listdir('.')) == ['input.csv', 'main.py']\n"
                "assert open('input.csv').read() == 'a,b\\n1,2\\n'\n"
                "assert os.stat('input.csv').st_uid == 65532\n"
                "for p in ('/x', '/etc/x', '/usr/x', '/usr/bin/x', '/dev/x', '/proc/x'):\n"
                "    try:\n"
                "        open(p, 'w')\n"
                "    except OSError as e:\n"
                "        assert e.errno in (errno.EROFS, errno.EACCES, errno.ENOENT), (p, e)\n"
                "    else:\n"
                "        raise AssertionError(p + ' writable')\n"
                "for p in ('/etc/passwd', '/proc/sys/kernel/hostname', '/proc/sysrq-trigger'):\n"
                "    try:\n"
                "        open(p, 'w').write('x')\n"
                "    except OSError as e:\n"
                "        assert e.errno in (errno.EROFS, errno.EACCES, errno.ENOENT), (p, e)\n"
                "    else:\n"
                "        raise AssertionError(p + ' writable')\n"
                "mi = {l.split()[4]: l.split()[5] for l in open('/proc/self/mountinfo')}\n"
                "for m in ('/', '/usr', '/proc/sys', '/proc/irq', '/proc/bus', '/etc/fonts'):\n"
                "    assert mi[m].startswith('ro,'), (m, mi[m])\n"
                "assert mi['/tmp'].startswith('rw,')\n"
                "assert os.statvfs('/usr').f_flag & os.ST_NOSUID\n"
                "assert open('/dev/null', 'w').write('x') == 1 and len(open('/dev/urandom', 'rb').read(8)) == 8\n"
                "assert sorted(p for p in os.listdir('/proc') if p.isdigit()) == ['1', str(os.getpid())]\n"
                "for p in ('/proc/1/environ', '/proc/1/mem', '/proc/1/maps'):\n"
                "    try:\n"
                "        open(p, 'rb').read(1)\n"
                "    except PermissionError:\n"
                "        pass\n"
                "    else:\n"
                "        raise AssertionError(p + ' readable: the init is a copy of the daemon')\n"
                "try:\n"
                "    os.listdir('/proc/1/root')\n"
                "except PermissionError:\n"
                "    pass\n"
                "else:\n"
                "    raise AssertionError('/proc/1/root readable')\n"
                "open('out.txt', 'w').write('written by the run')\n"
                "print('OK')\n", &(RunOptions) { .extra_file = o.extra_file, .extra_content = o.extra_content,
                                                 .readback = "out.txt" }, &run), 0);
        expect_printed(&run, "OK\n");
        assert_int_equal(run.readback_size, strlen("written by the run"));
        assert_memory_equal(run.readback_head, "written by the ", 15);
}

static void test_tmp_cap_enospc(void **state) {
        /* setup() caps /tmp at 8 MiB. */
        expect_ok("import errno\n"
                  "f = open('/tmp/fill', 'wb')\n"
                  "n = 0\n"
                  "try:\n"
                  "    while n < 64 << 20:\n"
                  "        f.write(b'x' * 65536); f.flush(); n += 65536\n"
                  "except OSError as e:\n"
                  "    assert e.errno == errno.ENOSPC, e\n"
                  "else:\n"
                  "    raise AssertionError('wrote 64 MiB')\n"
                  "assert 7 << 20 <= n <= 8 << 20, n\n"
                  "print('OK')\n");
}

static void test_file_gone_next_run(void **state) {
        expect_ok("open('/tmp/left-behind', 'w').write('x')\nprint('OK')\n");
        expect_ok("import os\nassert not os.path.exists('/tmp/left-behind')\nprint('OK')\n");
}

static void test_seccomp_denials(void **state) {
        expect_ok("import ctypes, errno, os, socket, threading, subprocess\n"
                  "libc = ctypes.CDLL(None, use_errno=True)\n"
                  "def sys(nr, *a):\n"
                  "    r = libc.syscall(nr, *[ctypes.c_long(x) for x in a])\n"
                  "    return ctypes.get_errno() if r == -1 else 0\n"
                  "E = errno\n"
                  "cases = {\n"
                  "    'ptrace': (101, (16, 1, 0, 0), E.EPERM),\n"           /* PTRACE_ATTACH init */
                  "    'mount': (165, (0, 0, 0, 0, 0), E.EPERM),\n"
                  "    'umount2': (166, (0, 0), E.EPERM),\n"
                  "    'pivot_root': (155, (0, 0), E.EPERM),\n"
                  "    'unshare': (272, (0x10000000,), E.EPERM),\n"            /* CLONE_NEWUSER */
                  "    'setns': (308, (0, 0), E.EPERM),\n"
                  "    'keyctl': (250, (0, 0), E.EPERM),\n"
                  "    'add_key': (248, (0, 0, 0, 0, 0), E.EPERM),\n"
                  "    'bpf': (321, (0, 0, 0), E.EPERM),\n"
                  "    'perf_event_open': (298, (0, 0, -1, -1, 0), E.EPERM),\n"
                  "    'userfaultfd': (323, (0,), E.EPERM),\n"
                  "    'io_uring_setup': (425, (8, 0), E.EPERM),\n"
                  "    'io_uring_enter': (426, (0, 0, 0, 0, 0, 0), E.EPERM),\n"
                  "    'kexec_load': (246, (0, 0, 0, 0), E.EPERM),\n"
                  "    'init_module': (175, (0, 0, 0), E.EPERM),\n"
                  "    'acct': (163, (0,), E.EPERM),\n"
                  "    'swapoff': (168, (0,), E.EPERM),\n"
                  "    'reboot': (169, (0, 0, 0, 0), E.EPERM),\n"
                  "    'settimeofday': (164, (0, 0), E.EPERM),\n"
                  "    'personality': (135, (0x0040000,), E.EPERM),\n"      /* ADDR_NO_RANDOMIZE */
                  "    'open_by_handle_at': (304, (0, 0, 0), E.EPERM),\n"
                  "    'clone3': (435, (0, 0), E.ENOSYS),\n"
                  "    'clone NEWNET': (56, (0x40000000 | 17, 0, 0, 0, 0), E.EPERM),\n"
                  "    'clone NEWUSER': (56, (0x10000000 | 17, 0, 0, 0, 0), E.EPERM),\n"
                  "    'memfd_secret': (447, (0,), E.EPERM),\n"
                  "}\n"
                  "bad = {k: (os.strerror(sys(nr, *a)), os.strerror(want)) for k, (nr, a, want) in cases.items()\n"
                  "       if sys(nr, *a) != want}\n"
                  "assert not bad, bad\n"
                  "assert sys(135, 0xffffffff) == 0\n"  /* personality query still works */
                  "for fam, typ in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_DGRAM),\n"
                  "                 (socket.AF_INET6, socket.SOCK_STREAM), (socket.AF_NETLINK, socket.SOCK_RAW),\n"
                  "                 (socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_INET, socket.SOCK_RAW)):\n"
                  "    try:\n"
                  "        socket.socket(fam, typ)\n"
                  "    except OSError as e:\n"
                  "        assert e.errno == errno.EAFNOSUPPORT, (fam, e)\n"
                  "    else:\n"
                  "        raise AssertionError(fam)\n"
                  /* socketpair of INET, INET6, NETLINK, PACKET, VSOCK, XDP; with bad flag bits in the
                   * type the kernel would say EINVAL, the filter answers first. */
                  "sv = (ctypes.c_int * 2)()\n"
                  "for fam in (2, 10, 16, 17, 40, 44):\n"
                  "    for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_STREAM | 0x40000000):\n"
                  "        assert libc.socketpair(fam, typ, 0, sv) == -1, fam\n"
                  "        assert ctypes.get_errno() == errno.EAFNOSUPPORT, (fam, typ, ctypes.get_errno())\n"
                  "a, b = socket.socketpair(); a.send(b'x'); assert b.recv(1) == b'x'\n"
                  "socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()\n"
                  "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
                  "assert subprocess.run(['/bin/echo', 'hi'], capture_output=True).stdout == b'hi\\n'\n"
                  "print('OK')\n");
}

static void test_x32_is_killed(void **state) {
        static Run run;
        assert_int_equal(run_code("import ctypes, sys\n"
                                  "print('before', flush=True)\n"
                                  "ctypes.CDLL(None).syscall(0x40000000 | 39)\n" /* x32 getpid */
                                  "print('survived')\n", &run), 0);
        assert_string_equal(run.out, "before\n");
        assert_true(WIFSIGNALED(run.status));
        assert_int_equal(WTERMSIG(run.status), SIGSYS);
}

static void test_setuid_gains_nothing(void **state) {
        expect_ok("import os, subprocess\n"
                  "assert os.stat('/usr/bin/mount').st_mode & 0o4000\n" /* a setuid-root binary… */
                  "r = subprocess.run(['/usr/bin/mount', '-t', 'tmpfs', 'none', '/tmp'], capture_output=True)\n"
                  "assert r.returncode != 0, r\n"                       /* …that gains nothing */
                  "mi = [l.split()[4] for l in open('/proc/self/mountinfo')]\n"
                  "assert mi.count('/tmp') == 1, mi\n"
                  "print('OK')\n");
}

static void test_no_host_sockets_or_network(void **state) {
        expect_ok("import socket, os, errno\n"
                  "for p in ('/run/dbus/system_bus_socket', '/run/systemd/private', '/run/systemd/journal/socket',\n"
                  "          '/run/systemd/notify', '/var/run/docker.sock'):\n"
                  "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                  "    try:\n"
                  "        s.connect(p)\n"
                  "    except OSError as e:\n"
                  "        assert e.errno == errno.ENOENT, (p, e)\n"
                  "    else:\n"
                  "        raise AssertionError(p)\n"
                  "ifs = [l.split(':')[0].strip() for l in open('/proc/self/net/dev').read().splitlines()[2:]]\n"
                  "assert ifs == ['lo'], ifs\n"
                  "print('OK')\n");
}

/* ---- egress runs (SandboxRunSpec.egress_port): the daemon's proxy is the only way out ---- */

/* Without egress_port nothing changes: no listener (run_code_opts() checks it of every run), no
 * proxy variables, no socket but AF_UNIX, and nothing listening in the run's namespace. */
static void test_egress_absent(void **state) {
        expect_ok("import os, socket, errno\n"
                  "assert not [k for k in os.environ if k.lower().endswith('_proxy')], sorted(os.environ)\n"
                  "for fam in (socket.AF_INET, socket.AF_INET6):\n"
                  "    try:\n"
                  "        socket.socket(fam, socket.SOCK_STREAM)\n"
                  "    except OSError as e:\n"
                  "        assert e.errno == errno.EAFNOSUPPORT, (fam, e)\n"
                  "    else:\n"
                  "        raise AssertionError(fam)\n"
                  "assert open('/proc/self/net/tcp').read().splitlines()[1:] == []\n"
                  "print('OK')\n");
}

/* An egress run's filter: TCP sockets of AF_INET and AF_INET6 and nothing more (every type's low
 * bits, the flags, protocols in and around the allowed ones, garbage in the upper halves of the
 * arguments); the namespace routes nothing but lo; the run cannot take the listener's port. */
static void test_egress_seccomp(void **state) {
        static Run run;
        RunOptions o = { .egress_port = 3128 };
        assert_int_equal(run_code_opts(
                "import ctypes, errno, os, socket\n"
                "E = errno\n"
                "P = 3128\n"
                "for fam, typ, want in ((socket.AF_INET, socket.SOCK_DGRAM, E.EPROTONOSUPPORT),\n"
                "                       (socket.AF_INET, socket.SOCK_RAW, E.EPROTONOSUPPORT),\n"
                "                       (socket.AF_INET, socket.SOCK_SEQPACKET, E.EPROTONOSUPPORT),\n"
                "                       (socket.AF_INET6, socket.SOCK_DGRAM, E.EPROTONOSUPPORT),\n"
                "                       (socket.AF_INET6, socket.SOCK_RAW, E.EPROTONOSUPPORT),\n"
                "                       (socket.AF_NETLINK, socket.SOCK_RAW, E.EAFNOSUPPORT),\n"
                "                       (socket.AF_NETLINK, socket.SOCK_DGRAM, E.EAFNOSUPPORT),\n"
                "                       (socket.AF_PACKET, socket.SOCK_RAW, E.EAFNOSUPPORT),\n"
                "                       (socket.AF_VSOCK, socket.SOCK_STREAM, E.EAFNOSUPPORT),\n"
                "                       (socket.AF_ALG, socket.SOCK_SEQPACKET, E.EAFNOSUPPORT)):\n"
                "    try:\n"
                "        socket.socket(fam, typ)\n"
                "    except OSError as e:\n"
                "        assert e.errno == want, (fam, typ, e)\n"
                "    else:\n"
                "        raise AssertionError((fam, typ))\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "def sock(fam, typ, proto):\n"
                "    fd = libc.syscall(41, ctypes.c_long(fam), ctypes.c_long(typ), ctypes.c_long(proto))\n"
                "    if fd < 0:\n"
                "        return ctypes.get_errno()\n"
                "    os.close(fd)\n"
                "    return 0\n"
                "bad = {}\n"
                "for fam in (socket.AF_INET, socket.AF_INET6):\n"
                "    for typ in range(16):\n"
                "        for flags in (0, socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC):\n"
                "            for proto in (0, 6, 1, 5, 7, 17, 132, 255, 262, 1 << 32, (1 << 32) | 6):\n"
                "                want = 0 if typ == socket.SOCK_STREAM and proto in (0, 6) else E.EPROTONOSUPPORT\n"
                "                got = sock(fam, typ | flags, proto)\n"
                "                if got != want:\n"
                "                    bad[(fam, typ | flags, proto)] = got\n"
                "for fam in (0, *range(3, 10), *range(11, 46), -1, (1 << 32) | socket.AF_INET, (1 << 32) | socket.AF_UNIX):\n"
                "    got = sock(fam, socket.SOCK_STREAM, 0)\n"
                "    if got != E.EAFNOSUPPORT:\n"
                "        bad[(fam,)] = got\n"
                "assert not bad, bad\n"
                "assert sock(socket.AF_UNIX, socket.SOCK_STREAM, 0) == 0 and sock(socket.AF_UNIX, socket.SOCK_DGRAM, 0) == 0\n"
                "sv = (ctypes.c_int * 2)()\n"
                "for fam in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):\n"
                "    assert libc.socketpair(fam, socket.SOCK_STREAM, 0, sv) == -1, fam\n"
                "    assert ctypes.get_errno() == E.EAFNOSUPPORT, (fam, ctypes.get_errno())\n"
                "a, b = socket.socketpair(); a.send(b'x'); assert b.recv(1) == b'x'\n"
                "def conn(addr, fam=socket.AF_INET):\n"
                "    s = socket.socket(fam, socket.SOCK_STREAM)\n"
                "    try:\n"
                "        s.connect(addr)\n"
                "        return 0\n"
                "    except OSError as e:\n"
                "        return e.errno\n"
                "    finally:\n"
                "        s.close()\n"
                "got = {a: conn(a, f) for a, f in (((('127.0.0.1', P + 1)), socket.AF_INET), (('::1', P), socket.AF_INET6),\n"
                "                                  (('10.0.0.1', 80), socket.AF_INET), (('192.0.2.1', 443), socket.AF_INET),\n"
                "                                  (('2001:db8::1', 443), socket.AF_INET6))}\n"
                "want = {('127.0.0.1', P + 1): E.ECONNREFUSED, ('::1', P): E.ECONNREFUSED, ('10.0.0.1', 80): E.ENETUNREACH,\n"
                "        ('192.0.2.1', 443): E.ENETUNREACH, ('2001:db8::1', 443): E.ENETUNREACH}\n"
                "assert got == want, got\n"
                "for opt in (socket.SO_REUSEADDR, socket.SO_REUSEPORT):\n"
                "    s = socket.socket()\n"
                "    s.setsockopt(socket.SOL_SOCKET, opt, 1)\n"
                "    try:\n"
                "        s.bind(('127.0.0.1', P))\n"
                "    except OSError as e:\n"
                "        assert e.errno == E.EADDRINUSE, e\n"
                "    else:\n"
                "        raise AssertionError('bound the port of the listener')\n"
                "    s.close()\n"
                "print('OK')\n", &o, &run), 0);
        expect_printed(&run, "OK\n");
}

/* An egress run with its ends, the test playing the daemon's proxy. stdout and stderr share out. */
typedef struct EgressRun {
        SandboxChild c;
        int out;
        char output[1 << 14];
        size_t output_len;
} EgressRun;

/* Waits (60 s at most) for the run's next connection to the listener and accepts it, keeping what
 * the run writes meanwhile. The run ending first fails the test, with what it wrote. */
static int egress_accept(EgressRun *e) {
        uint64_t deadline = mono_usec() + 60 * 1000000ULL;
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = e->c.egress_listen_fd, .events = POLLIN },
                        { .fd = e->out, .events = POLLIN },
                };
                int n = poll(p, 2, 100);
                assert_true(n >= 0 || errno == EINTR);
                if (n > 0 && (p[0].revents & POLLIN)) {
                        struct sockaddr_in peer = {};
                        socklen_t len = sizeof(peer);
                        int fd = accept4(e->c.egress_listen_fd, (struct sockaddr *) &peer, &len, SOCK_CLOEXEC);
                        assert_true(fd >= 0);
                        assert_int_equal(peer.sin_family, AF_INET);
                        assert_int_equal(ntohl(peer.sin_addr.s_addr), INADDR_LOOPBACK);
                        return fd;
                }
                if (n > 0 && p[1].revents)
                        drain(&e->out, e->output, &e->output_len, sizeof(e->output));
                if (e->out < 0)
                        fail_msg("the run ended before it connected; it wrote:\n%s", e->output);
                if (mono_usec() >= deadline)
                        fail_msg("no connection from the run in 60 s; it wrote:\n%s", e->output);
        }
}

/* Reads from a connection of the run until buf holds n bytes, or `until` when it is non-NULL. */
static void conn_read(int fd, char *buf, size_t size, size_t n, const char *until) {
        size_t got = 0;
        buf[0] = 0;
        while (until ? !strstr(buf, until) : got < n) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                assert_int_equal(poll(&p, 1, 60000), 1);
                assert_true(got + 1 < size);
                ssize_t k = read(fd, buf + got, size - 1 - got);
                assert_true(k > 0);
                got += (size_t) k;
                buf[got] = 0;
        }
}

/* Whether pid has the socket of inode ino among its fds. */
static bool fd_table_has(pid_t pid, ino_t ino) {
        char path[64], want[64], link[128];
        snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
        snprintf(want, sizeof(want), "socket:[%llu]", (unsigned long long) ino);
        DIR *d = opendir(path);
        assert_non_null(d);
        bool found = false;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                        ssize_t k = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
                        if (k > 0) {
                                link[k] = 0;
                                found = found || strcmp(link, want) == 0;
                        }
                }
        closedir(d);
        return found;
}

/* Whether pid or a descendant of it (host pids) holds the socket; counts the processes seen. */
static bool tree_holds(pid_t pid, ino_t ino, int *count) {
        (*count)++;
        bool found = fd_table_has(pid, ino);
        char path[96], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) pid, (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        assert_true(n >= 0);
        buf[n] = 0;
        for (char *p = buf, *end; *p; p = end) {
                long child = strtol(p, &end, 10);
                if (end == p)
                        break;
                found = tree_holds((pid_t) child, ino, count) || found;
        }
        return found;
}

/* One HTTP exchange as the proxy: the run's request head starts with want; the answer is sent
 * and the connection closed. */
static void proxy_exchange(EgressRun *e, const char *want, const char *answer) {
        char head[4096];
        int fd = egress_accept(e);
        conn_read(fd, head, sizeof(head), 0, "\r\n\r\n");
        if (strncmp(head, want, strlen(want)) != 0)
                fail_msg("request head %s, expected it to start with %s", head, want);
        assert_int_equal(fd_write_all(fd, answer, strlen(answer)), 0);
        close(fd);
}

static const char egress_code[] =
        "P = %u\n"
        "CURL = %s\n"
        "import errno, os, socket, subprocess, urllib.request\n"
        "url = 'http://127.0.0.1:' + str(P)\n"
        "names = ('HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy')\n"
        "assert all(os.environ[n] == url for n in names), os.environ\n"
        "assert os.environ['NO_PROXY'] == os.environ['no_proxy'] == '', os.environ\n"
        "assert sorted(os.environ) == sorted(['PATH', 'HOME', 'TMPDIR', 'LANG', 'MPLBACKEND',\n"
        "    'PYTHONDONTWRITEBYTECODE', 'PYPY_GC_NURSERY', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS',\n"
        "    'MKL_NUM_THREADS', 'NUMEXPR_NUM_THREADS', 'NO_PROXY', 'no_proxy', *names]), sorted(os.environ)\n"
        "assert urllib.request.getproxies() == {'http': url, 'https': url, 'all': url}, urllib.request.getproxies()\n"
        "def links():\n"
        "    out = []\n"
        "    for f in os.listdir('/proc/self/fd'):\n"
        "        try:\n"
        "            out.append(os.readlink('/proc/self/fd/' + f))\n"
        "        except FileNotFoundError:\n"
        "            pass\n"
        "    return out\n"
        "assert not [l for l in links() if l.startswith('socket:')], links()\n"
        "tcp = [l.split() for l in open('/proc/self/net/tcp').read().splitlines()[1:]]\n"
        "assert [(t[1], t[3]) for t in tcp] == [('0100007F:' + format(P, '04X'), '0A')], tcp\n"
        "assert 'socket:[' + tcp[0][9] + ']' not in links()\n"
        "s = socket.create_connection(('127.0.0.1', P), timeout=60)\n"
        "s.sendall(b'ping')\n"
        "got = b''\n"
        "while len(got) < 4:\n"
        "    chunk = s.recv(4 - len(got))\n"
        "    assert chunk, got\n"
        "    got += chunk\n"
        "assert got == b'pong', got\n"
        "s.close()\n"
        "print(urllib.request.urlopen('http://example.com/u', timeout=60).read().decode())\n"
        "try:\n"
        "    urllib.request.urlopen('https://example.com/', timeout=60)\n"
        "except OSError as e:\n"
        "    print('Tunnel connection failed: 403' in str(e))\n"
        "if CURL:\n"
        "    print(subprocess.run(['curl', '-sS', 'http://example.com/c'], capture_output=True, timeout=60).stdout.decode())\n"
        "print('OK')\n";

/* The listener is the run's: bound to 127.0.0.1:port in the run's network namespace, the run's
 * connection to that address arrives on it, and bytes go both ways; no process of the run holds
 * it; Python's proxy variables point urllib (http and https) and curl at it. rlimits: the Python
 * child is forked before the id maps (SpawnPlan.mount_in_child), right after the listener left. */
static void egress_exchange(uint16_t port, bool rlimits) {
        bool curl = access("/usr/bin/curl", X_OK) == 0;
        char code[sizeof(egress_code) + 32];
        snprintf(code, sizeof(code), egress_code, (unsigned) port, curl ? "True" : "False");
        char staging[] = "/tmp/test-sandbox-XXXXXX";
        int in[2], out[2];
        static EgressRun e;
        memset(&e, 0, sizeof(e));
        SandboxRunSpec more = { .supervisor_cgroup_fd = -EBADF, .payload_cgroup_fd = -EBADF, .rlimits = rlimits,
                                .egress_port = port };
        spawn_held_spec(staging, code, in, out, &more, &e.c);
        close(in[1]);
        e.out = out[0];
        assert_int_equal(fd_set_nonblock(e.out, true), 0);

        int l = e.c.egress_listen_fd;
        assert_true(l >= 0);
        assert_true(fcntl(l, F_GETFD) & FD_CLOEXEC);
        int v = 0;
        socklen_t len = sizeof(v);
        assert_int_equal(getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &len), 0);
        assert_int_equal(v, 1);
        assert_int_equal(getsockopt(l, SOL_SOCKET, SO_PROTOCOL, &v, &len), 0);
        assert_int_equal(v, IPPROTO_TCP);
        struct sockaddr_in sa = {};
        len = sizeof(sa);
        assert_int_equal(getsockname(l, (struct sockaddr *) &sa, &len), 0);
        assert_int_equal(sa.sin_family, AF_INET);
        assert_int_equal(ntohs(sa.sin_port), port);
        assert_int_equal(ntohl(sa.sin_addr.s_addr), INADDR_LOOPBACK);
        /* Its network namespace is the init's, not ours. */
        _cleanup_close_ int netns = ioctl(l, SIOCGSKNS);
        assert_true(netns >= 0);
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int) e.c.pid);
        struct stat ns_sock, ns_init, ns_ours;
        assert_int_equal(fstat(netns, &ns_sock), 0);
        assert_int_equal(stat(path, &ns_init), 0);
        assert_int_equal(stat("/proc/self/ns/net", &ns_ours), 0);
        assert_int_equal(ns_sock.st_ino, ns_init.st_ino);
        assert_int_not_equal(ns_sock.st_ino, ns_ours.st_ino);

        assert_int_equal(sandbox_child_release(&e.c), 0);

        /* Bytes both ways; meanwhile Python waits for the answer, alive, and no process of the
         * run (the init and Python) holds the listener, while we do (the check sees what it looks
         * for). */
        int fd = egress_accept(&e);
        char buf[64];
        conn_read(fd, buf, sizeof(buf), 4, NULL);
        assert_string_equal(buf, "ping");
        struct stat st;
        assert_int_equal(fstat(l, &st), 0);
        assert_true(fd_table_has(getpid(), st.st_ino));
        int count = 0;
        assert_false(tree_holds(e.c.pid, st.st_ino, &count));
        assert_int_equal(count, 2);
        assert_int_equal(fd_write_all(fd, "pong", 4), 0);
        close(fd);

        proxy_exchange(&e, "GET http://example.com/u HTTP/1.1\r\n",
                       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi");
        proxy_exchange(&e, "CONNECT example.com:443 HTTP/1.",
                       "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        if (curl)
                proxy_exchange(&e, "GET http://example.com/c HTTP/1.1\r\n",
                               "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\ncurl");

        uint64_t deadline = mono_usec() + 60 * 1000000ULL;
        while (e.out >= 0) {
                assert_true(mono_usec() < deadline);
                struct pollfd p = { .fd = e.out, .events = POLLIN };
                assert_true(poll(&p, 1, 100) >= 0 || errno == EINTR);
                drain(&e.out, e.output, &e.output_len, sizeof(e.output));
        }
        const char *want = curl ? "hi\nTrue\ncurl\nOK\n" : "hi\nTrue\nOK\n";
        if (strcmp(e.output, want) != 0)
                fail_msg("the run wrote:\n%s", e.output);

        /* sandbox_child_done() closes the listener the daemon did not take. */
        close_and_wait(&e.c);
        assert_int_equal(e.c.egress_listen_fd, -EBADF);
        assert_int_equal(fcntl(l, F_GETFD), -1);
        assert_int_equal(errno, EBADF);
        assert_int_equal(rm_rf(staging), 0);
}

static void test_egress_listener(void **state) {
        egress_exchange(3128, false);
        egress_exchange(80, true); /* a privileged port: the init's namespace capabilities bind it */
}

static void test_scientific_stack(void **state) {
        static Run run;
        RunOptions o = { .readback = "fig.png" };
        assert_int_equal(run_code_opts("import numpy, pandas, yaml, jinja2, PIL.Image\n"
                                       "import matplotlib\n"
                                       "import matplotlib.pyplot as plt\n"
                                       "assert matplotlib.get_backend().lower() == 'agg'\n"
                                       "a = numpy.arange(6.0).reshape(2, 3)\n"
                                       "assert float((a @ a.T).sum()) == 83.0\n"
                                       "df = pandas.DataFrame({'x': [1, 2, 3]})\n"
                                       "assert int(df.x.sum()) == 6\n"
                                       "plt.plot([1, 2, 3]); plt.savefig('/tmp/fig.png')\n"
                                       "assert yaml.safe_load('a: 1') == {'a': 1}\n"
                                       "assert jinja2.Template('{{ x }}').render(x=5) == '5'\n"
                                       "assert PIL.Image.open('/tmp/fig.png').size[0] > 100\n"
                                       "print('OK')\n", &o, &run), 0);
        expect_printed(&run, "OK\n");
        assert_true(run.readback_size > 1000);
        assert_memory_equal(run.readback_head, "\x89PNG", 4);
}

static void test_rlimits(void **state) {
        static Run run;
        const char *code = "import resource as R\n"
                           "g = lambda r: R.getrlimit(r)[1]\n"
                           "print(g(R.RLIMIT_CORE), g(R.RLIMIT_NOFILE), g(R.RLIMIT_FSIZE), g(R.RLIMIT_AS),\n"
                           "      g(R.RLIMIT_NPROC) == 64, g(R.RLIMIT_CPU))\n";
        RunOptions with = { .rlimits = true };
        assert_int_equal(run_code_opts(code, &with, &run), 0);
        assert_string_equal(run.out, "0 1024 8388608 1073741824 True 5\n");
        assert_int_equal(run_code(code, &run), 0);
        assert_string_equal(run.out, "0 1024 8388608 -1 False -1\n");

        /* Without a cgroup nothing comes with the release, so the Python child is forked before
         * the id maps and builds the run's root itself (SpawnPlan.mount_in_child): it is the
         * init's first and only child, PID 2. With a cgroup the mount helper came first. */
        assert_int_equal(run_code_opts("import os\nprint(os.getpid(), os.getppid())\n", &with, &run), 0);
        assert_string_equal(run.out, "2 1\n");
        assert_int_equal(run_code("import os\nprint(os.getpid(), os.getppid())\n", &run), 0);
        assert_string_equal(run.out, "3 1\n");

        /* RLIMIT_NPROC holds (and is per run: every run has its own user namespace). */
        assert_int_equal(run_code_opts("import os, errno, time\n"
                                       "n = 0\n"
                                       "try:\n"
                                       "    while n < 200:\n"
                                       "        if os.fork() == 0:\n"
                                       "            time.sleep(30); os._exit(0)\n"
                                       "        n += 1\n"
                                       "except OSError as e:\n"
                                       "    assert e.errno == errno.EAGAIN, e\n"
                                       "print(n < 64)\n", &with, &run), 0);
        assert_string_equal(run.out, "True\n");
}

static void test_concurrent_runs_isolated(void **state) {
        /* Run A stays alive (blocked on stdin) with a file in its /tmp; run B must see neither the
         * file nor A's processes. */
        char staging[] = "/tmp/test-sandbox-XXXXXX";
        int in[2], out[2];
        SandboxChild a;
        spawn_held(staging,
                   "import os, sys\nopen('/tmp/marker-a', 'w').write('a')\n"
                   "print('ready', flush=True)\nsys.stdin.read()\n",
                   in, out, -EBADF, -EBADF, &a);
        assert_int_equal(sandbox_child_release(&a), 0);
        char buf[16] = {};
        assert_int_equal(read(out[0], buf, sizeof(buf) - 1), 6);
        assert_string_equal(buf, "ready\n");

        expect_ok("import os\n"
                  "assert not os.path.exists('/tmp/marker-a')\n"
                  "assert sorted(p for p in os.listdir('/proc') if p.isdigit()) == ['1', str(os.getpid())]\n"
                  "print('OK')\n");

        close(in[1]);
        assert_int_equal(read(out[0], buf, sizeof(buf)), 0); /* A ended after its stdin closed */
        close(out[0]);
        close_and_wait(&a);
        assert_int_equal(rm_rf(staging), 0);
}

/* Finds a writable cgroup v2 directory of ours to make supervisor/ and payload/ in, the way the
 * cgroupfs backend does. Returns false (test skipped) when there is none. */
static bool cgroup2_scratch(char *ret, size_t size) {
        static const char *const roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
        char self[512] = {};
        FILE *f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return false;
        char line[512];
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        strncpy(self, line + 3, sizeof(self) - 1);
                        self[strcspn(self, "\n")] = 0;
                }
        fclose(f);
        for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                char probe[600];
                snprintf(probe, sizeof(probe), "%s/cgroup.controllers", roots[i]);
                if (access(probe, F_OK) < 0)
                        continue;
                snprintf(ret, size, "%s%s/test-sandbox-%d", roots[i], strcmp(self, "/") == 0 ? "" : self,
                         (int) getpid());
                if (mkdir(ret, 0755) == 0)
                        return true;
        }
        return false;
}

/* via_release: the payload cgroup comes with the release (a manager that creates it only after
 * placing the init), not in the spec. */
static void clone_into_cgroup(bool via_release) {
        char base[600], sup[700], pay[700], procs[800];
        if (!cgroup2_scratch(base, sizeof(base)))
                skip();
        snprintf(sup, sizeof(sup), "%s/supervisor", base);
        snprintf(pay, sizeof(pay), "%s/payload", base);
        assert_int_equal(mkdir(sup, 0755), 0);
        assert_int_equal(mkdir(pay, 0755), 0);
        _cleanup_close_ int supfd = open(sup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int payfd = open(pay, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(supfd >= 0 && payfd >= 0);

        char staging[] = "/tmp/test-sandbox-XXXXXX";
        int in[2], out[2];
        SandboxChild c;
        spawn_held(staging,
                   "import sys\nprint(open('/proc/self/cgroup').read().count('0::/\\n'), flush=True)\n"
                   "sys.stdin.read()\n",
                   in, out, supfd, via_release ? -EBADF : payfd, &c);
        if (via_release)
                assert_int_equal(sandbox_child_release_into(&c, payfd), 0);
        else
                assert_int_equal(sandbox_child_release(&c), 0);
        char buf[64] = {};
        assert_true(read(out[0], buf, sizeof(buf) - 1) > 0);
        assert_string_equal(buf, "1\n"); /* its own cgroup namespace, rooted at payload/ */

        /* The init in supervisor/, Python (and only it) in payload/. */
        char pids[64] = {};
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", sup);
        FILE *f = fopen(procs, "re");
        assert_non_null(f);
        assert_non_null(fgets(pids, sizeof(pids), f));
        fclose(f);
        assert_int_equal(atoi(pids), c.pid);
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", pay);
        f = fopen(procs, "re");
        assert_non_null(f);
        assert_non_null(fgets(pids, sizeof(pids), f));
        assert_true(atoi(pids) > 0 && atoi(pids) != c.pid);
        assert_null(fgets(pids, sizeof(pids), f));
        fclose(f);

        close(in[1]);
        assert_int_equal(read(out[0], buf, sizeof(buf)), 0);
        close(out[0]);
        close_and_wait(&c);
        assert_int_equal(rm_rf(staging), 0);
        assert_int_equal(rmdir(pay), 0);
        assert_int_equal(rmdir(sup), 0);
        assert_int_equal(rmdir(base), 0);
}

static void test_clone_into_cgroup(void **state) {
        clone_into_cgroup(false);
}

static void test_clone_into_cgroup_at_release(void **state) {
        clone_into_cgroup(true);
}

/* sandbox_new() in a process where the kernel (here: a seccomp filter of ours) refuses one step:
 * it fails, with a sentence naming the step. */
static char *new_under_filter(int syscall_nr) {
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
                if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), syscall_nr, 0) < 0 || seccomp_load(ctx) < 0)
                        _exit(2);
                SandboxConfig cfg = { .tmp_size_bytes = 1 << 20, .cpu_threads = 1 };
                Sandbox *s = NULL;
                char *reason = NULL;
                int r = sandbox_new(&cfg, &s, &reason);
                if (r >= 0)
                        _exit(3);
                if (reason)
                        (void) !write(p[1], reason, strlen(reason));
                _exit(0);
        }
        close(p[1]);
        static char buf[512];
        memset(buf, 0, sizeof(buf));
        (void) !read(p[0], buf, sizeof(buf) - 1);
        close(p[0]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        return buf;
}

static void test_new_names_the_refusal(void **state) {
        const char *reason = new_under_filter(SCMP_SYS(clone3));
        assert_non_null(strstr(reason, "user namespace"));
        assert_non_null(strstr(reason, "Operation not permitted"));

        reason = new_under_filter(SCMP_SYS(mount));
        assert_non_null(strstr(reason, "self-test failed at \"make / private\""));

        reason = new_under_filter(SCMP_SYS(pivot_root));
        assert_non_null(strstr(reason, "self-test failed at \"pivot_root\""));
}

/* sandbox_warm_up() keeps matplotlib's font cache: later runs do not rebuild it. */
static void test_warm_up_font_cache(void **state) {
        static Run run;
        const char *code = "import logging, os\nlogging.basicConfig(level=logging.INFO)\n"
                           "import matplotlib.font_manager\n"
                           "print(sorted(os.listdir('/tmp/.cache/matplotlib')) if os.path.isdir('/tmp/.cache/matplotlib') else None)\n";
        assert_int_equal(run_code(code, &run), 0);
        assert_non_null(strstr(run.err, "generated new fontManager")); /* without: rebuilt */

        assert_int_equal(sandbox_warm_up(sbx, PYTHON), 0);
        assert_int_equal(run_code(code, &run), 0);
        if (strstr(run.err, "generated new fontManager"))
                print_run(&run);
        assert_null(strstr(run.err, "generated new fontManager"));
        assert_non_null(strstr(run.out, "fontlist-"));
        assert_int_equal(sandbox_warm_up(sbx, PYTHON), 0); /* idempotent */
}

/* Staged subdirectories arrive below /tmp, made by and belonging to the run's user. */
static void test_staged_subdirectories(void **state) {
        static Run run;
        RunOptions o = { .extra_file = "data/2024/input.csv", .extra_content = "x,y\n" };
        assert_int_equal(run_code_opts("import os\n"
                                       "st = os.stat('/tmp/data/2024')\n"
                                       "print(open('data/2024/input.csv').read(), end='')\n"
                                       "print(st.st_uid, os.stat('/tmp/data/2024/input.csv').st_uid)\n"
                                       "open('data/2024/out.txt', 'w').write('ok')\n", &o, &run), 0);
        expect_printed(&run, "x,y\n65532 65532\n");
}

/* A dependency environment (SandboxRunSpec.env_dir) shows read-only at SANDBOX_ENV_DIR. It is bound,
 * not copied: its permissions stay, so it must be readable by the run's host uid (65532 when the
 * daemon is root), unlike staging_dir. */
static void test_env_dir(void **state) {
        char env[] = "/tmp/test-sandbox-env-XXXXXX";
        assert_non_null(mkdtemp(env));
        _cleanup_close_ int dfd = open(env, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        assert_int_equal(mkdirat(dfd, "lib", 0755), 0);
        assert_int_equal(fd_write_file_at(dfd, "lib/marker.py", "VALUE = 7\n", 10, 0644), 0);
        assert_int_equal(chmod(env, 0755), 0); /* mkdtemp made it 0700 */

        static Run run;
        RunOptions o = { .env_dir = env };
        assert_int_equal(run_code_opts("import sys, os, errno\n"
                                       "sys.path.insert(0, '" SANDBOX_ENV_DIR "/lib')\n"
                                       "import marker\n"
                                       "try:\n"
                                       "    open('" SANDBOX_ENV_DIR "/lib/x', 'w')\n"
                                       "except OSError as e:\n"
                                       "    w = errno.errorcode[e.errno]\n"
                                       "print(marker.VALUE, w, bool(os.statvfs('" SANDBOX_ENV_DIR "').f_flag & os.ST_RDONLY))\n",
                                       &o, &run), 0);
        expect_printed(&run, "7 EROFS True\n");
        assert_int_equal(rm_rf(env), 0);
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
        if (getenv("TEST_SANDBOX_WARM_UP"))
                fprintf(stderr, "warm-up: %d\n", sandbox_warm_up(sbx, PYTHON));
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

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* CPU time (user + system) of this process and its reaped children so far, in µs. */
static uint64_t cpu_usec(void) {
        struct rusage a, b;
        getrusage(RUSAGE_SELF, &a);
        getrusage(RUSAGE_CHILDREN, &b);
        return (uint64_t) (a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) * 1000000 +
               (uint64_t) (a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec);
}

/* TEST_SANDBOX_BENCH=N: median wall time of N sandboxed print(1) runs (spawn, release, EXITED,
 * init reaped) against N bare `python3 -I -c pass` (fork, exec, wait), interleaved. */
static int bench(int n) {
        if (setup(NULL) < 0)
                return 1;
        uint64_t *sb = calloc((size_t) n, sizeof(uint64_t)), *bare = calloc((size_t) n, sizeof(uint64_t));
        uint64_t *spawn = calloc((size_t) n, sizeof(uint64_t)), *started = calloc((size_t) n, sizeof(uint64_t));
        uint64_t *exited = calloc((size_t) n, sizeof(uint64_t));
        uint64_t *cpu_sb = calloc((size_t) n, sizeof(uint64_t)), *cpu_bare = calloc((size_t) n, sizeof(uint64_t));
        static Run run;
        for (int i = 0; i < n; i++) {
                uint64_t c0 = cpu_usec();
                uint64_t t0 = mono_usec();
                pid_t pid = fork();
                if (pid == 0) {
                        int nul = open("/dev/null", O_RDWR);
                        dup2(nul, 1);
                        execl(PYTHON, PYTHON, "-I", "-c", "pass", (char *) NULL);
                        _exit(127);
                }
                int st;
                waitpid(pid, &st, 0);
                bare[i] = mono_usec() - t0;
                cpu_bare[i] = cpu_usec() - c0;

                c0 = cpu_usec();
                t0 = mono_usec();
                if (run_code("print(1)\n", &run) < 0 || strcmp(run.out, "1\n") != 0)
                        return 1;
                sb[i] = mono_usec() - t0;
                cpu_sb[i] = cpu_usec() - c0;
                spawn[i] = run.spawn_usec;
                started[i] = run.started_usec;
                exited[i] = run.exited_usec;
        }
        qsort(spawn, (size_t) n, sizeof(uint64_t), cmp_u64);
        qsort(started, (size_t) n, sizeof(uint64_t), cmp_u64);
        qsort(exited, (size_t) n, sizeof(uint64_t), cmp_u64);
        qsort(bare, (size_t) n, sizeof(uint64_t), cmp_u64);
        printf("n=%d median: sandbox_spawn %.2f ms, release→STARTED %.2f ms, spawn→EXITED %.2f ms "
               "(EXITED minus bare: %.2f ms)\n", n, spawn[n / 2] / 1000.0, started[n / 2] / 1000.0,
               exited[n / 2] / 1000.0, ((double) exited[n / 2] - (double) bare[n / 2]) / 1000.0);
        qsort(sb, (size_t) n, sizeof(uint64_t), cmp_u64);
        printf("n=%d median: sandboxed print(1) %.2f ms, bare python3 -I -c pass %.2f ms, "
               "difference %.2f ms (min %.2f / %.2f ms)\n", n, sb[n / 2] / 1000.0, bare[n / 2] / 1000.0,
               ((double) sb[n / 2] - (double) bare[n / 2]) / 1000.0, sb[0] / 1000.0, bare[0] / 1000.0);
        qsort(cpu_sb, (size_t) n, sizeof(uint64_t), cmp_u64);
        qsort(cpu_bare, (size_t) n, sizeof(uint64_t), cmp_u64);
        printf("n=%d median CPU time (user+system, every process involved): sandboxed %.2f ms, bare %.2f ms, "
               "difference %.2f ms\n", n, cpu_sb[n / 2] / 1000.0, cpu_bare[n / 2] / 1000.0,
               ((double) cpu_sb[n / 2] - (double) cpu_bare[n / 2]) / 1000.0);
        free(cpu_sb);
        free(cpu_bare);
        free(sb);
        free(bare);
        free(spawn);
        free(started);
        free(exited);
        teardown(NULL);
        return 0;
}

/* The second entry point: the installer's confinement (what py-deps-confine.test.mjs checks through
 * the daemon, here without pip): its own uid (65533 as root), user, mount and PID namespaces (it
 * runs as PID 1 there: its process group, our setpgid's, is outside), only its directory writable,
 * /root hidden, an environment built from nothing, and network only for a remote index. */
static void installer_check(const char *index_url, bool want_own_net) {
        static const char code[] =
                "import os, sys, errno\n"
                "work = sys.argv[1]\n"
                "open(os.path.join(work, 'written'), 'w').write('x')\n"
                "for p in (os.path.join(os.path.dirname(work), 'outside'), '/usr/escape', '/etc/escape'):\n"
                "    try:\n"
                "        open(p, 'w')\n"
                "    except OSError as e:\n"
                "        assert e.errno in (errno.EROFS, errno.EACCES), (p, e)\n"
                "    else:\n"
                "        raise AssertionError(p)\n"
                "if os.path.isdir('/root'):\n"
                "    assert os.listdir('/root') == [], os.listdir('/root')\n"
                "assert 'TEST_SANDBOX_SECRET' not in os.environ, os.environ\n"
                "assert os.getpid() == 1 and os.getpgrp() == 0, (os.getpid(), os.getpgrp())\n"
                "print(os.getuid(), os.getgid(), *(os.readlink('/proc/self/ns/' + n) for n in ('user', 'mnt', 'pid', 'net')))\n";
        char work[] = "/tmp/test-installer-XXXXXX";
        assert_non_null(mkdtemp(work));
        assert_int_equal(setenv("TEST_SANDBOX_SECRET", "hunter2", 1), 0);
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        const char *argv[] = { PYTHON, "-I", "-c", code, work, NULL };
        SandboxInstallSpec spec = { .argv = argv, .work_dir = work, .index_url = index_url, .output_fd = p[1] };
        SandboxInstaller c;
        assert_int_equal(sandbox_spawn_installer(&spec, &c), 0);
        close(p[1]);
        unsetenv("TEST_SANDBOX_SECRET");
        assert_int_equal(sandbox_installer_release(&c), 0);
        assert_int_equal(c.go_fd, -EBADF);
        siginfo_t si = {};
        assert_int_equal(waitid(P_PIDFD, (id_t) c.pidfd, &si, WEXITED), 0);
        sandbox_installer_done(&c);
        char out[4096] = "";
        ssize_t n = read(p[0], out, sizeof(out) - 1);
        close(p[0]);
        out[n > 0 ? n : 0] = 0;
        assert_int_equal(si.si_code, CLD_EXITED);
        if (si.si_status != 0)
                fail_msg("installer exited %d: %s", si.si_status, out);

        unsigned uid, gid;
        char ns[4][64], host[4][64];
        assert_int_equal(sscanf(out, "%u %u %63s %63s %63s %63s", &uid, &gid, ns[0], ns[1], ns[2], ns[3]), 6);
        assert_int_equal(uid, geteuid() == 0 ? SANDBOX_INSTALL_UID : geteuid());
        assert_int_equal(gid, geteuid() == 0 ? SANDBOX_INSTALL_GID : getegid());
        static const char *const names[] = { "user", "mnt", "pid", "net" };
        for (size_t i = 0; i < 4; i++) {
                char link[64];
                snprintf(link, sizeof(link), "/proc/self/ns/%s", names[i]);
                ssize_t k = readlink(link, host[i], sizeof(host[i]) - 1);
                assert_true(k > 0);
                host[i][k] = 0;
        }
        assert_string_not_equal(ns[0], host[0]);
        assert_string_not_equal(ns[1], host[1]);
        assert_string_not_equal(ns[2], host[2]);
        if (want_own_net)
                assert_string_not_equal(ns[3], host[3]);
        else
                assert_string_equal(ns[3], host[3]);
        char written[sizeof(work) + 16];
        snprintf(written, sizeof(written), "%s/written", work);
        assert_int_equal(access(written, F_OK), 0);
        assert_int_equal(rm_rf(work), 0);
}

static void test_installer_confined(void **state) {
        installer_check(NULL, true);                            /* a local wheelhouse only */
        installer_check("file:///srv/wheels", true);            /* a local index */
        installer_check("https://pypi.org/simple", false);      /* a remote index: the host's network */
}

/* Unreleased, closing go_fd lets it exit 125 without running anything. */
static void test_installer_held_until_release(void **state) {
        char work[] = "/tmp/test-installer-XXXXXX";
        assert_non_null(mkdtemp(work));
        const char *argv[] = { "/usr/bin/touch", "ran", NULL };
        SandboxInstallSpec spec = { .argv = argv, .work_dir = work, .output_fd = 2 };
        SandboxInstaller c;
        assert_int_equal(sandbox_spawn_installer(&spec, &c), 0);
        usleep(100000);
        c.go_fd = safe_close(c.go_fd);
        siginfo_t si = {};
        assert_int_equal(waitid(P_PIDFD, (id_t) c.pidfd, &si, WEXITED), 0);
        sandbox_installer_done(&c);
        assert_int_equal(si.si_code, CLD_EXITED);
        assert_int_equal(si.si_status, 125);
        char ran[sizeof(work) + 8];
        snprintf(ran, sizeof(ran), "%s/ran", work);
        assert_int_equal(access(ran, F_OK), -1);
        assert_int_equal(rm_rf(work), 0);
}

/* A daemon killed mid-install kills the installer (its parent-death signal); nothing the install
 * started may outlive it, not even a grandchild in a session of its own, which no parent-death
 * signal reaches. The one left holding the output pipe would keep it open: EOF on it means every
 * process of the install is gone. */
static void test_installer_dies_whole(void **state) {
        static const char code[] =
                "import os, time\n"
                "if os.fork() == 0:\n"
                "    os.setsid()\n"
                "    if os.fork() == 0:\n"
                "        time.sleep(1000)\n"
                "    os._exit(0)\n"
                "os.wait()\n"
                "print('ready', flush=True)\n"
                "time.sleep(1000)\n";
        char work[] = "/tmp/test-installer-XXXXXX";
        assert_non_null(mkdtemp(work));
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        const char *argv[] = { PYTHON, "-I", "-c", code, NULL };
        SandboxInstallSpec spec = { .argv = argv, .work_dir = work, .output_fd = p[1] };
        SandboxInstaller c;
        assert_int_equal(sandbox_spawn_installer(&spec, &c), 0);
        close(p[1]);
        assert_int_equal(sandbox_installer_release(&c), 0);
        char out[64] = "";
        assert_int_equal(read(p[0], out, sizeof(out) - 1), 6);
        assert_string_equal(out, "ready\n");
        /* the installer's own process only, as the parent-death signal would */
        assert_int_equal(kill(c.pid, SIGKILL), 0);
        siginfo_t si = {};
        assert_int_equal(waitid(P_PIDFD, (id_t) c.pidfd, &si, WEXITED), 0);
        sandbox_installer_done(&c);
        struct pollfd pfd = { .fd = p[0], .events = POLLIN };
        assert_int_equal(poll(&pfd, 1, 30000), 1); /* a bound, not a wait: EOF comes at once */
        assert_int_equal(read(p[0], out, sizeof(out)), 0);
        close(p[0]);
        assert_int_equal(rm_rf(work), 0);
}

int main(void) {
        const char *one = getenv("TEST_SANDBOX_RUN");
        if (one)
                return run_one(one);
        const char *nb = getenv("TEST_SANDBOX_BENCH");
        if (nb)
                return bench(atoi(nb) > 0 ? atoi(nb) : 30);

        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_print_42),
                cmocka_unit_test(test_exited_alone_only_when_nothing_is_left),
                cmocka_unit_test(test_stdin_and_exit_code),
                cmocka_unit_test(test_signal_status),
                cmocka_unit_test(test_exec_failure),
                cmocka_unit_test(test_kill_ends_setsid_grandchild),
                cmocka_unit_test(test_release_eof_before_release),
                cmocka_unit_test(test_init_ignores_sigterm),
                cmocka_unit_test(test_identity),
                cmocka_unit_test(test_filesystem_view),
                cmocka_unit_test(test_tmp_cap_enospc),
                cmocka_unit_test(test_file_gone_next_run),
                cmocka_unit_test(test_staged_subdirectories),
                cmocka_unit_test(test_env_dir),
                cmocka_unit_test(test_seccomp_denials),
                cmocka_unit_test(test_x32_is_killed),
                cmocka_unit_test(test_setuid_gains_nothing),
                cmocka_unit_test(test_no_host_sockets_or_network),
                cmocka_unit_test(test_egress_absent),
                cmocka_unit_test(test_egress_seccomp),
                cmocka_unit_test(test_egress_listener),
                cmocka_unit_test(test_scientific_stack),
                cmocka_unit_test(test_rlimits),
                cmocka_unit_test(test_concurrent_runs_isolated),
                cmocka_unit_test(test_clone_into_cgroup),
                cmocka_unit_test(test_clone_into_cgroup_at_release),
                cmocka_unit_test(test_new_names_the_refusal),
                cmocka_unit_test(test_installer_confined),
                cmocka_unit_test(test_installer_held_until_release),
                cmocka_unit_test(test_installer_dies_whole),
                cmocka_unit_test(test_warm_up_font_cache), /* last: later runs get the cache */
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
