/* sandbox-install.c: the dependency installer's confinement, the sandbox's second entry point. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "sandbox-internal.h"
#include "sandbox.h"

/* The installer, as processes (host view):
 *
 *   daemon ── fork (held on go_fd until the daemon has placed it in its cgroup)
 *     └─ installer: setpgid, uid/gid 65533 as root (else the daemon's), PDEATHSIG, then
 *        unshare(NEWUSER|NEWNS|NEWPID[|NEWNET]) mapping only that uid and gid, / recursively
 *        read-only and nosuid but work_dir, home directories and credentials under empty tmpfs;
 *        it stays to wait, and passes on the exit status of
 *          └─ PID 1 of the new PID namespace: PDEATHSIG, execve install.py (pip, uv, …)
 *
 * It keeps the host's /usr, /etc, /proc: it is trusted code (pip, our install.py) fetching
 * wheels, never caller code. What it must not do is write anywhere but its directory, read
 * secrets, (when the only source is local) reach any network, or outlive the daemon: a
 * parent-death signal reaches only its own process, so install.py is PID 1 of a namespace of its
 * own, whose end the kernel makes the end of everything pip started (a daemon killed mid-install
 * left pip's children behind before, as uid 65533, and another daemon then refused to start).
 * The uid drop comes before the user namespace, so the namespace belongs to 65533, not to root,
 * and root's capabilities never reach it. */

/* Holding secrets, or other users' files: hidden by an empty read-only tmpfs. */
static const char *const hidden_dirs[] = { "/root", "/home", "/run/credentials", "/etc/mcp-execd" };

/* Built from nothing: nothing of the daemon's environment (MCP_EXEC_AUTH_TOKEN) reaches pip. */
static const char *const installer_envp[] = {
        "PATH=" SANDBOX_PATH, "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "PIP_NO_INPUT=1",
        "HOME=/nonexistent", NULL,
};

static bool path_within(const char *path, const char *dir) {
        size_t n = strlen(dir);
        return path && strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static bool kept(const SandboxInstallSpec *spec, const char *dir) {
        if (path_within(spec->work_dir, dir) || path_within(spec->argv[0], dir))
                return true;
        for (size_t i = 0; spec->keep && spec->keep[i]; i++)
                if (path_within(spec->keep[i], dir))
                        return true;
        return false;
}

static int hide(const SandboxInstallSpec *spec, const char *dir) {
        struct stat st;
        /* Never hide what the install needs. */
        if (!dir || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || kept(spec, dir))
                return 0;
        if (mount("tmpfs", dir, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,mode=0755") < 0)
                return -errno;
        return 0;
}

static int confine_fs(const SandboxInstallSpec *spec) {
        int r;
        for (size_t i = 0; i < ELEMENTSOF(hidden_dirs); i++) {
                r = hide(spec, hidden_dirs[i]);
                if (r < 0)
                        return r;
        }
        r = hide(spec, getenv("CREDENTIALS_DIRECTORY"));
        if (r < 0)
                return r;
        /* A mount of its own, so that it alone can stay writable below the read-only host. */
        if (mount(spec->work_dir, spec->work_dir, NULL, MS_BIND, NULL) < 0)
                return -errno;
        /* Not nodev: pip needs /dev/null. */
        r = sandbox_mount_setattr("/", true, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0);
        if (r < 0)
                return r;
        return sandbox_mount_setattr(spec->work_dir, false, 0, MOUNT_ATTR_RDONLY);
}

/* In the child: a user namespace mapping only our own uid and gid (so it works as root without
 * CAP_SYS_ADMIN, as the hardened unit runs us, and for an unprivileged daemon alike), in it its own
 * mount namespace, and without network unless a remote index is the source. */
static int confine(const SandboxInstallSpec *spec, const char **ret_step) {
        bool no_network = !spec->index_url || strncmp(spec->index_url, "file:", 5) == 0;
        uid_t uid = geteuid();
        gid_t gid = getegid();
        int r;

#define STEP(s, expr) do { *ret_step = (s); if ((r = (expr)) < 0) return r; } while (0)
        int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | (no_network ? CLONE_NEWNET : 0);
        STEP("unshare", unshare(flags) < 0 ? -errno : 0);
        STEP("id maps", sandbox_id_maps_write(0, uid, gid, uid, gid, true));
        STEP("make / private", sandbox_mount_private());
        STEP("mounts", confine_fs(spec));
#undef STEP
        return 0;
}

_Noreturn static void installer_main(const SandboxInstallSpec *spec, int go_fd, pid_t ppid) {
        /* Held until the daemon has placed us in our cgroup. */
        char c;
        if (read(go_fd, &c, 1) != 1)
                _exit(125);
        (void) setpgid(0, 0);
        if (geteuid() == 0 && (setgroups(0, NULL) < 0 ||
                               setresgid(SANDBOX_INSTALL_GID, SANDBOX_INSTALL_GID, SANDBOX_INSTALL_GID) < 0 ||
                               setresuid(SANDBOX_INSTALL_UID, SANDBOX_INSTALL_UID, SANDBOX_INSTALL_UID) < 0))
                _exit(123);
        /* After the uid change, which clears both: the parent-death signal, and dumpable (without
         * it /proc/self/uid_map stays root's and the user namespace cannot be set up). */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        (void) prctl(PR_SET_DUMPABLE, 1);
        if (getppid() != ppid)
                _exit(127);
        sandbox_signals_reset();

        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(spec->output_fd, 1) < 0 || dup2(spec->output_fd, 2) < 0)
                _exit(127);
        int keep[] = { 0, 1, 2 };
        if (sandbox_close_all_but(keep, ELEMENTSOF(keep)) < 0)
                _exit(127);
        umask(022); /* the runs' user reads the environment */

        const char *step = NULL;
        int r = confine(spec, &step);
        if (r < 0) {
                dprintf(2, "mcp-execd: cannot confine the installer: %s: %s\n", step, strerror(-r));
                _exit(124);
        }
        if (chdir(spec->work_dir) < 0)
                _exit(127);

        /* Its end tells the child that we are gone: the child cannot ask getppid(), which is 0 for
         * a PID 1 (its parent is outside its namespace). */
        int alive[2];
        if (pipe2(alive, O_CLOEXEC) < 0)
                _exit(127);
        pid_t pid = fork();
        if (pid < 0)
                _exit(127);
        if (pid == 0) {
                (void) close(alive[1]);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                struct pollfd p = { .fd = alive[0], .events = POLLIN };
                if (poll(&p, 1, 0) != 0) /* we died before the death signal was set */
                        _exit(127);
                execve(spec->argv[0], (char **) spec->argv, (char **) installer_envp);
                _exit(127);
        }
        (void) close(alive[0]);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        _exit(127);
        /* As the daemon reads a status (envs.c): a signal's death as 128 + its number. */
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

int sandbox_spawn_installer(const SandboxInstallSpec *spec, SandboxInstaller *ret) {
        if (!spec->argv || !spec->argv[0] || spec->argv[0][0] != '/' || !spec->work_dir ||
            spec->output_fd < 0)
                return -EINVAL;
        /* Its one writable directory, its own. */
        if (geteuid() == 0 && chown(spec->work_dir, SANDBOX_INSTALL_UID, SANDBOX_INSTALL_GID) < 0)
                return -errno;

        int go[2];
        if (pipe2(go, O_CLOEXEC) < 0)
                return -errno;
        _cleanup_close_ int go_read = go[0], go_write = go[1];
        pid_t ppid = getpid();
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                go_write = safe_close(go_write);
                installer_main(spec, go_read, ppid);
        }
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                int r = -errno;
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return r;
        }
        *ret = (SandboxInstaller) { .pid = pid, .pidfd = pidfd, .go_fd = TAKE_FD(go_write) };
        return 0;
}

int sandbox_installer_release(SandboxInstaller *c) {
        char g = 'G';
        int r = 0;
        if (c->go_fd < 0)
                return -EBADF;
        if (write(c->go_fd, &g, 1) != 1) {
                r = -errno ?: -EIO;
                (void) kill(c->pid, SIGKILL);
        }
        c->go_fd = safe_close(c->go_fd);
        return r;
}

void sandbox_installer_done(SandboxInstaller *c) {
        c->go_fd = safe_close(c->go_fd);
        c->pidfd = safe_close(c->pidfd);
}

int sandbox_installer_access(const char *path, int mode, uid_t *ret_uid) {
        bool root = geteuid() == 0;
        *ret_uid = root ? SANDBOX_INSTALL_UID : geteuid();
        if (!root)
                return faccessat(AT_FDCWD, path, mode, AT_EACCESS) < 0 ? -errno : 0;
        /* A fork at start, before any loop or thread: the child only drops its ids and asks the
         * kernel, which walks every component of path with the installer's credentials. */
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 ||
                    setresgid(SANDBOX_INSTALL_GID, SANDBOX_INSTALL_GID, SANDBOX_INSTALL_GID) < 0 ||
                    setresuid(SANDBOX_INSTALL_UID, SANDBOX_INSTALL_UID, SANDBOX_INSTALL_UID) < 0)
                        _exit(255);
                _exit(access(path, mode) < 0 ? (errno & 0xff) : 0);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (!WIFEXITED(status) || WEXITSTATUS(status) == 255)
                return -ECHILD;
        return -WEXITSTATUS(status);
}
