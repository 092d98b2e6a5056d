/* sandbox-init.c: PID 1 of a run once Python is started: a program of its own, statically linked,
 * carried inside the daemon (a sealed memfd, sandbox_new()) and exec'd by the run's setup with an
 * empty environment.
 *
 * Why a program and not the setup process itself: the setup is a clone of the daemon, so it holds
 * the daemon's memory (the HTTP token, other calls' code, stdin and output) and its environment
 * block, and it shares the run's namespaces for the run's whole life. Protected only by ptrace
 * rules, that is one kernel bug away from the run. After this exec the process holds its argv (five
 * numbers) and this file's code and data; the setup's memory is gone (issue 15.4).
 *
 * What it does is what the setup's copy used to do after starting Python: report whether Python
 * started (from exec_fd), reap every process of the run (it is PID 1), report Python's exit with
 * the run's rusage, and exit when the daemon closes control_fd (which kills what is left: the
 * kernel SIGKILLs a PID namespace whose init exits). No allocation, no stdio.
 *
 * And what the daemon asks over control_fd (SandboxCommand): stop or continue every process of the
 * run (rlimit mode's freezer, for a Python session between its calls), and the run's usage so far,
 * read from the kernel here, where the code cannot write it (issue 29.1). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox-init.h"

static int control_fd = -1;

static void report_send(const SandboxReport *rep) {
        ssize_t n;
        do
                n = send(control_fd, rep, sizeof(*rep), MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        /* The daemon is gone (EPIPE): the run has no one to report to. Exiting ends it. */
        if (n < 0)
                _exit(1);
}

static uint64_t timeval_usec(const struct timeval *tv) {
        return (uint64_t) tv->tv_sec * 1000000 + (uint64_t) tv->tv_usec;
}

/* The kernel keeps a process's utime and stime from going backwards (cputime_adjust()), so the
 * base is never above the total; should it be, 0 rather than a wrapped number. */
static uint64_t usec_minus(uint64_t total, int64_t base) {
        return total > (uint64_t) base ? total - (uint64_t) base : 0;
}

/* ---- the run's usage, read from the kernel (SANDBOX_COMMAND_USAGE) ----------------------------
 * From the run's own /proc (this process's root is the run's, and its /proc is the run's PID
 * namespace's), with a buffer on the stack: no allocation, no stdio. */

/* Reads a small file whole (NUL-terminated); its length, or -1. */
static ssize_t read_small(int dirfd, const char *path, char *buf, size_t size) {
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        size_t got = 0;
        for (;;) {
                ssize_t n = read(fd, buf + got, size - 1 - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t) n;
                if (got == size - 1)
                        break;
        }
        (void) close(fd);
        buf[got] = 0;
        return (ssize_t) got;
}

static uint64_t parse_u64(const char *p, const char **end) {
        uint64_t v = 0;
        while (*p >= '0' && *p <= '9')
                v = v * 10 + (uint64_t) (*p++ - '0');
        *end = p;
        return v;
}

/* /proc/<pid>/stat: utime, stime, cutime, cstime (fields 14-17) in clock ticks, after the comm,
 * which is the code's own text: the fields start after its last ')'. */
static bool stat_ticks(int dirfd, const char *pid, uint64_t ret[4]) {
        char path[32], buf[1024];
        size_t n = strlen(pid);
        if (n > 16)
                return false;
        memcpy(path, pid, n);
        memcpy(path + n, "/stat", sizeof("/stat"));
        if (read_small(dirfd, path, buf, sizeof(buf)) <= 0)
                return false;
        const char *p = strrchr(buf, ')');
        if (!p)
                return false;
        p++;
        /* field 3 (state) is the first after ") "; utime is field 14 */
        for (int field = 2; field < 13; field++) {
                p = strchr(p + 1, ' ');
                if (!p)
                        return false;
        }
        for (int i = 0; i < 4; i++) {
                if (*p != ' ')
                        return false;
                ret[i] = parse_u64(p + 1, &p);
        }
        return true;
}

/* /proc/<pid>/status: VmHWM in bytes, 0 when absent (a zombie has no memory). */
static uint64_t status_hwm(int dirfd, const char *pid) {
        char path[32], buf[2048];
        size_t n = strlen(pid);
        if (n > 16)
                return 0;
        memcpy(path, pid, n);
        memcpy(path + n, "/status", sizeof("/status"));
        if (read_small(dirfd, path, buf, sizeof(buf)) <= 0)
                return 0;
        const char *p = strstr(buf, "\nVmHWM:");
        if (!p)
                return 0;
        p += strlen("\nVmHWM:");
        while (*p == ' ' || *p == '\t')
                p++;
        return parse_u64(p, &p) * 1024;
}

static void usage_report(int64_t base_utime, int64_t base_stime) {
        /* What was reaped so far first: a child exited since is then either counted here or (a
         * zombie) below, once. */
        struct rusage ru = {};
        (void) getrusage(RUSAGE_CHILDREN, &ru);
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t tick_usec = hz > 0 ? 1000000u / (uint64_t) hz : 10000u;
        uint64_t utime = timeval_usec(&ru.ru_utime), stime = timeval_usec(&ru.ru_stime);
        uint64_t hwm = (uint64_t) ru.ru_maxrss * 1024;
        int32_t counted = 0;

        int dirfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd >= 0) {
                char dents[4096] __attribute__((aligned(8)));
                for (;;) {
                        ssize_t n = getdents64(dirfd, dents, sizeof(dents));
                        if (n <= 0)
                                break;
                        for (ssize_t off = 0; off < n;) {
                                const struct dirent64 *d = (const void *) (dents + off);
                                off += d->d_reclen;
                                const char *name = d->d_name;
                                if (name[0] < '1' || name[0] > '9' || strcmp(name, "1") == 0)
                                        continue; /* not a process, or this one */
                                uint64_t t[4];
                                if (!stat_ticks(dirfd, name, t))
                                        continue; /* gone meanwhile: reaped, hence in ru above or next time */
                                utime += (t[0] + t[2]) * tick_usec;
                                stime += (t[1] + t[3]) * tick_usec;
                                uint64_t h = status_hwm(dirfd, name);
                                if (h > hwm)
                                        hwm = h;
                                counted++;
                        }
                }
                (void) close(dirfd);
        }
        SandboxReport rep = {
                .kind = SANDBOX_REPORT_USAGE,
                .value = counted,
                .utime_usec = usec_minus(utime, base_utime),
                .stime_usec = usec_minus(stime, base_stime),
                .maxrss_bytes = hwm,
        };
        report_send(&rep);
}

/* SIGINT to our children (the run's /proc/1/task/1/children: pids of the run's namespace), as a
 * terminal's ^C reaches its foreground job: Python, and what the code orphaned. */
static void interrupt_children(void) {
        char buf[4096];
        if (read_small(AT_FDCWD, "/proc/1/task/1/children", buf, sizeof(buf)) <= 0)
                return;
        for (const char *p = buf; *p;) {
                const char *end;
                uint64_t pid = parse_u64(p, &end);
                if (end == p) {
                        p++;
                        continue;
                }
                if (pid > 1 && pid <= 4194304)
                        (void) kill((pid_t) pid, SIGINT);
                p = end;
        }
}

/* One command of the daemon's (sandbox.h); false when the daemon is gone. */
static bool command_read(int64_t base_utime, int64_t base_stime) {
        SandboxCommand cmd;
        ssize_t r = recv(control_fd, &cmd, sizeof(cmd), MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                return false;
        if (r != (ssize_t) sizeof(cmd))
                return true; /* not a command of ours: nothing to do */
        switch (cmd.kind) {
        case SANDBOX_COMMAND_STOP:
                /* From PID 1 of the namespace: every process of it but ourselves (kill(2)). */
                (void) kill(-1, SIGSTOP);
                break;
        case SANDBOX_COMMAND_CONT:
                (void) kill(-1, SIGCONT);
                break;
        case SANDBOX_COMMAND_USAGE:
                usage_report(base_utime, base_stime);
                break;
        case SANDBOX_COMMAND_INTERRUPT:
                interrupt_children();
                break;
        case SANDBOX_COMMAND_KEEP:
                /* The daemon may die and come back (systemd's fd store holds our control socket's
                 * other end meanwhile): only EOF on it ends us from now on. */
                (void) prctl(PR_SET_PDEATHSIG, 0);
                break;
        default:
                break;
        }
        return true;
}

static int64_t arg_number(const char *s) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno != 0 || end == s || *end != 0 || v < 0)
                return -1;
        return v;
}

int main(int argc, char **argv) {
        if (argc != SANDBOX_INIT_ARGC)
                return 1;
        int64_t ctl = arg_number(argv[SANDBOX_INIT_ARG_CONTROL_FD]);
        int64_t exec_fd = arg_number(argv[SANDBOX_INIT_ARG_EXEC_FD]);
        int64_t python = arg_number(argv[SANDBOX_INIT_ARG_PYTHON_PID]);
        int64_t base_utime = arg_number(argv[SANDBOX_INIT_ARG_BASE_UTIME]);
        int64_t base_stime = arg_number(argv[SANDBOX_INIT_ARG_BASE_STIME]);
        int64_t go_fd = arg_number(argv[SANDBOX_INIT_ARG_GO_FD]);
        if (ctl < 0 || ctl > 65535 || exec_fd < 0 || exec_fd > 65535 || python <= 0 || python > 4194304 ||
            base_utime < 0 || base_stime < 0 || go_fd < 0 || go_fd > 65535)
                return 1; /* exiting ends the run's PID namespace, Python's process with it */
        control_fd = (int) ctl;

        /* Not dumpable, before Python may run: /proc/1/mem, environ, fd… then need CAP_SYS_PTRACE
         * in the run's user namespace, which Python never has. It matters for an unprivileged
         * daemon, whose runs share our uid: without it, a run could open /proc/1/mem read-write and
         * make us send the daemon whatever exit and accounting it likes. Only then is the go pipe
         * closed, which lets the Python child exec Python. */
        if (prctl(PR_SET_DUMPABLE, 0) < 0)
                return 1;
        /* Named before Python can exec: whoever sees the run's python3 sees its init by this name,
         * not as the memfd it was exec'd from ("memfd:sandbox-i…"). */
        (void) prctl(PR_SET_NAME, "sandbox-init");
        (void) close((int) go_fd);

        /* Kept across execve already; said again so that this program stands on its own. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);

        /* PID 1 of a namespace only gets the signals it has a handler for (pid_namespaces(7)); we
         * have none, and ignore the usual ones explicitly. SIGCHLD is read from a signalfd. */
        static const int ignored[] = {
                SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTSTP,
                SIGTTIN, SIGTTOU, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGWINCH, SIGURG, SIGIO, SIGPWR,
        };
        struct sigaction ign = { .sa_handler = SIG_IGN };
        for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
                (void) sigaction(ignored[i], &ign, NULL);
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        (void) sigprocmask(SIG_BLOCK, &chld, NULL);
        int signal_fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);

        /* Did Python start? A SandboxChildError, or EOF once its execve closed the pipe. The
         * child waited for the go pipe (closed above) before its own, so nothing of the caller's
         * ran while PID 1 was still a copy of the daemon, or while it was dumpable. */
        SandboxChildError e;
        ssize_t n;
        for (;;) {
                n = read((int) exec_fd, &e, sizeof(e));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n != (ssize_t) sizeof(e) || e.err != 0)
                        break;
                /* The child's setup (the run's root) before its failure or EOF: not the run's. */
                base_utime += (int64_t) e.utime_usec;
                base_stime += (int64_t) e.stime_usec;
        }
        (void) close((int) exec_fd);
        bool running = true;
        if (n == (ssize_t) sizeof(e)) {
                SandboxReport rep = { .kind = SANDBOX_REPORT_FAILED, .value = e.err };
                e.step[sizeof(e.step) - 1] = 0;
                memcpy(rep.detail, e.step, sizeof(rep.detail));
                running = false; /* reaped as any orphan: FAILED is not followed by EXITED */
                report_send(&rep);
        } else if (signal_fd < 0) {
                SandboxReport rep = { .kind = SANDBOX_REPORT_FAILED, .value = errno };
                memcpy(rep.detail, "signalfd", sizeof("signalfd"));
                (void) kill((pid_t) python, SIGKILL);
                running = false;
                report_send(&rep);
        } else {
                SandboxReport rep = { .kind = SANDBOX_REPORT_STARTED, .value = (int32_t) python };
                report_send(&rep);
        }

        /* Reap until the daemon closes control_fd. */
        for (;;) {
                SandboxReport exited = {};
                bool none_left = false;
                for (;;) {
                        int status;
                        pid_t pid = waitpid(-1, &status, WNOHANG);
                        if (pid < 0 && errno == EINTR)
                                continue;
                        if (pid <= 0) {
                                none_left = pid < 0 && errno == ECHILD;
                                break;
                        }
                        if (!running || pid != (pid_t) python)
                                continue;
                        /* The run's rusage as Python is reaped (what was reaped before it too). */
                        struct rusage ru = {};
                        (void) getrusage(RUSAGE_CHILDREN, &ru);
                        exited = (SandboxReport) {
                                .kind = SANDBOX_REPORT_EXITED,
                                .value = status,
                                .utime_usec = usec_minus(timeval_usec(&ru.ru_utime), base_utime),
                                .stime_usec = usec_minus(timeval_usec(&ru.ru_stime), base_stime),
                                .maxrss_bytes = (uint64_t) ru.ru_maxrss * 1024,
                        };
                        running = false;
                }
                /* Sent once every child that had exited is reaped: then ECHILD means that no
                 * process of the run is left (SANDBOX_REPORT_ALONE), and the daemon may answer
                 * without waiting for the namespaces' teardown. */
                if (exited.kind == SANDBOX_REPORT_EXITED) {
                        if (none_left)
                                exited.flags |= SANDBOX_REPORT_ALONE;
                        report_send(&exited);
                }
                struct pollfd pfd[2] = {
                        { .fd = control_fd, .events = POLLIN },
                        { .fd = signal_fd, .events = POLLIN },
                };
                int k = poll(pfd, signal_fd >= 0 ? 2 : 1, signal_fd >= 0 ? -1 : 100);
                if (k < 0 && errno != EINTR)
                        _exit(1);
                if ((pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) && !command_read(base_utime, base_stime))
                        _exit(0);
                if (k > 0 && signal_fd >= 0 && (pfd[1].revents & POLLIN)) {
                        struct signalfd_siginfo si;
                        while (read(signal_fd, &si, sizeof(si)) > 0)
                                ;
                }
        }
}
